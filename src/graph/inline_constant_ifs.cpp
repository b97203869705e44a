// An If whose condition is a constant (an initializer, or shape arithmetic that constant folding
// resolved: ONNX's function bodies pick their rank's path with `Equal(Size(shape), 4)`) becomes the
// nodes of the branch it takes, in the main graph. As an If it would run its branch step by step,
// decided on the host: a CUDA engine cannot capture it in a CUDA graph, its branch's layers get none
// of the fusion passes, and the branch it never takes must still compile for the model's shapes.
//
// An If is inlined when its condition is a one-element constant and the branch it takes can be
// copied node by node (copyable_subgraph: no nested subgraphs). The branch's captured values bind
// to the If's implicit inputs and its initializers become constants of the main graph; the If's
// outputs keep their values (names, readers) through an Identity from the branch's outputs, which
// remove_identities then folds away.
#include <set>

#include "graph/pass_util.h"
#include "graph/passes.h"
#include "graph/subgraph.h"

namespace graft {

namespace {

// Adds the nodes of `branch` and, for every output of `node`, an Identity writing it. The If node
// itself is left for the caller to remove.
Status inline_branch(Graph& g, Node& node, const Graph& branch, NodeNamer& namer) {
  std::map<const Value*, Value*> map = outer_bindings(g, node, branch);
  GRAFT_RETURN_IF_ERROR(copy_subgraph_nodes(g, node, branch, "", map, namer));
  const int opset = default_domain_opset(g);
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    Value* out = node.outputs[o];
    if (!out) continue;
    Node* n = g.add_node(namer(node.name + "/Identity"), "Identity");
    n->opset = opset;
    n->inputs = {map.at(branch.outputs()[o])};
    n->outputs = {out};
    n->precision = node.precision;
    out->producer = n;
  }
  return Status::ok();
}

}  // namespace

Result<int> inline_constant_ifs(Graph& graph) {
  std::vector<Node*> ifs;
  for (const auto& n : graph.nodes())
    if (n->op_type == "If" && n->domain.empty() && !n->custom_op && n->explicit_inputs() == 1) ifs.push_back(n.get());
  NodeNamer namer(graph);
  std::set<const Node*> done;
  for (Node* node : ifs) {
    const std::optional<bool> cond = constant_bool(node->input(0));
    if (!cond) continue;
    auto branch = node_subgraph(*node, *cond ? "then_branch" : "else_branch");
    // A branch with inputs, or whose outputs do not match the node's, is left to the If's own
    // inference to report.
    if (!branch || !(*branch)->inputs().empty() || (*branch)->outputs().size() != node->outputs.size() ||
        !copyable_subgraph(**branch))
      continue;
    GRAFT_RETURN_IF_ERROR(inline_branch(graph, *node, **branch, namer));
    done.insert(node);
  }
  return remove_copied_nodes(graph, done);
}

}  // namespace graft
