// Picks the runtime for an engine state's device: the CPU engine, or the device backend registered
// for it (the CUDA engine, in a graft built with CUDA). Used by the builder and by plan loading
// (Engine::deserialize and Engine::load_plan, defined in device_engine.cpp over plan/plan.h's reader).
// The runtime includes no backend: a backend reaches it through DeviceBackend below.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graft/engine.h"
#include "ops/operator.h"
#include "plan/engine_state.h"

namespace graft {

// `config` is the build configuration (nullptr when loading a plan); build progress and warnings
// (CPU-fallback layers) are reported through it.
Result<std::shared_ptr<Engine>> make_engine_for_device(EngineState state, const BuilderConfig* config);

// What a device backend tells the builder's passes (src/build/device_passes.cpp) about itself.
struct DeviceQueries {
  // Whether the device runs `node` with its current dtypes (a pass asks before it rewrites a node
  // into a form, float16 or a fused chain, that only the device would run).
  std::function<bool(const Node&)> runs;
  // The inputs of `node` the device reads on the host (shape tensors): they keep their dtype.
  std::function<std::vector<int>(const Node&)> host_inputs;
};

// What the runtime needs of a device backend (src/backends/<device>). Every entry is set.
struct DeviceBackend {
  // Makes the engine for a state of this device. `config` may be nullptr (plan load).
  Result<std::shared_ptr<Engine>> (*make_engine)(EngineState state, const BuilderConfig* config) = nullptr;
  // What query_device answers for this device.
  Result<DeviceQueries> (*query_device)(EngineState& state) = nullptr;
  // Makes device `ordinal` the calling thread's current one (select_cuda_device).
  Status (*select_device)(int ordinal) = nullptr;
  // The dtype keys of the backend's kernels for the builtin op `op_type` (ONNX or internal domain),
  // or nullptr when it has no kernel for it (an empty list: kernels whose values are containers).
  const std::vector<KernelDtypes>* (*builtin_kernel_dtypes)(const std::string& op_type) = nullptr;
};

// The backends compiled into this libgraft add themselves here. Defined in src/backends (the one
// place that knows which backends were built) and called once, on the runtime's first lookup, the
// way OpRegistry::global() calls register_graft_ops: an explicit call, not static initializers,
// which the linker may drop and which run in no set order.
class DeviceBackendRegistry {
 public:
  void add(DeviceType device, DeviceBackend backend);
  const DeviceBackend* find(DeviceType device) const;

 private:
  std::vector<std::pair<DeviceType, DeviceBackend>> backends_;
};
void register_builtin_backends(DeviceBackendRegistry& registry);

// The backend registered for `device`; nullptr for the CPU (the runtime's own engine) and for a
// device this graft was built without.
const DeviceBackend* find_device_backend(DeviceType device);

// Sets up `state.device` for a build and answers its queries (CUDA: selects the backend and
// records the compute capability and device name in the state). An error for the CPU (it has no
// device passes) and for a device this graft was built without.
Result<DeviceQueries> query_device(EngineState& state);

// An error when this build of graft has no runtime for `device` (CUDA in a build without CUDA);
// checked before a build imports anything.
Status check_device_compiled(DeviceType device);

// Whether this build of graft has a CUDA kernel for the builtin (default-domain) op `op_type`.
// False in a build without CUDA.
bool builtin_has_cuda_kernel(const std::string& op_type);
// The dtype keys of that kernel (what `graft ops` lists); nullptr where builtin_has_cuda_kernel is false.
const std::vector<KernelDtypes>* builtin_cuda_kernel_dtypes(const std::string& op_type);

// Makes CUDA device `ordinal` the calling thread's current device, so that engines built or loaded
// afterwards on this thread run there (`--device cuda:N`). An error naming the devices that exist,
// or that this graft has no CUDA.
Status select_cuda_device(int ordinal);

}  // namespace graft
