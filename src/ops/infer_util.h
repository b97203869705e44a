// Helpers shared by the builtin ops' inference functions: dtype sets, input checks, unary rules.
#pragma once

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ops/operator.h"

namespace graft::infer {

inline constexpr DataType kF32 = DataType::kFloat32, kF16 = DataType::kFloat16, kF64 = DataType::kFloat64,
                          kBF16 = DataType::kBFloat16, kI8 = DataType::kInt8, kU8 = DataType::kUInt8,
                          kI32 = DataType::kInt32, kI64 = DataType::kInt64, kBool = DataType::kBool,
                          kI16 = DataType::kInt16, kU16 = DataType::kUInt16, kU32 = DataType::kUInt32,
                          kU64 = DataType::kUInt64;

// A description with dtype `t` and shape `s` (nullopt: the rank is unknown).
inline TensorDesc desc_of(DataType t, std::optional<Shape> s) {
  TensorDesc d;
  d.dtype = t;
  d.shape = std::move(s);
  return d;
}

inline const std::vector<DataType> kFloatTypes{kF32, kF16, kF64, kBF16};
inline const std::vector<DataType> kSignedTypes{kF32, kF16, kF64, kBF16, kI8, kI16, kI32, kI64};
inline const std::vector<DataType> kNumericTypes{kF32, kF16, kF64, kBF16, kI8, kU8, kI16, kU16, kI32, kU32, kI64, kU64};
inline const std::vector<DataType> kAllTypes{kF32, kF16, kF64, kBF16, kI8, kU8, kI16, kU16, kI32, kU32, kI64, kU64, kBool};
inline const std::vector<DataType> kUnsignedIntTypes{kU8, kU16, kU32, kU64};

inline std::string dtype_list(const std::vector<DataType>& ts) {
  std::string s;
  for (DataType t : ts) s += (s.empty() ? "" : ", ") + std::string(dtype_name(t));
  return s;
}

// True when optional input i is present and, by its static shape, not an empty placeholder tensor
// (Resize's scales or sizes, Pad's constant_value).
inline bool input_given(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return false;
  const TensorDesc& d = ctx.input(i);
  return !(d.shape && shape_is_static(*d.shape) && numel_of(shape_values(*d.shape)) == 0);
}

// Input i is present and of a float type, else kUnsupported naming the op (Softmax, LayerNormalization).
inline Status require_float_input(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return ctx.fail("required input ", static_cast<int64_t>(i), " is missing");
  if (!dtype_is_float(ctx.input(i).dtype))
    return error(StatusCode::kUnsupported, "input ", static_cast<int64_t>(i), " has dtype ",
                 dtype_name(ctx.input(i).dtype), "; ", ctx.node().op_type, " supports float types only");
  return Status::ok();
}

// Input i, when its shape is known, has rank at least r; `what` names it in the error.
inline Status require_rank_at_least(const InferContext& ctx, size_t i, int64_t r, const char* what) {
  const TensorDesc& d = ctx.input(i);
  if (d.shape && d.rank() < r) return ctx.fail("input ", what, " must have rank >= ", r, ", got ", d.to_string());
  return Status::ok();
}

// Input i is a scalar (rank 0 or [1]) when its shape is known; `what` names it in the error.
inline Status require_scalar(const InferContext& ctx, size_t i, const char* what) {
  const TensorDesc& d = ctx.input(i);
  if (d.shape && !(d.rank() == 0 || (d.rank() == 1 && (*d.shape)[0] == 1)))
    return ctx.fail("input ", what, " must be a scalar, got ", d.to_string());
  return Status::ok();
}

// The value of scalar input i (a constant or a symbolic value): nullopt when unknown at this
// point, an error when it holds other than one value.
inline Result<std::optional<Dim>> scalar_value(const InferContext& ctx, size_t i, const char* what) {
  auto v = ctx.input_dims_value(i);
  if (!v) return std::optional<Dim>();
  if (v->size() != 1)
    return ctx.fail("input ", what, " must hold one value, got ", static_cast<int64_t>(v->size()));
  return std::optional<Dim>((*v)[0]);
}

inline Status require_input(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return ctx.fail("required input ", static_cast<int64_t>(i), " is missing");
  return Status::ok();
}

// kUnsupported naming the input, its dtype and what the op supports.
inline Status check_dtype(const InferContext& ctx, size_t i, const std::vector<DataType>& allowed) {
  GRAFT_RETURN_IF_ERROR(require_input(ctx, i));
  DataType t = ctx.input(i).dtype;
  if (std::find(allowed.begin(), allowed.end(), t) == allowed.end())
    return error(StatusCode::kUnsupported, "input ", static_cast<int64_t>(i), " ('", ctx.node().inputs[i]->name,
                 "') has dtype ", dtype_name(t), "; ", ctx.node().op_type, " supports ", dtype_list(allowed));
  return Status::ok();
}

// A float attribute, when present, must be a float (the error names it).
inline Status check_float_attr(const InferContext& ctx, const char* name) {
  auto r = ctx.attrs().get_float(name, 0.0f);
  if (!r) return Status(r.status()).with_attribute(name);
  return Status::ok();
}

// Output 0 is input 0's dtype and shape.
inline Status infer_unary(InferContext& ctx, const std::vector<DataType>& allowed) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, allowed));
  ctx.set_output(0, ctx.input(0));
  return Status::ok();
}
inline Status infer_unary_float(InferContext& ctx) { return infer_unary(ctx, kFloatTypes); }
inline Status infer_unary_signed(InferContext& ctx) { return infer_unary(ctx, kSignedTypes); }
inline Status infer_unary_numeric(InferContext& ctx) { return infer_unary(ctx, kNumericTypes); }

