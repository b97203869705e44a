// Schemas (type and symbolic shape inference) for Conv, BatchNormalization, MatMul, Gemm and the
// pools. Kernels: src/backends/cpu/nn.cpp; both read the window attributes with
// src/ops/window_attrs.h.
#include <string>

#include "backends/cpu/nn.h"
#include "ops/attr_util.h"
#include "ops/operator.h"
#include "ops/window_attrs.h"

namespace graft {

namespace {

Status require_float_input(const InferContext& ctx, size_t i, const char* name) {
  DataType t = ctx.input(i).dtype;
  if (!dtype_is_float(t))
    return error(StatusCode::kUnsupported, "input ", name, " has dtype ", dtype_name(t), "; expected a floating type");
  return Status::ok();
}

Status require_numeric_input(const InferContext& ctx, size_t i, const char* name) {
  DataType t = ctx.input(i).dtype;
  if (!dtype_is_float(t) && !dtype_is_integer(t))
    return error(StatusCode::kUnsupported, "input ", name, " has dtype ", dtype_name(t), "; expected a numeric type");
  return Status::ok();
}

Status require_same_dtype(const InferContext& ctx, size_t i, const char* name) {
  if (ctx.input(i).dtype != ctx.input(0).dtype)
    return error(StatusCode::kInvalidModel, "input ", name, " has dtype ", dtype_name(ctx.input(i).dtype),
                 " but input 0 has ", dtype_name(ctx.input(0).dtype));
  return Status::ok();
}

bool output_requested(const InferContext& ctx, size_t i) {
  return i < ctx.node().outputs.size() && ctx.node().outputs[i] != nullptr;
}

// ---- Conv ----

Status infer_conv(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Shape x, ctx.input_shape(0));
  GRAFT_ASSIGN_OR_RETURN(Shape w, ctx.input_shape(1));
  GRAFT_RETURN_IF_ERROR(require_float_input(ctx, 0, "X"));
  GRAFT_RETURN_IF_ERROR(require_same_dtype(ctx, 1, "W"));
  if (x.size() < 3)
    return ctx.fail("input X must have rank >= 3 (N, C, spatial...), got ", shape_to_string(x));
  if (w.size() != x.size())
    return ctx.fail("weight W ", shape_to_string(w), " must have the rank of X ", shape_to_string(x));
  const size_t n = x.size() - 2;
  std::vector<int64_t> wk;
  bool weight_kernel_known = true;
  for (size_t i = 2; i < w.size(); ++i) {
    if (!w[i].is_const()) weight_kernel_known = false;
    else wk.push_back(w[i].value());
  }
  if (!weight_kernel_known && !ctx.attrs().has("kernel_shape"))
    return error(StatusCode::kUnsupported, "the kernel shape is unknown: weight W ", shape_to_string(w),
                 " has symbolic spatial dims and kernel_shape is absent");
  GRAFT_ASSIGN_OR_RETURN(WindowAttrs wa,
                         parse_window_attrs(ctx.attrs(), n, weight_kernel_known ? &wk : nullptr, false));
  GRAFT_ASSIGN_OR_RETURN(int64_t group, ctx.attrs().get_int("group", 1));
  if (group < 1) return attr_error("group", "must be >= 1, got ", group);
  const Dim& C = x[1];
  const Dim& M = w[0];
  if (C.is_const() && w[1].is_const() && C.value() != w[1].value() * group)
    return ctx.fail("channel mismatch: X ", shape_to_string(x), " has ", C.value(), " channels but W ",
                    shape_to_string(w), " with group ", group, " expects ", w[1].value() * group);
  if (M.is_const() && M.value() % group != 0)
    return attr_error("group", "W ", shape_to_string(w), " has ", M.value(), " output channels, not divisible by group ", group);
  if (ctx.has_input(2)) {
    GRAFT_RETURN_IF_ERROR(require_same_dtype(ctx, 2, "B"));
    GRAFT_ASSIGN_OR_RETURN(Shape b, ctx.input_shape(2));
    if (b.size() != 1 || (b[0].is_const() && M.is_const() && b[0].value() != M.value()))
      return ctx.fail("bias B ", shape_to_string(b), " must be 1-D with ", M.to_string(), " elements (W ",
                      shape_to_string(w), ")");
  }
  GRAFT_ASSIGN_OR_RETURN(Shape out, window_output_shape(x, M, wa));
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, out));
  return Status::ok();
}

