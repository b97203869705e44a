// Dead-node elimination and Identity removal.
#include <set>

#include "graph/passes.h"

namespace graft {

int eliminate_dead_nodes(Graph& graph) {
  std::set<const Value*> needed(graph.outputs().begin(), graph.outputs().end());
  std::set<const Node*> live;
  // Walk backwards from the outputs; nodes are in topological order after shape inference, and a
  // reverse sweep until nothing changes covers any order.
  bool changed = true;
  while (changed) {
    changed = false;
    for (auto it = graph.nodes().rbegin(); it != graph.nodes().rend(); ++it) {
      const Node* n = it->get();
      if (live.count(n)) continue;
      bool used = false;
      for (const Value* o : n->outputs) used |= o && needed.count(o);
      if (!used) continue;
      live.insert(n);
      changed = true;
      for (const Value* v : n->inputs) if (v) needed.insert(v);
    }
  }
  int removed = static_cast<int>(graph.nodes().size() - live.size());
  graph.remove_nodes_if([&](const Node* n) { return live.count(n) == 0; });
  graph.prune_values();
  return removed;
}

int remove_identities(Graph& graph) {
  int removed = 0;
  std::set<const Node*> dead;
  for (auto& up : graph.nodes()) {
    Node& n = *up;
    // Identity, and Dropout in inference (no mask output, training_mode absent or a constant false),
    // which is the identity too.
    const bool identity = n.op_type == "Identity" && n.inputs.size() == 1;
    // A Cast to the dtype its input already has (PyTorch layers write `.float()` on float32
    // tensors): in a float16 engine it would become a round trip through float32.
    // (DataType values are the ONNX codes `to` holds.)
    const bool same_type_cast = n.op_type == "Cast" && n.inputs.size() == 1 && n.inputs[0] &&
                                n.inputs[0]->desc.dtype != DataType::kUndefined && [&] {
                                  auto to = n.attrs.get_int("to", -1);
                                  return to && *to == static_cast<int64_t>(n.inputs[0]->desc.dtype);
                                }();
    const bool dropout = n.op_type == "Dropout" && !n.inputs.empty() &&
                         (n.inputs.size() < 3 || !n.inputs[2] ||
                          (n.inputs[2]->constant && n.inputs[2]->constant->numel() == 1 && n.inputs[2]->constant->get(0) == 0));
    if (!(identity || dropout || same_type_cast) || !n.domain.empty() || n.outputs.empty() || (n.outputs.size() > 1 && n.outputs[1]))
      continue;
    Value* a = n.inputs[0];
    Value* b = n.outputs[0];
    if (!a || !b) continue;
    if (!b->is_graph_output) {
      // Readers of b read a instead.
      for (auto& other : graph.nodes())
        for (Value*& in : other->inputs)
          if (in == b) in = a;
    } else {
      // b is a graph output: its name must survive, so a's producer writes b directly.
      Node* p = a->producer;
      if (!p || a->is_graph_output) continue;
      for (Value*& o : p->outputs)
        if (o == a) o = b;
      b->producer = p;
      a->producer = nullptr;
      for (auto& other : graph.nodes())
        for (Value*& in : other->inputs)
          if (in == a) in = b;
    }
    b->producer = b->producer == &n ? nullptr : b->producer;
    dead.insert(&n);
    ++removed;
  }
  graph.remove_nodes_if([&](const Node* n) { return dead.count(n) != 0; });
  graph.prune_values();
  return removed;
}

}  // namespace graft
