// GraftL2Normalize, graft's internal op for F.normalize over the last axis: the naive CPU reference
// and the schema.
#include "ops/reduce_norm/reduce_norm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "backends/cpu/element_traits.h"
#include "backends/cpu/broadcast_walker.h"
#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"  // check_io, bad_dtype
#include "graft/status.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- CPU reference ---------------------------------------------------------------------------------

namespace cpu {

// GraftL2Normalize(X; eps) -> Y = X / max(||X||_2 over the last axis, eps), the norm summed in
// double: F.normalize(x, dim=-1) as the exporters write it (ReduceL2 -> Clip(eps) -> Expand ->
// Div), which src/graph/fuse_l2_normalize.cpp makes one layer. A zero row gives zeros.
Status l2_normalize(ExecContext& ctx) {
  if (ctx.inputs.empty() || !ctx.inputs[0] || ctx.outputs.empty() || !ctx.outputs[0])
    return error(StatusCode::kInternal, "GraftL2Normalize kernel called without input or output");
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  if (!dtype_is_float(x.dtype()) || y.numel() != x.numel())
    return error(StatusCode::kInternal, "GraftL2Normalize: a float input and an output of its size are needed");
  static const AttributeMap kEmpty;
  GRAFT_ASSIGN_OR_RETURN(float eps, (ctx.attrs ? *ctx.attrs : kEmpty).get_float("eps", 0.f));
  const int64_t n = x.rank() == 0 ? 1 : x.dims().back();
  if (n == 0 || x.numel() == 0) return Status::ok();
  for (int64_t row = 0; row < x.numel() / n; ++row) {
    double sum = 0;
    for (int64_t k = 0; k < n; ++k) sum += x.get(row * n + k) * x.get(row * n + k);
    const double d = std::max(std::sqrt(sum), static_cast<double>(eps));
    for (int64_t k = 0; k < n; ++k) y.set(row * n + k, x.get(row * n + k) / d);
  }
  return Status::ok();
}

}  // namespace cpu

// ---- schema ----------------------------------------------------------------------------------------

namespace {

Status infer_l2_normalize(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(infer::require_float_input(ctx, 0));
  auto eps = ctx.attrs().get_float("eps", 0.f);
  if (!eps) return std::move(eps).take_status().with_attribute("eps");
  if (!std::isfinite(*eps) || *eps < 0.f)
    return ctx.fail("attribute 'eps' must be finite and not negative, got ", *eps).with_attribute("eps");
  ctx.set_output(0, ctx.input(0));
  return Status::ok();
}

}  // namespace

void append_l2_normalize_ops(std::vector<OpEntry>& out) {
  // F.normalize over the last axis as one layer (the norm accumulates in float32 or wider).
  out.push_back(internal_op({"GraftL2Normalize", 1, infer_l2_normalize, cpu::l2_normalize}));
}

}  // namespace graft
