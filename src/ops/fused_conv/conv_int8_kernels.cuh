// An INT8 NHWC convolution on tensor cores with a requantizing epilogue: the kernel an explicitly
// quantized (Q/DQ) model's convolutions need (issue 16). cuDNN's legacy API has no INT8 convolution
// with per-output-channel scales, cuBLASLt takes them only at half its INT8 speed, and cuDNN's
// graph API lost to FP16 on ResNet-50's early layers (docs/results/gpu.md, the thirty-third
// session); graft's own kernel fuses the per-channel scale, bias, residual, activation and the next
// layer's quantization into the one pass that writes the output. Host-compilable declarations; the
// kernel is in conv_int8_kernels.cu.
#pragma once

#include <cstdint>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "ops/fused_conv/int8_conv_limits.h"
#include "ops/nn/nn_kernels.cuh"

namespace graft::cuda::k {

// What follows the exact int32 sum acc of one output (pixel p, filter co), in float32:
//   v = fma(float(acc), scale[co], bias[co])   (bias null: + 0)
//   v = v + float(z[p, co])                     (z null: skipped)
//   v = act(v)                                  (none, Relu or Clip to [lo, hi])
// then, with out_scale > 0, the int8 output saturate(rint(v / out_scale)) (rint: ties to even, as
// ONNX QuantizeLinear rounds; NaN becomes -128), else the float16 output v rounded to nearest.
// scale and bias are float32 [m] on the device; z is float16 [n, oh, ow, m].
struct Int8ConvEpilogue {
  const float* scale = nullptr;
  const float* bias = nullptr;
  const void* z = nullptr;
  Epilogue act{};
  float out_scale = 0;
};

// Whether launch_conv_nhwc_int8 takes this problem: c a positive multiple of 16 (a 16-byte load
// never straddles two pixels), one group, any m, kernel, stride, padding and dilation; the
// activation none (0), Relu (1) or Clip (3); every index within 32 bits, and fewer reduction terms
// (kh * kw * c) than kInt8ConvTermLimit, so no int32 sum can overflow.
bool conv_nhwc_int8_supported(const Window2d& g, int64_t m, const Epilogue& act);

// y = the convolution of x [n, h, w, c] with w [m, kh, kw, c] (graft's NHWC filter layout), both
// int8 with zero points 0 (symmetric quantization), summed exactly in int32 as an implicit GEMM
// (output pixels by filters, reduction kh * kw * c) on mma.sync m16n8k32, then the epilogue e.
// y is [n, oh, ow, m], int8 or float16 as e.out_scale says. x and w must be 16-byte aligned.
// cudaErrorInvalidValue (nothing launched) outside conv_nhwc_int8_supported, for unaligned x or w,
// or a null scale.
cudaError_t launch_conv_nhwc_int8(const int8_t* x, const int8_t* w, const Int8ConvEpilogue& e, void* y,
                                  const Window2d& g, int64_t m, cudaStream_t s);

}  // namespace graft::cuda::k
