// The loss family, NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: what its definition
// (loss.cpp: schema, inference, CPU reference) and its CUDA kernels (loss.cu) share, so that a node
// is accepted, and its errors are worded, the same way whichever side reads it. The two ops share
// one pair of files rather than one per op: SoftmaxCrossEntropyLoss is NLL over log_softmax(scores),
// on NLL's code (see loss.cpp).
//
// Shapes: input/scores [N, C, d1..dk], target/labels [N, d1..dk] (int32 or int64), optional class
// weights [C] of the input's dtype. Output 0 is the loss, [N, d1..dk] for reduction "none", a scalar
// for "sum" and "mean"; SoftmaxCrossEntropyLoss's optional output 1 is log_softmax(scores) over
// axis 1. A target equal to ignore_index (when the attribute is present) contributes 0 and weighs 0
// in the mean; any other target outside [0, C) fails the CPU run and makes the CUDA loss NaN.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graft/attribute.h"
#include "graft/dtype.h"
#include "graft/status.h"

namespace graft {

enum class LossReduction { kNone, kSum, kMean };

// reduction ("none", "sum" or "mean"; default "mean") and ignore_index (absent: every target
// counts); errors name the attribute.
struct LossAttrs {
  LossReduction reduction = LossReduction::kMean;
  std::optional<int64_t> ignore_index;
};
Result<LossAttrs> loss_attrs(const AttributeMap& attrs);

// The input [N, C, d1..dk] viewed as [n, c, inner]; the target is [n, inner].
struct LossGeometry {
  int64_t n = 0, c = 0, inner = 1;
};

// Checks the input's dims, the target's dtype and dims, and the optional weight's dtype and dims
// (`weight_dims` null: none) against each other; errors start with `op` and name the shapes.
Result<LossGeometry> loss_geometry(const std::string& op, const std::vector<int64_t>& x, DataType x_dtype,
                                   DataType target_dtype, const std::vector<int64_t>& target,
                                   const std::vector<int64_t>* weight_dims, DataType weight_dtype);

}  // namespace graft
