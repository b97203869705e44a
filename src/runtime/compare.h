// Comparing two runs of a model, output by output (Polygraphy's `polygraphy run --trt --onnxrt`):
// one engine's outputs (the candidate) against another's (the reference: another backend, another
// model, ONNX Runtime, saved files). With the layers of a marked model (onnx/mark_outputs.h) the
// tensors are compared in topological order and the report names the first layer that diverges.
//
// Used by `graft run --compare-backend/--compare-model` and Python's graft.compare; the library
// names no command-line flags or Python arguments in its messages.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graft/tensor.h"
#include "onnx/mark_outputs.h"

namespace graft {

struct Tolerance {
  double rtol = 1e-3, atol = 1e-5;
};

// An element passes when |candidate - reference| <= atol + rtol * |reference| (numpy.isclose's
// rule); NaN equals NaN, an infinity equals itself. Per-tensor overrides of rtol or atol each.
struct Tolerances {
  Tolerance fallback;
  std::map<std::string, double> rtol, atol;
  Tolerance of(const std::string& tensor) const;
  // Names the overrides use that are not in `known` (a typo would otherwise be silently ignored).
  std::vector<std::string> unknown_names(const std::vector<std::string>& known) const;
};

// How one tensor compares.
struct TensorComparison {
  std::string tensor;
  int layer = -1;  // index into ComparisonReport::layers, or -1 for a tensor no layer lists
  enum class Status { kMatch, kMismatch, kNotCompared } status = Status::kNotCompared;
  std::string reason;  // kNotCompared: why; kMismatch: what differs beyond the values, if anything
  Tolerance tolerance;
  std::string candidate_type, reference_type;  // "float32[2,3]"; "" where that side has no such tensor
  double max_abs = 0, max_rel = 0;
  int64_t beyond = 0, elements = 0;
  bool has_worst = false;         // false when no element was compared (empty, or all NaN)
  std::vector<int64_t> worst_at;  // index of the largest absolute error
  double candidate_value = 0, reference_value = 0;  // the two values there
};

struct ComparisonReport {
  std::string candidate, reference;  // what ran, in words ("model.onnx on cpu")
  std::vector<MarkedLayer> layers;   // layerwise: the model's layers in topological order; else empty
  std::vector<TensorComparison> tensors;  // in layer order, then any outputs no layer lists
  Tolerances tolerances;
  int first_divergence = -1;  // index into tensors of the first kMismatch, or -1
  int matched = 0, mismatched = 0, not_compared = 0;
  bool passed() const { return mismatched == 0; }
};

// Compares element by element (as float64). `order` lists tensor names in the order to report them
// (the candidate's outputs, or the marked model's layer outputs); names only one side has are kept
// and reported as not compared, saying which side lacks them.
ComparisonReport compare_tensor_sets(const std::map<std::string, Tensor>& candidate,
                                     const std::map<std::string, Tensor>& reference,
                                     const std::vector<MarkedLayer>& layers, const std::vector<std::string>& order,
                                     const Tolerances& tolerances);

// One tensor (the pair must be host tensors of the same dims; dtypes may differ).
void compare_values(const Tensor& candidate, const Tensor& reference, TensorComparison* c);

// The report as JSON ("format": "graft-compare", version 1; docs/cli.md documents the fields).
std::string comparison_json(const ComparisonReport& report);
// A table, one row per tensor, then the first divergence (or that all matched) in one line.
std::string format_comparison(const ComparisonReport& report);
// One line: the first layer that diverges, with its errors and where ("" when all matched).
std::string describe_first_divergence(const ComparisonReport& report);

}  // namespace graft
