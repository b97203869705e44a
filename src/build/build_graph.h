// Builds an engine from a graph already in graft's IR, through the same builder as an ONNX file
// (profiles, inference, folding, the device's passes), without tactic-timing candidates: for the
// op-test harness, which runs one node through a real engine where its kernel lives only inside one
// (the container and control-flow ops on CUDA, whose device pools belong to the engine's plan).
#pragma once

#include <memory>
#include <string>

#include "graft/engine.h"
#include "graph/graph.h"

namespace graft {

Result<std::shared_ptr<Engine>> build_engine_from_graph(std::unique_ptr<Graph> graph, const BuilderConfig& config,
                                                         const std::string& name_for_errors);

}  // namespace graft
