// The Engine and ExecutionContext of graft's CPU runtime: the optimized graph, run node by node
// through the CPU reference kernels.
#pragma once

#include <memory>
#include <vector>

#include "graft/engine.h"
#include "plan/engine_state.h"

namespace graft {

Result<std::shared_ptr<Engine>> make_cpu_engine(EngineState state);

}  // namespace graft
