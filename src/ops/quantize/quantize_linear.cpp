// QuantizeLinear and DequantizeLinear: the scale/zero-point layout (quantize.h), the CPU references
// and the schemas. The two stay in one file because they are one op read both ways: the same
// scale/zero-point layout (quant_layout, quant_entry, check_scale_layout), per-tensor, per-axis or
// blocked alike. CUDA: quantize_linear.cu.
#include "ops/quantize/quantize.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"
#include "core/float8.h"
#include "graft/status.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- attributes and shapes (quantize.h) -----------------------------------------------------
// See quantize.h.

Result<int64_t> block_size_of(const AttributeMap& attrs) {
  auto bs = attrs.get_int("block_size", 0);
  if (!bs) return Status(bs.status()).with_attribute("block_size");
  if (bs.value() < 0) {
    Status st = error(StatusCode::kInvalidModel, "must be 0 (not blocked) or positive, got ", bs.value());
    st.with_attribute("block_size");
    return st;
  }
  return bs.value();
}

Result<QuantLayout> quant_layout(const AttributeMap& attrs, const std::vector<int64_t>& x_dims,
                                 const std::vector<int64_t>& scale_dims, const std::vector<int64_t>* zp_dims) {
  auto axis_attr = attrs.get_int("axis", 1);
  if (!axis_attr) return Status(axis_attr.status()).with_attribute("axis");
  GRAFT_ASSIGN_OR_RETURN(const int64_t block, block_size_of(attrs));
  if (block == 0 && scale_dims.size() > 1)
    return error(StatusCode::kInvalidModel, "the scale must be a scalar or 1-D, got ", ints_to_string(scale_dims));
  if (zp_dims && *zp_dims != scale_dims)
    return error(StatusCode::kInvalidModel, "the zero point ", ints_to_string(*zp_dims), " must have the scale's shape ",
                 ints_to_string(scale_dims));
  QuantLayout l;
  const int64_t n = scale_dims.empty() ? 1 : scale_dims[0];
  if (block == 0 && n == 1) return l;  // per-tensor (a one-element 1-D scale included, as ONNX Runtime reads it)
  auto axis = normalize_axis(axis_attr.value(), static_cast<int64_t>(x_dims.size()));
  if (!axis) return Status(axis.status()).with_attribute("axis");
  l.axis = axis.value();
  for (size_t d = static_cast<size_t>(l.axis) + 1; d < x_dims.size(); ++d) l.inner *= x_dims[d];
  if (block > 0) {
    // Blocked: the scale is x with axis `axis` cut into blocks of B (the last one may be short).
    l.block = block;
    l.axis_len = x_dims[static_cast<size_t>(l.axis)];
    l.blocks = l.axis_len == 0 ? 0 : (l.axis_len - 1) / block + 1;
    std::vector<int64_t> want = x_dims;
    want[static_cast<size_t>(l.axis)] = l.blocks;
    if (scale_dims != want) {
      Status st = error(StatusCode::kInvalidModel, "the blocked scale ", ints_to_string(scale_dims), " must be ",
                        ints_to_string(want), ": x ", ints_to_string(x_dims), " with axis ", l.axis,
                        " in blocks of ", block);
      st.with_attribute("block_size");
      return st;
    }
    return l;
  }
  if (x_dims[static_cast<size_t>(l.axis)] != n)
    return error(StatusCode::kInvalidModel, "the per-axis scale ", ints_to_string(scale_dims), " must have one entry per index of axis ",
                 l.axis, " of ", ints_to_string(x_dims));
  l.channels = n;
  return l;
}

Status check_float8_zero_point(const Tensor& zp, const char* what) {
  const auto* bytes = static_cast<const uint8_t*>(zp.data());
  for (int64_t i = 0, n = zp.numel(); i < n; ++i)
    if (bytes[i] != 0)
      return error(StatusCode::kInvalidModel, "the ", dtype_name(zp.dtype()), " zero point '", what,
                   "' must be 0 (entry ", i, " is ", zp.get(i),
                   "): ONNX defines no zero point other than 0 for the 8-bit float types");
  return Status::ok();
}

// ---- CPU reference --------------------------------------------------------------------------
// QuantizeLinear, DequantizeLinear (per-tensor, per-axis and blocked, int8/uint8, int16/uint16,
// int4/uint4 and the four 8-bit floats, int32 for DequantizeLinear's input).
//
// Quantization divides and rounds in float32, as ONNX's reference and ONNX Runtime do (so ties land
// where theirs do): q = saturate(round_half_even(x / scale) + zero_point); NaN quantizes to the zero
// point. Into an 8-bit float, x / scale (float32) is converted as Cast converts (float8.h: nearest
// even, saturating unless saturate=0). Dequantization is (x - zero_point) * scale, computed in double
// and rounded once (an 8-bit float times a float32 or float16 scale is exact in double, so this is
// the reference's float32 product too).

