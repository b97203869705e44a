// Schemas of the reductions (ReduceMean/Sum/Max/Min/Prod/SumSquare/L2) and of Softmax, LogSoftmax
// and LayerNormalization, which
// reduce along axes too.
//
// Axes come from an attribute before opset 13 (ReduceSum) / 18 (the others) and from an
// optional second input after; graft accepts whichever the node carries. Softmax before opset 13
// coerces its input to 2-D at `axis` (default 1); from 13 it normalizes one axis (default -1).
#include <algorithm>

#include "ops/infer_util.h"
#include "backends/cpu/reduce.h"
#include "ops/operator.h"

namespace graft {
namespace {

Status check_float_input(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return ctx.fail("required input ", static_cast<int64_t>(i), " is missing");
  if (!dtype_is_float(ctx.input(i).dtype))
    return error(StatusCode::kUnsupported, "input ", static_cast<int64_t>(i), " has dtype ",
                 dtype_name(ctx.input(i).dtype), "; ", ctx.node().op_type, " supports float types only");
  return Status::ok();
}

Status infer_reduce(InferContext& ctx, bool allow_int) {
  if (!ctx.has_input(0)) return ctx.fail("required input 0 is missing");
  const TensorDesc& x = ctx.input(0);
  if (!dtype_is_float(x.dtype) && !(allow_int && dtype_is_integer(x.dtype)))
    return error(StatusCode::kUnsupported, "input 0 has dtype ", dtype_name(x.dtype), "; ", ctx.node().op_type,
                 " supports float", allow_int ? " and integer" : "", " types");
  return infer::infer_reduce_shape(ctx, /*axes_int64_only=*/false);
}

Status infer_reduce_float(InferContext& ctx) { return infer_reduce(ctx, /*allow_int=*/false); }
Status infer_reduce_any(InferContext& ctx) { return infer_reduce(ctx, /*allow_int=*/true); }

Status infer_softmax(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_float_input(ctx, 0));
  auto axis = ctx.attrs().get_int("axis", ctx.opset() < 13 ? 1 : -1);
  if (!axis) return Status(axis.status()).with_attribute("axis");
  if (ctx.input(0).shape && ctx.input(0).rank() > 0) {
    auto a = normalize_axis(axis.value(), ctx.input(0).rank());
    if (!a) return Status(a.status()).with_attribute("axis");
  }
  ctx.set_output(0, ctx.input(0));
  return Status::ok();
}

Status infer_layer_norm(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_float_input(ctx, 0));
  GRAFT_RETURN_IF_ERROR(check_float_input(ctx, 1));
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

namespace infer {

Status infer_reduce_shape(InferContext& ctx, bool axes_int64_only) {
  const TensorDesc& x = ctx.input(0);
  auto keepdims = ctx.attrs().get_int("keepdims", 1);
  if (!keepdims) return Status(keepdims.status()).with_attribute("keepdims");
  const bool axes_present = ctx.has_input(1);
  if (axes_present && (axes_int64_only ? ctx.input(1).dtype != DataType::kInt64 : !dtype_is_integer(ctx.input(1).dtype)))
    return ctx.fail("the axes input must be int64, got ", dtype_name(ctx.input(1).dtype));
  if (!x.shape) {
    ctx.set_output(0, [&] { TensorDesc d; d.dtype = x.dtype; return d; }());
    return Status::ok();
  }
  const Shape& in = *x.shape;
  std::optional<std::vector<int64_t>> axes_in;
  if (axes_present)
    if (const Tensor* t = ctx.input_value(1)) axes_in = t->to_int64_vector();
  GRAFT_ASSIGN_OR_RETURN(ReduceAxes ra,
                         resolve_reduce_axes(ctx.attrs(), static_cast<int64_t>(in.size()), axes_present, axes_in));
  TensorDesc out;
  out.dtype = x.dtype;
  if (!ra.known) {
    // Axes only known at run time: with keepdims the rank survives, each dim is 1 or unchanged.
    if (keepdims.value()) {
      Shape s;
      for (size_t d = 0; d < in.size(); ++d) s.push_back(in[d] == 1 ? Dim(1) : ctx.unknown_dim());
      out.shape = s;
    }
    ctx.set_output(0, out);
    return Status::ok();
  }
  if (ra.noop) {
    ctx.set_output(0, x);
    return Status::ok();
  }
  Shape s;
  for (size_t d = 0; d < in.size(); ++d) {
    bool reduced = ra.axes.empty() ||
                   std::find(ra.axes.begin(), ra.axes.end(), static_cast<int64_t>(d)) != ra.axes.end();
    if (!reduced) s.push_back(in[d]);
    else if (keepdims.value()) s.push_back(Dim(1));
  }
  out.shape = s;
  ctx.set_output(0, out);
  return Status::ok();
}

}  // namespace infer

void append_reduce_ops(std::vector<OpEntry>& out) {
  const std::vector<OpEntry> ops = {
      {"ReduceMean", 11, infer_reduce_any, cpu::reduce_mean},
      keeps_float32({"ReduceSum", 11, infer_reduce_any, cpu::reduce_sum}),
      {"ReduceMax", 11, infer_reduce_any, cpu::reduce_max},
      {"ReduceMin", 11, infer_reduce_any, cpu::reduce_min},
      keeps_float32({"ReduceProd", 11, infer_reduce_any, cpu::reduce_prod}),
      keeps_float32({"ReduceSumSquare", 11, infer_reduce_any, cpu::reduce_sum_square}),
      keeps_float32({"ReduceL2", 11, infer_reduce_float, cpu::reduce_l2}),
      {"Softmax", 11, infer_softmax, cpu::softmax},
      keeps_float32({"LogSoftmax", 11, infer_softmax, cpu::log_softmax}),
      {"LayerNormalization", 17, infer_layer_norm, cpu::layer_normalization},
  };
  out.insert(out.end(), ops.begin(), ops.end());
}

}  // namespace graft
