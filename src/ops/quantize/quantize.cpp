// The quantize family's definitions and CPU references (CUDA: quantize.cu).
#include "ops/quantize/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"
#include "graft/status.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- attributes and shapes (quantize.h) -----------------------------------------------------
// See quantize.h.

Status check_no_block_size(const AttributeMap& attrs) {
  auto bs = attrs.get_int("block_size", 0);
  if (!bs) return Status(bs.status()).with_attribute("block_size");
  if (bs.value() != 0) {
    Status st = error(StatusCode::kUnsupported, "blocked quantization (block_size ", bs.value(), ") is not supported");
    st.with_attribute("block_size");
    return st;
  }
  return Status::ok();
}

Result<QuantLayout> quant_layout(const AttributeMap& attrs, const std::vector<int64_t>& x_dims,
                                 const std::vector<int64_t>& scale_dims, const std::vector<int64_t>* zp_dims) {
  auto axis_attr = attrs.get_int("axis", 1);
  if (!axis_attr) return Status(axis_attr.status()).with_attribute("axis");
  if (scale_dims.size() > 1)
    return error(StatusCode::kInvalidModel, "the scale must be a scalar or 1-D, got ", ints_to_string(scale_dims));
  if (zp_dims && *zp_dims != scale_dims)
    return error(StatusCode::kInvalidModel, "the zero point ", ints_to_string(*zp_dims), " must have the scale's shape ",
                 ints_to_string(scale_dims));
  QuantLayout l;
  const int64_t n = scale_dims.empty() ? 1 : scale_dims[0];
  if (n == 1) return l;  // per-tensor (a one-element 1-D scale included, as ONNX Runtime reads it)
  auto axis = normalize_axis(axis_attr.value(), static_cast<int64_t>(x_dims.size()));
  if (!axis) return Status(axis.status()).with_attribute("axis");
  l.axis = axis.value();
  if (x_dims[static_cast<size_t>(l.axis)] != n)
    return error(StatusCode::kInvalidModel, "the per-axis scale ", ints_to_string(scale_dims), " must have one entry per index of axis ",
                 l.axis, " of ", ints_to_string(x_dims));
  l.channels = n;
  for (size_t d = static_cast<size_t>(l.axis) + 1; d < x_dims.size(); ++d) l.inner *= x_dims[d];
  return l;
}

// ---- CPU reference --------------------------------------------------------------------------
// QuantizeLinear, DequantizeLinear (per-tensor and per-axis, int8/uint8, int32 for
// DequantizeLinear's input) and DynamicQuantizeLinear (uint8).
//
// Quantization divides and rounds in float32, as ONNX's reference and ONNX Runtime do (so ties land
// where theirs do): q = saturate(round_half_even(x / scale) + zero_point); NaN quantizes to the zero
// point. Dequantization is (x - zero_point) * scale, computed in double and rounded once.

