#include "tools/graft/model_options.h"

#include <cstdio>
#include <cstring>
#include <fstream>

#include "graft/registry.h"
#include "io/tensor_io.h"
#include "plan/plan.h"
#include "runtime/cpu_engine.h"
#include "runtime/device_engine.h"
#include "tools/graft/build_options.h"

namespace graft::cli {

void add_model_options(CLI::App& app, ModelOptions& opts, bool with_device) {
  // trtexec names the model with --onnx=FILE or --loadEngine=FILE; either works as the positional.
  app.add_option("model,--onnx,--loadEngine", opts.path, "MODEL.onnx or MODEL.plan (told apart by content)")
      ->required();
  if (with_device)
    app.add_option("--device", opts.device,
                   "cpu, cuda or cuda:N (GPU N; default: the current GPU). ONNX: the device to build for (default "
                   "cpu). Plan: it runs on the device it was built for; --device only checks that (and picks the GPU)")
        ->check(device_name_error);
  app.add_option("--plugins", opts.plugins, "Plugin libraries (.so) with custom ops, loaded first")
      ->expected(1, -1);
}

Result<DeviceType> parse_device(const std::string& name) {
  if (name == "cpu") return DeviceType::kCPU;
  if (name == "cuda" || device_ordinal(name) >= 0) return DeviceType::kCUDA;
  return error(StatusCode::kInvalidArgument, "unknown device '", name, "' (cpu, cuda or cuda:N)");
}

std::string device_name_error(const std::string& name) {
  auto d = parse_device(name);
  return d ? std::string() : d.status().message();
}

int device_ordinal(const std::string& name) {
  if (name.rfind("cuda:", 0) != 0 || name.size() == 5 || name.size() > 9) return -1;
  int n = 0;
  for (char c : name.substr(5)) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

namespace {
// --device cuda:N: GPU N becomes the current device before the engine is built or loaded.
Status select_requested_gpu(const ModelOptions& opts) {
  const int ordinal = device_ordinal(opts.device);
  return ordinal < 0 ? Status::ok() : select_cuda_device(ordinal);
}
}  // namespace

Result<DeviceType> build_device(const ModelOptions& opts) {
  GRAFT_ASSIGN_OR_RETURN(DeviceType device, parse_device(opts.device.empty() ? "cpu" : opts.device));
  if (!check_device_compiled(device))
    return error(StatusCode::kUnsupported, "--device ", device_name(device), ": this graft was built without CUDA ",
                 "(configure with -DGRAFT_ENABLE_CUDA=ON); use --device cpu");
  return device;
}

Status load_plugins(const ModelOptions& opts) {
  GRAFT_RETURN_IF_ERROR(register_graft_ops(OpRegistry::global()));
  for (const std::string& lib : opts.plugins) GRAFT_RETURN_IF_ERROR(load_plugin_library(lib));
  return Status::ok();
}

Result<bool> is_plan_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    Status st(StatusCode::kNotFound, std::string("cannot open model: ") + std::strerror(errno));
    return st.with_file(path);
  }
  char magic[8] = {};
  in.read(magic, sizeof magic);
  return in.gcount() == sizeof magic && std::memcmp(magic, "GRAFTPLN", sizeof magic) == 0;
}

namespace {

// A plan for a device this graft cannot run, as an engine that only describes it: the plan's graph,
// profiles and build options, without creating the device's runtime.
Result<std::shared_ptr<Engine>> plan_description(const std::string& path) {
  GRAFT_ASSIGN_OR_RETURN(std::string bytes, io::read_file(path));
  GRAFT_ASSIGN_OR_RETURN(EngineState state, read_plan_bytes(bytes, path));
  return make_cpu_engine(std::move(state));
}

}  // namespace

Result<LoadedModel> load_or_build(const ModelOptions& model, const BuildOptions& build, const LoadOptions& load) {
  LoadedModel out;
  GRAFT_ASSIGN_OR_RETURN(out.is_plan, is_plan_file(model.path));
  if (!out.is_plan) {
    GRAFT_ASSIGN_OR_RETURN(DeviceType device, build_device(model));
    GRAFT_RETURN_IF_ERROR(select_requested_gpu(model));
    warn_ignored_build_flags(build, false, device, model.path);
    GRAFT_RETURN_IF_ERROR(load_plugins(model));
    GRAFT_ASSIGN_OR_RETURN(BuilderConfig config, make_builder_config(build, device, {}));
    config.sample_shapes = load.sample_shapes;
    if (load.mark_all_outputs) {
      GRAFT_ASSIGN_OR_RETURN(std::string bytes, io::read_file(model.path));
      GRAFT_ASSIGN_OR_RETURN(MarkedModel marked, mark_all_outputs(bytes, model.path));
      out.layers = std::move(marked.layers);
      GRAFT_ASSIGN_OR_RETURN(out.engine, Engine::build_from_onnx_bytes(marked.bytes, config, model.path));
      return out;
    }
    GRAFT_ASSIGN_OR_RETURN(out.engine, Engine::build_from_onnx_file(model.path, config));
    return out;
  }
  if (!model.device.empty()) GRAFT_RETURN_IF_ERROR(parse_device(model.device).status());
  if (device_ordinal(model.device) >= 0) {
    GRAFT_RETURN_IF_ERROR(check_device_compiled(DeviceType::kCUDA));
    GRAFT_RETURN_IF_ERROR(select_requested_gpu(model));
  }
  warn_ignored_build_flags(build, true, DeviceType::kCPU, model.path);
  GRAFT_RETURN_IF_ERROR(load_plugins(model));
  auto engine = Engine::load_plan(model.path);
  if (engine) {
    out.engine = std::move(engine).value();
  } else {
    // A plan that cannot run here (kUnsupported: no CUDA in this graft; kRuntimeError: no usable
    // GPU) can still be described; anything else (damaged plan, missing plugin) is the error.
    const Status st = engine.status();
    if (!load.describe_only || (st.code() != StatusCode::kUnsupported && st.code() != StatusCode::kRuntimeError))
      return st;
    auto described = plan_description(model.path);
    if (!described || (*described)->device() == DeviceType::kCPU) return st;
    out.engine = std::move(described).value();
    out.described_only_because = st.message();
  }
  if (!model.device.empty()) {
    const DeviceType want = *parse_device(model.device);
    if (out.engine->device() != want) {
      const char* built = device_name(out.engine->device());
      Status st = error(StatusCode::kInvalidArgument, "--device ", device_name(want), ", but the plan was built for ",
                        built, ": leave --device out to use the plan on ", built, ", or build a ", device_name(want),
                        " plan from the ONNX model (graft build MODEL.onnx --device ", device_name(want),
                        " -o PLAN)");
      return st.with_file(model.path);
    }
  }
  return out;
}

}  // namespace graft::cli
