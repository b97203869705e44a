// CPU reference kernels for reductions (ReduceMean/Sum/Max/Min/Prod/SumSquare/L2) and the normalizations built on them
// (Softmax, LogSoftmax, LayerNormalization).
//
// Float inputs accumulate in double and round once on store; integer inputs accumulate in int64.
#pragma once

#include <cstdint>
#include <vector>

#include "graft/status.h"
#include "ops/operator.h"

namespace graft::cpu {

Status reduce_mean(ExecContext& ctx);
Status reduce_sum(ExecContext& ctx);
Status reduce_max(ExecContext& ctx);
Status reduce_min(ExecContext& ctx);
Status reduce_prod(ExecContext& ctx);
Status reduce_sum_square(ExecContext& ctx);
Status reduce_l2(ExecContext& ctx);
Status softmax(ExecContext& ctx);
Status log_softmax(ExecContext& ctx);
Status layer_normalization(ExecContext& ctx);

// The reduce axes of a ReduceXxx node at `opset`, normalized and sorted, from the `axes` input or
// attribute. An empty result with `noop` true means "copy the input"; empty with `noop` false
// means "reduce every axis". Shared by the schema and the kernel so both read the node one way.
struct ReduceAxes {
  std::vector<int64_t> axes;
  bool noop = false;
  bool known = true;  // false: the axes input exists but its contents are not known yet
};
// `axes_input` is the axes tensor contents (nullopt when absent or unknown); `axes_input_present`
// says whether the node has a second input at all.
Result<ReduceAxes> resolve_reduce_axes(const AttributeMap& attrs, int64_t rank, bool axes_input_present,
                                       const std::optional<std::vector<int64_t>>& axes_input);

}  // namespace graft::cpu