namespace cpu {

Result<QRange> range_of(const ExecContext& ctx, DataType t) {
  QRange r{};
  if (!quant_bounds(t, &r.lo, &r.hi)) return bad_dtype(ctx, t);
  return r;
}

Status quantize_linear(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  const Tensor& x = *ctx.inputs[0];
  const Tensor& scale = *ctx.inputs[1];
  const Tensor* zp = ctx.inputs.size() > 2 ? ctx.inputs[2] : nullptr;
  Tensor& y = *ctx.outputs[0];
  GRAFT_RETURN_IF_ERROR(require_float_tensor(&scale, "y_scale"));
  if (!dtype_is_float(x.dtype()) && x.dtype() != DataType::kInt32) return bad_dtype(ctx, x.dtype());
  GRAFT_ASSIGN_OR_RETURN(QuantLayout l, quant_layout(attrs_of(ctx), x.dims(), scale.dims(), zp ? &zp->dims() : nullptr));
  if (zp && zp->dtype() != y.dtype())
    return error(StatusCode::kInvalidModel, "QuantizeLinear: zero point dtype ", dtype_name(zp->dtype()),
                 " differs from the output's ", dtype_name(y.dtype()));
  GRAFT_CHECK(y.numel() == x.numel());
  if (dtype_is_float8(y.dtype())) {
    if (zp) GRAFT_RETURN_IF_ERROR(check_float8_zero_point(*zp, "y_zero_point"));
    GRAFT_ASSIGN_OR_RETURN(const int64_t saturate, attrs_of(ctx).get_int("saturate", 1));
    const auto format = static_cast<float8::Format>(y.dtype());
    auto* out = static_cast<uint8_t*>(y.data());
    for (int64_t i = 0, n = x.numel(); i < n; ++i) {
      const float s = static_cast<float>(scale.get(quant_entry(l, i)));
      out[i] = float8::from_double(format, static_cast<float>(x.get(i)) / s, saturate != 0);
    }
    return Status::ok();
  }
  GRAFT_ASSIGN_OR_RETURN(QRange r, range_of(ctx, y.dtype()));
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    const int64_t c = quant_entry(l, i);
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
  if (std::find(kDequantizeInputTypes.begin(), kDequantizeInputTypes.end(), x.dtype()) == kDequantizeInputTypes.end())
    return bad_dtype(ctx, x.dtype());
  GRAFT_ASSIGN_OR_RETURN(QuantLayout l, quant_layout(attrs_of(ctx), x.dims(), scale.dims(), zp ? &zp->dims() : nullptr));
  if (zp && zp->dtype() != x.dtype())
    return error(StatusCode::kInvalidModel, "DequantizeLinear: zero point dtype ", dtype_name(zp->dtype()),
                 " differs from x's ", dtype_name(x.dtype()));
  GRAFT_CHECK(y.numel() == x.numel() && dtype_is_float(y.dtype()));
  if (zp && dtype_is_float8(zp->dtype())) {
    GRAFT_RETURN_IF_ERROR(check_float8_zero_point(*zp, "x_zero_point"));
    zp = nullptr;  // all zero
  }
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    const int64_t c = quant_entry(l, i);
    y.set(i, (x.get(i) - (zp ? zp->get(c) : 0.0)) * scale.get(c));
  }
  return Status::ok();
}

}  // namespace cpu

// ---- schema: inference and the table rows ---------------------------------------------------
// QuantizeLinear and DequantizeLinear (opset 10 on;
// per-axis scales from 13; the scale's dtype as DequantizeLinear's output, the 8-bit floats and
// saturate from 19; output_dtype, blocked scales (block_size), the 4-bit and 16-bit types from 21).
// graft has every quantized type of these ops (kQuantizedTypes), and int32 as DequantizeLinear's
// input.

