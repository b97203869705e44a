// CPU reference kernels for the quantization ops of src/ops/quantize_ops.cpp: QuantizeLinear,
// DequantizeLinear (per-tensor and per-axis, int8/uint8, int32 for DequantizeLinear's input) and
// DynamicQuantizeLinear (uint8).
//
// Quantization divides and rounds in float32, as ONNX's reference and ONNX Runtime do (so ties land
// where theirs do): q = saturate(round_half_even(x / scale) + zero_point); NaN quantizes to the zero
// point. Dequantization is (x - zero_point) * scale, computed in double and rounded once.
#pragma once

#include <cstdint>

#include "graft/status.h"
#include "ops/operator.h"

namespace graft::cpu {

// The scale/zero-point layout of a (De)QuantizeLinear node for input shape `x_dims`: per-tensor
// (channels == 1: a scalar or one-element scale) or per-axis along `axis` (a 1-D scale with one
// entry per index of that axis). The errors name the inputs or the axis attribute.
struct QuantLayout {
  int64_t axis = 0;      // normalized; meaningful when channels > 1
  int64_t channels = 1;  // scale/zero-point entries
  int64_t inner = 1;     // elements after `axis` (the channel of flat index i is (i / inner) % channels)
};
Result<QuantLayout> quant_layout(const AttributeMap& attrs, const std::vector<int64_t>& x_dims,
                                 const std::vector<int64_t>& scale_dims, const std::vector<int64_t>* zp_dims);

// block_size (opset 21) must be absent or 0: blocked quantization is not supported.
Status check_no_block_size(const AttributeMap& attrs);

Status quantize_linear(ExecContext& ctx);
Status dequantize_linear(ExecContext& ctx);
Status dynamic_quantize_linear(ExecContext& ctx);

}  // namespace graft::cpu
