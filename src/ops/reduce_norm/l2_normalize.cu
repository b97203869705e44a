// GraftL2Normalize's CUDA kernel and op: one warp per row, the norm in float32.
#include "ops/reduce_norm/reduce_norm.h"

#include <climits>
#include <string>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/reduce_norm/row_kernels.cuh"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------------

namespace k {

namespace {

// GraftL2Normalize: one warp per row; the sum of squares in float32, reduced across the warp, then
// every element times 1 / max(norm, eps). All lanes of a warp share its row, so they leave together.
template <typename T>
__global__ void l2_normalize_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t n, float eps) {
  const int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x & 31);
  if (row >= rows) return;
  const T* xr = x + row * n;
  T* yr = y + row * n;
  float sum = 0.f;
  for (int64_t k = lane; k < n; k += 32) {
    const float v = Elem<T>::ld(xr[k]);
    sum += v * v;
  }
  const float inv = 1.f / fmaxf(sqrtf(warp_sum(sum)), eps);
  for (int64_t k = lane; k < n; k += 32) yr[k] = Elem<T>::st(Elem<T>::ld(xr[k]) * inv);
}

}  // namespace

cudaError_t launch_l2_normalize(KType t, const void* x, void* y, int64_t rows, int64_t n, float eps, cudaStream_t s) {
  if (rows == 0 || n == 0) return cudaSuccess;
  constexpr int kWarpsPerBlock = 8;
  const int64_t blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (blocks > 0x7fffffffLL) return cudaErrorInvalidValue;
  GRAFT_FLOAT_DISPATCH(t, (l2_normalize_kernel<T><<<static_cast<unsigned>(blocks), kWarpsPerBlock * 32, 0, s>>>(
                              static_cast<const T*>(x), static_cast<T*>(y), rows, n, eps)));
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA op ---------------------------------------------------------------------------------------

namespace {

using namespace util;

Status l2_normalize_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  if (x.numel() != y.numel()) return fail(ex, StatusCode::kInternal, "output size differs from input size");
  GRAFT_ASSIGN_OR_RETURN(float eps, attrs_of(ex).get_float("eps", 0.f));
  const int64_t n = x.rank() == 0 ? 1 : x.dims().back();
  const int64_t rows = n ? x.numel() / n : 0;
  return launch_status(k::launch_l2_normalize(ktype(x.dtype()), x.data(), y.data(), rows, n, eps, stream_of(ex)), ex);
}


}  // namespace

void append_cuda_l2_normalize_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats)},
                              CudaOp{"GraftL2Normalize", &input0_given, &l2_normalize_run, {}, nullptr}));
}

}  // namespace graft::cuda
