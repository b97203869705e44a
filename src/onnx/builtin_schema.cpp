#include "onnx/builtin_schema.h"

#include <onnx/defs/data_type_utils.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <algorithm>

#include "core/utf8.h"
#include "graft/dtype.h"
#include "onnx/onnx_convert.h"

namespace graft {

namespace {

// The attribute types a graft AttrValue holds; graph-valued and other kinds are nullopt.
std::optional<AttrType> attr_type_of_proto(onnx::AttributeProto::AttributeType t) {
  using A = onnx::AttributeProto;
  switch (t) {
    case A::FLOAT: return AttrType::kFloat;
    case A::INT: return AttrType::kInt;
    case A::STRING: return AttrType::kString;
    case A::TENSOR: return AttrType::kTensor;
    case A::FLOATS: return AttrType::kFloats;
    case A::INTS: return AttrType::kInts;
    case A::STRINGS: return AttrType::kStrings;
    default: return std::nullopt;
  }
}

const char* proto_type_name(onnx::AttributeProto::AttributeType t) {
  using A = onnx::AttributeProto;
  if (std::optional<AttrType> a = attr_type_of_proto(t)) return attr_type_name(*a);
  switch (t) {
    case A::GRAPH: return "graph";
    case A::GRAPHS: return "graphs";
    case A::SPARSE_TENSOR: return "sparse_tensor";
    case A::SPARSE_TENSORS: return "sparse_tensors";
    case A::TYPE_PROTO: return "type_proto";
    case A::TYPE_PROTOS: return "type_protos";
    default: return "undefined";
  }
}

std::vector<IOSpec> io_specs(const std::vector<onnx::OpSchema::FormalParameter>& params) {
  std::vector<IOSpec> out;
  for (const auto& p : params) {
    IOSpec s;
    s.name = p.GetName();
    s.optional = p.GetOption() == onnx::OpSchema::Optional;
    if (p.GetOption() == onnx::OpSchema::Variadic)
      s.doc = "variadic, at least " + std::to_string(p.GetMinArity());
    for (const onnx::DataType& t : p.GetTypes()) {
      const onnx::TypeProto& tp = onnx::Utils::DataTypeUtils::ToTypeProto(t);
      DataType d;
      if (tp.has_tensor_type() && dtype_from_onnx(tp.tensor_type().elem_type(), &d)) s.dtypes.push_back(d);
    }
    std::sort(s.dtypes.begin(), s.dtypes.end());
    out.push_back(std::move(s));
  }
  return out;
}

Status check_graph(const onnx::GraphProto& g, int opset, int depth) {
  if (depth > 64) return Status::ok();  // deeper nesting is the importer's own error
  for (const auto& np : g.node()) {
    // A name that is not UTF-8 is the importer's to refuse (check_names_utf8), with its bytes
    // escaped: this message would print them raw.
    const bool utf8 = is_valid_utf8(np.name()) && is_valid_utf8(np.op_type());
    if (utf8 && (np.domain().empty() || np.domain() == "ai.onnx")) {
      const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(np.op_type(), opset, "");
      for (int i = 0; s && i < np.attribute_size(); ++i) {
        const onnx::AttributeProto& a = np.attribute(i);
        if (!is_valid_utf8(a.name())) continue;
        if (auto known = s->attributes().find(a.name()); known != s->attributes().end()) {
          // Typed as the schema says (strictly, as onnx.checker: an int where a float belongs is
          // refused too). An untyped attribute (very old exporters) is read by the field it sets.
          const auto want = known->second.type;
          if (a.type() != onnx::AttributeProto::UNDEFINED && a.type() != want)
            return error(StatusCode::kInvalidModel, "expected type ", proto_type_name(want), ", got ",
                         proto_type_name(a.type()))
                .with_node(np.name(), np.op_type())
                .with_attribute(a.name());
          continue;
        }
        std::string known;
        for (const auto& [name, spec] : s->attributes()) known += (known.empty() ? "" : ", ") + name;
        // The words of OpDef::validate_attributes, which refuses a custom node's unknown attribute.
        return error(StatusCode::kInvalidModel, "unknown attribute for op ", np.op_type(), "-", s->since_version(),
                     " (known: ", known.empty() ? "none" : known, ")")
            .with_node(np.name(), np.op_type())
            .with_attribute(a.name());
      }
    }
    for (const auto& a : np.attribute()) {
      if (a.has_g()) GRAFT_RETURN_IF_ERROR(check_graph(a.g(), opset, depth + 1));
      for (const auto& sub : a.graphs()) GRAFT_RETURN_IF_ERROR(check_graph(sub, opset, depth + 1));
    }
  }
  return Status::ok();
}

}  // namespace

int newest_schema_opset() {
  static const int newest = [] {
    const auto& map = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
    auto it = map.find(onnx::ONNX_DOMAIN);
    return it == map.end() ? 0 : it->second.second;
  }();
  return newest;
}

std::optional<BuiltinSchema> onnx_op_schema(const std::string& op_type, int opset) {
  if (opset < 1 || opset > newest_schema_opset()) return std::nullopt;
  const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(op_type, opset, "");
  if (!s) return std::nullopt;
  BuiltinSchema out;
  out.since_version = s->since_version();
  for (const auto& [name, a] : s->attributes()) {
    std::optional<AttrType> t = attr_type_of_proto(a.type);
    if (!t) {
      out.graph_attrs.push_back(name);
      continue;
    }
    AttrSpec spec;
    spec.name = name;
    spec.type = *t;
    spec.required = a.required;
    if (a.default_value.type() != onnx::AttributeProto::UNDEFINED)
      if (Result<AttrValue> d = attribute_from_proto(a.default_value, ""); d) spec.default_value = std::move(d).value();
    out.attrs.push_back(std::move(spec));
  }
  out.inputs = io_specs(s->inputs());
  out.outputs = io_specs(s->outputs());
  return out;
}

Status check_attribute_names(const onnx::GraphProto& graph, int opset) {
  // Opsets past the registry's: an op's newer versions may add attributes it does not know.
  if (opset < 1 || opset > newest_schema_opset()) return Status::ok();
  return check_graph(graph, opset, 0);
}

}  // namespace graft
