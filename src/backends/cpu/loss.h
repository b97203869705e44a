// CPU reference kernels for the loss ops of src/ops/loss_ops.cpp: NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss (attributes and shape checks: src/ops/loss_attrs.h).
//
// Shapes: input/scores [N, C, d1..dk], target/labels [N, d1..dk] (int32 or int64), optional class
// weights [C]. Every value is loaded as double, losses accumulate in double and are rounded once
// into the output dtype. A target equal to ignore_index (when the attribute is present) contributes
// 0 and weighs 0 in the mean; any other target outside [0, C) is a run-time error naming it.
#pragma once

#include <string>

#include "graft/status.h"
#include "ops/operator.h"

namespace graft::cpu {

Status negative_log_likelihood_loss(ExecContext& ctx);
Status softmax_cross_entropy_loss(ExecContext& ctx);  // output 1 (optional): log_softmax over axis 1

}  // namespace graft::cpu
