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
  // The optimization profiles, profile 0 first; always at least one (empty without dynamic
  // inputs). Each names the same inputs: those that stay dynamic in the graph.
  std::vector<OptimizationProfile> profiles = std::vector<OptimizationProfile>(1);
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

// An error naming `index` and how many profiles there are, unless 0 <= index < count.
Status check_profile_index(int index, size_t count);

// Checks a run's input `v` (its dims of the right rank) against profile `index` of `st`: each
// dimension the graph leaves dynamic must lie in that profile's [min, max]. The error names the
// input, the shape given, the profile and its range, and a profile that covers the shape if one does.
// Shared by the CPU and CUDA contexts, so both word it the same.
Status check_input_in_profile(const EngineState& st, int index, const Value& v, const std::vector<int64_t>& dims);

// The state of an engine made by make_cpu_engine (nullptr for other engines). Lets the CUDA engine
// reuse the CPU engine's descriptions and plan writer.
const EngineState* cpu_engine_state(const Engine& engine);

}  // namespace graft
