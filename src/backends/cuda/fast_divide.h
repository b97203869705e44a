// Division by a run-time divisor without a hardware divide: the divisor's magic multiplier and
// shift are computed once on the host (Granlund & Montgomery, "Division by invariant integers using
// multiplication", 1994), and the kernel divides with one multiply-high, one add and one shift.
// Broadcast kernels divide every element's index by each axis extent; a 32-bit integer division
// costs about twenty instructions, this three. Valid for dividends below 2^31 and divisors in
// [1, 2^31). Plain C++ where no CUDA compiler is involved, so the unit tests check it on the host.
#pragma once

#include <cstdint>
#include <type_traits>

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

// One step of decomposing a flat index into axis coordinates, innermost axis first: returns
// i % dim and leaves i / dim in i. 32-bit indices (below 2^31) divide by `fast` (dim as a
// FastDivide); 64-bit ones with the hardware divide.
template <typename I>
GRAFT_HOST_DEVICE I pop_axis(I& i, I dim, const FastDivide& fast) {
  if constexpr (std::is_same_v<I, int32_t>) {
    uint32_t quot, rem;
    fast.divmod(static_cast<uint32_t>(i), &quot, &rem);
    i = static_cast<I>(quot);
    return static_cast<I>(rem);
  } else {
    const I rem = i % dim;
    i /= dim;
    return rem;
  }
}

}  // namespace graft::cuda
