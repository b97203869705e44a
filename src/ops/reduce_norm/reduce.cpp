// The ten Reduce ops: the reduce axes reader (reduce_norm.h), the naive CPU references (float inputs
// accumulate in double and round once on store; integers in int64) and the schemas. Axes come from an
// attribute before opset 13 (ReduceSum) / 18 (the others) and from an optional second input after;
// graft accepts whichever the node carries.
#include "ops/reduce_norm/reduce_norm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "backends/cpu/element_traits.h"
#include "backends/cpu/broadcast_walker.h"
#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"  // check_io, bad_dtype
#include "graft/status.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- reduce axes ----------------------------------------------------------------------------------

Result<ReduceAxes> resolve_reduce_axes(const AttributeMap& attrs, int64_t rank, bool axes_input_present,
                                       const std::optional<std::vector<int64_t>>& axes_input) {
  ReduceAxes r;
  auto noop = attrs.get_int("noop_with_empty_axes", 0);
  if (!noop) return Status(noop.status()).with_attribute("noop_with_empty_axes");
  std::vector<int64_t> raw;
  if (axes_input_present) {
    if (!axes_input) {
      r.known = false;
      return r;
    }
    raw = *axes_input;
  } else {
    auto a = attrs.get_ints("axes", {});
    if (!a) return Status(a.status()).with_attribute("axes");
    raw = a.value();
  }
  for (int64_t ax : raw) {
    auto n = normalize_axis(ax, rank);
    if (!n) return Status(n.status()).with_attribute("axes");
    if (std::find(r.axes.begin(), r.axes.end(), n.value()) != r.axes.end())
      return Status(error(StatusCode::kInvalidModel, "axis ", ax, " appears more than once")).with_attribute("axes");
    r.axes.push_back(n.value());
  }
  std::sort(r.axes.begin(), r.axes.end());
  r.noop = r.axes.empty() && noop.value() != 0;
  return r;
}

// ---- CPU reference ---------------------------------------------------------------------------------

namespace cpu {

namespace {

enum class ReduceKind { kSum, kMean, kMax, kMin, kProd, kSumSquare, kL2 };

// The integer type's lowest or highest value, as the int64 bit pattern load_as_int64 gives: Max's and
// Min's start, and so their result over an empty set (ONNX: the type's minimum or maximum value).
int64_t type_extreme(DataType t, bool highest) {
  switch (t) {
    case DataType::kInt8: return highest ? INT8_MAX : INT8_MIN;
    case DataType::kUInt8: return highest ? UINT8_MAX : 0;
    case DataType::kInt16: return highest ? INT16_MAX : INT16_MIN;
    case DataType::kUInt16: return highest ? UINT16_MAX : 0;
    case DataType::kInt32: return highest ? INT32_MAX : INT32_MIN;
    case DataType::kUInt32: return highest ? int64_t{UINT32_MAX} : 0;
    case DataType::kUInt64: return highest ? -1 : 0;  // all bits set: UINT64_MAX
    default: return highest ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::lowest();
  }
}

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

