// Schemas of the integer and quantized linear-algebra ops (opset 10): MatMulInteger and ConvInteger
// (int8/uint8 operands with optional zero points, int32 output), QLinearMatMul and QLinearConv
// (operands, scales and zero points in, an int8/uint8 output of the output zero point's dtype).
// Zero points and scales of A and B may be per tensor, per row of A / per column of B; those of a
// conv's weight per tensor or per output channel; the rest per tensor. Kernels:
// src/backends/cpu/integer.cpp, which holds the layout checks both sides run, so a bad zero point
// or scale is refused at build time where the shapes are known, in the kernel's words.
#include <algorithm>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backends/cpu/integer.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {
namespace {

using namespace infer;

const std::vector<DataType> k8Bit{kU8, kI8};
const std::vector<DataType> kScaleTypes{kF32, kF16, kBF16};

// Input i (the spec calls it `role`) is present and of one of `allowed`; errors name the role and
// the value.
Status check_input(const InferContext& ctx, size_t i, const char* role,
                   const std::vector<DataType>& allowed) {
  if (!ctx.has_input(i))
    return ctx.fail("required input ", static_cast<int64_t>(i), " (", role, ") is missing");
  const DataType t = ctx.input(i).dtype;
  if (std::find(allowed.begin(), allowed.end(), t) == allowed.end())
    return error(StatusCode::kUnsupported, "input ", role, " ('", ctx.node().inputs[i]->name, "') has dtype ",
                 dtype_name(t), "; ", ctx.node().op_type, " supports ", dtype_list(allowed));
  return Status::ok();
}

// Input i's dims when its shape is known and static.
std::optional<std::vector<int64_t>> static_dims(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return std::nullopt;
  const TensorDesc& d = ctx.input(i);
  if (!d.shape || !shape_is_static(*d.shape)) return std::nullopt;
  return shape_values(*d.shape);
}

// Optional zero point `zp` (when present) has the dtype of input `of`.
Status check_zero_point_dtype(const InferContext& ctx, size_t zp, const char* zp_name, size_t of,
                              const char* of_name) {
  if (!ctx.has_input(zp)) return Status::ok();
  GRAFT_RETURN_IF_ERROR(check_input(ctx, zp, zp_name, k8Bit));
  if (ctx.input(zp).dtype != ctx.input(of).dtype)
    return ctx.fail("input ", zp_name, " ('", ctx.node().inputs[zp]->name, "') has dtype ",
                    dtype_name(ctx.input(zp).dtype), " but ", of_name, " has ",
                    dtype_name(ctx.input(of).dtype), "; a zero point has the dtype of its tensor");
  return Status::ok();
}

// The three scales are float32 (float16/bfloat16 from opset 21) and share one dtype.
Status check_scale_dtypes(const InferContext& ctx,
                          const std::vector<std::pair<size_t, const char*>>& scales) {
  for (const auto& [i, name] : scales) {
    GRAFT_RETURN_IF_ERROR(check_input(ctx, i, name, kScaleTypes));
    const auto& [first, first_name] = scales[0];
    if (ctx.input(i).dtype != ctx.input(first).dtype)
      return ctx.fail("input ", name, " has dtype ", dtype_name(ctx.input(i).dtype), " but ", first_name,
                      " has ", dtype_name(ctx.input(first).dtype), "; the scales share one dtype");
  }
  return Status::ok();
}

// A per-tensor parameter (one element) where its shape is static.
Status check_per_tensor_input(const InferContext& ctx, size_t i, const char* name) {
  if (auto d = static_dims(ctx, i)) GRAFT_RETURN_IF_ERROR(check_per_tensor(*d, name));
  return Status::ok();
}

// numpy matmul's output shape over symbolic shapes (A input `ai`, B input `bi`); nullopt when a
// rank is unknown. With both shapes static the kernel's own plan decides, and each listed
// parameter (input index, name, A side?) is checked against it.
Result<std::optional<Shape>> matmul_shape(const InferContext& ctx, size_t ai, size_t bi,
                                          const std::vector<std::tuple<size_t, const char*, bool>>& params) {
  const TensorDesc& a = ctx.input(ai);
  const TensorDesc& b = ctx.input(bi);
  if (!a.shape || !b.shape) return std::optional<Shape>();
  auto ad = static_dims(ctx, ai), bd = static_dims(ctx, bi);
  if (ad && bd) {
    GRAFT_ASSIGN_OR_RETURN(IntMatMulPlan plan, int_matmul_plan(*ad, *bd));
    for (const auto& [i, name, a_side] : params)
      if (auto pd = static_dims(ctx, i))
        GRAFT_RETURN_IF_ERROR(matmul_param_index(plan, a_side, *pd, name).status());
    return std::optional<Shape>(shape_from_values(plan.out_dims));
  }
  if (a.shape->empty() || b.shape->empty())
    return ctx.fail("operands must have rank >= 1, got A ", a.to_string(), " and B ", b.to_string());
  Shape a2 = *a.shape, b2 = *b.shape;
  if (a2.size() == 1) a2.insert(a2.begin(), Dim(1));
  if (b2.size() == 1) b2.push_back(Dim(1));
  const Dim& ka = a2.back();
  const Dim& kb = b2[b2.size() - 2];
  if (ka.is_const() && kb.is_const() && ka.value() != kb.value())
    return ctx.fail("inner dimensions differ: A ", a.to_string(), " has K = ", ka.value(), " but B ",
                    b.to_string(), " has K = ", kb.value());
  auto batch = broadcast_shapes(Shape(a2.begin(), a2.end() - 2), Shape(b2.begin(), b2.end() - 2));
  if (!batch.is_ok())
    return ctx.fail("batch dimensions of A ", a.to_string(), " and B ", b.to_string(),
                    " cannot be broadcast: ", batch.status().message());
  Shape out = batch.value();
  if (a.shape->size() > 1) out.push_back(a2[a2.size() - 2]);
  if (b.shape->size() > 1) out.push_back(b2.back());
  return std::optional<Shape>(out);
}

// Conv's output shape over symbolic shapes (x input `xi`, w input `wi`); nullopt when a rank is
// unknown. With both shapes static the kernel's own plan decides, and the weight's per-channel
// parameters (`per_channel`) are checked against its output channels.
Result<std::optional<Shape>> conv_shape(const InferContext& ctx, size_t xi, size_t wi,
                                        const std::vector<std::pair<size_t, const char*>>& per_channel) {
  const TensorDesc& x = ctx.input(xi);
  const TensorDesc& w = ctx.input(wi);
  if (!x.shape || !w.shape) return std::optional<Shape>();
  auto xd = static_dims(ctx, xi), wd = static_dims(ctx, wi);
  if (xd && wd) {
    GRAFT_ASSIGN_OR_RETURN(IntConvPlan plan, int_conv_plan(ctx.attrs(), *xd, *wd));
    for (const auto& [i, name] : per_channel)
      if (auto pd = static_dims(ctx, i)) GRAFT_RETURN_IF_ERROR(check_per_channel(*pd, plan.M, name));
    return std::optional<Shape>(shape_from_values(plan.out_dims));
  }
  const Shape& xs = *x.shape;
  const Shape& ws = *w.shape;
  if (xs.size() < 3) return ctx.fail("input x must have rank >= 3 (N, C, spatial...), got ", x.to_string());
  if (ws.size() != xs.size())
    return ctx.fail("weight w ", w.to_string(), " must have the rank of x ", x.to_string());
  std::vector<int64_t> wk;
  bool kernel_known = true;
  for (size_t i = 2; i < ws.size(); ++i) {
    if (ws[i].is_const())
      wk.push_back(ws[i].value());
    else
      kernel_known = false;
  }
  if (!kernel_known && !ctx.attrs().has("kernel_shape"))
    return error(StatusCode::kUnsupported, "the kernel shape is unknown: weight w ", w.to_string(),
                 " has symbolic spatial dims and kernel_shape is absent");
  GRAFT_ASSIGN_OR_RETURN(WindowAttrs wa, parse_window_attrs(ctx.attrs(), xs.size() - 2,
                                                                      kernel_known ? &wk : nullptr, false));
  Shape out{xs[0], ws[0]};
  for (size_t i = 0; i + 2 < xs.size(); ++i) {
    Dim d = window_output_dim(wa, i, xs[i + 2]);
    if (d.is_const() && d.value() < 1)
      return ctx.fail("input x ", x.to_string(), " is too small for the window on spatial axis ",
                      static_cast<int64_t>(i), " (output extent ", d.value(), ")");
    out.push_back(d);
  }
  return std::optional<Shape>(out);
}

Status infer_matmul_integer(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 0, "A", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 1, "B", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_zero_point_dtype(ctx, 2, "a_zero_point", 0, "A"));
  GRAFT_RETURN_IF_ERROR(check_zero_point_dtype(ctx, 3, "b_zero_point", 1, "B"));
  GRAFT_ASSIGN_OR_RETURN(std::optional<Shape> out,
                         matmul_shape(ctx, 0, 1, {{2, "a_zero_point", true}, {3, "b_zero_point", false}}));
  ctx.set_output(0, desc_of(kI32, out));
  return Status::ok();
}

