// The builder's passes for a device target, as a named list the builder runs in order. A device
// backend only answers questions about itself (DeviceQueries, runtime/device_engine.h): which
// nodes it runs, which inputs it reads on the host. The passes and their order are the builder's.
#pragma once

#include <string>
#include <vector>

#include "graft/engine.h"
#include "runtime/device_engine.h"

namespace graft {

struct DevicePassContext {
  const BuilderConfig& config;
  const DeviceQueries& device;
};

// One pass: `name` is the progress stage it reports as; `run` rewrites the graph and returns the
// progress detail (empty: nothing to report). `enabled` says whether the configuration asks for it.
struct DevicePass {
  const char* name;
  bool (*enabled)(const BuilderConfig&);
  Result<std::string> (*run)(Graph&, const DevicePassContext&);
};

// The CUDA target's passes, in order (src/build/device_passes.cpp): Loops with a fixed trip count
// unrolled, view and reshape clean-up, convolution/GEMM epilogue fusion, FP16 precision, NHWC
// layout regions, GEMM scale/residual folding, elementwise chains, view composition and attention
// views.
const std::vector<DevicePass>& cuda_device_passes();

// Runs `passes` in order over `g` for a device that answers `device`, reporting each pass's detail
// through config.progress under its name, then infers shapes. Tests run the CUDA list on the CPU
// with a stand-in for the device. GRAFT_DISABLE_PASSES (pass names, comma-separated, as listed in
// cuda_device_passes) leaves those passes out, to measure what one pass does in one build
// environment; a name that is not a pass of the list is an error naming it.
Status run_device_pass_list(Graph& g, const std::vector<DevicePass>& passes, const BuilderConfig& config,
                            const DeviceQueries& device);

// The device's passes before its engine is made: asks the device about itself (for CUDA, also the
// compute capability and name recorded in the plan), then runs its pass list. No-op for the CPU.
Status run_device_passes(EngineState& state, const BuilderConfig& config);

}  // namespace graft
