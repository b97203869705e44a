// Softmax and LogSoftmax: the naive CPU reference (in double) and the schema. Before opset 13 the
// input is coerced to 2-D at `axis` (default 1); from 13 one axis is normalized (default -1).
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

// ---- CPU reference ---------------------------------------------------------------------------------

namespace cpu {

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
  const AxisView v = axis_view(x.dims(), axis, legacy);
  const int64_t outer = v.outer, n = v.n, inner = v.inner;
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

}  // namespace cpu

// ---- schema ----------------------------------------------------------------------------------------

namespace {

Status infer_softmax(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(infer::require_float_input(ctx, 0));
  return infer::infer_along_axis(ctx);
}

}  // namespace

void append_softmax_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"Softmax", 11, infer_softmax, cpu::softmax});
  out.push_back(keeps_float32({"LogSoftmax", 11, infer_softmax, cpu::log_softmax}));
}

}  // namespace graft
