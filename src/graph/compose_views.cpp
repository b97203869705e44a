// compose_view_chains: a chain of pure data-movement nodes becomes one strided copy.
//
// Exporters spell a tensor's rearrangement as several nodes: the dynamo export of
// nn.MultiheadAttention goes from the packed q/k/v projection to one head-major operand through
// Reshape -> Unsqueeze -> Transpose -> Squeeze -> Gather(select) -> Reshape -> Transpose -> Reshape
// -> Transpose, each Transpose and Gather a full copy (vit_b_16: 8 such copies per encoder block).
// Every one of those nodes only re-indexes memory, so the whole chain is one strided view of the
// tensor it starts from: Transpose permutes (dims, strides), a Gather of one constant index moves
// the offset and drops (or keeps as 1) the axis, and a Reshape-like node (Reshape, Flatten,
// Squeeze, Unsqueeze, Identity) re-splits the axes where the strides allow it (the composition is
// in src/ops/views/views.cpp). Where a chain's end value is read by a node that is not itself a view,
// the chain becomes one node reading the value it starts from:
//   - GraftStridedCopy, the view itself, when every shape in the chain is static;
//   - GraftViewChain, the chain's steps, when a dimension is known only at run time (a dynamic
//     batch): each run plans the steps for the input's dims, as one strided copy wherever a static
//     chain would be one.
// Shape and Size only read dims, so a value they read does not end a chain: the nodes that make it
// stay for them (a CUDA engine computes only their dims, src/backends/cuda/cuda_engine.cpp).
//
// A chain whose steps cannot be written without its concrete dims (a Reshape to two new dynamic
// dims), a static chain that no strides can express, and a chain with fewer than two copying nodes
// (one copy is already as cheap as it gets) is left alone. Nodes the rewrite leaves unread are
// removed.
#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/pass_util.h"
#include "graph/passes.h"
#include "ops/transformer/transformer.h"
#include "ops/views/views.h"
#include "ops/internal_ops.h"

