// Element access traits for the CPU reference kernels: how each dtype is stored and which type it
// is computed in (half types compute in float and round once on store), plus visitors that turn a
// runtime DataType into one of these traits.
#pragma once

#include <cstdint>
#include <type_traits>

#include "graft/dtype.h"
#include "graft/status.h"

namespace graft::cpu {

template <typename S, typename C = S>
struct PlainTr {
  using storage = S;
  static C load(const void* p, int64_t i) { return static_cast<C>(static_cast<const S*>(p)[i]); }
  static void store(void* p, int64_t i, C v) { static_cast<S*>(p)[i] = static_cast<S>(v); }
};
using F32Tr = PlainTr<float>;
using F64Tr = PlainTr<double>;
using I8Tr = PlainTr<int8_t>;
using U8Tr = PlainTr<uint8_t>;
using I16Tr = PlainTr<int16_t>;
using U16Tr = PlainTr<uint16_t>;
using I32Tr = PlainTr<int32_t>;
using U32Tr = PlainTr<uint32_t>;
using I64Tr = PlainTr<int64_t>;
using U64Tr = PlainTr<uint64_t>;

struct F16Tr {
  static float load(const void* p, int64_t i) { return half_to_float(static_cast<const uint16_t*>(p)[i]); }
  static void store(void* p, int64_t i, float v) { static_cast<uint16_t*>(p)[i] = float_to_half(v); }
};
struct BF16Tr {
  static float load(const void* p, int64_t i) { return bfloat16_to_float(static_cast<const uint16_t*>(p)[i]); }
  static void store(void* p, int64_t i, float v) { static_cast<uint16_t*>(p)[i] = float_to_bfloat16(v); }
};
struct BoolTr {
  static bool load(const void* p, int64_t i) { return static_cast<const uint8_t*>(p)[i] != 0; }
  static void store(void* p, int64_t i, bool v) { static_cast<uint8_t*>(p)[i] = v ? 1 : 0; }
};

// The type integer arithmetic on C wraps in: unsigned, and at least as wide as unsigned int so that
// uint16 * uint16 does not promote to (signed) int and overflow it, which is undefined behaviour.
// Floating-point C computes in itself.
template <typename C, bool = std::is_integral_v<C>>
struct WrapOf { using type = C; };
template <typename C>
struct WrapOf<C, true> { using type = std::make_unsigned_t<decltype(C() + C())>; };
template <typename C>
using wrap_t = typename WrapOf<C>::type;

// fn(Traits{}) for float dtypes; on_other(dtype) otherwise.
template <typename Fn, typename Other>
Status visit_float(DataType t, Fn&& fn, Other&& on_other) {
  switch (t) {
    case DataType::kFloat32: return fn(F32Tr{});
    case DataType::kFloat64: return fn(F64Tr{});
    case DataType::kFloat16: return fn(F16Tr{});
    case DataType::kBFloat16: return fn(BF16Tr{});
    default: return on_other(t);
  }
}

// The integer dtypes (not bool, not the 4-bit ones); on_other(dtype) otherwise.
template <typename Fn, typename Other>
Status visit_integer(DataType t, Fn&& fn, Other&& on_other) {
  switch (t) {
    case DataType::kInt8: return fn(I8Tr{});
    case DataType::kUInt8: return fn(U8Tr{});
    case DataType::kInt16: return fn(I16Tr{});
    case DataType::kUInt16: return fn(U16Tr{});
    case DataType::kInt32: return fn(I32Tr{});
    case DataType::kUInt32: return fn(U32Tr{});
    case DataType::kInt64: return fn(I64Tr{});
    case DataType::kUInt64: return fn(U64Tr{});
    default: return on_other(t);
  }
}

// Floats and integers (not bool).
template <typename Fn, typename Other>
Status visit_numeric(DataType t, Fn&& fn, Other&& on_other) {
  return visit_integer(t, fn, [&](DataType other) { return visit_float(other, fn, on_other); });
}

// Every numeric dtype and bool (strings are not elements of arithmetic: ops/strings/strings.h).
template <typename Fn, typename Other>
Status visit_all(DataType t, Fn&& fn, Other&& on_other) {
  if (t == DataType::kBool) return fn(BoolTr{});
  return visit_numeric(t, fn, on_other);
}

}  // namespace graft::cpu
