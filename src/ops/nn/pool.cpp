// The pools, MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool: their schemas and CPU
// references (the nn family, nn.h).
#include "ops/nn/nn.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/nn/nn_util.h"
#include "ops/operator.h"
#include "ops/window_attrs.h"

namespace graft::cpu {

namespace {

Status check_pool_io(const ExecContext& ctx, const char* op) {
  if (ctx.inputs.empty() || ctx.outputs.empty() || !ctx.outputs[0])
    return error(StatusCode::kInternal, op, ": missing input or output");
  GRAFT_RETURN_IF_ERROR(require_float_or_int(ctx.inputs[0], "X"));
  if (ctx.inputs[0]->rank() < 3)
    return error(StatusCode::kInvalidModel, op, ": input X must have rank >= 3 (N, C, spatial...), got ",
                 ints_to_string(ctx.inputs[0]->dims()));
  return Status::ok();
}

// MaxPool values without indices, one spatial axis at a time. The max over a (dilated) box is the
// max along each axis in turn, so the cost is out_elements x (k0 + k1 + ...) instead of
// out_elements x (k0 * k1 * ...): a 60x80 window over a 1000x1000 image took 11 s through the
// per-window walk and takes milliseconds here. The result is the same, bit for bit: each pass keeps
// the first of equal values and the first NaN in kernel order, and running the innermost axis first
// composes into the row-major kernel order of the per-window walk. A window with no tap inside the
// input yields -inf, as there.
std::vector<double> max_pool_separable(std::vector<double> cur, int64_t nc, const std::vector<int64_t>& in_sp,
                                       const std::vector<int64_t>& out_sp, const WindowAttrs& w) {
  std::vector<int64_t> pb, pe;
  resolve_pads(w, in_sp, &pb, &pe);
  const size_t n = in_sp.size();
  std::vector<int64_t> dims = {nc};
  dims.insert(dims.end(), in_sp.begin(), in_sp.end());
  for (size_t a = n; a-- > 0;) {
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d <= a; ++d) outer *= dims[d];
    for (size_t d = a + 2; d < dims.size(); ++d) inner *= dims[d];
    const int64_t len_in = dims[a + 1], len_out = out_sp[a];
    std::vector<std::vector<int64_t>> taps(static_cast<size_t>(len_out));  // valid input positions, kernel order
    for (int64_t o = 0; o < len_out; ++o)
      for (int64_t k = 0; k < w.kernel[a]; ++k) {
        const int64_t ip = o * w.strides[a] - pb[a] + k * w.dilations[a];
        if (ip >= 0 && ip < len_in) taps[static_cast<size_t>(o)].push_back(ip);
      }
    std::vector<double> next(static_cast<size_t>(outer * len_out * inner));
    for (int64_t ob = 0; ob < outer; ++ob)
      for (int64_t o = 0; o < len_out; ++o) {
        double* dst = next.data() + (ob * len_out + o) * inner;
        const auto& tp = taps[static_cast<size_t>(o)];
        if (tp.empty()) {
          std::fill(dst, dst + inner, -std::numeric_limits<double>::infinity());
          continue;
        }
        const double* first = cur.data() + (ob * len_in + tp[0]) * inner;
        std::copy(first, first + inner, dst);
        for (size_t t = 1; t < tp.size(); ++t) {
          const double* src = cur.data() + (ob * len_in + tp[t]) * inner;
          for (int64_t i = 0; i < inner; ++i) {
            // As in the per-window walk: a larger value or a NaN replaces the best, unless the best
            // is already NaN (the first NaN propagates).
            const double v = src[i], b = dst[i];
            if ((v > b || std::isnan(v)) && !std::isnan(b)) dst[i] = v;
          }
        }
      }
    cur.swap(next);
    dims[a + 1] = len_out;
  }
  return cur;
}

}  // namespace

Status max_pool(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_pool_io(ctx, "MaxPool"));
  const Tensor& X = *ctx.inputs[0];
  Tensor& Y = *ctx.outputs[0];
  Tensor* I = output_or_null(ctx, 1);
  const size_t n = static_cast<size_t>(X.rank() - 2);
  GRAFT_ASSIGN_OR_RETURN(WindowAttrs w, parse_window_attrs(*ctx.attrs, n, nullptr, true));
  GRAFT_ASSIGN_OR_RETURN(int64_t storage_order, ctx.attrs->get_int("storage_order", 0));
  if (storage_order != 0 && storage_order != 1)
    return attr_error("storage_order", "must be 0 (row major) or 1 (column major), got ", storage_order);
  if (!I) {  // values only: the separable form (indices need the winning tap of each whole window)
    std::vector<double> y = max_pool_separable(load_doubles(X), X.dims()[0] * X.dims()[1], tail(X.dims(), 2),
                                               tail(Y.dims(), 2), w);
    if (static_cast<int64_t>(y.size()) != Y.numel())
      return error(StatusCode::kInternal, "MaxPool: output shape ", ints_to_string(Y.dims()), " does not match");
    store_doubles(Y, y);
    return Status::ok();
  }
  WindowWalker walker(w, tail(X.dims(), 2), tail(Y.dims(), 2));
  const int64_t NC = X.dims()[0] * X.dims()[1], in_area = walker.in_area(), out_area = walker.out_area();
  std::vector<double> x = load_doubles(X), y(static_cast<size_t>(Y.numel()));
  std::vector<int64_t> idx(I ? y.size() : 0);
  WindowTaps taps;
  for (int64_t p = 0; p < out_area; ++p) {
    walker.taps_at(p, taps);
    for (int64_t nc = 0; nc < NC; ++nc) {
      double best = -std::numeric_limits<double>::infinity();
      int64_t best_at = -1;
      for (size_t t = 0; t < taps.kernel_and_input.size(); ++t) {
        double v = x[static_cast<size_t>(nc * in_area + taps.kernel_and_input[t].second)];
        if (best_at < 0 || v > best || std::isnan(v)) {
          if (best_at >= 0 && std::isnan(best)) continue;  // NaN propagates
          best = v;
          best_at = static_cast<int64_t>(t);
        }
      }
      size_t o = static_cast<size_t>(nc * out_area + p);
      y[o] = best;
      if (I) {
        int64_t sp = best_at < 0 ? 0
                     : storage_order ? taps.input_col_major[static_cast<size_t>(best_at)]
                                     : taps.kernel_and_input[static_cast<size_t>(best_at)].second;
        idx[o] = nc * in_area + sp;
      }
    }
  }
  store_doubles(Y, y);
  if (I) {
    if (I->dtype() != DataType::kInt64 || I->numel() != Y.numel())
      return error(StatusCode::kInternal, "MaxPool: Indices output must be int64 shaped like Y");
    std::copy(idx.begin(), idx.end(), I->data_as<int64_t>());
  }
  return Status::ok();
}

