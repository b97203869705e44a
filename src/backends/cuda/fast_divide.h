// Division by a run-time divisor without a hardware divide: the divisor's magic multiplier and
// shift are computed once on the host (Granlund & Montgomery, "Division by invariant integers using
// multiplication", 1994), and the kernel divides with one multiply-high, one add and one shift.
// Broadcast kernels divide every element's index by each axis extent; a 32-bit integer division
// costs about twenty instructions, this three. Valid for dividends below 2^31 and divisors in
// [1, 2^31). Plain C++ where no CUDA compiler is involved, so the unit tests check it on the host.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define GRAFT_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define GRAFT_HOST_DEVICE inline
#endif

namespace graft::cuda {

struct FastDivide {
  uint32_t divisor = 1;
  uint32_t multiplier = 1;  // floor(2^32 * (2^shift - divisor) / divisor) + 1
  uint32_t shift = 0;       // ceil(log2(divisor))

  FastDivide() = default;
  explicit FastDivide(uint32_t d) : divisor(d == 0 ? 1 : d) {  // 0: an empty axis, never divided by
    d = divisor;
    while (shift < 32 && (uint64_t{1} << shift) < d) ++shift;
    const uint64_t m = ((uint64_t{1} << 32) * ((uint64_t{1} << shift) - d)) / d + 1;
    multiplier = static_cast<uint32_t>(m);
  }

  GRAFT_HOST_DEVICE uint32_t div(uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const uint32_t hi = __umulhi(n, multiplier);
#else
    const uint32_t hi = static_cast<uint32_t>((static_cast<uint64_t>(n) * multiplier) >> 32);
#endif
    return (hi + n) >> shift;  // hi <= n < 2^31: the sum fits in 32 bits
  }
  // n / divisor and n % divisor.
  GRAFT_HOST_DEVICE void divmod(uint32_t n, uint32_t* q, uint32_t* r) const {
    *q = div(n);
    *r = n - *q * divisor;
  }
};

}  // namespace graft::cuda
