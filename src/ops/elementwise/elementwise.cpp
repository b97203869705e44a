// The elementwise family's definition: the CPU references (see elementwise.h) and the schemas.
// Inference follows the ONNX operator specification: outputs take the (multidirectionally
// broadcast) input shape; dtypes are checked here so a bad model fails at build time with the node
// named, not inside a kernel. Ops that PyTorch's exporter uses in shape subgraphs (Shape -> Gather
// -> Mul -> Concat -> Reshape) also propagate symbolic integer contents, so those subgraphs resolve
// at build time.
#include "ops/elementwise/elementwise.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/broadcast_walker.h"
#include "backends/cpu/element_traits.h"
#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"
#include "core/checked_math.h"
#include "core/float8.h"
#include "graft/status.h"
#include "ops/infer_util.h"
#include "ops/operator.h"
#include "ops/strings/strings.h"

namespace graft {

// ---- CPU references -------------------------------------------------------------------------------

namespace cpu {

namespace {

using detail::BroadcastWalker;

// out = f(a, b) with broadcasting; TrA, TrB, TrOut give the storage types.
template <typename TrA, typename TrB, typename TrOut, typename F>
Status map_binary(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  GRAFT_ASSIGN_OR_RETURN(BroadcastWalker w, BroadcastWalker::make(out.dims(), {a.dims(), b.dims()}));
  for (int64_t i = 0, n = out.numel(); i < n; ++i, w.next())
    TrOut::store(out.data(), i, f(TrA::load(a.data(), w.offset(0)), TrB::load(b.data(), w.offset(1))));
  return Status::ok();
}

Status same_dtypes(const ExecContext& ctx, size_t first, size_t count) {
  for (size_t i = first + 1; i < first + count; ++i)
    if (ctx.inputs[i] && ctx.inputs[i]->dtype() != ctx.inputs[first]->dtype())
      return error(StatusCode::kInvalidModel, "input ", static_cast<int64_t>(i), " has dtype ",
                   dtype_name(ctx.inputs[i]->dtype()), " but input ", static_cast<int64_t>(first), " has ",
                   dtype_name(ctx.inputs[first]->dtype()));
  return Status::ok();
}

// Same-typed binary op over numeric dtypes; `f` sees compute values.
template <typename F>
Status binary_numeric(ExecContext& ctx, F f) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  GRAFT_RETURN_IF_ERROR(same_dtypes(ctx, 0, 2));
  return visit_numeric(ctx.inputs[0]->dtype(), [&](auto tr) -> Status {
    using Tr = decltype(tr);
    return map_binary<Tr, Tr, Tr>(*ctx.inputs[0], *ctx.inputs[1], *ctx.outputs[0], f);
  }, [&](DataType t) { return bad_dtype(ctx, t); });
}

template <typename F>
Status compare(ExecContext& ctx, F f, bool allow_bool) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  GRAFT_RETURN_IF_ERROR(same_dtypes(ctx, 0, 2));
  DataType t = ctx.inputs[0]->dtype();
  if (t == DataType::kBool && !allow_bool) return bad_dtype(ctx, t);
  return visit_all(t, [&](auto tr) -> Status {
    using Tr = decltype(tr);
    return map_binary<Tr, Tr, BoolTr>(*ctx.inputs[0], *ctx.inputs[1], *ctx.outputs[0],
                                      [&](auto a, auto b) { return static_cast<bool>(f(a, b)); });
  }, [&](DataType d) { return bad_dtype(ctx, d); });
}

// Fold a variadic op (Max/Min) over every input with broadcasting. Exact ops, so folding in the
// storage type loses nothing.
template <typename F>
Status variadic_numeric(ExecContext& ctx, F f) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  GRAFT_RETURN_IF_ERROR(same_dtypes(ctx, 0, ctx.inputs.size()));
  Tensor& out = *ctx.outputs[0];
  return visit_numeric(ctx.inputs[0]->dtype(), [&](auto tr) -> Status {
    using Tr = decltype(tr);
    {
      GRAFT_ASSIGN_OR_RETURN(BroadcastWalker w, BroadcastWalker::make(out.dims(), {ctx.inputs[0]->dims()}));
      for (int64_t i = 0, n = out.numel(); i < n; ++i, w.next())
        Tr::store(out.data(), i, Tr::load(ctx.inputs[0]->data(), w.offset(0)));
    }
    for (size_t k = 1; k < ctx.inputs.size(); ++k) {
      if (!ctx.inputs[k]) continue;
      GRAFT_ASSIGN_OR_RETURN(BroadcastWalker w, BroadcastWalker::make(out.dims(), {ctx.inputs[k]->dims()}));
      for (int64_t i = 0, n = out.numel(); i < n; ++i, w.next())
        Tr::store(out.data(), i, f(Tr::load(out.data(), i), Tr::load(ctx.inputs[k]->data(), w.offset(0))));
    }
    return Status::ok();
  }, [&](DataType t) { return bad_dtype(ctx, t); });
}

// ONNX gives Relu, Neg and PRelu only signed types; unsigned inputs are refused before dispatch.
bool is_unsigned_integer(DataType t) {
  return t == DataType::kUInt8 || t == DataType::kUInt16 || t == DataType::kUInt32 || t == DataType::kUInt64;
}

// `x < 0` for any element type, without the always-false comparison on unsigned types that
// -Wtype-limits rejects.
template <typename T>
bool is_negative(T v) {
  if constexpr (std::is_unsigned_v<T>) return false;
  else return v < 0;
}

template <typename T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  return false;
}

// Wrapping negation without signed-overflow UB.
template <typename T>
T wrap_neg(T v) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(U(0) - static_cast<U>(v));
  } else {
    return -v;
  }
}

