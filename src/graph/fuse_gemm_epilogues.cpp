// The CUDA builder's "fuse gemm" pass: GEMM epilogues and attention (ops: src/ops/transformer/transformer.h).
//
// fuse_gemm_epilogues runs before the float16 pass, on the model's float32 graph:
//   MatMul(X, W const 2-D) | Gemm(A, B const, C const row? , transA = 0)
//     [-> Add(bias const [N] or [1,..,N])]            (only when the GEMM has no bias yet)
//     [-> Relu | Gelu(approximate = none) | erf-GELU subgraph]
//     [-> Add(R) with R a tensor of the output's shape]   (only without activation)
//   becomes one GraftGemm. A Gemm between Reshapes that fold/unfold the leading dimensions of an
//   N-D input (aten.linear through aten.addmm) is matched with the Reshapes.
//   Inference Dropouts (identities) between these nodes are absorbed.
//   The same pass also fuses attention: MatMul(Q, Kt) -> [scalar scales] -> Softmax(last axis)
//   -> MatMul(., V), the scales found on the scores, on Q, on Kt or on K before its Transpose,
//   becomes GraftAttention(Q, Kt, V, scale) (counted in the returned number). Every intermediate value must have exactly one consumer (the next node
//   of the pattern) and must not be a graph output, so no value the rest of the graph reads is
//   lost. The erf-GELU subgraph is recognised in the forms the exporters emit:
//     TorchScript (torch.onnx symbolic_opset9.gelu):  Mul(Mul(x, Add(Erf(Div(x, sqrt2)), 1)), 0.5)
//     torchlib / HF style:                             Mul(Mul(x, 0.5), Add(Erf(Mul(x, 1/sqrt2)), 1))
//   (each binary node with its operands in either order). The dynamo exporter at opset 20 emits
//   ONNX Gelu, which is matched as a node.
//
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>

#include "core/index_math.h"
#include "graph/pass_util.h"
#include "graph/passes.h"
#include "ops/transformer/transformer.h"
#include "ops/internal_ops.h"
#include "ops/operator.h"

