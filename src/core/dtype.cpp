#include "graft/dtype.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/checked_math.h"
#include "core/float8.h"

namespace graft {

size_t dtype_size(DataType t) {
  switch (t) {
    case DataType::kFloat32: return 4;
    case DataType::kFloat64: return 8;
    case DataType::kFloat16: return 2;
    case DataType::kBFloat16: return 2;
    case DataType::kInt8: return 1;
    case DataType::kUInt8: return 1;
    case DataType::kInt16: return 2;
    case DataType::kUInt16: return 2;
    case DataType::kInt32: return 4;
    case DataType::kUInt32: return 4;
    case DataType::kInt64: return 8;
    case DataType::kUInt64: return 8;
    case DataType::kBool: return 1;
    case DataType::kInt4: return 1;  // one element a byte in memory (dtype.h)
    case DataType::kUInt4: return 1;
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ: return 1;
    case DataType::kString: return sizeof(std::string);
    case DataType::kUndefined: return 0;
  }
  return 0;
}

const char* dtype_name(DataType t) {
  switch (t) {
    case DataType::kFloat32: return "float32";
    case DataType::kFloat64: return "float64";
    case DataType::kFloat16: return "float16";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kInt8: return "int8";
    case DataType::kUInt8: return "uint8";
    case DataType::kInt16: return "int16";
    case DataType::kUInt16: return "uint16";
    case DataType::kInt32: return "int32";
    case DataType::kUInt32: return "uint32";
    case DataType::kInt64: return "int64";
    case DataType::kUInt64: return "uint64";
    case DataType::kBool: return "bool";
    case DataType::kInt4: return "int4";
    case DataType::kUInt4: return "uint4";
    case DataType::kFloat8E4M3FN: return "float8e4m3fn";
    case DataType::kFloat8E4M3FNUZ: return "float8e4m3fnuz";
    case DataType::kFloat8E5M2: return "float8e5m2";
    case DataType::kFloat8E5M2FNUZ: return "float8e5m2fnuz";
    case DataType::kString: return "string";
    case DataType::kUndefined: return "undefined";
  }
  return "undefined";
}

bool dtype_from_name(const std::string& n, DataType* out) {
  struct { const char* name; DataType t; } table[] = {
      {"float32", DataType::kFloat32}, {"float", DataType::kFloat32}, {"fp32", DataType::kFloat32},
      {"float64", DataType::kFloat64}, {"double", DataType::kFloat64}, {"fp64", DataType::kFloat64},
      {"float16", DataType::kFloat16}, {"half", DataType::kFloat16}, {"fp16", DataType::kFloat16},
      {"bfloat16", DataType::kBFloat16}, {"bf16", DataType::kBFloat16},
      {"int8", DataType::kInt8}, {"uint8", DataType::kUInt8}, {"int32", DataType::kInt32},
      {"int64", DataType::kInt64}, {"int16", DataType::kInt16}, {"uint16", DataType::kUInt16},
      {"uint32", DataType::kUInt32}, {"uint64", DataType::kUInt64}, {"bool", DataType::kBool},
      {"int4", DataType::kInt4}, {"uint4", DataType::kUInt4}, {"string", DataType::kString},
      {"float8e4m3fn", DataType::kFloat8E4M3FN}, {"float8e4m3fnuz", DataType::kFloat8E4M3FNUZ},
      {"float8e5m2", DataType::kFloat8E5M2}, {"float8e5m2fnuz", DataType::kFloat8E5M2FNUZ}};
  for (auto& e : table)
    if (n == e.name) { *out = e.t; return true; }
  return false;
}

bool dtype_from_onnx(int32_t v, DataType* out) {
  switch (v) {
    case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 8: case 9: case 10: case 11: case 12: case 13: case 16:
    case 17: case 18: case 19: case 20: case 21: case 22:
      *out = static_cast<DataType>(v);
      return true;
    default:
      return false;
  }
}

bool dtype_from_onnx_numeric(int32_t v, DataType* out) {
  DataType t;
  // Nor the 4-bit types and the 8-bit floats: only Cast's `to` and QuantizeLinear's output_dtype may
  // name them (they read dtype_from_onnx).
  if (!dtype_from_onnx(v, &t) || t == DataType::kString || dtype_is_4bit(t) || dtype_is_float8(t)) return false;
  *out = t;
  return true;
}

bool dtype_is_float(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16 ||
         t == DataType::kFloat64;
}
bool dtype_is_integer(DataType t) {
  switch (t) {
    case DataType::kInt8: case DataType::kUInt8: case DataType::kInt16: case DataType::kUInt16:
    case DataType::kInt32: case DataType::kUInt32: case DataType::kInt64: case DataType::kUInt64:
      return true;
    default:
      return false;
  }
}

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do { ++e; man <<= 1; } while ((man & 0x400u) == 0);
      bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u)  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
  if (absx >= 0x477ff000u)  // rounds to >= 65520: overflow to inf
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (absx < 0x38800000u) {  // below the smallest normal half: subnormal or zero
    // value * 2^24 rounded to nearest even gives the subnormal mantissa.
    float a;
    std::memcpy(&a, &absx, 4);
    float scaled = a * 16777216.0f;  // exact in float for this range
    uint32_t m = static_cast<uint32_t>(std::nearbyint(scaled));
    return static_cast<uint16_t>(sign | m);
  }
  uint32_t exp = ((absx >> 23) - 127 + 15);
  uint32_t man = absx & 0x7fffffu;
  uint32_t h = (exp << 10) | (man >> 13);
  uint32_t rest = man & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // carries into exponent correctly
  return static_cast<uint16_t>(sign | h);
}