// a * b, integers wrapping (two's complement) instead of overflowing into UB (Mul, PRelu: FZ21).
template <typename T>
T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = wrap_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

Result<float> float_attr(const ExecContext& ctx, const char* name, float def) {
  static const AttributeMap kEmpty;
  return (ctx.attrs ? *ctx.attrs : kEmpty).get_float(name, def);
}

}  // namespace

// ---- unary float ----------------------------------------------------------------------------

Status relu(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  DataType t = ctx.inputs[0]->dtype();
  if (t == DataType::kBool || is_unsigned_integer(t)) return bad_dtype(ctx, t);
  return visit_numeric(t, [&](auto tr) -> Status {
    using Tr = decltype(tr);
    // `x < 0 ? 0 : x` keeps NaN, like numpy's clip/maximum.
    return map_unary<Tr>(ctx, [](auto x) { return is_negative(x) ? decltype(x)(0) : x; });
  }, [&](DataType d) { return bad_dtype(ctx, d); });
}

Status leaky_relu(ExecContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(float alpha, float_attr(ctx, "alpha", 0.01f));
  return unary_float(ctx, [alpha](auto x) { return x < 0 ? decltype(x)(alpha) * x : x; });
}

Status sigmoid(ExecContext& ctx) {
  return unary_float(ctx, [](auto x) {
    using C = decltype(x);
    // Split by sign so exp never overflows.
    if (x >= 0) return C(1) / (C(1) + std::exp(-x));
    C e = std::exp(x);
    return e / (C(1) + e);
  });
}

Status tanh(ExecContext& ctx) {
  return unary_float(ctx, [](auto x) { return std::tanh(x); });
}

Status erf(ExecContext& ctx) {
  return unary_float(ctx, [](auto x) { return std::erf(x); });
}

Status gelu(ExecContext& ctx) {
  static const AttributeMap kEmpty;
  auto approx_r = (ctx.attrs ? *ctx.attrs : kEmpty).get_string("approximate", "none");
  if (!approx_r) return approx_r.status();
  const std::string approx = approx_r.value();
  if (approx == "tanh") {
    return unary_float(ctx, [](auto x) {
      using C = decltype(x);
      const C k = static_cast<C>(0.79788456080286535588);  // sqrt(2/pi)
      return C(0.5) * x * (C(1) + std::tanh(k * (x + C(0.044715) * x * x * x)));
    });
  }
  if (approx != "none")
    return error(StatusCode::kInvalidModel, "attribute 'approximate' must be \"none\" or \"tanh\", got \"",
                 approx, "\"");
  return unary_float(ctx, [](auto x) {
    using C = decltype(x);
    // 1 + erf(z) written as erfc(-z): for x < 0 the sum cancels and loses the float's low bits.
    return C(0.5) * x * std::erfc(x * static_cast<C>(-0.70710678118654752440));
  });
}

Status hard_sigmoid(ExecContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(float alpha, float_attr(ctx, "alpha", 0.2f));
  GRAFT_ASSIGN_OR_RETURN(float beta, float_attr(ctx, "beta", 0.5f));
  return unary_float(ctx, [alpha, beta](auto x) {
    using C = decltype(x);
    return std::max(C(0), std::min(C(1), C(alpha) * x + C(beta)));
  });
}

Status hard_swish(ExecContext& ctx) {
  return unary_float(ctx, [](auto x) {
    using C = decltype(x);
    return x * std::max(C(0), std::min(C(1), x / C(6) + C(0.5)));
  });
}

Status exp(ExecContext& ctx) {
  return unary_float(ctx, [](auto x) { return std::exp(x); });
}
Status log(ExecContext& ctx) {
  return unary_float(ctx, [](auto x) { return std::log(x); });
}
Status sqrt(ExecContext& ctx) {
  return unary_float(ctx, [](auto x) { return std::sqrt(x); });
}
Status reciprocal(ExecContext& ctx) {
  return unary_float(ctx, [](auto x) { return decltype(x)(1) / x; });
}

Status floor(ExecContext& ctx) {
  return unary_float(ctx, [](auto x) { return std::floor(x); });
}
Status ceil(ExecContext& ctx) {
  return unary_float(ctx, [](auto x) { return std::ceil(x); });
}
Status sin(ExecContext& ctx) {
  return unary_float(ctx, [](auto x) { return std::sin(x); });
}
Status cos(ExecContext& ctx) {
  return unary_float(ctx, [](auto x) { return std::cos(x); });
}
Status softplus(ExecContext& ctx) {
  // log(1 + exp(x)) without overflow for large x.
  return unary_float(ctx, [](auto x) {
    return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  });
}
Status elu(ExecContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(float alpha, float_attr(ctx, "alpha", 1.0f));
  return unary_float(ctx, [alpha](auto x) {
    using C = decltype(x);
    return x < 0 ? C(alpha) * std::expm1(x) : x;
  });
}

// ---- unary numeric --------------------------------------------------------------------------

Status neg(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  DataType t = ctx.inputs[0]->dtype();
  if (t == DataType::kBool || is_unsigned_integer(t)) return bad_dtype(ctx, t);
  return visit_numeric(t, [&](auto tr) -> Status {
    return map_unary<decltype(tr)>(ctx, [](auto x) { return wrap_neg(x); });
  }, [&](DataType d) { return bad_dtype(ctx, d); });
}

Status abs(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  DataType t = ctx.inputs[0]->dtype();
  if (t == DataType::kBool) return bad_dtype(ctx, t);
  return visit_numeric(t, [&](auto tr) -> Status {
    return map_unary<decltype(tr)>(ctx, [](auto x) { return is_negative(x) ? wrap_neg(x) : x; });
  }, [&](DataType d) { return bad_dtype(ctx, d); });
}

