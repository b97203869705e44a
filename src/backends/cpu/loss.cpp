#include "backends/cpu/loss.h"

#include <cmath>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "backends/cpu/nn.h"
#include "backends/cpu/unary_kernel.h"
#include "ops/loss_attrs.h"

namespace graft::cpu {
namespace {

// Checks input/target/weight against each other (loss_attrs.h); errors name the op and the shapes.
Result<LossGeometry> geometry_of(const ExecContext& ctx, const Tensor& x, const Tensor& target, const Tensor* weight) {
  const std::vector<int64_t> wd = weight ? weight->dims() : std::vector<int64_t>{};
  return loss_geometry(op_name(ctx), x.dims(), x.dtype(), target.dtype(), target.dims(), weight ? &wd : nullptr,
                       weight ? weight->dtype() : DataType::kUndefined);
}

// The shared NLL over log-probabilities `logp` ([n, c, inner] in double): writes output 0.
Status nll_from(ExecContext& ctx, const LossGeometry& g, const std::vector<double>& logp, const Tensor& target,
                const Tensor* weight) {
  GRAFT_ASSIGN_OR_RETURN(LossAttrs a, loss_attrs(attrs_of(ctx)));
  const bool has_ii = a.ignore_index.has_value();
  const int64_t ii = a.ignore_index.value_or(0);
  const LossReduction reduction = a.reduction;
  const std::vector<int64_t> t = target.to_int64_vector();
  const std::vector<double> w = weight ? load_doubles(*weight) : std::vector<double>{};
  Tensor& y = *ctx.outputs[0];
  const int64_t count = g.n * g.inner;
  if (reduction == LossReduction::kNone) {
    GRAFT_CHECK(y.numel() == count);
  } else {
    GRAFT_CHECK(y.numel() == 1);
  }
  double sum = 0, wsum = 0;
  for (int64_t b = 0; b < g.n; ++b)
    for (int64_t i = 0; i < g.inner; ++i) {
      const int64_t k = b * g.inner + i;
      const int64_t cls = t[static_cast<size_t>(k)];
      double loss = 0, wt = 0;
      if (!(has_ii && cls == ii)) {
        if (cls < 0 || cls >= g.c)
          return error(StatusCode::kRuntimeError, op_name(ctx), ": target value ", cls, " at flat index ", k,
                       " is outside [0, ", g.c, ")", has_ii ? " and is not ignore_index" : "");
        wt = weight ? w[static_cast<size_t>(cls)] : 1.0;
        loss = -logp[static_cast<size_t>((b * g.c + cls) * g.inner + i)] * wt;
      }
      if (reduction == LossReduction::kNone) y.set(k, loss);
      sum += loss;
      wsum += wt;
    }
  if (reduction == LossReduction::kSum) y.set(0, sum);
  // mean: weighted by the weights of the counted targets; 0/0 (every target ignored) is NaN, as in
  // the ONNX reference.
  if (reduction == LossReduction::kMean) y.set(0, sum / wsum);
  return Status::ok();
}

Status loss_inputs(const ExecContext& ctx, const char* x_name) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  GRAFT_RETURN_IF_ERROR(require_float_tensor(ctx.inputs[0], x_name));
  if (ctx.inputs.size() > 2 && ctx.inputs[2]) GRAFT_RETURN_IF_ERROR(require_float_tensor(ctx.inputs[2], "weight"));
  return Status::ok();
}

}  // namespace

Status negative_log_likelihood_loss(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(loss_inputs(ctx, "input"));
  const Tensor& x = *ctx.inputs[0];
  const Tensor* weight = ctx.inputs.size() > 2 ? ctx.inputs[2] : nullptr;
  GRAFT_ASSIGN_OR_RETURN(LossGeometry g, geometry_of(ctx, x, *ctx.inputs[1], weight));
  return nll_from(ctx, g, load_doubles(x), *ctx.inputs[1], weight);
}

Status softmax_cross_entropy_loss(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(loss_inputs(ctx, "scores"));
  const Tensor& x = *ctx.inputs[0];
  const Tensor* weight = ctx.inputs.size() > 2 ? ctx.inputs[2] : nullptr;
  GRAFT_ASSIGN_OR_RETURN(LossGeometry g, geometry_of(ctx, x, *ctx.inputs[1], weight));
  // log_softmax over the class axis: x - max - log(sum(exp(x - max))).
  std::vector<double> logp = load_doubles(x);
  for (int64_t b = 0; b < g.n; ++b)
    for (int64_t i = 0; i < g.inner; ++i) {
      auto at = [&](int64_t cls) -> double& { return logp[static_cast<size_t>((b * g.c + cls) * g.inner + i)]; };
      double mx = -INFINITY;
      for (int64_t cls = 0; cls < g.c; ++cls) mx = std::fmax(mx, at(cls));
      double s = 0;
      for (int64_t cls = 0; cls < g.c; ++cls) s += std::exp(at(cls) - mx);
      const double lse = mx + std::log(s);
      for (int64_t cls = 0; cls < g.c; ++cls) at(cls) -= lse;
    }
  if (ctx.outputs.size() > 1 && ctx.outputs[1]) {
    Tensor& lp = *ctx.outputs[1];
    GRAFT_CHECK(lp.numel() == x.numel() && lp.dtype() == x.dtype());
    store_doubles(lp, logp);
  }
  return nll_from(ctx, g, logp, *ctx.inputs[1], weight);
}

}  // namespace graft::cpu