uint16_t float_to_bfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  return static_cast<uint16_t>(x >> 16);
}

double load_as_double(DataType t, const void* base, int64_t i) {
  switch (t) {
    case DataType::kFloat32: return static_cast<const float*>(base)[i];
    case DataType::kFloat64: return static_cast<const double*>(base)[i];
    case DataType::kFloat16: return half_to_float(static_cast<const uint16_t*>(base)[i]);
    case DataType::kBFloat16: return bfloat16_to_float(static_cast<const uint16_t*>(base)[i]);
    case DataType::kInt8: return static_cast<const int8_t*>(base)[i];
    case DataType::kUInt8: return static_cast<const uint8_t*>(base)[i];
    case DataType::kInt16: return static_cast<const int16_t*>(base)[i];
    case DataType::kUInt16: return static_cast<const uint16_t*>(base)[i];
    case DataType::kInt32: return static_cast<const int32_t*>(base)[i];
    case DataType::kUInt32: return static_cast<const uint32_t*>(base)[i];
    case DataType::kInt64: return static_cast<double>(static_cast<const int64_t*>(base)[i]);
    case DataType::kUInt64: return static_cast<double>(static_cast<const uint64_t*>(base)[i]);
    case DataType::kBool: return static_cast<const uint8_t*>(base)[i] ? 1.0 : 0.0;
    case DataType::kInt4: return static_cast<const int8_t*>(base)[i];
    case DataType::kUInt4: return static_cast<const uint8_t*>(base)[i];
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
      return float8::to_double(static_cast<float8::Format>(t), static_cast<const uint8_t*>(base)[i]);
    // Not a number: the ops that take strings read them as strings, and no other op gets one.
    case DataType::kString: return std::numeric_limits<double>::quiet_NaN();
    case DataType::kUndefined: return 0.0;
  }
  return 0.0;
}

namespace {
// double -> int64 with every input defined (a C++ cast of NaN or of a value out of range is
// undefined behaviour, and tensor data comes from files): truncation toward zero, NaN -> 0, and
// saturation at the int64 range. Narrower integer types then keep the low bits, as NumPy's astype
// does on x86 (-3.0 -> uint8 253).
int64_t double_to_int64(double v) { return saturating_int64(v); }

// uint64 has values above int64's range: NaN -> 0, truncation toward zero, saturation at
// [0, 2^64 - 1] for non-negative inputs; a negative value wraps through int64 as for the other
// integer types (-1.0 -> 2^64 - 1).
uint64_t double_to_uint64(double v) {
  if (std::isnan(v)) return 0;
  if (v < 0) return static_cast<uint64_t>(double_to_int64(v));
  if (v >= 18446744073709551616.0) return std::numeric_limits<uint64_t>::max();
  return static_cast<uint64_t>(v);
}
}  // namespace

