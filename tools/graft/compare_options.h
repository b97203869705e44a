// `graft run` options about comparing with a reference run (Polygraphy's `polygraphy run` habits):
// the same model on another backend (--compare-backend), another ONNX model (--compare-model), every
// intermediate tensor as an output (--layerwise), and tolerances per output (--rtol out0:1e-3).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "graft/status.h"
#include "runtime/compare.h"
#include "tools/graft/model_options.h"

namespace graft::cli {

struct BuildOptions;

struct CompareOptions {
  std::string backend;  // cpu | cuda | cuda:N: build the reference for this backend
  std::string model;    // a reference ONNX model (default: the model itself)
  bool layerwise = false;
  // Each entry VALUE (every tensor) or NAME:VALUE (one tensor; the last ':' separates them).
  std::vector<std::string> rtol, atol;
};

void add_compare_options(CLI::App& app, CompareOptions& opts);

// --rtol/--atol as tolerances (defaults rtol 1e-3, atol 1e-5). Errors name the flag and the entry.
Result<Tolerances> parse_tolerances(const CompareOptions& opts);

bool wants_reference_run(const CompareOptions& opts);
// Checked before anything is built: the flags make sense together, the reference backend is in this
// graft, the reference model exists and is ONNX.
Status check_compare_options(const CompareOptions& opts, const ModelOptions& model, bool model_is_plan,
                             bool with_compare_dir);

// Builds the reference (the model, or --compare-model; on --compare-backend, default cpu; with the
// shape options of `build` and nothing else), runs it on `inputs`, and compares `outputs` (from
// `candidate`) with its outputs. Mismatched models (different inputs, no tensor in common) are
// errors naming both files.
Result<ComparisonReport> run_reference_and_compare(const CompareOptions& opts, const Tolerances& tolerances,
                                                   const ModelOptions& model, const BuildOptions& build,
                                                   const LoadOptions& load, const LoadedModel& candidate,
                                                   const std::map<std::string, Tensor>& inputs,
                                                   const std::map<std::string, Tensor>& outputs);

// Tolerances naming a tensor the comparison does not have: an error naming the flag and listing
// (some of) the names it has.
Status check_tolerance_names(const Tolerances& tolerances, const std::vector<std::string>& known,
                             const std::string& what);

}  // namespace graft::cli
