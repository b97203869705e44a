// ONNX's four 8-bit float types (opset 19): their bit layouts, and conversions to and from double that
// the CPU reference (dtype.cpp's load_as_double / store_from_double, Cast) and the CUDA Cast kernels
// share, so both give the same bits. Plain arithmetic on integers and doubles: no table, no
// framework type; compiled by the host compiler and by nvcc alike.
//
//   type            exponent bits, bias   mantissa bits   largest finite   infinity   NaN              -0
//   float8e4m3fn    4, 7                  3               448              none       S.1111.111       yes
//   float8e4m3fnuz  4, 8                  3               240              none       0x80 only        no
//   float8e5m2      5, 15                 2               57344            S.11111.00 S.11111.{01,10,11} yes
//   float8e5m2fnuz  5, 16                 2               57344            none       0x80 only        no
//
// Into float8, a value rounds to the nearest representable one, ties to even, as ml_dtypes (which
// onnx.reference converts with) and ONNX's specification do. Cast's `saturate` (the default) first
// clamps into [-largest, largest], so infinities and out-of-range values give the largest finite;
// without it, a value whose rounding passes the largest finite gives infinity (e5m2) or NaN (the
// others). NaN gives NaN; -0 gives -0 where the type has one, else 0.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define GRAFT_FLOAT8_HD __host__ __device__ __forceinline__
#else
#define GRAFT_FLOAT8_HD inline
#endif

namespace graft::float8 {

// The four formats, numbered as ONNX's TensorProto data types (and graft's DataType) are.
enum class Format : int { kE4M3FN = 17, kE4M3FNUZ = 18, kE5M2 = 19, kE5M2FNUZ = 20 };

struct Layout {
  int mantissa_bits;
  int bias;
  double largest;
  bool has_infinity;  // e5m2: S.11111.00
  bool unsigned_zero;  // the fnuz types: 0x80 is their one NaN, and there is no -0
};

GRAFT_FLOAT8_HD Layout layout_of(Format f) {
  switch (f) {
    case Format::kE4M3FN: return {3, 7, 448.0, false, false};
    case Format::kE4M3FNUZ: return {3, 8, 240.0, false, true};
    case Format::kE5M2: return {2, 15, 57344.0, true, false};
    default: return {2, 16, 57344.0, false, true};  // kE5M2FNUZ
  }
}

GRAFT_FLOAT8_HD double to_double(Format f, uint8_t bits) {
  const Layout l = layout_of(f);
  const int exponent_bits = 7 - l.mantissa_bits;
  const bool negative = (bits & 0x80) != 0;
  const int e = (bits >> l.mantissa_bits) & ((1 << exponent_bits) - 1);
  const int m = bits & ((1 << l.mantissa_bits) - 1);
  if (l.unsigned_zero && bits == 0x80) return NAN;
  const int e_max = (1 << exponent_bits) - 1;
  if (f == Format::kE4M3FN && e == e_max && m == (1 << l.mantissa_bits) - 1) return NAN;
  if (l.has_infinity && e == e_max) return m == 0 ? (negative ? -INFINITY : INFINITY) : NAN;
  // Subnormals (e == 0) have no implicit 1 and the smallest normal's exponent.
  const double magnitude = e == 0 ? std::ldexp(static_cast<double>(m), 1 - l.bias - l.mantissa_bits)
                                  : std::ldexp(static_cast<double>(m + (1 << l.mantissa_bits)),
                                               e - l.bias - l.mantissa_bits);
  return negative ? -magnitude : magnitude;
}

GRAFT_FLOAT8_HD uint8_t nan_bits(Format f, bool negative) {
  return layout_of(f).unsigned_zero ? uint8_t{0x80} : static_cast<uint8_t>((negative ? 0x80 : 0) | 0x7F);
}

GRAFT_FLOAT8_HD uint8_t from_double(Format f, double v, bool saturate) {
  const Layout l = layout_of(f);
  const bool negative = std::signbit(v);
  const uint8_t sign = negative ? 0x80 : 0;
  if (std::isnan(v)) return nan_bits(f, negative);
  double a = std::fabs(v);
  if (saturate && a > l.largest) a = l.largest;  // infinities too
  if (std::isinf(a)) return l.has_infinity ? static_cast<uint8_t>(sign | 0x7C) : nan_bits(f, negative);
  // a = n * 2^(exponent - mantissa_bits) with n rounded to an integer, ties to even (rint's
  // default mode); the exponent is a's own, or the smallest normal's for subnormals.
  int exponent = 0;
  (void)std::frexp(a, &exponent);  // a in [2^(exponent-1), 2^exponent)
  exponent -= 1;
  const int smallest_normal = 1 - l.bias;
  if (a == 0.0 || exponent < smallest_normal) exponent = smallest_normal;
  double n = std::rint(std::ldexp(a, l.mantissa_bits - exponent));
  if (n >= static_cast<double>(2 << l.mantissa_bits)) {  // rounded up to the next binade
    n /= 2;
    exponent += 1;
  }
  if (std::ldexp(n, exponent - l.mantissa_bits) > l.largest)
    return l.has_infinity ? static_cast<uint8_t>(sign | 0x7C) : nan_bits(f, negative);
  const int implicit = 1 << l.mantissa_bits;
  // A subnormal (n < implicit, exponent field 0) or a normal with its implicit bit dropped; n ==
  // implicit at the smallest normal's exponent is that normal, which both forms spell alike.
  const int field = n < implicit ? 0 : exponent + l.bias;
  const int mantissa = static_cast<int>(n) - (n < implicit ? 0 : implicit);
  const uint8_t magnitude = static_cast<uint8_t>((field << l.mantissa_bits) | mantissa);
  if (magnitude == 0 && l.unsigned_zero) return 0;  // no -0
  return static_cast<uint8_t>(sign | magnitude);
}

}  // namespace graft::float8
