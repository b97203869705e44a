// Launchers for the nn CUDA kernels that do not go through cuBLASLt/cuDNN: a direct 2-D
// convolution (the fallback when cuDNN is absent or cannot express the padding), graft's own
// depthwise (NHWC and NCHW) and pointwise (NHWC) convolutions that GraftConv times against cuDNN,
// 2-D max/average pooling, global average/max pooling and inference BatchNormalization. FP32
// accumulation.
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
  // The NHWC depthwise kernels' input activation (an Epilogue's act, lo, hi; 0: none), applied to
  // each element of x they read, never to the padding. Other kernels leave it at 0.
  int in_act = 0;
  float in_lo = 0, in_hi = 0;
};

// y[n, m, oh, ow] = b[m] + sum x * w over group(m); w is [m, c/group, kh, kw]; b may be null.
cudaError_t launch_conv2d_direct(KType t, const void* x, const void* w, const void* b, void* y, const Window2d& g,
                                 int64_t out_channels, int64_t group, cudaStream_t s);

// 3-D window geometry (x [n, c, d, h, w]): per spatial axis the input and output extents, kernel,
// stride, dilation and begin/end pads.
struct Window3d {
  int64_t n = 1, c = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
  int64_t pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0};
};

// The 3-D Conv as the 2-D direct kernel computes it: y[n, m, oz, oy, ox] = b[m] + sum x * w over
// group(m), accumulated in float; w is [m, c/group, kd, kh, kw]; b may be null.
cudaError_t launch_conv3d_direct(KType t, const void* x, const void* w, const void* b, void* y, const Window3d& g,
                                 int64_t out_channels, int64_t group, cudaStream_t s);

// ConvTranspose without cuDNN's symmetric-pad limits (conv_transpose_direct.cu): X [n, c, in...]
// (g.in, up to three spatial axes, leading ones 1), W [c, M / group, k...], Y [n, M, out...] (g.out),
// strides g.s, dilations g.d, begin pads g.pb (the end pads follow from the extents); b may be null.
// t: float32, float16, bfloat16 or float64.
cudaError_t launch_conv_transpose_direct(KType t, const void* x, const void* w, const void* b, void* y,
                                         const Window3d& g, int64_t M, int64_t group, cudaStream_t s);

enum class PoolKind : int { kMax, kAverage, kAverageIncludePad };
// 3-D MaxPool and AveragePool over NCDHW tensors, with the 2-D kernel's rules (NaN propagates
// through max, a window that sees nothing gives -inf; count_include_pad counts the taps inside the
// padded input).
cudaError_t launch_pool3d(KType t, PoolKind kind, const void* x, void* y, const Window3d& g, cudaStream_t s);
// MaxPool with its Indices output, as the CPU reference picks them: over 1 to 3 spatial axes (a
// Window3d whose leading axes are 1 for fewer), the first tap in window order holding the maximum
// (the first NaN, once one is seen), indexed into X as n * c * spatial + the tap's spatial offset,
// row-major or (col_major, storage_order 1) column-major; a window that sees nothing gives -inf at
// index n * c * spatial.
cudaError_t launch_max_pool_indices(KType t, const void* x, void* y, int64_t* indices, const Window3d& g, bool col_major,
                                    cudaStream_t s);
cudaError_t launch_pool2d(KType t, PoolKind kind, const void* x, void* y, const Window2d& g, cudaStream_t s);
// The same pools over NHWC tensors (x [n, h, w, c], y [n, oh, ow, c]).
cudaError_t launch_pool2d_nhwc(KType t, PoolKind kind, const void* x, void* y, const Window2d& g, cudaStream_t s);

// Global average/max pool over NHWC x [n, area, channels] into y [n, channels] (n <= 65535). With
// global_pool_nhwc_workspace(...) bytes of workspace (0 when none helps) a large plane is split
// across blocks and their float partials combined by a second kernel; without it, one pass.
size_t global_pool_nhwc_workspace(int64_t n, int64_t area, int64_t channels);
cudaError_t launch_global_pool_nhwc(KType t, bool max, const void* x, void* y, int64_t n, int64_t area,
                                    int64_t channels, void* workspace, size_t workspace_size, cudaStream_t s);

// A convolution's activation: act 0 none, 1 Relu, 2 HardSwish, 3 Clip to [lo, hi] (NaN stays NaN),
// 4 Silu x * sigmoid(x), 5 Sigmoid, 6 HardSigmoid clamp(lo * x + hi, 0, 1) (graft::ConvActivation's codes).
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
// `row_tiled`: each thread computes 4 outputs of a row, reading each filter row's inputs once into
// registers (square 3x3, 5x5 or 7x7 filters, stride 1 or 2, no dilation, 16-byte lanes of
// channels and 16-byte aligned x, y, z: depthwise_nhwc_row_tiled_supported, plus the alignment
// checked here; elsewhere the per-pixel kernels run). Fewer loads, a quarter of the threads: the
// builder times both (GraftConv's variants 2 and 6); depthwise_nhwc_row_tiled_preferred is the
// untuned choice.
cudaError_t launch_depthwise_conv_nhwc(KType t, const void* x, const void* w, const void* bias, const void* z, void* y,
                                       const Window2d& g, Epilogue e, bool row_tiled, cudaStream_t s);
