// ArgMax, ArgMin and Hardmax: the naive CPU references (one sequential scan per line of the
// [outer, n, inner] view around the axis) and the schemas.
#include "ops/selection/selection.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/element_traits.h"
#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"  // check_io, bad_dtype
#include "ops/infer_util.h"

namespace graft {

// ---- CPU references -------------------------------------------------------------------------------

namespace cpu {
namespace {

Status arg_reduce(ExecContext& ctx, bool want_max) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  const AttributeMap& attrs = attrs_of(ctx);
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, attrs.get_int("axis", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t last, attrs.get_int("select_last_index", 0));
  auto axis = normalize_axis(axis_attr, x.rank());
  if (!axis) return Status(axis.status()).with_attribute("axis");
  const AxisView v = axis_view(x.dims(), axis.value(), false);
  if (v.n == 0 && v.outer * v.inner > 0)
    return error(StatusCode::kInvalidModel, op_name(ctx), " over an empty axis ", axis.value());
  if (y.dtype() != DataType::kInt64 || y.numel() != v.outer * v.inner)
    return error(StatusCode::kInternal, op_name(ctx), " output is ", dtype_name(y.dtype()), " with ", y.numel(),
                 " elements, expected int64 with ", v.outer * v.inner);
  int64_t* out = y.data_as<int64_t>();
  return visit_numeric(x.dtype(), [&](auto tr) -> Status {
    using Tr = decltype(tr);
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t i = 0; i < v.inner; ++i) {
        const int64_t base = o * v.n * v.inner + i;
        auto best = Tr::load(x.data(), base);
        int64_t best_k = 0;
        for (int64_t k = 1; k < v.n; ++k) {
          auto val = Tr::load(x.data(), base + k * v.inner);
          const bool better = want_max ? (last ? val >= best : val > best) : (last ? val <= best : val < best);
          if (better) {
            best = val;
            best_k = k;
          }
        }
        out[o * v.inner + i] = best_k;
      }
    return Status::ok();
  }, [&](DataType t) { return bad_dtype(ctx, t); });
}

}  // namespace

Status arg_max(ExecContext& ctx) { return arg_reduce(ctx, true); }

Status arg_min(ExecContext& ctx) { return arg_reduce(ctx, false); }

Status hardmax(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  GRAFT_CHECK(x.numel() == y.numel());
  const bool legacy = ctx.opset > 0 && ctx.opset < 13;
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, attrs_of(ctx).get_int("axis", legacy ? 1 : -1));
  if (x.rank() == 0) {
    y.set(0, 1.0);
    return Status::ok();
  }
  auto axis = normalize_axis(axis_attr, x.rank());
  if (!axis) return Status(axis.status()).with_attribute("axis");
  // Before opset 13 every axis from `axis` on is flattened into one (the 2-D coercion).
  const AxisView v = axis_view(x.dims(), axis.value(), legacy);
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t i = 0; i < v.inner; ++i) {
      const int64_t base = o * v.n * v.inner + i;
      int64_t best_k = 0;
      for (int64_t k = 1; k < v.n; ++k)
        if (x.get(base + k * v.inner) > x.get(base + best_k * v.inner)) best_k = k;
      for (int64_t k = 0; k < v.n; ++k) y.set(base + k * v.inner, k == best_k ? 1.0 : 0.0);
    }
  return Status::ok();
}

}  // namespace cpu

// ---- schemas ---------------------------------------------------------------------------------------

namespace {

using namespace infer;

Status infer_arg_reduce(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kNumericTypes));
  auto axis = ctx.attrs().get_int("axis", 0);
  if (!axis) return Status(axis.status()).with_attribute("axis");
  auto keepdims = ctx.attrs().get_int("keepdims", 1);
  if (!keepdims) return Status(keepdims.status()).with_attribute("keepdims");
  auto last = ctx.attrs().get_int("select_last_index", 0);
  if (!last) return Status(last.status()).with_attribute("select_last_index");
  const TensorDesc& x = ctx.input(0);
  if (!x.shape) {
    ctx.set_output(0, desc_of(kI64, std::nullopt));
    return Status::ok();
  }
  if (x.rank() == 0) return ctx.fail("input 0 must have rank >= 1, got a scalar");
  auto a = normalize_axis(axis.value(), x.rank());
  if (!a) return Status(a.status()).with_attribute("axis");
  Shape s;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d != a.value()) s.push_back((*x.shape)[d]);
    else if (keepdims.value()) s.push_back(Dim(1));
  }
  ctx.set_output(0, desc_of(kI64, s));
  return Status::ok();
}

Status infer_hardmax(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  return infer_along_axis(ctx);
}

}  // namespace

void append_arg_max_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"ArgMax", 1, infer_arg_reduce, cpu::arg_max});
  out.push_back(OpEntry{"ArgMin", 1, infer_arg_reduce, cpu::arg_min});
  out.push_back(OpEntry{"Hardmax", 1, infer_hardmax, cpu::hardmax});
}

}  // namespace graft
