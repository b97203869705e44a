// Activation memory planning: buffers with known sizes and lifetimes (first and last step that
// touch them) get offsets in one arena, so that buffers whose lifetimes overlap never share bytes
// and buffers whose lifetimes do not overlap reuse the same bytes. Pure host code (no CUDA), so it
// is tested on machines without a GPU; the CUDA runtime plans its device arena with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace graft {

struct BufferRequest {
  size_t bytes = 0;
  int first_step = 0;  // step that writes the buffer first
  int last_step = 0;   // last step that reads it (inclusive)
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // one per request, aligned to `alignment`
  size_t peak_bytes = 0;        // arena size
  size_t total_bytes = 0;       // sum of the (aligned) requests: what no reuse would need
};

inline constexpr size_t kArenaAlignment = 256;

// Greedy by size (largest first), each buffer at the lowest offset that does not collide with an
// already placed buffer alive at the same time. Deterministic for the same requests.
MemoryPlan plan_memory(const std::vector<BufferRequest>& requests, size_t alignment = kArenaAlignment);

// True when no two requests that are alive at the same step overlap in the arena (test helper and
// a debug check).
bool memory_plan_is_valid(const std::vector<BufferRequest>& requests, const MemoryPlan& plan);

}  // namespace graft