bool depthwise_nhwc_row_tiled_supported(const Window2d& g);
bool depthwise_nhwc_row_tiled_preferred(const Window2d& g);

// Depthwise 2-D convolution over NCHW (group == channels): x [n, c, h, w], w [c, 1, kh, kw] (ONNX
// layout), y [n, c, oh, ow], the same fused epilogue. One block per output tile of one (n, c) plane,
// the input tile with its halo staged in shared memory. Its limits: the staged tile and weights fit
// 48 KB of shared memory (so very large kernels, strides or dilations are refused), at most 65535
// tiles per plane and 2^31 - 1 planes. `supported` says whether a problem is within them; the
// launcher returns cudaErrorInvalidValue (launching nothing) when it is not.
bool depthwise_conv_nchw_supported(const Window2d& g);
cudaError_t launch_depthwise_conv_nchw(KType t, const void* x, const void* w, const void* bias, const void* z, void* y,
                                       const Window2d& g, Epilogue e, cudaStream_t s);

// Pointwise convolution over NHWC (1x1 kernel, stride 1, no padding, one group), i.e. the GEMM
// y[p, :] = act(w x[p, :] + bias + z[p, :]) over `pixels` rows: x [pixels, c], w [m, c] (graft's
// NHWC filter layout [m, 1, 1, c]), y and z [pixels, m]; bias and z may be null. Whole weight
// matrix in shared memory, so it takes only small problems: `supported` is c * m plus a 64-pixel
// tile of x fitting 48 KB as float; the launcher returns cudaErrorInvalidValue (launching nothing)
// otherwise. Any m (a scalar path where 16-byte vectors do not divide it) and any alignment.
bool pointwise_conv_nhwc_supported(int64_t c, int64_t m);
cudaError_t launch_pointwise_conv_nhwc(KType t, const void* x, const void* w, const void* bias, const void* z, void* y,
                                       int64_t pixels, int64_t c, int64_t m, Epilogue e, cudaStream_t s);

// x [n, c, hw] (NCHW) as y [n, hw, cp] (NHWC) with channels c..cp-1 zero (cp >= c), converted from
// `in` to `out` on the way (GraftChannelsLast: a model's float32 image straight to the float16,
// 8-channel input of a stem convolution that cuDNN's NHWC tensor-core kernels take).
cudaError_t launch_channels_last_padded(KType in, KType out, const void* x, void* y, int64_t n, int64_t c, int64_t hw,
                                        int64_t cp, cudaStream_t s);

// x [n, c, h, w] (NCHW) rearranged space to depth as y [n, oh, ow, cp] (GraftChannelsLast with a
// block): y[b, i, j, (dy * block + dx) * c + ch] = x[b, ch, block*i + dy - top, block*j + dx - left],
// 0 outside x and in channels c*block^2..cp-1, converted from `in` to `out`.
cudaError_t launch_space_to_depth(KType in, KType out, const void* x, void* y, int64_t n, int64_t c, int64_t h,
                                  int64_t w, int64_t block, int64_t top, int64_t left, int64_t oh, int64_t ow,
                                  int64_t cp, cudaStream_t s);

// y[r] = mean or max over x[r, 0:area] for r < rows.
cudaError_t launch_global_pool(KType t, bool max, const void* x, void* y, int64_t rows, int64_t area, cudaStream_t s);

// y = (x - mean[c]) / sqrt(var[c] + eps) * scale[c] + bias[c] over x [n, c, inner]; parameters in `pt`.
cudaError_t launch_batchnorm(KType t, KType pt, const void* x, const void* scale, const void* bias, const void* mean,
                             const void* var, void* y, int64_t n, int64_t c, int64_t inner, float eps, cudaStream_t s);
// Training mode (batch_norm_training.cu): the batch's mean and population variance per channel, in
// double, then y as above with them, and running_mean/running_var (each may be null) =
// mean/var * momentum + the batch's * (1 - momentum). x and y of type t, the rest of pt (float32,
// float16, bfloat16 or float64 each).
struct BatchNormTraining {
  const void* x = nullptr;
  const void *scale = nullptr, *bias = nullptr, *mean = nullptr, *var = nullptr;
  void* y = nullptr;
  void *running_mean = nullptr, *running_var = nullptr;
  int64_t n = 0, c = 0, inner = 0;  // x is [n, c, inner]
  double eps = 0.0, momentum = 0.0;
};
cudaError_t launch_batchnorm_training(KType t, KType pt, const BatchNormTraining& a, cudaStream_t s);

}  // namespace graft::cuda::k