Status infer_conv_integer(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 0, "x", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 1, "w", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_zero_point_dtype(ctx, 2, "x_zero_point", 0, "x"));
  GRAFT_RETURN_IF_ERROR(check_zero_point_dtype(ctx, 3, "w_zero_point", 1, "w"));
  GRAFT_RETURN_IF_ERROR(check_per_tensor_input(ctx, 2, "x_zero_point"));
  GRAFT_ASSIGN_OR_RETURN(std::optional<Shape> out, conv_shape(ctx, 0, 1, {{3, "w_zero_point"}}));
  ctx.set_output(0, desc_of(kI32, out));
  return Status::ok();
}

Status infer_qlinear_matmul(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 0, "a", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 2, "a_zero_point", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 3, "b", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 5, "b_zero_point", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 7, "y_zero_point", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_zero_point_dtype(ctx, 2, "a_zero_point", 0, "a"));
  GRAFT_RETURN_IF_ERROR(check_zero_point_dtype(ctx, 5, "b_zero_point", 3, "b"));
  GRAFT_RETURN_IF_ERROR(check_scale_dtypes(ctx, {{1, "a_scale"}, {4, "b_scale"}, {6, "y_scale"}}));
  GRAFT_RETURN_IF_ERROR(check_per_tensor_input(ctx, 6, "y_scale"));
  GRAFT_RETURN_IF_ERROR(check_per_tensor_input(ctx, 7, "y_zero_point"));
  GRAFT_ASSIGN_OR_RETURN(std::optional<Shape> out, matmul_shape(ctx, 0, 3,
                                                                {{1, "a_scale", true},
                                                                 {2, "a_zero_point", true},
                                                                 {4, "b_scale", false},
                                                                 {5, "b_zero_point", false}}));
  ctx.set_output(0, desc_of(ctx.input(7).dtype, out));
  return Status::ok();
}

