// Explicitly quantized convolutions on their integers: the CUDA builder's "int8 convs" pass, after
// the layout pass. A float16 NHWC GraftConv whose input is a folded Q/DQ pair (GraftQuantizeDequantize,
// int8, zero point 0) and whose filter was folded from DequantizeLinear of int8 constants
// (Value::quantized, zero point 0, one scale or one per output channel) computes
//   act(sum over the window of (s_x q_x) * (s_w q_w) + B + Z) = act(s_x s_w * sum(q_x q_w) + B + Z),
// so it becomes GraftConvInt8 over q_x and q_w: the sum is exact in int32 and the scales meet it once
// in float32 (src/ops/fused_conv/graft_conv_int8.cpp). q_x comes from one QuantizeLinear per folded
// pair (the pair's own first step, with its scale and zero point), which writes int8 where the pair
// wrote float16; the pair stays only for readers that are not converted.
//
// Then a GraftConvInt8 whose float16 output only such a QuantizeLinear reads (the next quantized
// layer's input: ResNet's conv1 and conv2 of every block) writes that QuantizeLinear's int8 output
// itself, quantizing its float32 result (GraftConvInt8's `out_scale`): no float16 tensor between
// the two layers, no pass over it, and no float16 rounding before the quantization.
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/pass_util.h"
#include "graph/passes.h"
#include "ops/fused_conv/int8_conv_limits.h"
#include "ops/internal_ops.h"

