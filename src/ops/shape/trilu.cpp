// Trilu: its naive CPU reference and schema (CUDA: trilu.cu).
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

}  // namespace cpu

// ---- schema ----------------------------------------------------------------------------------------

namespace {

using namespace infer;

Status infer_trilu(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  auto upper = ctx.attrs().get_int("upper", 1);
  if (!upper) return Status(upper.status()).with_attribute("upper");
  if (ctx.has_input(1)) {
    if (ctx.input(1).dtype != kI64) return ctx.fail("input k must be int64, got ", dtype_name(ctx.input(1).dtype));
    if (ctx.input(1).shape && ctx.input(1).rank() != 0)
      return ctx.fail("input k must be a scalar, got ", ctx.input(1).to_string());
  }
  if (ctx.input(0).shape && ctx.input(0).rank() < 2)
    return ctx.fail("input 0 must have rank >= 2, got ", ctx.input(0).to_string());
  ctx.set_output(0, ctx.input(0));
  return Status::ok();
}

}  // namespace

void append_trilu_ops(std::vector<OpEntry>& out) { out.push_back({"Trilu", 14, infer_trilu, cpu::trilu}); }

}  // namespace graft
