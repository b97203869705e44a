// Tactic choices of an engine and the timing cache file.
//
// Where a layer has several implementations (cuDNN convolution algorithms, with or without the
// fused bias/residual/activation call), the builder times each on the real shapes and keeps the
// fastest in a TacticTable: the engine's table travels in its plan, so a loaded plan runs the same
// kernels it was built with. The timing cache file holds every measurement made on one GPU
// (key -> choice), so a second build of the same model (or of another model with the same layer
// shapes) reads them instead of timing again. Keys name the problem completely, including the GPU's
// compute capability and the library versions, so a cache from another machine is never misread.
// The table and the cache file are data (plan layer); a tuning run's points, inputs and the state
// handed to the kernels are in runtime/tactic_timing.h.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "graft/status.h"

namespace graft {

struct Tactic {
  int algo = -1;     // implementation index within the layer kind (e.g. cudnnConvolutionFwdAlgo_t)
  // Layer-kind specific. conv: 0 = cuDNN convolution + graft's epilogue, 1 = cuDNN's fused
  // conv+bias+activation call, 2 = graft's NHWC depthwise kernel, 3 = graft's NCHW depthwise kernel,
  // 4 = graft's NHWC pointwise (1x1) kernel (2-4 ignore algo), 5 = a grouped NHWC convolution run
  // by cuDNN in NCHW between transposes (algo: the NCHW algorithm).
  int variant = 0;
  double ms = 0;     // measured time, for reports
};

class TacticTable {
 public:
  TacticTable() = default;
  TacticTable(const TacticTable& other) : map_(other.snapshot()) {}
  TacticTable& operator=(const TacticTable& other) {
    if (this != &other) {
      auto m = other.snapshot();
      std::lock_guard<std::mutex> lock(mu_);
      map_ = std::move(m);
    }
    return *this;
  }

  std::optional<Tactic> find(const std::string& key) const;
  void put(const std::string& key, const Tactic& t);
  size_t size() const;
  std::map<std::string, Tactic> snapshot() const;

  // JSON object {key: {"algo":..,"variant":..,"ms":..}}.
  std::string to_json() const;
  // Errors (naming `what`) when the text is not such an object.
  static Result<TacticTable> from_json(const std::string& text, const std::string& what);

  // The timing cache file: {"format": "graft-timing-cache", "version": 1, "entries": {...}}.
  // A missing file is an empty cache; an unreadable or malformed one is an error naming the file.
  static Result<TacticTable> load_cache_file(const std::string& path);
  // The same for a cache file's bytes (`name` names it in errors); the timing-cache fuzz target.
  static Result<TacticTable> parse_cache(const std::string& text, const std::string& name);
  // Merges nothing: writes this table, atomically (temporary file + rename).
  Status save_cache_file(const std::string& path) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, Tactic> map_;
};

}  // namespace graft
