// The views family's CUDA side: view plans on the GPU (views_cuda.h: GraftViewChain's, and
// GraftAttention's chain form, src/ops/transformer) and the CUDA ops of GraftStridedCopy and
// GraftViewChain. GraftConcatSlices, defined beside them in views.cpp, runs on Concat's pitched
// copies with the shape family's CUDA ops (src/ops/shape/shape_cuda.cpp).
#include "ops/views/views_cuda.h"

#include <algorithm>
#include <optional>

#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/shape_kernels.cuh"
#include "graft/tensor.h"

namespace graft::cuda {

namespace {
constexpr size_t kAlign = 256;
}  // namespace

Result<GpuViewPlan> make_gpu_view_plan(std::vector<StridedView> views, int64_t source_numel, size_t es) {
  GpuViewPlan p;
  for (size_t c = 0; c < views.size(); ++c) {
    const StridedView& v = views[c];
    k::Strided sp;
    for (size_t d = 0; d < v.shape.size(); ++d) {
      if (v.shape[d] == 1) continue;
      if (k::append_axis(&sp, v.shape[d], v.strides[d]))
        return error(StatusCode::kUnsupported, "more than ", k::kMaxRank, " axes after merging");
    }
    const std::optional<int64_t> last = view_last_index(v.offset, v.shape, v.strides);
    if (!last || *last >= source_numel)
      return error(StatusCode::kInvalidModel, "view ", static_cast<int64_t>(c), " reads past the end of its source");
    p.params.push_back(sp);
    source_numel = numel_of(v.shape);
    if (c + 1 < views.size())
      p.buffer_bytes = std::max(p.buffer_bytes, (static_cast<size_t>(source_numel) * es + kAlign - 1) / kAlign * kAlign);
  }
  p.views = std::move(views);
  return p;
}

cudaError_t launch_view_plan(const GpuViewPlan& p, const void* src, void* dst, void* scratch, size_t es,
                             cudaStream_t stream) {
  const char* from = static_cast<const char*>(src);
  for (size_t c = 0; c < p.views.size(); ++c) {
    char* to = c + 1 == p.views.size() ? static_cast<char*>(dst) : static_cast<char*>(scratch) + (c % 2) * p.buffer_bytes;
    const cudaError_t e = k::launch_strided_gather(from + p.views[c].offset * static_cast<int64_t>(es), to,
                                                   static_cast<int>(es), p.params[c], numel_of(p.views[c].shape), stream);
    if (e != cudaSuccess) return e;
    from = to;
  }
  return cudaSuccess;
}

// ---- the views family's CUDA ops --------------------------------------------------------------
namespace {

using namespace util;

// GraftStridedCopy (src/ops/views/views.cpp): one strided gather for a composed chain of views.
Status strided_copy_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  const AttributeMap& a = attrs_of(ex);
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> shape, a.get_ints("shape", {}));
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> strides, a.get_ints("strides", {}));
  GRAFT_ASSIGN_OR_RETURN(int64_t offset, a.get_int("offset", 0));
  if (shape != y.dims() || strides.size() != shape.size() || offset < 0)
    return fail(ex, StatusCode::kInvalidModel, "shape/strides/offset attributes do not describe the output");
  if (y.numel() == 0) return Status::ok();
  k::Strided p;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (strides[d] < 0) return fail(ex, StatusCode::kInvalidModel, "negative stride ", strides[d]);
    if (shape[d] == 1) continue;
    if (k::append_axis(&p, shape[d], strides[d]))
      return fail(ex, StatusCode::kUnsupported, "more than ", k::kMaxRank, " axes after merging");
  }
  const std::optional<int64_t> last = view_last_index(offset, shape, strides);
  if (!last || *last >= x.numel())
    return fail(ex, StatusCode::kInvalidModel, "the view reads past the end of an input with ", x.numel(), " elements");
  const size_t es = dtype_size(x.dtype());
  return launch_status(k::launch_strided_gather(static_cast<const char*>(x.data()) + offset * static_cast<int64_t>(es),
                                                y.data(), static_cast<int>(es), p, y.numel(), stream_of(ex)),
                       ex);
}

// GraftViewChain (src/ops/views/views.cpp): the chain planned for the input's dims, once per shape
// (kept in the context's PreparedCache), as strided gathers: one, unless a Reshape merges axes no
// strides express (views_cuda.h).
Result<GpuViewPlan> plan_view_chain(const Node& node, const Tensor& x) {
  GRAFT_ASSIGN_OR_RETURN(std::vector<ViewStep> steps, read_view_steps(node.attrs));
  GRAFT_ASSIGN_OR_RETURN(std::vector<StridedView> views, plan_view_steps(x.dims(), steps));
  return make_gpu_view_plan(std::move(views), x.numel(), dtype_size(x.dtype()));
}

size_t view_chain_workspace(const Node& node, const std::vector<const Tensor*>& inputs, const std::vector<Tensor>& /*outputs*/) {
  if (inputs.empty() || !inputs[0]) return 0;
  auto p = plan_view_chain(node, *inputs[0]);
  return p.is_ok() ? p.value().scratch_bytes() : 0;
}

Status view_chain_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  std::string key = PreparedCache::key_of("GraftViewChain", {reinterpret_cast<intptr_t>(ex.ctx->node),
                                                             static_cast<int64_t>(x.dtype())});
  PreparedCache::append_dims(&key, x.dims());
  GpuViewPlan* p = ex.prepared ? ex.prepared->find<GpuViewPlan>(key) : nullptr;
  GpuViewPlan local;
  if (!p) {
    auto made = plan_view_chain(*ex.ctx->node, x);
    if (!made) return with_node(ex, std::move(made).take_status());
    if (ex.prepared) p = ex.prepared->put(key, std::make_shared<GpuViewPlan>(std::move(made).value()));
    else p = &(local = std::move(made).value());
  }
  if (p->views.back().shape != y.dims()) return fail(ex, StatusCode::kInternal, "output dims differ from the planned view");
  if (p->scratch_bytes() > ex.workspace_size)
    return fail(ex, StatusCode::kInternal, "workspace of ", ex.workspace_size, " bytes, ", p->scratch_bytes(), " needed");
  if (y.numel() == 0) return Status::ok();
  return launch_status(launch_view_plan(*p, x.data(), y.data(), ex.workspace, dtype_size(x.dtype()), stream_of(ex)), ex);
}

}  // namespace

void append_cuda_views_ops(std::vector<CudaOp>& out) {
  // Both copy elements of any device dtype (their key: input 0 in kGpuEveryDtype).
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuEveryDtype)},
                              CudaOp{"GraftStridedCopy", &input0_given, &strided_copy_run, {}, nullptr}));
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuEveryDtype)},
                              CudaOp{"GraftViewChain", &input0_given, &view_chain_run, {}, &view_chain_workspace}));
}

}  // namespace graft::cuda