// ---- ConvTranspose ----

Status infer_conv_transpose(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Shape x, ctx.input_shape(0));
  GRAFT_ASSIGN_OR_RETURN(Shape w, ctx.input_shape(1));
  GRAFT_RETURN_IF_ERROR(require_float_input(ctx, 0, "X"));
  GRAFT_RETURN_IF_ERROR(require_same_dtype(ctx, 1, "W"));
  if (x.size() < 3)
    return ctx.fail("input X must have rank >= 3 (N, C, spatial...), got ", shape_to_string(x));
  if (w.size() != x.size())
    return ctx.fail("weight W ", shape_to_string(w), " must have the rank of X ", shape_to_string(x));
  const size_t n = x.size() - 2;
  std::vector<int64_t> wk;
  for (size_t i = 2; i < w.size(); ++i) {
    if (!w[i].is_const())
      return error(StatusCode::kUnsupported, "weight W ", shape_to_string(w), " has symbolic spatial dims");
    wk.push_back(w[i].value());
  }
  GRAFT_ASSIGN_OR_RETURN(ConvTransposeAttrs a, parse_conv_transpose_attrs(ctx.attrs(), n, &wk));
  if (x[1].is_const() && w[0].is_const() && x[1].value() != w[0].value())
    return ctx.fail("channel mismatch: X ", shape_to_string(x), " has ", x[1].value(), " channels but W ",
                    shape_to_string(w), " expects ", w[0].value());
  if (w[0].is_const() && w[0].value() % a.group != 0)
    return attr_error("group", "W ", shape_to_string(w), " has ", w[0].value(), " input channels, not divisible by group ",
                      a.group);
  Dim M = w[1] * Dim(a.group);
  if (ctx.has_input(2)) {
    GRAFT_RETURN_IF_ERROR(require_same_dtype(ctx, 2, "B"));
    GRAFT_ASSIGN_OR_RETURN(Shape b, ctx.input_shape(2));
    if (b.size() != 1 || (b[0].is_const() && M.is_const() && b[0].value() != M.value()))
      return ctx.fail("bias B ", shape_to_string(b), " must be 1-D with ", M.to_string(), " elements");
  }
  Shape out{x[0], M};
  for (size_t i = 0; i < n; ++i) {
    Dim d = conv_transpose_output_dim(a, i, x[i + 2]);
    if (d.is_const() && d.value() < 1)
      return ctx.fail("output extent ", d.value(), " on spatial axis ", static_cast<int64_t>(i), " is < 1");
    out.push_back(d);
  }
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, out));
  return Status::ok();
}

// ---- pools ----

Status infer_pool_common(InferContext& ctx, bool is_max) {
  GRAFT_ASSIGN_OR_RETURN(Shape x, ctx.input_shape(0));
  if (is_max) GRAFT_RETURN_IF_ERROR(require_numeric_input(ctx, 0, "X"));
  else GRAFT_RETURN_IF_ERROR(require_float_input(ctx, 0, "X"));
  if (x.size() < 3)
    return ctx.fail("input X must have rank >= 3 (N, C, spatial...), got ", shape_to_string(x));
  GRAFT_ASSIGN_OR_RETURN(WindowAttrs wa, parse_window_attrs(ctx.attrs(), x.size() - 2, nullptr, true));
  if (is_max) {
    GRAFT_ASSIGN_OR_RETURN(int64_t so, ctx.attrs().get_int("storage_order", 0));
    if (so != 0 && so != 1) return attr_error("storage_order", "must be 0 or 1, got ", so);
  } else {
    GRAFT_ASSIGN_OR_RETURN(int64_t cip, ctx.attrs().get_int("count_include_pad", 0));
    (void)cip;
  }
  GRAFT_ASSIGN_OR_RETURN(Shape out, window_output_shape(x, x[1], wa));
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, out));
  if (is_max && output_requested(ctx, 1)) ctx.set_output(1, TensorDesc(DataType::kInt64, out));
  return Status::ok();
}

