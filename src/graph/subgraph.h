// Subgraphs of control-flow nodes (If's branches, Loop's and Scan's body): what they compute, over
// symbolic shapes or concrete tensors, without modifying them. A subgraph is shared by every
// context that runs its node, so its Values are read-only here: inference and execution keep their
// own tables keyed by Value.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "ops/operator.h"

namespace graft {

// Where an output of a subgraph comes from, as inference sees it.
struct SubgraphInfo {
  TensorDesc desc;
  const Tensor* value = nullptr;  // known contents (a constant of the subgraph), or nullptr
};

// Infers the output descs of `sub` (owned by `node`, attribute `attr`) from descs (and any known
// contents) of its inputs and captured values. `inputs` must match the subgraph's inputs in count;
// a declared input dtype that disagrees with the one passed in is an error naming the attribute.
// Errors name the node, the attribute and the inner node. `value_descs`, when given, receives the
// desc of every value of `sub` that inference reached (a backend placing the subgraph's nodes reads
// their dtypes there, since the subgraph's own Values stay as the importer left them).
Status infer_subgraph(const Node& node, const std::string& attr, const Graph& sub,
                      const std::vector<InferContext::InputInfo>& inputs,
                      const std::vector<InferContext::InputInfo>& captures, std::vector<SubgraphInfo>* outputs,
                      std::map<const Value*, TensorDesc>* value_descs = nullptr);

// `inner`, an error inside subgraph `attr` of `node`, as an error of the node that keeps the inner
// node's name and message.
Status subgraph_error(const Node& node, const std::string& attr, const Status& inner);

// The subgraph `attr` of `node`; an error naming the node and attribute when it is missing.
Result<const Graph*> node_subgraph(const Node& node, const std::string& attr);

// Shape for a value that may differ between branches or iterations: dims equal in `a` and `b` are
// kept, the others become fresh symbols from `fresh`; a different or unknown rank gives no shape.
std::optional<Shape> merge_shapes(const std::optional<Shape>& a, const std::optional<Shape>& b,
                                  const std::function<Dim()>& fresh);

}  // namespace graft
