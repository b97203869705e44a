// Scan's attributes (opset 9+), read one way by its schema and its kernel: how the node's inputs
// split into loop state and scanned tensors, and along which axis and direction each is scanned.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace graft {

struct ScanLayout {
  size_t n = 0;  // state values: the first n inputs and outputs
  size_t m = 0;  // scanned inputs (num_scan_inputs), after the state
  size_t k = 0;  // scan outputs, after the state
  std::vector<int64_t> in_axes, in_reverse;    // per scanned input (not yet normalized)
  std::vector<int64_t> out_axes, out_reverse;  // per scan output (not yet normalized)
};

// Errors name the node and the attribute (count, length or value out of range).
Result<ScanLayout> scan_layout(const Node& node);

}  // namespace graft
