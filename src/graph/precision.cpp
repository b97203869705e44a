#include "graph/precision.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "graft/log.h"
#include "graph/passes.h"
#include "ops/operator.h"

namespace graft {

bool op_needs_fp32(const Node& n) {
  const OpEntry* op = find_op_entry(n);
  return op && op->precision == PrecisionTrait::kFloat32;
}

bool op_needs_fp32(const std::string& onnx_op_type) {
  const OpEntry* op = find_onnx_op(onnx_op_type);
  return op && op->precision == PrecisionTrait::kFloat32;
}

namespace {

// Whether the node writes a float32 tensor: what a hold to float16 is about. A node held to float16
// that writes none (Shape, NonZero, integer arithmetic, a pattern's catch) is left as it is.
bool makes_float32(const Node& n) {
  for (const Value* v : n.outputs)
    if (v && v->desc.dtype == DataType::kFloat32) return true;
  return false;
}

// Whether the node, re-typed to float16, infers float16 for exactly the float32 outputs and the
// backend supports it; where not, `why` says why.
bool can_run_fp16(const Node& n, const PrecisionPolicy& policy, std::string* why) {
  auto no = [why](const char* reason) {
    *why = reason;
    return false;
  };
  if (n.precision == DataType::kFloat32) return no("it is held to float32");
  // A hold to float16 overrides the op's own float32 trait where the node computes float values
  // (Exp, ReduceSum), never where it reads dims or makes integers (Shape, NonZero).
  if (op_needs_fp32(n) && !(n.precision == DataType::kFloat16 && makes_float32(n)))
    return no("its op stays float32 (range or accumulated error)");
  // Sequences and optionals keep their declared element type: a float16 sequence would need a Cast
  // that ONNX has no container form of.
  if (touches_containers(n)) return no("it reads or makes sequences or optionals");
  std::vector<int> keep = policy.keep_inputs ? policy.keep_inputs(n) : std::vector<int>{};
  bool any_float = false;
  std::vector<Value> tmp_in(n.inputs.size()), tmp_out(n.outputs.size());
  std::vector<TensorDesc> in_descs(n.inputs.size());
  std::vector<InferContext::InputInfo> infos(n.inputs.size());
  Node t;
  t.name = n.name;
  t.op_type = n.op_type;
  t.domain = n.domain;
  t.opset = n.opset;
  t.attrs = n.attrs;
  t.custom_op = n.custom_op;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const Value* v = n.inputs[i];
    if (!v) { t.inputs.push_back(nullptr); continue; }
    tmp_in[i] = *v;
    tmp_in[i].producer = nullptr;
    bool converted = false;
    if (v->desc.dtype == DataType::kFloat32 &&
        std::find(keep.begin(), keep.end(), static_cast<int>(i)) == keep.end()) {
      tmp_in[i].desc.dtype = DataType::kFloat16;
      tmp_in[i].constant.reset();
      converted = any_float = true;
    }
    in_descs[i] = tmp_in[i].desc;
    infos[i].desc = &in_descs[i];
    if (!converted && v->constant) infos[i].value = &*v->constant;
    if (v->sym_value) infos[i].sym_value = &*v->sym_value;
    t.inputs.push_back(&tmp_in[i]);
  }
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    if (!n.outputs[o]) { t.outputs.push_back(nullptr); continue; }
    tmp_out[o] = *n.outputs[o];
    tmp_out[o].producer = nullptr;
    any_float |= n.outputs[o]->desc.dtype == DataType::kFloat32;
    t.outputs.push_back(&tmp_out[o]);
  }
  if (!any_float) return no("it has no float32 input or output");
  std::vector<TensorDesc> out;
  std::vector<std::optional<std::vector<Dim>>> syms;
  if (!infer_node(t, infos, &out, &syms)) return no("its op does not take float16 there");
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    if (!n.outputs[o]) continue;
    if (o >= out.size()) return no("its op does not take float16 there");
    DataType was = n.outputs[o]->desc.dtype;
    DataType want = was == DataType::kFloat32 ? DataType::kFloat16 : was;
    if (out[o].dtype != want) return no("its op does not take float16 there");
    tmp_out[o].desc = out[o];
  }
  if (!policy.supports_fp16 || !policy.supports_fp16(t)) return no("the device has no float16 kernel for it");
  return true;
}

}  // namespace

