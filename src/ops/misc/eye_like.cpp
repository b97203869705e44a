// EyeLike: its naive CPU reference and schema. CUDA: eye_like.cu.
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
// Ones and zeros stored in the output dtype.

namespace cpu {

Status eye_like(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  GRAFT_ASSIGN_OR_RETURN(int64_t k, attrs_of(ctx).get_int("k", 0));
  if (x.rank() != 2)
    return error(StatusCode::kInvalidModel, "EyeLike: input must be 2-D, got ", ints_to_string(x.dims()));
  GRAFT_CHECK(y.dims() == x.dims());
  const int64_t rows = x.dims()[0], cols = x.dims()[1];
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) y.set(i * cols + j, j - i == k ? 1.0 : 0.0);  // j - i: both dims, no overflow
  return Status::ok();
}

}  // namespace cpu

// ---- schema ---------------------------------------------------------------------------------

namespace {

using namespace infer;

Status infer_eye_like(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  auto k = ctx.attrs().get_int("k", 0);
  if (!k) return Status(k.status()).with_attribute("k");
  DataType out = ctx.input(0).dtype;
  if (ctx.attrs().has("dtype")) {
    auto dt = ctx.attrs().get_int("dtype", 0);
    if (!dt) return Status(dt.status()).with_attribute("dtype");
    if (dt.value() < INT32_MIN || dt.value() > INT32_MAX || !dtype_from_onnx_numeric(static_cast<int32_t>(dt.value()), &out))
      return Status(error(StatusCode::kUnsupported, "ONNX element type ", dt.value(), " is not supported (graft supports ",
                          dtype_list(kAllTypes), ")"))
          .with_attribute("dtype");
  }
  const TensorDesc& x = ctx.input(0);
  if (x.shape && x.rank() != 2) return ctx.fail("input must be 2-D, got ", x.to_string());
  ctx.set_output(0, desc_of(out, x.shape));
  return Status::ok();
}

}  // namespace

void append_eye_like_ops(std::vector<OpEntry>& out) {
  out.push_back(keeps_float32({"EyeLike", 9, infer_eye_like, cpu::eye_like}));
}

}  // namespace graft
