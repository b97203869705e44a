// DynamicQuantizeLinear (opset 11): the CPU reference (uint8, quantize.h's quantize_one over the
// scale and zero point it computes) and the schema. CUDA: dynamic_quantize_linear.cu.
#include "ops/quantize/quantize.h"

#include <cmath>
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

Status dynamic_quantize_linear(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  const Tensor& x = *ctx.inputs[0];
  if (x.dtype() != DataType::kFloat32) return bad_dtype(ctx, x.dtype());
  if (ctx.outputs.size() < 3 || !ctx.outputs[1] || !ctx.outputs[2])
    return error(StatusCode::kInternal, "DynamicQuantizeLinear needs its three outputs (y, y_scale, y_zero_point)");
  Tensor& y = *ctx.outputs[0];
  Tensor& y_scale = *ctx.outputs[1];
  Tensor& y_zp = *ctx.outputs[2];
  GRAFT_CHECK(y.numel() == x.numel() && y.dtype() == DataType::kUInt8 && y_scale.numel() == 1 && y_zp.numel() == 1);
  // The range always includes 0, so 0 quantizes exactly. NaNs are left out of it.
  float lo = 0.0f, hi = 0.0f;
  const float* xp = static_cast<const float*>(x.data());
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    lo = std::fmin(lo, xp[i]);
    hi = std::fmax(hi, xp[i]);
  }
  const QRange r{0.0f, 255.0f};
  const float scale = (hi - lo) / 255.0f;
  // An all-zero input has scale 0: graft gives zero point 0 and zeros (dequantizing to the input)
  // where the formula would divide 0 by 0.
  const float zp = scale == 0.0f ? 0.0f : quantize_one((0.0f - lo) / scale, 0.0f, r);
  y_scale.set(0, scale);
  y_zp.set(0, zp);
  for (int64_t i = 0, n = x.numel(); i < n; ++i) y.set(i, scale == 0.0f ? 0.0 : quantize_one(xp[i] / scale, zp, r));
  return Status::ok();
}

}  // namespace cpu

// ---- schema: inference and the table row ----------------------------------------------------
// DynamicQuantizeLinear (11): float32 in, uint8 out with a float32 scale and a uint8 zero point.

namespace {

using namespace infer;

Status infer_dynamic_quantize_linear(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, {kF32}));
  if (ctx.num_outputs() != 3)
    return ctx.fail("has three outputs (y, y_scale, y_zero_point), the node lists ", static_cast<int64_t>(ctx.num_outputs()));
  ctx.set_output(0, desc_of(kU8, ctx.input(0).shape));
  ctx.set_output(1, desc_of(kF32, Shape{}));
  ctx.set_output(2, desc_of(kU8, Shape{}));
  return Status::ok();
}

}  // namespace

void append_dynamic_quantize_linear_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"DynamicQuantizeLinear", 11, infer_dynamic_quantize_linear, cpu::dynamic_quantize_linear});
}

}  // namespace graft