namespace cpu {

namespace {

struct QRange {
  float lo, hi;
};
Result<QRange> range_of(const ExecContext& ctx, DataType t) {
  switch (t) {
    case DataType::kUInt8: return QRange{0.0f, 255.0f};
    case DataType::kInt8: return QRange{-128.0f, 127.0f};
    default: return bad_dtype(ctx, t);
  }
}

// round_half_even(v) + zp, saturated to [lo, hi], in float; NaN gives the zero point (clamped).
float quantize_one(float v, float zp, QRange r) {
  float q = std::isnan(v) ? zp : std::nearbyint(v) + zp;
  return std::min(std::max(q, r.lo), r.hi);
}

}  // namespace

Status quantize_linear(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  const Tensor& x = *ctx.inputs[0];
  const Tensor& scale = *ctx.inputs[1];
  const Tensor* zp = ctx.inputs.size() > 2 ? ctx.inputs[2] : nullptr;
  Tensor& y = *ctx.outputs[0];
  GRAFT_RETURN_IF_ERROR(require_float_tensor(&scale, "y_scale"));
  if (!dtype_is_float(x.dtype()) && x.dtype() != DataType::kInt32) return bad_dtype(ctx, x.dtype());
  GRAFT_RETURN_IF_ERROR(check_no_block_size(attrs_of(ctx)));
  GRAFT_ASSIGN_OR_RETURN(QuantLayout l, quant_layout(attrs_of(ctx), x.dims(), scale.dims(), zp ? &zp->dims() : nullptr));
  if (zp && zp->dtype() != y.dtype())
    return error(StatusCode::kInvalidModel, "QuantizeLinear: zero point dtype ", dtype_name(zp->dtype()),
                 " differs from the output's ", dtype_name(y.dtype()));
  GRAFT_CHECK(y.numel() == x.numel());
  GRAFT_ASSIGN_OR_RETURN(QRange r, range_of(ctx, y.dtype()));
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    const int64_t c = l.channels == 1 ? 0 : (i / l.inner) % l.channels;
    const float s = static_cast<float>(scale.get(c));
    const float z = zp ? static_cast<float>(zp->get(c)) : 0.0f;
    y.set(i, quantize_one(static_cast<float>(x.get(i)) / s, z, r));
  }
  return Status::ok();
}

Status dequantize_linear(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  const Tensor& x = *ctx.inputs[0];
  const Tensor& scale = *ctx.inputs[1];
  const Tensor* zp = ctx.inputs.size() > 2 ? ctx.inputs[2] : nullptr;
  Tensor& y = *ctx.outputs[0];
  GRAFT_RETURN_IF_ERROR(require_float_tensor(&scale, "x_scale"));
  if (x.dtype() != DataType::kUInt8 && x.dtype() != DataType::kInt8 && x.dtype() != DataType::kInt32)
    return bad_dtype(ctx, x.dtype());
  GRAFT_RETURN_IF_ERROR(check_no_block_size(attrs_of(ctx)));
  GRAFT_ASSIGN_OR_RETURN(QuantLayout l, quant_layout(attrs_of(ctx), x.dims(), scale.dims(), zp ? &zp->dims() : nullptr));
  if (zp && zp->dtype() != x.dtype())
    return error(StatusCode::kInvalidModel, "DequantizeLinear: zero point dtype ", dtype_name(zp->dtype()),
                 " differs from x's ", dtype_name(x.dtype()));
  GRAFT_CHECK(y.numel() == x.numel() && dtype_is_float(y.dtype()));
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    const int64_t c = l.channels == 1 ? 0 : (i / l.inner) % l.channels;
    y.set(i, (x.get(i) - (zp ? zp->get(c) : 0.0)) * scale.get(c));
  }
  return Status::ok();
}

// GraftQuantizeDequantize (the fold of a QuantizeLinear -> DequantizeLinear pair over a scalar
// scale and zero point, fold_quantize_dequantize_pairs): QuantizeLinear's steps, then
// DequantizeLinear's, element by element, so the result equals the pair's to the bit and the 8-bit
// values are never stored. Inputs x (float), scale (float scalar), zero_point (uint8 or int8 scalar:
// its dtype is the pair's integer type); y has x's dtype.
Status quantize_dequantize(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 3));
  const Tensor& x = *ctx.inputs[0];
  const Tensor& scale = *ctx.inputs[1];
  const Tensor& zp = *ctx.inputs[2];
  Tensor& y = *ctx.outputs[0];
  GRAFT_RETURN_IF_ERROR(require_float_tensor(&scale, "scale"));
  if (!dtype_is_float(x.dtype())) return bad_dtype(ctx, x.dtype());
  if (scale.numel() != 1 || zp.numel() != 1)
    return error(StatusCode::kInvalidModel, "GraftQuantizeDequantize: the scale and zero point must be scalars");
  GRAFT_ASSIGN_OR_RETURN(QRange r, range_of(ctx, zp.dtype()));
  GRAFT_CHECK(y.numel() == x.numel() && y.dtype() == x.dtype());
  const float s = static_cast<float>(scale.get(0));
  const float z = static_cast<float>(zp.get(0));
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    const float q = quantize_one(static_cast<float>(x.get(i)) / s, z, r);
    y.set(i, (static_cast<double>(q) - z) * static_cast<double>(s));
  }
  return Status::ok();
}

