// Launchers for the nn CUDA kernels that do not go through cuBLASLt/cuDNN: a direct 2-D
// convolution (the fallback when cuDNN is absent or cannot express the padding), 2-D max/average
// pooling, global average/max pooling and inference BatchNormalization. FP32 accumulation.
#pragma once

#include "backends/cuda/cuda_kernel_common.cuh"

namespace graft::cuda::k {

// 2-D window geometry (1-D problems use h = 1). Pads are the begin pads; the end pads only bound
// the AveragePool count_include_pad region.
struct Window2d {
  int64_t n = 1, c = 1, h = 1, w = 1;        // input
  int64_t oh = 1, ow = 1;                    // output spatial
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t ph = 0, pw = 0, peh = 0, pew = 0;  // begin and end pads
};

// y[n, m, oh, ow] = b[m] + sum x * w over group(m); w is [m, c/group, kh, kw]; b may be null.
cudaError_t launch_conv2d_direct(KType t, const void* x, const void* w, const void* b, void* y, const Window2d& g,
                                 int64_t out_channels, int64_t group, cudaStream_t s);

enum class PoolKind : int { kMax, kAverage, kAverageIncludePad };
cudaError_t launch_pool2d(KType t, PoolKind kind, const void* x, void* y, const Window2d& g, cudaStream_t s);
// The same pools over NHWC tensors (x [n, h, w, c], y [n, oh, ow, c]).
cudaError_t launch_pool2d_nhwc(KType t, PoolKind kind, const void* x, void* y, const Window2d& g, cudaStream_t s);

// Global average/max pool over NHWC x [n, area, channels] into y [n, channels] (n <= 65535).
cudaError_t launch_global_pool_nhwc(KType t, bool max, const void* x, void* y, int64_t n, int64_t area,
                                    int64_t channels, cudaStream_t s);

// A convolution's activation: act 0 none, 1 Relu, 2 HardSwish, 3 Clip to [lo, hi] (NaN stays NaN),
// 4 Silu x * sigmoid(x) (graft::ConvActivation's codes).
struct Epilogue {
  int act = 0;
  float lo = 0, hi = 0;
};

// In place: y = act(y + bias[ch] + z) where ch = (i / inner) % channels (inner = H*W for NCHW, 1 for
// NHWC); bias and z may be null. The epilogue of a convolution that cuDNN ran without it.
cudaError_t launch_conv_epilogue(KType t, void* y, const void* bias, const void* z, int64_t channels, int64_t inner,
                                 Epilogue e, int64_t total, cudaStream_t s);

// Depthwise 2-D convolution over NHWC (group == channels, one filter per channel): x [n, h, w, c],
// w [c, kh, kw, 1] (graft's NHWC filter layout), y [n, oh, ow, c], with the GraftConv epilogue
// y = act(conv + bias[ch] + z) fused (bias and z may be null).
// Memory-bound, so each thread owns up to 16 bytes of channels of one output pixel (vector loads
// along the contiguous channel axis) and accumulates in float32.
cudaError_t launch_depthwise_conv_nhwc(KType t, const void* x, const void* w, const void* bias, const void* z, void* y,
                                       const Window2d& g, Epilogue e, cudaStream_t s);

// y[r] = mean or max over x[r, 0:area] for r < rows.
cudaError_t launch_global_pool(KType t, bool max, const void* x, void* y, int64_t rows, int64_t area, cudaStream_t s);

// y = (x - mean[c]) / sqrt(var[c] + eps) * scale[c] + bias[c] over x [n, c, inner]; parameters in `pt`.
cudaError_t launch_batchnorm(KType t, KType pt, const void* x, const void* scale, const void* bias, const void* mean,
                             const void* var, void* y, int64_t n, int64_t c, int64_t inner, float eps, cudaStream_t s);

}  // namespace graft::cuda::k
