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
  // A node held to float16 (Node::precision, BuilderConfig::layer_precisions) that cannot run in
  // float16: an error naming it when true (trtexec's --precisionConstraints=obey), else a warning
  // (prefer).
  bool obey_float16 = true;
};

// Builtin ops kept in float32 whatever the backend says (PrecisionTrait::kFloat32 in their
// definition, src/ops/operator.h): their range or accumulated error needs it (exp/log/pow
// overflow, long sums), or they make shapes, sizes or draws. Normalizations and Softmax are not
// among them: their kernels accumulate in float32 internally, so float16 inputs/outputs are safe.
bool op_needs_fp32(const Node& n);
bool op_needs_fp32(const std::string& onnx_op_type);

// A float32 constant in float16, with the two clamps TensorRT applies to weights: a nonzero value
// that would round to 0 becomes the smallest subnormal of its sign (+-2^-24), and a finite value
// beyond the range becomes +-65504 rather than inf. The first keeps a guard such as
// F.normalize's clamp_min(1e-12) or an x + 1e-12 denominator from turning into 0/0 (swin_v2_t's
// windows of padding tokens gave NaN); the second keeps a -1e9 attention mask finite. Values that
// were 0, inf or NaN stay as they are. The counts of each clamp are added to `clamps`.
struct Float16Clamps {
  int64_t raised = 0;   // nonzero -> +-smallest subnormal
  int64_t lowered = 0;  // finite -> +-65504
};
Result<Tensor> float16_constant(const Tensor& t, Float16Clamps* clamps);

// Nodes held to a precision (Node::precision) are obeyed: float32 ones stay float32 whatever the
// backend could do, float16 ones are converted even where their op would stay float32
// (op_needs_fp32), if the backend runs them so; a node held to float16 that writes no float32 tensor
// (Shape, integer arithmetic) is left as it is.
// Rewrites the graph; returns the number of nodes now computing in float16. Shapes are re-inferred.
// Constants read by float16 nodes are converted by float16_constant; when a clamp changed any value,
// one warning says how many and names the first constant.
Result<int> convert_to_fp16(Graph& graph, const PrecisionPolicy& policy);

}  // namespace graft
