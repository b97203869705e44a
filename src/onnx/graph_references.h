// Structural checks of an ONNX model before it is handed to libonnx's version converter. The
// converter turns the protobuf into onnx::Graph (graphProtoToGraph, which dereferences a null value
// for a name nothing defines), and its adapters index a node's inputs as the op's schema promises
// (Scatter 10->11 reads input 2 of a node that may have two). Both crashed on fuzzed models
// (fuzz_onnx_build, tests/fuzz; FZ4, FZ5 in tests/data/fuzz_regressions).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>

#include "graft/status.h"

namespace onnx {
class GraphProto;
class ModelProto;
}

namespace graft {

// Every graph output (of the main graph and of every subgraph) is defined inside its graph (a graph
// input, an initializer or a node output), and every node input of the main graph is defined in
// it; subgraph node inputs may name values of enclosing graphs. Every default-domain node (in
// subgraphs too) passes its ONNX schema's check at `default_opset` (input and output counts,
// attribute types, required attributes). The error names the value or the node.
Status check_model_for_libonnx(const onnx::ModelProto& model, int64_t default_opset);

// The names `g` itself defines (inputs, initializers, node outputs): what its subgraphs may read.
std::unordered_set<std::string> names_defined_in(const onnx::GraphProto& g);

}  // namespace graft