Status clip(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  DataType t = ctx.inputs[0]->dtype();
  if (t == DataType::kBool) return bad_dtype(ctx, t);
  const Tensor* lo_t = ctx.inputs.size() > 1 ? ctx.inputs[1] : nullptr;
  const Tensor* hi_t = ctx.inputs.size() > 2 ? ctx.inputs[2] : nullptr;
  for (const Tensor* b : {lo_t, hi_t}) {
    if (b && b->numel() != 1)
      return error(StatusCode::kInvalidModel, "Clip min/max must be scalars, got ",
                   shape_to_string(shape_from_values(b->dims())));
    if (b && b->dtype() != t)
      return error(StatusCode::kInvalidModel, "Clip min/max dtype ", dtype_name(b->dtype()),
                   " differs from the input dtype ", dtype_name(t));
  }
  return visit_numeric(t, [&](auto tr) -> Status {
    using Tr = decltype(tr);
    using C = decltype(Tr::load(nullptr, 0));
    C lo = std::numeric_limits<C>::lowest(), hi = std::numeric_limits<C>::max();
    if constexpr (std::is_floating_point_v<C>) {
      lo = -std::numeric_limits<C>::infinity();
      hi = std::numeric_limits<C>::infinity();
      // Before opset 11 the bounds were attributes; accept them when no input gives them.
      if (!lo_t) { GRAFT_ASSIGN_OR_RETURN(float v, float_attr(ctx, "min", -INFINITY)); lo = C(v); }
      if (!hi_t) { GRAFT_ASSIGN_OR_RETURN(float v, float_attr(ctx, "max", INFINITY)); hi = C(v); }
    }
    if (lo_t) lo = Tr::load(lo_t->data(), 0);
    if (hi_t) hi = Tr::load(hi_t->data(), 0);
    // min(max(x, lo), hi): when lo > hi every element becomes hi, as numpy.clip does. NaN stays.
    return map_unary<Tr>(ctx, [lo, hi](C x) {
      const C up = x < lo ? lo : x;
      return up > hi ? hi : up;
    });
  }, [&](DataType d) { return bad_dtype(ctx, d); });
}

Status logical_not(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  if (ctx.inputs[0]->dtype() != DataType::kBool) return bad_dtype(ctx, ctx.inputs[0]->dtype());
  return map_unary<BoolTr>(ctx, [](bool x) { return !x; });
}

// Cast to int4/uint4 as ONNX's reference converts: the value clamped into the type's range and
// rounded half to even (other integer targets truncate); NaN gives 0. Stored one value a byte.
namespace {
Status cast_to_4bit(const ExecContext& ctx, const Tensor& x, Tensor& y) {
  if (x.dtype() == DataType::kString) return bad_dtype(ctx, x.dtype());
  const double lo = four_bit_min(y.dtype()), hi = four_bit_max(y.dtype());
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    const double v = x.get(i);
    y.set(i, std::isnan(v) ? 0.0 : std::nearbyint(std::clamp(v, lo, hi)));
  }
  return Status::ok();
}

// The numeric Cast: float to int truncates toward zero and saturates, anything to bool is x != 0,
// the rest converts (int4/uint4 are read through their int8/uint8 storage).
Status cast_numeric(const ExecContext& ctx, const Tensor& x, Tensor& y) {
  return visit_all(dtype_storage(x.dtype()), [&](auto trf) -> Status {
    using TrF = decltype(trf);
    return visit_all(y.dtype(), [&](auto trt) -> Status {
      using TrT = decltype(trt);
      using CT = decltype(TrT::load(nullptr, 0));
      for (int64_t i = 0, n = x.numel(); i < n; ++i) {
        auto v = TrF::load(x.data(), i);
        if constexpr (std::is_same_v<CT, bool>) {
          TrT::store(y.data(), i, v != 0);
        } else if constexpr (std::is_integral_v<CT> && std::is_floating_point_v<decltype(v)>) {
          // Float to int truncates toward zero; NaN/out-of-range saturate instead of hitting UB.
          // The upper bound is tested as >= 2^digits because max() of a 64-bit type rounds up to
          // exactly that power of two in double, and converting it back would overflow.
          double d = static_cast<double>(v);
          CT r;
          if (std::isnan(d)) r = 0;
          else if (d <= static_cast<double>(std::numeric_limits<CT>::lowest())) r = std::numeric_limits<CT>::lowest();
          else if (d >= std::ldexp(1.0, std::numeric_limits<CT>::digits)) r = std::numeric_limits<CT>::max();
          else r = static_cast<CT>(d);
          TrT::store(y.data(), i, r);
        } else {
          TrT::store(y.data(), i, static_cast<CT>(v));
        }
      }
      return Status::ok();
    }, [&](DataType d) { return bad_dtype(ctx, d); });
  }, [&](DataType d) { return bad_dtype(ctx, d); });
}

// Cast to an 8-bit float (float8.h): round to nearest even; with `saturate` (opset 19, default 1)
// out-of-range values and infinities become the largest finite, without it infinity or NaN.
Status cast_to_float8(const ExecContext& ctx, const Tensor& x, Tensor& y) {
  if (x.dtype() == DataType::kString) return bad_dtype(ctx, x.dtype());
  static const AttributeMap kNone;
  GRAFT_ASSIGN_OR_RETURN(int64_t saturate, (ctx.attrs ? *ctx.attrs : kNone).get_int("saturate", 1));
  const auto format = static_cast<float8::Format>(y.dtype());
  auto* out = y.data_as<uint8_t>();
  for (int64_t i = 0, n = x.numel(); i < n; ++i) out[i] = float8::from_double(format, x.get(i), saturate != 0);
  return Status::ok();
}
}  // namespace

