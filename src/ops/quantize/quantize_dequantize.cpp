// GraftQuantizeDequantize, graft's internal op for a folded QuantizeLinear -> DequantizeLinear pair:
// the CPU reference (the pair's own steps, through quantize.h's range_of and quantize_one) and the
// schema. CUDA: quantize_dequantize.cu.
#include "ops/quantize/quantize.h"

#include <cstdint>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"
#include "graft/status.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- CPU reference --------------------------------------------------------------------------

namespace cpu {

// GraftQuantizeDequantize (the fold of a QuantizeLinear -> DequantizeLinear pair over a scalar
// scale and zero point, fold_quantize_dequantize_pairs): QuantizeLinear's steps, then
// DequantizeLinear's, element by element, so the result equals the pair's to the bit and the 8-bit
// values are never stored. Inputs x (float), scale (float scalar), zero_point (uint8 or int8 scalar:
// its dtype is the pair's integer type); y has x's dtype.
Status quantize_dequantize(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 3));
  const Tensor& x = *ctx.inputs[0];
  const Tensor& scale = *ctx.inputs[1];
  const Tensor& zp = *ctx.inputs[2];
  Tensor& y = *ctx.outputs[0];
  GRAFT_RETURN_IF_ERROR(require_float_tensor(&scale, "scale"));
  if (!dtype_is_float(x.dtype())) return bad_dtype(ctx, x.dtype());
  if (scale.numel() != 1 || zp.numel() != 1)
    return error(StatusCode::kInvalidModel, "GraftQuantizeDequantize: the scale and zero point must be scalars");
  GRAFT_ASSIGN_OR_RETURN(QRange r, range_of(ctx, zp.dtype()));
  GRAFT_CHECK(y.numel() == x.numel() && y.dtype() == x.dtype());
  const float s = static_cast<float>(scale.get(0));
  const float z = static_cast<float>(zp.get(0));
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    const float q = quantize_one(static_cast<float>(x.get(i)) / s, z, r);
    y.set(i, (static_cast<double>(q) - z) * static_cast<double>(s));
  }
  return Status::ok();
}

}  // namespace cpu

// ---- schema: inference and the table row ----------------------------------------------------

namespace {

using namespace infer;

Status infer_quantize_dequantize(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, kFloatTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 2, {kU8, kI8}));
  for (int i = 1; i <= 2; ++i) {
    const TensorDesc& d = ctx.input(i);
    if (d.shape && shape_is_static(*d.shape) && numel_of(shape_values(*d.shape)) != 1)
      return ctx.fail(i == 1 ? "the scale" : "the zero point", " must be a scalar, got ", d.to_string());
  }
  ctx.set_output(0, desc_of(ctx.input(0).dtype, ctx.input(0).shape));
  return Status::ok();
}

}  // namespace

void append_quantize_dequantize_ops(std::vector<OpEntry>& out) {
  // A folded QuantizeLinear -> DequantizeLinear pair. Per element over a scalar scale and zero point:
  // an NHWC region flows through it.
  out.push_back(internal_op(
      elementwise_unary(OpEntry{"GraftQuantizeDequantize", 1, infer_quantize_dequantize, cpu::quantize_dequantize})));
}

}  // namespace graft
