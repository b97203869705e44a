// The FP16 precision pass (BuilderConfig::fp16): float32 activations and weights become float16
// where the backend runs the node in float16; graph inputs and outputs keep the model's dtypes, with
// Cast nodes inserted at every float16/float32 boundary.
#pragma once

#include <functional>
#include <vector>

#include "graph/graph.h"

namespace graft {

struct PrecisionPolicy {
  // Whether the backend runs `tentative` (the node with its float32 inputs/outputs re-typed to
  // float16, shapes inferred) in float16. Nodes it refuses stay float32.
  std::function<bool(const Node& tentative)> supports_fp16;
  // Input indices that must keep their dtype (host-side shape/scale inputs).
  std::function<std::vector<int>(const Node& node)> keep_inputs;
};

// Builtin ops kept in float32 whatever the backend says (PrecisionTrait::kFloat32 in their
// definition, src/ops/operator.h): their range or accumulated error needs it (exp/log/pow
// overflow, long sums), or they make shapes, sizes or draws. Normalizations and Softmax are not
// among them: their kernels accumulate in float32 internally, so float16 inputs/outputs are safe.
bool op_needs_fp32(const Node& n);
bool op_needs_fp32(const std::string& onnx_op_type);

// Rewrites the graph; returns the number of nodes now computing in float16. Shapes are re-inferred.
Result<int> convert_to_fp16(Graph& graph, const PrecisionPolicy& policy);

}  // namespace graft