Status cast(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  GRAFT_CHECK(x.numel() == y.numel());
  DataType from = x.dtype(), to = y.dtype();
  if (to == DataType::kString) return cast_to_strings(x, y);
  if (from == DataType::kString) return cast_from_strings(x, y);
  if (from == to) {
    std::memcpy(y.data(), x.data(), x.nbytes());
    return Status::ok();
  }
  if (dtype_is_4bit(to)) return cast_to_4bit(ctx, x, y);
  if (dtype_is_float8(to)) return cast_to_float8(ctx, x, y);
  if (dtype_is_float8(from)) {
    // Every 8-bit float is exact in float32: through float32, Cast's rules for floats apply.
    Tensor wide = Tensor::empty(DataType::kFloat32, x.dims());
    for (int64_t i = 0, n = x.numel(); i < n; ++i) wide.set(i, x.get(i));
    return cast_numeric(ctx, wide, y);
  }
  return cast_numeric(ctx, x, y);
}

Status identity(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  if (!ctx.inputs[0]->is_tensor()) return set_output_value(ctx, 0, *ctx.inputs[0]);
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  GRAFT_CHECK(x.nbytes() == y.nbytes() && x.dtype() == y.dtype());
  return y.copy_data_from(x);
}

// ---- binary ---------------------------------------------------------------------------------

Status add(ExecContext& ctx) {
  return binary_numeric(ctx, [](auto a, auto b) {
    using C = decltype(a);
    if constexpr (std::is_integral_v<C>) {
      using U = wrap_t<C>;  // integer overflow wraps (two's complement), no UB
      return static_cast<C>(static_cast<U>(a) + static_cast<U>(b));
    } else {
      return a + b;
    }
  });
}

Status sub(ExecContext& ctx) {
  return binary_numeric(ctx, [](auto a, auto b) {
    using C = decltype(a);
    if constexpr (std::is_integral_v<C>) {
      using U = wrap_t<C>;
      return static_cast<C>(static_cast<U>(a) - static_cast<U>(b));
    } else {
      return a - b;
    }
  });
}

Status mul(ExecContext& ctx) {
  return binary_numeric(ctx, [](auto a, auto b) { return wrap_mul(a, b); });
}

Status div(ExecContext& ctx) {
  bool div_by_zero = false;
  // Integer division truncates toward zero (C semantics, as ONNX Runtime does).
  Status st = binary_numeric(ctx, [&div_by_zero](auto a, auto b) {
    using C = decltype(a);
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) {
        div_by_zero = true;
        return C(0);
      }
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return wrap_neg(a);  // avoids the INT_MIN / -1 trap
      }
      return static_cast<C>(a / b);
    } else {
      return a / b;
    }
  });
  GRAFT_RETURN_IF_ERROR(st);
  if (div_by_zero) return error(StatusCode::kRuntimeError, "integer division by zero");
  return Status::ok();
}

Status pow(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  const Tensor& a = *ctx.inputs[0];
  const Tensor& b = *ctx.inputs[1];
  if (a.dtype() == DataType::kBool || b.dtype() == DataType::kBool) return bad_dtype(ctx, DataType::kBool);
  // Base and exponent may differ in type (opset 12+); the result has the base's type.
  return visit_numeric(a.dtype(), [&](auto tra) -> Status {
    using TrA = decltype(tra);
    using CA = decltype(TrA::load(nullptr, 0));
    return visit_numeric(b.dtype(), [&](auto trb) -> Status {
      using TrB = decltype(trb);
      return map_binary<TrA, TrB, TrA>(a, b, *ctx.outputs[0], [](auto x, auto e) {
        if constexpr (std::is_floating_point_v<CA>) {
          using W = std::conditional_t<std::is_same_v<CA, double>, double, float>;
          return static_cast<CA>(std::pow(static_cast<W>(x), static_cast<W>(e)));
        } else {
          // A power past the integer type's range keeps its low bits, through int64 saturated at
          // its ends (0 to a negative power is infinity), as graft's double-to-integer stores do:
          // a plain cast of an out-of-range double is undefined behaviour.
          return static_cast<CA>(saturating_int64(std::pow(static_cast<double>(x), static_cast<double>(e))));
        }
      });
    }, [&](DataType d) { return bad_dtype(ctx, d); });
  }, [&](DataType d) { return bad_dtype(ctx, d); });
}

Status prelu(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  GRAFT_RETURN_IF_ERROR(same_dtypes(ctx, 0, 2));
  DataType t = ctx.inputs[0]->dtype();
  if (t == DataType::kBool || is_unsigned_integer(t)) return bad_dtype(ctx, t);
  return visit_numeric(t, [&](auto tr) -> Status {
    using Tr = decltype(tr);
    return map_binary<Tr, Tr, Tr>(*ctx.inputs[0], *ctx.inputs[1], *ctx.outputs[0],
                                  [](auto x, auto s) { return is_negative(x) ? wrap_mul(s, x) : x; });
  }, [&](DataType d) { return bad_dtype(ctx, d); });
}

Status max(ExecContext& ctx) {
  return variadic_numeric(ctx, [](auto a, auto b) {
    if (is_nan(a) || is_nan(b)) return is_nan(a) ? a : b;  // NaN propagates (numpy.maximum)
    return a < b ? b : a;
  });
}

Status min(ExecContext& ctx) {
  return variadic_numeric(ctx, [](auto a, auto b) {
    if (is_nan(a) || is_nan(b)) return is_nan(a) ? a : b;
    return b < a ? b : a;
  });
}

