// The Engine and ExecutionContext of graft's CPU runtime: the optimized graph, run node by node
// through the CPU reference kernels.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "build/tactics.h"
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
  // CUDA engines (device == kCUDA): the GPU the plan was built for, and whether CUDA graphs are on.
  int cuda_compute_capability = 0;  // major * 10 + minor, e.g. 90 for sm_90
  std::string cuda_device_name;
  bool cuda_graphs = true;
  // Tactics chosen by timing at build time (CUDA): stored in the plan. Shared, so the CUDA engine
  // can fill it while it tunes; never null.
  std::shared_ptr<TacticTable> tactics = std::make_shared<TacticTable>();
};

Result<std::shared_ptr<Engine>> make_cpu_engine(EngineState state);

// The state of an engine made by make_cpu_engine (nullptr for other engines). Lets the CUDA engine
// reuse the CPU engine's descriptions and plan writer.
const EngineState* cpu_engine_state(const Engine& engine);

}  // namespace graft
