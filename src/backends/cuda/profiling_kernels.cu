#include "backends/cuda/profiling_kernels.cuh"

namespace graft::cuda::k {

namespace {

__device__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void profiling_gate_kernel(const volatile uint64_t* flag, uint64_t generation, uint64_t timeout_ns) {
  const uint64_t start = global_ns();
  while (*flag < generation && global_ns() - start < timeout_ns) __nanosleep(1000);
}

}  // namespace

cudaError_t launch_profiling_gate(const volatile uint64_t* flag, uint64_t generation, uint32_t timeout_ms,
                                  cudaStream_t stream) {
  profiling_gate_kernel<<<1, 1, 0, stream>>>(flag, generation, static_cast<uint64_t>(timeout_ms) * 1000000ull);
  return cudaGetLastError();
}

}  // namespace graft::cuda::k
