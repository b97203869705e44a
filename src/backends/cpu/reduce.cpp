#include "backends/cpu/reduce.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cpu/element_traits.h"
#include "backends/cpu/elementwise.h"

namespace graft::cpu {

namespace {

enum class ReduceKind { kSum, kMean, kMax, kMin, kProd, kSumSquare, kL2 };

Status reduce(ExecContext& ctx, ReduceKind kind) {
  if (ctx.inputs.empty() || !ctx.inputs[0] || ctx.outputs.empty() || !ctx.outputs[0])
    return error(StatusCode::kInternal, "reduce kernel called without input or output");
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  static const AttributeMap kEmpty;
  const AttributeMap& attrs = ctx.attrs ? *ctx.attrs : kEmpty;
  const bool axes_present = ctx.inputs.size() > 1 && ctx.inputs[1] != nullptr;
  std::optional<std::vector<int64_t>> axes_in;
  if (axes_present) axes_in = ctx.inputs[1]->to_int64_vector();
  GRAFT_ASSIGN_OR_RETURN(ReduceAxes ra, resolve_reduce_axes(attrs, x.rank(), axes_present, axes_in));
  GRAFT_CHECK(ra.known);
  if (ra.noop) {
    GRAFT_CHECK(x.nbytes() == y.nbytes() && x.dtype() == y.dtype());
    if (x.nbytes()) std::memcpy(y.data(), x.data(), x.nbytes());
    return Status::ok();
  }
  // The output with reduced axes kept as 1, broadcast back over the input, maps each input
  // element to its accumulator.
  std::vector<int64_t> kept = x.dims();
  int64_t count = 1;
  for (int64_t d = 0; d < x.rank(); ++d) {
    bool reduced = ra.axes.empty() || std::find(ra.axes.begin(), ra.axes.end(), d) != ra.axes.end();
    if (reduced) {
      count *= kept[d];
      kept[d] = 1;
    }
  }
  const int64_t n_out = numel_of(kept);
  GRAFT_CHECK(n_out == y.numel(), "output has ", y.numel(), " elements, expected ", n_out);
  GRAFT_ASSIGN_OR_RETURN(detail::BroadcastWalker w, detail::BroadcastWalker::make(x.dims(), {kept}));

  if (dtype_is_integer(x.dtype())) {
    if (kind == ReduceKind::kL2)
      return error(StatusCode::kUnsupported, "ReduceL2 of integer dtype ", dtype_name(x.dtype()), " is not supported");
    // uint64 elements are held as their bit patterns (load_as_int64), so its order and its
    // division (Mean) are the unsigned ones; sums and products wrap identically either way.
    const bool u64 = x.dtype() == DataType::kUInt64;
    const int64_t init = kind == ReduceKind::kMax   ? (u64 ? 0 : std::numeric_limits<int64_t>::lowest())
                         : kind == ReduceKind::kMin ? (u64 ? -1 : std::numeric_limits<int64_t>::max())
                         : kind == ReduceKind::kProd ? 1 : 0;
    auto less = [u64](int64_t p, int64_t q) {
      return u64 ? static_cast<uint64_t>(p) < static_cast<uint64_t>(q) : p < q;
    };
    std::vector<int64_t> acc(n_out, init);
    for (int64_t i = 0; i < x.numel(); ++i, w.next()) {
      const int64_t xi = load_as_int64(x.dtype(), x.data(), i);
      // Unsigned arithmetic: overflow wraps instead of being UB.
      const auto u = static_cast<uint64_t>(xi);
      int64_t& a = acc[w.offset(0)];
      switch (kind) {
        case ReduceKind::kMax: if (less(a, xi)) a = xi; break;
        case ReduceKind::kMin: if (less(xi, a)) a = xi; break;
        case ReduceKind::kProd: a = static_cast<int64_t>(static_cast<uint64_t>(a) * u); break;
        case ReduceKind::kSumSquare: a = static_cast<int64_t>(static_cast<uint64_t>(a) + u * u); break;
        default: a = static_cast<int64_t>(static_cast<uint64_t>(a) + u); break;
      }
    }
    for (int64_t o = 0; o < n_out; ++o) {
      int64_t v = acc[o];
      if (kind == ReduceKind::kMean)
        v = !count ? 0 : u64 ? static_cast<int64_t>(static_cast<uint64_t>(v) / static_cast<uint64_t>(count)) : v / count;
      store_from_int64(y.dtype(), y.data(), o, v);
    }
    return Status::ok();
  }
  if (!dtype_is_float(x.dtype()))
    return error(StatusCode::kUnsupported, "reduction of dtype ", dtype_name(x.dtype()), " is not supported");
  const double init = kind == ReduceKind::kMax ? -INFINITY : kind == ReduceKind::kMin ? INFINITY
                      : kind == ReduceKind::kProd ? 1.0 : 0.0;
  std::vector<double> acc(n_out, init);
  for (int64_t i = 0; i < x.numel(); ++i, w.next()) {
    double v = x.get(i);
    double& a = acc[w.offset(0)];
    switch (kind) {
      // NaN sticks: nothing compares greater (or less) than it.
      case ReduceKind::kMax: if (std::isnan(v) || v > a) a = v; break;
      case ReduceKind::kMin: if (std::isnan(v) || v < a) a = v; break;
      case ReduceKind::kProd: a *= v; break;
      case ReduceKind::kSumSquare: case ReduceKind::kL2: a += v * v; break;
      default: a += v; break;
    }
  }
  for (int64_t o = 0; o < n_out; ++o) {
    double v = acc[o];
    if (kind == ReduceKind::kMean) v /= static_cast<double>(count);
    if (kind == ReduceKind::kL2) v = std::sqrt(v);
    y.set(o, v);
  }
  return Status::ok();
}

}  // namespace

Status reduce_mean(ExecContext& ctx) { return reduce(ctx, ReduceKind::kMean); }
Status reduce_sum(ExecContext& ctx) { return reduce(ctx, ReduceKind::kSum); }
Status reduce_max(ExecContext& ctx) { return reduce(ctx, ReduceKind::kMax); }
Status reduce_min(ExecContext& ctx) { return reduce(ctx, ReduceKind::kMin); }
Status reduce_prod(ExecContext& ctx) { return reduce(ctx, ReduceKind::kProd); }
Status reduce_sum_square(ExecContext& ctx) { return reduce(ctx, ReduceKind::kSumSquare); }
Status reduce_l2(ExecContext& ctx) { return reduce(ctx, ReduceKind::kL2); }

namespace {

Status softmax_impl(ExecContext& ctx, bool log_output) {
  if (ctx.inputs.empty() || !ctx.inputs[0] || ctx.outputs.empty() || !ctx.outputs[0])
    return error(StatusCode::kInternal, "Softmax kernel called without input or output");
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  if (!dtype_is_float(x.dtype()))
    return error(StatusCode::kUnsupported, "Softmax of dtype ", dtype_name(x.dtype()), " is not supported");
  GRAFT_CHECK(x.numel() == y.numel());
  static const AttributeMap kEmpty;
  const AttributeMap& attrs = ctx.attrs ? *ctx.attrs : kEmpty;
  const bool legacy = ctx.opset > 0 && ctx.opset < 13;
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, attrs.get_int("axis", legacy ? 1 : -1));
  if (x.rank() == 0) {
    y.set(0, log_output ? 0.0 : 1.0);
    return Status::ok();
  }
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_attr, x.rank()));
  // View x as [outer, n, inner]; softmax runs over n. Opset < 13 flattens every axis from `axis`
  // on into n (the "coerce to 2-D" rule), so inner is 1 there.
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d < axis) outer *= x.dims()[d];
    else if (d == axis || legacy) n *= x.dims()[d];
    else inner *= x.dims()[d];
  }
  std::vector<double> row(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * n * inner + i;
      double m = -INFINITY;
      for (int64_t k = 0; k < n; ++k) {
        row[k] = x.get(base + k * inner);
        m = std::max(m, row[k]);
      }
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        row[k] = std::exp(row[k] - m);
        sum += row[k];
      }
      const double log_sum = std::log(sum);
      for (int64_t k = 0; k < n; ++k) {
        const int64_t idx = base + k * inner;
        y.set(idx, log_output ? x.get(idx) - m - log_sum : row[k] / sum);
      }
    }
  }
  return Status::ok();
}

}  // namespace

Status softmax(ExecContext& ctx) { return softmax_impl(ctx, /*log_output=*/false); }
Status log_softmax(ExecContext& ctx) { return softmax_impl(ctx, /*log_output=*/true); }

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

}  // namespace graft::cpu
