// GraftConvInt8 (fused_conv.h): its schema and CPU reference. CUDA: graft_conv_int8_cuda.cpp, over
// conv_int8_kernels.cu.
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "ops/fused_conv/fused_conv.h"
#include "ops/infer_util.h"
#include "ops/layout.h"
#include "ops/operator.h"

namespace graft {

namespace {

using namespace infer;

// The output's type (attribute `to`: float16, float32, or int8 with `out_scale`).
Result<DataType> output_type(const AttributeMap& attrs) {
  GRAFT_ASSIGN_OR_RETURN(const int64_t to, attrs.get_int("to", static_cast<int64_t>(DataType::kFloat16)));
  if (to != static_cast<int64_t>(DataType::kFloat16) && to != static_cast<int64_t>(DataType::kFloat32) &&
      to != static_cast<int64_t>(DataType::kInt8))
    return Status(error(StatusCode::kInvalidModel, "to must be float16 (10), float32 (1) or int8 (3), got ", to))
        .with_attribute("to");
  return static_cast<DataType>(to);
}

// The int8 output's scale: positive and finite (0 for a float output, which takes none).
Result<float> output_scale(const AttributeMap& attrs, DataType to) {
  GRAFT_ASSIGN_OR_RETURN(const float s, attrs.get_float("out_scale", 0.f));
  if (to != DataType::kInt8) {
    if (attrs.has("out_scale"))
      return Status(error(StatusCode::kInvalidModel, "out_scale is for an int8 output")).with_attribute("out_scale");
    return 0.f;
  }
  if (!(s > 0.f) || !std::isfinite(s))
    return Status(error(StatusCode::kInvalidModel, "an int8 output needs a positive finite out_scale, got ", s))
        .with_attribute("out_scale");
  return s;
}

// The activation: none, Relu or Clip (what the INT8 kernel's epilogue computes exactly).
Result<ConvEpilogueActivation> int8_activation(const AttributeMap& attrs) {
  ConvEpilogueActivation act;
  GRAFT_RETURN_IF_ERROR(read_activation(attrs, &act));
  if (act.kind != ConvActivation::kNone && act.kind != ConvActivation::kRelu && act.kind != ConvActivation::kClip)
    return Status(error(StatusCode::kInvalidModel, "GraftConvInt8 takes activation '', 'Relu' or 'Clip'"))
        .with_attribute("activation");
  return act;
}

Status check_group(const AttributeMap& attrs) {
  GRAFT_ASSIGN_OR_RETURN(const int64_t group, attrs.get_int("group", 1));
  if (group != 1) return Status(error(StatusCode::kInvalidModel, "GraftConvInt8 has one group, got ", group)).with_attribute("group");
  return Status::ok();
}

Status infer_graft_conv_int8(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, {kI8}));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, {kI8}));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 2, {kF32}));
  if (ctx.has_input(3)) GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 3, {kF32}));
  GRAFT_ASSIGN_OR_RETURN(const DataType to, output_type(ctx.attrs()));
  GRAFT_RETURN_IF_ERROR(output_scale(ctx.attrs(), to).status());
  GRAFT_RETURN_IF_ERROR(int8_activation(ctx.attrs()).status());
  GRAFT_RETURN_IF_ERROR(check_group(ctx.attrs()));
  if (ctx.input(0).rank() != 4 || ctx.input(1).rank() != 4)
    return ctx.fail("needs rank-4 X [N, H, W, C] and W [M, kH, kW, C], got ", ctx.input(0).to_string(), " and ",
                    ctx.input(1).to_string());
  // The geometry is the builtin Conv's over NCHW float views of X and W.
  std::vector<TensorDesc> descs = {ctx.input(0), ctx.input(1)};
  for (TensorDesc& d : descs) {
    d.dtype = kF32;
    d = permuted_desc(d, kToNchw);
  }
  std::vector<InferContext::InputInfo> infos(2);
  infos[0].desc = &descs[0];
  infos[1].desc = &descs[1];
  InferContext inner(ctx.node(), infos, ctx.opset());
  GRAFT_RETURN_IF_ERROR(builtin("Conv").infer(inner));
  TensorDesc y = permuted_desc(inner.outputs()[0], kToNhwc);
  y.dtype = to;
  const TensorDesc& w = ctx.input(1);
  for (int i : {2, 3}) {
    if (!ctx.has_input(static_cast<size_t>(i))) continue;
    const TensorDesc& v = ctx.input(static_cast<size_t>(i));
    if (v.rank() != 1 || (w.shape && (*w.shape)[0].is_const() && (*v.shape)[0].is_const() &&
                          (*v.shape)[0].value() != (*w.shape)[0].value()))
      return ctx.fail(i == 2 ? "the scale" : "the bias", " must hold one value per filter, got ", v.to_string());
  }
  if (ctx.has_input(4)) {
    const TensorDesc& z = ctx.input(4);
    if (!dtype_is_float(z.dtype)) return ctx.fail("residual Z must be a float tensor, got ", dtype_name(z.dtype));
    if (z.shape && y.shape && shape_is_static(*z.shape) && shape_is_static(*y.shape) &&
        shape_values(*z.shape) != shape_values(*y.shape))
      return ctx.fail("residual Z ", z.to_string(), " must have the output's shape ", y.to_string());
  }
  ctx.set_output(0, y);
  return Status::ok();
}

