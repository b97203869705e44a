// Schemas of the elementwise builtin ops: unary math, broadcasting binary ops, comparisons, Where,
// Cast, Clip, Identity. Inference follows the ONNX operator specification (onnx/docs/Operators.md):
// outputs take the (multidirectionally broadcast) input shape; dtypes are checked here so a bad
// model fails at build time with the node named, not inside a kernel.
//
// Ops that PyTorch's exporter uses in shape subgraphs (Shape -> Gather -> Mul -> Concat -> Reshape)
// also propagate symbolic integer contents, so those subgraphs resolve at build time.
#include <algorithm>
#include <functional>
#include <initializer_list>

#include "backends/cpu/elementwise.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {
namespace infer {

// Integer contents as Dims: constants (including bool) or symbolic values.
std::optional<std::vector<Dim>> dims_value_of(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return std::nullopt;
  if (const Tensor* t = ctx.input_value(i); t && t->dtype() == kBool && t->device() == DeviceType::kCPU) {
    auto v = t->to_int64_vector();
    return std::vector<Dim>(v.begin(), v.end());
  }
  return ctx.input_dims_value(i);
}


// Elementwise op on the contents of rank <= 1 integer inputs, with size-1 broadcasting.
// Sets output 0's symbolic value when every input's contents are known.
void propagate_sym(InferContext& ctx, const std::vector<size_t>& idx,
                   const std::function<std::optional<Dim>(const std::vector<Dim>&)>& f) {
  std::vector<std::vector<Dim>> vals;
  size_t n = 1;
  for (size_t i : idx) {
    if (!ctx.has_input(i) || ctx.input(i).rank() > 1 || ctx.input(i).rank() < 0) return;
    auto v = dims_value_of(ctx, i);
    if (!v || static_cast<int64_t>(v->size()) > kMaxSymElements) return;
    if (v->size() != 1) {
      if (n != 1 && n != v->size()) return;
      n = v->size();
    }
    vals.push_back(std::move(*v));
  }
  std::vector<Dim> out;
  for (size_t k = 0; k < n; ++k) {
    std::vector<Dim> args;
    for (const auto& v : vals) {
      if (v.empty()) return;
      args.push_back(v.size() == 1 ? v[0] : v[k]);
    }
    auto r = f(args);
    if (!r) return;
    out.push_back(*r);
  }
  ctx.set_output_sym_value(0, std::move(out));
}

}  // namespace infer

namespace {

using namespace infer;


Status check_same_dtype(const InferContext& ctx, size_t a, size_t b) {
  if (ctx.input(a).dtype != ctx.input(b).dtype)
    return ctx.fail("inputs ", static_cast<int64_t>(a), " and ", static_cast<int64_t>(b),
                    " must have the same dtype, got ", dtype_name(ctx.input(a).dtype), " and ",
                    dtype_name(ctx.input(b).dtype));
  return Status::ok();
}

// Broadcast shape of the given inputs; nullopt when any rank is unknown.
Result<std::optional<Shape>> broadcast_inputs(const InferContext& ctx, const std::vector<size_t>& idx) {
  std::optional<Shape> out;
  for (size_t i : idx) {
    if (!ctx.input(i).shape) return std::optional<Shape>();
    if (!out) {
      out = *ctx.input(i).shape;
      continue;
    }
    GRAFT_ASSIGN_OR_RETURN(Shape s, broadcast_shapes(*out, *ctx.input(i).shape));
    out = std::move(s);
  }
  return out;
}

// ---- unary ------------------------------------------------------------------------------------


Status infer_leaky_relu(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_float_attr(ctx, "alpha"));
  return infer_unary_float(ctx);
}

Status infer_hard_sigmoid(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_float_attr(ctx, "alpha"));
  GRAFT_RETURN_IF_ERROR(check_float_attr(ctx, "beta"));
  return infer_unary_float(ctx);
}

Status infer_gelu(InferContext& ctx) {
  auto approx = ctx.attrs().get_string("approximate", "none");
  if (!approx) return Status(approx.status()).with_attribute("approximate");
  if (approx.value() != "none" && approx.value() != "tanh")
    return Status(ctx.fail("must be \"none\" or \"tanh\", got \"", approx.value(), "\"")).with_attribute("approximate");
  return infer_unary_float(ctx);
}

Status infer_not(InferContext& ctx) { return infer_unary(ctx, {kBool}); }

