// Schemas of the ONNX linear quantization ops: QuantizeLinear and DequantizeLinear (opset 10 on;
// per-axis scales from 13; the scale's dtype as DequantizeLinear's output from 19; output_dtype and
// block_size from 21, blocked quantization refused), and DynamicQuantizeLinear (11). graft has the
// 8-bit integer types of these ops (uint8, int8) and int32 as DequantizeLinear's input; float8,
// int4, int16 and uint16 are refused at import, where graft meets the element type. Kernels:
// src/backends/cpu/quantize.cpp, which shares the scale layout check.
#include <string>

#include "backends/cpu/quantize.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {
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
}

}  // namespace graft
