// CUDA kernels of the random ops. See random_kernels.cuh.
#include <curand_kernel.h>

#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/random_kernels.cuh"

namespace graft::cuda::k {
namespace {

// Conversions through double, rounded once to the narrow type (no double rounding via float).
template <typename T> __device__ __forceinline__ T from_double(double v) { return static_cast<T>(v); }
template <> __device__ __forceinline__ __half from_double<__half>(double v) { return __double2half(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_double<__nv_bfloat16>(double v) {
  return __double2bfloat16(v);
}
template <typename T> __device__ __forceinline__ double to_double(T v) { return static_cast<double>(v); }
template <> __device__ __forceinline__ double to_double<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ double to_double<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

using Philox = curandStatePhilox4_32_10_t;

__device__ __forceinline__ uint64_t effective_seed(const RandSeed& s) {
  return s.counter ? splitmix64(s.seed + 0x632be59bd9b4e019ULL * *s.counter) : s.seed;
}

// Element i's stream: the Philox subsequence i of the seed, so every element draws the same values
// whatever thread or launch shape computes it.
__device__ __forceinline__ Philox element_stream(uint64_t seed, int64_t i) {
  Philox st;
  curand_init(seed, static_cast<unsigned long long>(i), 0, &st);
  return st;
}

// A uniform in [0, 1) from 53 bits of two 32-bit words (27 high bits of a, 26 of b).
__device__ __forceinline__ double uniform01(uint32_t a, uint32_t b) {
  return (static_cast<double>(a >> 5) * 67108864.0 + static_cast<double>(b >> 6)) * (1.0 / 9007199254740992.0);
}

__global__ void advance_counter_kernel(uint64_t* counter) { *counter += 1; }

template <typename T>
__global__ void uniform_kernel(RandSeed rs, double low, double high, T* y, int64_t n) {
  const uint64_t seed = effective_seed(rs);
  GRAFT_GRID_STRIDE(i, n) {
    T out = from_double<T>(low);
    if (high != low) {
      Philox st = element_stream(seed, i);
      // Two candidates per 128 bits; a candidate that rounds out of [low, high) in T is dropped.
      bool done = false;
      for (int round = 0; round < 32 && !done; ++round) {
        const uint4 r = curand4(&st);
        const double u[2] = {uniform01(r.x, r.y), uniform01(r.z, r.w)};
        for (int k = 0; k < 2 && !done; ++k) {
          const T c = from_double<T>(low + (high - low) * u[k]);
          const double back = to_double(c);
          if (back >= low && back < high) {
            out = c;
            done = true;
          }
        }
      }
    }
    y[i] = out;
  }
}

template <typename T>
__global__ void normal_kernel(RandSeed rs, double mean, double scale, T* y, int64_t n) {
  const uint64_t seed = effective_seed(rs);
  GRAFT_GRID_STRIDE(i, n) {
    Philox st = element_stream(seed, i);
    const uint4 r = curand4(&st);
    const double u1 = 1.0 - uniform01(r.x, r.y);  // (0, 1]: the log is finite
    const double u2 = uniform01(r.z, r.w);
    const double z = sqrt(-2.0 * log(u1)) * cospi(2.0 * u2);
    y[i] = from_double<T>(mean + scale * z);
  }
}

template <typename P, typename E>
__global__ void bernoulli_kernel(RandSeed rs, const P* p, E one, E* y, int64_t n) {
  const uint64_t seed = effective_seed(rs);
  GRAFT_GRID_STRIDE(i, n) {
    Philox st = element_stream(seed, i);
    const uint4 r = curand4(&st);
    y[i] = uniform01(r.x, r.y) < to_double(p[i]) ? one : E(0);
  }
}

// One thread per (row, sample): three passes over the row (max, total, search). The row is read
// again per sample, which costs classes * samples reads per row; rows are short in practice
// (sampling heads), and the passes stay in L2 for long rows.
template <typename T, typename I>
__global__ void multinomial_kernel(RandSeed rs, const T* x, int64_t batch, int64_t classes, int64_t samples, I* y) {
  const uint64_t seed = effective_seed(rs);
  GRAFT_GRID_STRIDE(i, batch * samples) {
    const T* row = x + (i / samples) * classes;
    double mx = -INFINITY;
    bool bad = false;
    for (int64_t c = 0; c < classes; ++c) {
      const double v = to_double(row[c]);
      bad |= isnan(v) || v == INFINITY;
      mx = fmax(mx, v);
    }
    int64_t pick = 0;
    if (!bad && mx != -INFINITY) {
      double total = 0;
      int64_t last = 0;  // the last class with a positive weight
      for (int64_t c = 0; c < classes; ++c) {
        const double w = exp(to_double(row[c]) - mx);
        total += w;
        if (w > 0) last = c;
      }
      Philox st = element_stream(seed, i);
      const uint4 r = curand4(&st);
      const double u = uniform01(r.x, r.y) * total;
      // The first class whose running sum exceeds u; u rounded up to the total takes the last one.
      double run = 0;
      pick = last;
      for (int64_t c = 0; c < classes; ++c) {
        run += exp(to_double(row[c]) - mx);
        if (run > u) {
          pick = c < last ? c : last;
          break;
        }
      }
    }
    y[i] = static_cast<I>(pick);
  }
}

template <typename T>
__global__ void dropout_kernel(RandSeed rs, double ratio, double scale, const T* x, T* y, bool* mask, int64_t n) {
  const uint64_t seed = effective_seed(rs);
  GRAFT_GRID_STRIDE(i, n) {
    Philox st = element_stream(seed, i);
    const uint4 r = curand4(&st);
    const bool keep = uniform01(r.x, r.y) >= ratio;
    y[i] = keep ? from_double<T>(to_double(x[i]) * scale) : from_double<T>(0.0);
    if (mask) mask[i] = keep;
  }
}

}  // namespace

cudaError_t launch_advance_counter(uint64_t* counter, cudaStream_t s) {
  advance_counter_kernel<<<1, 1, 0, s>>>(counter);
  return cudaGetLastError();
}

cudaError_t launch_random_uniform(KType t, RandSeed seed, double low, double high, void* y, int64_t n,
                                  cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  GRAFT_FLOAT64_DISPATCH(t, (uniform_kernel<T><<<grid_for(n), kThreads, 0, s>>>(seed, low, high,
                                                                                     static_cast<T*>(y), n)));
  return cudaGetLastError();
}

cudaError_t launch_random_normal(KType t, RandSeed seed, double mean, double scale, void* y, int64_t n,
                                 cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  GRAFT_FLOAT64_DISPATCH(t, (normal_kernel<T><<<grid_for(n), kThreads, 0, s>>>(seed, mean, scale,
                                                                                    static_cast<T*>(y), n)));
  return cudaGetLastError();
}

cudaError_t launch_bernoulli(KType pt, RandSeed seed, const void* p, int out_size, uint64_t one_bits, void* y,
                             int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  GRAFT_FLOAT64_DISPATCH(pt, GRAFT_SIZE_DISPATCH(out_size, (bernoulli_kernel<T, E><<<grid_for(n), kThreads, 0, s>>>(
                                                                    seed, static_cast<const T*>(p),
                                                                    static_cast<E>(one_bits), static_cast<E*>(y), n))));
  return cudaGetLastError();
}

cudaError_t launch_multinomial(KType xt, RandSeed seed, const void* x, int64_t batch, int64_t classes,
                               int64_t samples, bool out64, void* y, cudaStream_t s) {
  const int64_t n = batch * samples;
  if (n == 0) return cudaSuccess;
  if (out64) {
    GRAFT_FLOAT64_DISPATCH(xt, (multinomial_kernel<T, int64_t><<<grid_for(n), kThreads, 0, s>>>(
                                        seed, static_cast<const T*>(x), batch, classes, samples, static_cast<int64_t*>(y))));
  } else {
    GRAFT_FLOAT64_DISPATCH(xt, (multinomial_kernel<T, int32_t><<<grid_for(n), kThreads, 0, s>>>(
                                        seed, static_cast<const T*>(x), batch, classes, samples, static_cast<int32_t*>(y))));
  }
  return cudaGetLastError();
}

cudaError_t launch_dropout_train(KType t, RandSeed seed, double ratio, const void* x, void* y, bool* mask,
                                 int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const double scale = 1.0 / (1.0 - ratio);
  GRAFT_FLOAT64_DISPATCH(t, (dropout_kernel<T><<<grid_for(n), kThreads, 0, s>>>(
                                     seed, ratio, scale, static_cast<const T*>(x), static_cast<T*>(y), mask, n)));
  return cudaGetLastError();
}

}  // namespace graft::cuda::k