namespace graft {

namespace {

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
  if (!is_onnx(n) || n.outputs.size() != 1 || !n.outputs[0] || !n.input(0)) return false;
  if (n.outputs[0]->desc.dtype != n.input(0)->desc.dtype) return false;
  if (is_reshape_view(n) || n.op_type == "Transpose") return true;
  int64_t i = 0;
  bool keep = false;
  return n.op_type == "Gather" && gather_single_index(n, &i, &keep);
}

// The view node as a step over an input of shape `in` giving `out` (both of known rank, symbolic
// dims allowed); false when the step cannot be written without concrete dims.
bool node_step(const Node& n, const Shape& in, const Shape& out, ViewStep* s) {
  const int64_t r = static_cast<int64_t>(in.size());
  s->args.clear();
  if (n.op_type == "Transpose") {
    const auto perm = transpose_perm(n, static_cast<size_t>(r));
    if (!perm) return false;
    s->kind = ViewStepKind::kPermute;
    s->args = *perm;
    return true;
  }
  if (n.op_type == "Gather") {
    int64_t index = 0;
    bool keep = false;
    auto axis = n.attrs.get_int("axis", 0);
    if (!gather_single_index(n, &index, &keep) || !axis || *axis < -r || *axis >= r) return false;
    s->kind = ViewStepKind::kSelect;
    s->args = {*axis < 0 ? *axis + r : *axis, index, keep ? 1 : 0};
    return true;
  }
  // Reshape-like: the output's dims, each a constant, a copy of the input's dim at that position,
  // or (one of them) inferred from the element count.
  s->kind = ViewStepKind::kReshape;
  bool inferred = false;
  for (size_t k = 0; k < out.size(); ++k) {
    if (out[k].is_const() && out[k].value() > 0) {
      s->args.push_back(out[k].value());
    } else if (k < in.size() && !out[k].is_const() && out[k].same_as(in[k])) {
      s->args.push_back(0);
    } else if (!inferred && !out[k].is_const()) {
      s->args.push_back(-1);
      inferred = true;
    } else {
      return false;  // an empty dim (0 would mean "copy"), or two dims to infer
    }
  }
  return true;
}

// Does the node move data (a kernel) rather than alias its input? Reshape-like nodes alias.
bool copies(const Node& n, const std::vector<int64_t>& in_dims) {
  if (n.op_type == "Gather") return true;
  if (n.op_type != "Transpose") return false;
  auto perm = n.attrs.get_ints("perm", {});
  if (!perm || perm->empty()) return true;
  ViewStep s{ViewStepKind::kPermute, *perm};
  return view_step_copies(s, shape_from_values(in_dims));
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
    for (const Node* c : cons[out]) terminal = terminal || (!is_view_node(*c) && !reads_dims_only(*c));
    if (!terminal) continue;
    // Walk back to the first value not made by a view node; collect the chain origin-first.
    std::vector<const Node*> chain{n};
    Value* origin = n->inputs[0];
    while (origin->producer && is_view_node(*origin->producer) && !replaced.count(origin->producer)) {
      chain.push_back(origin->producer);
      origin = origin->producer->inputs[0];
    }
    if (origin->constant || !origin->desc.shape || !out->desc.shape) continue;  // constants: folding's job
    std::reverse(chain.begin(), chain.end());
    // The chain as steps, checked against every node's own output shape.
    std::vector<ViewStep> steps;
    Shape cur = *origin->desc.shape;
    int copying = 0;
    bool ok = true;
    for (const Node* c : chain) {
      const Value* o = c->outputs[0];
      ViewStep s;
      ok = o->desc.shape && node_step(*c, cur, *o->desc.shape, &s);
      if (!ok) break;
      copying += view_step_copies(s, cur) ? 1 : 0;
      auto next = view_steps_shape(cur, {s});
      ok = next.is_ok() && shapes_same(next.value(), *o->desc.shape);
      if (!ok) break;
      cur = std::move(next).value();
      steps.push_back(std::move(s));
    }
    if (!ok || copying < 2) continue;
    Node* s = nullptr;
    if (shape_is_static(*origin->desc.shape)) {
      // Static: the chain must be one strided view, written out.
      auto plan = plan_view_steps(shape_values(*origin->desc.shape), steps);
      if (!plan.is_ok() || plan.value().size() != 1) continue;
      const StridedView& v = plan.value()[0];
      s = graph.add_node(namer(n->name + "_view"), "GraftStridedCopy", kInternalDomain);
      s->attrs.set("shape", v.shape);
      s->attrs.set("strides", v.strides);
      s->attrs.set("offset", v.offset);
    } else {
      s = graph.add_node(namer(n->name + "_view"), "GraftViewChain", kInternalDomain);
      write_view_steps(steps, &s->attrs);
    }
    s->opset = n->opset;
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
  if (is_internal(p, "GraftStridedCopy")) {
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

// Over a dynamic batch: operands made by GraftViewChain are read through its steps (planned per
// run by the op, which copies an operand only where its plan is no single view the fused kernel
// takes), and Y is written straight into the output of a Transpose that is its only reader and
// keeps the last axis last. The head sizes must be static, in the fused kernel's range.
bool fold_chains_into_attention(Node& a, const std::map<const Value*, std::vector<Node*>>& cons,
                                std::set<const Node*>* absorbed) {
  const DataType dt = a.input(0)->desc.dtype;
  const TensorDesc &q = a.input(0)->desc, &kt = a.input(1)->desc, &v = a.input(2)->desc;
  if ((dt != DataType::kFloat16 && dt != DataType::kBFloat16) || !q.shape || !kt.shape || !v.shape) return false;
  const size_t r = q.shape->size();
  if ((r != 3 && r != 4) || kt.shape->size() != r || v.shape->size() != r) return false;
  const Dim &D = q.shape->back(), &Dv = v.shape->back();
  if (!D.is_const() || !Dv.is_const() || D.value() % 8 || Dv.value() % 8 || D.value() > 128 || Dv.value() > 128 ||
      D.value() < 8 || Dv.value() < 8)
    return false;
  AttentionChains chains;
  std::vector<Value*> inputs = a.inputs;
  for (int k = 0; k < 3; ++k) {
    const Node* p = a.inputs[static_cast<size_t>(k)]->producer;
    if (!is_internal(p, "GraftViewChain") || !p->input(0) || !p->input(0)->desc.shape) continue;
    auto steps = read_view_steps(p->attrs);
    if (!steps) continue;
    chains.steps[k] = std::move(steps).value();
    inputs[static_cast<size_t>(k)] = p->inputs[0];
  }
  Value* out = a.outputs[0];
  auto it = cons.find(out);
  if (!out->is_graph_output && it != cons.end() && it->second.size() == 1 && it->second[0]->op_type == "Transpose" &&
      it->second[0]->domain.empty() && it->second[0]->output(0)) {
    Node* t = it->second[0];
    auto perm = t->attrs.get_ints("perm", {});
    if (perm && perm->size() == r && perm->back() == static_cast<int64_t>(r) - 1) {
      chains.y_perm = *perm;
      out = t->outputs[0];
      absorbed->insert(t);
    }
  }
  if (!chains.steps[0] && !chains.steps[1] && !chains.steps[2] && chains.y_perm.empty()) return false;
  write_attention_chains(chains, &a.attrs);
  a.inputs = std::move(inputs);
  a.outputs = {out};
  out->producer = &a;
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
    // A fourth input is the periodic bias [P, S, S2], read as it is whatever the operands' views.
    if (!is_internal(a, "GraftAttention") || a->attrs.has("dims") || a->inputs.size() < 3 || a->inputs.size() > 4)
      continue;
    bool chained = false;
    AttentionChains existing;
    if (!read_attention_chains(a->attrs, &chained, &existing).is_ok() || chained) continue;
    if (!a->input(0) || !a->input(1) || !a->input(2) || !a->output(0)) continue;
    std::vector<int64_t> qd, kd, vd, yd;
    if (!static_dims_of(a->input(0), &qd) || !static_dims_of(a->input(1), &kd) || !static_dims_of(a->input(2), &vd) ||
        !static_dims_of(a->output(0), &yd)) {
      if (fold_chains_into_attention(*a, cons, &absorbed)) ++folded;
      continue;
    }
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
    Value* bias = a->inputs.size() == 4 ? a->inputs[3] : nullptr;
    a->inputs = {q.value, kt.value, v.value};
    if (bias) a->inputs.push_back(bias);
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
