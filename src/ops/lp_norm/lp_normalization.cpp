// LpNormalization: its geometry reader (lp_norm.h), CPU reference and schema. CUDA: lp_normalization.cu.
#include "ops/lp_norm/lp_norm.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"
#include "core/checked_math.h"
#include "core/index_math.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- attributes and geometry (lp_norm.h) -------------------------------------------------------

Result<LpNormGeometry> lp_norm_geometry(const AttributeMap& attrs, const std::vector<int64_t>& x) {
  LpNormGeometry g;
  GRAFT_ASSIGN_OR_RETURN(g.p, lp_order(attrs, true));
  auto axis = attrs.get_int("axis", -1);
  if (!axis) return Status(axis.status()).with_attribute("axis");
  const int64_t rank = static_cast<int64_t>(x.size());
  if (axis.value() < -rank || axis.value() >= rank)
    return attr_error("axis", "must be in [", -rank, ", ", rank - 1, "] for input ", ints_to_string(x), ", got ",
                      axis.value());
  const size_t a = static_cast<size_t>(axis.value() < 0 ? axis.value() + rank : axis.value());
  // The product of all three is the input's element count, which fits; a zero extent elsewhere
  // may still leave one of the partial products huge, so each is checked.
  for (size_t d = 0; d < x.size(); ++d) {
    int64_t& part = d < a ? g.outer : d == a ? g.len : g.inner;
    if (!checked_mul(part, x[d], &part))
      return error(StatusCode::kInvalidModel, "LpNormalization: input ", ints_to_string(x), " is too large");
  }
  return g;
}

// ---- CPU reference -----------------------------------------------------------------------------
// Every value is loaded as double, sums are accumulated in double and rounded once into the output
// dtype.

namespace cpu {
namespace {

Status lp_normalization(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  GRAFT_RETURN_IF_ERROR(require_float_tensor(ctx.inputs[0], "input"));
  const Tensor& x = *ctx.inputs[0];
  GRAFT_ASSIGN_OR_RETURN(LpNormGeometry g, lp_norm_geometry(attrs_of(ctx), x.dims()));
  Tensor& y = *ctx.outputs[0];
  GRAFT_CHECK(y.numel() == x.numel() && y.dtype() == x.dtype());
  const std::vector<double> xv = load_doubles(x);
  std::vector<double> yv(xv.size());
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t i = 0; i < g.inner; ++i) {
      auto at = [&](int64_t l) { return static_cast<size_t>((o * g.len + l) * g.inner + i); };
      double sum = 0;
      for (int64_t l = 0; l < g.len; ++l) sum += lp_abs_pow(xv[at(l)], g.p);
      const double norm = lp_root(sum, g.p);
      for (int64_t l = 0; l < g.len; ++l) yv[at(l)] = xv[at(l)] / norm;
    }
  store_doubles(y, yv);
  return Status::ok();
}

}  // namespace
}  // namespace cpu

// ---- schema ------------------------------------------------------------------------------------

namespace {

using namespace infer;

Status infer_lp_normalization(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  const TensorDesc& x = ctx.input(0);
  if (x.shape) {
    // The axis and p checked against the rank; the extents do not matter here.
    GRAFT_RETURN_IF_ERROR(lp_norm_geometry(ctx.attrs(), std::vector<int64_t>(x.shape->size(), 1)).status());
  } else {
    GRAFT_RETURN_IF_ERROR(lp_order(ctx.attrs(), true).status());
  }
  ctx.set_output(0, x);
  return Status::ok();
}

}  // namespace

void append_lp_normalization_ops(std::vector<OpEntry>& out) {
  // Both backends sum the powers in float64, so a float16 engine may keep it in float16: the
  // result, a norm of float16 values, fits where the sum of their squares would not.
  out.push_back(OpEntry{"LpNormalization", 11, infer_lp_normalization, cpu::lp_normalization});
}

}  // namespace graft