void store_from_double(DataType t, void* base, int64_t i, double v) {
  switch (t) {
    case DataType::kFloat32: static_cast<float*>(base)[i] = static_cast<float>(v); break;
    case DataType::kFloat64: static_cast<double*>(base)[i] = v; break;
    case DataType::kFloat16: static_cast<uint16_t*>(base)[i] = float_to_half(static_cast<float>(v)); break;
    case DataType::kBFloat16: static_cast<uint16_t*>(base)[i] = float_to_bfloat16(static_cast<float>(v)); break;
    // Integer stores truncate toward zero as ONNX Cast does; out of range, see double_to_int64.
    case DataType::kInt8: static_cast<int8_t*>(base)[i] = static_cast<int8_t>(double_to_int64(v)); break;
    case DataType::kUInt8: static_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(double_to_int64(v)); break;
    case DataType::kInt16: static_cast<int16_t*>(base)[i] = static_cast<int16_t>(double_to_int64(v)); break;
    case DataType::kUInt16: static_cast<uint16_t*>(base)[i] = static_cast<uint16_t>(double_to_int64(v)); break;
    case DataType::kInt32: static_cast<int32_t*>(base)[i] = static_cast<int32_t>(double_to_int64(v)); break;
    case DataType::kUInt32: static_cast<uint32_t*>(base)[i] = static_cast<uint32_t>(double_to_int64(v)); break;
    case DataType::kInt64: static_cast<int64_t*>(base)[i] = double_to_int64(v); break;
    case DataType::kUInt64: static_cast<uint64_t*>(base)[i] = double_to_uint64(v); break;
    case DataType::kBool: static_cast<uint8_t*>(base)[i] = v != 0.0 ? 1 : 0; break;
    case DataType::kInt4:
    case DataType::kUInt4: store_from_int64(t, base, i, double_to_int64(v)); break;
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
      static_cast<uint8_t*>(base)[i] = float8::from_double(static_cast<float8::Format>(t), v, /*saturate=*/true);
      break;
    case DataType::kString: break;  // see load_as_double
    case DataType::kUndefined: break;
  }
}

void unpack_4bit(DataType t, const uint8_t* packed, int64_t numel, void* values) {
  for (int64_t i = 0; i < numel; ++i) {
    const uint8_t nibble = (i % 2 == 0) ? (packed[i / 2] & 0xF) : (packed[i / 2] >> 4);
    store_from_int64(t, values, i, nibble);  // int4: bit 3 is the sign
  }
}

void pack_4bit(const void* values, int64_t numel, uint8_t* packed) {
  const auto* v = static_cast<const uint8_t*>(values);  // int4's byte holds its two's complement
  for (int64_t i = 0; i < numel; i += 2) {
    const uint8_t hi = i + 1 < numel ? static_cast<uint8_t>(v[i + 1] & 0xF) : 0;
    packed[i / 2] = static_cast<uint8_t>((v[i] & 0xF) | (hi << 4));
  }
}

int64_t load_as_int64(DataType t, const void* base, int64_t i) {
  switch (t) {
    case DataType::kInt8: return static_cast<const int8_t*>(base)[i];
    case DataType::kUInt8: return static_cast<const uint8_t*>(base)[i];
    case DataType::kInt16: return static_cast<const int16_t*>(base)[i];
    case DataType::kUInt16: return static_cast<const uint16_t*>(base)[i];
    case DataType::kInt32: return static_cast<const int32_t*>(base)[i];
    case DataType::kUInt32: return static_cast<const uint32_t*>(base)[i];
    case DataType::kInt64: return static_cast<const int64_t*>(base)[i];
    case DataType::kUInt64: return static_cast<int64_t>(static_cast<const uint64_t*>(base)[i]);
    case DataType::kBool: return static_cast<const uint8_t*>(base)[i] ? 1 : 0;
    case DataType::kInt4: return static_cast<const int8_t*>(base)[i];
    case DataType::kUInt4: return static_cast<const uint8_t*>(base)[i];
    default: return double_to_int64(load_as_double(t, base, i));
  }
}

void store_from_int64(DataType t, void* base, int64_t i, int64_t v) {
  switch (t) {
    case DataType::kInt8: static_cast<int8_t*>(base)[i] = static_cast<int8_t>(v); break;
    case DataType::kUInt8: static_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(v); break;
    case DataType::kInt16: static_cast<int16_t*>(base)[i] = static_cast<int16_t>(v); break;
    case DataType::kUInt16: static_cast<uint16_t*>(base)[i] = static_cast<uint16_t>(v); break;
    case DataType::kInt32: static_cast<int32_t*>(base)[i] = static_cast<int32_t>(v); break;
    case DataType::kUInt32: static_cast<uint32_t*>(base)[i] = static_cast<uint32_t>(v); break;
    case DataType::kInt64: static_cast<int64_t*>(base)[i] = v; break;
    case DataType::kUInt64: static_cast<uint64_t*>(base)[i] = static_cast<uint64_t>(v); break;
    case DataType::kBool: static_cast<uint8_t*>(base)[i] = v != 0 ? 1 : 0; break;
    // The low four bits, as a conversion to a narrower type keeps the low bits; int4's sign-extended.
    case DataType::kInt4: static_cast<int8_t*>(base)[i] = static_cast<int8_t>(((v & 0xF) ^ 0x8) - 0x8); break;
    case DataType::kUInt4: static_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(v & 0xF); break;
    default: store_from_double(t, base, i, static_cast<double>(v)); break;
  }
}

}  // namespace graft
