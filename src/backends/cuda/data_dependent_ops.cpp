// CUDA ops whose output size depends on the data: NonMaxSuppression, NonZero and Unique (kernels:
// data_dependent_kernels.cu; CPU references: src/backends/cpu/detection.cpp, selection.cpp). Each
// declares a CountedOutput (cuda_ops.h): the engine gives the output the most elements the input
// shapes allow, the kernel writes the real output as a prefix of it and its count to
// CudaExec::output_count, and the engine reads back that count alone (Unique sizes all four of its
// outputs that way, one of them final). Errors the CPU reference raises from shapes or constant
// inputs are raised here with the same words; an invalid value the host cannot see (a computed
// iou_threshold) comes back as a negative count.
#include <algorithm>
#include <string>
#include <vector>

#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/data_dependent_kernels.cuh"
#include "ops/attr_util.h"
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

size_t nms_workspace(const Node& n, const std::vector<const Tensor*>& ins, const std::vector<Tensor>& /*outputs*/) {
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

size_t non_zero_workspace(const Node&, const std::vector<const Tensor*>& ins, const std::vector<Tensor>& /*outputs*/) {
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

// ---- Unique --------------------------------------------------------------------------------------

constexpr std::initializer_list<DataType> kUniqueTypes = {
    DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64, DataType::kInt8,
    DataType::kUInt8,   DataType::kInt32,   DataType::kInt64,    DataType::kBool};

// The CPU reference's reading of `sorted` and `axis` (its words), and the [outer, n, inner] view.
struct UniqueSetup {
  k::UniqueProblem p;
  bool has_axis = false;
  int64_t axis = 0;
};

Result<UniqueSetup> unique_setup(const AttributeMap& attrs, const std::vector<int64_t>& dims) {
  UniqueSetup u;
  GRAFT_ASSIGN_OR_RETURN(int64_t sorted, attrs.get_int("sorted", 1));
  if (sorted != 0 && sorted != 1) return attr_error("sorted", "must be 0 or 1, got ", sorted);
  u.p.sorted = sorted == 1;
  u.has_axis = attrs.has("axis");
  if (u.has_axis) {
    GRAFT_ASSIGN_OR_RETURN(int64_t a, attrs.get_int("axis", 0));
    auto na = normalize_axis(a, static_cast<int64_t>(dims.size()));
    if (!na) return Status(na.status()).with_attribute("axis");
    u.axis = na.value();
    const AxisView v = axis_view(dims, u.axis, false);
    u.p.outer = v.outer;
    u.p.n = v.n;
    u.p.inner = v.inner;
  } else {
    u.p.n = numel_of(dims);
  }
  return u;
}

std::string unique_too_big(const k::UniqueProblem& p) {
  return "Unique on the GPU compares every slice with every other: " + std::to_string(p.n) + " slices of " +
         std::to_string(p.outer * p.inner) + " elements exceed its bound (n * n * slice <= 2^33, n * slice <= 2^27); "
         "the CPU reference runs larger inputs";
}

bool unique_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "needs an input");
  if (!require_dtype(n, 0, kUniqueTypes, why)) return false;
  if (n.outputs.empty() || n.outputs.size() > 4 || !n.output(0))
    return reject(why, "needs output Y and at most 3 more outputs");
  if (out_dtype(n, 0) != in_dtype(n, 0)) return reject(why, "output Y's dtype differs from X's");
  for (size_t o = 1; o < n.outputs.size(); ++o)
    if (n.output(o) && out_dtype(n, o) != DataType::kInt64)
      return reject(why, "output " + std::to_string(o) + " must be int64");
  const TensorDesc& x = n.input(0)->desc;
  if (!x.shape) return true;  // the attributes and the bound are checked per run
  std::vector<int64_t> dims;
  bool known = true;
  for (const Dim& d : *x.shape) {
    known = known && d.is_const();
    dims.push_back(d.is_const() ? d.value() : 1);
  }
  auto u = unique_setup(n.attrs, dims);
  if (!u) return reject(why, u.status().message());
  if (known && !k::unique_within_bounds(u->p)) return reject(why, unique_too_big(u->p));
  return true;
}

