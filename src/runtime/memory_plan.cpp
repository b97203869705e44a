#include "runtime/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace graft {

namespace {

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

bool lifetimes_overlap(const BufferRequest& a, const BufferRequest& b) {
  return a.first_step <= b.last_step && b.first_step <= a.last_step;
}

}  // namespace

MemoryPlan plan_memory(const std::vector<BufferRequest>& requests, size_t alignment) {
  MemoryPlan plan;
  plan.offsets.assign(requests.size(), 0);
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Largest first keeps fragmentation low; ties by first use then index for determinism.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (requests[a].bytes != requests[b].bytes) return requests[a].bytes > requests[b].bytes;
    return requests[a].first_step < requests[b].first_step;
  });
  std::vector<size_t> placed;
  for (size_t idx : order) {
    const BufferRequest& r = requests[idx];
    const size_t size = align_up(std::max<size_t>(r.bytes, 1), alignment);
    plan.total_bytes += size;
    // Intervals [offset, offset+size) taken by placed buffers alive at the same time, by offset.
    std::vector<std::pair<size_t, size_t>> busy;
    for (size_t p : placed)
      if (lifetimes_overlap(r, requests[p]))
        busy.emplace_back(plan.offsets[p], plan.offsets[p] + align_up(std::max<size_t>(requests[p].bytes, 1), alignment));
    std::sort(busy.begin(), busy.end());
    // Best fit: the smallest gap that holds the buffer; else the end of the busy range.
    size_t best = SIZE_MAX, best_gap = SIZE_MAX, cursor = 0;
    for (const auto& [lo, hi] : busy) {
      if (lo > cursor && lo - cursor >= size && lo - cursor < best_gap) {
        best = cursor;
        best_gap = lo - cursor;
      }
      cursor = std::max(cursor, hi);
    }
    if (best == SIZE_MAX) best = cursor;
    plan.offsets[idx] = best;
    plan.peak_bytes = std::max(plan.peak_bytes, best + size);
    placed.push_back(idx);
  }
  return plan;
}

bool memory_plan_is_valid(const std::vector<BufferRequest>& requests, const MemoryPlan& plan) {
  if (plan.offsets.size() != requests.size()) return false;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (plan.offsets[i] + requests[i].bytes > plan.peak_bytes) return false;
    for (size_t j = i + 1; j < requests.size(); ++j) {
      if (!lifetimes_overlap(requests[i], requests[j])) continue;
      const size_t a0 = plan.offsets[i], a1 = a0 + requests[i].bytes;
      const size_t b0 = plan.offsets[j], b1 = b0 + requests[j].bytes;
      if (requests[i].bytes && requests[j].bytes && a0 < b1 && b0 < a1) return false;
    }
  }
  return true;
}

}  // namespace graft
