// EngineState: everything an engine is made of, and exactly what a plan stores (plan/plan.h). The
// builder fills it, the plan reader returns it, and each runtime makes its engine from it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graft/engine.h"
#include "graph/graph.h"
#include "plan/tactics.h"

namespace graft {

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

}  // namespace graft
