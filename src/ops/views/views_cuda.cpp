#include "ops/views/views_cuda.h"

#include <algorithm>
#include <optional>

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

}  // namespace graft::cuda
