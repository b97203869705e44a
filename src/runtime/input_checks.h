// The checks every engine's context runs on a caller's inputs before a run, so the CPU and CUDA
// engines refuse the same inputs with the same words: the profile index, each input's kind, dtype,
// rank, fixed dims and shared symbols, and the selected profile's range.
#pragma once

#include <cstddef>
#include <vector>

#include "graft/dim.h"
#include "graft/tensor.h"
#include "graph/graph.h"
#include "plan/engine_state.h"

namespace graft {

// An error naming `index` and how many profiles there are, unless 0 <= index < count.
Status check_profile_index(int index, size_t count);

// Checks a run's input `v` (its dims of the right rank) against profile `index` of `st`: each
// dimension the graph leaves dynamic must lie in that profile's [min, max]. The error names the
// input, the shape given, the profile and its range, and a profile that covers the shape if one does.
// Shared by the CPU and CUDA contexts, so both word it the same.
Status check_input_in_profile(const EngineState& st, int index, const Value& v, const std::vector<int64_t>& dims);

// Checks a run's input `t` against graph input `v`: its kind (tensor, sequence, optional), dtype,
// rank, fixed dims and the symbols shared with other inputs (`bindings`), then profile `profile`'s
// range. A sequence's or optional's tensors are checked against the declared dtype and shape only.
// Shared by the CPU and CUDA contexts, so both refuse the same inputs with the same words.
Status check_input(const Value& v, const Tensor& t, const EngineState& st, int profile, SymbolBindings& bindings);

}  // namespace graft
