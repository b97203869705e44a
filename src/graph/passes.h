// Graph passes run by the builder, in this order: identity removal, shape inference (with the
// declared-output check), constant folding, Conv+BatchNormalization folding, dead-node
// elimination, and shape inference again.
#pragma once

#include <optional>
#include <vector>

#include "graph/graph.h"
#include "ops/operator.h"

namespace graft {

// Infers one node's output descs (and symbolic int contents) from its inputs' infos. Handles both
// builtin ops (BuiltinOp::infer) and custom ops (OpDef::infer_shapes / infer_dtypes). Errors carry
// the node's name and op type.
Status infer_node(const Node& node, const std::vector<InferContext::InputInfo>& inputs,
                  std::vector<TensorDesc>* out_descs,
                  std::vector<std::optional<std::vector<Dim>>>* out_sym_values);

// Runs infer_node over the graph in topological order, writing each output Value's desc and
// sym_value, and checks that declared graph-output dtypes and (constant) dims agree.
Status infer_shapes(Graph& graph);

// Nodes whose inputs are all constant are run on the CPU at build time; values whose sym_value is
// fully constant become constants. Outputs above kMaxFoldElements elements are left alone.
inline constexpr int64_t kMaxFoldElements = int64_t{16} << 20;
Result<int> fold_constants(Graph& graph);

// Conv followed by BatchNormalization (constant weights and statistics) becomes one Conv.
Result<int> fold_batchnorm(Graph& graph);

// Identity nodes are bypassed (kept only when both sides are graph I/O).
int remove_identities(Graph& graph);

// Removes nodes none of whose outputs reach a graph output; then prunes unused values.
int eliminate_dead_nodes(Graph& graph);

}  // namespace graft
