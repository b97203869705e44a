// CUDA ops for NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (kernels: loss_kernels.cu).
// Attributes and shapes are read by loss_attrs.h, as the schema and the CPU reference read them, so
// errors read the same on both backends. A target outside [0, C) that is not ignore_index makes the
// loss NaN here, where the CPU reference fails the run (see loss_kernels.cuh).
#include <string>
#include <vector>

#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/loss_kernels.cuh"
#include "ops/loss_attrs.h"

namespace graft::cuda {
namespace {

using namespace util;

bool loss_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "needs the scores and the target");
  const std::initializer_list<DataType> floats{DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16,
                                               DataType::kFloat64};
  if (!require_dtype(n, 0, floats, why)) return false;
  if (!require_dtype(n, 1, {DataType::kInt32, DataType::kInt64}, why)) return false;
  if (has_input(n, 2) && !require_dtype(n, 2, floats, why)) return false;
  return true;
}

// The reduced losses need two doubles per target element (loss and weight) in the workspace.
size_t loss_workspace(const Node& node, const std::vector<const Tensor*>& inputs, const std::vector<Tensor>& /*outputs*/) {
  auto a = loss_attrs(node.attrs);
  if (!a || a->reduction == LossReduction::kNone || inputs.size() < 2 || !inputs[1]) return 0;
  return static_cast<size_t>(inputs[1]->numel()) * 2 * sizeof(double);
}

Status loss_run(CudaExec& ex, bool log_softmax) {
  const Tensor* x = input_or_null(ex, 0);
  const Tensor* target = input_or_null(ex, 1);
  const Tensor* weight = input_or_null(ex, 2);
  if (!x || !target) return fail(ex, StatusCode::kInvalidModel, "needs the scores and the target");
  auto a = loss_attrs(attrs_of(ex));
  if (!a) return with_node(ex, a.status());
  const std::vector<int64_t> wd = weight ? weight->dims() : std::vector<int64_t>{};
  auto g = loss_geometry(op_name(ex), x->dims(), x->dtype(), target->dtype(), target->dims(), weight ? &wd : nullptr,
                         weight ? weight->dtype() : DataType::kUndefined);
  if (!g) return with_node(ex, g.status());
  Tensor& y = *ex.ctx->outputs[0];
  const bool none = a->reduction == LossReduction::kNone;
  if (y.dtype() != x->dtype() || y.numel() != (none ? target->numel() : 1))
    return fail(ex, StatusCode::kInternal, "output was allocated with other dims or dtype than the op computes");
  Tensor* logp = log_softmax && ex.ctx->outputs.size() > 1 ? ex.ctx->outputs[1] : nullptr;
  if (logp && (logp->dtype() != x->dtype() || logp->numel() != x->numel()))
    return fail(ex, StatusCode::kInternal, "log_prob was allocated with other dims or dtype than the scores");
  const size_t need = none ? 0 : static_cast<size_t>(target->numel()) * 2 * sizeof(double);
  if (ex.workspace_size < need) return fail(ex, StatusCode::kInternal, "loss workspace missing");
  const int reduction = none ? 0 : a->reduction == LossReduction::kSum ? 1 : 2;
  return launch_status(k::launch_loss(ktype(x->dtype()), ktype(target->dtype()), x->data(), target->data(),
                                      weight ? weight->data() : nullptr, g->n, g->c, g->inner, log_softmax,
                                      a->ignore_index.has_value(), a->ignore_index.value_or(0), reduction, y.data(),
                                      logp ? logp->data() : nullptr, static_cast<double*>(ex.workspace), stream_of(ex)),
                       ex);
}

Status nll_run(CudaExec& ex) { return loss_run(ex, false); }
Status softmax_cross_entropy_run(CudaExec& ex) { return loss_run(ex, true); }

}  // namespace

void append_cuda_loss_ops(std::vector<CudaOp>& out) {
  out.push_back(CudaOp{"NegativeLogLikelihoodLoss", &loss_supports, &nll_run, {}, &loss_workspace});
  out.push_back(CudaOp{"SoftmaxCrossEntropyLoss", &loss_supports, &softmax_cross_entropy_run, {}, &loss_workspace});
}

}  // namespace graft::cuda
