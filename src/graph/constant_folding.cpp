// Constant folding: run nodes whose inputs are all known at build time, through the evaluator the
// builder passes (the runtime's CPU executor; graph/ includes no runtime).
#include <memory>
#include <set>

#include "graph/passes.h"
#include "ops/quantize/quantize.h"
#include "ops/random/random.h"

namespace graft {

namespace {

// A value whose symbolic contents became fully constant (e.g. Shape of a static tensor).
bool sym_value_to_constant(Value& v) {
  if (v.constant || !v.sym_value || !v.desc.shape || !shape_is_static(*v.desc.shape)) return false;
  if (!dtype_is_integer(v.desc.dtype)) return false;
  std::vector<double> vals;
  for (const Dim& d : *v.sym_value) {
    if (!d.is_const()) return false;
    vals.push_back(static_cast<double>(d.value()));
  }
  auto dims = shape_values(*v.desc.shape);
  if (numel_of(dims) != static_cast<int64_t>(vals.size())) return false;
  v.constant = Tensor::from_doubles(v.desc.dtype, dims, vals);
  return true;
}

// The record of a DequantizeLinear whose integers an INT8 kernel could run on (Value::quantized):
// int8 or uint8 constants, a float32 scale per tensor or per axis (not blocked), zero points absent
// or all 0, a float32 result. Null otherwise.
std::shared_ptr<const QuantizedOrigin> quantized_origin(const Node& n, const std::vector<const Tensor*>& ins,
                                                        const Tensor& out) {
  if (n.op_type != "DequantizeLinear" || !n.domain.empty() || ins.size() < 2 || !ins[0] || !ins[1]) return nullptr;
  const Tensor& q = *ins[0];
  const Tensor& scale = *ins[1];
  if ((q.dtype() != DataType::kInt8 && q.dtype() != DataType::kUInt8) || scale.dtype() != DataType::kFloat32 ||
      out.dtype() != DataType::kFloat32 || out.dims() != q.dims())
    return nullptr;
  const Tensor* zp = ins.size() > 2 ? ins[2] : nullptr;
  if (zp) {
    if (zp->dtype() != q.dtype()) return nullptr;
    for (int64_t i = 0; i < zp->numel(); ++i)
      if (zp->get(i) != 0) return nullptr;
  }
  // The scale's layout as DequantizeLinear itself reads it: per tensor or per axis, not blocked.
  auto layout = quant_layout(n.attrs, q.dims(), scale.dims(), zp ? &zp->dims() : nullptr);
  if (!layout || layout->block != 0 || (layout->channels > 1 && scale.rank() != 1)) return nullptr;
  auto origin = std::make_shared<QuantizedOrigin>();
  origin->q = q;
  origin->scale = scale;
  origin->axis = layout->channels > 1 ? layout->axis : 0;
  return origin;
}

}  // namespace

Result<int> fold_constants(Graph& graph, const NodeEvaluator& evaluate) {
  GRAFT_RETURN_IF_ERROR(graph.topological_sort());
  std::set<const Node*> folded;
  for (auto& up : graph.nodes()) {
    Node& n = *up;
    bool any_output = false, all_sym_const = true;
    for (Value* o : n.outputs) {
      if (!o) continue;
      any_output = true;
      if (!o->constant && !sym_value_to_constant(*o)) all_sym_const = false;
    }
    if (any_output && all_sym_const) {
      folded.insert(&n);
      for (Value* o : n.outputs) if (o) o->producer = nullptr;
      continue;
    }
    // Source nodes (no inputs) may be random generators: never fold them.
    bool has_input = false, all_const = true;
    for (Value* v : n.inputs) {
      if (!v) continue;
      has_input = true;
      if (!v->constant) all_const = false;
    }
    if (!has_input || !all_const || !any_output) continue;
    // Random ops (RandomUniformLike, Bernoulli, training Dropout...) over constants still draw
    // fresh values every run.
    if (node_is_random(n)) continue;
    // Sequences and optionals stay values of the run: plans and the CUDA engine store constants as tensors.
    bool container_out = false;
    for (Value* o : n.outputs) container_out = container_out || (o && !o->desc.is_tensor());
    if (container_out) continue;
    std::vector<const Tensor*> ins;
    for (Value* v : n.inputs) ins.push_back(v ? &*v->constant : nullptr);
    auto descs = infer_node_concrete(n, ins);
    if (!descs) return std::move(descs).take_status();
    bool too_big = false;
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] && shape_is_static(*(*descs)[o].shape) &&
          numel_of(shape_values(*(*descs)[o].shape)) > kMaxFoldElements)
        too_big = true;
    if (too_big) continue;
    auto outs = evaluate(n, ins);
    if (!outs) {
      // A kernel that reports kUnsupported for these inputs is not a build error: the node stays and runs later.
      if (outs.status().code() == StatusCode::kUnsupported) continue;
      return std::move(outs).take_status();
    }
    // A data-dependent output (NonZero of a constant) is sized only now; the same limit applies.
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] && (*outs)[o].numel() > kMaxFoldElements) too_big = true;
    if (too_big) continue;
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      Value* v = n.outputs[o];
      if (!v) continue;
      v->quantized = o == 0 ? quantized_origin(n, ins, (*outs)[o]) : nullptr;
      v->constant = std::move((*outs)[o]);
      v->desc = TensorDesc(v->constant->dtype(), shape_from_values(v->constant->dims()));
      v->sym_value.reset();
      v->producer = nullptr;
    }
    folded.insert(&n);
  }
  graph.remove_nodes_if([&](const Node* n) { return folded.count(n) != 0; });
  graph.prune_values();
  return static_cast<int>(folded.size());
}

}  // namespace graft
