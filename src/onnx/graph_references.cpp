#include "onnx/graph_references.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <exception>
#include <unordered_set>
#include <vector>

namespace graft {

std::unordered_set<std::string> names_defined_in(const onnx::GraphProto& g) {
  std::unordered_set<std::string> defined;
  for (const auto& vi : g.input()) defined.insert(vi.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& n : g.node())
    for (const auto& o : n.output())
      if (!o.empty()) defined.insert(o);
  return defined;
}

namespace {

Status check_graph(const onnx::GraphProto& g, const std::vector<const std::unordered_set<std::string>*>& outer,
                   int64_t opset, int depth) {
  // A chain of nested subgraphs this deep is not a model anyone exported: refuse it rather than
  // recurse without bound.
  if (depth > 64)
    return error(StatusCode::kInvalidModel, "graph '", g.name(), "' nests subgraphs more than 64 levels deep");
  const std::unordered_set<std::string> defined = names_defined_in(g);
  auto visible = [&](const std::string& name) {
    if (defined.count(name)) return true;
    for (const auto* scope : outer)
      if (scope->count(name)) return true;
    return false;
  };
  for (const auto& vi : g.output())
    if (!defined.count(vi.name()))
      return error(StatusCode::kInvalidModel, "graph '", g.name(), "': output '", vi.name(),
                   "' is not a graph input, an initializer or the output of any node");
  for (const auto& n : g.node()) {
    for (const auto& in : n.input())
      if (!in.empty() && !visible(in))
        return error(StatusCode::kInvalidModel, "input '", in, "' is not defined in graph '", g.name(), "'")
            .with_node(n.name(), n.op_type());
    if (!n.domain().empty() && n.domain() != "ai.onnx") continue;
    const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(opset), "");
    if (!schema) continue;  // an op ONNX did not have at this opset: the converter says so
    try {
      schema->Verify(n);
    } catch (const std::exception& e) {
      std::string why = e.what();  // onnx appends "\n\n==> Context: <the node>"; the first line says it
      why = why.substr(0, why.find('\n'));
      return error(StatusCode::kInvalidModel, "the node does not match the ", n.op_type(), " of opset ", opset,
                   ": ", why)
          .with_node(n.name(), n.op_type());
    }
  }
  std::vector<const std::unordered_set<std::string>*> inner = outer;
  inner.push_back(&defined);
  for (const auto& n : g.node())
    for (const auto& a : n.attribute()) {
      if (a.has_g()) GRAFT_RETURN_IF_ERROR(check_graph(a.g(), inner, opset, depth + 1));
      for (const auto& sg : a.graphs()) GRAFT_RETURN_IF_ERROR(check_graph(sg, inner, opset, depth + 1));
    }
  return Status::ok();
}

}  // namespace

Status check_model_for_libonnx(const onnx::ModelProto& model, int64_t default_opset) {
  return check_graph(model.graph(), {}, default_opset, 0);
}

}  // namespace graft
