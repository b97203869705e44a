// The loss family, defined whole here: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
// (opset 12 on; 13 only widened the index types). Their attributes and shape checks, their schema
// rows and inference, and their CPU reference kernels; their CUDA kernels are in loss.cu, what the
// two share in loss.h.
//
// The two ops stay in one pair of files rather than one file per op: SoftmaxCrossEntropyLoss is
// NegativeLogLikelihoodLoss over log_softmax(scores), built on its code (infer_loss, nll_from; on
// CUDA one kernel and one run function with a log_softmax flag), so a split would move all but a
// few lines of each into loss.h.
//
// The CPU reference loads every value as double, accumulates the losses in double and rounds once
// into the output dtype.
#include "ops/loss/loss.h"

#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- attributes and shapes (loss.h) ------------------------------------------------------------

Result<LossAttrs> loss_attrs(const AttributeMap& attrs) {
  LossAttrs a;
  auto r = attrs.get_string("reduction", "mean");
  if (!r) return Status(r.status()).with_attribute("reduction");
  if (r.value() == "none") a.reduction = LossReduction::kNone;
  else if (r.value() == "sum") a.reduction = LossReduction::kSum;
  else if (r.value() == "mean") a.reduction = LossReduction::kMean;
  else return attr_error("reduction", "must be none, sum or mean, got '", r.value(), "'");
  if (attrs.has("ignore_index")) {
    auto ii = attrs.get_int("ignore_index", 0);
    if (!ii) return Status(ii.status()).with_attribute("ignore_index");
    a.ignore_index = ii.value();
  }
  return a;
}

Result<LossGeometry> loss_geometry(const std::string& op, const std::vector<int64_t>& x, DataType x_dtype,
                                   DataType target_dtype, const std::vector<int64_t>& target,
                                   const std::vector<int64_t>* weight_dims, DataType weight_dtype) {
  if (x.size() < 2)
    return error(StatusCode::kInvalidModel, op, ": input must have rank >= 2 (N, C, ...), got ", ints_to_string(x));
  if (target_dtype != DataType::kInt32 && target_dtype != DataType::kInt64)
    return error(StatusCode::kUnsupported, op, ": target has dtype ", dtype_name(target_dtype),
                 "; expected int32 or int64");
  std::vector<int64_t> want{x[0]};
  for (size_t d = 2; d < x.size(); ++d) want.push_back(x[d]);
  if (target != want)
    return error(StatusCode::kInvalidModel, op, ": target ", ints_to_string(target), " does not match input ",
                 ints_to_string(x), " (expected ", ints_to_string(want), ")");
  LossGeometry g;
  g.n = x[0];
  g.c = x[1];
  for (size_t d = 2; d < x.size(); ++d) g.inner *= x[d];
  if (weight_dims && (weight_dtype != x_dtype || weight_dims->size() != 1 || (*weight_dims)[0] != g.c))
    return error(StatusCode::kInvalidModel, op, ": weight ", dtype_name(weight_dtype), " ",
                 ints_to_string(*weight_dims), " must be ", dtype_name(x_dtype), " [", g.c, "]");
  return g;
}

// ---- schema: type and shape inference ----------------------------------------------------------

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

// ---- CPU reference -----------------------------------------------------------------------------

namespace cpu {
namespace {

// Checks input/target/weight against each other (loss.h); errors name the op and the shapes.
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

}  // namespace
}  // namespace cpu

void append_loss_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"NegativeLogLikelihoodLoss", 12, infer_nll, cpu::negative_log_likelihood_loss});
  out.push_back(OpEntry{"SoftmaxCrossEntropyLoss", 12, infer_sce, cpu::softmax_cross_entropy_loss});
}

}  // namespace graft