Status infer_elu(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_float_attr(ctx, "alpha"));
  return infer_unary_float(ctx);
}

Status infer_clip(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kNumericTypes));
  GRAFT_RETURN_IF_ERROR(check_float_attr(ctx, "min"));
  GRAFT_RETURN_IF_ERROR(check_float_attr(ctx, "max"));
  for (size_t i = 1; i < std::min<size_t>(3, ctx.num_inputs()); ++i) {
    if (!ctx.has_input(i)) continue;
    GRAFT_RETURN_IF_ERROR(check_same_dtype(ctx, 0, i));
    const TensorDesc& d = ctx.input(i);
    if (d.shape && !(d.rank() == 0 || (d.rank() == 1 && (*d.shape)[0] == 1)))
      return ctx.fail(i == 1 ? "min" : "max", " must be a scalar, got shape ", shape_to_string(*d.shape));
  }
  ctx.set_output(0, ctx.input(0));
  return Status::ok();
}

Status infer_identity(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(require_input(ctx, 0));
  ctx.set_output(0, ctx.input(0));  // a sequence or optional passes through whole
  if (ctx.input(0).is_tensor() && dtype_is_integer(ctx.input(0).dtype))
    propagate_sym(ctx, {0}, [](const std::vector<Dim>& a) { return a[0]; });
  return Status::ok();
}

// Cast and CastLike also convert to and from strings (the CPU engine's; backends/cpu/elementwise.cpp).
const std::vector<DataType> kCastTypes = [] {
  std::vector<DataType> t = kAllTypes;
  t.push_back(DataType::kString);
  return t;
}();

Status infer_cast(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kCastTypes));
  auto to = ctx.attrs().require_int("to");
  if (!to) return Status(to.status()).with_attribute("to");
  DataType t;
  if (!dtype_from_onnx(static_cast<int32_t>(to.value()), &t))
    return Status(error(StatusCode::kUnsupported, "Cast to ONNX element type ", to.value(),
                        " is not supported (graft supports ", dtype_list(kCastTypes), ")"))
        .with_attribute("to");
  TensorDesc out = ctx.input(0);
  out.dtype = t;
  ctx.set_output(0, out);
  if (dtype_is_integer(t)) propagate_sym(ctx, {0}, [](const std::vector<Dim>& a) { return a[0]; });
  return Status::ok();
}

Status infer_cast_like(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kCastTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, kCastTypes));
  TensorDesc out = ctx.input(0);
  out.dtype = ctx.input(1).dtype;
  ctx.set_output(0, out);
  if (dtype_is_integer(out.dtype)) propagate_sym(ctx, {0}, [](const std::vector<Dim>& a) { return a[0]; });
  return Status::ok();
}

// ---- binary -----------------------------------------------------------------------------------

Status infer_broadcast(InferContext& ctx, const std::vector<size_t>& idx, DataType out_dtype) {
  auto shape = broadcast_inputs(ctx, idx);
  if (!shape) return shape.status();
  TensorDesc out;
  out.dtype = out_dtype;
  out.shape = shape.value();
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Status infer_binary_same(InferContext& ctx, const std::vector<DataType>& allowed, DataType out_dtype) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, allowed));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, allowed));
  GRAFT_RETURN_IF_ERROR(check_same_dtype(ctx, 0, 1));
  return infer_broadcast(ctx, {0, 1}, out_dtype == DataType::kUndefined ? ctx.input(0).dtype : out_dtype);
}

bool all_const(const std::vector<Dim>& a) {
  return std::all_of(a.begin(), a.end(), [](const Dim& d) { return d.is_const(); });
}

Status infer_add(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(infer_binary_same(ctx, kNumericTypes, DataType::kUndefined));
  propagate_sym(ctx, {0, 1}, [](const std::vector<Dim>& a) { return a[0] + a[1]; });
  return Status::ok();
}

Status infer_sub(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(infer_binary_same(ctx, kNumericTypes, DataType::kUndefined));
  propagate_sym(ctx, {0, 1}, [](const std::vector<Dim>& a) { return a[0] - a[1]; });
  return Status::ok();
}

Status infer_mul(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(infer_binary_same(ctx, kNumericTypes, DataType::kUndefined));
  propagate_sym(ctx, {0, 1}, [](const std::vector<Dim>& a) { return a[0] * a[1]; });
  return Status::ok();
}