// A global pool's output shape (GlobalAveragePool, GlobalMaxPool, GlobalLpPool): x must be
// (N, C, spatial...), and every spatial axis becomes 1.
inline Result<Shape> global_pool_shape(const InferContext& ctx, const Shape& x) {
  if (x.size() < 3) return ctx.fail("input X must have rank >= 3 (N, C, spatial...), got ", shape_to_string(x));
  Shape out{x[0], x[1]};
  out.resize(x.size(), Dim(1));
  return out;
}

// The ops that normalize along one axis (Softmax, LogSoftmax, Hardmax), once input 0's dtype is
// checked: `axis` (default 1 before opset 13, when the input is coerced to 2-D there, and -1 from
// 13) must name an axis of input 0 when its rank is known; output 0 is input 0's dtype and shape.
inline Status infer_along_axis(InferContext& ctx) {
  auto axis = ctx.attrs().get_int("axis", ctx.opset() < 13 ? 1 : -1);
  if (!axis) return Status(axis.status()).with_attribute("axis");
  if (ctx.input(0).shape && ctx.input(0).rank() > 0) {
    auto a = normalize_axis(axis.value(), ctx.input(0).rank());
    if (!a) return Status(a.status()).with_attribute("axis");
  }
  ctx.set_output(0, ctx.input(0));
  return Status::ok();
}

// Output of a ReduceXxx-style node once input 0's dtype is checked: keepdims, axes from the
// attribute or input 1 (its dtype must be int64, or any integer type when !axes_int64_only).
// Defined in src/ops/reduce_norm/reduce.cpp.
Status infer_reduce_shape(InferContext& ctx, bool axes_int64_only);

// numel(in) / prod(known) for a Reshape's inferred (-1) dim, cancelling structurally equal
// symbolic factors first so that [batch,3,4] reshaped to [batch,-1] gives 12, not
// floor_div(batch*12, batch). Defined in src/ops/shape/shape.cpp.
Dim divide_shape(const Shape& in, const std::vector<Dim>& known);

// Only shape-sized integer tensors carry symbolic contents (shape arithmetic); larger ones are data,
// left to constant folding.
inline constexpr int64_t kMaxSymElements = 64;

// Input i's integer contents as Dims (a constant, bool included, or a symbolic value); nullopt when unknown.
// Defined in src/ops/elementwise/elementwise.cpp.
std::optional<std::vector<Dim>> dims_value_of(const InferContext& ctx, size_t i);

// Shape arithmetic: when every input in `idx` is a rank <= 1 integer tensor of known contents, sets
// output 0's symbolic value to f applied elementwise (size-1 inputs broadcast); f returns nullopt
// when the result is not known. Defined in src/ops/elementwise/elementwise.cpp.
void propagate_sym(InferContext& ctx, const std::vector<size_t>& idx,
                   const std::function<std::optional<Dim>(const std::vector<Dim>&)>& f);

// Inputs 0 and 1, each of a dtype in `allowed` and the two alike, broadcast as numpy does: output 0
// gets the broadcast shape (unknown rank where either's is) and their dtype, or `out_dtype` when one
// is given. The inference of the binary elementwise ops (Add to BitwiseXor, StringConcat).
inline Status infer_broadcast_binary(InferContext& ctx, const std::vector<DataType>& allowed,
                                     DataType out_dtype = DataType::kUndefined) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, allowed));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, allowed));
  const TensorDesc& a = ctx.input(0);
  const TensorDesc& b = ctx.input(1);
  if (a.dtype != b.dtype)
    return ctx.fail("inputs 0 and 1 must have the same dtype, got ", dtype_name(a.dtype), " and ", dtype_name(b.dtype));
  std::optional<Shape> out;
  if (a.shape && b.shape) {
    GRAFT_ASSIGN_OR_RETURN(Shape s, broadcast_shapes(*a.shape, *b.shape));
    out = std::move(s);
  }
  ctx.set_output(0, desc_of(out_dtype == DataType::kUndefined ? a.dtype : out_dtype, std::move(out)));
  return Status::ok();
}

}  // namespace graft::infer