Status equal(ExecContext& ctx) {
  if (ctx.inputs.size() == 2 && ctx.inputs[0] && ctx.inputs[0]->dtype() == DataType::kString) {
    // Opset 19's string Equal: each pair of broadcast strings compared byte for byte.
    GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
    GRAFT_RETURN_IF_ERROR(same_dtypes(ctx, 0, 2));
    const Tensor& a = *ctx.inputs[0];
    const Tensor& b = *ctx.inputs[1];
    Tensor& y = *ctx.outputs[0];
    GRAFT_ASSIGN_OR_RETURN(BroadcastWalker w, BroadcastWalker::make(y.dims(), {a.dims(), b.dims()}));
    const auto* sa = a.data_as<std::string>();
    const auto* sb = b.data_as<std::string>();
    auto* out = static_cast<uint8_t*>(y.data());
    for (int64_t i = 0, n = y.numel(); i < n; ++i, w.next()) out[i] = sa[w.offset(0)] == sb[w.offset(1)] ? 1 : 0;
    return Status::ok();
  }
  return compare(ctx, [](auto a, auto b) { return a == b; }, /*allow_bool=*/true);
}
Status less(ExecContext& ctx) {
  return compare(ctx, [](auto a, auto b) { return a < b; }, /*allow_bool=*/false);
}
Status greater(ExecContext& ctx) {
  return compare(ctx, [](auto a, auto b) { return a > b; }, /*allow_bool=*/false);
}

Status less_or_equal(ExecContext& ctx) {
  return compare(ctx, [](auto a, auto b) { return a <= b; }, /*allow_bool=*/false);
}
Status greater_or_equal(ExecContext& ctx) {
  return compare(ctx, [](auto a, auto b) { return a >= b; }, /*allow_bool=*/false);
}

Status logical_and(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  if (ctx.inputs[0]->dtype() != DataType::kBool || ctx.inputs[1]->dtype() != DataType::kBool)
    return bad_dtype(ctx, ctx.inputs[0]->dtype() != DataType::kBool ? ctx.inputs[0]->dtype() : ctx.inputs[1]->dtype());
  return map_binary<BoolTr, BoolTr, BoolTr>(*ctx.inputs[0], *ctx.inputs[1], *ctx.outputs[0],
                                            [](bool a, bool b) { return a && b; });
}

Status logical_or(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  if (ctx.inputs[0]->dtype() != DataType::kBool || ctx.inputs[1]->dtype() != DataType::kBool)
    return bad_dtype(ctx, ctx.inputs[0]->dtype() != DataType::kBool ? ctx.inputs[0]->dtype() : ctx.inputs[1]->dtype());
  return map_binary<BoolTr, BoolTr, BoolTr>(*ctx.inputs[0], *ctx.inputs[1], *ctx.outputs[0],
                                            [](bool a, bool b) { return a || b; });
}

Status sum(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  GRAFT_RETURN_IF_ERROR(same_dtypes(ctx, 0, ctx.inputs.size()));
  Tensor& out = *ctx.outputs[0];
  if (dtype_is_integer(out.dtype())) {
    return variadic_numeric(ctx, [](auto a, auto b) {
      using C = decltype(a);
      if constexpr (std::is_integral_v<C>) {
        using U = wrap_t<C>;
        return static_cast<C>(static_cast<U>(a) + static_cast<U>(b));
      } else {
        return a + b;  // not reached: floats take the double path below
      }
    });
  }
  if (!dtype_is_float(out.dtype())) return bad_dtype(ctx, out.dtype());
  // Accumulate in double and round once, so float16 sums of many inputs do not drift.
  std::vector<double> acc(static_cast<size_t>(out.numel()), 0.0);
  for (const Tensor* in : ctx.inputs) {
    if (!in) continue;
    GRAFT_ASSIGN_OR_RETURN(BroadcastWalker w, BroadcastWalker::make(out.dims(), {in->dims()}));
    for (int64_t i = 0, n = out.numel(); i < n; ++i, w.next()) acc[i] += in->get(w.offset(0));
  }
  for (int64_t i = 0, n = out.numel(); i < n; ++i) out.set(i, acc[i]);
  return Status::ok();
}

Status where(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 3));
  const Tensor& c = *ctx.inputs[0];
  const Tensor& x = *ctx.inputs[1];
  const Tensor& y = *ctx.inputs[2];
  Tensor& out = *ctx.outputs[0];
  if (c.dtype() != DataType::kBool)
    return error(StatusCode::kInvalidModel, "Where condition must be bool, got ", dtype_name(c.dtype()));
  GRAFT_RETURN_IF_ERROR(same_dtypes(ctx, 1, 2));
  GRAFT_CHECK(out.dtype() == x.dtype());
  // Dtype-agnostic: copy the selected element's bytes.
  const size_t es = dtype_size(x.dtype());
  GRAFT_ASSIGN_OR_RETURN(BroadcastWalker w, BroadcastWalker::make(out.dims(), {c.dims(), x.dims(), y.dims()}));
  auto* dst = static_cast<unsigned char*>(out.data());
  const auto* cp = static_cast<const uint8_t*>(c.data());
  const auto* xp = static_cast<const unsigned char*>(x.data());
  const auto* yp = static_cast<const unsigned char*>(y.data());
  for (int64_t i = 0, n = out.numel(); i < n; ++i, w.next()) {
    const unsigned char* src = cp[w.offset(0)] ? xp + w.offset(1) * es : yp + w.offset(2) * es;
    std::memcpy(dst + i * es, src, es);
  }
  return Status::ok();
}

