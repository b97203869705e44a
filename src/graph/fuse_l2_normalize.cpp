// F.normalize(x, dim=-1) as the exporters write it, Div(x, Expand(Clip(ReduceL2(x, axes [-1],
// keepdims 1), eps), Shape(x))) (or without the Expand), becomes one GraftL2Normalize(x; eps)
// (src/ops/reduce_norm). swin_v2_t normalizes q and k this way in each of its 12 attention blocks:
// four layers each, and in a float16 engine two Casts more, since ReduceL2 keeps float32; the
// fused op sums the squares in float32 whatever its input type.
#include <cmath>
#include <set>
#include <vector>

#include "graph/pass_util.h"
#include "graph/passes.h"
#include "ops/internal_ops.h"

namespace graft {

namespace {

// The eps of a Clip whose min is a scalar constant >= 0 and whose max is absent, or -1.
double clip_min(const Node& clip) {
  if (clip.inputs.size() < 2 || clip.inputs.size() > 3 || (clip.inputs.size() == 3 && clip.inputs[2])) return -1;
  const Value* m = clip.inputs[1];
  if (!m || !m->constant || m->constant->numel() != 1) return -1;
  const double eps = m->constant->get(0);
  return std::isfinite(eps) && eps >= 0 ? eps : -1;
}

// Whether `r` is ReduceL2 of x over its last axis only, keeping it.
bool l2_over_last_axis(const Node& r, const Value* x) {
  if (!is_onnx(r, "ReduceL2") || r.inputs.empty() || r.inputs[0] != x || !x->desc.shape || x->desc.shape->empty())
    return false;
  auto keep = r.attrs.get_int("keepdims", 1);
  if (!keep || *keep != 1) return false;
  std::vector<int64_t> axes;
  if (r.inputs.size() > 1 && r.inputs[1]) {  // opset 18: axes as an input
    if (!r.inputs[1]->constant) return false;
    axes = r.inputs[1]->constant->to_int64_vector();
  } else {
    auto a = r.attrs.get_ints("axes", {});
    if (!a) return false;
    axes = *a;
  }
  const int64_t rank = static_cast<int64_t>(x->desc.shape->size());
  return axes.size() == 1 && (axes[0] == -1 || axes[0] == rank - 1);
}

}  // namespace

Result<int> fuse_l2_normalize(Graph& g) {
  Consumers cons = g.consumers();
  std::set<const Node*> dead;
  int fused = 0;
  std::vector<Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  for (Node* div : nodes) {
    if (!is_onnx(*div, "Div") || div->inputs.size() != 2 || div->outputs.size() != 1 || !div->outputs[0]) continue;
    Value* x = div->inputs[0];
    Value* d = div->inputs[1];
    const Value* y = div->outputs[0];
    if (!x || !d || !x->desc.shape || !y->desc.shape || !shapes_same(*x->desc.shape, *y->desc.shape) ||
        !is_float_io(x->desc.dtype) || y->desc.dtype != x->desc.dtype)
      continue;
    std::vector<Node*> parts;
    Node* e = d->producer;
    if (e && is_onnx(*e, "Expand") && only_reader(cons, d) == div && !e->inputs.empty()) {
      parts.push_back(e);
      // The Expand's target shape, Shape(x) as the exporters write it, goes with it when nothing
      // else reads it.
      if (e->inputs.size() > 1 && e->inputs[1]) {
        Node* s = e->inputs[1]->producer;
        if (s && is_onnx(*s, "Shape") && only_reader(cons, e->inputs[1]) == e) parts.push_back(s);
      }
      d = e->inputs[0];
    }
    Node* clip = d ? d->producer : nullptr;
    if (!clip || !is_onnx(*clip, "Clip") || only_reader(cons, d) != (parts.empty() ? div : parts.front())) continue;
    const double eps = clip_min(*clip);
    Value* norm = clip->inputs[0];
    Node* r = norm ? norm->producer : nullptr;
    if (eps < 0 || !r || !l2_over_last_axis(*r, x) || only_reader(cons, norm) != clip) continue;
    parts.push_back(clip);
    parts.push_back(r);
    bool clash = false;
    for (const Node* p : parts) clash |= is_removed(dead, p) || p->outputs.size() != 1;
    if (clash || is_removed(dead, div)) continue;
    div->op_type = "GraftL2Normalize";
    div->domain = kInternalDomain;
    div->inputs = {x};
    div->attrs = AttributeMap();
    div->attrs.set("eps", static_cast<float>(eps));
    for (Node* p : parts) {
      inherit_precision(div, {p});
      dead.insert(p);
    }
    ++fused;
  }
  if (!fused) return 0;
  GRAFT_RETURN_IF_ERROR(remove_replaced_nodes(g, dead));
  return fused;
}

}  // namespace graft