Status infer_qlinear_conv(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 0, "x", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 2, "x_zero_point", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 3, "w", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 5, "w_zero_point", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 7, "y_zero_point", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_zero_point_dtype(ctx, 2, "x_zero_point", 0, "x"));
  GRAFT_RETURN_IF_ERROR(check_zero_point_dtype(ctx, 5, "w_zero_point", 3, "w"));
  GRAFT_RETURN_IF_ERROR(check_scale_dtypes(ctx, {{1, "x_scale"}, {4, "w_scale"}, {6, "y_scale"}}));
  GRAFT_RETURN_IF_ERROR(check_per_tensor_input(ctx, 1, "x_scale"));
  GRAFT_RETURN_IF_ERROR(check_per_tensor_input(ctx, 2, "x_zero_point"));
  GRAFT_RETURN_IF_ERROR(check_per_tensor_input(ctx, 6, "y_scale"));
  GRAFT_RETURN_IF_ERROR(check_per_tensor_input(ctx, 7, "y_zero_point"));
  GRAFT_ASSIGN_OR_RETURN(std::optional<Shape> out,
                         conv_shape(ctx, 0, 3, {{4, "w_scale"}, {5, "w_zero_point"}}));
  if (ctx.has_input(8)) {
    GRAFT_RETURN_IF_ERROR(check_input(ctx, 8, "B", {kI32}));
    const TensorDesc& b = ctx.input(8);
    if (b.shape && (b.rank() != 1 || (out && (*out)[1].is_const() && (*b.shape)[0].is_const() &&
                                      (*b.shape)[0].value() != (*out)[1].value())))
      return ctx.fail("input B ", b.to_string(), " must be 1-D with one entry per output channel",
                      out ? " (" + (*out)[1].to_string() + ")" : std::string());
  }
  ctx.set_output(0, desc_of(ctx.input(7).dtype, out));
  return Status::ok();
}

}  // namespace

void append_integer_ops(std::vector<OpEntry>& out) {
  const std::vector<OpEntry> ops = {
      {"MatMulInteger", 10, infer_matmul_integer, cpu::matmul_integer},
      {"ConvInteger", 10, infer_conv_integer, cpu::conv_integer},
      {"QLinearMatMul", 10, infer_qlinear_matmul, cpu::qlinear_matmul},
      {"QLinearConv", 10, infer_qlinear_conv, cpu::qlinear_conv},
  };
  out.insert(out.end(), ops.begin(), ops.end());
}

}  // namespace graft
