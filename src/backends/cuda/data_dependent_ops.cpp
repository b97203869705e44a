// CUDA ops whose output size depends on the data: NonMaxSuppression and NonZero (kernels:
// data_dependent_kernels.cu; CPU references: src/backends/cpu/detection.cpp). Both declare a
// CountedOutput (cuda_ops.h): the engine gives output 0 the most elements the input shapes allow,
// the kernel writes the real output as a prefix of it and its count to CudaExec::output_count, and
// the engine reads back that count alone. Errors the CPU reference raises from shapes or constant
// inputs are raised here with the same words; an invalid value the host cannot see (a computed
// iou_threshold) comes back as a negative count.
#include <algorithm>
#include <string>
#include <vector>

#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/data_dependent_kernels.cuh"
#include "ops/detection_attrs.h"

namespace graft::cuda {
namespace {

using namespace util;

// A counted op writes output 0 only, as int64 (what both schemas give it).
bool counted_output_supported(const Node& n, std::string* why) {
  if (n.outputs.size() != 1 || !n.output(0)) return reject(why, "needs exactly one output");
  if (out_dtype(n, 0) != DataType::kInt64) return reject(why, "output 0 must be int64");
  return true;
}

Status check_counted_output(const CudaExec& ex, const std::vector<int64_t>& bound) {
  if (ex.ctx->outputs.empty() || !ex.ctx->outputs[0] || !ex.output_count)
    return fail(ex, StatusCode::kInternal, "called without its output or its device count");
  const Tensor& y = *ex.ctx->outputs[0];
  if (y.dtype() != DataType::kInt64 || y.dims() != bound)
    return fail(ex, StatusCode::kInternal, "output 0 was not allocated with the bound the op computes");
  return Status::ok();
}

// ---- NonMaxSuppression ---------------------------------------------------------------------------

bool nms_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "needs boxes and scores");
  if (!require_dtype(n, 0, {DataType::kFloat32, DataType::kFloat16}, why)) return false;
  if (in_dtype(n, 1) != in_dtype(n, 0)) return reject(why, "boxes and scores have different dtypes");
  if (has_input(n, 2) && !require_dtype(n, 2, {DataType::kInt64}, why)) return false;
  if (has_input(n, 3) && !require_dtype(n, 3, {DataType::kFloat32}, why)) return false;
  if (has_input(n, 4) && !require_dtype(n, 4, {DataType::kFloat32}, why)) return false;
  if (auto cpb = nms_center_point_box(n.attrs); !cpb) return reject(why, cpb.status().message());
  return counted_output_supported(n, why);
}

// The problem the inputs' shapes describe (the CPU reference's checks and words), and the most
// boxes a class may keep as the host knows it: the constant max_output_boxes_per_class when the
// model gives one (an initializer or a folded Constant: the usual case), else every box.
Result<k::NmsProblem> nms_problem(const Node& n, const std::vector<const Tensor*>& ins) {
  const Tensor* boxes = ins.size() > 0 ? ins[0] : nullptr;
  const Tensor* scores = ins.size() > 1 ? ins[1] : nullptr;
  if (!boxes || !scores) return error(StatusCode::kInvalidModel, "NonMaxSuppression needs boxes and scores");
  GRAFT_ASSIGN_OR_RETURN(NmsDims dims, nms_dims(*boxes, *scores));
  GRAFT_RETURN_IF_ERROR(nms_check_scalar_inputs(&n, ins));
  k::NmsProblem p;
  p.batches = dims.batches;
  p.boxes = dims.boxes;
  p.classes = dims.classes;
  GRAFT_ASSIGN_OR_RETURN(p.center_point_box, nms_center_point_box(n.attrs));
  const bool has_max = ins.size() > 2 && ins[2];
  const Value* mv = n.input(2);
  if (!has_max) {
    p.per_class_bound = 0;  // absent: nothing is selected
  } else if (mv && mv->constant) {
    p.per_class_bound = std::clamp<int64_t>(mv->constant->data_as<int64_t>()[0], 0, p.boxes);
  } else {
    p.per_class_bound = p.boxes;
  }
  return p;
}

Result<std::vector<int64_t>> nms_bound(const Node& n, const std::vector<const Tensor*>& ins) {
  GRAFT_ASSIGN_OR_RETURN(k::NmsProblem p, nms_problem(n, ins));
  return std::vector<int64_t>{p.batches * p.classes * p.per_class_bound, 3};
}

