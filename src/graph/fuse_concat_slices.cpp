// Concat of Slices along the concatenation axis -> one GraftConcatSlices that reads the slices in
// place (src/ops/views/views.cpp). torch.roll exports as Slice, Slice, Concat per rolled axis (Swin's
// shifted windows roll twice per block, back and forth): three kernels and two intermediate copies
// per axis become one launch of pitched copies.
#include <limits>
#include <set>

#include "graph/passes.h"
#include "ops/internal_ops.h"

namespace graft {

namespace {

// The single integer of a one-element integer constant.
std::optional<int64_t> one_int(const Value* v) {
  if (!v || !v->constant || v->constant->numel() != 1 || !dtype_is_integer(v->constant->dtype())) return std::nullopt;
  return v->constant->to_int64_vector()[0];
}

// A static extent along `axis` of `v`'s shape, or nullopt.
std::optional<int64_t> static_extent(const Value* v, int64_t axis) {
  if (!v || !v->desc.shape || axis >= static_cast<int64_t>(v->desc.shape->size())) return std::nullopt;
  const Dim& d = (*v->desc.shape)[static_cast<size_t>(axis)];
  if (!d.is_const()) return std::nullopt;
  return d.value();
}

}  // namespace

Result<int> fuse_concat_slices(Graph& graph) {
  auto consumers = graph.consumers();
  std::set<const Node*> dead;
  int fused = 0;
  std::vector<Node*> concats;
  for (const auto& up : graph.nodes())
    if (up->op_type == "Concat" && up->domain.empty() && up->outputs.size() == 1 && up->outputs[0]) concats.push_back(up.get());
  NodeNamer namer(graph);
  for (Node* n : concats) {
    const Value* y = n->outputs[0];
    if (!y->desc.shape || y->desc.shape->empty() || n->inputs.empty()) continue;
    auto axis_attr = n->attrs.get_int("axis", 0);
    if (!axis_attr || !n->attrs.has("axis")) continue;
    auto axis_r = normalize_axis(axis_attr.value(), static_cast<int64_t>(y->desc.shape->size()));
    if (!axis_r) continue;
    const int64_t axis = axis_r.value();
    std::vector<Value*> inputs;
    std::vector<int64_t> starts, ends;
    std::vector<Node*> absorbed;
    bool ok = true;
    for (Value* v : n->inputs) {
      if (!v || v->desc.dtype != y->desc.dtype) {
        ok = false;
        break;
      }
      Node* s = v->producer;
      auto readers = consumers.find(v);
      const bool sole = readers != consumers.end() && readers->second.size() == 1 && !v->is_graph_output;
      // A Slice of one axis, the concatenation axis, with step 1 and constant bounds (opset 10 form).
      std::optional<int64_t> start, end;
      if (sole && s && !dead.count(s) && s->op_type == "Slice" && s->domain.empty() && s->inputs.size() >= 4 &&
          s->inputs.size() <= 5 && s->inputs[0] && (start = one_int(s->inputs[1])) && (end = one_int(s->inputs[2]))) {
        auto a = one_int(s->inputs[3]);
        const auto step = s->inputs.size() == 5 && s->inputs[4] ? one_int(s->inputs[4]) : std::optional<int64_t>(1);
        const int64_t rank = static_cast<int64_t>(y->desc.shape->size());
        if (a && step && *step == 1 && (*a == axis || *a + rank == axis) && static_extent(s->inputs[0], axis)) {
          inputs.push_back(s->inputs[0]);
          starts.push_back(*start);
          ends.push_back(*end);
          absorbed.push_back(s);
          continue;
        }
      }
      if (!static_extent(v, axis)) {  // the op needs every input's extent along the axis
        ok = false;
        break;
      }
      inputs.push_back(v);
      starts.push_back(0);
      ends.push_back(std::numeric_limits<int64_t>::max());
    }
    if (!ok || absorbed.empty()) continue;
    Node* c = graph.add_node(namer(n->name + "_slices"), "GraftConcatSlices", kInternalDomain);
    c->opset = n->opset;
    c->attrs.set("axis", axis);
    c->attrs.set("starts", starts);
    c->attrs.set("ends", ends);
    c->inputs = inputs;
    c->outputs = n->outputs;
    n->outputs[0]->producer = c;
    n->outputs.clear();
    dead.insert(n);
    for (Node* s : absorbed) {
      for (Value* o : s->outputs)
        if (o) o->producer = nullptr;
      s->outputs.clear();
      dead.insert(s);
    }
    ++fused;
  }
  graph.remove_nodes_if([&](const Node* x) { return dead.count(x) != 0; });
  graph.prune_values();
  GRAFT_RETURN_IF_ERROR(graph.topological_sort());
  return fused;
}

}  // namespace graft
