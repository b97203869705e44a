// The CUDA runtime: an Engine whose contexts run each layer on the GPU through the builtin CUDA
// kernel table (cuda_ops.h) or a custom op's Backend::kCUDA kernel, with CPU-reference fallback
// (host<->device copies) for layers the GPU cannot run, a lifetime-planned activation arena, CUDA
// graphs and per-layer profiling. The public face is graft/cuda_engine.h.
#pragma once

#include <memory>

#include "graft/cuda_engine.h"
#include "runtime/device_engine.h"
#include "runtime/input_checks.h"

namespace graft::cuda {

// The builder's questions to the CUDA backend (runtime/device_engine.h): checks a GPU is present,
// records its compute capability and name in `state`, and answers which nodes the GPU runs and
// which of their inputs it reads on the host. The passes themselves are the builder's
// (src/build/device_passes.cpp).
Result<DeviceQueries> query_cuda_device(EngineState& state);

// `config` may be nullptr (plan load). Fails with kUnsupported when there is no GPU or the plan was
// built for another compute capability.
Result<std::shared_ptr<Engine>> make_cuda_engine(EngineState state, const BuilderConfig* config);

// Makes GPU `ordinal` the calling thread's current device (engines built or loaded afterwards use it).
Status select_device(int ordinal);

}  // namespace graft::cuda