// The exact integer sums, then the epilogue's float32 steps as the CUDA kernel takes them
// (conv_int8_kernels.cuh): one fma with the filter's scale and bias, one add of the residual, the
// activation, one rounding to the output type (int8: a division by out_scale, rounded half to even
// and saturated, as QuantizeLinear does).
Status graft_conv_int8_cpu(ExecContext& ctx) {
  if (ctx.inputs.size() < 3 || !ctx.inputs[0] || !ctx.inputs[1] || !ctx.inputs[2])
    return error(StatusCode::kInvalidModel, "GraftConvInt8 needs X, W and the scale");
  const Tensor& x = *ctx.inputs[0];
  const Tensor& w = *ctx.inputs[1];
  const Tensor& scale = *ctx.inputs[2];
  const Tensor* b = ctx.inputs.size() > 3 ? ctx.inputs[3] : nullptr;
  const Tensor* z = ctx.inputs.size() > 4 ? ctx.inputs[4] : nullptr;
  Tensor& y = *ctx.outputs[0];
  GRAFT_ASSIGN_OR_RETURN(const ConvEpilogueActivation act, int8_activation(*ctx.attrs));
  GRAFT_RETURN_IF_ERROR(check_group(*ctx.attrs));
  GRAFT_ASSIGN_OR_RETURN(const DataType to, output_type(*ctx.attrs));
  GRAFT_ASSIGN_OR_RETURN(const float out_scale, output_scale(*ctx.attrs, to));
  if (y.dtype() != to) return error(StatusCode::kInternal, "GraftConvInt8: the output is not of type `to`");
  if (x.dtype() != DataType::kInt8 || w.dtype() != DataType::kInt8 || scale.dtype() != DataType::kFloat32 ||
      (b && b->dtype() != DataType::kFloat32) || x.rank() != 4 || w.rank() != 4 || y.rank() != 4)
    return error(StatusCode::kInvalidModel, "GraftConvInt8 needs int8 X and W of rank 4 and a float32 scale and bias");
  const int64_t m = w.dims()[0];
  if (w.dims()[3] != x.dims()[3] || y.dims()[0] != x.dims()[0] || y.dims()[3] != m || scale.numel() != m ||
      (b && b->numel() != m) || (z && z->dims() != y.dims()))
    return error(StatusCode::kInvalidModel, "GraftConvInt8: X, W, the scale, the bias, Z and Y disagree in shape");
  // The integer sums through the builtin Conv's reference in float64: it sums in double, exact for
  // integers below 2^53 (each product is at most 2^14, and there are fewer than 2^31 of them).
  const Tensor xd = Tensor::from_doubles(DataType::kFloat64, x.dims(), cpu::load_doubles(x));
  const Tensor wd = Tensor::from_doubles(DataType::kFloat64, w.dims(), cpu::load_doubles(w));
  Tensor sums = Tensor::empty(DataType::kFloat64, y.dims());
  GRAFT_RETURN_IF_ERROR(conv_reference(ctx, true, xd, wd, nullptr, &sums));
  const auto* sp = static_cast<const float*>(scale.data());
  const auto* bp = b ? static_cast<const float*>(b->data()) : nullptr;
  for (int64_t at = 0; at < y.numel(); ++at) {
    const int64_t co = at % m;
    float v = std::fma(static_cast<float>(sums.get(at)), sp[co], bp ? bp[co] : 0.f);
    if (z) v = v + static_cast<float>(z->get(at));
    if (act.kind == ConvActivation::kRelu) v = v > 0.f ? v : 0.f;
    if (act.kind == ConvActivation::kClip) v = v < act.lo ? act.lo : (v > act.hi ? act.hi : v);
    if (to == DataType::kInt8) v = std::fmin(std::fmax(std::nearbyint(v / out_scale), -128.f), 127.f);
    y.set(at, v);
  }
  return Status::ok();
}

}  // namespace

void append_graft_conv_int8_ops(std::vector<OpEntry>& out) {
  out.push_back(internal_op(OpEntry{"GraftConvInt8", 1, infer_graft_conv_int8, graft_conv_int8_cpu}));
}

}  // namespace graft
