// The CUDA builder's "fuse conv" pass: a Conv with what follows it (a residual Add, then Relu,
// Clip, HardSwish, HardSigmoid, Sigmoid or SiLU) becomes one GraftConv, whose epilogue applies them.
// The internal ops are defined in src/ops/fused_conv/fused_conv.h.
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "graph/pass_util.h"
#include "graph/passes.h"
#include "ops/internal_ops.h"
#include "ops/layout.h"
#include "ops/operator.h"
#include "ops/window_attrs.h"

namespace graft {

namespace {

// Clip bounds graft's epilogue can apply: known at build time, not NaN, not crossed.
bool epilogue_clip_bounds(const Node& clip, float* lo, float* hi) {
  return clip_bounds(clip, lo, hi) && !std::isnan(*lo) && !std::isnan(*hi) && *lo <= *hi;
}

// The Mul of y * Sigmoid(y) when y's only readers are that Sigmoid and that Mul, and the Sigmoid's
// only reader is the Mul; nullptr otherwise.
Node* silu_of(const std::map<const Value*, std::vector<Node*>>& consumers, const Value* y) {
  if (!y || y->is_graph_output) return nullptr;
  auto it = consumers.find(y);
  if (it == consumers.end() || it->second.size() != 2) return nullptr;
  Node* sig = nullptr;
  Node* mul = nullptr;
  for (Node* c : it->second) {
    if (is_onnx(*c, "Sigmoid") && c->inputs.size() == 1 && c->outputs.size() == 1) sig = c;
    else if (is_onnx(*c, "Mul") && c->inputs.size() == 2 && c->outputs.size() == 1) mul = c;
  }
  if (!sig || !mul || single_use_reader(consumers, sig->outputs[0]) != mul) return nullptr;
  const Value* s = sig->outputs[0];
  const bool operands = (mul->inputs[0] == y && mul->inputs[1] == s) || (mul->inputs[0] == s && mul->inputs[1] == y);
  return operands ? mul : nullptr;
}

}  // namespace

Result<int> fuse_conv_epilogues(Graph& g) {
  auto consumers = g.consumers();
  std::set<const Node*> dead;
  int fused = 0;
  for (auto& up : g.nodes()) {
    Node* conv = up.get();
    // 2-D convolutions with constant weights (cuDNN's fused kernels and the NHWC weight reorder
    // need them); everything else stays a plain Conv.
    if (!is_onnx_op(conv, "Conv") || conv->outputs.size() != 1 || !conv->input(1) || !conv->input(1)->constant ||
        conv->input(0)->desc.rank() != 4 || !dtype_is_float(conv->input(0)->desc.dtype))
      continue;
    // cuDNN pads symmetrically: asymmetric explicit pads and SAME_* stay a plain Conv.
    auto pads = conv->attrs.get_ints("pads", {});
    auto auto_pad = conv->attrs.get_string("auto_pad", "NOTSET");
    if (!pads || !auto_pad || (auto_pad.value() != "NOTSET" && auto_pad.value() != "VALID") ||
        (pads->size() == 4 && ((*pads)[0] != (*pads)[2] || (*pads)[1] != (*pads)[3])))
      continue;
    AttributeMap attrs = conv->attrs;
    attrs.set("layout", std::string("NCHW"));
    attrs.set("activation", std::string(""));
    std::vector<Value*> inputs{conv->input(0), conv->input(1), conv->input(2)};
    std::vector<Node*> absorbed{conv};  // the fused node takes the place of the last of these
    Value* out = conv->outputs[0];
    // Residual: Add(conv, Z) with Z of the output's shape and dtype (broadcast adds are not residuals).
    // The shapes compare as expressions: under a dynamic batch both are [batch, C, H, W], and a
    // residual left out of the epilogue costs a whole elementwise pass (half of ResNet-50's time at
    // batch 32 on an H200).
    // (Consumers are looked up in the map taken before the pass: a node an earlier fusion absorbed
    // or rewrote is skipped.)
    auto usable = [&](Node* c) { return c && !dead.count(c) && !is_internal(c, "GraftConv"); };
    if (Node* add = single_use_reader(consumers, out); usable(add) && is_onnx_op(add, "Add") && add->inputs.size() == 2) {
      Value* z = add->inputs[0] == out ? add->inputs[1] : add->inputs[0];
      if (z && z != out && out->desc.shape && z->desc.shape && out->desc.shape->size() == 4 &&
          shapes_same(*z->desc.shape, *out->desc.shape) && z->desc.dtype == out->desc.dtype) {
        inputs.push_back(z);
        out = add->outputs[0];
        absorbed.push_back(add);
      }
    }
    float lo = 0, hi = 0;
    if (Node* act = single_use_reader(consumers, out);
        usable(act) && (is_onnx_op(act, "Relu") || is_onnx_op(act, "HardSwish") || is_onnx_op(act, "Sigmoid")) &&
        act->outputs.size() == 1) {
      // HardSwish (MobileNetV3) and Sigmoid (a squeeze-excitation gate: EfficientNet, RegNetY, 16
      // tiny launches in EfficientNet-B0) run in graft's epilogue kernel.
      attrs.set("activation", act->op_type);
      out = act->outputs[0];
      absorbed.push_back(act);
    } else if (usable(act) && is_onnx_op(act, "HardSigmoid") && act->outputs.size() == 1) {
      // MobileNetV3's squeeze-excitation gate (alpha 1/6, beta 1/2 as PyTorch exports it).
      auto alpha = act->attrs.get_float("alpha", 0.2f);
      auto beta = act->attrs.get_float("beta", 0.5f);
      if (alpha && beta && std::isfinite(*alpha) && std::isfinite(*beta)) {
        attrs.set("activation", std::string("HardSigmoid"));
        attrs.set("hardsigmoid_alpha", *alpha);
        attrs.set("hardsigmoid_beta", *beta);
        out = act->outputs[0];
        absorbed.push_back(act);
      }
    } else if (usable(act) && is_onnx_op(act, "Clip") && act->outputs.size() == 1 && epilogue_clip_bounds(*act, &lo, &hi)) {
      // ReLU6 (MobileNetV2, MnasNet): a separate elementwise pass over the whole activation cost
      // more than the convolution at batch 32.
      attrs.set("activation", std::string("Clip"));
      attrs.set("clip_min", lo);
      attrs.set("clip_max", hi);
      out = act->outputs[0];
      absorbed.push_back(act);
    } else if (Node* mul = silu_of(consumers, out); usable(mul)) {
      // SiLU as PyTorch exports it (EfficientNet, RegNetY): y * Sigmoid(y), y read twice.
      attrs.set("activation", std::string("Silu"));
      absorbed.push_back((mul->input(0) == out ? mul->input(1) : mul->input(0))->producer);  // the Sigmoid
      out = mul->outputs[0];
      absorbed.push_back(mul);
    }
    while (!inputs.empty() && !inputs.back()) inputs.pop_back();  // no residual and no bias
    // The last absorbed node comes after the residual's producer, so the fused node goes there.
    Node* keep = absorbed.back();
    for (Node* n : absorbed) {
      inherit_precision(keep, {n});
      if (n != keep) dead.insert(n);
    }
    keep->name = conv->name;
    keep->op_type = "GraftConv";
    keep->domain = kInternalDomain;
    keep->opset = conv->opset;
    keep->attrs = std::move(attrs);
    keep->inputs = std::move(inputs);
    keep->outputs = {out};
    ++fused;
  }
  if (!dead.empty()) {
    g.remove_nodes_if([&](const Node* n) { return dead.count(n) != 0; });
    g.prune_values();
  }
  for (auto& n : g.nodes())  // a fused node produces the output of the last node it absorbed
    for (Value* o : n->outputs)
      if (o) o->producer = n.get();
  GRAFT_RETURN_IF_ERROR(g.topological_sort());
  return fused;
}

}  // namespace graft
