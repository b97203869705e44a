// CumSum: the naive CPU reference and the schema.
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

// CumSum: a running sum along one axis (exclusive and reverse as attributes), in double for the
// float types and wrapping int64 for the integers.
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

}  // namespace cpu

// ---- schema ----------------------------------------------------------------------------------------

namespace {

Status infer_cumsum(InferContext& ctx) {
  using namespace infer;
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kNumericTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, {kI32, kI64}));
  for (const char* a : {"exclusive", "reverse"}) {
    auto r = ctx.attrs().get_int(a, 0);
    if (!r) return Status(r.status()).with_attribute(a);
  }
  if (ctx.input(1).shape && ctx.input(1).rank() > 1)
    return ctx.fail("input axis must be a scalar, got ", ctx.input(1).to_string());
  if (const Tensor* t = ctx.input_value(1); t && ctx.input(0).shape) {
    auto v = t->to_int64_vector();
    if (v.size() != 1) return ctx.fail("input axis must hold one value");
    auto a = normalize_axis(v[0], ctx.input(0).rank());
    if (!a) return ctx.fail("input axis: ", a.status().message());
  }
  ctx.set_output(0, ctx.input(0));
  return Status::ok();
}

}  // namespace

void append_cumsum_ops(std::vector<OpEntry>& out) {
  out.push_back(keeps_float32({"CumSum", 11, infer_cumsum, cpu::cumsum}));
}

}  // namespace graft
