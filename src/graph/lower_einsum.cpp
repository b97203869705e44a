// lower_einsum_matmuls: an Einsum of two operands that is a batched matrix product becomes MatMul,
// with a Transpose of the last two axes where an operand or the output has them the other way
// round. MaxViT's attention writes its scores and its weighted sum this way
// ("BGHID,BGHJD->BGHIJ", "BGHIJ,BGHJD->BGHID"); the Einsum kernel, written for any equation, walks
// every output element's sum on its own, and took 45 of maxvit_t's 60 ms at batch 32 on an H200
// (5a5c2b9). As MatMul the products run on cuBLASLt, and the pattern is the one the exporters emit
// for q @ k^T, which the GEMM and attention fusions after this pass know.
//
// Lowered: every label of each operand appears once in it; the labels in both operands and the
// output (the batch) lead all three in one order; each operand then ends with two labels: one
// summed (in both operands, not the output) and one of its own that the output keeps; the output
// ends with those two. Ellipsis positions count as batch labels. Anything else stays an Einsum.
#include <algorithm>
#include <string>
#include <vector>

#include "graph/pass_util.h"
#include "graph/passes.h"
#include "ops/misc/misc.h"

namespace graft {

namespace {

// The lowering of one node: whether the two trailing labels of A, B and the output are swapped
// relative to MatMul's [.., m, k] x [.., k, n] -> [.., m, n].
struct MatMulForm {
  bool transpose_a = false, transpose_b = false, transpose_out = false;
};

bool has(const std::vector<int>& v, int label) { return std::find(v.begin(), v.end(), label) != v.end(); }

bool all_distinct(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  return std::adjacent_find(v.begin(), v.end()) == v.end();
}

bool matmul_form(const Node& n, MatMulForm* f) {
  if (!is_onnx(n, "Einsum") || n.inputs.size() != 2 || n.outputs.size() != 1 || !n.outputs[0]) return false;
  const Value* a = n.input(0);
  const Value* b = n.input(1);
  if (!a || !b || !a->desc.shape || !b->desc.shape || a->desc.dtype != b->desc.dtype ||
      !is_float_io(a->desc.dtype))
    return false;
  auto eq = n.attrs.get_string("equation", "");
  if (!eq.is_ok()) return false;
  auto spec = parse_einsum(*eq, {a->desc.rank(), b->desc.rank()});
  if (!spec.is_ok()) return false;
  const std::vector<int>& la = spec->in_labels[0];
  const std::vector<int>& lb = spec->in_labels[1];
  const std::vector<int>& lo = spec->out_labels;
  if (la.size() < 2 || la.size() != lb.size() || la.size() != lo.size()) return false;
  if (!all_distinct(la) || !all_distinct(lb) || !all_distinct(lo)) return false;
  const size_t batch = la.size() - 2;
  for (size_t i = 0; i < batch; ++i)
    if (la[i] != lb[i] || la[i] != lo[i]) return false;
  // The trailing two of A: its own (m, kept) and the summed one (k, in B, not in the output).
  auto split = [&](const std::vector<int>& l, const std::vector<int>& other, int* own, int* summed, bool* own_last) {
    const int x = l[batch], y = l[batch + 1];
    auto is_summed = [&](int v) { return has(other, v) && !has(lo, v); };
    auto is_own = [&](int v) { return !has(other, v) && has(lo, v); };
    if (is_own(x) && is_summed(y)) { *own = x; *summed = y; *own_last = false; return true; }
    if (is_summed(x) && is_own(y)) { *own = y; *summed = x; *own_last = true; return true; }
    return false;
  };
  int m = 0, ka = 0, nn = 0, kb = 0;
  bool m_last = false, n_last = false;
  if (!split(la, lb, &m, &ka, &m_last) || !split(lb, la, &nn, &kb, &n_last) || ka != kb) return false;
  f->transpose_a = m_last;    // A is [.., k, m]
  f->transpose_b = !n_last;   // B is [.., n, k]
  if (lo[batch] == m && lo[batch + 1] == nn) f->transpose_out = false;
  else if (lo[batch] == nn && lo[batch + 1] == m) f->transpose_out = true;
  else return false;
  return true;
}

std::vector<int64_t> swap_last_two(size_t rank) {
  std::vector<int64_t> perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(i);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return perm;
}

}  // namespace

Result<int> lower_einsum_matmuls(Graph& g) {
  NodeNamer unique_name(g);
  const int opset = default_domain_opset(g);
  std::vector<Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  int lowered = 0;
  for (Node* n : nodes) {
    MatMulForm f;
    if (!matmul_form(*n, &f)) continue;
    const size_t rank = static_cast<size_t>(n->input(0)->desc.rank());
    // A Transpose of the last two axes from `in` to `out`.
    auto swap_axes = [&](Value* in, Value* out, const std::string& what) {
      Node* t = g.add_node(unique_name(n->name + "_" + what + "_t"), "Transpose");
      t->opset = opset;
      t->attrs.set("perm", swap_last_two(rank));
      t->inputs = {in};
      t->outputs = {out};
      out->producer = t;
      t->precision = n->precision;
    };
    auto transposed = [&](Value* v, const std::string& what) {
      Value* out = g.new_value(v->name + "_t");
      swap_axes(v, out, what);
      return out;
    };
    Value* a = f.transpose_a ? transposed(n->inputs[0], "a") : n->inputs[0];
    Value* b = f.transpose_b ? transposed(n->inputs[1], "b") : n->inputs[1];
    n->op_type = "MatMul";
    n->attrs = AttributeMap();
    n->inputs = {a, b};
    if (f.transpose_out) {
      // MatMul writes [.., m, n] into a new value; a Transpose makes the Einsum's [.., n, m] output.
      Value* y = n->outputs[0];
      Value* mm = g.new_value(y->name + "_mn");
      n->outputs[0] = mm;
      mm->producer = n;
      swap_axes(mm, y, "out");
    }
    ++lowered;
  }
  if (!lowered) return 0;
  GRAFT_RETURN_IF_ERROR(g.topological_sort());
  return lowered;
}

}  // namespace graft
