// Graph -> onnx::ModelProto. The plan format stores the optimized graph this way, so one parser
// (protobuf) serves both models and plans.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <map>
#include <memory>

#include "onnx/importer.h"
#include "onnx/onnx_convert.h"
#include "ops/internal_ops.h"

namespace graft {

namespace {

void set_type(const TensorDesc& d, onnx::TypeProto* tp) {
  // Containers wrap the tensor type of what they hold, as the importer reads them back.
  if (is_optional_kind(d.kind)) tp = tp->mutable_optional_type()->mutable_elem_type();
  if (d.kind == ValueKind::kSequence || d.kind == ValueKind::kOptionalSequence)
    tp = tp->mutable_sequence_type()->mutable_elem_type();
  auto* tt = tp->mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(d.dtype));
  if (!d.shape) return;
  auto* sp = tt->mutable_shape();
  for (const Dim& dim : *d.shape) {
    auto* dp = sp->add_dim();
    // Expressions like (batch*3) have no ONNX spelling: leave them unknown, inference rebuilds them.
    if (dim.is_const()) dp->set_dim_value(dim.value());
    else if (dim.is_symbol()) dp->set_dim_param(dim.symbol_name());
  }
}

void attr_to_proto(const std::string& name, const AttrValue& v, onnx::AttributeProto* ap) {
  using A = onnx::AttributeProto;
  ap->set_name(name);
  switch (attr_type_of(v)) {
    case AttrType::kFloat: ap->set_type(A::FLOAT); ap->set_f(std::get<float>(v)); break;
    case AttrType::kInt: ap->set_type(A::INT); ap->set_i(std::get<int64_t>(v)); break;
    case AttrType::kString: ap->set_type(A::STRING); ap->set_s(std::get<std::string>(v)); break;
    case AttrType::kTensor:
      ap->set_type(A::TENSOR);
      tensor_to_proto(std::get<Tensor>(v), name, ap->mutable_t());
      break;
    case AttrType::kFloats:
      ap->set_type(A::FLOATS);
      for (float f : std::get<std::vector<float>>(v)) ap->add_floats(f);
      break;
    case AttrType::kInts:
      ap->set_type(A::INTS);
      for (int64_t i : std::get<std::vector<int64_t>>(v)) ap->add_ints(i);
      break;
    case AttrType::kStrings:
      ap->set_type(A::STRINGS);
      for (const auto& s : std::get<std::vector<std::string>>(v)) ap->add_strings(s);
      break;
  }
}

// One graph's inputs, initializers, nodes and outputs. `outer_names` renames the graph's captured
// values to the names their outer values have now (passes may have rewired a node's implicit input
// to a differently named value); the importer binds them by name again.
Status export_graph(const Graph& graph, const std::map<const Value*, std::string>& outer_names, onnx::GraphProto* gp) {
  auto name_of = [&](const Value* v) -> std::string {
    if (!v) return "";
    auto it = outer_names.find(v);
    return it == outer_names.end() ? v->name : it->second;
  };
  gp->set_name(graph.name);
  for (const Value* v : graph.inputs()) {
    auto* vi = gp->add_input();
    vi->set_name(v->name);
    set_type(v->desc, vi->mutable_type());
  }
  for (const auto& [name, v] : graph.values()) {
    if (!v->constant) continue;
    tensor_to_proto(*v->constant, name, gp->add_initializer());
  }
  for (const auto& n : graph.nodes()) {
    auto* np = gp->add_node();
    np->set_name(n->name);
    np->set_op_type(n->op_type);
    np->set_domain(n->domain);
    // Implicit inputs are not ONNX inputs: the subgraphs name them.
    for (size_t i = 0; i < n->explicit_inputs(); ++i) np->add_input(name_of(n->inputs[i]));
    for (const Value* v : n->outputs) np->add_output(v ? v->name : "");
    for (const auto& [name, value] : n->attrs.all()) attr_to_proto(name, value, np->add_attribute());
    for (const auto& [name, sub] : n->subgraphs) {
      if (sub->captures.size() != n->implicit_inputs)
        return error(StatusCode::kInternal, "subgraph '", name, "' binds ", static_cast<uint64_t>(sub->captures.size()),
                     " outer values but the node has ", static_cast<uint64_t>(n->implicit_inputs))
            .with_node(n->name, n->op_type);
      std::map<const Value*, std::string> renames;
      for (size_t k = 0; k < sub->captures.size(); ++k)
        renames[sub->captures[k]] = name_of(n->inputs[n->explicit_inputs() + k]);
      auto* ap = np->add_attribute();
      ap->set_name(name);
      ap->set_type(onnx::AttributeProto::GRAPH);
      GRAFT_RETURN_IF_ERROR(export_graph(*sub, renames, ap->mutable_g()));
    }
    if (n->custom_op) {
      // validate_attributes removed these; the loader needs them to find the same op again.
      const OpIdentity& id = n->custom_op->identity();
      attr_to_proto("plugin_version", AttrValue(id.version), np->add_attribute());
      attr_to_proto("plugin_namespace", AttrValue(id.plugin_namespace), np->add_attribute());
    }
  }
  for (const Value* v : graph.outputs()) {
    auto* vi = gp->add_output();
    vi->set_name(name_of(v));
    set_type(v->desc, vi->mutable_type());
  }
  return Status::ok();
}

}  // namespace

Status export_onnx_model(const Graph& graph, onnx::ModelProto* model) {
  model->set_ir_version(graph.ir_version ? graph.ir_version : 8);
  model->set_producer_name("graft");
  for (const auto& [domain, version] : graph.opset_imports) {
    auto* os = model->add_opset_import();
    os->set_domain(domain);
    os->set_version(version);
  }
  // ONNX wants every domain a node uses imported; the internal ops' domain has one version.
  if (!graph.opset_imports.count(kInternalDomain) &&
      std::any_of(graph.nodes().begin(), graph.nodes().end(),
                  [](const std::unique_ptr<Node>& n) { return n->domain == kInternalDomain; })) {
    auto* os = model->add_opset_import();
    os->set_domain(kInternalDomain);
    os->set_version(1);
  }
  return export_graph(graph, {}, model->mutable_graph());
}

}  // namespace graft
