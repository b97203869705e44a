// What the selection family's kernels share: the comparison key of an element (float for the float
// types, long long for the integers) and its NaN test, so ArgMax/ArgMin/Hardmax (arg_max.cu) and TopK
// (top_k.cu) order elements alike.
#pragma once

#include <type_traits>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"

namespace graft::cuda::k {

template <typename K>
__device__ __forceinline__ bool is_nan_key(K v) {
  if constexpr (std::is_floating_point_v<K>) return isnan(v);
  else return false;
}

// Key type of an element for comparisons: float for the float types, long long for integers.
template <typename T>
using KeyOf = std::conditional_t<kIsFloat<T>, float, long long>;

template <typename T>
__device__ __forceinline__ KeyOf<T> key_of(T v) {
  return static_cast<KeyOf<T>>(Elem<T>::ld(v));
}

}  // namespace graft::cuda::k
