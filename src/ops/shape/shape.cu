// The shape family's kernels and launchers (declared in shape.h) of ConstantOfShape's fill and Range,
// whose ops are in shape_cuda.cpp. Trilu, OneHot and Compress have their kernels and ops in files of
// their own (trilu.cu, one_hot.cu, compress.cu); the family's other ops run on the data-movement
// kernels of src/backends/cuda/shape_kernels.cu.
#include "ops/shape/shape.h"

#include <climits>
#include <cstring>
#include <type_traits>

#include "backends/cuda/cuda_kernel_device.cuh"

namespace graft::cuda::k {

namespace {

// ---- ConstantOfShape, Range ---------------------------------------------------------------------

template <typename E>
__global__ void fill_kernel(E v, E* __restrict__ out, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) out[i] = v;
}

template <typename T>
__global__ void range_kernel(double start, double delta, int64_t istart, int64_t idelta, T* __restrict__ out,
                             int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    if constexpr (kIsFloat<T>) {
      out[i] = Elem<T>::st(static_cast<float>(start + static_cast<double>(i) * delta));
    } else {
      using U = unsigned long long;
      out[i] = static_cast<T>(static_cast<long long>(U(istart) + U(i) * U(idelta)));
    }
  }
}

}  // namespace

template <typename E>
cudaError_t fill_as(uint64_t bits, void* out, int64_t n, cudaStream_t s) {
  E v;
  memcpy(&v, &bits, sizeof(E));
  fill_kernel<E><<<grid_for(n), kThreads, 0, s>>>(v, static_cast<E*>(out), n);
  return cudaGetLastError();
}

cudaError_t launch_fill(int elem_size, uint64_t bits, void* out, int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  switch (elem_size) {
    case 1: return fill_as<uint8_t>(bits, out, n, s);
    case 2: return fill_as<uint16_t>(bits, out, n, s);
    case 4: return fill_as<uint32_t>(bits, out, n, s);
    case 8: return fill_as<uint64_t>(bits, out, n, s);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t launch_range(KType t, double start, double delta, int64_t istart, int64_t idelta, void* out, int64_t n,
                         cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  GRAFT_NUMERIC_DISPATCH(t, (range_kernel<T><<<grid_for(n), kThreads, 0, s>>>(start, delta, istart, idelta,
                                                                              static_cast<T*>(out), n)));
  return cudaGetLastError();
}

}  // namespace graft::cuda::k
