// What the reduce-and-normalize family's row kernels share (softmax.cu, layer_norm.cu,
// l2_normalize.cu): rows of at most kWarpRowMax contiguous elements held in registers, a warp or part
// of one per row, with warp-shuffle max and sum in fp32.
#pragma once

#include <cstdint>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"

namespace graft::cuda::k {

// ---- one warp per row (rows of at most kWarpRowMax elements, contiguous) ----
// The row lives in registers: lane l holds the kVec-element groups l, l + 32, ... (kIters of them),
// loaded with one aligned access each when kVec > 1. Max and sums are warp shuffles in fp32, so
// the row is read from memory once and written once.

constexpr int kWarpRowMax = 1024;
constexpr int kRowsPerBlock = kThreads / 32;

template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Loads the groups of row `xr` (n elements, n % kVec == 0) that lane `lane` owns; missing ones get `fill`.
template <typename T, int kVec, int kIters>
__device__ __forceinline__ void load_row(const T* xr, int n, int lane, float fill, float (&v)[kIters][kVec]) {
  const int ng = n / kVec;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int g = lane + 32 * it;
    if (g < ng) {
      const Pack<T, kVec> p = reinterpret_cast<const Pack<T, kVec>*>(xr)[g];
#pragma unroll
      for (int j = 0; j < kVec; ++j) v[it][j] = Elem<T>::ld(p.v[j]);
    } else {
#pragma unroll
      for (int j = 0; j < kVec; ++j) v[it][j] = fill;
    }
  }
}

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace graft::cuda::k
