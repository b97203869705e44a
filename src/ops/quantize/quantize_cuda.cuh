// What the quantize family's CUDA files share (quantize_linear.cu, quantize_dequantize.cu,
// dynamic_quantize_linear.cu): the CPU reference's quantize_one on the device, and the 8-bit types
// the kernels quantize to.
#pragma once

#include <initializer_list>

#include "backends/cuda/cuda_kernel_device.cuh"
#include "graft/dtype.h"

namespace graft::cuda {

namespace k {

// The arithmetic follows the CPU reference step by step (float32 division and round-half-even for
// quantization, double for dequantization, stored as graft's store_from_double does), so integer
// outputs match it exactly.

// The CPU's quantize_one: round half to even, add the zero point, clamp, all in float; NaN gives
// the zero point. Explicit _rn intrinsics keep the steps from being fused or approximated.
__device__ __forceinline__ float quantize_one(float v, float zp, float lo, float hi) {
  const float q = isnan(v) ? zp : __fadd_rn(rintf(v), zp);
  return fminf(fmaxf(q, lo), hi);
}

}  // namespace k

constexpr std::initializer_list<DataType> kQuantTypes = {DataType::kUInt8, DataType::kInt8};

}  // namespace graft::cuda
