// ReverseSequence: its axes reader (misc.h), naive CPU reference and schema. CUDA: reverse_sequence.cu.
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

Result<std::pair<int64_t, int64_t>> reverse_sequence_axes(const AttributeMap& attrs) {
  auto b = attrs.get_int("batch_axis", 1);
  if (!b) return Status(b.status()).with_attribute("batch_axis");
  auto t = attrs.get_int("time_axis", 0);
  if (!t) return Status(t.status()).with_attribute("time_axis");
  if (b.value() != 0 && b.value() != 1) return attr_error("batch_axis", "must be 0 or 1, got ", b.value());
  if (t.value() != 0 && t.value() != 1) return attr_error("time_axis", "must be 0 or 1, got ", t.value());
  if (b.value() == t.value())
    return attr_error("time_axis", "must differ from batch_axis (both are ", b.value(), ")");
  return std::make_pair(b.value(), t.value());
}

// ---- CPU reference --------------------------------------------------------------------------
// Elements moved as bytes, so every dtype.

namespace cpu {

Status reverse_sequence(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  const Tensor& x = *ctx.inputs[0];
  const Tensor& lens_t = *ctx.inputs[1];
  Tensor& y = *ctx.outputs[0];
  GRAFT_ASSIGN_OR_RETURN(auto axes, reverse_sequence_axes(attrs_of(ctx)));
  const auto [batch_axis, time_axis] = axes;
  if (x.rank() < 2)
    return error(StatusCode::kInvalidModel, "ReverseSequence: input must have rank >= 2, got ", ints_to_string(x.dims()));
  GRAFT_CHECK(y.dims() == x.dims() && y.dtype() == x.dtype());
  const int64_t batch = x.dims()[batch_axis], steps = x.dims()[time_axis];
  if (lens_t.dtype() != DataType::kInt64 || lens_t.dims() != std::vector<int64_t>{batch})
    return error(StatusCode::kInvalidModel, "ReverseSequence: sequence_lens must be int64 [", batch, "], got ",
                 dtype_name(lens_t.dtype()), " ", ints_to_string(lens_t.dims()));
  const std::vector<int64_t> lens = lens_t.to_int64_vector();
  for (int64_t b = 0; b < batch; ++b)
    if (lens[static_cast<size_t>(b)] < 0 || lens[static_cast<size_t>(b)] > steps)
      return error(StatusCode::kRuntimeError, "ReverseSequence: sequence_lens[", b, "] = ", lens[static_cast<size_t>(b)],
                   " is outside [0, ", steps, "] (the time axis)");
  // Elements after the two leading axes are one contiguous block per (axis 0, axis 1) pair.
  int64_t block = 1;
  for (int64_t d = 2; d < x.rank(); ++d) block *= x.dims()[d];
  const size_t es = dtype_size(x.dtype());
  const size_t block_bytes = static_cast<size_t>(block) * es;
  const int64_t d1 = x.dims()[1];
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < steps; ++t) {
      const int64_t len = lens[static_cast<size_t>(b)];
      const int64_t src_t = t < len ? len - 1 - t : t;
      const int64_t dst = batch_axis == 0 ? b * d1 + t : t * d1 + b;
      const int64_t src = batch_axis == 0 ? b * d1 + src_t : src_t * d1 + b;
      if (block_bytes)
        std::memcpy(static_cast<char*>(y.data()) + static_cast<size_t>(dst) * block_bytes,
                    static_cast<const char*>(x.data()) + static_cast<size_t>(src) * block_bytes, block_bytes);
    }
  return Status::ok();
}

}  // namespace cpu

// ---- schema ---------------------------------------------------------------------------------

namespace {

using namespace infer;

Status infer_reverse_sequence(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, {kI64}));
  GRAFT_ASSIGN_OR_RETURN(auto axes, reverse_sequence_axes(ctx.attrs()));
  GRAFT_RETURN_IF_ERROR(require_rank_at_least(ctx, 0, 2, "input"));
  const TensorDesc& x = ctx.input(0);
  const TensorDesc& lens = ctx.input(1);
  if (lens.shape && lens.rank() != 1) return ctx.fail("sequence_lens must be 1-D [batch], got ", lens.to_string());
  if (x.shape && lens.shape) {
    const Dim& b = (*x.shape)[axes.first];
    const Dim& l = (*lens.shape)[0];
    if (b.is_const() && l.is_const() && b.value() != l.value())
      return ctx.fail("sequence_lens ", lens.to_string(), " must have one entry per batch (axis ", axes.first, " of ",
                      x.to_string(), ")");
  }
  ctx.set_output(0, x);
  return Status::ok();
}

}  // namespace

void append_reverse_sequence_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"ReverseSequence", 10, infer_reverse_sequence, cpu::reverse_sequence});
}

}  // namespace graft