namespace graft {

namespace {

// Symmetric int8 quantization: a positive finite scalar scale and an int8 zero point of 0.
bool symmetric_int8(const Value* scale, const Value* zero_point) {
  const Tensor* s = scalar_constant(scale);
  const Tensor* zp = scalar_constant(zero_point);
  return s && zp && zp->dtype() == DataType::kInt8 && zp->get(0) == 0 && std::isfinite(s->get(0)) && s->get(0) > 0;
}

// A folded pair that quantizes that way.
bool int8_pair(const Node* p) {
  return is_internal(p, "GraftQuantizeDequantize") && p->inputs.size() == 3 && p->inputs[0] &&
         symmetric_int8(p->input(1), p->input(2));
}

bool string_attr_is(const Node& n, const char* name, const char* fallback, std::initializer_list<const char*> allowed) {
  auto v = n.attrs.get_string(name, fallback);
  if (!v) return false;
  for (const char* a : allowed)
    if (*v == a) return true;
  return false;
}

// The GraftConv forms the INT8 kernel computes: NHWC, one group, no input activation, activation
// none, Relu or Clip, a float16 output, a constant rank-4 filter over a multiple of 16 channels
// with an int8 record and fewer terms than kInt8ConvTermLimit (no int32 sum can overflow), a constant
// bias if any.
bool int8_candidate(const Node& n) {
  if (!is_internal(n, "GraftConv") || n.inputs.size() < 2 || n.outputs.size() != 1 || !n.outputs[0] ||
      n.outputs[0]->desc.dtype != DataType::kFloat16)
    return false;
  if (!string_attr_is(n, "layout", "NCHW", {"NHWC"}) || !string_attr_is(n, "input_activation", "", {""}) ||
      !string_attr_is(n, "activation", "", {"", "Relu", "Clip"}))
    return false;
  auto group = n.attrs.get_int("group", 1);
  if (!group || *group != 1) return false;
  const Value* w = n.input(1);
  if (!w || !w->constant || !w->quantized || w->constant->rank() != 4 || w->constant->dims()[3] % 16 != 0) return false;
  const auto& wd = w->constant->dims();  // OHWI
  if (wd[1] * wd[2] * wd[3] >= kInt8ConvTermLimit) return false;
  const QuantizedOrigin& o = *w->quantized;
  if (o.q.dtype() != DataType::kInt8 || o.q.dims() != w->constant->dims() || (!o.per_tensor() && o.axis != 0))
    return false;
  const Value* b = n.input(2);
  return (!b || b->constant) && int8_pair(n.input(0) ? n.input(0)->producer : nullptr);
}

}  // namespace

Result<int> quantized_convs_to_int8(Graph& g) {
  std::map<const Node*, Value*> integers;  // folded pair -> the int8 output of its QuantizeLinear
  NodeNamer unique_name(g);
  const int opset = default_domain_opset(g);
  std::vector<Node*> order;
  for (auto& n : g.nodes()) order.push_back(n.get());
  int converted = 0;
  for (Node* n : order) {
    if (!int8_candidate(*n)) continue;
    Node* pair = n->inputs[0]->producer;
    const Value* w = n->inputs[1];
    const QuantizedOrigin& o = *w->quantized;
    const int64_t m = w->constant->dims()[0];
    const double sx = pair->input(1)->constant->get(0);
    Tensor scale = Tensor::empty(DataType::kFloat32, {m});
    for (int64_t c = 0; c < m; ++c) scale.set(c, sx * o.scale.get(o.per_tensor() ? 0 : c));
    Value*& xq = integers[pair];
    if (!xq) {
      Value* x = pair->inputs[0];
      xq = g.new_value(x->name + "_int8");
      Node* q = g.add_node(unique_name(pair->name + "_int8"), "QuantizeLinear");
      q->opset = opset;
      q->inputs = {x, pair->inputs[1], pair->inputs[2]};
      q->outputs = {xq};
      xq->producer = q;
      xq->desc = x->desc;
      xq->desc.dtype = DataType::kInt8;
      inherit_precision(q, {pair});
    }
    std::vector<Value*> inputs = {xq, g.new_constant(w->name + "_int8", o.q),
                                  g.new_constant(n->name + "_int8_scale", std::move(scale))};
    if (const Value* b = n->input(2)) {
      // The model's float32 bias where the float16 pass rounded it (Value::float32_origin).
      const Tensor& from = b->float32_origin && b->float32_origin->numel() == m ? *b->float32_origin : *b->constant;
      Tensor bias = Tensor::empty(DataType::kFloat32, {m});
      for (int64_t c = 0; c < m; ++c) bias.set(c, from.get(c));  // float32, or float16 to float32: exact
      inputs.push_back(g.new_constant(n->name + "_int8_bias", std::move(bias)));
    }
    if (Value* z = n->input(3)) {
      if (inputs.size() == 3) inputs.push_back(nullptr);
      inputs.push_back(z);
    }
    n->op_type = "GraftConvInt8";
    n->inputs = std::move(inputs);
    n->attrs.erase("layout");
    n->attrs.set("to", static_cast<int64_t>(DataType::kFloat16));
    ++converted;
  }
  if (!converted) return 0;
  eliminate_dead_nodes(g);  // pairs whose readers all became INT8 convolutions
  // INT8 convolutions whose only reader quantizes their output over a scalar int8 scale, zero point 0.
  auto consumers = g.consumers();
  std::set<const Node*> fused;
  for (auto& up : g.nodes()) {
    Node* n = up.get();
    if (!is_internal(n, "GraftConvInt8") || n->outputs.size() != 1 || !n->outputs[0]) continue;
    Value* y = n->outputs[0];
    Node* q = single_use_reader(consumers, y);
    if (y->desc.dtype != DataType::kFloat16 || !is_onnx_op(q, "QuantizeLinear") || q->inputs.size() != 3 ||
        q->input(0) != y || q->outputs.size() != 1 || !q->outputs[0] || q->outputs[0]->desc.dtype != DataType::kInt8 ||
        !symmetric_int8(q->input(1), q->input(2)) || q->input(1)->constant->dtype() != DataType::kFloat32)
      continue;
    const Tensor* s = scalar_constant(q->input(1));
    Value* yq = q->outputs[0];
    n->outputs[0] = yq;
    yq->producer = n;
    y->producer = nullptr;
    q->outputs.clear();  // so removing q leaves yq to n
    n->attrs.set("to", static_cast<int64_t>(DataType::kInt8));
    n->attrs.set("out_scale", static_cast<float>(s->get(0)));
    fused.insert(q);
  }
  g.remove_nodes_if([&](const Node* n) { return fused.count(n) != 0; });
  g.prune_values();
  GRAFT_RETURN_IF_ERROR(infer_shapes(g));
  return converted;
}

}  // namespace graft