Status dynamic_quantize_linear(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  const Tensor& x = *ctx.inputs[0];
  if (x.dtype() != DataType::kFloat32) return bad_dtype(ctx, x.dtype());
  if (ctx.outputs.size() < 3 || !ctx.outputs[1] || !ctx.outputs[2])
    return error(StatusCode::kInternal, "DynamicQuantizeLinear needs its three outputs (y, y_scale, y_zero_point)");
  Tensor& y = *ctx.outputs[0];
  Tensor& y_scale = *ctx.outputs[1];
  Tensor& y_zp = *ctx.outputs[2];
  GRAFT_CHECK(y.numel() == x.numel() && y.dtype() == DataType::kUInt8 && y_scale.numel() == 1 && y_zp.numel() == 1);
  // The range always includes 0, so 0 quantizes exactly. NaNs are left out of it.
  float lo = 0.0f, hi = 0.0f;
  const float* xp = static_cast<const float*>(x.data());
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    lo = std::fmin(lo, xp[i]);
    hi = std::fmax(hi, xp[i]);
  }
  const QRange r{0.0f, 255.0f};
  const float scale = (hi - lo) / 255.0f;
  // An all-zero input has scale 0: graft gives zero point 0 and zeros (dequantizing to the input)
  // where the formula would divide 0 by 0.
  const float zp = scale == 0.0f ? 0.0f : quantize_one((0.0f - lo) / scale, 0.0f, r);
  y_scale.set(0, scale);
  y_zp.set(0, zp);
  for (int64_t i = 0, n = x.numel(); i < n; ++i) y.set(i, scale == 0.0f ? 0.0 : quantize_one(xp[i] / scale, zp, r));
  return Status::ok();
}

}  // namespace cpu

// ---- schema: inference and the table rows ---------------------------------------------------
// QuantizeLinear and DequantizeLinear (opset 10 on;
// per-axis scales from 13; the scale's dtype as DequantizeLinear's output from 19; output_dtype and
// block_size from 21, blocked quantization refused), and DynamicQuantizeLinear (11). graft has the
// 8-bit integer types of these ops (uint8, int8) and int32 as DequantizeLinear's input; float8,
// int4, int16 and uint16 are refused at import, where graft meets the element type.

