// compose_view_chains: a chain of pure data-movement nodes becomes one strided copy.
//
// Exporters spell a tensor's rearrangement as several nodes: the dynamo export of
// nn.MultiheadAttention goes from the packed q/k/v projection to one head-major operand through
// Reshape -> Unsqueeze -> Transpose -> Squeeze -> Gather(select) -> Reshape -> Transpose -> Reshape
// -> Transpose, each Transpose and Gather a full copy (vit_b_16: 8 such copies per encoder block).
// Every one of those nodes only re-indexes memory, so the whole chain is one strided view of the
// tensor it starts from: Transpose permutes (dims, strides), a Gather of one constant index moves
// the offset and drops (or keeps as 1) the axis, and a Reshape-like node (Reshape, Flatten,
// Squeeze, Unsqueeze, Identity) re-splits the axes where the strides allow it (the test PyTorch's
// view() applies). Where a chain's end value is read by a node that is not itself a view, the
// chain becomes GraftStridedCopy(origin) (src/ops/view_ops.cpp): one gather instead of several.
//
// Only static shapes are handled (an engine built for a fixed profile has them); a chain with a
// dynamic dimension, a Reshape that no strides can express, or fewer than two copying nodes (one
// copy is already as cheap as it gets) is left alone. Nodes the rewrite leaves unread are removed.
#include <algorithm>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "graph/passes.h"

namespace graft {

namespace {

struct View {
  std::vector<int64_t> dims, strides;
  int64_t offset = 0;
};

bool static_dims(const Value* v, std::vector<int64_t>* out) {
  if (!v || !v->desc.shape) return false;
  out->clear();
  for (const Dim& d : *v->desc.shape) {
    if (!d.is_const() || d.value() < 0) return false;
    out->push_back(d.value());
  }
  return true;
}

bool reshape_like(const std::string& op) {
  return op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" || op == "Identity";
}

// The one constant index of a Gather (rank 0: the axis is dropped; rank 1 of one element: kept).
bool gather_single_index(const Node& n, int64_t* index, bool* keeps_axis) {
  const Value* idx = n.input(1);
  if (!idx || !idx->constant || idx->constant->numel() != 1 || idx->constant->rank() > 1) return false;
  const DataType t = idx->constant->dtype();
  if (t != DataType::kInt64 && t != DataType::kInt32) return false;
  *index = static_cast<int64_t>(idx->constant->get(0));
  *keeps_axis = idx->constant->rank() == 1;
  return true;
}

bool is_view_node(const Node& n) {
  if (!n.domain.empty() || n.is_custom() || n.outputs.size() != 1 || !n.outputs[0] || !n.input(0)) return false;
  if (n.outputs[0]->desc.dtype != n.input(0)->desc.dtype) return false;
  if (reshape_like(n.op_type) || n.op_type == "Transpose") return true;
  int64_t i = 0;
  bool keep = false;
  return n.op_type == "Gather" && gather_single_index(n, &i, &keep);
}

// Does the node move data (a kernel) rather than alias its input? Reshape-like nodes alias.
bool copies(const Node& n, const std::vector<int64_t>& in_dims) {
  if (n.op_type == "Gather") return true;
  if (n.op_type != "Transpose") return false;
  auto perm = n.attrs.get_ints("perm", {});
  if (!perm || perm->empty()) return true;
  int64_t last = -1;  // a permutation that only moves unit axes is a reshape
  for (int64_t p : *perm) {
    if (p < 0 || p >= static_cast<int64_t>(in_dims.size())) return true;
    if (in_dims[static_cast<size_t>(p)] == 1) continue;
    if (p < last) return true;
    last = p;
  }
  return false;
}

// New strides for viewing `v` with dims `to` (same element count), or false when no strides can
// (the axes being merged are not laid out contiguously relative to each other).
bool reshape_view(View& v, const std::vector<int64_t>& to) {
  if (numel_of(v.dims) != numel_of(to) || numel_of(to) == 0) return false;
  std::vector<int64_t> strides(to.size(), 1);
  if (v.dims.empty()) {
    v.dims = to;
    v.strides = strides;
    return true;
  }
  int64_t view_d = static_cast<int64_t>(to.size()) - 1;
  int64_t chunk_stride = v.strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(v.dims.size()) - 1; d >= 0; --d) {
    tensor_numel *= v.dims[static_cast<size_t>(d)];
    // A chunk ends where the next-outer axis does not continue this one's memory.
    const bool chunk_ends = d == 0 || (v.dims[static_cast<size_t>(d - 1)] != 1 &&
                                       v.strides[static_cast<size_t>(d - 1)] != tensor_numel * chunk_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || to[static_cast<size_t>(view_d)] == 1)) {
      strides[static_cast<size_t>(view_d)] = view_numel * chunk_stride;
      view_numel *= to[static_cast<size_t>(view_d)];
      --view_d;
    }
    if (view_numel != tensor_numel) return false;
    if (d > 0) {
      chunk_stride = v.strides[static_cast<size_t>(d - 1)];
      tensor_numel = view_numel = 1;
    }
  }
  if (view_d != -1) return false;
  v.dims = to;
  v.strides = strides;
  return true;
}

