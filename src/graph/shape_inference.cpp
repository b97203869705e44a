// Shape inference over symbolic dimensions.
#include <algorithm>

#include "core/checked_math.h"
#include "graph/passes.h"

namespace graft {

namespace {

// Every shape an op infers is bounded here, in one place for builtin and custom ops alike: rank at
// most kMaxRank, no negative or overflowed dimension, and a constant part whose element and byte
// counts fit in int64. A shape that breaks one of these would wrap in later size computations.
Status check_output_shapes(const Node& node, const std::vector<TensorDesc>& descs) {
  for (size_t o = 0; o < node.outputs.size() && o < descs.size(); ++o) {
    if (!node.outputs[o] || !descs[o].shape) continue;
    const Shape& s = *descs[o].shape;
    auto fail = [&](auto&&... parts) {
      return error(StatusCode::kInvalidModel, "output ", static_cast<uint64_t>(o), " ('", node.outputs[o]->name,
                   "') ", parts...)
          .with_node(node.name, node.op_type);
    };
    if (static_cast<int64_t>(s.size()) > kMaxRank)
      return fail("would have rank ", static_cast<uint64_t>(s.size()), ", more than graft's limit of ", kMaxRank);
    int64_t numel = 1;
    bool overflow = false;
    for (size_t i = 0; i < s.size(); ++i) {
      const Dim& d = s[i];
      if (d.is_invalid())
        return fail("has dimension ", static_cast<uint64_t>(i), " = ", d.to_string(),
                    ", whose arithmetic overflows a 64-bit integer");
      if (!d.is_const()) continue;
      if (d.value() < 0)
        return fail("has a negative dimension ", d.value(), " (shape ", shape_to_string(s), ")");
      overflow = overflow || !checked_mul(numel, d.value(), &numel);
    }
    int64_t bytes = 0;
    if (overflow || !checked_mul(numel, static_cast<int64_t>(std::max<size_t>(dtype_size(descs[o].dtype), 1)), &bytes))
      return fail("shape ", shape_to_string(s), " has more elements or bytes than fit in a 64-bit integer");
  }
  return Status::ok();
}

// A sequence or optional reaches only the ops that take containers (OpEntry::takes_containers).
Status check_tensor_inputs(const Node& node, const std::vector<InferContext::InputInfo>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].desc && !inputs[i].desc->is_tensor())
      return error(StatusCode::kInvalidModel, "input ", static_cast<uint64_t>(i), " ('",
                   i < node.inputs.size() && node.inputs[i] ? node.inputs[i]->name : std::string(), "') is a ",
                   value_kind_name(inputs[i].desc->kind), " (", inputs[i].desc->to_string(), "); ",
                   node.op_type, " takes tensors")
          .with_node(node.name, node.op_type);
  return Status::ok();
}

// A string tensor reaches only the ops that take strings (OpEntry::takes_strings); custom ops
// never do (the SDK's kernels see raw buffers).
Status check_no_string_inputs(const Node& node, const std::vector<InferContext::InputInfo>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].desc && inputs[i].desc->dtype == DataType::kString)
      return error(StatusCode::kUnsupported, "input ", static_cast<uint64_t>(i), " ('",
                   i < node.inputs.size() && node.inputs[i] ? node.inputs[i]->name : std::string(),
                   "') holds strings (", inputs[i].desc->to_string(), "); graft's ", node.op_type,
                   " does not take string tensors (the ops that do: Cast, CastLike, Identity, StringNormalizer)")
          .with_node(node.name, node.op_type);
  return Status::ok();
}

}  // namespace

Status infer_node(const Node& node, const std::vector<InferContext::InputInfo>& inputs,
                  std::vector<TensorDesc>* out_descs,
                  std::vector<std::optional<std::vector<Dim>>>* out_sym_values) {
  out_sym_values->assign(node.outputs.size(), std::nullopt);
  const OpEntry* op = find_op_entry(node);
  if (!op)
    return error(StatusCode::kUnsupported, "no builtin op '", node.domain.empty() ? "" : node.domain + "::",
                 node.op_type, "'")
        .with_node(node.name, node.op_type);
  if (!op->takes_containers) GRAFT_RETURN_IF_ERROR(check_tensor_inputs(node, inputs));
  if (!op->takes_strings) GRAFT_RETURN_IF_ERROR(check_no_string_inputs(node, inputs));
  InferContext ctx(node, inputs, node.opset);
  Status st = op->infer(ctx);
  if (!st) return st.with_node(node.name, node.op_type);
  *out_descs = ctx.outputs();
  *out_sym_values = ctx.output_sym_values();
  // And only they make them (a dtype attribute or a value tensor could name string otherwise).
  for (size_t o = 0; o < out_descs->size() && !op->takes_strings; ++o)
    if ((*out_descs)[o].dtype == DataType::kString)
      return error(StatusCode::kUnsupported, "output ", static_cast<uint64_t>(o), " would hold strings; graft's ",
                   node.op_type, " does not make string tensors (the ops that do: Cast, CastLike, Constant, Identity, ",
                   "StringNormalizer)")
          .with_node(node.name, node.op_type);
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    if (node.outputs[o] && (*out_descs)[o].dtype == DataType::kUndefined)
      return error(StatusCode::kInternal, "inference left output ", static_cast<uint64_t>(o), " ('",
                   node.outputs[o]->name, "') without a dtype")
          .with_node(node.name, node.op_type);
  }
  return check_output_shapes(node, *out_descs);
}

