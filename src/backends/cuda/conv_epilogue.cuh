// The fused convolution epilogue's activation on the device, shared by the .cu files whose
// convolution kernels apply it in registers (nn_kernels.cu, conv_mma_kernels.cu). Device code:
// included only by .cu files.
#pragma once

#include "backends/cuda/nn_kernels.cuh"

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

}  // namespace graft::cuda::k