// ---- the suite's rarer ops ----------------------------------------------------------------------

namespace {

template <typename F>
Status unary_numeric(ExecContext& ctx, F f) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  return visit_numeric(ctx.inputs[0]->dtype(), [&](auto tr) -> Status {
    using Tr = decltype(tr);
    return map_unary<Tr, Tr>(ctx, f);
  }, [&](DataType t) { return bad_dtype(ctx, t); });
}

template <typename F>
Status float_predicate(ExecContext& ctx, F f) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  return visit_float(ctx.inputs[0]->dtype(), [&](auto tr) -> Status {
    using Tr = decltype(tr);
    return map_unary<Tr, BoolTr>(ctx, [&](auto v) { return static_cast<bool>(f(v)); });
  }, [&](DataType t) { return bad_dtype(ctx, t); });
}

}  // namespace

Status mod(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  const Tensor& a = *ctx.inputs[0];
  const Tensor& b = *ctx.inputs[1];
  Tensor& y = *ctx.outputs[0];
  if (a.dtype() != b.dtype())
    return error(StatusCode::kInvalidModel, "Mod inputs have dtypes ", dtype_name(a.dtype()), " and ",
                 dtype_name(b.dtype()));
  GRAFT_ASSIGN_OR_RETURN(int64_t fmod, attrs_of(ctx).get_int("fmod", 0));
  GRAFT_ASSIGN_OR_RETURN(BroadcastWalker w, BroadcastWalker::make(y.dims(), {a.dims(), b.dims()}));
  return visit_numeric(a.dtype(), [&](auto tr) -> Status {
    using Tr = decltype(tr);
    using C = decltype(Tr::load(nullptr, 0));
    for (int64_t i = 0, n = y.numel(); i < n; ++i, w.next()) {
      const C x = Tr::load(a.data(), w.offset(0)), d = Tr::load(b.data(), w.offset(1));
      C r;
      if constexpr (std::is_integral_v<C> && std::is_unsigned_v<C>) {
        // No signs to reconcile: both conventions agree, and uint64 must not go through int64.
        if (d == 0) return error(StatusCode::kRuntimeError, "Mod: integer division by zero at output element ", i);
        r = static_cast<C>(x % d);
      } else if constexpr (std::is_integral_v<C>) {
        if (d == 0) return error(StatusCode::kRuntimeError, "Mod: integer division by zero at output element ", i);
        // 64-bit so that x % -1 cannot overflow for a narrower type's minimum; for int64's minimum
        // it would (undefined, SIGFPE on x86), and x % -1 is 0 for every x.
        int64_t t = std::is_signed_v<C> && d == C(-1) ? 0 : static_cast<int64_t>(x) % static_cast<int64_t>(d);
        if (!fmod && t != 0 && ((t < 0) != (d < 0))) t += d;  // Python semantics: the divisor's sign
        r = static_cast<C>(t);
      } else {
        if (!fmod) return attr_error("fmod", "Mod of floating-point inputs needs fmod=1");
        r = std::fmod(x, d);
      }
      Tr::store(y.data(), i, r);
    }
    return Status::ok();
  }, [&](DataType t) { return bad_dtype(ctx, t); });
}

Status logical_xor(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  const Tensor& a = *ctx.inputs[0];
  const Tensor& b = *ctx.inputs[1];
  Tensor& y = *ctx.outputs[0];
  if (a.dtype() != DataType::kBool || b.dtype() != DataType::kBool) return bad_dtype(ctx, a.dtype());
  GRAFT_ASSIGN_OR_RETURN(BroadcastWalker w, BroadcastWalker::make(y.dims(), {a.dims(), b.dims()}));
  for (int64_t i = 0, n = y.numel(); i < n; ++i, w.next())
    BoolTr::store(y.data(), i, BoolTr::load(a.data(), w.offset(0)) != BoolTr::load(b.data(), w.offset(1)));
  return Status::ok();
}

Status tan(ExecContext& ctx) { return unary_float(ctx, [](auto v) { return std::tan(v); }); }
Status asin(ExecContext& ctx) { return unary_float(ctx, [](auto v) { return std::asin(v); }); }
Status acos(ExecContext& ctx) { return unary_float(ctx, [](auto v) { return std::acos(v); }); }
Status atan(ExecContext& ctx) { return unary_float(ctx, [](auto v) { return std::atan(v); }); }
Status sinh(ExecContext& ctx) { return unary_float(ctx, [](auto v) { return std::sinh(v); }); }
Status cosh(ExecContext& ctx) { return unary_float(ctx, [](auto v) { return std::cosh(v); }); }
Status asinh(ExecContext& ctx) { return unary_float(ctx, [](auto v) { return std::asinh(v); }); }
Status acosh(ExecContext& ctx) { return unary_float(ctx, [](auto v) { return std::acosh(v); }); }
Status atanh(ExecContext& ctx) { return unary_float(ctx, [](auto v) { return std::atanh(v); }); }
// nearbyint under the default rounding mode rounds halves to even, as ONNX Round requires.
Status round(ExecContext& ctx) { return unary_float(ctx, [](auto v) { return std::nearbyint(v); }); }
// Mish (opset 18): x * tanh(softplus(x)), softplus written so that exp cannot overflow.
Status mish(ExecContext& ctx) {
  return unary_float(ctx, [](auto v) {
    using C = decltype(v);
    const C softplus = v > C(0) ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
    return v * std::tanh(softplus);
  });
}
Status softsign(ExecContext& ctx) {
  return unary_float(ctx, [](auto v) { return v / (static_cast<decltype(v)>(1) + std::fabs(v)); });
}

