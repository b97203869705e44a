// TopK: the naive CPU reference (a stable sort per line of the [outer, n, inner] view around the
// axis) and the schema.
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

// ---- CPU reference ---------------------------------------------------------------------------------

namespace cpu {

Status top_k(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  const Tensor& x = *ctx.inputs[0];
  Tensor& vals = *ctx.outputs[0];
  Tensor* inds = ctx.outputs.size() > 1 ? ctx.outputs[1] : nullptr;
  const AttributeMap& attrs = attrs_of(ctx);
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, attrs.get_int("axis", -1));
  GRAFT_ASSIGN_OR_RETURN(int64_t largest, attrs.get_int("largest", 1));
  const auto kv = ctx.inputs[1]->to_int64_vector();
  if (kv.size() != 1) return error(StatusCode::kInvalidModel, "TopK input K must hold one value");
  auto axis = normalize_axis(axis_attr, x.rank());
  if (!axis) return Status(axis.status()).with_attribute("axis");
  const AxisView v = axis_view(x.dims(), axis.value(), false);
  const int64_t k = kv[0];
  if (k < 0 || k > v.n)
    return error(StatusCode::kRuntimeError, "TopK K = ", k, " is outside [0, ", v.n, "] for axis ", axis.value());
  GRAFT_CHECK(vals.numel() == v.outer * k * v.inner);
  if (inds) GRAFT_CHECK(inds->dtype() == DataType::kInt64 && inds->numel() == vals.numel());
  return visit_numeric(x.dtype(), [&](auto tr) -> Status {
    using Tr = decltype(tr);
    std::vector<int64_t> order(static_cast<size_t>(v.n));
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t i = 0; i < v.inner; ++i) {
        const int64_t base = o * v.n * v.inner + i;
        auto at = [&](int64_t t) { return Tr::load(x.data(), base + t * v.inner); };
        for (int64_t t = 0; t < v.n; ++t) order[t] = t;
        // Always sorted (allowed for sorted=0 too); a stable sort keeps equal values in index order.
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t p, int64_t q) { return largest ? at(p) > at(q) : at(p) < at(q); });
        for (int64_t t = 0; t < k; ++t) {
          const int64_t out = (o * k + t) * v.inner + i;
          Tr::store(vals.data(), out, at(order[t]));
          if (inds) inds->data_as<int64_t>()[out] = order[t];
        }
      }
    return Status::ok();
  }, [&](DataType t) { return bad_dtype(ctx, t); });
}

}  // namespace cpu

// ---- schema ----------------------------------------------------------------------------------------

namespace {

using namespace infer;

Status infer_top_k(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kNumericTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, {kI64}));
  for (const char* a : {"axis", "largest", "sorted"}) {
    auto r = ctx.attrs().get_int(a, 0);
    if (!r) return Status(r.status()).with_attribute(a);
  }
  const TensorDesc& x = ctx.input(0);
  std::optional<Shape> s;
  if (x.shape) {
    if (x.rank() == 0) return ctx.fail("input 0 must have rank >= 1, got a scalar");
    auto a = normalize_axis(ctx.attrs().get_int("axis", -1).value(), x.rank());
    if (!a) return Status(a.status()).with_attribute("axis");
    Dim k = ctx.unknown_dim();
    if (auto kv = ctx.input_dims_value(1)) {
      if (kv->size() != 1) return ctx.fail("input K must hold one value, got ", static_cast<int64_t>(kv->size()));
      k = (*kv)[0];
      if (k.is_const() && k.value() < 0) return ctx.fail("input K must be >= 0, got ", k.value());
      const Dim& n = (*x.shape)[a.value()];
      if (k.is_const() && n.is_const() && k.value() > n.value())
        return ctx.fail("input K = ", k.value(), " exceeds axis ", a.value(), " of ", x.to_string());
    }
    s = *x.shape;
    (*s)[a.value()] = k;
  }
  ctx.set_output(0, desc_of(x.dtype, s));
  if (ctx.num_outputs() > 1) ctx.set_output(1, desc_of(kI64, s));
  return Status::ok();
}

}  // namespace

void append_top_k_ops(std::vector<OpEntry>& out) { out.push_back(OpEntry{"TopK", 11, infer_top_k, cpu::top_k}); }

}  // namespace graft
