#include "tools/graft/model_options.h"

#include <cstdio>
#include <cstring>
#include <fstream>

#include "graft/registry.h"
#include "tools/graft/build_options.h"

namespace graft::cli {

void add_model_options(CLI::App& app, ModelOptions& opts, bool with_device) {
  app.add_option("model", opts.path, "MODEL.onnx or MODEL.plan (told apart by content)")->required();
  if (with_device)
    app.add_option("--device", opts.device, "Where to run: cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--plugins", opts.plugins, "Plugin libraries (.so) with custom ops, loaded first")
      ->expected(1, -1);
}

Result<DeviceType> parse_device(const std::string& name) {
  if (name == "cpu") return DeviceType::kCPU;
  if (name == "cuda") return DeviceType::kCUDA;
  return error(StatusCode::kInvalidArgument, "unknown device '", name, "' (cpu or cuda)");
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

Result<std::shared_ptr<Engine>> load_or_build(const ModelOptions& model, const BuildOptions& build) {
  GRAFT_ASSIGN_OR_RETURN(DeviceType device, parse_device(model.device));
  GRAFT_RETURN_IF_ERROR(load_plugins(model));
  GRAFT_ASSIGN_OR_RETURN(bool plan, is_plan_file(model.path));
  if (plan) {
    GRAFT_ASSIGN_OR_RETURN(std::shared_ptr<Engine> engine, Engine::load_plan(model.path));
    if (engine->device() != device)
      return error(StatusCode::kInvalidArgument, "the plan was built for ", device_name(engine->device()),
                   " but --device is ", device_name(device), "; rebuild it with graft build --device ",
                   device_name(device));
    return engine;
  }
  GRAFT_ASSIGN_OR_RETURN(BuilderConfig config, make_builder_config(build, device, {}));
  return Engine::build_from_onnx_file(model.path, config);
}

}  // namespace graft::cli
