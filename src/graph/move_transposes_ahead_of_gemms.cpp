// move_transposes_ahead_of_gemms: Gemm([M, K]) -> Reshape([d..., N]) -> Transpose(p) becomes
// Transpose -> Reshape([p(d)..., K]) -> Reshape([M, K]) -> Gemm -> Reshape([p(d)..., N]) when p keeps
// the last axis.
//
// The mirror of move_transposes_behind_gemms: a GEMM maps row to row, so a permutation of the rows'
// leading axes may run before it as well as after. nn.MultiheadAttention with batch_first, as the
// dynamo export writes it, ends in out_proj over [S*B, E] rows, a Reshape to [S, B, E] and a Transpose
// back to [B, S, E], then the block's residual Add. Over a dynamic batch that Transpose is a copy
// (at batch 1 of a fixed-shape engine it only moves a unit axis and becomes a Reshape), and it keeps
// the residual Add out of the GEMM's epilogue. Ahead of the GEMM it meets the attention's own output
// permute ([B, H, S, hd] -> [S, B, H, hd], folded into [S*B, E]): the two compose into one Transpose
// to [B, S, H, hd], which fold_views_into_attention lets the attention write through. The GEMM's
// output then feeds the Add directly, which fuse_gemm_epilogues takes as its C matrix, reading the
// [B, S, E] rows as its N-D input: vit_b_16 loses a Transpose and an Add per encoder block. Where A
// is not such a fold, the Transpose reads A split into the rows' axes.
//
// Ahead of the GEMM the Transpose moves K-wide rows instead of N-wide ones, so it moves only when
// K <= N or when the residual Add it unlocks is its only reader. The new Reshapes' targets are
// constants, so at most one dimension of each may be symbolic (written -1).
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graph/pass_util.h"
#include "graph/passes.h"