namespace {

using namespace infer;

// The scale (input 1) and optional zero point (input 2) against x (input 0), where shapes are
// static; axis and shape errors as the kernel gives them.
Status check_scale_layout(const InferContext& ctx) {
  const TensorDesc& x = ctx.input(0);
  const TensorDesc& s = ctx.input(1);
  GRAFT_ASSIGN_OR_RETURN(const int64_t block, block_size_of(ctx.attrs()));
  if (block == 0 && s.shape && s.rank() > 1) return ctx.fail("the scale must be a scalar or 1-D, got ", s.to_string());
  if (block > 0 && s.shape && x.shape && s.rank() != x.rank())
    return Status(ctx.fail("the blocked scale ", s.to_string(), " must have x's rank ", x.rank()))
        .with_attribute("block_size");
  auto axis = ctx.attrs().get_int("axis", 1);
  if (!axis) return Status(axis.status()).with_attribute("axis");
  const TensorDesc* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (!x.shape || !s.shape || !shape_is_static(*x.shape) || !shape_is_static(*s.shape)) return Status::ok();
  if (zp && (!zp->shape || !shape_is_static(*zp->shape))) return Status::ok();
  std::vector<int64_t> zp_dims;
  if (zp) zp_dims = shape_values(*zp->shape);
  auto l = quant_layout(ctx.attrs(), shape_values(*x.shape), shape_values(*s.shape), zp ? &zp_dims : nullptr);
  if (!l) return l.status().attribute().empty() ? ctx.fail(l.status().message()) : l.status();
  return Status::ok();
}

// An 8-bit float zero point (input 2) known at build time must be zero (check_float8_zero_point), so
// a model with another fails at build, naming the node, not at its first run.
Status check_known_float8_zero_point(const InferContext& ctx, const char* what) {
  const Tensor* zp = ctx.has_input(2) ? ctx.input_value(2) : nullptr;
  if (!zp || !dtype_is_float8(zp->dtype())) return Status::ok();
  Status st = check_float8_zero_point(*zp, what);
  return st ? st : ctx.fail(st.message());
}

Status infer_quantize_linear(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, {kF32, kF16, kBF16, kI32}));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, kFloatTypes));
  auto sat = ctx.attrs().get_int("saturate", 1);  // opset 19: read for the 8-bit float outputs only
  if (!sat) return Status(sat.status()).with_attribute("saturate");
  // The output's type: the zero point's, else output_dtype (opset 21), else uint8.
  DataType out = kU8;
  if (ctx.attrs().has("output_dtype")) {
    auto odt = ctx.attrs().get_int("output_dtype", 0);
    if (!odt) return Status(odt.status()).with_attribute("output_dtype");
    if (odt.value() != 0) {
      DataType t;
      if (odt.value() < INT32_MIN || odt.value() > INT32_MAX || !dtype_from_onnx(static_cast<int32_t>(odt.value()), &t) ||
          !is_quantized_type(t))
        return Status(error(StatusCode::kUnsupported, "ONNX element type ", odt.value(),
                            " is not supported (graft quantizes to uint8, int8, uint16, int16, uint4, int4 and the four 8-bit floats)"))
            .with_attribute("output_dtype");
      out = t;
    }
  }
  if (ctx.has_input(2)) {
    GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 2, kQuantizedTypes));
    if (ctx.attrs().has("output_dtype") && ctx.attrs().get_int("output_dtype", 0).value() != 0 &&
        ctx.input(2).dtype != out)
      return Status(ctx.fail("is ", dtype_name(out), " but the zero point is ", dtype_name(ctx.input(2).dtype)))
          .with_attribute("output_dtype");
    out = ctx.input(2).dtype;
    GRAFT_RETURN_IF_ERROR(check_known_float8_zero_point(ctx, "y_zero_point"));
  }
  GRAFT_RETURN_IF_ERROR(check_scale_layout(ctx));
  ctx.set_output(0, desc_of(out, ctx.input(0).shape));
  return Status::ok();
}

Status infer_dequantize_linear(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kDequantizeInputTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, kFloatTypes));
  if (ctx.has_input(2) && ctx.input(2).dtype != ctx.input(0).dtype)
    return ctx.fail("the zero point has dtype ", dtype_name(ctx.input(2).dtype), " but x has ",
                    dtype_name(ctx.input(0).dtype));
  GRAFT_RETURN_IF_ERROR(check_known_float8_zero_point(ctx, "x_zero_point"));
  GRAFT_RETURN_IF_ERROR(check_scale_layout(ctx));
  // float32 before opset 19, where the scale was float32 only; the scale's type from 19 on.
  ctx.set_output(0, desc_of(ctx.input(1).dtype, ctx.input(0).shape));
  return Status::ok();
}

}  // namespace

void append_quantize_linear_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"QuantizeLinear", 10, infer_quantize_linear, cpu::quantize_linear});
  out.push_back(OpEntry{"DequantizeLinear", 10, infer_dequantize_linear, cpu::dequantize_linear});
}

}  // namespace graft