Status average_pool(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_pool_io(ctx, "AveragePool"));
  const Tensor& X = *ctx.inputs[0];
  Tensor& Y = *ctx.outputs[0];
  const size_t n = static_cast<size_t>(X.rank() - 2);
  GRAFT_ASSIGN_OR_RETURN(WindowAttrs w, parse_window_attrs(*ctx.attrs, n, nullptr, true));
  GRAFT_ASSIGN_OR_RETURN(int64_t include_pad, ctx.attrs->get_int("count_include_pad", 0));
  WindowWalker walker(w, tail(X.dims(), 2), tail(Y.dims(), 2));
  const int64_t NC = X.dims()[0] * X.dims()[1], in_area = walker.in_area(), out_area = walker.out_area();
  std::vector<double> x = load_doubles(X), y(static_cast<size_t>(Y.numel()));
  WindowTaps taps;
  for (int64_t p = 0; p < out_area; ++p) {
    walker.taps_at(p, taps);
    // count_include_pad counts taps on explicit/SAME padding, never past it (the ceil_mode overhang).
    const double count = include_pad ? static_cast<double>(taps.padded_count)
                                     : static_cast<double>(taps.kernel_and_input.size());
    for (int64_t nc = 0; nc < NC; ++nc) {
      double sum = 0.0;
      for (const auto& t : taps.kernel_and_input) sum += x[static_cast<size_t>(nc * in_area + t.second)];
      y[static_cast<size_t>(nc * out_area + p)] =
          count > 0 ? sum / count : std::numeric_limits<double>::quiet_NaN();
    }
  }
  store_doubles(Y, y);
  return Status::ok();
}

namespace {
template <typename Reduce>
Status global_pool(ExecContext& ctx, const char* op, double init, Reduce reduce, bool mean) {
  GRAFT_RETURN_IF_ERROR(check_pool_io(ctx, op));
  const Tensor& X = *ctx.inputs[0];
  const int64_t NC = X.dims()[0] * X.dims()[1], area = numel_of(tail(X.dims(), 2));
  std::vector<double> x = load_doubles(X), y(static_cast<size_t>(NC));
  for (int64_t nc = 0; nc < NC; ++nc) {
    double acc = init;
    for (int64_t i = 0; i < area; ++i) acc = reduce(acc, x[static_cast<size_t>(nc * area + i)]);
    y[static_cast<size_t>(nc)] = mean ? acc / static_cast<double>(area) : acc;
  }
  if (ctx.outputs[0]->numel() != NC)
    return error(StatusCode::kInternal, op, ": output shape inconsistent with input");
  store_doubles(*ctx.outputs[0], y);
  return Status::ok();
}
}  // namespace

Status global_average_pool(ExecContext& ctx) {
  return global_pool(ctx, "GlobalAveragePool", 0.0, [](double a, double v) { return a + v; }, true);
}

Status global_max_pool(ExecContext& ctx) {
  return global_pool(
      ctx, "GlobalMaxPool", -std::numeric_limits<double>::infinity(),
      [](double a, double v) { return std::isnan(a) || std::isnan(v) ? std::numeric_limits<double>::quiet_NaN() : std::max(a, v); },
      false);
}


}  // namespace graft::cpu

namespace graft {

namespace {

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
  GRAFT_ASSIGN_OR_RETURN(Shape out, infer::global_pool_shape(ctx, x));
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, out));
  return Status::ok();
}

}  // namespace

void append_pool_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"AveragePool", 11, infer_average_pool, cpu::average_pool});
  out.push_back(OpEntry{"GlobalAveragePool", 11, infer_global_pool, cpu::global_average_pool});
  out.push_back(OpEntry{"GlobalMaxPool", 11, infer_global_pool, cpu::global_max_pool});
  out.push_back(OpEntry{"MaxPool", 11, infer_max_pool, cpu::max_pool});
}

}  // namespace graft