namespace graft {

namespace {

// A Reshape target for `dims`: the static entries as they are and the one symbolic entry as -1;
// nullopt with more than one symbolic entry.
std::optional<std::vector<int64_t>> reshape_target(const Shape& dims) {
  std::vector<int64_t> out;
  bool symbolic = false;
  for (const Dim& d : dims) {
    if (d.is_const()) {
      out.push_back(d.value());
    } else {
      if (symbolic) return std::nullopt;
      symbolic = true;
      out.push_back(-1);
    }
  }
  return out;
}

// Gemm(A, B constant 2-D, C constant bias or absent) without transA, or MatMul(A, B constant 2-D),
// with a 2-D A: a GEMM whose rows are independent of each other. Sets N from B.
bool row_wise_gemm(const Node& n, int64_t* N) {
  if (!is_onnx(n) || (n.op_type != "Gemm" && n.op_type != "MatMul") || n.outputs.size() != 1 || !n.outputs[0])
    return false;
  const Value* a = n.input(0);
  const Value* b = n.input(1);
  if (!a || !a->desc.shape || a->desc.shape->size() != 2 || !(*a->desc.shape)[1].is_const()) return false;
  if (!b || !b->constant || b->constant->rank() != 2) return false;
  bool trans_b = false;
  if (n.op_type == "Gemm") {
    auto ta = n.attrs.get_int("transA", 0);
    auto tb = n.attrs.get_int("transB", 0);
    if (!ta || *ta != 0 || !tb) return false;
    trans_b = *tb != 0;
    // A C of M rows would depend on the row order; a bias of N (or 1 x N) does not.
    if (const Value* c = n.input(2); c && (!c->constant || c->constant->rank() > 2 ||
                                           (c->constant->rank() == 2 && c->constant->dims()[0] != 1)))
      return false;
  }
  *N = b->constant->dims()[trans_b ? 0 : 1];
  return true;
}

}  // namespace

Result<int> move_transposes_ahead_of_gemms(Graph& graph) {
  auto cons = graph.consumers();
  NodeNamer namer(graph);
  std::vector<Node*> gemms;
  for (const auto& up : graph.nodes()) gemms.push_back(up.get());  // the loop adds nodes
  std::set<const Node*> replaced;                                  // the moved Transposes
  int moved = 0;
  for (Node* gemm : gemms) {
    int64_t N = 0;
    if (!row_wise_gemm(*gemm, &N)) continue;
    Value* a = gemm->inputs[0];
    const int64_t K = (*a->desc.shape)[1].value();
    Value* y = gemm->outputs[0];
    Node* unfold = consumer_of_type(cons, y, "Reshape");
    Value* z = unfold ? unfold->outputs[0] : nullptr;
    Node* t = z ? consumer_of_type(cons, z, "Transpose") : nullptr;
    if (!t || !z->desc.shape || !t->outputs[0]->desc.shape) continue;
    const Shape& zs = *z->desc.shape;
    const size_t r = zs.size();
    if (r < 3 || !zs.back().is_const() || zs.back().value() != N) continue;
    const auto perm = transpose_perm(*t, r);
    if (!perm || perm->back() != static_cast<int64_t>(r) - 1) continue;
    Value* u = t->outputs[0];
    Node* after = only_reader(cons, u);
    const bool unlocks_residual =
        is_onnx_op(after, "Add") && other_operand(after, u) && !other_operand(after, u)->constant;
    if (K > N && !unlocks_residual) continue;
    auto out_target = reshape_target(*u->desc.shape);
    if (!out_target) continue;

    // What the moved Transpose reads: when A folds a tensor X0 whose leading axes are the rows' own
    // ([S, B, H, hd] -> [S*B, E] -> ... -> [S, B, E]), X0 itself, the permutation extended over its
    // trailing axes; and when X0 is a Transpose read only here, that Transpose's input, the two
    // permutations composed: the attention's output permute and this one become one Transpose,
    // which the attention then writes through. Otherwise A split into the rows' axes.
    const size_t lead = r - 1;
    Value* src = nullptr;
    std::vector<int64_t> order;
    if (Node* fold = a->producer;
        is_onnx_op(fold, "Reshape") && fold->input(0) && fold->input(0)->desc.shape) {
      Value* x0 = fold->inputs[0];
      const Shape& xs = *x0->desc.shape;
      bool same = xs.size() > lead;
      for (size_t i = 0; same && i < lead; ++i) same = xs[i].same_as(zs[i]);
      Dim trailing(1);
      for (size_t i = lead; same && i < xs.size(); ++i) trailing = trailing * xs[i];
      if (same && trailing.is_const() && trailing.value() == K) {
        src = x0;
        order.assign(perm->begin(), perm->end() - 1);
        for (size_t i = lead; i < xs.size(); ++i) order.push_back(static_cast<int64_t>(i));
        if (Node* inner = x0->producer;
            is_onnx_op(inner, "Transpose") && single_use_reader(cons, x0) == fold && inner->input(0)) {
          if (const auto p0 = transpose_perm(*inner, xs.size())) {
            for (int64_t& o : order) o = (*p0)[static_cast<size_t>(o)];
            src = inner->inputs[0];
          }
        }
      }
    }
    // A Reshape of `in` to `target` (a constant), into a new value.
    auto add_reshape = [&](Value* in, std::vector<int64_t> target, const std::string& name) {
      Value* v = graph.new_value(a->name + "_" + name);
      v->desc.dtype = a->desc.dtype;
      Node* n = graph.add_node(namer(gemm->name + "_" + name), "Reshape");
      n->opset = unfold->opset;
      n->inputs = {in, graph.new_constant(gemm->name + "_" + name + "_shape",
                                          Tensor::vector_int64(std::move(target)))};
      n->outputs = {v};
      v->producer = n;
      n->precision = gemm->precision;
      return v;
    };
    if (!src) {
      Shape split(zs.begin(), zs.end() - 1);
      split.push_back(Dim(K));
      auto split_target = reshape_target(split);
      if (!split_target) continue;
      src = add_reshape(a, *split_target, "rows_split");
      order = *perm;
    }
    // src -> Transpose(order) -> [p(d)..., K] -> [M, K] -> the GEMM -> [p(d)..., N] into the
    // Transpose's value. fuse_gemm_epilogues then reads [p(d)..., K] as the GEMM's N-D input.
    Value* permuted = graph.new_value(a->name + "_rows_permuted");
    permuted->desc.dtype = a->desc.dtype;
    Node* p = graph.add_node(namer(t->name + "_ahead"), "Transpose");
    p->opset = t->opset;
    p->attrs.set("perm", order);
    p->inputs = {src};
    p->outputs = {permuted};
    permuted->producer = p;
    p->precision = t->precision;
    std::vector<int64_t> rows_target = *out_target;
    rows_target.back() = K;
    Value* folded = add_reshape(add_reshape(permuted, rows_target, "rows"), {-1, K}, "rows_folded");
    gemm->inputs[0] = folded;
    unfold->inputs = {
        y, graph.new_constant(unfold->name + "_permuted_shape", Tensor::vector_int64(*out_target))};
    unfold->outputs = {u};
    u->producer = unfold;
    z->producer = nullptr;  // the old unfold's output: nothing reads it any more
    replaced.insert(t);
    ++moved;
  }
  if (!moved) return 0;
  GRAFT_RETURN_IF_ERROR(remove_replaced_nodes(graph, replaced));
  eliminate_dead_nodes(graph);  // the fold and the attention's permute, when only the GEMM read them
  GRAFT_RETURN_IF_ERROR(graph.topological_sort());
  GRAFT_RETURN_IF_ERROR(infer_shapes(graph));
  return moved;
}

}  // namespace graft