Status sign(ExecContext& ctx) {
  return unary_numeric(ctx, [](auto v) {
    using C = decltype(v);
    if (v != v) return v;  // NaN stays NaN
    return static_cast<C>(v > C(0) ? 1 : v < C(0) ? -1 : 0);
  });
}

Status selu(ExecContext& ctx) {
  const AttributeMap& attrs = attrs_of(ctx);
  GRAFT_ASSIGN_OR_RETURN(float alpha, attrs.get_float("alpha", 1.67326319217681884765625f));
  GRAFT_ASSIGN_OR_RETURN(float gamma, attrs.get_float("gamma", 1.05070102214813232421875f));
  return unary_float(ctx, [&](auto v) {
    using C = decltype(v);
    return static_cast<C>(v > C(0) ? gamma * v : gamma * (alpha * std::exp(v) - alpha));
  });
}

Status celu(ExecContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(float alpha, celu_alpha(attrs_of(ctx)));
  return unary_float(ctx, [&](auto v) {
    using C = decltype(v);
    const C a = static_cast<C>(alpha);
    // expm1 keeps the small negative inputs accurate, where exp(x / alpha) - 1 cancels.
    return v > C(0) ? v : static_cast<C>(a * std::expm1(v / a));
  });
}

Status shrink(ExecContext& ctx) {
  const AttributeMap& attrs = attrs_of(ctx);
  GRAFT_ASSIGN_OR_RETURN(float lambd, attrs.get_float("lambd", 0.5f));
  GRAFT_ASSIGN_OR_RETURN(float bias, attrs.get_float("bias", 0.0f));
  return unary_numeric(ctx, [&](auto v) {
    using C = decltype(v);
    const double x = static_cast<double>(v);
    return static_cast<C>(x < -lambd ? x + bias : x > lambd ? x - bias : 0.0);
  });
}

Status thresholded_relu(ExecContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(float alpha, attrs_of(ctx).get_float("alpha", 1.0f));
  return unary_float(ctx, [&](auto v) {
    using C = decltype(v);
    return v > static_cast<C>(alpha) ? v : C(0);
  });
}

Status is_nan(ExecContext& ctx) { return float_predicate(ctx, [](auto v) { return std::isnan(v); }); }

Status is_inf(ExecContext& ctx) {
  const AttributeMap& attrs = attrs_of(ctx);
  GRAFT_ASSIGN_OR_RETURN(int64_t neg, attrs.get_int("detect_negative", 1));
  GRAFT_ASSIGN_OR_RETURN(int64_t pos, attrs.get_int("detect_positive", 1));
  return float_predicate(ctx, [&](auto v) { return std::isinf(v) && (v > 0 ? pos != 0 : neg != 0); });
}

Status mean(ExecContext& ctx) {
  if (ctx.inputs.empty() || ctx.outputs.empty() || !ctx.outputs[0])
    return error(StatusCode::kInternal, "Mean kernel called without inputs or output");
  Tensor& y = *ctx.outputs[0];
  std::vector<std::vector<int64_t>> operand_dims;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    if (!ctx.inputs[i] || ctx.inputs[i]->dtype() != y.dtype())
      return error(StatusCode::kInvalidModel, "Mean input ", static_cast<int64_t>(i), " is missing or has another dtype");
    operand_dims.push_back(ctx.inputs[i]->dims());
  }
  if (!dtype_is_float(y.dtype())) return bad_dtype(ctx, y.dtype());
  GRAFT_ASSIGN_OR_RETURN(BroadcastWalker w, BroadcastWalker::make(y.dims(), operand_dims));
  const double n = static_cast<double>(ctx.inputs.size());
  for (int64_t e = 0; e < y.numel(); ++e, w.next()) {
    double s = 0;
    for (size_t i = 0; i < ctx.inputs.size(); ++i) s += ctx.inputs[i]->get(w.offset(i));
    y.set(e, s / n);
  }
  return Status::ok();
}

}  // namespace cpu

// ---- attributes -----------------------------------------------------------------------------------

Result<float> celu_alpha(const AttributeMap& attrs) {
  auto a = attrs.get_float("alpha", 1.0f);
  if (!a) return Status(a.status()).with_attribute("alpha");
  if (!std::isfinite(a.value()) || a.value() == 0.0f)
    return attr_error("alpha", "must be finite and nonzero (Celu divides by it), got ", static_cast<double>(a.value()));
  return a.value();
}

// ---- schemas: inference and the table rows -------------------------------------------------------

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