size_t nms_workspace(const Node& n, const std::vector<const Tensor*>& ins) {
  auto p = nms_problem(n, ins);
  return p ? k::nms_workspace_bytes(*p) : 0;  // run() reports the error
}

Status nms_run(CudaExec& ex) {
  const Node& n = *ex.ctx->node;
  auto p = nms_problem(n, ex.ctx->inputs);
  if (!p) return with_node(ex, p.status());
  GRAFT_RETURN_IF_ERROR(check_counted_output(ex, {p->batches * p->classes * p->per_class_bound, 3}));
  const Tensor* boxes = ex.ctx->inputs[0];
  const Tensor* scores = ex.ctx->inputs[1];
  if (boxes->dtype() != scores->dtype() ||
      (boxes->dtype() != DataType::kFloat32 && boxes->dtype() != DataType::kFloat16))
    return fail(ex, StatusCode::kUnsupported, "boxes and scores must both be float32 or both float16");
  // A constant iou_threshold is checked here, as the CPU reference checks it; a computed one is
  // checked by the kernel, which then reports a count of -1.
  const Value* iv = n.input(3);
  if (iv && iv->constant) {
    GRAFT_RETURN_IF_ERROR(with_node(ex, nms_check_iou_threshold(&n, iv->constant->data_as<float>()[0])));
  }
  auto dev = [&](size_t i) -> const void* {
    const Tensor* t = input_or_null(ex, i);
    return t ? t->data() : nullptr;
  };
  return launch_status(
      k::launch_nms(ktype(boxes->dtype()), boxes->data(), scores->data(), static_cast<const int64_t*>(dev(2)),
                    static_cast<const float*>(dev(3)), static_cast<const float*>(dev(4)), *p, ex.workspace,
                    ex.workspace_size, ex.ctx->outputs[0]->data_as<int64_t>(), ex.output_count, stream_of(ex)),
      ex);
}

// ---- NonZero -------------------------------------------------------------------------------------

bool non_zero_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "needs an input");
  // Any dtype: the kernel tests bits, by element size.
  if (dtype_size(in_dtype(n, 0)) == 0) return reject(why, "input 0 has no element size");
  const TensorDesc& x = n.input(0)->desc;
  if (x.shape && x.rank() > k::kMaxRank)
    return reject(why, "rank " + std::to_string(x.rank()) + " exceeds the kernel's " + std::to_string(k::kMaxRank));
  return counted_output_supported(n, why);
}

Result<std::vector<int64_t>> non_zero_bound(const Node&, const std::vector<const Tensor*>& ins) {
  const Tensor* x = ins.empty() ? nullptr : ins[0];
  if (!x) return error(StatusCode::kInvalidModel, "NonZero needs an input");
  return std::vector<int64_t>{std::max<int64_t>(x->rank(), 1), x->numel()};
}

size_t non_zero_workspace(const Node&, const std::vector<const Tensor*>& ins) {
  return ins.empty() || !ins[0] ? 0 : k::non_zero_workspace_bytes(ins[0]->numel());
}

Status non_zero_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  if (!x) return fail(ex, StatusCode::kInvalidModel, "needs an input");
  if (x->rank() > k::kMaxRank)
    return fail(ex, StatusCode::kUnsupported, "rank ", x->rank(), " exceeds the kernel's ",
                static_cast<int64_t>(k::kMaxRank));
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> bound, non_zero_bound(*ex.ctx->node, ex.ctx->inputs));
  GRAFT_RETURN_IF_ERROR(check_counted_output(ex, bound));
  return launch_status(
      k::launch_non_zero(static_cast<int>(dtype_size(x->dtype())), dtype_is_float(x->dtype()), x->data(), x->numel(),
                         x->dims().data(), static_cast<int>(x->rank()), ex.workspace, ex.workspace_size,
                         ex.ctx->outputs[0]->data_as<int64_t>(), ex.output_count, stream_of(ex)),
      ex);
}

}  // namespace

void append_cuda_data_dependent_ops(std::vector<CudaOp>& out) {
  out.push_back(CudaOp{"NonMaxSuppression", &nms_supports, &nms_run, {}, &nms_workspace,
                       CountedOutput{&nms_bound, 0,
                                     "input 3 (iou_threshold) must lie in [0, 1] (a computed value was outside)"}});
  out.push_back(CudaOp{"NonZero", &non_zero_supports, &non_zero_run, {}, &non_zero_workspace,
                       CountedOutput{&non_zero_bound, 1, nullptr}});
}

}  // namespace graft::cuda
