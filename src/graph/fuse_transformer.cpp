// Transformer fusions: GEMM epilogues and elementwise chains (ops: src/ops/fused_transformer_ops.h).
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
// fuse_elementwise_chains runs last (after float16 and layout passes): connected groups of
// elementwise nodes whose non-scalar operands all have the output's shape, linked through values
// with a single consumer, become one GraftElementwise executing a small program per element.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>

#include "core/index_math.h"
#include "graph/passes.h"
#include "ops/fused_transformer_ops.h"
#include "ops/operator.h"
#include "ops/internal_ops.h"

namespace graft {

namespace {

using Consumers = std::map<const Value*, std::vector<Node*>>;

bool float_io(DataType t) { return t == DataType::kFloat32 || t == DataType::kFloat16; }

// A one-element constant of a floating dtype (a scalar the exporter wrote as a tensor).
bool scalar_const(const Value* v, double* out = nullptr) {
  if (!v || !v->constant || v->constant->numel() != 1 || !dtype_is_float(v->constant->dtype())) return false;
  if (out) *out = v->constant->get(0);
  return true;
}

// Loose enough for constants stored in float16 (1.4142 is 1.41406 there), tight enough that no
// other constant passes for sqrt(2), 1/sqrt(2), 0.5 or 1.
bool near(double a, double b) { return std::fabs(a - b) <= 1e-3 * std::fabs(b); }

// The node that reads `v` (possibly more than once), when it is the only reader and `v` is not a
// graph output; else nullptr.
Node* only_consumer(const Consumers& cons, const Value* v) {
  if (!v || v->is_graph_output) return nullptr;
  auto it = cons.find(v);
  if (it == cons.end() || it->second.empty()) return nullptr;
  Node* n = it->second.front();
  for (Node* c : it->second)
    if (c != n) return nullptr;
  return n;
}

// For a two-input node reading `v`, the other operand (nullptr unless exactly one side is `v`).
Value* other_operand(const Node* n, const Value* v) {
  if (n->inputs.size() != 2 || n->outputs.size() != 1) return nullptr;
  if (n->inputs[0] == v && n->inputs[1] != v) return n->inputs[1];
  if (n->inputs[1] == v && n->inputs[0] != v) return n->inputs[0];
  return nullptr;
}

Node* consumer_of_type(const Consumers& cons, const Value* v, const char* op) {
  Node* n = only_consumer(cons, v);
  return n && n->op_type == op && n->outputs.size() == 1 && n->outputs[0] ? n : nullptr;
}

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
  while (Node* d = only_consumer(cons, v)) {
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
    } else if (Node* h = o4->producer; h && h->op_type == "Mul" && only_consumer(cons, o4) == n4 &&
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

bool is_removed(const std::set<const Node*>& dead, const Node* n) { return dead.count(n) != 0; }

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
  while (v->producer && !dead.count(v->producer) && only_consumer(cons, v) == reader) {
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
  while (v->producer && !dead.count(v->producer) && only_consumer(cons, v) == reader && v->desc.shape) {
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

bool same_leading_dims(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i + 2 < a.size(); ++i)
    if (!a[i].same_as(b[i])) return false;
  return true;
}

// MatMul(Q, Kt) [-> scalar scales] [-> Adds of constants and batch-regrouping Reshapes
// (strip_bias_terms)] [-> scalar scales] -> Softmax(last axis) -> MatMul(., V), with scalar scales
// on Q, on Kt, or on K before a Transpose (the exporters put sdpa's scale in each of these places),
// becomes GraftAttention(Q, Kt, V[, bias]) with the product of the scales and the constants summed
// into one periodic bias. Returns the number fused.
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
    Node* mm1 = scores->producer;
    Node* mm1_reader = parts.back();
    if (!mm1 || dead.count(mm1) || mm1->op_type != "MatMul" || mm1->inputs.size() != 2 ||
        only_consumer(cons, scores) != mm1_reader)
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
                                t->inputs[0] && only_consumer(cons, kt) == kt_reader) {
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
    Node* mm2 = only_consumer(cons, p);
    if (!mm2 || dead.count(mm2) || mm2->op_type != "MatMul" || mm2->inputs.size() != 2 || mm2->inputs[0] != p ||
        mm2->inputs[1] == p || !mm2->outputs[0])
      continue;
    Value* v = mm2->inputs[1];
    bool ok = q->desc.shape && kt->desc.shape && v->desc.shape && float_io(q->desc.dtype) &&
              kt->desc.dtype == q->desc.dtype && v->desc.dtype == q->desc.dtype &&
              mm2->outputs[0]->desc.dtype == q->desc.dtype && q->desc.shape->size() >= 2 &&
              same_leading_dims(*q->desc.shape, *kt->desc.shape) && same_leading_dims(*q->desc.shape, *v->desc.shape);
    for (const Node* x : parts) ok = ok && !dead.count(x);
    if (!ok) continue;
    std::optional<Tensor> bias;
    if (!terms.empty()) {
      // The scores the bias is added to have Q's leading dims: its period must divide their count.
      bias = periodic_bias(terms, bias_scale, q->desc.dtype);
      if (!bias) continue;
    }
    parts.push_back(mm2);
    Node* at = graph.add_node(namer(sm->name + "_attention"), "GraftAttention", kInternalDomain);
    at->opset = sm->opset;
    at->attrs.set("scale", static_cast<float>(scale));
    at->inputs = {q, kt, v};
    if (bias) at->inputs.push_back(graph.new_constant(sm->name + "_attention_bias", *bias));
    at->outputs = {mm2->outputs[0]};
    mm2->outputs[0]->producer = at;
    if (transpose) transpose->inputs[0] = k_unscaled;
    for (Node* x : parts) dead.insert(x);
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
    if (!X->desc.shape || X->desc.shape->empty() || !float_io(X->desc.dtype) || W->desc.dtype != X->desc.dtype) continue;
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
          if (only_consumer(cons, X) == n) chain.push_back(X->producer);  // the fold has no other reader
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
    for (Node* c : chain) dead.insert(c);
    ++fused;
  }
  fused += fuse_attention(graph, namer, dead);
  if (fused == 0) return 0;
  graph.remove_nodes_if([&](const Node* n) { return dead.count(n) != 0; });
  GRAFT_RETURN_IF_ERROR(graph.topological_sort());
  graph.prune_values();
  return fused;
}

// ---- per-channel scales and residuals behind a GraftGemm (after the layout pass) -----------------

Result<int> fold_gemm_scales_and_residuals(Graph& graph) {
  const Consumers cons = graph.consumers();
  std::set<const Node*> dead;
  int folded = 0;
  std::vector<Node*> order;
  for (auto& n : graph.nodes()) order.push_back(n.get());
  for (Node* n : order) {
    if (!is_internal(n, "GraftGemm") || n->outputs.size() != 1 || !n->outputs[0]) continue;
    auto act = n->attrs.get_string("activation", "");
    auto tb = n->attrs.get_int("transB", 0);
    if (!act || !act->empty() || !tb) continue;  // a scale after an activation does not move into W
    if (n->inputs.size() > 3 && n->inputs[3]) continue;  // it already has a residual
    Value* W = n->input(1);
    Value* B = n->input(2);
    Value* y = n->outputs[0];
    if (!W || !W->constant || W->constant->rank() != 2 || (B && !B->constant) || !y->desc.shape) continue;
    const bool trans_b = *tb != 0;
    const int64_t N = W->constant->dims()[trans_b ? 0 : 1];
    // Mul by a constant of N elements along the last axis (ConvNeXt's layer scale once the layout
    // pass has moved the block's permute away): the scale moves into W's columns and the bias.
    Node* mul = consumer_of_type(cons, y, "Mul");
    Value* scale = mul ? other_operand(mul, y) : nullptr;
    if (!scale || !scale->constant || scale->constant->numel() != N || scale->constant->rank() < 1 ||
        scale->constant->dims().back() != N || scale->constant->rank() > static_cast<int64_t>(y->desc.shape->size()) ||
        scale->desc.dtype != y->desc.dtype || mul->outputs[0]->desc.dtype != y->desc.dtype || is_removed(dead, mul))
      mul = nullptr;
    Value* after = mul ? mul->outputs[0] : y;
    // Then a residual Add of a tensor of the output's shape: cuBLASLt's C matrix.
    Node* add = after->desc.shape ? consumer_of_type(cons, after, "Add") : nullptr;
    Value* r = add ? other_operand(add, after) : nullptr;
    if (!r || r->constant || r->desc.dtype != y->desc.dtype || !r->desc.shape ||
        !shapes_same(*r->desc.shape, *after->desc.shape) || !add->outputs[0]->desc.shape ||
        !shapes_same(*add->outputs[0]->desc.shape, *after->desc.shape) || is_removed(dead, add))
      add = nullptr;
    if (!mul && !add) continue;
    if (mul) {
      const Tensor& w = *W->constant;
      Tensor ws = Tensor::empty(w.dtype(), w.dims());
      const int64_t rows = w.dims()[0], cols = w.dims()[1];
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          ws.set(i * cols + j, w.get(i * cols + j) * scale->constant->get(trans_b ? i : j));
      n->inputs[1] = graph.new_constant(W->name + "_scaled", ws);
      if (B) {
        Tensor bs = Tensor::empty(B->constant->dtype(), {N});
        for (int64_t j = 0; j < N; ++j) bs.set(j, B->constant->get(B->constant->numel() == N ? j : 0) * scale->constant->get(j));
        n->inputs[2] = graph.new_constant(B->name + "_scaled", bs);
      }
      dead.insert(mul);
    }
    Value* out = after;
    if (add) {
      n->inputs.resize(4, nullptr);
      n->inputs[3] = r;
      out = add->outputs[0];
      dead.insert(add);
    }
    n->outputs[0] = out;
    out->producer = n;
    ++folded;
  }
  if (folded == 0) return 0;
  graph.remove_nodes_if([&](const Node* n) { return dead.count(n) != 0; });
  GRAFT_RETURN_IF_ERROR(graph.topological_sort());
  graph.prune_values();
  return folded;
}

// ---- elementwise chains -------------------------------------------------------------------------

namespace {

// How one node becomes instructions: which inputs are full-shape tensors, which must be scalar
// constants (immediates), and the opcode.
struct EwNodeInfo {
  EwOp op = EwOp::kCopy;
  // Operand sources in input order; an extra immediate (alpha/beta, clip bounds) follows.
  std::vector<int> tensor_inputs;   // indices of inputs that may be tensors (or scalars)
  std::vector<float> extra_imm;     // immediates appended as further operands
};

// Whether operand `i` of a chain node becomes an immediate (the same test as ew_info's).
bool is_scalar_operand(const Node& n, int i) {
  const Value* v = n.inputs[static_cast<size_t>(i)];
  return v->constant && v->constant->numel() == 1 &&
         (dtype_is_float(v->constant->dtype()) || (n.op_type == "Pow" && i == 1));
}

// nullopt when the node cannot join a chain.
std::optional<EwNodeInfo> ew_info(const Node& n) {
  if (!is_onnx(n) || n.outputs.size() != 1 || !n.outputs[0]) return std::nullopt;
  const Value* y = n.outputs[0];
  if (!float_io(y->desc.dtype) || !y->desc.shape) return std::nullopt;
  EwNodeInfo info;
  const std::string& t = n.op_type;
  // Ops that are one instruction whatever their attributes say so in their definition
  // (OpEntry::elementwise_opcode); the ones below depend on attributes.
  const OpEntry* def = find_onnx_op(t);
  if (def && def->elementwise_opcode) {
    const int arity = ew_arity(*def->elementwise_opcode);  // 1 or 2: no op names a three-operand one
    if (n.inputs.size() != static_cast<size_t>(arity)) return std::nullopt;
    info.op = *def->elementwise_opcode;
    info.tensor_inputs = arity == 1 ? std::vector<int>{0} : std::vector<int>{0, 1};
    // Pow: only a constant exponent (a tensor exponent would need its own dtype rules).
    if (t == "Pow") {
      const Value* e = n.inputs[1];
      if (!e || !e->constant || e->constant->numel() != 1) return std::nullopt;
    }
  } else if (t == "HardSigmoid") {
    if (n.inputs.size() != 1) return std::nullopt;
    auto a = n.attrs.get_float("alpha", 0.2f);
    auto b = n.attrs.get_float("beta", 0.5f);
    if (!a || !b) return std::nullopt;
    info.op = EwOp::kHardSigmoid;
    info.tensor_inputs = {0};
    info.extra_imm = {a.value(), b.value()};
  } else if (t == "Gelu") {
    auto approx = n.attrs.get_string("approximate", "none");
    if (!approx || n.inputs.size() != 1) return std::nullopt;
    if (approx.value() == "none") info.op = EwOp::kGeluErf;
    else if (approx.value() == "tanh") info.op = EwOp::kGeluTanh;
    else return std::nullopt;
    info.tensor_inputs = {0};
  } else if (t == "Clip") {
    float lo = 0, hi = 0;
    if (n.inputs.empty() || n.inputs.size() > 3 || !clip_bounds(n, &lo, &hi)) return std::nullopt;
    info.op = EwOp::kClip;
    info.tensor_inputs = {0};
    info.extra_imm = {lo, hi};
  } else if (t == "Cast") {
    if (n.inputs.size() != 1 || !n.inputs[0] || !float_io(n.inputs[0]->desc.dtype)) return std::nullopt;
    const bool narrowing = n.inputs[0]->desc.dtype == DataType::kFloat32 && y->desc.dtype == DataType::kFloat16;
    info.op = narrowing ? EwOp::kRoundHalf : EwOp::kCopy;
    info.tensor_inputs = {0};
  } else {
    return std::nullopt;
  }
  // Every operand: a scalar constant (immediate; Pow's exponent may be integer), or a float
  // tensor of exactly the output's shape. At least one must be a tensor.
  bool any_tensor = false;
  for (int i : info.tensor_inputs) {
    const Value* v = n.inputs[static_cast<size_t>(i)];
    if (!v) return std::nullopt;
    if (is_scalar_operand(n, i)) {
      // A scalar of higher rank than the output would broadcast the output up: not a chain node.
      if (v->constant->rank() > static_cast<int64_t>(y->desc.shape->size())) return std::nullopt;
      continue;
    }
    if (!float_io(v->desc.dtype) || !v->desc.shape || !shapes_same(*v->desc.shape, *y->desc.shape)) return std::nullopt;
    any_tensor = true;
  }
  if (!any_tensor) return std::nullopt;
  return info;
}

}  // namespace

Result<int> fuse_elementwise_chains(Graph& graph, const std::function<bool(const Node&)>& supported) {
  Consumers cons = graph.consumers();
  std::vector<Node*> order;
  for (const auto& n : graph.nodes()) order.push_back(n.get());
  std::map<const Node*, EwNodeInfo> infos;
  for (Node* n : order) {
    auto info = ew_info(*n);
    if (info && (!supported || supported(*n))) infos.emplace(n, *info);
  }
  // Union-find over chain edges: producer -> its only consumer, both chain nodes. Each node has at
  // most one outgoing edge, so every group is an in-tree with one sink (its output).
  std::map<const Node*, const Node*> parent;
  std::function<const Node*(const Node*)> root = [&](const Node* x) {
    const Node* p = parent.count(x) ? parent[x] : x;
    if (p == x) return x;
    const Node* r = root(p);
    parent[x] = r;
    return r;
  };
  for (Node* n : order) {
    if (!infos.count(n)) continue;
    for (int i : infos[n].tensor_inputs) {
      Value* v = n->inputs[static_cast<size_t>(i)];
      Node* p = v->producer;
      if (!p || !infos.count(p) || only_consumer(cons, v) != n) continue;
      const Node* a = root(p);
      const Node* b = root(n);
      if (a != b) parent[a] = b;
    }
  }
  std::map<const Node*, std::vector<Node*>> groups;  // root -> members in graph order
  for (Node* n : order)
    if (infos.count(n)) groups[root(n)].push_back(n);

  NodeNamer namer(graph);
  std::set<const Node*> dead;
  int fused = 0;
  for (auto& [r, members] : groups) {
    (void)r;
    if (members.size() < 2) continue;
    std::set<const Node*> in_group(members.begin(), members.end());
    // The sink: the member whose output no member reads.
    Node* sink = nullptr;
    for (Node* m : members) {
      Node* c = only_consumer(cons, m->outputs[0]);
      if (!c || !in_group.count(c)) sink = m;
    }
    if (!sink) continue;
    std::vector<Value*> inputs;
    std::map<const Value*, int64_t> reg;
    std::vector<int64_t> code;
    std::vector<float> imm;
    // External tensor inputs first (registers 0..k-1), in order of first use.
    for (Node* m : members)
      for (int i : infos[m].tensor_inputs) {
        Value* v = m->inputs[static_cast<size_t>(i)];
        if (is_scalar_operand(*m, i) || (v->producer && in_group.count(v->producer)) || reg.count(v)) continue;
        reg[v] = static_cast<int64_t>(inputs.size());
        inputs.push_back(v);
      }
    if (inputs.empty() || inputs.size() > static_cast<size_t>(kEwMaxInputs) ||
        members.size() > static_cast<size_t>(kEwMaxInstr))
      continue;
    bool ok = true;
    auto immediate = [&](float f) -> int64_t {
      imm.push_back(f);
      return -static_cast<int64_t>(imm.size());
    };
    for (Node* m : members) {
      const EwNodeInfo& info = infos[m];
      int64_t f[kEwFields] = {static_cast<int64_t>(info.op), static_cast<int64_t>(inputs.size()) + static_cast<int64_t>(code.size()) / kEwFields, 0, 0, 0};
      int k = 2;
      for (int i : info.tensor_inputs) {
        const Value* v = m->inputs[static_cast<size_t>(i)];
        f[k++] = is_scalar_operand(*m, i) ? immediate(static_cast<float>(v->constant->get(0))) : reg.at(v);
      }
      for (float e : info.extra_imm) f[k++] = immediate(e);
      code.insert(code.end(), f, f + kEwFields);
      reg[m->outputs[0]] = f[1];
    }
    if (imm.size() > static_cast<size_t>(kEwMaxImm)) ok = false;
    if (!ok) continue;
    Value* out = sink->outputs[0];
    Node* ew = graph.add_node(namer(sink->name + "_chain"), "GraftElementwise", kInternalDomain);
    ew->opset = sink->opset;
    ew->attrs.set("program", code);
    ew->attrs.set("immediates", imm);
    ew->attrs.set("output_register", reg.at(out));
    ew->attrs.set("to", static_cast<int64_t>(out->desc.dtype));
    ew->inputs = inputs;
    ew->outputs = {out};
    out->producer = ew;
    for (Node* m : members) dead.insert(m);
    ++fused;
  }
  if (fused == 0) return 0;
  graph.remove_nodes_if([&](const Node* n) { return dead.count(n) != 0; });
  GRAFT_RETURN_IF_ERROR(graph.topological_sort());
  graph.prune_values();
  return fused;
}

}  // namespace graft