// Applies one view node to `v` (the view of its input); false when it cannot be expressed.
bool apply(const Node& n, View& v) {
  std::vector<int64_t> out;
  if (!static_dims(n.outputs[0], &out)) return false;
  if (n.op_type == "Transpose") {
    const size_t r = v.dims.size();
    std::vector<int64_t> rev(r);
    std::iota(rev.rbegin(), rev.rend(), 0);
    auto perm = n.attrs.get_ints("perm", rev);
    if (!perm || perm->size() != r) return false;
    View t;
    for (int64_t p : *perm) {
      if (p < 0 || p >= static_cast<int64_t>(r)) return false;
      t.dims.push_back(v.dims[static_cast<size_t>(p)]);
      t.strides.push_back(v.strides[static_cast<size_t>(p)]);
    }
    t.offset = v.offset;
    v = t;
  } else if (n.op_type == "Gather") {
    int64_t index = 0;
    bool keep = false;
    if (!gather_single_index(n, &index, &keep)) return false;
    const int64_t r = static_cast<int64_t>(v.dims.size());
    auto axis_attr = n.attrs.get_int("axis", 0);
    if (!axis_attr) return false;
    int64_t axis = *axis_attr < 0 ? *axis_attr + r : *axis_attr;
    if (axis < 0 || axis >= r) return false;
    const int64_t extent = v.dims[static_cast<size_t>(axis)];
    if (index < 0) index += extent;
    if (index < 0 || index >= extent) return false;
    v.offset += index * v.strides[static_cast<size_t>(axis)];
    if (keep) {
      v.dims[static_cast<size_t>(axis)] = 1;
    } else {
      v.dims.erase(v.dims.begin() + axis);
      v.strides.erase(v.strides.begin() + axis);
    }
  } else if (!reshape_view(v, out)) {
    return false;
  }
  return v.dims == out;
}

}  // namespace

Result<int> compose_view_chains(Graph& graph) {
  auto cons = graph.consumers();
  NodeNamer namer(graph);
  std::vector<Node*> nodes;
  for (const auto& n : graph.nodes()) nodes.push_back(n.get());
  std::set<const Node*> replaced;
  int rewritten = 0;
  for (Node* n : nodes) {
    if (!is_view_node(*n)) continue;
    Value* out = n->outputs[0];
    bool terminal = out->is_graph_output;
    for (const Node* c : cons[out]) terminal = terminal || !is_view_node(*c);
    if (!terminal) continue;
    // Walk back to the first value not made by a view node; collect the chain origin-first.
    std::vector<const Node*> chain{n};
    Value* origin = n->inputs[0];
    while (origin->producer && is_view_node(*origin->producer) && !replaced.count(origin->producer)) {
      chain.push_back(origin->producer);
      origin = origin->producer->inputs[0];
    }
    if (origin->constant) continue;  // constant folding's job
    std::reverse(chain.begin(), chain.end());
    View v;
    if (!static_dims(origin, &v.dims)) continue;
    v.strides = contiguous_strides(v.dims);
    int copying = 0;
    bool ok = true;
    for (const Node* c : chain) {
      copying += copies(*c, v.dims) ? 1 : 0;
      ok = ok && apply(*c, v);
      if (!ok) break;
    }
    if (!ok || copying < 2) continue;
    Node* s = graph.add_node(namer(n->name + "_view"), "GraftStridedCopy");
    s->opset = n->opset;
    s->attrs.set("shape", v.dims);
    s->attrs.set("strides", v.strides);
    s->attrs.set("offset", v.offset);
    s->inputs = {origin};
    s->outputs = {out};
    out->producer = s;
    replaced.insert(n);
    ++rewritten;
  }
  if (!rewritten) return 0;
  graph.remove_nodes_if([&](const Node* x) { return replaced.count(x) > 0; });
  // The chains' inner nodes that nothing reads any more.
  for (bool again = true; again;) {
    again = false;
    auto readers = graph.consumers();
    graph.remove_nodes_if([&](const Node* x) {
      if (!is_view_node(*x) || x->outputs[0]->is_graph_output) return false;
      auto it = readers.find(x->outputs[0]);
      const bool unread = it == readers.end() || it->second.empty();
      again = again || unread;
      return unread;
    });
  }
  graph.prune_values();
  GRAFT_RETURN_IF_ERROR(graph.topological_sort());
  return rewritten;
}

}  // namespace graft
