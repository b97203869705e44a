// A float16 NHWC convolution on tensor cores for problems whose whole reduction is short: the
// pointwise expansions of MobileNet/EfficientNet-style blocks (16 -> 96 channels, say) and stems
// whose input was padded to 8 channels (3x3 over 8 channels: 72 terms). cuDNN ran these far from
// the memory bandwidth they need (MobileNetV2's 16 -> 96 expansion at batch 32 took 0.16 ms on an
// H200, for 90 MB of traffic), and the fused epilogue's activations (ReLU6, SiLU, HardSwish) are
// not among cuBLASLt's. Host-compilable declarations; the kernel is in conv_mma_kernels.cu.
#pragma once

#include <cstdint>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "ops/nn/nn_kernels.cuh"

namespace graft::cuda::k {

// Whether launch_conv_nhwc_mma takes this problem: one group, c a multiple of 8, the reduction
// kh * kw * c at most kConvMmaMaxReduction, and every index of x, y and the output pixels within
// 32 bits. Any m, stride, padding and dilation.
constexpr int64_t kConvMmaMaxReduction = 128;
bool conv_nhwc_mma_supported(const Window2d& g, int64_t m);

// y[p, :] = act(sum over the window of x * w + bias + z[p, :]) as an implicit GEMM: x [n, h, w, c],
// w [m, kh, kw, c] (graft's NHWC filter layout), y and z [n, oh, ow, m], float16 with float32
// accumulation; bias and z may be null. A block stages 64 or 128 output pixels' receptive fields
// (the GEMM's rows, gathered with the padding as zeros) and a chunk of the filters in shared
// memory, multiplies them with WMMA 16x16x16 fragments, and applies the epilogue in registers.
// 16-byte loads and stores where x, w, y, z are 16-byte aligned (and m a multiple of 8), element
// accesses otherwise. cudaErrorInvalidValue (nothing launched) outside conv_nhwc_mma_supported.
cudaError_t launch_conv_nhwc_mma(const void* x, const void* w, const void* bias, const void* z, void* y,
                                 const Window2d& g, int64_t m, Epilogue e, cudaStream_t s);

// The same convolution for reductions past kConvMmaMaxReduction up to kConvMmaChunkedMaxReduction
// (GraftConv variant 9): stems over images padded to 8 channels, such as ResNet's 7x7 (392 terms) and
// AlexNet's 11x11 (968), whose cuDNN kernel ran ResNet-18's at batch 32 in a third of the network's
// time on an H200. A block computes 64 pixels by 64 filters, walking the reduction 64 terms at a time
// through shared memory. Same layouts, epilogue, alignment rules and refusals as above.
constexpr int64_t kConvMmaChunkedMaxReduction = 1024;
bool conv_nhwc_mma_chunked_supported(const Window2d& g, int64_t m);
cudaError_t launch_conv_nhwc_mma_chunked(const void* x, const void* w, const void* bias, const void* z, void* y,
                                         const Window2d& g, int64_t m, Epilogue e, cudaStream_t s);

}  // namespace graft::cuda::k