Status infer_div(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(infer_binary_same(ctx, kNumericTypes, DataType::kUndefined));
  propagate_sym(ctx, {0, 1}, [](const std::vector<Dim>& a) -> std::optional<Dim> {
    if (all_const(a)) {
      int64_t x = a[0].value(), y = a[1].value();
      if (y == 0 || (y == -1 && x == INT64_MIN)) return std::nullopt;
      return Dim(x / y);  // C truncation, as the kernel
    }
    // Symbolic shape values are non-negative, where floor and truncation agree; a divisor that is
    // a non-positive constant breaks that assumption, so leave those to run time.
    if (a[1].is_const() && a[1].value() <= 0) return std::nullopt;
    return floor_div(a[0], a[1]);
  });
  return Status::ok();
}

Status infer_pow(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kNumericTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, kNumericTypes));
  return infer_broadcast(ctx, {0, 1}, ctx.input(0).dtype);
}

Status infer_prelu(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(infer_binary_same(ctx, kSignedTypes, DataType::kUndefined));
  return Status::ok();
}

Status infer_variadic(InferContext& ctx, std::function<Dim(const Dim&, const Dim&)> f) {
  if (ctx.num_inputs() == 0) return ctx.fail("needs at least one input");
  std::vector<size_t> idx;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    GRAFT_RETURN_IF_ERROR(check_dtype(ctx, i, kNumericTypes));
    GRAFT_RETURN_IF_ERROR(check_same_dtype(ctx, 0, i));
    idx.push_back(i);
  }
  GRAFT_RETURN_IF_ERROR(infer_broadcast(ctx, idx, ctx.input(0).dtype));
  propagate_sym(ctx, idx, [&f](const std::vector<Dim>& a) {
    Dim r = a[0];
    for (size_t k = 1; k < a.size(); ++k) r = f(r, a[k]);
    return std::optional<Dim>(r);
  });
  return Status::ok();
}

Status infer_max(InferContext& ctx) { return infer_variadic(ctx, dim_max); }
Status infer_sum(InferContext& ctx) {
  return infer_variadic(ctx, [](const Dim& a, const Dim& b) { return a + b; });
}
Status infer_min(InferContext& ctx) { return infer_variadic(ctx, dim_min); }

Status infer_equal(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(infer_binary_same(ctx, kAllTypes, kBool));
  propagate_sym(ctx, {0, 1}, [](const std::vector<Dim>& a) { return dim_eq(a[0], a[1]); });
  return Status::ok();
}

Status infer_less(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(infer_binary_same(ctx, kNumericTypes, kBool));
  propagate_sym(ctx, {0, 1}, [](const std::vector<Dim>& a) { return dim_lt(a[0], a[1]); });
  return Status::ok();
}

Status infer_greater(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(infer_binary_same(ctx, kNumericTypes, kBool));
  propagate_sym(ctx, {0, 1}, [](const std::vector<Dim>& a) { return dim_lt(a[1], a[0]); });
  return Status::ok();
}

Status infer_less_or_equal(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(infer_binary_same(ctx, kNumericTypes, kBool));
  propagate_sym(ctx, {0, 1}, [](const std::vector<Dim>& a) { return Dim(1) - dim_lt(a[1], a[0]); });
  return Status::ok();
}

Status infer_greater_or_equal(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(infer_binary_same(ctx, kNumericTypes, kBool));
  propagate_sym(ctx, {0, 1}, [](const std::vector<Dim>& a) { return Dim(1) - dim_lt(a[0], a[1]); });
  return Status::ok();
}

Status infer_logical_binary(InferContext& ctx) { return infer_binary_same(ctx, {kBool}, kBool); }

Status infer_where(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, {kBool}));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, kAllTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 2, kAllTypes));
  GRAFT_RETURN_IF_ERROR(check_same_dtype(ctx, 1, 2));
  GRAFT_RETURN_IF_ERROR(infer_broadcast(ctx, {0, 1, 2}, ctx.input(1).dtype));
  // Reshape targets are often built as Where(Equal(shape, 0), ...): select when the condition is known.
  if (dtype_is_integer(ctx.input(1).dtype))
    propagate_sym(ctx, {0, 1, 2}, [](const std::vector<Dim>& a) -> std::optional<Dim> {
      if (!a[0].is_const()) return std::nullopt;
      return a[0].value() != 0 ? a[1] : a[2];
    });
  return Status::ok();
}

}  // namespace

