// CPU reference kernels for the ONNX ops whose output size depends on the input data: NonZero and
// NonMaxSuppression (schemas: src/ops/detection_ops.cpp). Each allocates its output with
// allocate_output once it has counted.
#pragma once

#include "ops/operator.h"

namespace graft::cpu {

Status non_zero(ExecContext& ctx);
Status non_max_suppression(ExecContext& ctx);

}  // namespace graft::cpu