namespace graft {

namespace {

// A one-element constant of a floating dtype (a scalar the exporter wrote as a tensor).
bool scalar_const(const Value* v, double* out = nullptr) {
  if (!v || !v->constant || v->constant->numel() != 1 || !dtype_is_float(v->constant->dtype())) return false;
  if (out) *out = v->constant->get(0);
  return true;
}

// Loose enough for constants stored in float16 (1.4142 is 1.41406 there), tight enough that no
// other constant passes for sqrt(2), 1/sqrt(2), 0.5 or 1.
bool near(double a, double b) { return std::fabs(a - b) <= 1e-3 * std::fabs(b); }

// An inference-mode Dropout (training_mode absent or constant false, mask unread): an identity
// that the fused nodes absorb (graft's CUDA backend has no Dropout kernel, so a Dropout left in
// a chain would also cost a CPU round trip).
bool inference_dropout(const Consumers& cons, const Node* n) {
  if (n->op_type != "Dropout" || n->inputs.empty() || !n->inputs[0] || n->outputs.empty() || !n->outputs[0]) return false;
  if (n->inputs.size() > 2 && n->inputs[2]) {
    const Value* t = n->inputs[2];
    if (!t->constant || t->constant->numel() != 1 || t->constant->get(0) != 0.0) return false;
  }
  for (size_t i = 1; i < n->outputs.size(); ++i) {
    const Value* m = n->outputs[i];
    if (m && (m->is_graph_output || cons.count(m))) return false;
  }
  return n->outputs[0]->desc.dtype == n->inputs[0]->desc.dtype;
}

// Follows `v` through inference Dropouts that are its only reader; appends them to *parts.
Value* skip_dropouts(const Consumers& cons, Value* v, std::vector<Node*>* parts) {
  while (Node* d = only_reader(cons, v)) {
    if (!inference_dropout(cons, d) || d->inputs[0] != v) break;
    parts->push_back(d);
    v = d->outputs[0];
  }
  return v;
}

struct Gelu {
  Value* out = nullptr;
  std::vector<Node*> nodes;
};

// The exact (erf) GELU of `x`, as one Gelu node or as the exporters' subgraphs, reading x only
// through its own nodes.
std::optional<Gelu> match_gelu(const Consumers& cons, Value* x) {
  if (!x || x->is_graph_output) return std::nullopt;
  if (Node* g = consumer_of_type(cons, x, "Gelu")) {
    auto approx = g->attrs.get_string("approximate", "none");
    if (approx && approx.value() == "none" && g->inputs.size() == 1) return Gelu{g->outputs[0], {g}};
    return std::nullopt;
  }
  auto it = cons.find(x);
  if (it == cons.end() || it->second.size() != 2) return std::nullopt;
  const std::vector<Node*>& readers = it->second;
  const double kSqrt2 = 1.41421356237309504880;
  for (Node* n1 : readers) {
    double c = 0;
    Value* o = n1->outputs.size() == 1 ? other_operand(n1, x) : nullptr;
    const bool scale = (n1->op_type == "Div" && n1->inputs[0] == x && scalar_const(o, &c) && near(c, kSqrt2)) ||
                       (n1->op_type == "Mul" && scalar_const(o, &c) && near(c, 1.0 / kSqrt2));
    if (!scale) continue;
    Node* n2 = consumer_of_type(cons, n1->outputs[0], "Erf");
    if (!n2) continue;
    Node* n3 = consumer_of_type(cons, n2->outputs[0], "Add");
    if (!n3 || !scalar_const(other_operand(n3, n2->outputs[0]), &c) || !near(c, 1.0)) continue;
    Node* n4 = consumer_of_type(cons, n3->outputs[0], "Mul");
    if (!n4) continue;
    Value* o4 = other_operand(n4, n3->outputs[0]);
    if (!o4) continue;
    Gelu g;
    Node* x_reader = nullptr;  // the pattern's second reader of x
    if (o4 == x) {  // Mul(Mul(x, erf1), 0.5)
      Node* n5 = consumer_of_type(cons, n4->outputs[0], "Mul");
      if (!n5 || !scalar_const(other_operand(n5, n4->outputs[0]), &c) || !near(c, 0.5)) continue;
      g = Gelu{n5->outputs[0], {n1, n2, n3, n4, n5}};
      x_reader = n4;
    } else if (scalar_const(o4, &c) && near(c, 0.5)) {  // Mul(x, Mul(erf1, 0.5))
      Node* n5 = consumer_of_type(cons, n4->outputs[0], "Mul");
      if (!n5 || other_operand(n5, n4->outputs[0]) != x) continue;
      g = Gelu{n5->outputs[0], {n1, n2, n3, n4, n5}};
      x_reader = n5;
    } else if (Node* h = o4->producer; h && h->op_type == "Mul" && only_reader(cons, o4) == n4 &&
                                        scalar_const(other_operand(h, x), &c) && near(c, 0.5)) {  // Mul(Mul(x, 0.5), erf1)
      g = Gelu{n4->outputs[0], {n1, n2, n3, h, n4}};
      x_reader = h;
    } else {
      continue;
    }
    const Node* other = readers[0] == n1 ? readers[1] : readers[0];
    if (other != x_reader) continue;
    return g;
  }
  return std::nullopt;
}

// A node that scales one tensor by a scalar constant without changing its shape: Mul(t, c),
// Mul(c, t) or Div(t, c). Returns t and sets *factor (1/c for Div); else nullptr.
Value* scaled_input(const Node* n, double* factor) {
  if (n->outputs.size() != 1 || !n->outputs[0] || n->inputs.size() != 2) return nullptr;
  double c = 0;
  Value* t = nullptr;
  if (n->op_type == "Mul") {
    if (scalar_const(n->inputs[1], &c) && !scalar_const(n->inputs[0])) t = n->inputs[0];
    else if (scalar_const(n->inputs[0], &c) && !scalar_const(n->inputs[1])) t = n->inputs[1];
  } else if (n->op_type == "Div" && scalar_const(n->inputs[1], &c) && c != 0.0 && !scalar_const(n->inputs[0])) {
    t = n->inputs[0];
    c = 1.0 / c;
  }
  const Value* y = n->outputs[0];
  if (!t || !t->desc.shape || !y->desc.shape || !shapes_same(*t->desc.shape, *y->desc.shape) ||
      t->desc.dtype != y->desc.dtype)
    return nullptr;
  *factor = c;
  return t;
}

// Walks back from `v` (read by `reader`) through scalar scaling nodes that only feed the next one;
// multiplies their factors into *scale, appends them to *parts and returns the unscaled tensor.
Value* strip_scales(const Consumers& cons, Value* v, Node* reader, const std::set<const Node*>& dead, double* scale,
                    std::vector<Node*>* parts) {
  double c = 1;
  while (v->producer && !dead.count(v->producer) && only_reader(cons, v) == reader) {
    Value* t = scaled_input(v->producer, &c);
    if (!t) break;
    *scale *= c;
    parts->push_back(v->producer);
    reader = v->producer;
    v = t;
  }
  return v;
}

// An additive constant on the scores and the shape of the scores where it is added.
struct BiasTerm {
  const Tensor* c;
  Shape view;
};

// Walks back from `v` (read by `reader`) through Adds of a constant that do not broadcast the
// scores up and Reshapes that only regroup the leading dimensions (the last two stay): Swin's
// relative position bias, and its shifted-window mask added through a view [B, windows, heads, S,
// S2] of the [B * windows, heads, S, S2] scores. Appends the terms and the nodes; returns the
// tensor before them.
Value* strip_bias_terms(const Consumers& cons, Value* v, Node* reader, const std::set<const Node*>& dead,
                        std::vector<BiasTerm>* terms, std::vector<Node*>* parts) {
  auto last_two_same = [](const Shape& a, const Shape& b) {
    return a.size() >= 2 && b.size() >= 2 && a[a.size() - 1].same_as(b[b.size() - 1]) &&
           a[a.size() - 2].same_as(b[b.size() - 2]);
  };
  while (v->producer && !dead.count(v->producer) && only_reader(cons, v) == reader && v->desc.shape) {
    Node* p = v->producer;
    Value* next = nullptr;
    if (p->op_type == "Add" && p->domain.empty() && p->inputs.size() == 2 && p->outputs.size() == 1) {
      const int ci = p->inputs[1] && p->inputs[1]->constant ? 1 : (p->inputs[0] && p->inputs[0]->constant ? 0 : -1);
      if (ci < 0) break;
      Value* t = p->inputs[static_cast<size_t>(1 - ci)];
      if (!t || t->constant || !t->desc.shape || !shapes_same(*t->desc.shape, *v->desc.shape) ||
          t->desc.dtype != v->desc.dtype || !dtype_is_float(p->inputs[static_cast<size_t>(ci)]->constant->dtype()))
        break;
      terms->push_back({&*p->inputs[static_cast<size_t>(ci)]->constant, *v->desc.shape});
      next = t;
    } else if (p->op_type == "Reshape" && p->domain.empty() && !p->inputs.empty() && p->inputs[0] &&
               p->inputs[0]->desc.shape && last_two_same(*p->inputs[0]->desc.shape, *v->desc.shape)) {
      next = p->inputs[0];
    } else {
      break;
    }
    parts->push_back(p);
    reader = p;
    v = next;
  }
  return v;
}

int64_t gcd64(int64_t a, int64_t b) { return b == 0 ? a : gcd64(b, a % b); }

// The terms' sum, times `mult`, as one [P, S, S2] constant that batch entry b of the scores reads as
// bias[b % P]. A term varies only along a suffix of its view's leading dimensions (the ones before
// it are 1 in the constant), so it repeats every P_i = the product of that suffix's extents, and the
// sum every P = lcm(P_i), which divides the batch because every P_i does. nullopt when a term's
// suffix or the last two extents are not static, or the constant would exceed 16M elements.
std::optional<Tensor> periodic_bias(const std::vector<BiasTerm>& terms, double mult, DataType dt) {
  constexpr int64_t kMaxBiasElements = int64_t{1} << 24;
  struct Term {
    const Tensor* c;
    std::vector<int64_t> cdims;  // the constant's dims left-padded with 1 to the view's rank
    std::vector<int64_t> vary;   // the view's leading extents from the first the constant varies along
    size_t first = 0;            // that axis
    int64_t period = 1;
  };
  const Shape& v0 = terms.front().view;
  const size_t r0 = v0.size();
  if (!v0[r0 - 1].is_const() || !v0[r0 - 2].is_const()) return std::nullopt;
  const int64_t S = v0[r0 - 2].value(), S2 = v0[r0 - 1].value();
  std::vector<Term> ts;
  int64_t P = 1;
  for (const BiasTerm& bt : terms) {
    const size_t r = bt.view.size();
    const std::vector<int64_t>& cd = bt.c->dims();
    if (cd.size() > r || r < 2) return std::nullopt;
    Term t{bt.c, std::vector<int64_t>(r - cd.size(), 1), {}, r - 2, 1};
    t.cdims.insert(t.cdims.end(), cd.begin(), cd.end());
    if ((t.cdims[r - 2] != 1 && t.cdims[r - 2] != S) || (t.cdims[r - 1] != 1 && t.cdims[r - 1] != S2)) return std::nullopt;
    for (size_t a = 0; a + 2 < r; ++a)
      if (t.cdims[a] != 1) {
        t.first = a;
        break;
      }
    for (size_t a = t.first; a + 2 < r; ++a) {
      if (!bt.view[a].is_const() || (t.cdims[a] != 1 && t.cdims[a] != bt.view[a].value())) return std::nullopt;
      t.vary.push_back(bt.view[a].value());
      t.period *= bt.view[a].value();
    }
    if (t.period < 1 || t.period > kMaxBiasElements) return std::nullopt;
    P = P / gcd64(P, t.period) * t.period;
    if (P * S * S2 > kMaxBiasElements) return std::nullopt;
    ts.push_back(std::move(t));
  }
  Tensor out = Tensor::empty(dt, {P, S, S2});
  std::vector<int64_t> idx;
  for (int64_t p = 0; p < P; ++p)
    for (int64_t i = 0; i < S; ++i)
      for (int64_t j = 0; j < S2; ++j) {
        double sum = 0;
        for (const Term& t : ts) {
          unravel(p % t.period, t.vary, idx);
          int64_t off = 0;
          const size_t r = t.cdims.size();
          for (size_t a = 0; a < r; ++a) {
            int64_t k = 0;
            if (a >= t.first && a + 2 < r) k = t.cdims[a] == 1 ? 0 : idx[a - t.first];
            else if (a + 2 == r) k = t.cdims[a] == 1 ? 0 : i;
            else if (a + 1 == r) k = t.cdims[a] == 1 ? 0 : j;
            off = off * t.cdims[a] + k;
          }
          sum += t.c->get(off);
        }
        out.set((p * S + i) * S2 + j, mult * sum);
      }
  return out;
}

// A scale of the scores that differs per head but not per position, Mul(t, c) or Mul(c, t) with c a
// float constant whose last two axes are 1 and whose broadcast leaves t's shape as it is: Swin V2's
// learned logit scale, [heads, 1, 1], on its cosine attention. Returns t and sets *c; else nullptr.
// (Q @ Kt) * c equals (Q * c) @ Kt for such a c, so the fusion moves it onto Q.
Value* head_scaled_input(const Node* n, Value** c) {
  if (!is_onnx(*n, "Mul") || n->outputs.size() != 1 || !n->outputs[0] || n->inputs.size() != 2) return nullptr;
  for (int k = 0; k < 2; ++k) {
    Value* cv = n->inputs[k];
    Value* t = n->inputs[1 - k];
    if (!cv || !t || !cv->constant || cv->constant->rank() < 2 || !is_float_io(cv->desc.dtype)) continue;
    const std::vector<int64_t>& d = cv->constant->dims();
    if (d[d.size() - 1] != 1 || d[d.size() - 2] != 1) continue;
    const Value* y = n->outputs[0];
    if (!t->desc.shape || !y->desc.shape || !shapes_same(*t->desc.shape, *y->desc.shape) ||
        t->desc.shape->size() < d.size() || t->desc.dtype != y->desc.dtype || cv->desc.dtype != t->desc.dtype)
      continue;
    *c = cv;
    return t;
  }
  return nullptr;
}

bool same_leading_dims(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i + 2 < a.size(); ++i)
    if (!a[i].same_as(b[i])) return false;
  return true;
}

// MatMul(Q, Kt) [-> a per-head scale (head_scaled_input)] [-> scalar scales] [-> Adds of constants
// and batch-regrouping Reshapes (strip_bias_terms)] [-> scalar scales] -> Softmax(last axis) ->
// MatMul(., V), with scalar scales on Q, on Kt, or on K before a Transpose (the exporters put sdpa's
// scale in each of these places), becomes GraftAttention(Q, Kt, V[, bias]) with the product of the
// scales and the constants summed into one periodic bias; a per-head scale becomes a Mul of Q.
// Returns the number fused.
int fuse_attention(Graph& graph, NodeNamer& namer, std::set<const Node*>& dead) {
  // Consumers as the graph now stands (fused GEMM nodes included, their dead chains still present:
  // a dead reader only makes the checks below more conservative).
  Consumers cons = graph.consumers();
  std::vector<Node*> nodes;
  for (const auto& n : graph.nodes()) nodes.push_back(n.get());
  int fused = 0;
  for (Node* sm : nodes) {
    if (dead.count(sm) || sm->op_type != "Softmax" || sm->inputs.size() != 1 || sm->outputs.size() != 1) continue;
    Value* s = sm->inputs[0];
    if (!s || !s->desc.shape || s->desc.shape->size() < 2) continue;
    const int64_t rank = static_cast<int64_t>(s->desc.shape->size());
    auto axis = sm->attrs.get_int("axis", sm->opset > 0 && sm->opset < 13 ? 1 : -1);
    if (!axis || (axis.value() < 0 ? axis.value() + rank : axis.value()) != rank - 1) continue;
    double scale = 1.0;
    std::vector<Node*> parts{sm};
    Value* scores = strip_scales(cons, s, sm, dead, &scale, &parts);
    // Additive constants before those scales (scaled by them too), then the scores' own scales.
    const double bias_scale = scale;
    std::vector<BiasTerm> terms;
    scores = strip_bias_terms(cons, scores, parts.back(), dead, &terms, &parts);
    if (!terms.empty()) scores = strip_scales(cons, scores, parts.back(), dead, &scale, &parts);
    Node* mm1_reader = parts.back();
    Value* head_scale = nullptr;  // a per-head scale of the scores, moved onto Q below
    if (Node* m = scores->producer; m && !dead.count(m) && only_reader(cons, scores) == mm1_reader) {
      if (Value* t = head_scaled_input(m, &head_scale)) {
        parts.push_back(m);
        mm1_reader = m;
        scores = t;
      }
    }
    Node* mm1 = scores->producer;
    if (!mm1 || dead.count(mm1) || mm1->op_type != "MatMul" || mm1->inputs.size() != 2 ||
        only_reader(cons, scores) != mm1_reader)
      continue;
    parts.push_back(mm1);
    Value* q = strip_scales(cons, mm1->inputs[0], mm1, dead, &scale, &parts);
    const size_t before_kt = parts.size();
    Value* kt = strip_scales(cons, mm1->inputs[1], mm1, dead, &scale, &parts);
    Node* kt_reader = parts.size() == before_kt ? mm1 : parts.back();
    // Kt = Transpose(scaled K): the scale moves into GraftAttention and the Transpose reads K,
    // which is only sound when nothing else reads the Transpose's output.
    Node* transpose = nullptr;
    Value* k_unscaled = nullptr;
    if (Node* t = kt->producer; t && !dead.count(t) && t->op_type == "Transpose" && t->inputs.size() == 1 &&
                                t->inputs[0] && only_reader(cons, kt) == kt_reader) {
      std::vector<Node*> kparts;
      double kscale = 1.0;
      Value* k = strip_scales(cons, t->inputs[0], t, dead, &kscale, &kparts);
      if (!kparts.empty()) {
        transpose = t;
        k_unscaled = k;
        scale *= kscale;
        parts.insert(parts.end(), kparts.begin(), kparts.end());
      }
    }
    Value* p = skip_dropouts(cons, sm->outputs[0], &parts);  // sdpa's Dropout(p = 0)
    Node* mm2 = only_reader(cons, p);
    if (!mm2 || dead.count(mm2) || mm2->op_type != "MatMul" || mm2->inputs.size() != 2 || mm2->inputs[0] != p ||
        mm2->inputs[1] == p || !mm2->outputs[0])
      continue;
    Value* v = mm2->inputs[1];
    bool ok = q->desc.shape && kt->desc.shape && v->desc.shape && is_float_io(q->desc.dtype) &&
              kt->desc.dtype == q->desc.dtype && v->desc.dtype == q->desc.dtype &&
              mm2->outputs[0]->desc.dtype == q->desc.dtype && q->desc.shape->size() >= 2 &&
              same_leading_dims(*q->desc.shape, *kt->desc.shape) && same_leading_dims(*q->desc.shape, *v->desc.shape);
    // The per-head scale broadcasts over the scores' leading dims, which are Q's.
    if (head_scale) ok = ok && scores->desc.shape && same_leading_dims(*q->desc.shape, *scores->desc.shape);
    for (const Node* x : parts) ok = ok && !dead.count(x);
    if (!ok) continue;
    std::optional<Tensor> bias;
    if (!terms.empty()) {
      // The scores the bias is added to have Q's leading dims: its period must divide their count.
      bias = periodic_bias(terms, bias_scale, q->desc.dtype);
      if (!bias) continue;
    }
    parts.push_back(mm2);
    if (head_scale) {
      Node* qm = graph.add_node(namer(sm->name + "_q_head_scale"), "Mul");
      qm->opset = mm1->opset;
      Value* qs = graph.new_value(q->name + "_head_scaled");
      qs->desc = q->desc;
      qs->producer = qm;
      qm->inputs = {q, head_scale};
      qm->outputs = {qs};
      for (const Node* x : parts) inherit_precision(qm, {x});
      q = qs;
    }
    Node* at = graph.add_node(namer(sm->name + "_attention"), "GraftAttention", kInternalDomain);
    at->opset = sm->opset;
    at->attrs.set("scale", static_cast<float>(scale));
    at->inputs = {q, kt, v};
    if (bias) at->inputs.push_back(graph.new_constant(sm->name + "_attention_bias", *bias));
    at->outputs = {mm2->outputs[0]};
    mm2->outputs[0]->producer = at;
    if (transpose) transpose->inputs[0] = k_unscaled;
    for (Node* x : parts) {
      inherit_precision(at, {x});
      dead.insert(x);
    }
    ++fused;
  }
  return fused;
}

}  // namespace

