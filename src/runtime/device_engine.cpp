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

Status check_values_run_on(const Graph& g, DeviceType device) {
  if (device == DeviceType::kCPU) return Status::ok();
  auto refuse = [&](const Value* v) {
    return error(StatusCode::kUnsupported, "value '", v->name, "' is a ", value_kind_name(v->desc.kind), " (",
                 v->desc.to_string(), "): sequence and optional values run on the CPU engine only, not on ",
                 device_name(device), "; build a CPU engine for this model");
  };
  for (const Value* v : g.inputs())
    if (!v->desc.is_tensor()) return refuse(v);
  for (const auto& n : g.nodes()) {
    for (const Value* v : n->outputs)
      if (v && !v->desc.is_tensor()) return refuse(v).with_node(n->name, n->op_type);
    // A subgraph's values keep their imported descs (inference never writes into a subgraph), so
    // an op that makes or reads containers is what tells there; the ones that only pass them on
    // (Identity, control flow) get them from such an op or from the main graph.
    const BuiltinOp* op = n->custom_op ? nullptr : find_builtin_op(n->op_type);
    const bool passes_on = n->op_type == "Identity" || n->op_type == "If" || n->op_type == "Loop" || n->op_type == "Scan";
    if (op && op->takes_containers && !passes_on)
      return error(StatusCode::kUnsupported, n->op_type, " makes or reads sequence or optional values, which run on ",
                   "the CPU engine only, not on ", device_name(device), "; build a CPU engine for this model")
          .with_node(n->name, n->op_type);
    for (const auto& [attr, sub] : n->subgraphs)
      if (Status st = check_values_run_on(*sub, device); !st)
        return Status(st.code(), "subgraph '" + attr + "': " + st.to_string()).with_node(n->name, n->op_type);
  }
  return Status::ok();
}

Result<std::shared_ptr<Engine>> make_engine_for_device(EngineState state, const BuilderConfig* config) {
  if (state.device == DeviceType::kCPU) return make_cpu_engine(std::move(state));
  GRAFT_RETURN_IF_ERROR(check_values_run_on(*state.graph, state.device));
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
  GRAFT_RETURN_IF_ERROR(check_values_run_on(*state.graph, state.device));
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

bool builtin_has_cuda_kernel(const std::string& op_type) {
  const DeviceBackend* cuda = find_device_backend(DeviceType::kCUDA);
  return cuda && cuda->has_builtin_kernel(op_type);
}

Status select_cuda_device(int ordinal) {
  if (const DeviceBackend* cuda = find_device_backend(DeviceType::kCUDA)) return cuda->select_device(ordinal);
  return check_device_compiled(DeviceType::kCUDA);
}

}  // namespace graft
