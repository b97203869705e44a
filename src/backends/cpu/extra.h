// CPU reference kernels for the ops of src/ops/extra_ops.cpp: Trilu, Size, Mod, Xor and more unary
// math.
//
// Same conventions as the other CPU kernels: plain loops; half types compute in float and round
// once on store, float64 in double, integers natively.
#pragma once

#include "graft/status.h"
#include "ops/extra_attrs.h"
#include "ops/operator.h"

namespace graft::cpu {

Status trilu(ExecContext& ctx);
Status size(ExecContext& ctx);
Status mod(ExecContext& ctx);
Status logical_xor(ExecContext& ctx);
Status tan(ExecContext& ctx);
Status asin(ExecContext& ctx);
Status acos(ExecContext& ctx);
Status atan(ExecContext& ctx);
Status sinh(ExecContext& ctx);
Status cosh(ExecContext& ctx);
Status asinh(ExecContext& ctx);
Status acosh(ExecContext& ctx);
Status atanh(ExecContext& ctx);
Status sign(ExecContext& ctx);     // also integers
Status round(ExecContext& ctx);    // half to even
Status selu(ExecContext& ctx);
// Celu: max(0, x) + min(0, alpha * (exp(x / alpha) - 1)); alpha is read by celu_alpha
// (src/ops/extra_attrs.h).
Status celu(ExecContext& ctx);
Status shrink(ExecContext& ctx);   // also integers
Status thresholded_relu(ExecContext& ctx);
Status softsign(ExecContext& ctx);
Status mish(ExecContext& ctx);
Status is_nan(ExecContext& ctx);
Status is_inf(ExecContext& ctx);
Status cumsum(ExecContext& ctx);
Status one_hot(ExecContext& ctx);
Status depth_to_space(ExecContext& ctx);
Status space_to_depth(ExecContext& ctx);
Status compress(ExecContext& ctx);
Status mean(ExecContext& ctx);

}  // namespace graft::cpu