Status infer_max_pool(InferContext& ctx) { return infer_pool_common(ctx, true); }
Status infer_average_pool(InferContext& ctx) { return infer_pool_common(ctx, false); }

Status infer_global_pool(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Shape x, ctx.input_shape(0));
  GRAFT_RETURN_IF_ERROR(require_float_input(ctx, 0, "X"));
  if (x.size() < 3)
    return ctx.fail("input X must have rank >= 3 (N, C, spatial...), got ", shape_to_string(x));
  Shape out{x[0], x[1]};
  out.resize(x.size(), Dim(1));
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, out));
  return Status::ok();
}

// ---- BatchNormalization (inference; training mode from opset 14) ----

Status infer_batch_norm(InferContext& ctx) {
  auto training_attr = ctx.attrs().get_int("training_mode", 0);
  if (!training_attr) return Status(training_attr.status()).with_attribute("training_mode");
  const int64_t training = training_attr.value();
  if (training != 0 && training != 1) return attr_error("training_mode", "must be 0 or 1, got ", training);
  // training_mode exists from opset 14, with outputs Y, running_mean, running_var; before it the
  // extra outputs (mean, var, saved_mean, saved_var) meant training, which graft does not run.
  if (training == 1 && ctx.opset() < 14)
    return attr_error("training_mode", "exists from opset 14; the model is opset ", static_cast<int64_t>(ctx.opset()));
  if (training == 0)
    for (size_t i = 1; i < ctx.node().outputs.size(); ++i)
      if (output_requested(ctx, i))
        return error(StatusCode::kUnsupported, "output ", static_cast<int64_t>(i),
                     " (running/saved mean or variance) exists only in training mode (training_mode = 1, "
                     "opset >= 14)");
  if (training == 1 && ctx.node().outputs.size() > 3)
    return ctx.fail("training mode has at most 3 outputs (Y, running_mean, running_var), got ",
                    static_cast<int64_t>(ctx.node().outputs.size()));
  auto momentum = ctx.attrs().get_float("momentum", 0.9f);
  if (!momentum) return Status(momentum.status()).with_attribute("momentum");
  GRAFT_ASSIGN_OR_RETURN(float eps, ctx.attrs().get_float("epsilon", 1e-5f));
  if (!(eps >= 0.0f)) return attr_error("epsilon", "must be >= 0, got ", static_cast<double>(eps));
  GRAFT_ASSIGN_OR_RETURN(Shape x, ctx.input_shape(0));
  GRAFT_RETURN_IF_ERROR(require_float_input(ctx, 0, "X"));
  if (x.size() < 2) return ctx.fail("input X must have rank >= 2 (N, C, ...), got ", shape_to_string(x));
  const char* names[5] = {"X", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i < 5; ++i) {
    GRAFT_ASSIGN_OR_RETURN(Shape p, ctx.input_shape(i));
    GRAFT_RETURN_IF_ERROR(require_float_input(ctx, i, names[i]));
    if (p.size() != 1 || (p[0].is_const() && x[1].is_const() && p[0].value() != x[1].value()))
      return ctx.fail("input ", names[i], " ", shape_to_string(p), " must be 1-D with C = ", x[1].to_string(),
                      " elements (X ", shape_to_string(x), ")");
  }
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, x));
  for (size_t i = 1; training == 1 && i < ctx.num_outputs(); ++i)
    ctx.set_output(i, TensorDesc(ctx.input(2 + i).dtype, Shape{x[1]}));
  return Status::ok();
}

// ---- MatMul ----

