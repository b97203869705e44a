// Det: the naive CPU reference (LU with partial pivoting in double) and the schema. CUDA: det.cu.
#include "ops/misc/misc.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/element_traits.h"
#include "backends/cpu/broadcast_walker.h"
#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"
#include "core/checked_math.h"
#include "graft/status.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- CPU reference --------------------------------------------------------------------------
// Values are loaded as double, statistics and sums accumulate in double, and each result is rounded
// once into the output dtype.

namespace cpu {

// LU with partial pivoting in double.
Status det(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  GRAFT_RETURN_IF_ERROR(require_float_tensor(ctx.inputs[0], "X"));
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  if (x.rank() < 2 || x.dims()[x.rank() - 1] != x.dims()[x.rank() - 2])
    return error(StatusCode::kInvalidModel, "Det: input must be [..., M, M], got ", ints_to_string(x.dims()));
  const int64_t m = x.dims()[x.rank() - 1];
  const int64_t mm = m * m;
  const int64_t batches = mm == 0 ? y.numel() : x.numel() / mm;
  GRAFT_CHECK(y.numel() == batches && y.dtype() == x.dtype());
  std::vector<double> a(static_cast<size_t>(mm));
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t i = 0; i < mm; ++i) a[static_cast<size_t>(i)] = x.get(b * mm + i);
    auto at = [&](int64_t r, int64_t c) -> double& { return a[static_cast<size_t>(r * m + c)]; };
    double d = 1;
    for (int64_t col = 0; col < m && d != 0; ++col) {
      int64_t piv = col;
      for (int64_t r = col + 1; r < m; ++r)
        if (std::fabs(at(r, col)) > std::fabs(at(piv, col))) piv = r;
      if (at(piv, col) == 0) {
        d = 0;
        break;
      }
      if (piv != col) {
        for (int64_t c = 0; c < m; ++c) std::swap(at(piv, c), at(col, c));
        d = -d;
      }
      d *= at(col, col);
      for (int64_t r = col + 1; r < m; ++r) {
        const double f = at(r, col) / at(col, col);
        for (int64_t c = col; c < m; ++c) at(r, c) -= f * at(col, c);
      }
    }
    y.set(b, d);
  }
  return Status::ok();
}

}  // namespace cpu

// ---- schema ---------------------------------------------------------------------------------

namespace {

using namespace infer;

Status infer_det(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  const TensorDesc& x = ctx.input(0);
  if (!x.shape) {
    ctx.set_output(0, desc_of(x.dtype, std::nullopt));
    return Status::ok();
  }
  if (x.rank() < 2) return ctx.fail("input must be [..., M, M], got ", x.to_string());
  const Dim& r = (*x.shape)[x.rank() - 2];
  const Dim& c = (*x.shape)[x.rank() - 1];
  if (r.is_const() && c.is_const() && r.value() != c.value())
    return ctx.fail("input must hold square matrices [..., M, M], got ", x.to_string());
  ctx.set_output(0, desc_of(x.dtype, Shape(x.shape->begin(), x.shape->end() - 2)));
  return Status::ok();
}

}  // namespace

void append_det_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"Det", 11, infer_det, cpu::det});
}

}  // namespace graft
