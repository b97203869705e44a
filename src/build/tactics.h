// Tactic choices of an engine and the timing cache file.
//
// Where a layer has several implementations (cuDNN convolution algorithms, with or without the
// fused bias/residual/activation call), the builder times each on the real shapes and keeps the
// fastest in a TacticTable: the engine's table travels in its plan, so a loaded plan runs the same
// kernels it was built with. The timing cache file holds every measurement made on one GPU
// (key -> choice), so a second build of the same model (or of another model with the same layer
// shapes) reads them instead of timing again. Keys name the problem completely, including the GPU's
// compute capability and the library versions, so a cache from another machine is never misread.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "graft/engine.h"
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

// What a build's tactic timing did: layers timed, found in the cache file, or already in the table.
struct TacticStats {
  int timed = 0, from_cache = 0;
  double timing_ms = 0;
};

// Which shapes of an optimization profile to time at.
enum class ProfilePoint { kMin, kOpt, kMax };

// A point of one of the engine's optimization profiles (profile 0's by default).
struct TimingPoint {
  TimingPoint(ProfilePoint p = ProfilePoint::kOpt, int profile_index = 0) : profile(profile_index), point(p) {}
  int profile;
  ProfilePoint point;
  bool operator==(const TimingPoint&) const = default;
};

// Inputs to time an engine with: every input at its static shape or its profile's `point` shape
// (profile 0's opt by default), floating inputs uniform in [-1, 1], others 0 (index-like inputs stay
// in range). Errors name an input that has neither. Run them on a context set to point.profile.
Result<std::map<std::string, Tensor>> timing_inputs(const Engine& engine, TimingPoint point = {});

// The points of every profile whose shapes differ from each other, profile by profile (opt, then
// min and max): an engine with static shapes has only profile 0's opt; a dynamic batch 1..8..32 has
// opt, min and max; a second profile adds those of its points no earlier point has. Tactics are
// keyed by concrete shapes, so timing at each of these covers every profile's choices.
std::vector<TimingPoint> distinct_profile_points(const Engine& engine);

// Build-time tuning state handed to the kernels through their exec context (nullptr at run time).
struct TacticTuning {
  TacticTable* cache = nullptr;  // the timing cache file's contents (read and extended)
  TacticStats stats;
};

}  // namespace graft