Result<std::vector<CountedDims>> unique_outputs(const Node& n, const std::vector<const Tensor*>& ins) {
  const Tensor* x = ins.empty() ? nullptr : ins[0];
  if (!x) return error(StatusCode::kInvalidModel, "Unique needs an input");
  GRAFT_ASSIGN_OR_RETURN(UniqueSetup u, unique_setup(n.attrs, x->dims()));
  std::vector<CountedDims> out(n.outputs.size());
  if (out.empty()) return out;
  out[0].dims = u.has_axis ? x->dims() : std::vector<int64_t>{u.p.n};
  out[0].count_axis = static_cast<int>(u.has_axis ? u.axis : 0);
  for (size_t o = 1; o < out.size(); ++o) {
    out[o].dims = {u.p.n};
    out[o].count_axis = o == 2 ? -1 : 0;  // inverse_indices has one entry per slice of X
  }
  return out;
}

size_t unique_workspace(const Node& n, const std::vector<const Tensor*>& ins, const std::vector<Tensor>& /*outputs*/) {
  if (ins.empty() || !ins[0]) return 0;
  auto u = unique_setup(n.attrs, ins[0]->dims());
  return u ? k::unique_workspace_bytes(u->p) : 0;  // run() reports the error
}

Status unique_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  if (!x || ex.ctx->outputs.empty() || !ex.ctx->outputs[0])
    return fail(ex, StatusCode::kInternal, "called without X or its output Y");
  if (!ex.output_count) return fail(ex, StatusCode::kInternal, "called without its device count");
  auto u = unique_setup(attrs_of(ex), x->dims());
  if (!u) return with_node(ex, u.status());
  if (!k::unique_within_bounds(u->p)) return fail(ex, StatusCode::kUnsupported, unique_too_big(u->p));
  auto want = unique_outputs(*ex.ctx->node, ex.ctx->inputs);
  if (!want) return with_node(ex, want.status());
  Tensor* outs[4] = {};
  for (size_t o = 0; o < ex.ctx->outputs.size() && o < 4; ++o) {
    Tensor* t = ex.ctx->outputs[o];
    if (!t || !t->defined()) continue;
    const DataType dt = o == 0 ? x->dtype() : DataType::kInt64;
    if (o >= want->size() || t->dtype() != dt || t->dims() != (*want)[o].dims)
      return fail(ex, StatusCode::kInternal, "output ", static_cast<uint64_t>(o),
                  " was not allocated with the bound the op computes");
    outs[o] = t;
  }
  if (!outs[0]) return fail(ex, StatusCode::kInternal, "called without its output Y");
  auto i64 = [&](int o) { return outs[o] ? outs[o]->data_as<int64_t>() : nullptr; };
  return launch_status(k::launch_unique(ktype(x->dtype()), x->data(), u->p, ex.workspace, ex.workspace_size,
                                        outs[0]->data(), i64(1), i64(2), i64(3), ex.output_count, stream_of(ex)),
                       ex);
}

}  // namespace

void append_cuda_data_dependent_ops(std::vector<CudaOp>& out) {
  out.push_back(CudaOp{"NonMaxSuppression", &nms_supports, &nms_run, {}, &nms_workspace,
                       CountedOutput{&nms_bound, 0,
                                     "input 3 (iou_threshold) must lie in [0, 1] (a computed value was outside)"}});
  out.push_back(CudaOp{"NonZero", &non_zero_supports, &non_zero_run, {}, &non_zero_workspace,
                       CountedOutput{&non_zero_bound, 1, nullptr}});
  out.push_back(CudaOp{"Unique", &unique_supports, &unique_run, {}, &unique_workspace,
                       CountedOutput{nullptr, 0, nullptr, &unique_outputs}});
}

}  // namespace graft::cuda
