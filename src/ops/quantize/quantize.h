// The quantize family: QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear, and the internal
// GraftQuantizeDequantize. One file per op with kernels of its own: quantize_linear (QuantizeLinear
// and DequantizeLinear, which share the scale/zero-point layout), dynamic_quantize_linear and
// quantize_dequantize, each a .cpp (definition and CPU reference) and a .cu (kernels and CUDA op);
// what the .cu files share on the device is in quantize_cuda.cuh. This header holds the
// scale/zero-point layout (per tensor, per axis or blocked) and the block_size reader, read one way
// by the schemas, the CPU references and the CUDA ops, the quantized types (8-, 4- and 16-bit
// integers with their ranges, and the 8-bit floats with their zero-point rule), and the CPU
// references' rounding step. (The integer and quantized-linear algebra, MatMulInteger to
// QLinearConv, is the integer family: src/ops/integer.)
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "graft/attribute.h"
#include "graft/dtype.h"
#include "graft/status.h"
#include "graft/tensor.h"

namespace graft {

struct ExecContext;  // ops/operator.h

// The scale/zero-point layout of a (De)QuantizeLinear node for input shape `x_dims`: per-tensor
// (a scalar or one-element scale), per-axis along `axis` (a 1-D scale with one entry per index of
// that axis), or blocked (opset 21's block_size B > 0: the scale has x's rank and x's dims but along
// `axis`, where it has ceil(x_dims[axis] / B) entries, index a of x's axis reading entry a / B).
// The errors name the inputs or the axis and block_size attributes.
struct QuantLayout {
  int64_t axis = 0;      // normalized; meaningful when channels > 1 or block > 0
  int64_t channels = 1;  // per-axis: scale/zero-point entries (1: per tensor)
  int64_t inner = 1;     // elements after `axis`
  int64_t block = 0;     // blocked: B (0: not blocked)
  int64_t axis_len = 1;  // blocked: x_dims[axis]
  int64_t blocks = 1;    // blocked: ceil(axis_len / B), the scale's extent along `axis`
};
// The scale/zero-point entry x's flat index i reads: one formula for the CPU reference and the CUDA
// kernels (which take the QuantLayout by value).
#ifdef __CUDACC__
__host__ __device__
#endif
inline int64_t quant_entry(const QuantLayout& l, int64_t i) {
  if (l.block > 0) {
    const int64_t a = (i / l.inner) % l.axis_len;
    return ((i / l.inner / l.axis_len) * l.blocks + a / l.block) * l.inner + i % l.inner;
  }
  return l.channels == 1 ? 0 : (i / l.inner) % l.channels;
}
Result<QuantLayout> quant_layout(const AttributeMap& attrs, const std::vector<int64_t>& x_dims,
                                 const std::vector<int64_t>& scale_dims, const std::vector<int64_t>* zp_dims);

// block_size (opset 21), absent or 0 (not blocked) or positive; a negative one is an error naming it.
Result<int64_t> block_size_of(const AttributeMap& attrs);

// The quantized types: QuantizeLinear's outputs and zero points. DequantizeLinear's x may be one
// of them or int32 (kDequantizeInputTypes). The schemas, the CPU references and the CUDA ops read
// these lists. The integer ones have a range (quant_bounds): 8-bit, opset 21's 4-bit and 16-bit;
// the 8-bit floats (opset 19) are converted to instead, rounding to nearest even with or without
// saturation (float8.h), and their zero point must be 0 (check_float8_zero_point). The CUDA
// kernels take all but the 16-bit types, which the CUDA backend does not keep (quantize_linear.cu).
inline constexpr std::initializer_list<DataType> kQuantizedTypes = {
    DataType::kUInt8,        DataType::kInt8,           DataType::kUInt4,      DataType::kInt4,
    DataType::kFloat8E4M3FN, DataType::kFloat8E4M3FNUZ, DataType::kFloat8E5M2, DataType::kFloat8E5M2FNUZ,
    DataType::kUInt16,       DataType::kInt16};
inline constexpr std::initializer_list<DataType> kDequantizeInputTypes = {
    DataType::kUInt8,        DataType::kInt8,           DataType::kUInt4,      DataType::kInt4,
    DataType::kFloat8E4M3FN, DataType::kFloat8E4M3FNUZ, DataType::kFloat8E5M2, DataType::kFloat8E5M2FNUZ,
    DataType::kUInt16,       DataType::kInt16,          DataType::kInt32};
inline bool is_quantized_type(DataType t) {
  return std::find(kQuantizedTypes.begin(), kQuantizedTypes.end(), t) != kQuantizedTypes.end();
}

// An 8-bit float zero point must be all zero bytes: ONNX says the zero point is "usually not used"
// with these types, its reference refuses any other in DequantizeLinear and ignores it in
// QuantizeLinear, so graft refuses it in both rather than guess. `what` names the input
// (y_zero_point or x_zero_point); the error is the caller's to tag with the node.
Status check_float8_zero_point(const Tensor& zp, const char* what);

// The range a quantized value of dtype `t` saturates to: uint8 [0, 255], int8 [-128, 127], and
// opset 21's uint4 [0, 15], int4 [-8, 7], uint16 [0, 65535] and int16 [-32768, 32767]; false for any
// other dtype. One table for the CPU references and the CUDA ops.
inline bool quant_bounds(DataType t, float* lo, float* hi) {
  switch (t) {
    case DataType::kUInt8: *lo = 0.0f, *hi = 255.0f; return true;
    case DataType::kInt8: *lo = -128.0f, *hi = 127.0f; return true;
    case DataType::kUInt16: *lo = 0.0f, *hi = 65535.0f; return true;
    case DataType::kInt16: *lo = -32768.0f, *hi = 32767.0f; return true;
    case DataType::kUInt4:
    case DataType::kInt4: *lo = static_cast<float>(four_bit_min(t)), *hi = static_cast<float>(four_bit_max(t)); return true;
    default: return false;
  }
}

// ---- CPU references (quantize_linear.cpp, quantize_dequantize.cpp, dynamic_quantize_linear.cpp) ----
namespace cpu {

struct QRange {
  float lo, hi;
};
// quant_bounds' range; any other dtype is the kernel's unsupported-dtype error (quantize_linear.cpp).
Result<QRange> range_of(const ExecContext& ctx, DataType t);

// round_half_even(v) + zp, saturated to [lo, hi], in float; NaN gives the zero point (clamped).
inline float quantize_one(float v, float zp, QRange r) {
  float q = std::isnan(v) ? zp : std::nearbyint(v) + zp;
  return std::min(std::max(q, r.lo), r.hi);
}

}  // namespace cpu

}  // namespace graft