  if (x.dtype() == DataType::kBool) {  // ReduceMax and ReduceMin from opset 20: any and all
    if (kind != ReduceKind::kMax && kind != ReduceKind::kMin)
      return error(StatusCode::kUnsupported, "reduction of dtype bool is not supported");
    const uint8_t init = kind == ReduceKind::kMax ? 0 : 1;  // the empty reduction: false, true
    std::vector<uint8_t> acc(static_cast<size_t>(n_out), init);
    const auto* in = static_cast<const uint8_t*>(x.data());
    for (int64_t i = 0; i < x.numel(); ++i, w.next()) {
      uint8_t& a = acc[w.offset(0)];
      a = kind == ReduceKind::kMax ? (a | (in[i] != 0)) : (a & (in[i] != 0));
    }
    std::memcpy(y.data(), acc.data(), acc.size());
    return Status::ok();
  }
  if (dtype_is_integer(x.dtype())) {
    if (kind == ReduceKind::kL2)
      return error(StatusCode::kUnsupported, "ReduceL2 of integer dtype ", dtype_name(x.dtype()), " is not supported");
    // uint64 elements are held as their bit patterns (load_as_int64), so its order and its
    // division (Mean) are the unsigned ones; sums and products wrap identically either way.
    const bool u64 = x.dtype() == DataType::kUInt64;
    const int64_t init = kind == ReduceKind::kMax   ? type_extreme(x.dtype(), /*highest=*/false)
                         : kind == ReduceKind::kMin ? type_extreme(x.dtype(), /*highest=*/true)
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

// ReduceL1, ReduceLogSum and ReduceLogSumExp (the suite's rarer reductions): float and, for L1,
// integer inputs, accumulated in double.
using detail::BroadcastWalker;

enum class Reduction { kL1, kLogSum, kLogSumExp };

Status reduce_more(ExecContext& ctx, Reduction kind) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  const bool axes_present = ctx.inputs.size() > 1 && ctx.inputs[1] != nullptr;
  std::optional<std::vector<int64_t>> axes_in;
  if (axes_present) axes_in = ctx.inputs[1]->to_int64_vector();
  GRAFT_ASSIGN_OR_RETURN(ReduceAxes ra, resolve_reduce_axes(attrs_of(ctx), x.rank(), axes_present, axes_in));
  GRAFT_CHECK(ra.known);
  std::vector<int64_t> kept = x.dims();
  if (!ra.noop)
    for (int64_t d = 0; d < x.rank(); ++d)
      if (ra.axes.empty() || std::find(ra.axes.begin(), ra.axes.end(), d) != ra.axes.end()) kept[d] = 1;
  const int64_t n_out = numel_of(kept);
  GRAFT_CHECK(n_out == y.numel(), "output has ", y.numel(), " elements, expected ", n_out);
  GRAFT_ASSIGN_OR_RETURN(BroadcastWalker w, BroadcastWalker::make(x.dims(), {kept}));
  std::vector<int64_t> dest(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i, w.next()) dest[i] = w.offset(0);
  return visit_numeric(x.dtype(), [&](auto tr) -> Status {
    using Tr = decltype(tr);
    using C = decltype(Tr::load(nullptr, 0));
    if constexpr (std::is_integral_v<C>) {
      if (kind != Reduction::kL1) return bad_dtype(ctx, x.dtype());
      std::vector<int64_t> acc(n_out, 0);
      for (int64_t i = 0; i < x.numel(); ++i) {
        const int64_t v = static_cast<int64_t>(Tr::load(x.data(), i));
        acc[dest[i]] += v < 0 ? -v : v;
      }
      for (int64_t o = 0; o < n_out; ++o) Tr::store(y.data(), o, static_cast<C>(acc[o]));
    } else {
      // Log-sum-exp subtracts the max first so large inputs do not overflow.
      std::vector<double> mx(n_out, -INFINITY), acc(n_out, 0.0);
      if (kind == Reduction::kLogSumExp)
        for (int64_t i = 0; i < x.numel(); ++i) mx[dest[i]] = std::max(mx[dest[i]], double(Tr::load(x.data(), i)));
      for (int64_t i = 0; i < x.numel(); ++i) {
        const double v = Tr::load(x.data(), i);
        double& a = acc[dest[i]];
        if (kind == Reduction::kL1) a += std::fabs(v);
        else if (kind == Reduction::kLogSum) a += v;
        else a += std::isinf(mx[dest[i]]) ? std::exp(v) : std::exp(v - mx[dest[i]]);
      }
      for (int64_t o = 0; o < n_out; ++o) {
        double r = acc[o];
        if (kind == Reduction::kLogSum) r = std::log(r);
        else if (kind == Reduction::kLogSumExp) r = std::log(r) + (std::isinf(mx[o]) ? 0.0 : mx[o]);
        Tr::store(y.data(), o, static_cast<C>(r));
      }
    }
    return Status::ok();
  }, [&](DataType t) { return bad_dtype(ctx, t); });
}

}  // namespace

Status reduce_l1(ExecContext& ctx) { return reduce_more(ctx, Reduction::kL1); }
Status reduce_log_sum(ExecContext& ctx) { return reduce_more(ctx, Reduction::kLogSum); }
Status reduce_log_sum_exp(ExecContext& ctx) { return reduce_more(ctx, Reduction::kLogSumExp); }

}  // namespace cpu

// ---- schema ----------------------------------------------------------------------------------------

namespace {

Status infer_reduce(InferContext& ctx, bool allow_int) {
  if (!ctx.has_input(0)) return ctx.fail("required input 0 is missing");
  const TensorDesc& x = ctx.input(0);
  // Opset 20 gave ReduceMax and ReduceMin bool inputs (any and all).
  const bool bool_ok = ctx.opset() >= 20 && (ctx.node().op_type == "ReduceMax" || ctx.node().op_type == "ReduceMin");
  if (x.dtype == DataType::kBool && bool_ok) return infer::infer_reduce_shape(ctx, /*axes_int64_only=*/false);
  if (!dtype_is_float(x.dtype) && !(allow_int && dtype_is_integer(x.dtype)))
    return error(StatusCode::kUnsupported, "input 0 has dtype ", dtype_name(x.dtype), "; ", ctx.node().op_type,
                 " supports float", allow_int ? " and integer" : "", " types",
                 bool_ok || x.dtype != DataType::kBool ? "" : " (and bool from opset 20 for ReduceMax and ReduceMin)");
  return infer::infer_reduce_shape(ctx, /*axes_int64_only=*/false);
}

Status infer_reduce_float(InferContext& ctx) { return infer_reduce(ctx, /*allow_int=*/false); }
Status infer_reduce_any(InferContext& ctx) { return infer_reduce(ctx, /*allow_int=*/true); }

// ReduceL1 (numeric types), ReduceLogSum and ReduceLogSumExp (float types): their axes input must be
// int64.
Status infer_reduce_listed(InferContext& ctx, const std::vector<DataType>& allowed) {
  GRAFT_RETURN_IF_ERROR(infer::check_dtype(ctx, 0, allowed));
  return infer::infer_reduce_shape(ctx, /*axes_int64_only=*/true);
}
Status infer_reduce_l1(InferContext& ctx) { return infer_reduce_listed(ctx, infer::kNumericTypes); }
Status infer_reduce_log(InferContext& ctx) { return infer_reduce_listed(ctx, infer::kFloatTypes); }

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
      keeps_float32({"ReduceL1", 1, infer_reduce_l1, cpu::reduce_l1}),
      keeps_float32({"ReduceLogSum", 1, infer_reduce_log, cpu::reduce_log_sum}),
      keeps_float32({"ReduceLogSumExp", 1, infer_reduce_log, cpu::reduce_log_sum_exp}),
  };
  out.insert(out.end(), ops.begin(), ops.end());
}

}  // namespace graft
