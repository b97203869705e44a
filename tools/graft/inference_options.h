// `graft run` options about inference: inputs, iterations, saving and comparing outputs, timing.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "graft/engine.h"
#include "graft/status.h"
#include "runtime/compare.h"

namespace graft::cli {

struct InferenceOptions {
  std::vector<std::string> inputs;  // NAME:FILE (.npy or .pb)
  std::string save_outputs;         // directory for <output>.npy
  std::string compare;              // directory with output_*.pb or <output>.npy references
  int iterations = 10;
  int warmup = 2;
  double warmup_ms = 0;   // and warm up for at least this long (trtexec's --warmUp)
  double duration_s = 0;  // run at least this long (and at least `iterations` times)
  uint64_t seed = 0;
  bool seed_given = false;
  // CUDA engines: each timed iteration copies the inputs to the GPU (H2D), runs with inputs and
  // outputs resident on the GPU (compute), and copies the outputs back (D2H), each timed on its own.
  // The latency reported is the compute time (trtexec's "GPU compute time"); with host_io it is the
  // sum of the three.
  bool host_io = false;
  std::string export_times;    // JSON: per-iteration times
  std::string export_output;   // JSON: output values
  std::string export_profile;  // JSON: per-layer times (CUDA)
  // The optimization profile the run's context selects (ExecutionContext::set_profile); random
  // inputs of dynamic shape take its opt shapes.
  int profile_index = 0;
};

void add_inference_options(CLI::App& app, InferenceOptions& opts);

// One --inputs entry, read before anything is built.
struct InputFile {
  std::string name, file;
  Tensor tensor;
};
// Reads every --inputs file: NAME:FILE entries (the last ':' separates them), .npy or .pb. Errors
// name the entry or the file; a name given twice is an error.
Result<std::vector<InputFile>> read_input_files(const InferenceOptions& opts);
std::map<std::string, std::vector<int64_t>> shapes_of(const std::vector<InputFile>& files);

// Checks the input files against the engine (names, dtypes) and fills every other engine input with
// seeded random data (floats in [-1, 1], integers in [0, 4), bools 0/1). Shapes: --shapes, else the
// static shape, else the opt shape of profile opts.profile_index. The seed is reported on stderr (and in *seed_used).
Result<std::map<std::string, Tensor>> prepare_inputs(const Engine& engine, const InferenceOptions& opts,
                                                     const std::map<std::string, std::vector<int64_t>>& shapes,
                                                     const std::vector<InputFile>& files, uint64_t* seed_used = nullptr);

// Times of one timed iteration, in milliseconds from the start of the timed loop. The split (h2d,
// compute, d2h) is measured for CUDA engines only (negative otherwise).
struct IterationTimes {
  double start_ms = 0, latency_ms = 0;
  double h2d_ms = -1, compute_ms = -1, d2h_ms = -1;
};

struct TimedRuns {
  std::string mode;  // "host" (CPU engine), "gpu_resident" (CUDA: latency = compute) or "host_io"
  bool split = false;
  std::vector<IterationTimes> iterations;
  double wall_s = 0;                          // the whole timed loop
  std::map<std::string, Tensor> outputs;      // host outputs of the last iteration
  std::map<std::string, Tensor> run_inputs;   // what the runs read: the inputs, on the GPU for a CUDA engine
};

// Warm-up runs, then at least opts.iterations timed runs lasting at least opts.duration_s.
Result<TimedRuns> time_runs(const Engine& engine, ExecutionContext& ctx, const std::map<std::string, Tensor>& inputs,
                            const InferenceOptions& opts);

// Writes <sanitized output name>.npy per output into opts.save_outputs (created if missing).
Status save_outputs(const std::string& dir, const std::map<std::string, Tensor>& outputs);

// Compares outputs with references in `dir`: <name>.npy (sanitized) or output_<i>.pb (by the name
// stored in it, else by output position). Reports max abs/rel error per output on stdout, or into
// *report (one object per output) when it is given; an error when any element exceeds
// atol + rtol * |ref| (per output: Tolerances) or a shape/dtype differs.
Status compare_outputs(const std::string& dir, const Engine& engine, const std::map<std::string, Tensor>& outputs,
                       const Tolerances& tolerances, nlohmann::json* report = nullptr);

// Output values as JSON (--export-output): [{"name", "dtype", "shape", "dimensions", "values"}].
nlohmann::json outputs_json(const std::map<std::string, Tensor>& outputs, bool with_values);

// Writes text to a file (atomically), the error naming the option and the file.
Status write_export_file(const std::string& path, const std::string& option, const std::string& text);

}  // namespace graft::cli
