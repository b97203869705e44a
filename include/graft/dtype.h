// graft/dtype.h — element types and host-side half/bfloat16 conversions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace graft {

// Values match ONNX TensorProto.DataType so conversion is a cast (checked by the importer).
enum class DataType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  // ONNX's string type. Each element is a std::string (UTF-8 bytes), so a string tensor lives on
  // the host only, its storage constructs and destroys the strings, and it is never copied bytewise
  // (Tensor::copy_data_from). Only the ops that say so take strings (OpEntry::takes_strings);
  // inference refuses a string input of any other op, naming it.
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kBFloat16 = 16,
  // ONNX's 4-bit integers (opset 21), which only QuantizeLinear, DequantizeLinear and Cast compute
  // with and the byte-moving ops (Reshape, Transpose, Identity, ...) carry. In memory one element takes
  // one byte, holding its value (uint4 0..15, int4 -8..7 sign-extended), so every tensor routine
  // that sizes, copies or indexes by element works unchanged; only ONNX's TensorProto packs two to
  // a byte (low nibble first), which the importer unpacks and tensor_to_proto packs again. They are
  // not integer types for dtype_is_integer: arithmetic ops refuse them.
  kUInt4 = 21,
  kInt4 = 22,
  // ONNX's 8-bit floats (opset 19), one byte each (layouts and conversions: src/core/float8.h).
  // Cast, QuantizeLinear and DequantizeLinear convert to and from them and the byte-moving ops carry
  // them; they are not float types for dtype_is_float, so arithmetic ops refuse them, naming them.
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
};

size_t dtype_size(DataType t);            // bytes per element; 0 for kUndefined
const char* dtype_name(DataType t);       // "float32", "float16", ...
bool dtype_from_name(const std::string& name, DataType* out);  // accepts "float32"/"fp32"/"float"...
bool dtype_from_onnx(int32_t onnx_type, DataType* out);       // false if graft lacks the type
// dtype_from_onnx without string, the 4-bit types and the 8-bit floats: what an op's dtype attribute
// (Cast's and QuantizeLinear's aside) may name, since only the ops that take strings
// (OpEntry::takes_strings) make string tensors and only Cast and Q/DQ compute with the others.
bool dtype_from_onnx_numeric(int32_t onnx_type, DataType* out);
bool dtype_is_float(DataType t);          // float16/bfloat16/float32/float64
bool dtype_is_integer(DataType t);        // int8/uint8/int16/uint16/int32/uint32/int64/uint64 (not bool, not int4)
inline bool dtype_is_4bit(DataType t) { return t == DataType::kInt4 || t == DataType::kUInt4; }
inline bool dtype_is_float8(DataType t) {
  return t == DataType::kFloat8E4M3FN || t == DataType::kFloat8E4M3FNUZ || t == DataType::kFloat8E5M2 ||
         t == DataType::kFloat8E5M2FNUZ;
}
// The one-a-byte storage a 4-bit type shares with its 8-bit kin (int4 as int8, uint4 as uint8), for
// code that reads or writes its values; any other dtype is its own.
inline DataType dtype_storage(DataType t) {
  return t == DataType::kInt4 ? DataType::kInt8 : t == DataType::kUInt4 ? DataType::kUInt8 : t;
}
// A 4-bit type's range: int4 [-8, 7], uint4 [0, 15].
inline int four_bit_min(DataType t) { return t == DataType::kInt4 ? -8 : 0; }
inline int four_bit_max(DataType t) { return t == DataType::kInt4 ? 7 : 15; }
inline bool dtype_is_string(DataType t) { return t == DataType::kString; }

// IEEE binary16 and bfloat16 stored as raw bits, converted through float on the host.
struct half {
  uint16_t bits = 0;
};
struct bfloat16 {
  uint16_t bits = 0;
};

float half_to_float(uint16_t bits);
uint16_t float_to_half(float f);  // round to nearest even, overflow to inf, keeps NaN
inline float bfloat16_to_float(uint16_t bits) {
  uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t float_to_bfloat16(float f);  // round to nearest even, keeps NaN

// Map a C++ type to its DataType (for templated kernels).
template <typename T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DataType value = DataType::kFloat32; };
template <> struct dtype_of<double> { static constexpr DataType value = DataType::kFloat64; };
template <> struct dtype_of<half> { static constexpr DataType value = DataType::kFloat16; };
template <> struct dtype_of<bfloat16> { static constexpr DataType value = DataType::kBFloat16; };
template <> struct dtype_of<int8_t> { static constexpr DataType value = DataType::kInt8; };
template <> struct dtype_of<uint8_t> { static constexpr DataType value = DataType::kUInt8; };
template <> struct dtype_of<int16_t> { static constexpr DataType value = DataType::kInt16; };
template <> struct dtype_of<uint16_t> { static constexpr DataType value = DataType::kUInt16; };
template <> struct dtype_of<int32_t> { static constexpr DataType value = DataType::kInt32; };
template <> struct dtype_of<uint32_t> { static constexpr DataType value = DataType::kUInt32; };
template <> struct dtype_of<uint64_t> { static constexpr DataType value = DataType::kUInt64; };
template <> struct dtype_of<int64_t> { static constexpr DataType value = DataType::kInt64; };
template <> struct dtype_of<bool> { static constexpr DataType value = DataType::kBool; };

// Load/store any element as double: the CPU reference's lingua franca for mixed dtypes. int64 and
// uint64 values beyond 2^53 round; code that must be exact uses the integer accessors below. A
// float8 store rounds to nearest even and saturates (Cast's default; float8.h).
double load_as_double(DataType t, const void* base, int64_t index);
void store_from_double(DataType t, void* base, int64_t index, double v);

// ONNX's packing of int4/uint4 (two values a byte, the first in the low nibble, the last byte's
// high nibble unused for an odd count) and graft's one-a-byte form (dtype.h's kInt4/kUInt4).
inline int64_t packed_4bit_bytes(int64_t numel) { return numel / 2 + numel % 2; }
void unpack_4bit(DataType t, const uint8_t* packed, int64_t numel, void* values);
void pack_4bit(const void* values, int64_t numel, uint8_t* packed);

// Exact access to integer (and bool) elements through 64 bits: a uint64 travels as its bit pattern
// in int64_t (2^64 - 1 reads as -1), and a store keeps the low bits of `v`, as a C++ conversion to
// the narrower type does. Float dtypes go through double.
int64_t load_as_int64(DataType t, const void* base, int64_t index);
void store_from_int64(DataType t, void* base, int64_t index, int64_t v);

}  // namespace graft
