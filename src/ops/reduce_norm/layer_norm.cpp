// LayerNormalization: the naive CPU reference (in double) and the schema.
#include "ops/reduce_norm/reduce_norm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "backends/cpu/element_traits.h"
#include "backends/cpu/broadcast_walker.h"
#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"  // check_io, bad_dtype
#include "graft/status.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- CPU reference ---------------------------------------------------------------------------------

namespace cpu {

Status layer_normalization(ExecContext& ctx) {
  if (ctx.inputs.size() < 2 || !ctx.inputs[0] || !ctx.inputs[1] || ctx.outputs.empty() || !ctx.outputs[0])
    return error(StatusCode::kInvalidModel, "LayerNormalization needs inputs X and Scale and output Y");
  const Tensor& x = *ctx.inputs[0];
  const Tensor& scale = *ctx.inputs[1];
  const Tensor* bias = ctx.inputs.size() > 2 ? ctx.inputs[2] : nullptr;
  Tensor& y = *ctx.outputs[0];
  Tensor* mean_out = ctx.outputs.size() > 1 ? ctx.outputs[1] : nullptr;
  Tensor* inv_out = ctx.outputs.size() > 2 ? ctx.outputs[2] : nullptr;
  if (!dtype_is_float(x.dtype()))
    return error(StatusCode::kUnsupported, "LayerNormalization of dtype ", dtype_name(x.dtype()),
                 " is not supported");
  static const AttributeMap kEmpty;
  const AttributeMap& attrs = ctx.attrs ? *ctx.attrs : kEmpty;
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, attrs.get_int("axis", -1));
  GRAFT_ASSIGN_OR_RETURN(float eps, attrs.get_float("epsilon", 1e-5f));
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_attr, x.rank()));
  std::vector<int64_t> norm_dims(x.dims().begin() + axis, x.dims().end());
  const int64_t inner = numel_of(norm_dims);
  const int64_t outer = inner ? x.numel() / inner : 0;
  GRAFT_CHECK(y.numel() == x.numel());
  // Offsets of Scale and B for each position of the normalized block (they broadcast to it).
  std::vector<int64_t> scale_off(inner), bias_off(inner, -1);
  {
    std::vector<std::vector<int64_t>> operands{scale.dims()};
    if (bias) operands.push_back(bias->dims());
    GRAFT_ASSIGN_OR_RETURN(detail::BroadcastWalker w, detail::BroadcastWalker::make(norm_dims, operands));
    for (int64_t k = 0; k < inner; ++k, w.next()) {
      scale_off[k] = w.offset(0);
      if (bias) bias_off[k] = w.offset(1);
    }
  }
  for (int64_t o = 0; o < outer; ++o) {
    const int64_t base = o * inner;
    double mean = 0;
    for (int64_t k = 0; k < inner; ++k) mean += x.get(base + k);
    mean /= static_cast<double>(inner);
    double var = 0;
    for (int64_t k = 0; k < inner; ++k) {
      double d = x.get(base + k) - mean;
      var += d * d;
    }
    var /= static_cast<double>(inner);
    const double inv = 1.0 / std::sqrt(var + static_cast<double>(eps));
    for (int64_t k = 0; k < inner; ++k) {
      double v = (x.get(base + k) - mean) * inv * scale.get(scale_off[k]);
      if (bias) v += bias->get(bias_off[k]);
      y.set(base + k, v);
    }
    if (mean_out) mean_out->set(o, mean);
    if (inv_out) inv_out->set(o, inv);
  }
  return Status::ok();
}

}  // namespace cpu

// ---- schema ----------------------------------------------------------------------------------------

namespace {

Status infer_layer_norm(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(infer::require_float_input(ctx, 0));
  GRAFT_RETURN_IF_ERROR(infer::require_float_input(ctx, 1));
  const TensorDesc& x = ctx.input(0);
  auto axis = ctx.attrs().get_int("axis", -1);
  if (!axis) return Status(axis.status()).with_attribute("axis");
  auto eps = ctx.attrs().get_float("epsilon", 1e-5f);
  if (!eps) return Status(eps.status()).with_attribute("epsilon");
  auto stash = ctx.attrs().get_int("stash_type", 1);
  if (!stash) return Status(stash.status()).with_attribute("stash_type");
  DataType stash_t;
  if (!dtype_from_onnx_numeric(static_cast<int32_t>(stash.value()), &stash_t) || !dtype_is_float(stash_t))
    return Status(ctx.fail("must be a float element type, got ", stash.value())).with_attribute("stash_type");
  for (size_t i = 1; i < std::min<size_t>(3, ctx.num_inputs()); ++i)
    if (ctx.has_input(i) && ctx.input(i).dtype != x.dtype)
      return ctx.fail("input ", static_cast<int64_t>(i), " has dtype ", dtype_name(ctx.input(i).dtype),
                      " but X has ", dtype_name(x.dtype));
  ctx.set_output(0, x);
  if (!x.shape) {
    for (size_t o = 1; o < ctx.num_outputs(); ++o) ctx.set_output(o, [&] { TensorDesc d; d.dtype = stash_t; return d; }());
    return Status::ok();
  }
  auto a = normalize_axis(axis.value(), x.rank());
  if (!a) return Status(a.status()).with_attribute("axis");
  // Scale and B must broadcast onto the normalized dims X.shape[axis:].
  Shape norm(x.shape->begin() + a.value(), x.shape->end());
  for (size_t i = 1; i < std::min<size_t>(3, ctx.num_inputs()); ++i) {
    if (!ctx.has_input(i) || !ctx.input(i).shape) continue;
    auto b = broadcast_shapes(norm, *ctx.input(i).shape);
    if (!b || b.value().size() != norm.size())
      return ctx.fail(i == 1 ? "Scale" : "B", " of shape ", shape_to_string(*ctx.input(i).shape),
                      " does not broadcast to the normalized shape ", shape_to_string(norm));
  }
  // Mean and InvStdDev keep X's rank with the normalized dims set to 1.
  Shape stat(x.shape->begin(), x.shape->begin() + a.value());
  stat.resize(x.shape->size(), Dim(1));
  for (size_t o = 1; o < std::min<size_t>(3, ctx.num_outputs()); ++o) ctx.set_output(o, TensorDesc(stash_t, stat));
  return Status::ok();
}

}  // namespace

void append_layer_norm_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"LayerNormalization", 17, infer_layer_norm, cpu::layer_normalization});
}

}  // namespace graft
