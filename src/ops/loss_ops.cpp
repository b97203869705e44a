// Schemas of the ONNX loss ops: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opset 12
// on; 13 only widened the index types). Kernels: src/backends/cpu/loss.cpp.
//
// input/scores [N, C, d1..dk] (a float type), target/labels [N, d1..dk] (int32/int64), optional
// weight [C] of the input's dtype. Output 0: the loss, [N, d1..dk] for reduction "none", a scalar
// for "sum" and "mean". SoftmaxCrossEntropyLoss's optional output 1 is log_softmax(scores) over
// axis 1, shaped as the scores.
#include <string>

#include "backends/cpu/loss.h"
#include "ops/loss_attrs.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {
namespace {

using namespace infer;

Status infer_loss(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, {kI32, kI64}));
  GRAFT_ASSIGN_OR_RETURN(LossAttrs a, loss_attrs(ctx.attrs()));
  const TensorDesc& x = ctx.input(0);
  const TensorDesc& t = ctx.input(1);
  if (x.shape && x.rank() < 2) return ctx.fail("input 0 must have rank >= 2 (N, C, ...), got ", x.to_string());
  if (x.shape && t.shape) {
    if (t.rank() != x.rank() - 1)
      return ctx.fail("target ", t.to_string(), " must have rank ", x.rank() - 1, " for input ", x.to_string());
    for (int64_t d = 0; d < t.rank(); ++d) {
      const Dim& td = (*t.shape)[d];
      const Dim& xd = (*x.shape)[d == 0 ? 0 : d + 1];
      if (td.is_const() && xd.is_const() && td.value() != xd.value())
        return ctx.fail("target ", t.to_string(), " does not match input ", x.to_string(), " on target axis ", d);
    }
  }
  if (ctx.has_input(2)) {
    const TensorDesc& w = ctx.input(2);
    if (w.dtype != x.dtype)
      return ctx.fail("weight has dtype ", dtype_name(w.dtype), " but input 0 has ", dtype_name(x.dtype));
    if (w.shape) {
      if (w.rank() != 1) return ctx.fail("weight must be 1-D [C], got ", w.to_string());
      if (x.shape) {
        const Dim& wc = (*w.shape)[0];
        const Dim& xc = (*x.shape)[1];
        if (wc.is_const() && xc.is_const() && wc.value() != xc.value())
          return ctx.fail("weight ", w.to_string(), " must have C = ", xc.value(), " elements (input ", x.to_string(), ")");
      }
    }
  }
  std::optional<Shape> out;
  if (a.reduction != LossReduction::kNone) {
    out = Shape{};
  } else if (t.shape) {
    out = *t.shape;
  } else if (x.shape) {
    Shape s{(*x.shape)[0]};
    s.insert(s.end(), x.shape->begin() + 2, x.shape->end());
    out = s;
  }
  TensorDesc y;
  y.dtype = x.dtype;
  y.shape = std::move(out);
  ctx.set_output(0, std::move(y));
  return Status::ok();
}

Status infer_nll(InferContext& ctx) {
  if (ctx.num_outputs() > 1) return ctx.fail("has one output, the node lists ", static_cast<int64_t>(ctx.num_outputs()));
  return infer_loss(ctx);
}

Status infer_sce(InferContext& ctx) {
  if (ctx.num_outputs() > 2)
    return ctx.fail("has at most two outputs (loss, log_prob), the node lists ", static_cast<int64_t>(ctx.num_outputs()));
  GRAFT_RETURN_IF_ERROR(infer_loss(ctx));
  if (ctx.num_outputs() > 1) ctx.set_output(1, ctx.input(0));
  return Status::ok();
}

}  // namespace

void append_loss_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"NegativeLogLikelihoodLoss", 12, infer_nll, cpu::negative_log_likelihood_loss});
  out.push_back(OpEntry{"SoftmaxCrossEntropyLoss", 12, infer_sce, cpu::softmax_cross_entropy_loss});
}

}  // namespace graft
