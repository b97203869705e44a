// Schemas of the less common ONNX ops the backend test suite exercises: OneHot, CumSum, Compress,
// DepthToSpace, SpaceToDepth, Trilu, Size, Mean, Mod, Xor, and more unary math (trig/hyperbolic,
// Sign, Round, Selu, Shrink, ThresholdedRelu, Softsign, Mish, IsNaN, IsInf).
#include <algorithm>
#include <string>

#include "backends/cpu/extra.h"
#include "core/checked_math.h"
#include "ops/extra_attrs.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {
namespace {

using namespace infer;

// ---- unary ------------------------------------------------------------------------------------


Status infer_selu(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_float_attr(ctx, "alpha"));
  GRAFT_RETURN_IF_ERROR(check_float_attr(ctx, "gamma"));
  return infer_unary_float(ctx);
}

// Celu (opset 12): float32 only, as the specification constrains it; alpha must be a nonzero
// finite float (the kernel divides by it).
Status infer_celu(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(celu_alpha(ctx.attrs()).status());
  return infer_unary(ctx, {kF32});
}

Status infer_thresholded_relu(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_float_attr(ctx, "alpha"));
  return infer_unary_float(ctx);
}

Status infer_shrink(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_float_attr(ctx, "lambd"));
  GRAFT_RETURN_IF_ERROR(check_float_attr(ctx, "bias"));
  return infer_unary_numeric(ctx);
}

Status infer_is_nan(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  ctx.set_output(0, desc_of(kBool, ctx.input(0).shape));
  return Status::ok();
}

Status infer_is_inf(InferContext& ctx) {
  for (const char* a : {"detect_negative", "detect_positive"}) {
    auto r = ctx.attrs().get_int(a, 1);
    if (!r) return Status(r.status()).with_attribute(a);
  }
  return infer_is_nan(ctx);
}

// ---- binary -----------------------------------------------------------------------------------

Status infer_binary(InferContext& ctx, const std::vector<DataType>& allowed) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, allowed));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, allowed));
  if (ctx.input(0).dtype != ctx.input(1).dtype)
    return ctx.fail("inputs 0 and 1 must have the same dtype, got ", dtype_name(ctx.input(0).dtype), " and ",
                    dtype_name(ctx.input(1).dtype));
  std::optional<Shape> out;
  if (ctx.input(0).shape && ctx.input(1).shape) {
    GRAFT_ASSIGN_OR_RETURN(Shape s, broadcast_shapes(*ctx.input(0).shape, *ctx.input(1).shape));
    out = std::move(s);
  }
  ctx.set_output(0, desc_of(ctx.input(0).dtype, out));
  return Status::ok();
}

Status infer_xor(InferContext& ctx) { return infer_binary(ctx, {kBool}); }

Status infer_mod(InferContext& ctx) {
  auto fmod = ctx.attrs().get_int("fmod", 0);
  if (!fmod) return Status(fmod.status()).with_attribute("fmod");
  if (fmod.value() != 0 && fmod.value() != 1)
    return Status(ctx.fail("must be 0 or 1, got ", fmod.value())).with_attribute("fmod");
  GRAFT_RETURN_IF_ERROR(infer_binary(ctx, kNumericTypes));
  if (dtype_is_float(ctx.input(0).dtype) && fmod.value() == 0)
    return Status(ctx.fail("must be 1 for floating-point inputs (dtype ", dtype_name(ctx.input(0).dtype), ")"))
        .with_attribute("fmod");
  // Exporters pad to a window multiple with (w - W % w) % w: resolving it here lets the padding,
  // and whatever is computed from the padded shape (a shifted-window mask), fold at build time.
  const bool c_style = fmod.value() == 1;
  if (dtype_is_integer(ctx.input(0).dtype))
    propagate_sym(ctx, {0, 1}, [c_style](const std::vector<Dim>& a) -> std::optional<Dim> {
      if (a[0].is_const() && a[1].is_const()) {
        const int64_t x = a[0].value(), y = a[1].value();
        if (y == 0) return std::nullopt;
        if (y == -1) return Dim(0);  // x % -1 is 0, and INT64_MIN % -1 would trap
        const int64_t r = x % y;  // C: the sign of x
        return Dim(c_style || r == 0 || (r < 0) == (y < 0) ? r : r + y);  // else the sign of y
      }
      // a - b * floor(a / b) is Python's remainder for any a; C's agrees where a >= 0, which symbolic
      // shape values are (Div assumes the same).
      if (!a[1].is_const() || a[1].value() <= 0) return std::nullopt;
      return a[0] - a[1] * floor_div(a[0], a[1]);
    });
  return Status::ok();
}

// ---- data movement ----------------------------------------------------------------------------

Status infer_trilu(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  auto upper = ctx.attrs().get_int("upper", 1);
  if (!upper) return Status(upper.status()).with_attribute("upper");
  if (ctx.has_input(1)) {
    if (ctx.input(1).dtype != kI64) return ctx.fail("input k must be int64, got ", dtype_name(ctx.input(1).dtype));
    if (ctx.input(1).shape && ctx.input(1).rank() != 0)
      return ctx.fail("input k must be a scalar, got ", ctx.input(1).to_string());
  }
  if (ctx.input(0).shape && ctx.input(0).rank() < 2)
    return ctx.fail("input 0 must have rank >= 2, got ", ctx.input(0).to_string());
  ctx.set_output(0, ctx.input(0));
  return Status::ok();
}

