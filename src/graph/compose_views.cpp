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
// view() applies, generalised: an axis may stay a mixed-radix product of several strides in the
// middle of a chain, as long as the chain's end is a plain strided view). Where a chain's end value is read by a node that is not itself a view, the
// chain becomes GraftStridedCopy(origin) (src/ops/view_ops.cpp): one gather instead of several.
//
// Only static shapes are handled (an engine built for a fixed profile has them); a chain with a
// dynamic dimension, a Reshape that no strides can express, or fewer than two copying nodes (one
// copy is already as cheap as it gets) is left alone. Nodes the rewrite leaves unread are removed.
#include <algorithm>
#include <array>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "graph/passes.h"
#include "ops/fused_transformer_ops.h"

namespace graft {

namespace {

// One axis of a view is a mixed-radix number over "atoms" (size, stride), outermost first: after a
// Reshape merges axes that are not adjacent in memory (vit's [S, B, H*hd] -> [S, B*H, hd]) the
// merged axis has two atoms, and a later Transpose + Reshape may split it again into axes with one
// stride each. Only the chain's end must be a plain strided view (one atom per axis).
struct Atom {
  int64_t size, stride;
};
struct View {
  std::vector<std::vector<Atom>> axes;  // an empty atom list is an axis of size 1
  int64_t offset = 0;
};

int64_t axis_size(const std::vector<Atom>& atoms) {
  int64_t n = 1;
  for (const Atom& a : atoms) n *= a.size;
  return n;
}

std::vector<int64_t> view_dims(const View& v) {
  std::vector<int64_t> d;
  for (const auto& ax : v.axes) d.push_back(axis_size(ax));
  return d;
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

// Regroups the view's atoms (row-major order over its axes) into the axes `to`, splitting an atom
// where an axis boundary falls inside it; false when a boundary does not divide an atom.
bool reshape_view(View& v, const std::vector<int64_t>& to) {
  std::vector<Atom> atoms;
  for (const auto& ax : v.axes)
    for (const Atom& a : ax)
      if (a.size != 1) atoms.push_back(a);
  std::vector<std::vector<Atom>> axes;
  size_t next = 0;
  for (int64_t want : to) {
    std::vector<Atom> ax;
    int64_t have = 1;
    while (have < want) {
      if (next == atoms.size()) return false;
      Atom& a = atoms[next];
      const int64_t need = want / have;
      if (want % have) return false;
      if (a.size <= need) {
        ax.push_back(a);
        have *= a.size;
        ++next;
      } else {  // the boundary falls inside this atom: take its outer `need` part
        if (a.size % need) return false;
        const int64_t inner = a.size / need;
        ax.push_back(Atom{need, a.stride * inner});
        a.size = inner;
        have *= need;
      }
    }
    if (have != want) return false;
    axes.push_back(std::move(ax));
  }
  if (next != atoms.size()) return false;
  v.axes = std::move(axes);
  return true;
}

// Applies one view node to `v` (the view of its input); false when it cannot be expressed.
bool apply(const Node& n, View& v) {
  std::vector<int64_t> out;
  if (!static_dims_of(n.outputs[0], &out)) return false;
  if (n.op_type == "Transpose") {
    const size_t r = v.axes.size();
    std::vector<int64_t> rev(r);
    std::iota(rev.rbegin(), rev.rend(), 0);
    auto perm = n.attrs.get_ints("perm", rev);
    if (!perm || perm->size() != r) return false;
    std::vector<std::vector<Atom>> axes;
    for (int64_t p : *perm) {
      if (p < 0 || p >= static_cast<int64_t>(r)) return false;
      axes.push_back(v.axes[static_cast<size_t>(p)]);
    }
    v.axes = std::move(axes);
  } else if (n.op_type == "Gather") {
    int64_t index = 0;
    bool keep = false;
    if (!gather_single_index(n, &index, &keep)) return false;
    const int64_t r = static_cast<int64_t>(v.axes.size());
    auto axis_attr = n.attrs.get_int("axis", 0);
    if (!axis_attr) return false;
    const int64_t axis = *axis_attr < 0 ? *axis_attr + r : *axis_attr;
    if (axis < 0 || axis >= r) return false;
    auto& atoms = v.axes[static_cast<size_t>(axis)];
    const int64_t extent = axis_size(atoms);
    if (index < 0) index += extent;
    if (index < 0 || index >= extent) return false;
    for (size_t k = atoms.size(); k-- > 0;) {  // the index's mixed-radix digits, innermost first
      v.offset += (index % atoms[k].size) * atoms[k].stride;
      index /= atoms[k].size;
    }
    if (keep) atoms.clear();
    else v.axes.erase(v.axes.begin() + axis);
  } else if (!reshape_view(v, out)) {
    return false;
  }
  return view_dims(v) == out;
}

// The end of a chain as (dims, strides): every axis must be one stride (its atoms contiguous). An
// axis of extent 1 gets stride 0: it is never stepped over, and a stride there must not make a
// kernel think the view is misaligned.
bool plain_strides(const View& v, std::vector<int64_t>* dims, std::vector<int64_t>* strides) {
  dims->clear();
  strides->clear();
  for (const auto& ax : v.axes) {
    int64_t size = 1, stride = 0;
    bool first = true;
    for (size_t k = ax.size(); k-- > 0;) {  // innermost first
      if (ax[k].size == 1) continue;
      if (first) {
        stride = ax[k].stride;
        first = false;
      } else if (ax[k].stride != stride * size) {
        return false;
      }
      size *= ax[k].size;
    }
    dims->push_back(size);
    strides->push_back(stride);
  }
  return true;
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
    std::vector<int64_t> origin_dims;
    if (!static_dims_of(origin, &origin_dims)) continue;
    View v;
    const auto contiguous = contiguous_strides(origin_dims);
    for (size_t d = 0; d < origin_dims.size(); ++d) v.axes.push_back({Atom{origin_dims[d], contiguous[d]}});
    int copying = 0;
    bool ok = true;
    for (const Node* c : chain) {
      copying += copies(*c, view_dims(v)) ? 1 : 0;
      ok = ok && apply(*c, v);
      if (!ok) break;
    }
    std::vector<int64_t> dims, strides;
    if (!ok || copying < 2 || !plain_strides(v, &dims, &strides)) continue;
    Node* s = graph.add_node(namer(n->name + "_view"), "GraftStridedCopy");
    s->opset = n->opset;
    s->attrs.set("shape", dims);
    s->attrs.set("strides", strides);
    s->attrs.set("offset", v.offset);
    s->inputs = {origin};
    s->outputs = {out};
    out->producer = s;
    replaced.insert(n);
    ++rewritten;
  }
  if (!rewritten) return 0;
  graph.remove_nodes_if([&](const Node* x) { return replaced.count(x) > 0; });
  eliminate_dead_nodes(graph);  // the chains' inner nodes nothing reads any more
  GRAFT_RETURN_IF_ERROR(graph.topological_sort());
  return rewritten;
}

// ---- fold_views_into_attention -------------------------------------------------------------------

namespace {

// [offset, outer, inner, row, col] strides of a rank-3 or rank-4 operand [lead.., rows, cols] read
// through `strides` (rank 3: no outer level).
std::array<int64_t, 5> five(int64_t offset, const std::vector<int64_t>& strides) {
  if (strides.size() == 3) return {offset, 0, strides[0], strides[1], strides[2]};
  return {offset, strides[0], strides[1], strides[2], strides[3]};
}

// The tensor an attention operand can be read from in place, with its view: the source of a
// GraftStridedCopy, else the operand itself (contiguous).
struct Source {
  Value* value;
  std::array<int64_t, 5> view;
};

bool operand_source(Value* x, const std::vector<int64_t>& dims, Source* out) {
  const Node* p = x->producer;
  if (p && p->op_type == "GraftStridedCopy" && p->domain.empty()) {
    auto shape = p->attrs.get_ints("shape", {});
    auto strides = p->attrs.get_ints("strides", {});
    auto offset = p->attrs.get_int("offset", 0);
    if (shape && strides && offset && *shape == dims && strides->size() == dims.size() && p->input(0)) {
      *out = Source{p->inputs[0], five(*offset, *strides)};
      return true;
    }
  }
  *out = Source{x, five(0, contiguous_strides(dims))};
  return true;
}

}  // namespace

Result<int> fold_views_into_attention(Graph& graph) {
  auto cons = graph.consumers();
  std::vector<Node*> nodes;
  for (const auto& n : graph.nodes()) nodes.push_back(n.get());
  std::set<const Node*> absorbed;
  int folded = 0;
  for (Node* a : nodes) {
    if (a->op_type != "GraftAttention" || !a->domain.empty() || a->attrs.has("dims") || a->inputs.size() != 3) continue;
    std::vector<int64_t> qd, kd, vd, yd;
    if (!static_dims_of(a->input(0), &qd) || !static_dims_of(a->input(1), &kd) || !static_dims_of(a->input(2), &vd) ||
        !static_dims_of(a->output(0), &yd))
      continue;
    const DataType dt = a->input(0)->desc.dtype;
    const size_t r = qd.size();
    if ((dt != DataType::kFloat16 && dt != DataType::kBFloat16) || (r != 3 && r != 4) || kd.size() != r || vd.size() != r)
      continue;
    const int64_t S = qd[r - 2], D = qd[r - 1], S2 = kd[r - 1], Dv = vd[r - 1];
    if (D % 8 || Dv % 8 || D > 128 || Dv > 128) continue;  // what the fused kernel takes
    const int64_t outer = r == 4 ? qd[0] : 1, inner = qd[r - 3];
    Source q, kt, v;
    operand_source(a->inputs[0], qd, &q);
    operand_source(a->inputs[1], kd, &kt);
    operand_source(a->inputs[2], vd, &v);
    // The kernel reads Q and V rows with unit column stride and Kt with a unit stride on one axis.
    if (q.view[4] != 1) q = Source{a->inputs[0], five(0, contiguous_strides(qd))};
    if (v.view[4] != 1) v = Source{a->inputs[2], five(0, contiguous_strides(vd))};
    if (kt.view[3] != 1 && kt.view[4] != 1) kt = Source{a->inputs[1], five(0, contiguous_strides(kd))};
    // Y: written straight into the result of a Transpose that is its only reader.
    Value* y = a->outputs[0];
    Value* out = y;
    std::array<int64_t, 5> yv = five(0, contiguous_strides(yd));
    std::vector<int64_t> y_shape = yd;
    const auto& readers = cons[y];
    if (!y->is_graph_output && readers.size() == 1 && readers[0]->op_type == "Transpose" && readers[0]->domain.empty()) {
      Node* t = readers[0];
      std::vector<int64_t> td;
      auto perm = t->attrs.get_ints("perm", {});
      if (perm && perm->size() == r && static_dims_of(t->output(0), &td)) {
        const auto ts = contiguous_strides(td);
        std::vector<int64_t> ystrides(r, 0);
        for (size_t pos = 0; pos < r; ++pos) ystrides[static_cast<size_t>((*perm)[pos])] = ts[pos];
        if (ystrides[r - 1] == 1) {
          yv = five(0, ystrides);
          y_shape = td;
          out = t->outputs[0];
          absorbed.insert(t);
        }
      }
    }
    if (out == y && q.value == a->inputs[0] && kt.value == a->inputs[1] && v.value == a->inputs[2]) continue;
    a->attrs.set("dims", std::vector<int64_t>{outer, inner, S, D, S2, Dv});
    a->attrs.set("q_view", std::vector<int64_t>(q.view.begin(), q.view.end()));
    a->attrs.set("kt_view", std::vector<int64_t>(kt.view.begin(), kt.view.end()));
    a->attrs.set("v_view", std::vector<int64_t>(v.view.begin(), v.view.end()));
    a->attrs.set("y_view", std::vector<int64_t>(yv.begin(), yv.end()));
    a->attrs.set("y_shape", y_shape);
    a->inputs = {q.value, kt.value, v.value};
    a->outputs = {out};
    out->producer = a;
    ++folded;
  }
  if (!folded) return 0;
  graph.remove_nodes_if([&](const Node* x) { return absorbed.count(x) > 0; });
  eliminate_dead_nodes(graph);  // strided copies nothing reads any more
  GRAFT_RETURN_IF_ERROR(graph.topological_sort());
  return folded;
}

// ---- unit_axis_transposes_to_reshapes ------------------------------------------------------------

Result<int> unit_axis_transposes_to_reshapes(Graph& graph) {
  int changed = 0;
  for (const auto& up : graph.nodes()) {
    Node* n = up.get();
    if (n->op_type != "Transpose" || !n->domain.empty() || n->inputs.size() != 1 || !n->input(0) || n->outputs.size() != 1 ||
        !n->outputs[0])
      continue;
    std::vector<int64_t> in, out;
    if (!static_dims_of(n->input(0), &in) || !static_dims_of(n->outputs[0], &out) || copies(*n, in)) continue;
    // Only unit axes move: the same bytes in the same order, i.e. a Reshape (an alias in the engine).
    Value* shape = graph.new_constant(n->outputs[0]->name + "_shape", Tensor::vector_int64(out));
    n->op_type = "Reshape";
    n->attrs = AttributeMap();
    n->inputs.push_back(shape);
    if (n->opset < 5) n->opset = default_domain_opset(graph);
    ++changed;
  }
  return changed;
}

// ---- merge_reshape_chains --------------------------------------------------------------------------

Result<int> merge_reshape_chains(Graph& graph) {
  auto cons = graph.consumers();
  int merged = 0;
  for (const auto& up : graph.nodes()) {
    Node* n = up.get();
    if (n->op_type != "Reshape" || !n->domain.empty() || !n->input(0) || n->outputs.size() != 1 || !n->outputs[0]) continue;
    Node* p = n->inputs[0]->producer;
    if (!p || p->op_type != "Reshape" || !p->domain.empty() || !p->input(0) || n->inputs[0]->is_graph_output ||
        cons[n->inputs[0]].size() != 1)
      continue;
    std::vector<int64_t> out;
    if (!static_dims_of(n->outputs[0], &out)) continue;
    // The target as explicit dimensions: a 0 or -1 in the old shape input meant "from the input",
    // which is now a different tensor.
    Value* shape = graph.new_constant(n->outputs[0]->name + "_merged_shape", Tensor::vector_int64(out));
    n->inputs = {p->inputs[0], shape};
    n->attrs = AttributeMap();
    ++merged;
  }
  if (!merged) return 0;
  eliminate_dead_nodes(graph);  // the inner Reshapes
  GRAFT_RETURN_IF_ERROR(graph.topological_sort());
  return merged;
}

}  // namespace graft
