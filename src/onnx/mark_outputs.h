// Layerwise comparison support (Polygraphy's `--onnx-outputs mark all`): every tensor a node of the
// main graph computes becomes a graph output of the ONNX model, before anything is built.
//
// Marking happens on the ONNX model, not on graft's optimized graph, for two reasons: the names are
// the model's own (so two backends, or two models, line up by name), and graft's passes keep a value
// that is a graph output (fusion, folding and dead-node elimination all check is_graph_output), so the
// engine computes every marked tensor instead of fusing it away. The price: a marked engine is less
// fused than the real one, and the fp16 pass keeps graph outputs in float32.
#pragma once

#include <string>
#include <vector>

#include "graft/status.h"

namespace graft {

// One node of the model, in topological order, and the tensors it computes.
struct MarkedLayer {
  std::string name;     // the node's name ("" in the model: "<op_type>#<index>")
  std::string op_type;  // "Conv", or "domain::Op" for a custom-domain node
  std::vector<std::string> outputs;
};

struct MarkedModel {
  std::string bytes;                 // the model with every layer output marked
  std::vector<MarkedLayer> layers;   // topological order (Constant nodes left out: they compute nothing)
  std::vector<std::string> original_outputs;
};

// Parses an ONNX model and marks every output of every main-graph node (Constant nodes excepted) as a
// graph output, by name only (its type is inferred at import). Errors name the file.
Result<MarkedModel> mark_all_outputs(const std::string& bytes, const std::string& name_for_errors);

}  // namespace graft
