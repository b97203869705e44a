#include "backends/cpu/extra.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "backends/cpu/element_traits.h"
#include "backends/cpu/broadcast_walker.h"
#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"
#include "ops/reduce_norm/reduce_norm.h"
#include "core/checked_math.h"

namespace graft::cpu {
namespace {

using detail::BroadcastWalker;

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


Status trilu(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  GRAFT_ASSIGN_OR_RETURN(int64_t upper, attrs_of(ctx).get_int("upper", 1));
  int64_t k = 0;
  if (ctx.inputs.size() > 1 && ctx.inputs[1]) {
    auto kv = ctx.inputs[1]->to_int64_vector();
    if (kv.size() != 1)
      return error(StatusCode::kInvalidModel, "Trilu input k must hold one value, got ", static_cast<int64_t>(kv.size()));
    k = kv[0];
  }
  if (x.rank() < 2) return error(StatusCode::kInvalidModel, "Trilu input must have rank >= 2, got ", x.rank());
  GRAFT_CHECK(x.nbytes() == y.nbytes() && x.dtype() == y.dtype());
  const int64_t rows = x.dims()[x.rank() - 2], cols = x.dims()[x.rank() - 1];
  const size_t esize = dtype_size(x.dtype());
  if (y.nbytes()) std::memset(y.data(), 0, y.nbytes());  // zero is all-bits-zero for every graft dtype
  const int64_t plane = rows * cols;
  const int64_t planes = plane != 0 ? x.numel() / plane : 0;
  for (int64_t m = 0; m < planes; ++m)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const bool keep = upper ? c - r >= k : c - r <= k;
        if (!keep) continue;
        const int64_t off = (m * rows + r) * cols + c;
        std::memcpy(static_cast<char*>(y.data()) + off * esize, static_cast<const char*>(x.data()) + off * esize, esize);
      }
  return Status::ok();
}

Status size(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  Tensor& y = *ctx.outputs[0];
  GRAFT_CHECK(y.dtype() == DataType::kInt64 && y.numel() == 1);
  y.data_as<int64_t>()[0] = ctx.inputs[0]->numel();
  return Status::ok();
}

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

Status cumsum(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  const AttributeMap& attrs = attrs_of(ctx);
  GRAFT_ASSIGN_OR_RETURN(int64_t exclusive, attrs.get_int("exclusive", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t reverse, attrs.get_int("reverse", 0));
  const auto av = ctx.inputs[1]->to_int64_vector();
  if (av.size() != 1)
    return error(StatusCode::kInvalidModel, "CumSum input axis must hold one value, got ", static_cast<int64_t>(av.size()));
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(av[0], x.rank()));
  GRAFT_CHECK(x.numel() == y.numel() && x.dtype() == y.dtype());
  const AxisView v = axis_view(x.dims(), axis, false);
  return visit_numeric(x.dtype(), [&](auto tr) -> Status {
    using Tr = decltype(tr);
    using C = decltype(Tr::load(nullptr, 0));
    using Acc = std::conditional_t<std::is_integral_v<C>, int64_t, double>;
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t i = 0; i < v.inner; ++i) {
        Acc acc = 0;
        for (int64_t t = 0; t < v.n; ++t) {
          const int64_t k = reverse ? v.n - 1 - t : t;
          const int64_t off = (o * v.n + k) * v.inner + i;
          const Acc val = static_cast<Acc>(Tr::load(x.data(), off));
          if (!exclusive) acc += val;
          Tr::store(y.data(), off, static_cast<C>(acc));
          if (exclusive) acc += val;
        }
      }
    return Status::ok();
  }, [&](DataType t) { return bad_dtype(ctx, t); });
}

