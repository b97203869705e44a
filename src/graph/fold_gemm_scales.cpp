// The CUDA builder's "fold gemm" pass (after "layout"): per-channel scales and residuals behind a
// GraftGemm move into it (ops: src/ops/transformer/transformer.h).
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
  GRAFT_RETURN_IF_ERROR(remove_replaced_nodes(graph, dead));
  return folded;
}

}  // namespace graft
