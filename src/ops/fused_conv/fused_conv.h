// Internal ops made by the CUDA builder's convolution passes (src/graph/fuse_conv_epilogues.cpp,
// nhwc_regions.cpp, defer_activations.cpp):
//
//   GraftConv(X, W, B?, Z?)  Y = act(conv(X, W) + B + Z), 2-D, in NCHW or NHWC.
//     Attributes: the Conv attributes (kernel_shape, strides, pads, dilations, group, auto_pad),
//     activation ("", "Relu", "HardSwish", "Clip" with clip_min/clip_max, "Silu", "Sigmoid" or "HardSigmoid" with hardsigmoid_alpha/beta), layout ("NCHW" or "NHWC"). In NHWC, X, Z and Y are [N, H, W, C]
//     and W is [M, kH, kW, C/group] (cuDNN's KRSC filter layout). Z (the residual) has Y's shape.
//     `input_activation` (same names, with input_clip_min/max, input_hardsigmoid_alpha/beta) is
//     applied to X's elements before the convolution (the padding stays zero): a producer's
//     activation deferred to this reader, so that the producer can run in cuDNN's fused call.
//   GraftConvInt8(X, W, Scale, B?, Z?)  an explicitly quantized convolution in NHWC on its integers
//     (src/graph/int8_convs.cpp makes it): X int8 [N, H, W, C] and W int8 [M, kH, kW, C] (zero
//     points 0), summed exactly, then per filter y = act(fma(sum, Scale[m], B[m]) + Z) in float32
//     (Scale and B float32 [M]; the scale is the activation's times the filter's; Z of a float
//     type, read as float32), rounded to `to` (float16 or float32), or with `to` int8 quantized
//     as QuantizeLinear would with scale `out_scale` and zero point 0 (rounded half to even,
//     saturated). The Conv attributes (one group), activation '', 'Relu' or 'Clip'. CUDA: a
//     float16 or int8 output, a float16 Z.
//   GraftPool(X)  an ONNX pool (attribute `pool`: MaxPool, AveragePool, GlobalAveragePool or
//     GlobalMaxPool, with that op's attributes) on an NHWC tensor.
//   GraftChannelsLast(X)  X [N, C, H, W] as Y [N, H, W, channels]: channels-last, channels C and up
//     zero (attribute `channels` >= C), converted to float type `to` (a graft DataType code,
//     float32 or float16; default X's type). The NHWC pass puts it in front of a stem convolution
//     over few channels (an image's 3), whose filter it pads the same way: cuDNN's channels-last
//     tensor-core kernels want channel counts that are multiples of 8, and one pass over the input
//     replaces the model's input Cast, the NCHW stem and the transpose of the stem's wide output.
//     With `block` s > 1 (and `pads` [top, left, bottom, right], default 0) it also rearranges
//     space to depth: Y is [N, (H + top + bottom) / s, (W + left + right) / s, channels] (floor),
//     Y[n, i, j, (dy * s + dx) * C + c] = X[n, c, s*i + dy - top, s*j + dx - left] (0 outside X), the
//     channels from s*s*C up zero. A strided stem then runs as a stride-1 convolution over Y.
//
// Both are defined by the builtin ops they replace: inference and the CPU reference permute to
// NCHW, call the builtin Conv / pool, and permute back, so they cannot drift from ONNX semantics.
// The CPU reference is what the fusion tests compare the CUDA kernels and the passes against.
//
// One file per op: graft_conv (GraftConv), graft_conv_int8 (GraftConvInt8, its kernel in
// conv_int8_kernels.cu), nhwc_pool (GraftPool) and channels_last
// (GraftChannelsLast), each a .cpp (schema and CPU reference) and a _cuda.cpp (the CUDA op's host
// code); graft's own convolution kernels, which GraftConv times against cuDNN, are
// conv_mma_kernels.cu and depthwise_tile_kernels.cu, over the nn family's nn_kernels.cu. The ops'
// attribute readers are declared in src/ops/layout.h. Shared here: what GraftConv's and GraftPool's
// schemas and CPU references use to run the builtin op over NCHW views.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/layout.h"
#include "ops/operator.h"

namespace graft {

inline const std::vector<int64_t>& kToNchw = kNhwcToNchw;
inline const std::vector<int64_t>& kToNhwc = kNchwToNhwc;

template <typename T>
std::vector<T> permuted(const std::vector<T>& v, const std::vector<int64_t>& perm) {
  std::vector<T> out;
  for (int64_t p : perm) out.push_back(v[static_cast<size_t>(p)]);
  return out;
}

inline TensorDesc permuted_desc(const TensorDesc& d, const std::vector<int64_t>& perm) {
  if (!d.shape || d.shape->size() != 4) return d;
  return TensorDesc(d.dtype, permuted(*d.shape, perm));
}

inline const OpEntry& builtin(const char* op_type) {
  const OpEntry* op = find_onnx_op(op_type);
  return *op;  // the builtin table always holds Conv and the pools
}

// The builtin Conv's CPU reference into `y` (its dtype and dims), over X and W in NCHW and OIHW or,
// with `nhwc`, in NHWC and OHWI (permuted to the builtin's layout and back): what GraftConv's and
// GraftConvInt8's references compute their sums with. Defined in graft_conv.cpp.
Status conv_reference(const ExecContext& ctx, bool nhwc, const Tensor& x, const Tensor& w, const Tensor* b, Tensor* y);

// Runs a builtin op's inference over NCHW views of the first `n_inputs` inputs (when `nhwc`) and
// returns its outputs in NHWC.
inline Status infer_as(InferContext& ctx, const char* op_type, bool nhwc, size_t n_inputs) {
  std::vector<TensorDesc> descs(n_inputs);
  std::vector<InferContext::InputInfo> infos(n_inputs);
  for (size_t i = 0; i < n_inputs; ++i) {
    if (!ctx.has_input(i)) continue;
    descs[i] = nhwc ? permuted_desc(ctx.input(i), kToNchw) : ctx.input(i);
    infos[i].desc = &descs[i];
  }
  InferContext inner(ctx.node(), infos, ctx.opset());
  GRAFT_RETURN_IF_ERROR(builtin(op_type).infer(inner));
  for (size_t o = 0; o < inner.outputs().size() && o < ctx.num_outputs(); ++o)
    ctx.set_output(o, nhwc ? permuted_desc(inner.outputs()[o], kToNhwc) : inner.outputs()[o]);
  return Status::ok();
}

}  // namespace graft
