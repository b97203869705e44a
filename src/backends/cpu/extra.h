// CPU reference kernels for the ops of src/ops/extra_ops.cpp: Trilu, Size, CumSum, OneHot,
// DepthToSpace, SpaceToDepth and Compress.
//
// Same conventions as the other CPU kernels: plain loops; half types compute in float and round
// once on store, float64 in double, integers natively.
#pragma once

#include "graft/status.h"
#include "ops/operator.h"

namespace graft::cpu {

Status trilu(ExecContext& ctx);
Status size(ExecContext& ctx);
// Celu: max(0, x) + min(0, alpha * (exp(x / alpha) - 1)); alpha is read by celu_alpha
// (src/ops/extra_attrs.h).
Status one_hot(ExecContext& ctx);
Status depth_to_space(ExecContext& ctx);
Status space_to_depth(ExecContext& ctx);
Status compress(ExecContext& ctx);

}  // namespace graft::cpu