// ---- GEMM epilogues -----------------------------------------------------------------------------

Result<int> fuse_gemm_epilogues(Graph& graph) {
  Consumers cons = graph.consumers();
  NodeNamer namer(graph);
  std::set<const Node*> dead;
  std::vector<Node*> nodes;
  for (const auto& n : graph.nodes()) nodes.push_back(n.get());
  int fused = 0;
  for (Node* n : nodes) {
    if (is_removed(dead, n) || !is_onnx(*n)) continue;
    if (n->op_type != "MatMul" && n->op_type != "Gemm") continue;
    if (n->outputs.size() != 1 || !n->outputs[0] || n->inputs.size() < 2) continue;
    Value* X = n->inputs[0];
    Value* W = n->inputs[1];
    Value* y = n->outputs[0];
    if (!X || !W || !W->constant || W->constant->rank() != 2) continue;
    if (!X->desc.shape || X->desc.shape->empty() || !is_float_io(X->desc.dtype) || W->desc.dtype != X->desc.dtype) continue;
    if (!y->desc.shape || y->desc.dtype != X->desc.dtype) continue;
    bool trans_b = false;
    float alpha = 1.f;
    Value* bias = nullptr;            // an existing bias value to reuse as is
    std::optional<Tensor> new_bias;   // or a new constant (Gemm's C scaled by beta)
    const int64_t K = X->desc.shape->back().is_const() ? X->desc.shape->back().value() : -1;
    int64_t N = 0;
    if (n->op_type == "Gemm") {
      auto ta = n->attrs.get_int("transA", 0);
      auto tb = n->attrs.get_int("transB", 0);
      auto al = n->attrs.get_float("alpha", 1.f);
      auto be = n->attrs.get_float("beta", 1.f);
      if (!ta || !tb || !al || !be || ta.value() != 0 || X->desc.shape->size() != 2) continue;
      trans_b = tb.value() != 0;
      alpha = al.value();
      N = W->constant->dims()[trans_b ? 0 : 1];
      if (n->inputs.size() > 2 && n->inputs[2] && be.value() != 0.f) {
        Value* C = n->inputs[2];
        if (!C->constant || C->constant->numel() != N || C->desc.dtype != X->desc.dtype) continue;
        if (C->constant->rank() == 2 && C->constant->dims()[0] != 1) continue;  // [M, N] or [M, 1]
        if (C->constant->rank() > 2) continue;
        if (be.value() == 1.f) {
          bias = C;
        } else {
          Tensor t = Tensor::empty(C->constant->dtype(), {N});
          for (int64_t j = 0; j < N; ++j) t.set(j, static_cast<double>(be.value()) * C->constant->get(j));
          new_bias = t;
        }
      }
    } else {
      N = W->constant->dims()[1];
    }
    if (K >= 0 && W->constant->dims()[trans_b ? 1 : 0] != K) continue;
    const bool had_bias = bias || new_bias;
    std::vector<Node*> chain{n};
    Value* out = y;
    // A 2-D Gemm between Reshapes that fold and unfold the leading dimensions (what F.linear on an
    // N-D input becomes through aten.addmm): X0[..., K] -> [M, K] -> Gemm -> [M, N] -> [..., N].
    // GraftGemm reads X0 directly and writes the unfolded shape, so both copies disappear.
    Value* X0 = X;
    bool unfolded = false;
    if (Node* post = consumer_of_type(cons, y, "Reshape"); post && X->producer && X->producer->op_type == "Reshape" &&
                                                          X->desc.shape->size() == 2) {
      Value* xin = X->producer->inputs.empty() ? nullptr : X->producer->inputs[0];
      const Value* z = post->outputs[0];
      if (xin && xin->desc.shape && xin->desc.shape->size() >= 2 && xin->desc.dtype == X->desc.dtype && z->desc.shape &&
          xin->desc.shape->back().same_as((*X->desc.shape)[1])) {
        Shape want(xin->desc.shape->begin(), xin->desc.shape->end() - 1);
        want.push_back(Dim(N));
        if (shapes_same(*z->desc.shape, want)) {
          X0 = xin;
          unfolded = true;
          chain.push_back(post);
          out = post->outputs[0];
          if (only_reader(cons, X) == n) chain.push_back(X->producer);  // the fold has no other reader
        }
      }
    }
    const size_t before_dropouts = chain.size();
    out = skip_dropouts(cons, out, &chain);
    // Bias Add: the other operand is a constant of N elements broadcast along the last axis only,
    // with a rank that does not grow the output.
    bool added_bias = false;
    if (!had_bias) {
      if (Node* add = consumer_of_type(cons, out, "Add")) {
        Value* b = other_operand(add, out);
        const Tensor* bt = b && b->constant ? &*b->constant : nullptr;
        bool ok = bt && b->desc.dtype == X->desc.dtype && bt->numel() == N && bt->rank() >= 1 &&
                  bt->rank() <= static_cast<int64_t>(out->desc.shape->size()) && bt->dims().back() == N;
        if (ok) {
          bias = b;
          added_bias = true;
          chain.push_back(add);
          out = add->outputs[0];
        }
      }
    }
    out = skip_dropouts(cons, out, &chain);
    std::string activation;
    if (Node* r = consumer_of_type(cons, out, "Relu")) {
      activation = "Relu";
      chain.push_back(r);
      out = r->outputs[0];
    } else if (auto g = match_gelu(cons, out)) {
      activation = "Gelu";
      chain.insert(chain.end(), g->nodes.begin(), g->nodes.end());
      out = g->out;
    }
    // Residual Add after a GEMM without activation (a transformer block's "x + Linear(h)"):
    // cuBLASLt reads it as the C matrix (beta = 1), so D = alpha X.W + R + bias in one pass. After
    // an activation the sum would be act(...) + R, which the epilogue cannot express.
    out = skip_dropouts(cons, out, &chain);
    Value* residual = nullptr;
    if (activation.empty()) {
      if (Node* add = consumer_of_type(cons, out, "Add")) {
        Value* r = other_operand(add, out);
        if (r && !r->constant && r->desc.dtype == X->desc.dtype && r->desc.shape && out->desc.shape &&
            shapes_same(*r->desc.shape, *out->desc.shape) && add->outputs[0]->desc.shape &&
            shapes_same(*add->outputs[0]->desc.shape, *out->desc.shape)) {
          residual = r;
          chain.push_back(add);
          out = add->outputs[0];
        }
      }
    }
    // The same residual Add behind a Reshape of the GEMM's output (vit's out_proj at batch 1:
    // Gemm [S, E] -> Reshape [S, 1, E] -> Add(x)): R is read through a Reshape to the GEMM's shape
    // (an alias in the engine) and the Reshape moves behind the fused GEMM. Static shapes only.
    Node* reshape_after = nullptr;
    Node* add_after = nullptr;
    std::vector<int64_t> out_dims;
    if (activation.empty() && !residual && static_dims_of(out, &out_dims)) {
      Node* p = consumer_of_type(cons, out, "Reshape");
      Value* z = p ? p->outputs[0] : nullptr;
      Node* add = z ? consumer_of_type(cons, z, "Add") : nullptr;
      Value* r = add ? other_operand(add, z) : nullptr;
      if (r && !r->constant && r->desc.dtype == X->desc.dtype && r->desc.shape && z->desc.shape &&
          shapes_same(*r->desc.shape, *z->desc.shape) && add->outputs[0]->desc.shape &&
          shapes_same(*add->outputs[0]->desc.shape, *z->desc.shape) && !is_removed(dead, p) && !is_removed(dead, add)) {
        reshape_after = p;
        add_after = add;
      }
    }
    if (reshape_after) {
      Value* shape = graph.new_constant(n->name + "_residual_shape", Tensor::vector_int64(out_dims));
      Value* r = other_operand(add_after, reshape_after->outputs[0]);
      Value* r2 = graph.new_value(r->name + "_as_gemm_output");
      r2->desc = out->desc;
      Node* rr = graph.add_node(namer(n->name + "_residual_reshape"), "Reshape");
      rr->opset = reshape_after->opset;
      rr->inputs = {r, shape};
      rr->outputs = {r2};
      r2->producer = rr;
      residual = r2;
      // The Reshape now produces the Add's result from the fused GEMM's output.
      reshape_after->outputs = {add_after->outputs[0]};
      add_after->outputs[0]->producer = reshape_after;
      chain.push_back(add_after);
    }
    out = skip_dropouts(cons, out, &chain);
    bool dropped = false;  // inference Dropouts absorbed
    for (size_t i = before_dropouts; i < chain.size(); ++i) dropped |= chain[i]->op_type == "Dropout";
    if (!added_bias && activation.empty() && !residual && !unfolded && !dropped) continue;  // nothing to gain
    bool clash = false;
    for (Node* c : chain) clash |= is_removed(dead, c);
    if (clash) continue;

    Node* gg = graph.add_node(namer(n->name + "_epilogue"), "GraftGemm", kInternalDomain);
    gg->opset = n->opset;
    gg->attrs.set("transB", static_cast<int64_t>(trans_b));
    gg->attrs.set("alpha", alpha);
    gg->attrs.set("activation", activation);
    if (new_bias) bias = graph.new_constant(n->name + "_bias", *new_bias);
    gg->inputs = {X0, W};
    if (bias || residual) gg->inputs.push_back(bias);  // nullptr: omitted optional input
    if (residual) gg->inputs.push_back(residual);
    gg->outputs = {out};
    out->producer = gg;
    for (Node* c : chain) {
      inherit_precision(gg, {c});
      dead.insert(c);
    }
    ++fused;
  }
  fused += fuse_attention(graph, namer, dead);
  if (fused == 0) return 0;
  GRAFT_RETURN_IF_ERROR(remove_replaced_nodes(graph, dead));
  return fused;
}

}  // namespace graft
