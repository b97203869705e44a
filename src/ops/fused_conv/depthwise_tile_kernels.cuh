// GraftConv's variant 8: a 16-bit NHWC depthwise convolution that stages a whole input tile in
// shared memory. Host-callable launchers only; the kernels are in depthwise_tile_kernels.cu.
//
// Why another depthwise kernel: the per-pixel kernel (variant 2) and the row-tiled one (variant 6)
// read every input vector from global memory once per filter row or tap that uses it, through the
// caches. On an H200 they ran MobileNetV2's stride-1 3x3 depthwise layers at batch 32 in float16
// at about 0.8 TB/s (features.3: 144 channels at 56x56, 0.071 ms for 58 MB), a fifth of the
// memory's bandwidth. Here a block loads its tile of 16 x 16 (or 8 x 8) output pixels' inputs with
// their halo once, 16 bytes per load, for 16 channels (8 where the count is not a multiple of 16);
// each thread then computes two channels of a column of outputs from shared memory, keeping its
// filter taps in registers.
#pragma once

#include <cuda_runtime.h>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "ops/nn/nn_kernels.cuh"

namespace graft::cuda::k {

// Whether variant 8 takes a problem of dtype t: float16 or bfloat16; a square 3x3 or 5x5 filter at
// stride 1 or 2 on both axes, or 7x7 (ConvNeXt) at stride 1; no dilation; a multiple of 8 channels
// (at most 65535 chunks of 16, or of 8); input and output element counts and the tile count below
// 2^31.
bool depthwise_nhwc_tile_supported(KType t, const Window2d& g);

// Depthwise convolution over NHWC as launch_depthwise_conv_nhwc (x [n, h, w, c], w [c, kh, kw, 1],
// y [n, oh, ow, c], y = act(conv + bias[ch] + z), bias and z may be null). x must be 16-byte
// aligned and y, z 4-byte aligned; where they are not (a view into the middle of a buffer) the
// per-pixel kernel runs instead. cudaErrorInvalidValue, launching nothing, for a problem
// depthwise_nhwc_tile_supported refuses.
cudaError_t launch_depthwise_conv_nhwc_tile(KType t, const void* x, const void* w, const void* bias, const void* z,
                                            void* y, const Window2d& g, Epilogue e, cudaStream_t s);

}  // namespace graft::cuda::k