Result<std::vector<TensorDesc>> infer_node_concrete(const Node& node, const std::vector<const Tensor*>& inputs) {
  std::vector<TensorDesc> in_descs(inputs.size());
  std::vector<InferContext::InputInfo> infos(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) continue;
    in_descs[i] = desc_of_value(*inputs[i]);
    infos[i].desc = &in_descs[i];
    // Kernels read host values for data-dependent shapes (Reshape, Range...): device tensors have none.
    if (inputs[i]->device() == DeviceType::kCPU) infos[i].value = inputs[i];
  }
  std::vector<TensorDesc> out;
  std::vector<std::optional<std::vector<Dim>>> syms;
  GRAFT_RETURN_IF_ERROR(infer_node(node, infos, &out, &syms));
  // An op whose kernel sizes its outputs (NonZero, NonMaxSuppression) keeps symbolic dimensions here:
  // its known rank and constant dims are checked against what the kernel allocates.
  const bool from_kernel = output_shape_from_kernel(node);
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    if (!node.outputs[o]) continue;
    if (from_kernel && o < out.size() && out[o].shape) continue;
    // A sequence or optional is made whole by its kernel; the shapes it holds may differ.
    if (o < out.size() && !out[o].is_tensor()) continue;
    if (o >= out.size() || !out[o].shape || !shape_is_static(*out[o].shape))
      return error(StatusCode::kInternal, "output ", static_cast<uint64_t>(o), " has no concrete shape (",
                   o < out.size() ? out[o].to_string() : std::string("missing"), ") for concrete inputs")
          .with_node(node.name, node.op_type);
  }
  return out;
}

namespace {

// Declared graph output desc vs inferred: dtypes must match, ranks must match, constant dims equal.
Status check_declared(const Value& v, const TensorDesc& declared, const TensorDesc& inferred, const Node& n) {
  // An output declared without a type has the default desc (an undefined tensor): nothing to compare.
  const bool typed = declared.dtype != DataType::kUndefined || !declared.is_tensor();
  if (typed && declared.kind != inferred.kind)
    return error(StatusCode::kInvalidModel, "graph output '", v.name, "' is declared a ", value_kind_name(declared.kind),
                 " but the graph computes a ", value_kind_name(inferred.kind), " (", inferred.to_string(), ")")
        .with_node(n.name, n.op_type);
  if (declared.dtype != DataType::kUndefined && declared.dtype != inferred.dtype)
    return error(StatusCode::kInvalidModel, "graph output '", v.name, "' is declared ",
                 dtype_name(declared.dtype), " but the graph computes ", dtype_name(inferred.dtype))
        .with_node(n.name, n.op_type);
  if (!declared.shape || !inferred.shape) return Status::ok();
  if (declared.shape->size() != inferred.shape->size())
    return error(StatusCode::kInvalidModel, "graph output '", v.name, "' is declared with shape ",
                 shape_to_string(*declared.shape), " but the graph computes ", shape_to_string(*inferred.shape))
        .with_node(n.name, n.op_type);
  for (size_t i = 0; i < declared.shape->size(); ++i) {
    const Dim& a = (*declared.shape)[i];
    const Dim& b = (*inferred.shape)[i];
    if (a.is_const() && b.is_const() && a.value() != b.value())
      return error(StatusCode::kInvalidModel, "graph output '", v.name, "' is declared with shape ",
                   shape_to_string(*declared.shape), " but the graph computes ",
                   shape_to_string(*inferred.shape))
          .with_node(n.name, n.op_type);
  }
  return Status::ok();
}

}  // namespace

Status infer_shapes(Graph& graph) {
  GRAFT_RETURN_IF_ERROR(graph.topological_sort());
  for (auto& up : graph.nodes()) {
    Node& n = *up;
    std::vector<InferContext::InputInfo> infos;
    for (Value* v : n.inputs) {
      InferContext::InputInfo info;
      if (v) {
        info.desc = &v->desc;
        info.value = v->constant ? &*v->constant : nullptr;
        info.sym_value = v->sym_value ? &*v->sym_value : nullptr;
      }
      infos.push_back(info);
    }
    std::vector<TensorDesc> descs;
    std::vector<std::optional<std::vector<Dim>>> syms;
    GRAFT_RETURN_IF_ERROR(infer_node(n, infos, &descs, &syms));
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      Value* v = n.outputs[o];
      if (!v) continue;
      if (o >= descs.size())
        return error(StatusCode::kInternal, "inference produced no desc for output ", static_cast<uint64_t>(o))
            .with_node(n.name, n.op_type);
      if (v->is_graph_output) GRAFT_RETURN_IF_ERROR(check_declared(*v, v->desc, descs[o], n));
      v->desc = descs[o];
      v->sym_value = o < syms.size() ? syms[o] : std::nullopt;
    }
  }
  return Status::ok();
}

}  // namespace graft
