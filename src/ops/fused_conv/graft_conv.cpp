// GraftConv (fused_conv.h): its schema and CPU reference, and the readers src/ops/layout.h declares
// for the family's `layout` and GraftConv's activations, which GraftPool, the CUDA ops and the
// passes read too, with permute_rank4. CUDA: graft_conv_cuda.cpp.
#include "ops/fused_conv/fused_conv.h"

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
  Tensor conv_out = Tensor::empty(y.dtype(), y.dims());
  GRAFT_RETURN_IF_ERROR(conv_reference(ctx, nhwc, *x, *w, b, &conv_out));
  if (z && z->dims() != y.dims())
    return error(StatusCode::kInvalidModel, "residual Z must have the output's shape");
  // Epilogue in double, like the builtin kernels' float64 reference path.
  for (int64_t i = 0; i < y.numel(); ++i) {
    y.set(i, apply_activation(act, conv_out.get(i) + (z ? z->get(i) : 0.0)));
  }
  return Status::ok();
}

}  // namespace

Status conv_reference(const ExecContext& ctx, bool nhwc, const Tensor& x, const Tensor& w, const Tensor* b, Tensor* y) {
  ExecContext inner = ctx;
  inner.inputs = {&x, &w, b};
  inner.outputs = {y};
  if (!nhwc) return cpu::conv(inner);
  if (x.rank() != 4 || w.rank() != 4 || y->rank() != 4)
    return error(StatusCode::kInvalidModel, "layout NHWC needs rank-4 X, W and Y");
  const Tensor xn = permute_rank4(x, kToNchw), wn = permute_rank4(w, kToNchw);
  Tensor yn = Tensor::empty(y->dtype(), permuted(y->dims(), kToNchw));
  inner.inputs = {&xn, &wn, b};
  inner.outputs = {&yn};
  GRAFT_RETURN_IF_ERROR(cpu::conv(inner));
  *y = permute_rank4(yn, kToNhwc);
  return Status::ok();
}

Status read_layout(const AttributeMap& attrs, bool* nhwc) {
  auto layout = attrs.get_string("layout", "NCHW");
  if (!layout) return std::move(layout).take_status();
  *nhwc = *layout == "NHWC";
  if (*nhwc || *layout == "NCHW") return Status::ok();
  Status st = error(StatusCode::kInvalidModel, "layout must be NCHW or NHWC, got '", *layout, "'");
  st.with_attribute("layout");
  return st;
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

void append_graft_conv_ops(std::vector<OpEntry>& out) {
  out.push_back(internal_op(OpEntry{"GraftConv", 11, infer_graft_conv, graft_conv_cpu}));
}

}  // namespace graft
