// Dead-node elimination and Identity removal.
#include <optional>
#include <utility>
#include <set>
#include <vector>

#include "graph/pass_util.h"
#include "graph/passes.h"
#include "ops/views/views.h"

namespace graft {

namespace {

// The integers of input `i` (a constant) or, when the node has no such input, of attribute `attr`
// (the pre-opset-10/11 forms of Slice and Pad); nullopt when neither is known at build time.
std::optional<std::vector<int64_t>> const_ints(const Node& n, size_t i, const char* attr) {
  if (i < n.inputs.size() && n.inputs[i]) {
    const Value* v = n.inputs[i];
    if (!v->constant || !dtype_is_integer(v->constant->dtype())) return std::nullopt;
    return v->constant->to_int64_vector();  // exact: INT64_MAX ends do not pass through double
  }
  if (!n.attrs.has(attr)) return std::nullopt;
  auto a = n.attrs.get_ints(attr, {});
  if (!a) return std::nullopt;
  return a.value();
}

// A Pad whose pads are all zero: its output is its input, whatever the mode.
bool zero_pad(const Node& n) {
  if (n.op_type != "Pad" || n.inputs.empty()) return false;
  auto pads = const_ints(n, 1, "pads");
  if (!pads) return false;
  for (int64_t p : *pads)
    if (p != 0) return false;
  return true;
}

// A Slice that keeps every element of every axis it names: start 0 and end at or past the extent
// (after ONNX's clamping), step 1, over axes whose extent is known.
bool full_slice(const Node& n) {
  if (n.op_type != "Slice" || n.inputs.empty() || !n.inputs[0] || !n.inputs[0]->desc.shape) return false;
  const Shape& shape = *n.inputs[0]->desc.shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  auto starts = const_ints(n, 1, "starts");
  auto ends = const_ints(n, 2, "ends");
  if (!starts || !ends || starts->size() != ends->size()) return false;
  std::vector<int64_t> axes;
  if (auto a = const_ints(n, 3, "axes")) axes = *a;
  else if ((n.inputs.size() > 3 && n.inputs[3]) || n.attrs.has("axes")) return false;  // axes not known
  else for (size_t k = 0; k < starts->size(); ++k) axes.push_back(static_cast<int64_t>(k));
  if (axes.size() != starts->size()) return false;
  if (n.inputs.size() > 4 && n.inputs[4]) {
    auto steps = const_ints(n, 4, "steps");
    if (!steps || steps->size() != starts->size()) return false;
    for (int64_t st : *steps)
      if (st != 1) return false;
  }
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t axis = axes[k] < 0 ? axes[k] + rank : axes[k];
    if (axis < 0 || axis >= rank || !shape[static_cast<size_t>(axis)].is_const()) return false;
    const int64_t dim = shape[static_cast<size_t>(axis)].value();
    if (slice_range((*starts)[k], (*ends)[k], dim) != std::pair<int64_t, int64_t>{0, dim}) return false;
  }
  return true;
}

}  // namespace

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
    // A Pad by zero and a Slice of whole axes copy their input (swin_t's window padding and crop,
    // F.pad by W % 7 and x[:, :H, :W], at 224x224: 27 copies of its activations per run).
    const bool copy = zero_pad(n) || full_slice(n);
    if (!(identity || dropout || same_type_cast || copy) || !n.domain.empty() || n.outputs.empty() ||
        (n.outputs.size() > 1 && n.outputs[1]))
      continue;
    Value* a = n.inputs[0];
    Value* b = n.outputs[0];
    if (!a || !b) continue;
    if (!b->is_graph_output) {
      replace_reads(graph, b, a);
    } else {
      // b is a graph output: its name must survive, so a's producer writes b directly.
      Node* p = a->producer;
      if (!p || a->is_graph_output) continue;
      for (Value*& o : p->outputs)
        if (o == a) o = b;
      b->producer = p;
      a->producer = nullptr;
      replace_reads(graph, a, b);
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
