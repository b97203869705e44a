// move_transposes_behind_gemms: Transpose(X) -> GraftGemm becomes GraftGemm(X) -> Transpose when the
// permutation keeps the last axis and only data-movement nodes read the GEMM's output.
//
// A GEMM maps each row X[..., :] to a row of its output, so permuting the leading axes before it or
// after it is the same: GEMM(Transpose_p(X)) = Transpose_p(GEMM(X)) for a p that keeps the last
// axis, as long as nothing else of the GEMM (a residual R) depends on the row order. Behind the GEMM
// the Transpose joins the data-movement chain its readers start (compose_view_chains), where it
// costs nothing: nn.MultiheadAttention with batch_first, as the dynamo export writes it, transposes
// [B, S, E] to [S, B, E] before the packed q/k/v projection, and the projection's output only feeds
// the head split's view chains (vit: one copy per encoder block). Where some reader of the GEMM's
// output is not a data-movement node the Transpose stays where it is: behind the GEMM it would
// still copy, and the projection's output is wider than its input.
#include <string>

#include "graph/pass_util.h"
#include "graph/passes.h"
#include "ops/internal_ops.h"

namespace graft {

namespace {

bool data_movement(const Node& n) { return is_reshape_view(n) || is_onnx(n, "Transpose"); }

}  // namespace

Result<int> move_transposes_behind_gemms(Graph& graph) {
  auto cons = graph.consumers();
  int moved = 0;
  for (const auto& up : graph.nodes()) {
    Node* gemm = up.get();
    if (!is_internal(gemm, "GraftGemm") || gemm->inputs.size() > 3 || !gemm->input(0) ||
        gemm->outputs.size() != 1 || !gemm->outputs[0] || gemm->outputs[0]->is_graph_output)
      continue;
    Value* x = gemm->inputs[0];
    Node* t = x->producer;
    if (!t || t->op_type != "Transpose" || !t->domain.empty() || x->is_graph_output || cons[x].size() != 1 ||
        !t->input(0) || !t->input(0)->desc.shape)
      continue;
    const size_t r = t->input(0)->desc.shape->size();
    const auto perm = transpose_perm(*t, r);
    if (!perm || r < 2 || perm->back() != static_cast<int64_t>(r) - 1) continue;
    Value* y = gemm->outputs[0];
    const auto& readers = cons[y];
    bool views_only = !readers.empty();
    for (const Node* c : readers) views_only = views_only && data_movement(*c);
    if (!views_only) continue;
    // GEMM(X) in X's own row order, then the Transpose into the old output value.
    Value* rows = graph.new_value(y->name + "_rows");
    rows->desc.dtype = y->desc.dtype;
    gemm->inputs[0] = t->inputs[0];
    gemm->outputs = {rows};
    rows->producer = gemm;
    t->inputs = {rows};
    t->outputs = {y};
    y->producer = t;
    x->producer = nullptr;  // the Transpose's old output: nothing reads it any more
    ++moved;
  }
  if (!moved) return 0;
  eliminate_dead_nodes(graph);
  GRAFT_RETURN_IF_ERROR(graph.topological_sort());
  GRAFT_RETURN_IF_ERROR(infer_shapes(graph));
  return moved;
}

}  // namespace graft