Result<Tensor> float16_constant(const Tensor& t, Float16Clamps* clamps) {
  GRAFT_ASSIGN_OR_RETURN(Tensor h, t.cast(DataType::kFloat16));
  if (t.dtype() != DataType::kFloat32) return h;
  const float* src = t.data_as<float>();
  uint16_t* dst = h.data_as<uint16_t>();
  constexpr uint16_t kSmallestSubnormal = 0x0001, kLargestFinite = 0x7bff, kSign = 0x8000;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = src[i];
    if (!std::isfinite(v)) continue;
    const uint16_t sign = std::signbit(v) ? kSign : 0;
    const uint16_t magnitude = dst[i] & 0x7fff;
    if (v != 0.f && magnitude == 0) {
      dst[i] = sign | kSmallestSubnormal;
      ++clamps->raised;
    } else if (magnitude == 0x7c00) {  // a finite float32 beyond float16's range became inf
      dst[i] = sign | kLargestFinite;
      ++clamps->lowered;
    }
  }
  return h;
}

namespace {

// Whether `out` has more elements than `in` for every binding of their symbols: each axis is the
// same dim in both or a constant in both, and the constants' products grow. False where unknown.
bool grows(const TensorDesc& in, const TensorDesc& out) {
  if (!in.shape || !out.shape || in.shape->size() != out.shape->size()) return false;
  double ratio = 1.0;
  for (size_t d = 0; d < in.shape->size(); ++d) {
    const Dim& a = (*in.shape)[d];
    const Dim& b = (*out.shape)[d];
    if (a.same_as(b)) continue;
    if (!a.is_const() || !b.is_const() || a.value() <= 0) return false;
    ratio *= static_cast<double>(b.value()) / static_cast<double>(a.value());
  }
  return ratio > 1.0;
}

// An upsampling Resize whose output leaves the float16 region (a graph output, or read only by
// float32 nodes) stays float32: the Cast back to float32 then converts its smaller input rather
// than its output (a segmentation head's 8x bilinear resize to the input size: 64 times fewer
// elements cast, and no float16 copy of the large output written and read back), and the
// interpolation rounds once, to float32.
bool upsamples_into_float32(const Node& n, const std::map<const Value*, std::vector<Node*>>& consumers,
                            const std::set<const Node*>& fp16) {
  if (!is_onnx(n, "Resize") || n.inputs.empty() || !n.inputs[0] || n.outputs.empty()) return false;
  const Value* out = n.outputs[0];
  if (!out || out->desc.dtype != DataType::kFloat32 || !grows(n.inputs[0]->desc, out->desc)) return false;
  auto it = consumers.find(out);
  bool leaves = out->is_graph_output;
  if (it != consumers.end())
    for (const Node* c : it->second) {
      if (reads_dims_only(*c)) continue;
      if (fp16.count(c)) return false;
      leaves = true;
    }
  return leaves;
}

}  // namespace

