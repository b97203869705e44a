#include "onnx/mark_outputs.h"

#include <onnx/onnx_pb.h>

#include <limits>
#include <set>

namespace graft {

Result<MarkedModel> mark_all_outputs(const std::string& bytes, const std::string& name_for_errors) {
  onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    return error(StatusCode::kUnsupported, "models over 2 GiB must keep their weights in external data")
        .with_file(name_for_errors);
  if (bytes.empty() || !model.ParseFromString(bytes) || !model.has_graph())
    return error(StatusCode::kInvalidModel, "not a valid ONNX model (marking every tensor as an output needs one)")
        .with_file(name_for_errors);
  onnx::GraphProto* g = model.mutable_graph();
  MarkedModel out;
  std::set<std::string> outputs, available;
  for (const auto& o : g->output()) {
    outputs.insert(o.name());
    out.original_outputs.push_back(o.name());
  }
  for (const auto& i : g->input()) available.insert(i.name());
  for (const auto& t : g->initializer()) available.insert(t.name());

  // ONNX requires nodes in topological order, but files break the rule; the report's "first layer
  // that diverges" is only meaningful in a real topological order, so nodes are placed when their
  // inputs exist, preferring file order (one pass for a well-formed file).
  const int n = g->node_size();
  std::vector<int> order;
  std::vector<bool> placed(static_cast<size_t>(n), false);
  for (bool progress = true; progress && static_cast<int>(order.size()) < n;) {
    progress = false;
    for (int i = 0; i < n; ++i) {
      if (placed[static_cast<size_t>(i)]) continue;
      bool ready = true;
      for (const auto& in : g->node(i).input()) ready &= in.empty() || available.count(in) > 0;
      if (!ready) continue;
      placed[static_cast<size_t>(i)] = progress = true;
      order.push_back(i);
      for (const auto& o : g->node(i).output()) available.insert(o);
    }
  }
  // A node whose inputs never appear (a broken model, or one reading a subgraph capture) keeps its
  // file position at the end; the importer reports what is wrong with it.
  for (int i = 0; i < n; ++i)
    if (!placed[static_cast<size_t>(i)]) order.push_back(i);

  std::set<std::string> inputs;
  for (const auto& i : g->input()) inputs.insert(i.name());
  for (int i : order) {
    const onnx::NodeProto& node = g->node(i);
    const bool builtin = node.domain().empty() || node.domain() == "ai.onnx";
    if (builtin && node.op_type() == "Constant") continue;
    MarkedLayer layer;
    layer.op_type = builtin ? node.op_type() : node.domain() + "::" + node.op_type();
    layer.name = !node.name().empty() ? node.name() : node.op_type() + "#" + std::to_string(i);
    for (const auto& o : node.output()) {
      if (o.empty()) continue;  // an optional output the node does not produce
      layer.outputs.push_back(o);
      // A name-only output: its dtype and shape come from graft's inference, so no declared type
      // can disagree with it.
      if (!inputs.count(o) && outputs.insert(o).second) g->add_output()->set_name(o);
    }
    out.layers.push_back(std::move(layer));
  }
  if (!model.SerializeToString(&out.bytes))
    return error(StatusCode::kInternal, "could not serialize the marked model").with_file(name_for_errors);
  return out;
}

}  // namespace graft
