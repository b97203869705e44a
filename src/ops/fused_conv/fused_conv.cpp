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
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "ops/nn/nn.h"
#include "ops/layout.h"
#include "ops/operator.h"

namespace graft {

namespace {

const std::vector<int64_t>& kToNchw = kNhwcToNchw;
const std::vector<int64_t>& kToNhwc = kNchwToNhwc;

template <typename T>
std::vector<T> permuted(const std::vector<T>& v, const std::vector<int64_t>& perm) {
  std::vector<T> out;
  for (int64_t p : perm) out.push_back(v[static_cast<size_t>(p)]);
  return out;
}

TensorDesc permuted_desc(const TensorDesc& d, const std::vector<int64_t>& perm) {
  if (!d.shape || d.shape->size() != 4) return d;
  return TensorDesc(d.dtype, permuted(*d.shape, perm));
}

const OpEntry& builtin(const char* op_type) {
  const OpEntry* op = find_onnx_op(op_type);
  return *op;  // the builtin table always holds Conv and the pools
}

// Runs a builtin op's inference over NCHW views of the first `n_inputs` inputs (when `nhwc`) and
// returns its outputs in NHWC.
Status infer_as(InferContext& ctx, const char* op_type, bool nhwc, size_t n_inputs) {
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

// ---- GraftConv ----

Status infer_graft_conv(InferContext& ctx) {
  bool nhwc = false;
  ConvEpilogueActivation act;
  GRAFT_RETURN_IF_ERROR(read_layout(ctx.attrs(), &nhwc));
  GRAFT_RETURN_IF_ERROR(read_activation(ctx.attrs(), &act));
  ConvEpilogueActivation input_act;
  GRAFT_RETURN_IF_ERROR(read_activation(ctx.attrs(), &input_act, "input_"));
  if (nhwc && (ctx.input(0).rank() != 4 || ctx.input(1).rank() != 4))
    return ctx.fail("layout NHWC needs rank-4 X and W, got ", ctx.input(0).to_string(), " and ",
                    ctx.input(1).to_string());
  GRAFT_RETURN_IF_ERROR(infer_as(ctx, "Conv", nhwc, std::min<size_t>(ctx.num_inputs(), 3)));
  if (ctx.has_input(3)) {
    const TensorDesc& z = ctx.input(3);
    const TensorDesc& y = ctx.outputs()[0];
    if (z.dtype != y.dtype)
      return ctx.fail("residual Z has dtype ", dtype_name(z.dtype), " but the output is ", dtype_name(y.dtype));
    if (z.shape && y.shape && shape_is_static(*z.shape) && shape_is_static(*y.shape) &&
        shape_values(*z.shape) != shape_values(*y.shape))
      return ctx.fail("residual Z ", z.to_string(), " must have the output's shape ", y.to_string());
  }
  return Status::ok();
}

Status graft_conv_cpu(ExecContext& ctx) {
  bool nhwc = false;
  ConvEpilogueActivation act;
  GRAFT_RETURN_IF_ERROR(read_layout(*ctx.attrs, &nhwc));
  GRAFT_RETURN_IF_ERROR(read_activation(*ctx.attrs, &act));
  ConvEpilogueActivation input_act;
  GRAFT_RETURN_IF_ERROR(read_activation(*ctx.attrs, &input_act, "input_"));
  const Tensor* x = ctx.inputs[0];
  const Tensor* w = ctx.inputs[1];
  Tensor xa;
  if (input_act.kind != ConvActivation::kNone) {  // in X's type, as the producer would have stored it
    xa = Tensor::empty(x->dtype(), x->dims());
    for (int64_t i = 0; i < x->numel(); ++i) xa.set(i, apply_activation(input_act, x->get(i)));
    x = &xa;
  }
  const Tensor* b = ctx.inputs.size() > 2 ? ctx.inputs[2] : nullptr;
  const Tensor* z = ctx.inputs.size() > 3 ? ctx.inputs[3] : nullptr;
  Tensor& y = *ctx.outputs[0];
  Tensor xn, wn;
  if (nhwc) {
    if (x->rank() != 4 || w->rank() != 4 || y.rank() != 4)
      return error(StatusCode::kInvalidModel, "layout NHWC needs rank-4 X, W and Y");
    xn = permute_rank4(*x, kToNchw);
    wn = permute_rank4(*w, kToNchw);
    x = &xn;
    w = &wn;
  }
  Tensor yn = Tensor::empty(y.dtype(), nhwc ? permuted(y.dims(), kToNchw) : y.dims());
  ExecContext inner = ctx;
  inner.inputs = {x, w, b};
  inner.outputs = {&yn};
  GRAFT_RETURN_IF_ERROR(cpu::conv(inner));
  Tensor ynhwc = nhwc ? permute_rank4(yn, kToNhwc) : Tensor();
  const Tensor& conv_out = nhwc ? ynhwc : yn;
  if (z && z->dims() != y.dims())
    return error(StatusCode::kInvalidModel, "residual Z must have the output's shape");
  // Epilogue in double, like the builtin kernels' float64 reference path.
  for (int64_t i = 0; i < y.numel(); ++i) {
    y.set(i, apply_activation(act, conv_out.get(i) + (z ? z->get(i) : 0.0)));
  }
  return Status::ok();
}

// ---- GraftPool ----

Result<const char*> pool_kind(const AttributeMap& attrs) {
  GRAFT_ASSIGN_OR_RETURN(std::string p, attrs.get_string("pool", ""));
  for (const char* k : {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"})
    if (p == k) return k;
  Status st = error(StatusCode::kInvalidModel, "pool must be MaxPool, AveragePool, GlobalAveragePool or GlobalMaxPool, got '",
                    p, "'");
  st.with_attribute("pool");
  return st;
}

Status infer_graft_pool(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(const char* kind, pool_kind(ctx.attrs()));
  bool nhwc = false;
  GRAFT_RETURN_IF_ERROR(read_layout(ctx.attrs(), &nhwc));
  if (!nhwc) return ctx.fail("GraftPool exists for layout NHWC only");
  if (ctx.input(0).rank() != 4) return ctx.fail("X must have rank 4, got ", ctx.input(0).to_string());
  return infer_as(ctx, kind, true, 1);
}

Status graft_pool_cpu(ExecContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(const char* kind, pool_kind(*ctx.attrs));
  if (ctx.inputs[0]->rank() != 4) return error(StatusCode::kInvalidModel, "X must have rank 4");
  Tensor xn = permute_rank4(*ctx.inputs[0], kToNchw);
  Tensor& y = *ctx.outputs[0];
  Tensor yn = Tensor::empty(y.dtype(), permuted(y.dims(), kToNchw));
  ExecContext inner = ctx;
  inner.inputs = {&xn};
  inner.outputs = {&yn};
  GRAFT_RETURN_IF_ERROR(builtin(kind).cpu(inner));
  Tensor back = permute_rank4(yn, kToNhwc);
  std::memcpy(y.data(), back.data(), y.nbytes());
  return Status::ok();
}

// ---- GraftChannelsLast ----

// Y's spatial extent along one axis: (extent + pads) / block, floored.
Dim channels_last_extent(const ChannelsLastAttrs& a, const Dim& in, int64_t pad_begin, int64_t pad_end) {
  return floor_div(in + Dim(pad_begin + pad_end), Dim(a.block));
}

Status infer_graft_channels_last(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(ChannelsLastAttrs a, read_channels_last(ctx.attrs()));
  const TensorDesc& x = ctx.input(0);
  if (x.dtype != DataType::kFloat32 && x.dtype != DataType::kFloat16)
    return ctx.fail("X must be float32 or float16, got ", dtype_name(x.dtype));
  if (x.rank() != 4) return ctx.fail("X must have rank 4 [N, C, H, W], got ", x.to_string());
  const Shape& s = *x.shape;
  if (s[1].is_const() && s[1].value() * a.block * a.block > a.channels)
    return ctx.fail("channels ", a.channels, " is fewer than X's ", s[1].value(), " times block^2 (", a.block * a.block,
                    ")");
  const Dim h = channels_last_extent(a, s[2], a.pads[0], a.pads[2]), w = channels_last_extent(a, s[3], a.pads[1], a.pads[3]);
  if ((h.is_const() && h.value() < 1) || (w.is_const() && w.value() < 1))
    return ctx.fail("pads and block leave no rows or columns of X ", x.to_string());
  ctx.set_output(0, TensorDesc(a.to == DataType::kUndefined ? x.dtype : a.to, Shape{s[0], h, w, Dim(a.channels)}));
  return Status::ok();
}

Status graft_channels_last_cpu(ExecContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(ChannelsLastAttrs a, read_channels_last(*ctx.attrs));
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  if (x.rank() != 4 || x.dims()[1] * a.block * a.block > a.channels)
    return error(StatusCode::kInvalidModel, "X must be [N, C, H, W] with C * block^2 <= channels (", a.channels, ")");
  const auto& d = x.dims();
  const int64_t n = d[0], c = d[1], h = d[2], w = d[3], s = a.block;
  const int64_t oh = y.dims()[1], ow = y.dims()[2];
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        for (int64_t k = 0; k < a.channels; ++k) {
          double v = 0.0;
          if (k < s * s * c) {
            const int64_t dy = k / c / s, dx = k / c % s, ch = k % c;
            const int64_t r = s * i + dy - a.pads[0], col = s * j + dx - a.pads[1];
            if (r >= 0 && r < h && col >= 0 && col < w) v = x.get(((b * c + ch) * h + r) * w + col);
          }
          y.set(((b * oh + i) * ow + j) * a.channels + k, v);
        }
  return Status::ok();
}

}  // namespace

Status read_layout(const AttributeMap& attrs, bool* nhwc) {
  auto layout = attrs.get_string("layout", "NCHW");
  if (!layout) return std::move(layout).take_status();
  *nhwc = *layout == "NHWC";
  if (*nhwc || *layout == "NCHW") return Status::ok();
  Status st = error(StatusCode::kInvalidModel, "layout must be NCHW or NHWC, got '", *layout, "'");
  st.with_attribute("layout");
  return st;
}

Result<ChannelsLastAttrs> read_channels_last(const AttributeMap& a) {
  ChannelsLastAttrs r;
  auto ch = a.require_int("channels");
  if (!ch) return Status(ch.status()).with_attribute("channels");
  r.channels = *ch;
  if (r.channels < 1 || r.channels > (int64_t{1} << 20))
    return error(StatusCode::kInvalidModel, "channels must lie in 1..2^20, got ", r.channels).with_attribute("channels");
  auto to = a.get_int("to", -1);
  if (!to) return Status(to.status()).with_attribute("to");
  if (*to != -1) {
    r.to = static_cast<DataType>(*to);
    if (r.to != DataType::kFloat32 && r.to != DataType::kFloat16)
      return error(StatusCode::kInvalidModel, "'to' must be float32 or float16, got ", *to).with_attribute("to");
  }
  auto block = a.get_int("block", 1);
  if (!block) return Status(block.status()).with_attribute("block");
  if (*block < 1 || *block > 64)
    return error(StatusCode::kInvalidModel, "block must lie in 1..64, got ", *block).with_attribute("block");
  r.block = *block;
  auto pads = a.get_ints("pads", {0, 0, 0, 0});
  if (!pads) return Status(pads.status()).with_attribute("pads");
  if (pads->size() != 4)
    return error(StatusCode::kInvalidModel, "pads must hold 4 values [top, left, bottom, right], got ", pads->size())
        .with_attribute("pads");
  for (int64_t p : *pads)
    if (p < -r.block * 64 || p > r.block * 64)
      return error(StatusCode::kInvalidModel, "pads must lie in -64*block..64*block, got ", p).with_attribute("pads");
  r.pads = *pads;
  return r;
}

Status read_activation(const AttributeMap& attrs, ConvEpilogueActivation* out, const std::string& prefix) {
  auto act = attrs.get_string(prefix + "activation", "");
  if (!act) return std::move(act).take_status();
  static const std::pair<const char*, ConvActivation> kNames[] = {
      {"", ConvActivation::kNone}, {"Relu", ConvActivation::kRelu}, {"HardSwish", ConvActivation::kHardSwish},
      {"Clip", ConvActivation::kClip}, {"Silu", ConvActivation::kSilu}, {"Sigmoid", ConvActivation::kSigmoid},
      {"HardSigmoid", ConvActivation::kHardSigmoid}};
  for (const auto& [name, kind] : kNames) {
    if (*act != name) continue;
    *out = ConvEpilogueActivation{kind, 0.f, 0.f};
    if (kind == ConvActivation::kHardSigmoid) {
      for (auto [short_name, dst] : {std::pair{"hardsigmoid_alpha", &out->lo}, std::pair{"hardsigmoid_beta", &out->hi}}) {
        const std::string name = prefix + short_name;
        auto v = attrs.get_float(name, std::numeric_limits<float>::quiet_NaN());
        if (!v) return Status(v.status()).with_attribute(name);
        if (!std::isfinite(*v))
          return error(StatusCode::kInvalidModel, "activation 'HardSigmoid' needs a finite number").with_attribute(name);
        *dst = *v;
      }
    }
    if (kind == ConvActivation::kClip) {
      for (auto [short_name, dst] : {std::pair{"clip_min", &out->lo}, std::pair{"clip_max", &out->hi}}) {
        const std::string bound = prefix + short_name;
        auto v = attrs.get_float(bound, std::numeric_limits<float>::quiet_NaN());
        if (!v) return Status(v.status()).with_attribute(bound);
        if (std::isnan(*v))
          return error(StatusCode::kInvalidModel, "activation 'Clip' needs a number, got none or NaN")
              .with_attribute(bound);
        *dst = *v;
      }
      if (out->lo > out->hi)
        return error(StatusCode::kInvalidModel, prefix, "clip_min ", out->lo, " exceeds ", prefix, "clip_max ", out->hi)
            .with_attribute(prefix + "clip_min");
    }
    return Status::ok();
  }
  Status st = error(StatusCode::kInvalidModel, prefix, "activation must be '', 'Relu', 'HardSwish', 'Clip', 'Silu', 'Sigmoid' or 'HardSigmoid', got '",
                    *act, "'");
  st.with_attribute(prefix + "activation");
  return st;
}

double apply_activation(const ConvEpilogueActivation& act, double v) {
  switch (act.kind) {
    case ConvActivation::kRelu:
      return v < 0 ? 0 : v;
    case ConvActivation::kHardSwish:
      return v * std::min(1.0, std::max(0.0, v / 6.0 + 0.5));
    case ConvActivation::kClip:
      return v < act.lo ? act.lo : v > act.hi ? act.hi : v;
    case ConvActivation::kSilu:
      return v / (1.0 + std::exp(-v));
    case ConvActivation::kSigmoid:
      return 1.0 / (1.0 + std::exp(-v));
    case ConvActivation::kHardSigmoid:
      return std::min(1.0, std::max(0.0, static_cast<double>(act.lo) * v + act.hi));
    case ConvActivation::kNone:
      break;
  }
  return v;
}

Tensor permute_rank4(const Tensor& t, const std::vector<int64_t>& perm) {
  const std::vector<int64_t>& in = t.dims();
  Tensor out = Tensor::empty(t.dtype(), permuted(in, perm));
  const size_t es = dtype_size(t.dtype());
  int64_t in_stride[4];
  in_stride[3] = 1;
  for (int i = 2; i >= 0; --i) in_stride[i] = in_stride[i + 1] * in[i + 1];
  const std::vector<int64_t>& od = out.dims();
  const auto* src = static_cast<const char*>(t.data());
  auto* dst = static_cast<char*>(out.data());
  int64_t o = 0;
  for (int64_t a = 0; a < od[0]; ++a)
    for (int64_t b = 0; b < od[1]; ++b)
      for (int64_t c = 0; c < od[2]; ++c)
        for (int64_t d = 0; d < od[3]; ++d, ++o) {
          const int64_t idx[4] = {a, b, c, d};
          int64_t off = 0;
          for (int k = 0; k < 4; ++k) off += idx[k] * in_stride[perm[k]];
          std::memcpy(dst + o * es, src + off * es, es);
        }
  return out;
}

void append_fused_conv_ops(std::vector<OpEntry>& out) {
  out.push_back(internal_op(OpEntry{"GraftConv", 11, infer_graft_conv, graft_conv_cpu}));
  out.push_back(internal_op(OpEntry{"GraftPool", 11, infer_graft_pool, graft_pool_cpu}));
  out.push_back(internal_op(OpEntry{"GraftChannelsLast", 11, infer_graft_channels_last, graft_channels_last_cpu}));
}

}  // namespace graft
