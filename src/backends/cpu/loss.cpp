#include "backends/cpu/loss.h"

#include <cmath>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "backends/cpu/nn.h"
#include "backends/cpu/unary_kernel.h"

namespace graft::cpu {
namespace {

struct LossGeometry {
  int64_t n = 0, c = 0, inner = 1;  // input viewed as [n, c, inner]; target as [n, inner]
};

// Checks input/target/weight against each other; errors name the op and the shapes.
Result<LossGeometry> loss_geometry(const ExecContext& ctx, const Tensor& x, const Tensor& target, const Tensor* weight) {
  if (x.rank() < 2)
    return error(StatusCode::kInvalidModel, op_name(ctx), ": input must have rank >= 2 (N, C, ...), got ",
                 ints_to_string(x.dims()));
  if (target.dtype() != DataType::kInt32 && target.dtype() != DataType::kInt64)
    return error(StatusCode::kUnsupported, op_name(ctx), ": target has dtype ", dtype_name(target.dtype()),
                 "; expected int32 or int64");
  std::vector<int64_t> want{x.dims()[0]};
  for (int64_t d = 2; d < x.rank(); ++d) want.push_back(x.dims()[d]);
  if (target.dims() != want)
    return error(StatusCode::kInvalidModel, op_name(ctx), ": target ", ints_to_string(target.dims()),
                 " does not match input ", ints_to_string(x.dims()), " (expected ", ints_to_string(want), ")");
  LossGeometry g;
  g.n = x.dims()[0];
  g.c = x.dims()[1];
  for (int64_t d = 2; d < x.rank(); ++d) g.inner *= x.dims()[d];
  if (weight) {
    if (weight->dtype() != x.dtype() || weight->rank() != 1 || weight->dims()[0] != g.c)
      return error(StatusCode::kInvalidModel, op_name(ctx), ": weight ", dtype_name(weight->dtype()), " ",
                   ints_to_string(weight->dims()), " must be ", dtype_name(x.dtype()), " [", g.c, "]");
  }
  return g;
}

// The shared NLL over log-probabilities `logp` ([n, c, inner] in double): writes output 0.
Status nll_from(ExecContext& ctx, const LossGeometry& g, const std::vector<double>& logp, const Tensor& target,
                const Tensor* weight) {
  const AttributeMap& attrs = attrs_of(ctx);
  GRAFT_ASSIGN_OR_RETURN(std::string reduction, loss_reduction(attrs));
  const bool has_ii = attrs.has("ignore_index");
  int64_t ii = 0;
  if (has_ii) {
    auto r = attrs.get_int("ignore_index", 0);
    if (!r) return Status(r.status()).with_attribute("ignore_index");
    ii = r.value();
  }
  const std::vector<int64_t> t = target.to_int64_vector();
  const std::vector<double> w = weight ? load_doubles(*weight) : std::vector<double>{};
  Tensor& y = *ctx.outputs[0];
  const int64_t count = g.n * g.inner;
  if (reduction == "none") {
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
      if (reduction == "none") y.set(k, loss);
      sum += loss;
      wsum += wt;
    }
  if (reduction == "sum") y.set(0, sum);
  // mean: weighted by the weights of the counted targets; 0/0 (every target ignored) is NaN, as in
  // the ONNX reference.
  if (reduction == "mean") y.set(0, sum / wsum);
  return Status::ok();
}

Status loss_inputs(const ExecContext& ctx, const char* x_name) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  GRAFT_RETURN_IF_ERROR(require_float_tensor(ctx.inputs[0], x_name));
  if (ctx.inputs.size() > 2 && ctx.inputs[2]) GRAFT_RETURN_IF_ERROR(require_float_tensor(ctx.inputs[2], "weight"));
  return Status::ok();
}

}  // namespace

Result<std::string> loss_reduction(const AttributeMap& attrs) {
  auto r = attrs.get_string("reduction", "mean");
  if (!r) return Status(r.status()).with_attribute("reduction");
  if (r.value() != "none" && r.value() != "sum" && r.value() != "mean")
    return attr_error("reduction", "must be none, sum or mean, got '", r.value(), "'");
  return r.value();
}

Status negative_log_likelihood_loss(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(loss_inputs(ctx, "input"));
  const Tensor& x = *ctx.inputs[0];
  const Tensor* weight = ctx.inputs.size() > 2 ? ctx.inputs[2] : nullptr;
  GRAFT_ASSIGN_OR_RETURN(LossGeometry g, loss_geometry(ctx, x, *ctx.inputs[1], weight));
  return nll_from(ctx, g, load_doubles(x), *ctx.inputs[1], weight);
}

Status softmax_cross_entropy_loss(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(loss_inputs(ctx, "scores"));
  const Tensor& x = *ctx.inputs[0];
  const Tensor* weight = ctx.inputs.size() > 2 ? ctx.inputs[2] : nullptr;
  GRAFT_ASSIGN_OR_RETURN(LossGeometry g, loss_geometry(ctx, x, *ctx.inputs[1], weight));
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
