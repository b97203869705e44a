// The broadcast kernels' multiply-high division (src/backends/cuda/fast_divide.h), checked on the
// host against the hardware divide: every divisor shape that matters (1, powers of two and their
// neighbours, primes, large values) with the edge dividends and fresh random ones.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "backends/cuda/fast_divide.h"

namespace graft {
namespace {

TEST(FastDivide, MatchesIntegerDivision) {
  std::vector<uint32_t> divisors = {1, 2, 3, 5, 6, 7, 19, 38, 75, 150, 197, 1000, 19947, 159576, 65535, 65536, 65537};
  for (int k = 1; k < 31; ++k) {
    const uint32_t p = uint32_t{1} << k;
    divisors.insert(divisors.end(), {p - 1, p, p + 1});
  }
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<uint32_t> any(0, (uint32_t{1} << 31) - 1);
  for (int i = 0; i < 200; ++i) divisors.push_back(1 + any(rng) % ((uint32_t{1} << 31) - 1));
  for (uint32_t d : divisors) {
    const graft::cuda::FastDivide f(d);
    std::vector<uint32_t> ns = {0, 1, d - 1, d, d + 1, 2 * d - 1, (uint32_t{1} << 31) - 1, (uint32_t{1} << 30)};
    for (int i = 0; i < 2000; ++i) ns.push_back(any(rng));
    for (uint32_t n : ns) {
      if (n >= (uint32_t{1} << 31)) continue;
      uint32_t q = 0, r = 0;
      f.divmod(n, &q, &r);
      ASSERT_EQ(q, n / d) << "n " << n << " d " << d << " seed " << seed;
      ASSERT_EQ(r, n % d) << "n " << n << " d " << d << " seed " << seed;
    }
  }
}

// The kernels' index decomposition (pop_axis), 32-bit and 64-bit, against plain division.
TEST(FastDivide, PopAxisDecomposesIndices) {
  const std::vector<int64_t> dims = {2, 4, 4, 8, 19947};  // innermost first: the encoder's offsets
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> any(0, total - 1);
  for (int t = 0; t < 5000; ++t) {
    const int64_t flat = t < 2 ? t * (total - 1) : any(rng);
    int32_t i32 = static_cast<int32_t>(flat);
    int64_t i64 = flat, rest = flat;
    for (int64_t d : dims) {
      const graft::cuda::FastDivide fd(static_cast<uint32_t>(d));
      const int32_t c32 = graft::cuda::pop_axis<int32_t>(i32, static_cast<int32_t>(d), fd);
      const int64_t c64 = graft::cuda::pop_axis<int64_t>(i64, d, fd);
      ASSERT_EQ(c32, rest % d) << "index " << flat << " seed " << seed;
      ASSERT_EQ(c64, rest % d) << "index " << flat << " seed " << seed;
      rest /= d;
      ASSERT_EQ(i32, rest);
      ASSERT_EQ(i64, rest);
    }
  }
}

TEST(FastDivide, ZeroDivisorOfAnEmptyAxisIsHarmless) {
  const graft::cuda::FastDivide f(0);
  EXPECT_EQ(f.divisor, 1u);
  EXPECT_EQ(f.div(7), 7u);
}

}  // namespace
}  // namespace graft
