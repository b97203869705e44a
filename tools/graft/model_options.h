// `graft` options about the model: which file, which device, which plugin libraries.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "graft/engine.h"
#include "graft/status.h"

namespace graft::cli {

struct BuildOptions;

struct ModelOptions {
  std::string path;                  // MODEL.onnx or MODEL.plan (told apart by content)
  std::string device = "cpu";        // cpu | cuda
  std::vector<std::string> plugins;  // plugin libraries loaded before import / plan loading
};

// Adds MODEL (positional, required), --device and --plugins.
void add_model_options(CLI::App& app, ModelOptions& opts, bool with_device = true);

Result<DeviceType> parse_device(const std::string& name);
// Registers graft's own custom ops, then loads each plugin library.
Status load_plugins(const ModelOptions& opts);
// True when the file starts with the plan magic "GRAFTPLN"; errors when it cannot be read.
Result<bool> is_plan_file(const std::string& path);
// Loads a plan, or builds an engine from ONNX with the build options; progress goes to stderr.
Result<std::shared_ptr<Engine>> load_or_build(const ModelOptions& model, const BuildOptions& build);

}  // namespace graft::cli
