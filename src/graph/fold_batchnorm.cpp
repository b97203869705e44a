// Conv -> BatchNormalization (inference form, constant statistics) becomes one Conv:
//   y = scale * (conv(x, W) + b - mean) / sqrt(var + eps) + B
//     = conv(x, W * k) + (b - mean) * k + B,   k = scale / sqrt(var + eps), per output channel.
// And, for the CUDA builder, a BatchNormalization that feeds an activation with no Conv before it
// becomes a 1x1 depthwise Conv (weight k, bias B - mean * k), which the conv epilogue fusion then
// gives the activation.
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "graph/pass_util.h"
#include "graph/passes.h"

namespace graft {

namespace {

// The inference form with constant statistics of a C-channel input and only its first output read:
// k = scale / sqrt(var + eps) and the shift B - mean * k per channel, in double. False when `bn` is
// not that (training mode, a read running statistic, a non-constant parameter, a size mismatch).
Result<bool> inference_affine(const Node& bn, const std::map<const Value*, std::vector<Node*>>& consumers, int64_t c,
                              std::vector<double>* k, std::vector<double>* shift) {
  if (bn.op_type != "BatchNormalization" || !bn.domain.empty() || bn.inputs.size() < 5 || bn.outputs.empty() ||
      !bn.outputs[0])
    return false;
  auto training = bn.attrs.get_int("training_mode", 0);
  if (!training || *training != 0) return false;
  for (size_t o = 1; o < bn.outputs.size(); ++o)  // the others exist only in training mode
    if (bn.outputs[o] && (consumers.count(bn.outputs[o]) || bn.outputs[o]->is_graph_output)) return false;
  for (size_t i = 1; i < 5; ++i)
    if (!bn.inputs[i] || !bn.inputs[i]->constant || bn.inputs[i]->constant->numel() != c) return false;
  auto eps = bn.attrs.get_float("epsilon", 1e-5f);
  if (!eps) return std::move(eps).take_status().with_node(bn.name, bn.op_type);
  const Tensor& scale = *bn.inputs[1]->constant;
  const Tensor& b = *bn.inputs[2]->constant;
  const Tensor& mean = *bn.inputs[3]->constant;
  const Tensor& var = *bn.inputs[4]->constant;
  k->resize(static_cast<size_t>(c));
  shift->resize(static_cast<size_t>(c));
  for (int64_t i = 0; i < c; ++i) {
    const double ki = scale.get(i) / std::sqrt(var.get(i) + static_cast<double>(*eps));
    (*k)[static_cast<size_t>(i)] = ki;
    (*shift)[static_cast<size_t>(i)] = b.get(i) - mean.get(i) * ki;
  }
  return true;
}

// A quantized filter (Value::quantized) scaled by k per output channel stays quantized: the same
// integers over scales multiplied by k, per output channel (a per-tensor scale becomes one per
// channel). The new float filter is W * k rounded once, the record's scale * k rounded once, so
// they agree up to those roundings. Null when `origin` is, or is per input channel, or a product
// is not a finite float.
std::shared_ptr<const QuantizedOrigin> scaled_origin(const QuantizedOrigin* origin, const Tensor& w,
                                                     const std::vector<double>& k) {
  if (!origin || (!origin->per_tensor() && origin->axis != 0) || origin->q.dims() != w.dims() || w.rank() < 1)
    return nullptr;
  const int64_t m = w.dims()[0];
  auto out = std::make_shared<QuantizedOrigin>();
  out->q = origin->q;
  out->scale = Tensor::empty(DataType::kFloat32, {m});
  out->axis = 0;
  for (int64_t c = 0; c < m; ++c) {
    const double s = origin->scale.get(origin->per_tensor() ? 0 : c) * k[static_cast<size_t>(c)];
    if (!std::isfinite(s) || std::fabs(s) > std::numeric_limits<float>::max()) return nullptr;
    out->scale.set(c, s);
  }
  return out;
}

}  // namespace

Result<int> fold_batchnorm(Graph& graph) {
  auto consumers = graph.consumers();
  std::set<const Node*> dead;
  int folded = 0;
  for (auto& up : graph.nodes()) {
    Node& bn = *up;
    if (bn.op_type != "BatchNormalization" || bn.inputs.empty()) continue;
    Value* x = bn.inputs[0];
    if (!x || !x->producer || x->is_graph_output) continue;
    Node& conv = *x->producer;
    if (conv.op_type != "Conv" || !conv.domain.empty() || dead.count(&conv)) continue;
    if (consumers[x].size() != 1) continue;
    Value* w = conv.input(1);
    Value* b = conv.input(2);
    if (!w || !w->constant || (b && !b->constant)) continue;
    const Tensor& W = *w->constant;
    if (W.rank() < 1 || !dtype_is_float(W.dtype())) continue;
    const int64_t m = W.dims()[0];
    if (b && b->constant->numel() != m) continue;
    std::vector<double> k, shift;
    GRAFT_ASSIGN_OR_RETURN(bool affine, inference_affine(bn, consumers, m, &k, &shift));
    if (!affine) continue;

    Tensor new_w = Tensor::empty(W.dtype(), W.dims());
    Tensor new_b = Tensor::empty(W.dtype(), {m});
    const int64_t per_channel = m ? W.numel() / m : 0;
    for (int64_t c = 0; c < m; ++c) {
      const double kc = k[static_cast<size_t>(c)];
      for (int64_t i = 0; i < per_channel; ++i) new_w.set(c * per_channel + i, W.get(c * per_channel + i) * kc);
      new_b.set(c, (b ? b->constant->get(c) : 0.0) * kc + shift[static_cast<size_t>(c)]);
    }
    Value* wv = graph.new_constant(w->name + "_bnfold", new_w);
    Value* bv = graph.new_constant(conv.name + "_bias_bnfold", new_b);
    wv->quantized = scaled_origin(w->quantized.get(), W, k);
    conv.inputs[1] = wv;
    if (conv.inputs.size() < 3) conv.inputs.resize(3, nullptr);
    conv.inputs[2] = bv;
    Value* y = bn.outputs[0];
    conv.outputs[0] = y;
    y->producer = &conv;
    x->producer = nullptr;
    for (Value* o : bn.outputs) if (o && o != y) o->producer = nullptr;
    bn.outputs.clear();  // so remove_nodes_if does not detach y from the Conv
    inherit_precision(&conv, {&bn});
    dead.insert(&bn);
    ++folded;
  }
  graph.remove_nodes_if([&](const Node* n) { return dead.count(n) != 0; });
  graph.prune_values();
  return folded;
}

Result<int> batchnorm_activations_as_convs(Graph& graph) {
  auto consumers = graph.consumers();
  int rewritten = 0;
  for (auto& up : graph.nodes()) {
    Node& bn = *up;
    if (bn.op_type != "BatchNormalization" || bn.inputs.empty() || bn.outputs.empty() || !bn.outputs[0]) continue;
    Value* x = bn.inputs[0];
    Value* y = bn.outputs[0];
    // float32 and float16 only: the types GraftConv's CUDA kernels take (a float64 BatchNormalization
    // made a Conv would leave the GPU).
    if (!x || !x->desc.shape || x->desc.shape->size() != 4 || y->is_graph_output ||
        (x->desc.dtype != DataType::kFloat32 && x->desc.dtype != DataType::kFloat16))
      continue;
    const Dim& channels = (*x->desc.shape)[1];
    if (!channels.is_const() || channels.value() < 1) continue;
    // Only where the activation would fuse: a lone BatchNormalization gains nothing as a Conv.
    auto readers = consumers.find(y);
    if (readers == consumers.end() || readers->second.size() != 1) continue;
    const Node* act = readers->second[0];
    static const std::set<std::string> kEpilogueActivations = {"Relu", "Clip", "HardSwish", "Sigmoid", "HardSigmoid"};
    if (!act->domain.empty() || !kEpilogueActivations.count(act->op_type)) continue;
    const int64_t c = channels.value();
    std::vector<double> k, shift;
    GRAFT_ASSIGN_OR_RETURN(bool affine, inference_affine(bn, consumers, c, &k, &shift));
    if (!affine) continue;
    Tensor w = Tensor::empty(x->desc.dtype, {c, 1, 1, 1});
    Tensor b = Tensor::empty(x->desc.dtype, {c});
    for (int64_t i = 0; i < c; ++i) {
      w.set(i, k[static_cast<size_t>(i)]);
      b.set(i, shift[static_cast<size_t>(i)]);
    }
    Value* wv = graph.new_constant(bn.name + "_as_conv_w", w);
    Value* bv = graph.new_constant(bn.name + "_as_conv_b", b);
    for (size_t o = 1; o < bn.outputs.size(); ++o)
      if (bn.outputs[o]) bn.outputs[o]->producer = nullptr;
    bn.outputs.resize(1);
    bn.op_type = "Conv";
    bn.inputs = {x, wv, bv};
    bn.attrs = AttributeMap{};
    bn.attrs.set("group", c);
    bn.attrs.set("kernel_shape", std::vector<int64_t>{1, 1});
    ++rewritten;
  }
  if (rewritten) graph.prune_values();
  return rewritten;
}

}  // namespace graft
