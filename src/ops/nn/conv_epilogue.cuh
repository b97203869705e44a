// The fused convolution epilogue's activation on the device, shared by the .cu files whose
// convolution kernels apply it in registers (nn_kernels.cu, conv_mma_kernels.cu). Device code:
// included only by .cu files.
#pragma once

#include "backends/cuda/cuda_kernel_device.cuh"
#include "ops/nn/nn_kernels.cuh"

namespace graft::cuda::k {

// A convolution's activation in float32, as the CPU reference's apply_activation does it in double.
__device__ __forceinline__ float apply_epilogue(const Epilogue& e, float v) {
  switch (e.act) {
    case 1: return v > 0.f ? v : 0.f;
    case 2: return v * fminf(fmaxf(v * (1.f / 6.f) + 0.5f, 0.f), 1.f);
    case 3: return v < e.lo ? e.lo : (v > e.hi ? e.hi : v);  // comparisons with NaN are false: NaN stays
    case 4: return v / (1.f + expf(-v));
    case 5: return 1.f / (1.f + expf(-v));
    case 6: return fminf(fmaxf(e.lo * v + e.hi, 0.f), 1.f);  // HardSigmoid: lo, hi are alpha, beta
    default: return v;
  }
}

// The 16 bytes of input elements a depthwise kernel loaded (as a uint4) with its window's input
// activation applied, each element rounded back to its type as the producer would have stored it.
// Not inlined: the kernels unroll their loads over many taps and instantiations, and an inline
// activation at each of them made ptxas run for over ten minutes on nn_kernels.cu.
template <typename T>
__device__ __noinline__ uint4 input_activated16(uint4 raw, int act, float lo, float hi) {
  T* e = reinterpret_cast<T*>(&raw);
  const Epilogue ep{act, lo, hi};
  for (int k = 0; k < static_cast<int>(16 / sizeof(T)); ++k) e[k] = Elem<T>::st(apply_epilogue(ep, Elem<T>::ld(e[k])));
  return raw;
}

}  // namespace graft::cuda::k
