// Compress's CUDA kernel (launcher declared in shape.h) and op: the kept positions travel to the
// kernel by value, kCompressChunk per launch.
#include "ops/shape/shape.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/attr_util.h"

namespace graft::cuda {

// ---- kernel ----------------------------------------------------------------------------------------

namespace k {

namespace {

template <typename E>
__global__ void compress_kernel(const E* __restrict__ x, E* __restrict__ y, int64_t total, int64_t n, int64_t inner,
                                int64_t kn, int64_t t0, CompressChunk c) {
  GRAFT_GRID_STRIDE(j, total) {
    const int64_t i = j % inner, s = (j / inner) % c.count, o = j / (inner * c.count);
    y[(o * kn + t0 + s) * inner + i] = x[(o * n + c.src[s]) * inner + i];
  }
}

}  // namespace

cudaError_t launch_compress_chunk(int elem_size, const void* x, void* y, int64_t outer, int64_t n, int64_t inner,
                                  int64_t kn, int64_t t0, const CompressChunk& c, cudaStream_t s) {
  const int64_t total = outer * c.count * inner;
  if (total == 0) return cudaSuccess;
  GRAFT_SIZE_DISPATCH(elem_size, (compress_kernel<E><<<grid_for(total), kThreads, 0, s>>>(
                                     static_cast<const E*>(x), static_cast<E*>(y), total, n, inner, kn, t0, c)));
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA op ---------------------------------------------------------------------------------------

namespace {

using namespace util;

bool compress_supports(const Node& n, std::string* why) {
  if (!input0_given(n, why)) return false;
  if (!has_input(n, 1)) return reject(why, "condition is missing");
  return true;
}

// The condition is a host input (it sizes the output); the kept positions travel to the kernel by
// value, kCompressChunk per launch.
Status compress_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  const Tensor& cond_t = *ex.ctx->inputs[1];
  Tensor& y = *ex.ctx->outputs[0];
  if (cond_t.device() != DeviceType::kCPU) return fail(ex, StatusCode::kInternal, "condition must be a host input");
  const auto cond = cond_t.to_int64_vector();
  const bool has_axis = attrs_of(ex).find("axis") != nullptr;
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, attrs_of(ex).get_int("axis", 0));
  const std::vector<int64_t> dims = has_axis ? x.dims() : std::vector<int64_t>{x.numel()};
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(has_axis ? axis_attr : 0, static_cast<int64_t>(dims.size())));
  const AxisView v = axis_view(dims, axis, false);
  if (static_cast<int64_t>(cond.size()) > v.n)
    return fail(ex, StatusCode::kInvalidModel, "condition has ", static_cast<int64_t>(cond.size()), " entries but the axis has ", v.n);
  if (v.n > 0x7fffffffLL) return fail(ex, StatusCode::kUnsupported, "axis longer than 2^31");
  std::vector<int32_t> keep;
  for (size_t t = 0; t < cond.size(); ++t)
    if (cond[t]) keep.push_back(static_cast<int32_t>(t));
  const int64_t kn = static_cast<int64_t>(keep.size());
  if (y.numel() != v.outer * kn * v.inner || y.dtype() != x.dtype())
    return fail(ex, StatusCode::kInternal, "output has ", y.numel(), " elements, expected ", v.outer * kn * v.inner);
  for (int64_t t0 = 0; t0 < kn; t0 += k::kCompressChunk) {
    k::CompressChunk c;
    c.count = static_cast<int>(std::min<int64_t>(k::kCompressChunk, kn - t0));
    std::copy(keep.begin() + t0, keep.begin() + t0 + c.count, c.src);
    GRAFT_RETURN_IF_ERROR(launch_status(k::launch_compress_chunk(static_cast<int>(dtype_size(x.dtype())), x.data(), y.data(),
                                                                 v.outer, v.n, v.inner, kn, t0, c, stream_of(ex)), ex));
  }
  return Status::ok();
}

}  // namespace

void append_cuda_compress_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuEveryDtype)},
                              CudaOp{"Compress", &compress_supports, &compress_run, {1}, nullptr}));
}

}  // namespace graft::cuda
