// What every engine over an EngineState says about itself, whatever device runs it: its inputs
// and outputs with their profiles, its text and JSON descriptions, and its plan file. The CPU and
// CUDA engines both answer from here (the CUDA engine appends its placement and memory plan), so
// neither wraps the other.
#pragma once

#include <string>
#include <vector>

#include "graft/engine.h"
#include "plan/engine_state.h"

namespace graft {

std::vector<IOInfo> engine_inputs(const EngineState& state);
std::vector<IOInfo> engine_outputs(const EngineState& state);
// Profile `index`, or an error naming it and how many there are.
Result<OptimizationProfile> engine_profile(const EngineState& state, int index);
std::string describe_engine(const EngineState& state);
std::string describe_engine_json(const EngineState& state);
// "min [..] opt [..] max [..]": a profile range as the descriptions and the profile errors print it.
std::string range_text(const ProfileRange& r);
// The plan's bytes written atomically to `path`.
Status save_engine_plan(const EngineState& state, const std::string& path);

}  // namespace graft
