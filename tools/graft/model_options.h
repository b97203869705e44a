// `graft` options about the model: which file, which device, which plugin libraries.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "graft/engine.h"
#include "graft/status.h"
#include "onnx/mark_outputs.h"

namespace graft::cli {

struct BuildOptions;

struct ModelOptions {
  std::string path;                  // MODEL.onnx or MODEL.plan (told apart by content)
  // cpu | cuda | cuda:N, or empty: an ONNX model is built for the CPU, a plan runs on the device it was built
  // for. Given with a plan, it is only a check.
  std::string device;
  std::vector<std::string> plugins;  // plugin libraries loaded before import / plan loading
};

// Adds MODEL (positional, required), --device and --plugins.
void add_model_options(CLI::App& app, ModelOptions& opts, bool with_device = true);

Result<DeviceType> parse_device(const std::string& name);  // "cpu", "cuda" or "cuda:N"
// A CLI11 check of a device flag: "" when parse_device accepts the name, else why not.
std::string device_name_error(const std::string& name);
// N for "cuda:N", else -1.
int device_ordinal(const std::string& name);
// The device an ONNX model is built for: --device, else the CPU. An error naming --device when this
// graft cannot build for it (CUDA in a build without CUDA), so nothing is imported in vain.
Result<DeviceType> build_device(const ModelOptions& opts);
// Registers graft's own custom ops, then loads each plugin library.
Status load_plugins(const ModelOptions& opts);
// True when the file starts with the plan magic "GRAFTPLN"; errors when it cannot be read.
Result<bool> is_plan_file(const std::string& path);

struct LoadOptions {
  // Shapes of the --inputs files: dynamic inputs without a profile or --shapes are built for them.
  std::map<std::string, std::vector<int64_t>> sample_shapes;
  // graft inspect: a plan this graft cannot run (built for CUDA, read without CUDA or without a
  // GPU) is described from the plan itself instead of failing.
  bool describe_only = false;
  // --layerwise: every tensor a node of the ONNX model computes becomes an output (onnx/mark_outputs.h).
  bool mark_all_outputs = false;
};

struct LoadedModel {
  std::shared_ptr<Engine> engine;
  bool is_plan = false;
  // Set when the engine only describes a plan this graft cannot run (LoadOptions::describe_only):
  // why, in a few words. Such an engine must not be run.
  std::string described_only_because;
  // With LoadOptions::mark_all_outputs: the model's layers in topological order.
  std::vector<MarkedLayer> layers;
};

// Loads a plan (on the plan's device; --device is a check), or builds an engine from ONNX with the
// build options; progress goes to stderr.
Result<LoadedModel> load_or_build(const ModelOptions& model, const BuildOptions& build, const LoadOptions& load = {});

}  // namespace graft::cli