Status infer_size(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  ctx.set_output(0, desc_of(kI64, Shape{}));
  // The element count is shape arithmetic: keep it symbolic so shape subgraphs resolve.
  if (const auto& s = ctx.input(0).shape) {
    Dim n(1);
    for (const Dim& d : *s) n = n * d;
    ctx.set_output_sym_value(0, {n});
  }
  return Status::ok();
}

Status infer_cumsum(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kNumericTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, {kI32, kI64}));
  for (const char* a : {"exclusive", "reverse"}) {
    auto r = ctx.attrs().get_int(a, 0);
    if (!r) return Status(r.status()).with_attribute(a);
  }
  if (ctx.input(1).shape && ctx.input(1).rank() > 1)
    return ctx.fail("input axis must be a scalar, got ", ctx.input(1).to_string());
  if (const Tensor* t = ctx.input_value(1); t && ctx.input(0).shape) {
    auto v = t->to_int64_vector();
    if (v.size() != 1) return ctx.fail("input axis must hold one value");
    auto a = normalize_axis(v[0], ctx.input(0).rank());
    if (!a) return ctx.fail("input axis: ", a.status().message());
  }
  ctx.set_output(0, ctx.input(0));
  return Status::ok();
}

Status infer_one_hot(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kNumericTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, kNumericTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 2, kAllTypes));
  auto axis = ctx.attrs().get_int("axis", -1);
  if (!axis) return Status(axis.status()).with_attribute("axis");
  if (ctx.input(2).shape && ctx.input(2).rank() >= 0 &&
      !(ctx.input(2).rank() == 1 && (*ctx.input(2).shape)[0] == 2) && shape_is_static(*ctx.input(2).shape))
    return ctx.fail("input values must have shape [2] (off, on), got ", ctx.input(2).to_string());
  const TensorDesc& ind = ctx.input(0);
  if (!ind.shape) {
    ctx.set_output(0, desc_of(ctx.input(2).dtype, std::nullopt));
    return Status::ok();
  }
  auto a = normalize_axis(axis.value(), ind.rank() + 1);
  if (!a) return Status(a.status()).with_attribute("axis");
  Dim depth = ctx.unknown_dim();
  if (const Tensor* t = ctx.input_value(1)) {
    if (t->numel() != 1) return ctx.fail("input depth must hold one value, got ", t->numel());
    const double d = t->get(0);
    const auto dv = checked_int64(d);  // a float depth may be beyond int64's range: its cast would be UB
    if (!(d >= 1) || !dv) return ctx.fail("input depth must be a positive integer, got ", d);
    depth = Dim(*dv);
  } else if (auto dv = ctx.input_dims_value(1); dv && dv->size() == 1) {
    depth = (*dv)[0];
  }
  Shape s = *ind.shape;
  s.insert(s.begin() + a.value(), depth);
  ctx.set_output(0, desc_of(ctx.input(2).dtype, s));
  return Status::ok();
}

// DepthToSpace (to_space) and SpaceToDepth over NCHW.
Status infer_depth_space(InferContext& ctx, bool to_space) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  auto bs = ctx.attrs().get_int("blocksize", 0);
  if (!bs) return Status(bs.status()).with_attribute("blocksize");
  if (!ctx.attrs().find("blocksize")) return Status(ctx.fail("is required")).with_attribute("blocksize");
  if (bs.value() < 1) return Status(ctx.fail("must be >= 1, got ", bs.value())).with_attribute("blocksize");
  if (to_space) {
    auto mode = ctx.attrs().get_string("mode", "DCR");
    if (!mode) return Status(mode.status()).with_attribute("mode");
    if (mode.value() != "DCR" && mode.value() != "CRD")
      return Status(ctx.fail("must be DCR or CRD, got '", mode.value(), "'")).with_attribute("mode");
  }
  const TensorDesc& x = ctx.input(0);
  if (!x.shape) {
    ctx.set_output(0, x);
    return Status::ok();
  }
  if (x.rank() != 4) return ctx.fail("input must be 4-D NCHW, got ", x.to_string());
  const Shape& in = *x.shape;
  const Dim b(bs.value()), bb(bs.value() * bs.value());
  auto divisible = [&](const Dim& d, const Dim& by, const char* what) -> Status {
    if (d.is_const() && d.value() % by.value() != 0)
      return ctx.fail(what, " ", d.value(), " of ", x.to_string(), " is not divisible by ", by.value());
    return Status::ok();
  };
  Shape s;
  if (to_space) {
    GRAFT_RETURN_IF_ERROR(divisible(in[1], bb, "channels"));
    s = {in[0], floor_div(in[1], bb), in[2] * b, in[3] * b};
  } else {
    GRAFT_RETURN_IF_ERROR(divisible(in[2], b, "height"));
    GRAFT_RETURN_IF_ERROR(divisible(in[3], b, "width"));
    s = {in[0], in[1] * bb, floor_div(in[2], b), floor_div(in[3], b)};
  }
  ctx.set_output(0, desc_of(x.dtype, s));
  return Status::ok();
}
Status infer_depth_to_space(InferContext& ctx) { return infer_depth_space(ctx, true); }
Status infer_space_to_depth(InferContext& ctx) { return infer_depth_space(ctx, false); }