Status infer_matmul(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Shape a, ctx.input_shape(0));
  GRAFT_ASSIGN_OR_RETURN(Shape b, ctx.input_shape(1));
  GRAFT_RETURN_IF_ERROR(require_numeric_input(ctx, 0, "A"));
  GRAFT_RETURN_IF_ERROR(require_same_dtype(ctx, 1, "B"));
  if (a.empty() || b.empty())
    return ctx.fail("operands must have rank >= 1, got A ", shape_to_string(a), " and B ", shape_to_string(b));
  Shape a2 = a, b2 = b;
  if (a2.size() == 1) a2.insert(a2.begin(), Dim(1));
  if (b2.size() == 1) b2.push_back(Dim(1));
  const Dim& ka = a2.back();
  const Dim& kb = b2[b2.size() - 2];
  if (ka.is_const() && kb.is_const() && ka.value() != kb.value())
    return ctx.fail("inner dimensions differ: A ", shape_to_string(a), " has K = ", ka.value(), " but B ",
                    shape_to_string(b), " has K = ", kb.value());
  Shape ba(a2.begin(), a2.end() - 2), bb(b2.begin(), b2.end() - 2);
  auto batch = broadcast_shapes(ba, bb);
  if (!batch.is_ok())
    return ctx.fail("batch dimensions of A ", shape_to_string(a), " and B ", shape_to_string(b),
                    " cannot be broadcast: ", batch.status().message());
  Shape out = batch.value();
  if (a.size() > 1) out.push_back(a2[a2.size() - 2]);
  if (b.size() > 1) out.push_back(b2.back());
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, out));
  return Status::ok();
}

// ---- Gemm ----

Status infer_gemm(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Shape a, ctx.input_shape(0));
  GRAFT_ASSIGN_OR_RETURN(Shape b, ctx.input_shape(1));
  GRAFT_RETURN_IF_ERROR(require_numeric_input(ctx, 0, "A"));
  GRAFT_RETURN_IF_ERROR(require_same_dtype(ctx, 1, "B"));
  GRAFT_ASSIGN_OR_RETURN(int64_t ta, ctx.attrs().get_int("transA", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t tb, ctx.attrs().get_int("transB", 0));
  GRAFT_ASSIGN_OR_RETURN(float alpha, ctx.attrs().get_float("alpha", 1.0f));
  GRAFT_ASSIGN_OR_RETURN(float beta, ctx.attrs().get_float("beta", 1.0f));
  (void)alpha;
  (void)beta;
  if (a.size() != 2 || b.size() != 2)
    return ctx.fail("A ", shape_to_string(a), " and B ", shape_to_string(b), " must both be 2-D");
  Dim M = ta ? a[1] : a[0], K = ta ? a[0] : a[1];
  Dim Kb = tb ? b[1] : b[0], N = tb ? b[0] : b[1];
  if (K.is_const() && Kb.is_const() && K.value() != Kb.value())
    return ctx.fail("inner dimensions differ: A ", shape_to_string(a), " (transA=", ta, ") and B ",
                    shape_to_string(b), " (transB=", tb, ")");
  if (ctx.has_input(2)) {
    GRAFT_RETURN_IF_ERROR(require_same_dtype(ctx, 2, "C"));
    GRAFT_ASSIGN_OR_RETURN(Shape c, ctx.input_shape(2));
    // C broadcasts unidirectionally to [M, N]: each of its (right-aligned) dims is 1 or equal.
    bool ok = c.size() <= 2;
    Shape mn{M, N};
    for (size_t i = 0; ok && i < c.size(); ++i) {
      const Dim& want = mn[2 - c.size() + i];
      if (c[i].is_const() && want.is_const() && c[i].value() != 1 && c[i].value() != want.value()) ok = false;
    }
    if (!ok)
      return ctx.fail("C ", shape_to_string(c), " cannot be broadcast to the output [", M.to_string(), ",",
                      N.to_string(), "]");
  }
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, Shape{M, N}));
  return Status::ok();
}

}  // namespace

void append_nn_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"AveragePool", 11, infer_average_pool, cpu::average_pool});
  out.push_back(OpEntry{"BatchNormalization", 11, infer_batch_norm, cpu::batch_normalization});
  out.push_back(OpEntry{"Conv", 11, infer_conv, cpu::conv});
  out.push_back(OpEntry{"ConvTranspose", 11, infer_conv_transpose, cpu::conv_transpose});
  out.push_back(OpEntry{"Gemm", 11, infer_gemm, cpu::gemm});
  out.push_back(OpEntry{"GlobalAveragePool", 11, infer_global_pool, cpu::global_average_pool});
  out.push_back(OpEntry{"GlobalMaxPool", 11, infer_global_pool, cpu::global_max_pool});
  out.push_back(OpEntry{"MatMul", 11, infer_matmul, cpu::matmul});
  out.push_back(OpEntry{"MaxPool", 11, infer_max_pool, cpu::max_pool});
}

}  // namespace graft
