// The CUDA kernel of the test op FaultyScale (reliability_test.cpp): y = a * x, or, when asked, a
// launch that the runtime refuses. The refusal is a block of 2048 threads, beyond every GPU's limit
// of 1024: cudaErrorInvalidConfiguration (cudaErrorInvalidValue under CUDA 13), a launch error that is reported to the caller and cleared
// by cudaGetLastError. It never reaches the GPU, so unlike a fault inside a kernel (an illegal
// address, which is sticky and ends every CUDA call of the process) it leaves the context usable:
// exactly the failure an engine must report and then recover from.
#include "tests/cuda/fault_kernel.h"

namespace graft_cuda_test {
namespace {

__global__ void scale_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n, float a) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = a * x[i];
}

}  // namespace

cudaError_t launch_scale(const float* x, float* y, int64_t n, float a, bool invalid_configuration,
                         cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(blocks < 4096 ? blocks : 4096);
  const unsigned threads = invalid_configuration ? 2048u : static_cast<unsigned>(kThreads);
  scale_kernel<<<grid, threads, 0, stream>>>(x, y, n, a);
  // Deliberately peek rather than get: the error stays pending, as it does after a plugin that
  // never checks its launches; the caller decides whether to clear it.
  return cudaPeekAtLastError();
}

}  // namespace graft_cuda_test