namespace {

using namespace infer;

// The scale (input 1) and optional zero point (input 2) against x (input 0), where shapes are
// static; axis and shape errors as the kernel gives them.
Status check_scale_layout(const InferContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  const TensorDesc& s = ctx.input(1);
  if (s.shape && s.rank() > 1) return ctx.fail("the scale must be a scalar or 1-D, got ", s.to_string());
  auto axis = ctx.attrs().get_int("axis", 1);
  if (!axis) return Status(axis.status()).with_attribute("axis");
  GRAFT_RETURN_IF_ERROR(check_no_block_size(ctx.attrs()));
  const TensorDesc* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (!x.shape || !s.shape || !shape_is_static(*x.shape) || !shape_is_static(*s.shape)) return Status::ok();
  if (zp && (!zp->shape || !shape_is_static(*zp->shape))) return Status::ok();
  std::vector<int64_t> zp_dims;
  if (zp) zp_dims = shape_values(*zp->shape);
  auto l = quant_layout(ctx.attrs(), shape_values(*x.shape), shape_values(*s.shape), zp ? &zp_dims : nullptr);
  if (!l) return l.status().attribute().empty() ? ctx.fail(l.status().message()) : l.status();
  return Status::ok();
}

Status infer_quantize_linear(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, {kF32, kF16, kBF16, kI32}));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, kFloatTypes));
  auto sat = ctx.attrs().get_int("saturate", 1);  // opset 19: float8 outputs only, which graft lacks
  if (!sat) return Status(sat.status()).with_attribute("saturate");
  // The output's type: the zero point's, else output_dtype (opset 21), else uint8.
  DataType out = kU8;
  if (ctx.attrs().has("output_dtype")) {
    auto odt = ctx.attrs().get_int("output_dtype", 0);
    if (!odt) return Status(odt.status()).with_attribute("output_dtype");
    if (odt.value() != 0) {
      DataType t;
      if (odt.value() < INT32_MIN || odt.value() > INT32_MAX || !dtype_from_onnx_numeric(static_cast<int32_t>(odt.value()), &t) ||
          (t != kU8 && t != kI8))
        return Status(error(StatusCode::kUnsupported, "ONNX element type ", odt.value(),
                            " is not supported (graft quantizes to uint8 and int8)"))
            .with_attribute("output_dtype");
      out = t;
    }
  }
  if (ctx.has_input(2)) {
    GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 2, {kU8, kI8}));
    if (ctx.attrs().has("output_dtype") && ctx.attrs().get_int("output_dtype", 0).value() != 0 &&
        ctx.input(2).dtype != out)
      return Status(ctx.fail("is ", dtype_name(out), " but the zero point is ", dtype_name(ctx.input(2).dtype)))
          .with_attribute("output_dtype");
    out = ctx.input(2).dtype;
  }
  GRAFT_RETURN_IF_ERROR(check_scale_layout(ctx));
  ctx.set_output(0, desc_of(out, ctx.input(0).shape));
  return Status::ok();
}

Status infer_dequantize_linear(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, {kU8, kI8, kI32}));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, kFloatTypes));
  if (ctx.has_input(2) && ctx.input(2).dtype != ctx.input(0).dtype)
    return ctx.fail("the zero point has dtype ", dtype_name(ctx.input(2).dtype), " but x has ",
                    dtype_name(ctx.input(0).dtype));
  GRAFT_RETURN_IF_ERROR(check_scale_layout(ctx));
  // float32 before opset 19, where the scale was float32 only; the scale's type from 19 on.
  ctx.set_output(0, desc_of(ctx.input(1).dtype, ctx.input(0).shape));
  return Status::ok();
}

Status infer_quantize_dequantize(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, kFloatTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 2, {kU8, kI8}));
  for (int i = 1; i <= 2; ++i) {
    const TensorDesc& d = ctx.input(i);
    if (d.shape && shape_is_static(*d.shape) && numel_of(shape_values(*d.shape)) != 1)
      return ctx.fail(i == 1 ? "the scale" : "the zero point", " must be a scalar, got ", d.to_string());
  }
  ctx.set_output(0, desc_of(ctx.input(0).dtype, ctx.input(0).shape));
  return Status::ok();
}

Status infer_dynamic_quantize_linear(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, {kF32}));
  if (ctx.num_outputs() != 3)
    return ctx.fail("has three outputs (y, y_scale, y_zero_point), the node lists ", static_cast<int64_t>(ctx.num_outputs()));
  ctx.set_output(0, desc_of(kU8, ctx.input(0).shape));
  ctx.set_output(1, desc_of(kF32, Shape{}));
  ctx.set_output(2, desc_of(kU8, Shape{}));
  return Status::ok();
}

}  // namespace

void append_quantize_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"QuantizeLinear", 10, infer_quantize_linear, cpu::quantize_linear});
  out.push_back(OpEntry{"DequantizeLinear", 10, infer_dequantize_linear, cpu::dequantize_linear});
  out.push_back(OpEntry{"DynamicQuantizeLinear", 11, infer_dynamic_quantize_linear, cpu::dynamic_quantize_linear});
  // A folded QuantizeLinear -> DequantizeLinear pair. Per element over a scalar scale and zero point:
  // an NHWC region flows through it.
  out.push_back(internal_op(
      elementwise_unary(OpEntry{"GraftQuantizeDequantize", 1, infer_quantize_dequantize, cpu::quantize_dequantize})));
}

}  // namespace graft
