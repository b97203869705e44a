// Structural checks of an ONNX graph before it is handed to libonnx (its version converter and
// shape inference turn the protobuf into onnx::Graph with graphProtoToGraph, which dereferences a
// null value, SIGSEGV, for a name nothing defines). Found by fuzz_onnx_build (tests/fuzz).
#pragma once

#include <string>

#include "graft/status.h"

namespace onnx {
class ModelProto;
}

namespace graft {

// Every graph output (of the main graph and of every subgraph) is defined inside its graph (a graph
// input, an initializer or a node output), and every node input of the main graph is defined in
// it; subgraph node inputs may name values of enclosing graphs. The error names the value.
Status check_graph_references(const onnx::ModelProto& model);

}  // namespace graft