Status infer_compress(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, {kBool}));
  const TensorDesc& x = ctx.input(0);
  const TensorDesc& cond = ctx.input(1);
  if (cond.shape && cond.rank() != 1) return ctx.fail("condition must be 1-D, got ", cond.to_string());
  const AttrValue* axis_attr = ctx.attrs().find("axis");
  if (!x.shape) {
    ctx.set_output(0, desc_of(x.dtype, std::nullopt));
    return Status::ok();
  }
  Dim n = ctx.unknown_dim();
  if (const Tensor* c = ctx.input_value(1); c && c->device() == DeviceType::kCPU) {
    const auto v = c->to_int64_vector();
    n = Dim(static_cast<int64_t>(std::count_if(v.begin(), v.end(), [](int64_t e) { return e != 0; })));
  }
  if (!axis_attr) {  // no axis: the input is flattened first
    ctx.set_output(0, desc_of(x.dtype, Shape{n}));
    return Status::ok();
  }
  auto axis = ctx.attrs().get_int("axis", 0);
  if (!axis) return Status(axis.status()).with_attribute("axis");
  auto a = normalize_axis(axis.value(), x.rank());
  if (!a) return Status(a.status()).with_attribute("axis");
  Shape s = *x.shape;
  s[a.value()] = n;
  ctx.set_output(0, desc_of(x.dtype, s));
  return Status::ok();
}

Status infer_mean(InferContext& ctx) {
  if (ctx.num_inputs() == 0) return ctx.fail("needs at least one input");
  std::optional<Shape> out;
  bool known = true;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    GRAFT_RETURN_IF_ERROR(check_dtype(ctx, i, kFloatTypes));
    if (ctx.input(i).dtype != ctx.input(0).dtype)
      return ctx.fail("input ", static_cast<int64_t>(i), " has dtype ", dtype_name(ctx.input(i).dtype),
                      " but input 0 has ", dtype_name(ctx.input(0).dtype));
    if (!ctx.input(i).shape) {
      known = false;
      continue;
    }
    if (!out) {
      out = *ctx.input(i).shape;
      continue;
    }
    GRAFT_ASSIGN_OR_RETURN(Shape s, broadcast_shapes(*out, *ctx.input(i).shape));
    out = std::move(s);
  }
  ctx.set_output(0, desc_of(ctx.input(0).dtype, known ? out : std::nullopt));
  return Status::ok();
}

}  // namespace

void append_extra_ops(std::vector<OpEntry>& out) {
  const std::vector<OpEntry> ops = {
      {"Trilu", 14, infer_trilu, cpu::trilu},
      keeps_float32({"Size", 1, infer_size, cpu::size}),
      {"Mod", 10, infer_mod, cpu::mod},
      {"Xor", 7, infer_xor, cpu::logical_xor},
      {"Tan", 7, infer_unary_float, cpu::tan},
      {"Asin", 7, infer_unary_float, cpu::asin},
      {"Acos", 7, infer_unary_float, cpu::acos},
      {"Atan", 7, infer_unary_float, cpu::atan},
      {"Sinh", 9, infer_unary_float, cpu::sinh},
      {"Cosh", 9, infer_unary_float, cpu::cosh},
      {"Asinh", 9, infer_unary_float, cpu::asinh},
      {"Acosh", 9, infer_unary_float, cpu::acosh},
      {"Atanh", 9, infer_unary_float, cpu::atanh},
      {"Sign", 9, infer_unary_numeric, cpu::sign},
      {"Round", 11, infer_unary_float, cpu::round},
      elementwise_unary({"Selu", 6, infer_selu, cpu::selu}),
      {"Celu", 12, infer_celu, cpu::celu},
      {"Shrink", 9, infer_shrink, cpu::shrink},
      {"ThresholdedRelu", 10, infer_thresholded_relu, cpu::thresholded_relu},
      {"Softsign", 1, infer_unary_float, cpu::softsign},
      elementwise_unary({"Mish", 18, infer_unary_float, cpu::mish}),
      {"IsNaN", 9, infer_is_nan, cpu::is_nan},
      {"IsInf", 10, infer_is_inf, cpu::is_inf},
      keeps_float32({"CumSum", 11, infer_cumsum, cpu::cumsum}),
      {"OneHot", 11, infer_one_hot, cpu::one_hot},
      {"DepthToSpace", 11, infer_depth_to_space, cpu::depth_to_space},
      {"SpaceToDepth", 11, infer_space_to_depth, cpu::space_to_depth},
      {"Compress", 11, infer_compress, cpu::compress},
      {"Mean", 11, infer_mean, cpu::mean},
  };
  out.insert(out.end(), ops.begin(), ops.end());
}

}  // namespace graft
