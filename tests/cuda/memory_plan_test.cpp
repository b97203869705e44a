// The activation memory planner: no two live buffers overlap, and a chain reuses memory.
#include <gtest/gtest.h>

#include <random>

#include "runtime/memory_plan.h"

namespace {

TEST(MemoryPlan, ChainReusesTwoBuffers) {
  // x0 -> x1 -> ... -> x7: buffer i is written at step i and read at step i + 1.
  std::vector<graft::BufferRequest> rq;
  for (int i = 0; i < 8; ++i) rq.push_back({1000, i, i + 1});
  auto plan = graft::plan_memory(rq);
  ASSERT_TRUE(graft::memory_plan_is_valid(rq, plan));
  EXPECT_EQ(plan.peak_bytes, 2 * 1024u) << "a chain needs two live buffers at a time";
  EXPECT_EQ(plan.total_bytes, 8 * 1024u);
}

TEST(MemoryPlan, RandomLifetimesNeverOverlap) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<graft::BufferRequest> rq;
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      int a = static_cast<int>(rng() % 30), len = static_cast<int>(rng() % 10);
      rq.push_back({static_cast<size_t>(rng() % 100000), a, a + len});
    }
    auto plan = graft::plan_memory(rq);
    ASSERT_TRUE(graft::memory_plan_is_valid(rq, plan)) << "trial " << trial;
    EXPECT_LE(plan.peak_bytes, plan.total_bytes);
    for (size_t off : plan.offsets) EXPECT_EQ(off % graft::kArenaAlignment, 0u);
  }
}

TEST(MemoryPlan, OverlappingLifetimesGetDisjointBytes) {
  std::vector<graft::BufferRequest> rq = {{512, 0, 5}, {512, 2, 3}, {512, 3, 9}};
  auto plan = graft::plan_memory(rq);
  ASSERT_TRUE(graft::memory_plan_is_valid(rq, plan));
  EXPECT_EQ(plan.peak_bytes, 3 * 512u);
  // Invalid plan is detected (the checker can fail).
  graft::MemoryPlan bad = plan;
  bad.offsets = {0, 0, 0};
  EXPECT_FALSE(graft::memory_plan_is_valid(rq, bad));
}

}  // namespace
