#include "backends/cpu/elementwise.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "backends/cpu/element_traits.h"
#include "backends/cpu/unary_kernel.h"
#include "core/checked_math.h"
#include "ops/strings/strings.h"

namespace graft::cpu {

namespace detail {

Result<BroadcastWalker> BroadcastWalker::make(const std::vector<int64_t>& out_dims,
                                              const std::vector<std::vector<int64_t>>& operand_dims) {
  BroadcastWalker w;
  w.dims_ = out_dims;
  const size_t rank = out_dims.size();
  w.index_.assign(rank, 0);
  w.offsets_.assign(operand_dims.size(), 0);
  for (const auto& in : operand_dims) {
    if (in.size() > rank)
      return error(StatusCode::kRuntimeError, "operand of shape ", shape_to_string(shape_from_values(in)),
                   " has a higher rank than the output ", shape_to_string(shape_from_values(out_dims)));
    std::vector<int64_t> strides(rank, 0);
    int64_t stride = 1;
    for (size_t k = 0; k < in.size(); ++k) {
      size_t in_axis = in.size() - 1 - k;
      size_t out_axis = rank - 1 - k;
      if (in[in_axis] == out_dims[out_axis]) {
        strides[out_axis] = in[in_axis] == 1 ? 0 : stride;
      } else if (in[in_axis] == 1) {
        strides[out_axis] = 0;
      } else {
        return error(StatusCode::kRuntimeError, "operand of shape ", shape_to_string(shape_from_values(in)),
                     " cannot be broadcast to the output shape ", shape_to_string(shape_from_values(out_dims)));
      }
      stride *= in[in_axis];
    }
    w.strides_.push_back(std::move(strides));
  }
  return w;
}

void BroadcastWalker::next() {
  for (size_t d = dims_.size(); d-- > 0;) {
    ++index_[d];
    for (size_t k = 0; k < offsets_.size(); ++k) offsets_[k] += strides_[k][d];
    if (index_[d] < dims_[d]) return;
    for (size_t k = 0; k < offsets_.size(); ++k) offsets_[k] -= strides_[k][d] * dims_[d];
    index_[d] = 0;
  }
}

}  // namespace detail

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
    return C(0.5) * x * (C(1) + std::erf(x * static_cast<C>(0.70710678118654752440)));
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
    return map_unary<Tr>(ctx, [lo, hi](C x) { return x < lo ? lo : (x > hi ? hi : x) ; });
  }, [&](DataType d) { return bad_dtype(ctx, d); });
}

Status logical_not(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  if (ctx.inputs[0]->dtype() != DataType::kBool) return bad_dtype(ctx, ctx.inputs[0]->dtype());
  return map_unary<BoolTr>(ctx, [](bool x) { return !x; });
}

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
  return visit_all(from, [&](auto trf) -> Status {
    using TrF = decltype(trf);
    return visit_all(to, [&](auto trt) -> Status {
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

}  // namespace graft::cpu