void append_elementwise_ops(std::vector<OpEntry>& out) {
  const std::vector<OpEntry> ops = {
      fuses_as(EwOp::kRelu, elementwise_unary({"Relu", 11, infer_unary_signed, cpu::relu})),
      elementwise_unary({"LeakyRelu", 11, infer_leaky_relu, cpu::leaky_relu}),
      {"PRelu", 11, infer_prelu, cpu::prelu},
      fuses_as(EwOp::kSigmoid, elementwise_unary({"Sigmoid", 11, infer_unary_float, cpu::sigmoid})),
      fuses_as(EwOp::kTanh, elementwise_unary({"Tanh", 11, infer_unary_float, cpu::tanh})),
      fuses_as(EwOp::kErf, elementwise_unary({"Erf", 11, infer_unary_float, cpu::erf})),
      {"Gelu", 11, infer_gelu, cpu::gelu},
      elementwise_unary({"HardSigmoid", 11, infer_hard_sigmoid, cpu::hard_sigmoid}),
      fuses_as(EwOp::kHardSwish, elementwise_unary({"HardSwish", 11, infer_unary_float, cpu::hard_swish})),
      elementwise_unary({"Clip", 11, infer_clip, cpu::clip}),
      fuses_as(EwOp::kExp, elementwise_unary(keeps_float32({"Exp", 11, infer_unary_float, cpu::exp}))),
      fuses_as(EwOp::kLog, keeps_float32({"Log", 11, infer_unary_float, cpu::log})),
      fuses_as(EwOp::kSqrt, elementwise_unary({"Sqrt", 11, infer_unary_float, cpu::sqrt})),
      fuses_as(EwOp::kReciprocal, {"Reciprocal", 11, infer_unary_float, cpu::reciprocal}),
      fuses_as(EwOp::kNeg, elementwise_unary({"Neg", 11, infer_unary_signed, cpu::neg})),
      fuses_as(EwOp::kAbs, elementwise_unary({"Abs", 11, infer_unary_numeric, cpu::abs})),
      fuses_as(EwOp::kPow, keeps_float32({"Pow", 11, infer_pow, cpu::pow})),
      fuses_as(EwOp::kAdd, elementwise_binary({"Add", 11, infer_add, cpu::add})),
      fuses_as(EwOp::kSub, elementwise_binary({"Sub", 11, infer_sub, cpu::sub})),
      fuses_as(EwOp::kMul, elementwise_binary({"Mul", 11, infer_mul, cpu::mul})),
      fuses_as(EwOp::kDiv, elementwise_binary({"Div", 11, infer_div, cpu::div})),
      fuses_as(EwOp::kMax, elementwise_binary({"Max", 11, infer_max, cpu::max})),
      fuses_as(EwOp::kMin, elementwise_binary({"Min", 11, infer_min, cpu::min})),
      {"Equal", 11, infer_equal, cpu::equal},
      {"Less", 11, infer_less, cpu::less},
      {"Greater", 11, infer_greater, cpu::greater},
      {"Where", 11, infer_where, cpu::where},
      {"Not", 11, infer_not, cpu::logical_not},
      takes_strings(elementwise_unary(keeps_float32({"Cast", 11, infer_cast, cpu::cast}))),
      takes_strings(elementwise_unary({"Identity", 11, infer_identity, cpu::identity, /*output_shape_from_kernel=*/false, /*takes_containers=*/true})),
      // Beyond the core list: common in exported models and cheap on the same machinery.
      takes_strings(keeps_float32({"CastLike", 15, infer_cast_like, cpu::cast})),
      {"LessOrEqual", 12, infer_less_or_equal, cpu::less_or_equal},
      {"GreaterOrEqual", 12, infer_greater_or_equal, cpu::greater_or_equal},
      {"And", 11, infer_logical_binary, cpu::logical_and},
      {"Or", 11, infer_logical_binary, cpu::logical_or},
      {"Sum", 11, infer_sum, cpu::sum},
      {"Floor", 11, infer_unary_float, cpu::floor},
      {"Ceil", 11, infer_unary_float, cpu::ceil},
      {"Sin", 11, infer_unary_float, cpu::sin},
      {"Cos", 11, infer_unary_float, cpu::cos},
      elementwise_unary(keeps_float32({"Softplus", 11, infer_unary_float, cpu::softplus})),
      elementwise_unary({"Elu", 11, infer_elu, cpu::elu}),
  };
  out.insert(out.end(), ops.begin(), ops.end());
}

}  // namespace graft
