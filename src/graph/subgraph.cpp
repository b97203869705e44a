#include "graph/subgraph.h"

#include <map>
#include <set>

#include "graph/pass_util.h"
#include "graph/passes.h"

namespace graft {

Status subgraph_error(const Node& node, const std::string& attr, const Status& inner) {
  // The inner status already names the inner node; the outer node and attribute are added around it
  // so the message reads from the model's node down to the failing one.
  return Status(inner.code(), "subgraph '" + attr + "': " + inner.to_string())
      .with_attribute(attr)
      .with_node(node.name, node.op_type);
}

std::optional<bool> constant_bool(const Value* v) {
  if (!v || !v->constant || !v->constant->is_tensor() || v->constant->dtype() != DataType::kBool ||
      v->constant->numel() != 1)
    return std::nullopt;
  return v->constant->get(0) != 0;
}

bool copyable_subgraph(const Graph& sub) {
  std::set<const Value*> known(sub.inputs().begin(), sub.inputs().end());
  known.insert(sub.captures.begin(), sub.captures.end());
  const auto ready = [&known](const Value* v) { return !v || known.count(v) || (v->constant && !v->producer); };
  for (const auto& n : sub.nodes()) {
    if (!n->subgraphs.empty()) return false;
    for (const Value* v : n->inputs)
      if (!ready(v)) return false;
    known.insert(n->outputs.begin(), n->outputs.end());
  }
  for (const Value* v : sub.outputs())
    if (!v || !ready(v)) return false;
  return true;
}

std::map<const Value*, Value*> outer_bindings(Graph& g, const Node& node, const Graph& sub) {
  std::map<const Value*, Value*> bound;
  for (size_t k = 0; k < sub.captures.size() && node.explicit_inputs() + k < node.inputs.size(); ++k)
    bound[sub.captures[k]] = node.inputs[node.explicit_inputs() + k];
  for (const auto& [name, v] : sub.values())
    if (v->constant && !v->producer && !bound.count(v.get()))
      bound[v.get()] = g.new_constant(node.name + "_" + name, *v->constant);
  return bound;
}

Status copy_subgraph_nodes(Graph& g, const Node& node, const Graph& sub, const std::string& suffix,
                           std::map<const Value*, Value*>& map, NodeNamer& namer) {
  const auto bound = [&](const Value* v) -> Result<Value*> {
    if (!v) return static_cast<Value*>(nullptr);
    auto it = map.find(v);
    if (it == map.end())
      return error(StatusCode::kInternal, node.op_type, " '", node.name, "': subgraph value '", v->name,
                   "' is read before it is made");
    return it->second;
  };
  for (const auto& sn : sub.nodes()) {
    Node* n = g.add_node(namer(node.name + "/" + sn->name + suffix), sn->op_type, sn->domain);
    n->opset = sn->opset;
    n->attrs = sn->attrs;
    n->custom_op = sn->custom_op;
    n->precision = strictest_precision(node.precision, sn->precision);
    for (const Value* in : sn->inputs) {
      GRAFT_ASSIGN_OR_RETURN(Value* v, bound(in));
      n->inputs.push_back(v);
    }
    for (const Value* out : sn->outputs) {
      Value* v = nullptr;
      if (out) {
        v = g.new_value(node.name + "_" + out->name + suffix);
        v->producer = n;
        map[out] = v;
      }
      n->outputs.push_back(v);
    }
  }
  return Status::ok();
}

Result<int> remove_copied_nodes(Graph& g, const std::set<const Node*>& done) {
  if (done.empty()) return 0;
  g.remove_nodes_if([&](const Node* n) { return done.count(n) != 0; });
  remove_identities(g);
  GRAFT_RETURN_IF_ERROR(g.topological_sort());
  g.prune_values();
  return static_cast<int>(done.size());
}

Result<const Graph*> node_subgraph(const Node& node, const std::string& attr) {
  auto it = node.subgraphs.find(attr);
  if (it == node.subgraphs.end() || !it->second)
    return error(StatusCode::kInvalidModel, "the graph attribute '", attr, "' is missing")
        .with_attribute(attr)
        .with_node(node.name, node.op_type);
  if (it->second->captures.size() != node.implicit_inputs)
    return error(StatusCode::kInternal, "subgraph '", attr, "' binds ",
                 static_cast<uint64_t>(it->second->captures.size()), " outer values but the node passes ",
                 static_cast<uint64_t>(node.implicit_inputs))
        .with_node(node.name, node.op_type);
  return it->second.get();
}

std::optional<Shape> merge_shapes(const std::optional<Shape>& a, const std::optional<Shape>& b,
                                  const std::function<Dim()>& fresh) {
  if (!a || !b || a->size() != b->size()) return std::nullopt;
  Shape out;
  for (size_t i = 0; i < a->size(); ++i) out.push_back((*a)[i].same_as((*b)[i]) ? (*a)[i] : fresh());
  return out;
}

Status infer_subgraph(const Node& node, const std::string& attr, const Graph& sub,
                      const std::vector<InferContext::InputInfo>& inputs,
                      const std::vector<InferContext::InputInfo>& captures, std::vector<SubgraphInfo>* outputs,
                      std::map<const Value*, TensorDesc>* value_descs) {
  auto fail = [&](auto&&... parts) {
    return error(StatusCode::kInvalidModel, "subgraph '", attr, "' ", parts...)
        .with_attribute(attr)
        .with_node(node.name, node.op_type);
  };
  if (inputs.size() != sub.inputs().size())
    return fail("has ", static_cast<uint64_t>(sub.inputs().size()), " inputs but the node passes it ",
                static_cast<uint64_t>(inputs.size()));
  if (captures.size() != sub.captures.size())
    return error(StatusCode::kInternal, "subgraph '", attr, "' binds ", static_cast<uint64_t>(sub.captures.size()),
                 " outer values but ", static_cast<uint64_t>(captures.size()), " are given")
        .with_node(node.name, node.op_type);

  struct Known {
    TensorDesc desc;
    const Tensor* value = nullptr;
    std::optional<std::vector<Dim>> sym;
  };
  std::map<const Value*, Known> known;
  auto bind = [&](const Value* v, const InferContext::InputInfo& info) {
    Known& k = known[v];
    k.desc = *info.desc;
    k.value = info.value;
    if (info.sym_value) k.sym = *info.sym_value;
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value* v = sub.inputs()[i];
    if (!inputs[i].desc) return fail("input ", static_cast<uint64_t>(i), " ('", v->name, "') is not given");
    const DataType given = inputs[i].desc->dtype;
    if (v->desc.dtype != DataType::kUndefined && v->desc.dtype != given)
      return fail("input ", static_cast<uint64_t>(i), " ('", v->name, "') is declared ", dtype_name(v->desc.dtype),
                  " but receives ", dtype_name(given));
    bind(v, inputs[i]);
  }
  for (size_t i = 0; i < captures.size(); ++i)
    if (captures[i].desc) bind(sub.captures[i], captures[i]);

  auto info_of = [&](const Value* v, InferContext::InputInfo* info) -> bool {
    if (!v) return true;
    if (v->constant) {
      info->desc = &v->desc;
      info->value = &*v->constant;
      return true;
    }
    auto it = known.find(v);
    if (it == known.end()) return false;
    info->desc = &it->second.desc;
    info->value = it->second.value;
    info->sym_value = it->second.sym ? &*it->second.sym : nullptr;
    return true;
  };
  for (const auto& up : sub.nodes()) {
    const Node& n = *up;
    std::vector<InferContext::InputInfo> infos(n.inputs.size());
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (!info_of(n.inputs[i], &infos[i]))
        return fail("reads '", n.inputs[i]->name, "' before anything computes it (node '", n.name, "')");
    std::vector<TensorDesc> descs;
    std::vector<std::optional<std::vector<Dim>>> syms;
    if (Status st = infer_node(n, infos, &descs, &syms); !st) return subgraph_error(node, attr, st);
    for (size_t o = 0; o < n.outputs.size() && o < descs.size(); ++o) {
      if (!n.outputs[o]) continue;
      Known& k = known[n.outputs[o]];
      k.desc = descs[o];
      k.sym = o < syms.size() ? syms[o] : std::nullopt;
    }
  }
  if (value_descs)
    for (const auto& [v, k] : known) (*value_descs)[v] = k.desc;
  outputs->clear();
  for (const Value* v : sub.outputs()) {
    InferContext::InputInfo info;
    if (!info_of(v, &info)) return fail("output '", v->name, "' is not computed");
    outputs->push_back(SubgraphInfo{*info.desc, info.value});
  }
  return Status::ok();
}

}  // namespace graft
