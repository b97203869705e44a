// The CUDA runtime: an Engine whose contexts run each layer on the GPU through the builtin CUDA
// kernel table (cuda_ops.h) or a custom op's Backend::kCUDA kernel, with CPU-reference fallback
// (host<->device copies) for layers the GPU cannot run, a lifetime-planned activation arena, CUDA
// graphs and per-layer profiling. The public face is graft/cuda_engine.h.
#pragma once

#include <memory>

#include "graft/cuda_engine.h"
#include "runtime/cpu_engine.h"

namespace graft::cuda {

// Builder step for device == kCUDA: checks a GPU is present, records its compute capability, and
// runs the FP16 precision pass when config.fp16.
Status prepare_cuda_state(EngineState& state, const BuilderConfig& config);

// `config` may be nullptr (plan load). Fails with kUnsupported when there is no GPU or the plan was
// built for another compute capability.
Result<std::shared_ptr<Engine>> make_cuda_engine(EngineState state, const BuilderConfig* config);

// Makes GPU `ordinal` the calling thread's current device (engines built or loaded afterwards use it).
Status select_device(int ordinal);

}  // namespace graft::cuda
