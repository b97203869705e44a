// The loss ops' attributes and shapes (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss), read
// one way by the schema (src/ops/loss_ops.cpp), the CPU reference (src/backends/cpu/loss.cpp) and
// the CUDA op (src/backends/cuda/loss_ops.cpp), so an error reads the same whichever side finds it.
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
