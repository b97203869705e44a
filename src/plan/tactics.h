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
#include <set>
#include <string>

#include "graft/status.h"

namespace graft {

struct Tactic {
  int algo = -1;     // implementation index within the layer kind (e.g. cudnnConvolutionFwdAlgo_t)
  // Layer-kind specific. conv: 0 = cuDNN convolution + graft's epilogue, 1 = cuDNN's fused
  // conv+bias+activation call, 5 = a grouped NHWC convolution run by cuDNN in NCHW between
  // transposes (algo: the NCHW algorithm), 2-4 and 6-9 = graft's own kernels (algo ignored), each
  // described where src/ops/fused_conv/graft_conv_cuda.cpp defines it.
  int variant = 0;
  double ms = 0;     // measured time, for reports
};

class TacticTable {
 public:
  TacticTable() = default;
  TacticTable(const TacticTable& other) : map_(other.snapshot()), layers_(other.layers()) {}
  TacticTable& operator=(const TacticTable& other) {
    if (this != &other) {
      auto m = other.snapshot();
      auto l = other.layers();
      std::lock_guard<std::mutex> lock(mu_);
      map_ = std::move(m);
      layers_ = std::move(l);
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

  // Which problems each layer asked about while the builder tuned (layer name -> keys: one per
  // distinct input shape, so a dynamic profile gives a layer up to three), so that a description of
  // the engine can say what each layer runs. Several layers may share a key. Plans keep it beside
  // the table; timing cache files do not (they hold no layer names).
  void note_layer(const std::string& layer, const std::string& key);
  std::map<std::string, std::set<std::string>> layers() const;
  // JSON object {"layer": ["key", ...]}, and its reader (errors name `what`; nothing is added then).
  std::string layers_json() const;
  Status read_layers_json(const std::string& text, const std::string& what);

 private:
  mutable std::mutex mu_;
  std::map<std::string, Tactic> map_;
  std::map<std::string, std::set<std::string>> layers_;
};

}  // namespace graft