Result<int> convert_to_fp16(Graph& g, const PrecisionPolicy& policy) {
  std::set<const Node*> fp16;
  for (const auto& n : g.nodes()) {
    std::string why;
    if (can_run_fp16(*n, policy, &why)) {
      fp16.insert(n.get());
    } else if (n->precision == DataType::kFloat16 && makes_float32(*n)) {
      Status unmet = error(StatusCode::kUnsupported,
                           "held to float16 by the layer precisions, but it cannot run in float16: ", why)
                         .with_node(n->name, n->op_type);
      if (policy.obey_float16) return unmet;
      log_warning_once(unmet.to_string() + " (precision constraints 'prefer': it stays float32)");
    }
  }
  auto consumers = g.consumers();
  // Last to first, so a Resize that feeds only such a Resize is judged after it. One the user holds
  // to float16 stays float16.
  for (auto it = g.nodes().rbegin(); it != g.nodes().rend(); ++it)
    if (fp16.count(it->get()) && (*it)->precision != DataType::kFloat16 &&
        upsamples_into_float32(**it, consumers, fp16))
      fp16.erase(it->get());
  if (fp16.empty()) return 0;

  NodeNamer unique_node_name(g);
  const int opset = default_domain_opset(g);
  auto add_cast = [&](Value* from, Value* to, DataType dt, const std::string& name) {
    Node* c = g.add_node(unique_node_name(name), "Cast");
    c->opset = opset;
    c->attrs.set("to", static_cast<int64_t>(dt));
    c->inputs = {from};
    c->outputs = {to};
    to->producer = c;
    to->desc = TensorDesc(dt, from->desc.shape ? *from->desc.shape : Shape{});
    if (!from->desc.shape) to->desc.shape.reset();
  };

  Float16Clamps clamps;
  std::string first_clamped;  // the first constant a clamp changed, for the warning
  // Producer side: every float32 output of a float16 node gets a float16 twin; the original value
  // (graph output, or read by float32 nodes) is then produced by a Cast back to float32.
  std::map<const Value*, Value*> as_fp16;  // float32 value -> its float16 version
  std::vector<Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  for (Node* n : nodes) {
    if (!fp16.count(n)) continue;
    for (auto& out : n->outputs) {
      if (!out || out->desc.dtype != DataType::kFloat32) continue;
      Value* o = out;
      Value* o16 = g.new_value(o->name + "_fp16");
      o16->desc = o->desc;
      o16->desc.dtype = DataType::kFloat16;
      o16->producer = n;
      out = o16;
      as_fp16[o] = o16;
      // A Shape or Size reader needs no float32 copy (the dynamo export's attention reads the key's
      // Shape for its scale, and a Cast back to float32 per layer only fed that Shape).
      bool need_fp32 = o->is_graph_output;
      for (const Node* c : consumers[o]) need_fp32 |= !fp16.count(c) && !reads_dims_only(*c);
      if (need_fp32) {
        add_cast(o16, o, DataType::kFloat32, n->name + "_to_fp32");
      } else {
        o->producer = nullptr;
        for (Node* c : consumers[o])
          if (reads_dims_only(*c))
            for (auto& in : c->inputs)
              if (in == o) in = o16;
      }
    }
  }
  // Consumer side: float32 inputs of float16 nodes read the float16 twin, a converted constant, or
  // a Cast of a graph input / float32 node output.
  for (Node* n : nodes) {
    if (!fp16.count(n)) continue;
    std::vector<int> keep = policy.keep_inputs ? policy.keep_inputs(*n) : std::vector<int>{};
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      Value* v = n->inputs[i];
      if (!v || v->desc.dtype != DataType::kFloat32) continue;
      if (std::find(keep.begin(), keep.end(), static_cast<int>(i)) != keep.end()) continue;
      auto it = as_fp16.find(v);
      if (it != as_fp16.end()) { n->inputs[i] = it->second; continue; }
      Value* v16 = g.new_value(v->name + "_fp16");
      if (v->constant) {
        const int64_t before = clamps.raised + clamps.lowered;
        auto c = float16_constant(*v->constant, &clamps);
        if (!c) return std::move(c).take_status().with_node(n->name, n->op_type);
        if (first_clamped.empty() && clamps.raised + clamps.lowered > before)
          first_clamped = "'" + v->name + "', read by '" + n->name + "' (" + n->op_type + ")";
        v16->constant = std::move(c).value();
        v16->quantized = v->quantized;  // the same integers, now rounded to float16 once more
        if (v->constant->rank() <= 1 && v->constant->dtype() == DataType::kFloat32)
          v16->float32_origin = std::make_shared<const Tensor>(*v->constant);
        v16->desc = v->desc;
        v16->desc.dtype = DataType::kFloat16;
      } else {
        add_cast(v, v16, DataType::kFloat16, v->name + "_to_fp16");
      }
      as_fp16[v] = v16;
      n->inputs[i] = v16;
    }
  }
  if (!first_clamped.empty())
    log_warning_once("float16: " + std::to_string(clamps.raised) +
                     " nonzero constant values below float16's smallest subnormal became +-5.96e-8 (not 0), and " +
                     std::to_string(clamps.lowered) + " beyond its range became +-65504 (not inf); the first in " +
                     first_clamped);
  GRAFT_RETURN_IF_ERROR(g.topological_sort());
  eliminate_dead_nodes(g);
  GRAFT_RETURN_IF_ERROR(infer_shapes(g));
  return static_cast<int>(fp16.size());
}

}  // namespace graft
