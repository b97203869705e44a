#include "runtime/device_engine.h"

#ifdef GRAFT_WITH_CUDA
#include "backends/cuda/cuda_engine.h"
#include "backends/cuda/cuda_ops.h"
#endif

namespace graft {

Result<std::shared_ptr<Engine>> make_engine_for_device(EngineState state, const BuilderConfig* config) {
  if (state.device == DeviceType::kCPU) return make_cpu_engine(std::move(state));
#ifdef GRAFT_WITH_CUDA
  return cuda::make_cuda_engine(std::move(state), config);
#else
  (void)config;
  return error(StatusCode::kUnsupported, "this engine is for device cuda, but this graft was built without CUDA "
               "(configure with -DGRAFT_ENABLE_CUDA=ON): run it with a graft built with CUDA, or build a CPU "
               "engine from the ONNX model");
#endif
}

Status prepare_state_for_device(EngineState& state, const BuilderConfig& config) {
  if (state.device == DeviceType::kCPU) return Status::ok();
#ifdef GRAFT_WITH_CUDA
  return cuda::prepare_cuda_state(state, config);
#else
  (void)config;
  return check_device_compiled(state.device);
#endif
}

Status check_device_compiled(DeviceType device) {
#ifndef GRAFT_WITH_CUDA
  if (device == DeviceType::kCUDA)
    return error(StatusCode::kUnsupported, "a CUDA engine needs CUDA, but this graft was built without CUDA "
                 "(configure with -DGRAFT_ENABLE_CUDA=ON); build a CPU engine instead");
#endif
  (void)device;
  return Status::ok();
}

bool builtin_has_cuda_kernel(const std::string& op_type) {
#ifdef GRAFT_WITH_CUDA
  return cuda::find_cuda_op(op_type) != nullptr;
#else
  (void)op_type;
  return false;
#endif
}

Status select_cuda_device(int ordinal) {
#ifdef GRAFT_WITH_CUDA
  return cuda::select_device(ordinal);
#else
  (void)ordinal;
  return check_device_compiled(DeviceType::kCUDA);
#endif
}

}  // namespace graft
