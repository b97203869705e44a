// `graft run` options about inference: inputs, iterations, saving and comparing outputs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "graft/engine.h"
#include "graft/status.h"

namespace graft::cli {

struct InferenceOptions {
  std::vector<std::string> inputs;  // NAME:FILE (.npy or .pb)
  std::string save_outputs;         // directory for <output>.npy
  std::string compare;              // directory with output_*.pb or <output>.npy references
  double rtol = 1e-3, atol = 1e-5;
  int iterations = 10;
  int warmup = 2;
  uint64_t seed = 0;
  bool seed_given = false;
  // CUDA engines are timed with inputs and outputs resident on the GPU (trtexec's "GPU compute
  // time"); with host_io every timed run also copies them from and to the host.
  bool host_io = false;
};

void add_inference_options(CLI::App& app, InferenceOptions& opts);

// Loads the given input files and fills every other engine input with seeded random data (floats
// in [-1, 1], integers in [0, 4), bools 0/1). Shapes: --shapes, else the static shape, else the
// profile's opt shape. The seed is reported on stderr.
Result<std::map<std::string, Tensor>> prepare_inputs(const Engine& engine, const InferenceOptions& opts,
                                                     const std::map<std::string, std::vector<int64_t>>& shapes);

// Writes <sanitized output name>.npy per output into opts.save_outputs (created if missing).
Status save_outputs(const std::string& dir, const std::map<std::string, Tensor>& outputs);

// Compares outputs with references in `dir`: <name>.npy (sanitized) or output_<i>.pb (by the name
// stored in it, else by output position). Prints max abs/rel error per output on stdout; an error
// when any element exceeds atol + rtol * |ref| or a shape/dtype differs.
Status compare_outputs(const std::string& dir, const Engine& engine, const std::map<std::string, Tensor>& outputs,
                       double rtol, double atol);

}  // namespace graft::cli
