// OneHot: its naive CPU reference and schema (CUDA: one_hot.cu).
#include "ops/shape/shape.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "backends/cpu/element_traits.h"
#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"  // check_io(ctx, inputs), op_name, bad_dtype
#include "core/checked_math.h"
#include "graft/attribute.h"
#include "graft/status.h"
#include "graft/tensor.h"
#include "ops/attr_util.h"  // int_input
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- CPU reference ---------------------------------------------------------------------------------

namespace cpu {

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

}  // namespace cpu

// ---- schema ----------------------------------------------------------------------------------------

namespace {

using namespace infer;

Status infer_one_hot(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kNumericTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, kNumericTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 2, kAllTypes));
  auto axis = ctx.attrs().get_int("axis", -1);
  if (!axis) return Status(axis.status()).with_attribute("axis");
  if (ctx.input(2).shape && ctx.input(2).rank() >= 0 &&
      !(ctx.input(2).rank() == 1 && (*ctx.input(2).shape)[0] == 2) && shape_is_static(*ctx.input(2).shape))
    return ctx.fail("input values must have shape [2] (off, on), got ", ctx.input(2).to_string());
  const TensorDesc& ind = ctx.input(0);
  if (!ind.shape) {
    ctx.set_output(0, desc_of(ctx.input(2).dtype, std::nullopt));
    return Status::ok();
  }
  auto a = normalize_axis(axis.value(), ind.rank() + 1);
  if (!a) return Status(a.status()).with_attribute("axis");
  Dim depth = ctx.unknown_dim();
  if (const Tensor* t = ctx.input_value(1)) {
    if (t->numel() != 1) return ctx.fail("input depth must hold one value, got ", t->numel());
    const double d = t->get(0);
    const auto dv = checked_int64(d);  // a float depth may be beyond int64's range: its cast would be UB
    if (!(d >= 1) || !dv) return ctx.fail("input depth must be a positive integer, got ", d);
    depth = Dim(*dv);
  } else if (auto dv = ctx.input_dims_value(1); dv && dv->size() == 1) {
    depth = (*dv)[0];
  }
  Shape s = *ind.shape;
  s.insert(s.begin() + a.value(), depth);
  ctx.set_output(0, desc_of(ctx.input(2).dtype, s));
  return Status::ok();
}


}  // namespace

void append_one_hot_ops(std::vector<OpEntry>& out) { out.push_back({"OneHot", 11, infer_one_hot, cpu::one_hot}); }

}  // namespace graft
