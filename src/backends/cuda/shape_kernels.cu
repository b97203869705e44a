#include "backends/cuda/shape_kernels.cuh"

#include "backends/cuda/cuda_kernel_device.cuh"

namespace graft::cuda::k {
namespace {

template <typename E>
__global__ void strided_gather_kernel(const E* __restrict__ in, E* __restrict__ out, Strided p, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) out[i] = in[strided_offset(p, i)];
}

}  // namespace

cudaError_t launch_strided_gather(const void* in, void* out, int elem_size, const Strided& p, int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const unsigned g = grid_for(n);
  switch (elem_size) {
    case 1: strided_gather_kernel<uint8_t><<<g, kThreads, 0, s>>>(static_cast<const uint8_t*>(in), static_cast<uint8_t*>(out), p, n); break;
    case 2: strided_gather_kernel<uint16_t><<<g, kThreads, 0, s>>>(static_cast<const uint16_t*>(in), static_cast<uint16_t*>(out), p, n); break;
    case 4: strided_gather_kernel<uint32_t><<<g, kThreads, 0, s>>>(static_cast<const uint32_t*>(in), static_cast<uint32_t*>(out), p, n); break;
    case 8: strided_gather_kernel<uint64_t><<<g, kThreads, 0, s>>>(static_cast<const uint64_t*>(in), static_cast<uint64_t*>(out), p, n); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace graft::cuda::k
