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
#include "ops/quantize_attrs.h"

namespace graft::cpu {

Status quantize_linear(ExecContext& ctx);
Status dequantize_linear(ExecContext& ctx);
Status dynamic_quantize_linear(ExecContext& ctx);

}  // namespace graft::cpu
