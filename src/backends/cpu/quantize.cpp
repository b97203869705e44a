#include "backends/cpu/quantize.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "backends/cpu/nn.h"
#include "backends/cpu/unary_kernel.h"

namespace graft::cpu {
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

}  // namespace graft::cpu
