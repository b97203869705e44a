// CPU reference kernels for reductions (ReduceMean/Sum/Max/Min/Prod/SumSquare/L2) and the normalizations built on them
// (Softmax, LogSoftmax, LayerNormalization).
//
// Float inputs accumulate in double and round once on store; integer inputs accumulate in int64.
#pragma once

#include <cstdint>
#include <vector>

#include "graft/status.h"
#include "ops/operator.h"
#include "ops/reduce_axes.h"

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

}  // namespace graft::cpu
