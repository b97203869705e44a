// Subgraphs of control-flow nodes (If's branches, Loop's and Scan's body): what they compute, over
// symbolic shapes or concrete tensors, without modifying them. A subgraph is shared by every
// context that runs its node, so its Values are read-only here: inference and execution keep their
// own tables keyed by Value.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
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

// Copying a subgraph's nodes into the main graph (an If whose condition is known, a Loop's
// iterations: src/graph/inline_constant_ifs.cpp, unroll_loops.cpp).
//
// The value of a one-element bool constant (a condition known at build time), else nullopt.
std::optional<bool> constant_bool(const Value* v);
// Whether `sub` can be copied node by node: no node holds a subgraph of its own, and each reads only
// the subgraph's inputs, captures and initializers or what an earlier node made (so each copy is
// wired as it is added), and so do its outputs.
bool copyable_subgraph(const Graph& sub);
// What every copy of `sub` (owned by `node`) reads from outside it: each captured value bound to
// the node's implicit input at its position, each initializer to a new constant of `g`.
std::map<const Value*, Value*> outer_bindings(Graph& g, const Node& node, const Graph& sub);
// Adds a copy of `sub`'s nodes to `g`, in order: node names from `namer(node.name + "/" + inner +
// suffix)`, values `node.name + "_" + inner + suffix`, precisions at least the node's. Inputs are
// read through `map` (the caller binds the subgraph's inputs there, and outer_bindings' values); each
// new output is added to it, so the caller finds the copies of `sub`'s outputs there.
Status copy_subgraph_nodes(Graph& g, const Node& node, const Graph& sub, const std::string& suffix,
                           std::map<const Value*, Value*>& map, NodeNamer& namer);

// After the nodes `done` had their subgraphs copied in: removes them, folds the Identities written
// for their outputs, and puts the graph in order again. Returns how many there were.
Result<int> remove_copied_nodes(Graph& g, const std::set<const Node*>& done);

// Shape for a value that may differ between branches or iterations: dims equal in `a` and `b` are
// kept, the others become fresh symbols from `fresh`; a different or unknown rank gives no shape.
std::optional<Shape> merge_shapes(const std::optional<Shape>& a, const std::optional<Shape>& b,
                                  const std::function<Dim()>& fresh);

}  // namespace graft
