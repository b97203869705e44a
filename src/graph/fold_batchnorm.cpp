// Conv -> BatchNormalization (inference form, constant statistics) becomes one Conv:
//   y = scale * (conv(x, W) + b - mean) / sqrt(var + eps) + B
//     = conv(x, W * k) + (b - mean) * k + B,   k = scale / sqrt(var + eps), per output channel.
#include <cmath>
#include <set>

#include "graph/passes.h"

namespace graft {

Result<int> fold_batchnorm(Graph& graph) {
  auto consumers = graph.consumers();
  std::set<const Node*> dead;
  int folded = 0;
  for (auto& up : graph.nodes()) {
    Node& bn = *up;
    if (bn.op_type != "BatchNormalization" || !bn.domain.empty() || bn.inputs.size() < 5) continue;
    auto training = bn.attrs.get_int("training_mode", 0);
    if (!training || *training != 0) continue;
    // Only the first output may be used (the others exist only in training mode).
    bool extra_outputs = false;
    for (size_t o = 1; o < bn.outputs.size(); ++o)
      extra_outputs |= bn.outputs[o] && (consumers.count(bn.outputs[o]) || bn.outputs[o]->is_graph_output);
    if (extra_outputs || !bn.outputs[0]) continue;
    Value* x = bn.inputs[0];
    if (!x || !x->producer || x->is_graph_output) continue;
    Node& conv = *x->producer;
    if (conv.op_type != "Conv" || !conv.domain.empty() || dead.count(&conv)) continue;
    if (consumers[x].size() != 1) continue;
    Value* w = conv.input(1);
    Value* b = conv.input(2);
    if (!w || !w->constant || (b && !b->constant)) continue;
    bool stats_const = true;
    for (size_t i = 1; i < 5; ++i) stats_const &= bn.inputs[i] && bn.inputs[i]->constant.has_value();
    if (!stats_const) continue;
    const Tensor& W = *w->constant;
    if (W.rank() < 1 || !dtype_is_float(W.dtype())) continue;
    const int64_t m = W.dims()[0];
    const Tensor& scale = *bn.inputs[1]->constant;
    const Tensor& shift = *bn.inputs[2]->constant;
    const Tensor& mean = *bn.inputs[3]->constant;
    const Tensor& var = *bn.inputs[4]->constant;
    if (scale.numel() != m || shift.numel() != m || mean.numel() != m || var.numel() != m) continue;
    if (b && b->constant->numel() != m) continue;
    auto eps = bn.attrs.get_float("epsilon", 1e-5f);
    if (!eps) return std::move(eps).take_status().with_node(bn.name, bn.op_type);

    Tensor new_w = Tensor::empty(W.dtype(), W.dims());
    Tensor new_b = Tensor::empty(W.dtype(), {m});
    const int64_t per_channel = m ? W.numel() / m : 0;
    for (int64_t c = 0; c < m; ++c) {
      double k = scale.get(c) / std::sqrt(var.get(c) + static_cast<double>(*eps));
      for (int64_t i = 0; i < per_channel; ++i) new_w.set(c * per_channel + i, W.get(c * per_channel + i) * k);
      double bias = b ? b->constant->get(c) : 0.0;
      new_b.set(c, (bias - mean.get(c)) * k + shift.get(c));
    }
    Value* wv = graph.new_constant(w->name + "_bnfold", new_w);
    Value* bv = graph.new_constant(conv.name + "_bias_bnfold", new_b);
    conv.inputs[1] = wv;
    if (conv.inputs.size() < 3) conv.inputs.resize(3, nullptr);
    conv.inputs[2] = bv;
    Value* y = bn.outputs[0];
    conv.outputs[0] = y;
    y->producer = &conv;
    x->producer = nullptr;
    for (Value* o : bn.outputs) if (o && o != y) o->producer = nullptr;
    bn.outputs.clear();  // so remove_nodes_if does not detach y from the Conv
    dead.insert(&bn);
    ++folded;
  }
  graph.remove_nodes_if([&](const Node* n) { return dead.count(n) != 0; });
  graph.prune_values();
  return folded;
}

}  // namespace graft
