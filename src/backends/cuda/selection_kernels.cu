#include <cstdint>

#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/selection_kernels.cuh"

namespace graft::cuda::k {
namespace {

// E: an unsigned integer of the element's size; the scatter moves bits, whatever the float type.
template <typename E>
__global__ void max_unpool_kernel(const E* x, const int64_t* ind, int64_t n, Strided map,
                                  int64_t unpooled_numel, E* y) {
  GRAFT_GRID_STRIDE(i, n) {
    const int64_t q = ind[i];
    if (q < 0 || q >= unpooled_numel) continue;
    y[strided_offset(map, q)] = x[i];
  }
}

__global__ void celu_kernel(const float* x, float* y, int64_t n, float alpha) {
  GRAFT_GRID_STRIDE(i, n) {
    const float v = x[i];
    // expm1f as the CPU reference uses std::expm1: no cancellation for small negative inputs.
    y[i] = v > 0.0f ? v : alpha * expm1f(v / alpha);
  }
}

}  // namespace

cudaError_t launch_max_unpool(int elem_size, const void* x, const int64_t* ind, int64_t n, const Strided& map,
                              int64_t unpooled_numel, void* y, int64_t y_numel, cudaStream_t s) {
  if (map.rank < 1 || map.rank > kMaxRank) return cudaErrorInvalidValue;
  if (elem_size != 2 && elem_size != 4 && elem_size != 8) return cudaErrorInvalidValue;
  if (y_numel == 0) return cudaSuccess;
  // All-zero bits are +0 in every float type.
  cudaError_t e = cudaMemsetAsync(y, 0, static_cast<size_t>(y_numel) * static_cast<size_t>(elem_size), s);
  if (e != cudaSuccess || n == 0) return e;
  switch (elem_size) {
    case 2:
      max_unpool_kernel<uint16_t><<<grid_for(n), kThreads, 0, s>>>(
          static_cast<const uint16_t*>(x), ind, n, map, unpooled_numel, static_cast<uint16_t*>(y));
      break;
    case 4:
      max_unpool_kernel<uint32_t><<<grid_for(n), kThreads, 0, s>>>(
          static_cast<const uint32_t*>(x), ind, n, map, unpooled_numel, static_cast<uint32_t*>(y));
      break;
    default:
      max_unpool_kernel<uint64_t><<<grid_for(n), kThreads, 0, s>>>(
          static_cast<const uint64_t*>(x), ind, n, map, unpooled_numel, static_cast<uint64_t*>(y));
      break;
  }
  return cudaGetLastError();
}

cudaError_t launch_celu(const float* x, float* y, int64_t n, float alpha, cudaStream_t s) {
  if (!(alpha != 0.0f)) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  celu_kernel<<<grid_for(n), kThreads, 0, s>>>(x, y, n, alpha);
  return cudaGetLastError();
}

}  // namespace graft::cuda::k
