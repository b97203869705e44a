// A tactic-timing run: the profile points an engine is timed at, the inputs it is timed with, and
// the tuning state its kernels read and extend while the builder times them. Used by the builder
// (timing whole candidate engines) and by the CUDA engine (timing each layer's tactics).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graft/engine.h"
#include "plan/tactics.h"

namespace graft {

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
  // Written out, not defaulted: the CUDA files that include this header compile as C++17.
  bool operator==(const TimingPoint& o) const { return profile == o.profile && point == o.point; }
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
