// Picks the runtime for an engine state's device: the CPU engine, or (graft built with CUDA) the
// CUDA engine. Used by the builder and by plan loading.
#pragma once

#include <memory>
#include <string>

#include "graft/engine.h"
#include "runtime/cpu_engine.h"

namespace graft {

// `config` is the build configuration (nullptr when loading a plan); build progress and warnings
// (CPU-fallback layers) are reported through it.
Result<std::shared_ptr<Engine>> make_engine_for_device(EngineState state, const BuilderConfig* config);

// The builder's device-specific passes before the engine is made (FP16 precision, compute
// capability). No-op for the CPU.
Status prepare_state_for_device(EngineState& state, const BuilderConfig& config);

// An error when this build of graft has no runtime for `device` (CUDA in a build without CUDA);
// checked before a build imports anything.
Status check_device_compiled(DeviceType device);

// Sequences and optionals (ValueKind) have no device form: kUnsupported for any device but the CPU
// when `g` (or a subgraph of it) has one, naming the value and its node. Checked when a CUDA engine
// is built and when a plan is loaded onto one.
Status check_values_run_on(const Graph& g, DeviceType device);

// Whether this build of graft has a CUDA kernel for the builtin (default-domain) op `op_type`.
// False in a build without CUDA.
bool builtin_has_cuda_kernel(const std::string& op_type);

// Makes CUDA device `ordinal` the calling thread's current device, so that engines built or loaded
// afterwards on this thread run there (`--device cuda:N`). An error naming the devices that exist,
// or that this graft has no CUDA.
Status select_cuda_device(int ordinal);

}  // namespace graft