Status one_hot(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 3));
  const Tensor& ind = *ctx.inputs[0];
  const Tensor& depth_t = *ctx.inputs[1];
  const Tensor& vals = *ctx.inputs[2];
  Tensor& y = *ctx.outputs[0];
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, attrs_of(ctx).get_int("axis", -1));
  if (depth_t.numel() != 1 || vals.numel() != 2)
    return error(StatusCode::kInvalidModel, "OneHot needs a one-value depth and two values (off, on), got ",
                 depth_t.numel(), " and ", vals.numel());
  const auto depth_v = checked_int64(depth_t.get(0));  // may be a float (NaN, 1e30): checked
  if (!depth_v || *depth_v < 1)
    return error(StatusCode::kInvalidModel, "OneHot depth must be a positive integer, got ", depth_t.get(0));
  const int64_t depth = *depth_v;
  auto axis = normalize_axis(axis_attr, ind.rank() + 1);
  if (!axis) return Status(axis.status()).with_attribute("axis");
  // Output viewed as [outer, depth, inner] where outer*inner enumerates the indices.
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < ind.rank(); ++d) (d < axis.value() ? outer : inner) *= ind.dims()[d];
  GRAFT_CHECK(y.numel() == outer * depth * inner && y.dtype() == vals.dtype());
  const size_t es = dtype_size(vals.dtype());
  const char* off_v = static_cast<const char*>(vals.data());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      // Indices may be float; they are truncated (saturating: NaN or huge floats, and int64 indices
      // near its limits, whose double is 2^63, must not convert with UB), negative ones count from
      // the end.
      int64_t k = saturating_int64(ind.get(o * inner + i));
      if (k < 0 && k >= -depth) k += depth;
      for (int64_t d = 0; d < depth; ++d)
        std::memcpy(static_cast<char*>(y.data()) + ((o * depth + d) * inner + i) * es, off_v + (d == k ? es : 0), es);
    }
  return Status::ok();
}

namespace {

Status depth_space(ExecContext& ctx, bool to_space) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  GRAFT_ASSIGN_OR_RETURN(int64_t b, attrs_of(ctx).get_int("blocksize", 0));
  GRAFT_ASSIGN_OR_RETURN(std::string mode, attrs_of(ctx).get_string("mode", "DCR"));
  if (x.rank() != 4 || b < 1) return error(StatusCode::kInvalidModel, op_name(ctx), " needs 4-D input and blocksize >= 1");
  GRAFT_CHECK(x.numel() == y.numel() && x.dtype() == y.dtype() && y.rank() == 4);
  // Walk the depth (fewer channels, larger space) side; `space` is the other tensor.
  const Tensor& deep = to_space ? x : y;
  const Tensor& space = to_space ? y : x;
  const int64_t N = space.dims()[0], C = space.dims()[1], H = deep.dims()[2], W = deep.dims()[3];
  const int64_t SH = space.dims()[2], SW = space.dims()[3];
  const bool crd = to_space && mode == "CRD";
  const size_t es = dtype_size(x.dtype());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          for (int64_t i = 0; i < b; ++i)
            for (int64_t j = 0; j < b; ++j) {
              const int64_t dc = crd ? (c * b + i) * b + j : (i * b + j) * C + c;
              const int64_t d_off = ((n * C * b * b + dc) * H + h) * W + w;
              const int64_t s_off = ((n * C + c) * SH + h * b + i) * SW + w * b + j;
              const int64_t src = to_space ? d_off : s_off, dst = to_space ? s_off : d_off;
              std::memcpy(static_cast<char*>(y.data()) + dst * es, static_cast<const char*>(x.data()) + src * es, es);
            }
  return Status::ok();
}

}  // namespace

Status depth_to_space(ExecContext& ctx) { return depth_space(ctx, true); }
Status space_to_depth(ExecContext& ctx) { return depth_space(ctx, false); }

Status compress(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  const auto cond = ctx.inputs[1]->to_int64_vector();
  const AttributeMap& attrs = attrs_of(ctx);
  const bool has_axis = attrs.find("axis") != nullptr;
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, attrs.get_int("axis", 0));
  std::vector<int64_t> dims = has_axis ? x.dims() : std::vector<int64_t>{x.numel()};
  auto axis = normalize_axis(has_axis ? axis_attr : 0, static_cast<int64_t>(dims.size()));
  if (!axis) return Status(axis.status()).with_attribute("axis");
  const AxisView v = axis_view(dims, axis.value(), false);
  if (static_cast<int64_t>(cond.size()) > v.n)
    return error(StatusCode::kInvalidModel, "Compress condition has ", static_cast<int64_t>(cond.size()),
                 " entries but the axis has ", v.n);
  std::vector<int64_t> keep;
  for (int64_t t = 0; t < static_cast<int64_t>(cond.size()); ++t)
    if (cond[t]) keep.push_back(t);
  const int64_t kn = static_cast<int64_t>(keep.size());
  GRAFT_CHECK(y.numel() == v.outer * kn * v.inner && y.dtype() == x.dtype());
  const size_t es = dtype_size(x.dtype());
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t t = 0; t < kn; ++t)
      std::memcpy(static_cast<char*>(y.data()) + (o * kn + t) * v.inner * es,
                  static_cast<const char*>(x.data()) + (o * v.n + keep[t]) * v.inner * es, v.inner * es);
  return Status::ok();
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

}  // namespace graft::cpu
