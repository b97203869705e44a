// Device helpers shared by graft's NMS kernels (ops/efficient_nms, ops/batched_nms): storage dtype
// <-> double, order-preserving integer keys of scores, std::min/max with the CPU's NaN rule, and a
// block-wide bitonic sort of (key, index) pairs. Header-only, no graft or framework types.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/cuda_kernel_device.cuh"

namespace graft::cuda::nms {

__device__ __forceinline__ double to_double(float v) { return static_cast<double>(v); }
__device__ __forceinline__ double to_double(__half v) { return static_cast<double>(__half2float(v)); }
__device__ __forceinline__ double to_double(double v) { return v; }
template <typename T> __device__ __forceinline__ T from_double(double v);
template <> __device__ __forceinline__ float from_double<float>(double v) { return __double2float_rn(v); }
// Through float, as the CPU's float16 store does (double -> float -> half).
template <> __device__ __forceinline__ __half from_double<__half>(double v) {
  return __float2half_rn(__double2float_rn(v));
}
template <> __device__ __forceinline__ double from_double<double>(double v) { return v; }

// Unsigned keys whose order is the order of the (non-NaN) scores; -0 and +0 share one key because
// the CPU compares them equal. float16 and float32 scores convert exactly to float, so 32 bits do.
// No non-NaN score has key 0, so 0 marks padding that sorts last.
template <typename T> struct KeyBits { static constexpr int value = 32; };
template <> struct KeyBits<double> { static constexpr int value = 64; };

__device__ __forceinline__ uint64_t float_key(float f) {
  if (f == 0.0f) f = 0.0f;
  const uint32_t u = __float_as_uint(f);
  return static_cast<uint64_t>((u & 0x80000000u) ? ~u : (u | 0x80000000u));
}
__device__ __forceinline__ uint64_t score_key(float v) { return float_key(v); }
__device__ __forceinline__ uint64_t score_key(__half v) { return float_key(__half2float(v)); }
__device__ __forceinline__ uint64_t score_key(double d) {
  if (d == 0.0) d = 0.0;
  const uint64_t u = static_cast<uint64_t>(__double_as_longlong(d));
  return (u >> 63) ? ~u : (u | (uint64_t{1} << 63));
}

// std::min / std::max exactly (which argument wins on NaN or signed zeros).
__device__ __forceinline__ double std_min(double a, double b) { return b < a ? b : a; }
__device__ __forceinline__ double std_max(double a, double b) { return a < b ? b : a; }

struct Box4 {
  double v[4];
};

__device__ __forceinline__ Box4 ordered(const Box4& c) {
  return {{std_min(c.v[0], c.v[2]), std_min(c.v[1], c.v[3]), std_max(c.v[0], c.v[2]), std_max(c.v[1], c.v[3])}};
}

template <typename T>
__device__ __forceinline__ Box4 load4(const T* p) {
  return {{to_double(p[0]), to_double(p[1]), to_double(p[2]), to_double(p[3])}};
}

using k::pow2_at_least;  // backends/cuda/cuda_kernel_device.cuh

// Sorts [0, p) (p a power of two) best first: key descending, then index ascending. Every thread of
// the block must call it; it ends with the block synchronized.
__device__ __forceinline__ void block_bitonic_sort(uint64_t* keys, uint32_t* index, unsigned int p) {
  for (unsigned int k = 2; k <= p; k <<= 1) {
    for (unsigned int j = k >> 1; j > 0; j >>= 1) {
      for (unsigned int i = threadIdx.x; i < p; i += blockDim.x) {
        const unsigned int l = i ^ j;
        if (l <= i) continue;
        const uint64_t ki = keys[i], kl = keys[l];
        const uint32_t ii = index[i], il = index[l];
        const bool l_first = kl > ki || (kl == ki && il < ii);
        if ((i & k) == 0 ? l_first : !l_first) {
          keys[i] = kl;
          keys[l] = ki;
          index[i] = il;
          index[l] = ii;
        }
      }
      __syncthreads();
    }
  }
}

// Sorts the m pairs in [0, m) best first, padding them to the next power of two p with entries that
// sort last (key 0, which no non-NaN score has, and index ~0); [0, p) must be writable. Every
// thread of the block must call it.
__device__ __forceinline__ void block_sort_best_first(uint64_t* keys, uint32_t* index, unsigned int m) {
  const unsigned int p = static_cast<unsigned int>(pow2_at_least(m));
  for (unsigned int i = m + threadIdx.x; i < p; i += blockDim.x) {
    keys[i] = 0;
    index[i] = 0xffffffffu;
  }
  __syncthreads();
  block_bitonic_sort(keys, index, p);
}

// Puts the best min(count, cap) candidates among positions [0, total) into keys/index[0, m) in any
// order and returns m. `candidate(e, &key)` says whether position e is one (and its score key).
// When more than cap pass, a radix select over the keys, most significant digit first, finds the
// key of the cap-th best; every candidate above it is kept, and those equal to it in position
// order, so the kept set is exactly the first cap of the order (key desc, position asc).
// Every thread of the block must call it; blockDim.x must be a multiple of 32 and at most 1024.
template <int kKeyBits, typename Candidate>
__device__ unsigned int block_select_best(const Candidate& candidate, int64_t total, unsigned int cap,
                                          uint64_t* keys, uint32_t* index) {
  __shared__ unsigned int hist[256];
  __shared__ unsigned int warp_counts[32];
  __shared__ unsigned int s_count, s_fill, s_digit, s_remaining;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, threads = blockDim.x, warps = threads / 32;
  if (tid == 0) {
    s_count = 0;
    s_fill = 0;
  }
  __syncthreads();
  {
    unsigned int local = 0;
    uint64_t key;
    for (int64_t e = tid; e < total; e += threads) local += candidate(e, &key) ? 1u : 0u;
    if (local) atomicAdd(&s_count, local);
  }
  __syncthreads();
  const unsigned int count = s_count;
  const unsigned int m = count < cap ? count : cap;
  if (count <= cap) {
    for (int64_t e = tid; e < total; e += threads) {
      uint64_t key;
      if (candidate(e, &key)) {
        const unsigned int slot = atomicAdd(&s_fill, 1u);
        keys[slot] = key;
        index[slot] = static_cast<uint32_t>(e);
      }
    }
    __syncthreads();
    return m;
  }
  // After the last digit `prefix` is the key of the cap-th best candidate and `remaining` the
  // number of candidates with that key that are kept.
  uint64_t prefix = 0, mask = 0;
  unsigned int remaining = cap;
  for (int shift = kKeyBits - 8; shift >= 0; shift -= 8) {
    for (int d = tid; d < 256; d += threads) hist[d] = 0;
    __syncthreads();
    for (int64_t e = tid; e < total; e += threads) {
      uint64_t key;
      if (candidate(e, &key) && (key & mask) == prefix) atomicAdd(&hist[static_cast<unsigned int>(key >> shift) & 255u], 1u);
    }
    __syncthreads();
    if (tid == 0) {
      unsigned int above = 0;
      for (int d = 255; d >= 0; --d) {
        if (above + hist[d] >= remaining) {
          s_digit = static_cast<unsigned int>(d);
          s_remaining = remaining - above;
          break;
        }
        above += hist[d];
      }
    }
    __syncthreads();
    prefix |= static_cast<uint64_t>(s_digit) << shift;
    mask |= uint64_t{255} << shift;
    remaining = s_remaining;
    __syncthreads();  // s_digit / s_remaining are rewritten by the next digit
  }
  const uint64_t pivot = prefix;
  const unsigned int need = remaining;
  for (int64_t e = tid; e < total; e += threads) {
    uint64_t key;
    if (candidate(e, &key) && key > pivot) {
      const unsigned int slot = atomicAdd(&s_fill, 1u);
      keys[slot] = key;
      index[slot] = static_cast<uint32_t>(e);
    }
  }
  // The first `need` candidates with the pivot key in position order fill slots [cap - need, cap).
  const unsigned int first = cap - need;
  unsigned int taken = 0;
  for (int64_t start = 0; start < total && taken < need; start += threads) {
    const int64_t e = start + tid;
    uint64_t key = 0;
    const bool tie = e < total && candidate(e, &key) && key == pivot;
    const unsigned int ballot = __ballot_sync(0xffffffffu, tie);
    if (lane == 0) warp_counts[warp] = static_cast<unsigned int>(__popc(ballot));
    __syncthreads();
    unsigned int pos = taken + static_cast<unsigned int>(__popc(ballot & ((1u << lane) - 1u)));
    unsigned int chunk = 0;
    for (int w = 0; w < warps; ++w) {
      if (w < warp) pos += warp_counts[w];
      chunk += warp_counts[w];
    }
    if (tie && pos < need) {
      keys[first + pos] = key;
      index[first + pos] = static_cast<uint32_t>(e);
    }
    __syncthreads();  // warp_counts is rewritten by the next chunk
    taken += chunk;
  }
  __syncthreads();
  return m;
}


}  // namespace graft::cuda::nms
