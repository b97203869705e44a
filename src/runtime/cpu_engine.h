// The Engine and ExecutionContext of graft's CPU runtime: the optimized graph, run node by node
// through the CPU reference kernels.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "graft/engine.h"
#include "graph/graph.h"

namespace graft {

// Everything an engine is made of; also exactly what a plan stores.
struct EngineState {
  std::unique_ptr<Graph> graph;
  std::map<std::string, ProfileRange> profile;  // dynamic inputs only
  DeviceType device = DeviceType::kCPU;
  bool fp16 = false;
  std::string source;  // model path the engine was built from
};

Result<std::shared_ptr<Engine>> make_cpu_engine(EngineState state);

}  // namespace graft
