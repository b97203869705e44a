// CPU reference kernels for the integer and quantized linear-algebra ops of
// src/ops/integer_ops.cpp: MatMulInteger and ConvInteger (int32 output), QLinearMatMul and
// QLinearConv (requantized int8/uint8 output), all opset 10.
//
// Integer sums are exact: every (x - zero_point) * (w - zero_point) product is accumulated in
// int64 and the sum is then wrapped to int32, which is what an int32 accumulator gives (the spec
// lets accumulation overflow only in 32 bits). The QLinear ops then requantize as ONNX Runtime's
// kernels do, so ties land where theirs do: multiplier = float32(a_scale * b_scale / y_scale) (per
// row/column/channel where the scales are), y = saturate(round_half_even(float32(sum) * multiplier)
// + y_zero_point), the same float32 rounding graft's QuantizeLinear does (quantize.cpp).
//
// The layout readers (src/ops/integer_attrs.h) are shared by the schemas and the kernels of both
// backends, so inference and execution refuse a bad zero point or scale with the same words.
#pragma once

#include "graft/status.h"
#include "ops/integer_attrs.h"
#include "ops/operator.h"

namespace graft::cpu {

// ---- kernels -------------------------------------------------------------------------------------

Status matmul_integer(ExecContext& ctx);
Status conv_integer(ExecContext& ctx);
Status qlinear_matmul(ExecContext& ctx);
Status qlinear_conv(ExecContext& ctx);

}  // namespace graft::cpu
