#include "runtime/device_engine.h"

#include <filesystem>

#include "io/tensor_io.h"
#include "ops/operator.h"
#include "plan/plan.h"
#include "runtime/cpu_engine.h"

namespace graft {

void DeviceBackendRegistry::add(DeviceType device, DeviceBackend backend) {
  for (auto& [d, b] : backends_)
    if (d == device) {
      b = backend;
      return;
    }
  backends_.emplace_back(device, backend);
}

const DeviceBackend* DeviceBackendRegistry::find(DeviceType device) const {
  for (const auto& [d, b] : backends_)
    if (d == device) return &b;
  return nullptr;
}

const DeviceBackend* find_device_backend(DeviceType device) {
  // Filled once, thread-safely, then only read.
  static const DeviceBackendRegistry registry = [] {
    DeviceBackendRegistry r;
    register_builtin_backends(r);
    return r;
  }();
  return registry.find(device);
}

Result<std::shared_ptr<Engine>> make_engine_for_device(EngineState state, const BuilderConfig* config) {
  if (state.device == DeviceType::kCPU) return make_cpu_engine(std::move(state));
  if (const DeviceBackend* backend = find_device_backend(state.device))
    return backend->make_engine(std::move(state), config);
  // CUDA is the only device besides the CPU, so a missing backend means a graft built without it.
  return error(StatusCode::kUnsupported, "this engine is for device cuda, but this graft was built without CUDA "
               "(configure with -DGRAFT_ENABLE_CUDA=ON): run it with a graft built with CUDA, or build a CPU "
               "engine from the ONNX model");
}

// Plan loading: the plan layer reads the state, the device's runtime makes the engine.
Result<std::shared_ptr<Engine>> Engine::deserialize(const std::string& bytes, const std::string& name_for_errors) {
  auto st = read_plan_bytes(bytes, name_for_errors);
  if (!st) return std::move(st).take_status();
  // A plan that cannot run here (built for CUDA, loaded without CUDA or a GPU, or for another GPU)
  // names the plan.
  auto engine = make_engine_for_device(std::move(st).value(), nullptr);
  if (!engine) return std::move(engine).take_status().with_file(name_for_errors);
  return engine;
}

Result<std::shared_ptr<Engine>> Engine::load_plan(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return error(StatusCode::kNotFound, "plan file not found").with_file(path);
  auto bytes = io::read_file(path);
  if (!bytes) return std::move(bytes).take_status();
  return deserialize(*bytes, path);
}

Result<DeviceQueries> query_device(EngineState& state) {
  if (state.device == DeviceType::kCPU)
    return error(StatusCode::kInternal, "the CPU engine has no device passes to answer queries for");
  if (const DeviceBackend* backend = find_device_backend(state.device)) return backend->query_device(state);
  GRAFT_RETURN_IF_ERROR(check_device_compiled(state.device));
  return error(StatusCode::kUnsupported, "no runtime for device ", static_cast<int>(state.device));
}

Status check_device_compiled(DeviceType device) {
  if (device == DeviceType::kCUDA && !find_device_backend(device))
    return error(StatusCode::kUnsupported, "a CUDA engine needs CUDA, but this graft was built without CUDA "
                 "(configure with -DGRAFT_ENABLE_CUDA=ON); build a CPU engine instead");
  return Status::ok();
}

const std::vector<KernelDtypes>* builtin_cuda_kernel_dtypes(const std::string& op_type) {
  const DeviceBackend* cuda = find_device_backend(DeviceType::kCUDA);
  return cuda ? cuda->builtin_kernel_dtypes(op_type) : nullptr;
}

bool builtin_has_cuda_kernel(const std::string& op_type) { return builtin_cuda_kernel_dtypes(op_type) != nullptr; }

Status select_cuda_device(int ordinal) {
  if (const DeviceBackend* cuda = find_device_backend(DeviceType::kCUDA)) return cuda->select_device(ordinal);
  return check_device_compiled(DeviceType::kCUDA);
}

}  // namespace graft