// Cast and CastLike also convert to and from strings (the CPU engine's, above).
const std::vector<DataType> kCastTypes = [] {
  std::vector<DataType> t = kAllTypes;
  t.insert(t.end(), {DataType::kString, DataType::kInt4, DataType::kUInt4, DataType::kFloat8E4M3FN,
                     DataType::kFloat8E4M3FNUZ, DataType::kFloat8E5M2, DataType::kFloat8E5M2FNUZ});
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
  // Opset 19's saturate: only casts to an 8-bit float read it, but any value other than 0 or 1 is an error.
  auto saturate = ctx.attrs().get_int("saturate", 1);
  if (!saturate) return Status(saturate.status()).with_attribute("saturate");
  if (saturate.value() != 0 && saturate.value() != 1)
    return Status(error(StatusCode::kInvalidModel, "saturate must be 0 or 1, got ", saturate.value()))
        .with_attribute("saturate");
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


bool all_const(const std::vector<Dim>& a) {
  return std::all_of(a.begin(), a.end(), [](const Dim& d) { return d.is_const(); });
}

Status infer_add(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(infer_broadcast_binary(ctx, kNumericTypes));
  propagate_sym(ctx, {0, 1}, [](const std::vector<Dim>& a) { return a[0] + a[1]; });
  return Status::ok();
}

Status infer_sub(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(infer_broadcast_binary(ctx, kNumericTypes));
  propagate_sym(ctx, {0, 1}, [](const std::vector<Dim>& a) { return a[0] - a[1]; });
  return Status::ok();
}

Status infer_mul(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(infer_broadcast_binary(ctx, kNumericTypes));
  propagate_sym(ctx, {0, 1}, [](const std::vector<Dim>& a) { return a[0] * a[1]; });
  return Status::ok();
}

Status infer_div(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(infer_broadcast_binary(ctx, kNumericTypes));
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
  GRAFT_RETURN_IF_ERROR(infer_broadcast_binary(ctx, kSignedTypes));
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
  if (ctx.opset() >= 19) {  // opset 19 added string tensors
    static const std::vector<DataType> kWithStrings = [] {
      std::vector<DataType> t = kAllTypes;
      t.push_back(DataType::kString);
      return t;
    }();
    GRAFT_RETURN_IF_ERROR(infer_broadcast_binary(ctx, kWithStrings, kBool));
  } else {
    GRAFT_RETURN_IF_ERROR(infer_broadcast_binary(ctx, kAllTypes, kBool));
  }
  propagate_sym(ctx, {0, 1}, [](const std::vector<Dim>& a) { return dim_eq(a[0], a[1]); });
  return Status::ok();
}

Status infer_less(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(infer_broadcast_binary(ctx, kNumericTypes, kBool));
  propagate_sym(ctx, {0, 1}, [](const std::vector<Dim>& a) { return dim_lt(a[0], a[1]); });
  return Status::ok();
}

Status infer_greater(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(infer_broadcast_binary(ctx, kNumericTypes, kBool));
  propagate_sym(ctx, {0, 1}, [](const std::vector<Dim>& a) { return dim_lt(a[1], a[0]); });
  return Status::ok();
}

Status infer_less_or_equal(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(infer_broadcast_binary(ctx, kNumericTypes, kBool));
  propagate_sym(ctx, {0, 1}, [](const std::vector<Dim>& a) { return Dim(1) - dim_lt(a[1], a[0]); });
  return Status::ok();
}

Status infer_greater_or_equal(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(infer_broadcast_binary(ctx, kNumericTypes, kBool));
  propagate_sym(ctx, {0, 1}, [](const std::vector<Dim>& a) { return Dim(1) - dim_lt(a[0], a[1]); });
  return Status::ok();
}

Status infer_logical_binary(InferContext& ctx) { return infer_broadcast_binary(ctx, {kBool}, kBool); }

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

// ---- the suite's rarer ops: unary ------------------------------------------------------------------

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

// ---- the suite's rarer ops: binary and variadic --------------------------------------------------


Status infer_xor(InferContext& ctx) { return infer_broadcast_binary(ctx, {kBool}); }

Status infer_mod(InferContext& ctx) {
  auto fmod = ctx.attrs().get_int("fmod", 0);
  if (!fmod) return Status(fmod.status()).with_attribute("fmod");
  if (fmod.value() != 0 && fmod.value() != 1)
    return Status(ctx.fail("must be 0 or 1, got ", fmod.value())).with_attribute("fmod");
  GRAFT_RETURN_IF_ERROR(infer_broadcast_binary(ctx, kNumericTypes));
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

void append_elementwise_ops(std::vector<OpEntry>& out) {
  const std::vector<OpEntry> ops = {
      fuses_as(EwOp::kRelu, elementwise_unary({"Relu", 11, infer_unary_signed, cpu::relu})),
      elementwise_unary({"LeakyRelu", 11, infer_leaky_relu, cpu::leaky_relu}),
      {"PRelu", 11, infer_prelu, cpu::prelu},
      fuses_as(EwOp::kSigmoid, elementwise_unary({"Sigmoid", 11, infer_unary_float, cpu::sigmoid})),
      fuses_as(EwOp::kTanh, elementwise_unary({"Tanh", 11, infer_unary_float, cpu::tanh})),
      fuses_as(EwOp::kErf, elementwise_unary({"Erf", 11, infer_unary_float, cpu::erf})),
      elementwise_unary({"Gelu", 11, infer_gelu, cpu::gelu}),
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
      takes_strings({"Equal", 11, infer_equal, cpu::equal}),  // strings from opset 19
      {"Less", 11, infer_less, cpu::less},
      {"Greater", 11, infer_greater, cpu::greater},
      {"Where", 11, infer_where, cpu::where},
      {"Not", 11, infer_not, cpu::logical_not},
      takes_strings(elementwise_unary(keeps_float32({"Cast", 11, infer_cast, cpu::cast}))),
      reshapes_in_place(takes_strings(elementwise_unary(
          {"Identity", 11, infer_identity, cpu::identity, /*output_shape_from_kernel=*/false, /*takes_containers=*/true}))),
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
      elementwise_unary({"Celu", 12, infer_celu, cpu::celu}),
      elementwise_unary({"Shrink", 9, infer_shrink, cpu::shrink}),
      elementwise_unary({"ThresholdedRelu", 10, infer_thresholded_relu, cpu::thresholded_relu}),
      elementwise_unary({"Softsign", 1, infer_unary_float, cpu::softsign}),
      elementwise_unary({"Mish", 18, infer_unary_float, cpu::mish}),
      {"IsNaN", 9, infer_is_nan, cpu::is_nan},
      {"IsInf", 10, infer_is_inf, cpu::is_inf},
      {"Mean", 11, infer_mean, cpu::mean},
  };
  out.insert(out.end(), ops.begin(), ops.end());
}

}  // namespace graft
