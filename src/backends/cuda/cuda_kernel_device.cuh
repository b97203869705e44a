// Device helpers shared by the .cu kernel files: element conversion to the compute type (half types
// compute in float and round once on store) and launch geometry. Included only by .cu files.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "backends/cuda/cuda_kernel_common.cuh"

namespace graft::cuda::k {

// Every lane of a warp, for the *_sync shuffles and votes.
constexpr unsigned kFullWarp = 0xffffffffu;

// The float types (float, __half, __nv_bfloat16, double) against the integers.
template <typename T>
constexpr bool kIsFloat = !std::is_integral_v<T>;

template <typename T> struct Elem {
  using C = T;
  static __device__ __forceinline__ C ld(T v) { return v; }
  static __device__ __forceinline__ T st(C v) { return v; }
};
template <> struct Elem<__half> {
  using C = float;
  static __device__ __forceinline__ float ld(__half v) { return __half2float(v); }
  static __device__ __forceinline__ __half st(float v) { return __float2half_rn(v); }
};
template <> struct Elem<__nv_bfloat16> {
  using C = float;
  static __device__ __forceinline__ float ld(__nv_bfloat16 v) { return __bfloat162float(v); }
  static __device__ __forceinline__ __nv_bfloat16 st(float v) { return __float2bfloat16_rn(v); }
};

// Reports invalid input data (see DataFault): the first report of a run wins, so the engine names
// the first layer that found some.
__device__ __forceinline__ void report_invalid_data(const DataFault& f) {
  if (f.word && *reinterpret_cast<volatile int64_t*>(f.word) == 0)
    atomicCAS(reinterpret_cast<unsigned long long*>(f.word), 0ull, static_cast<unsigned long long>(f.tag));
}

// Any element as double, exactly (as graft's load_as_double on the host).
template <typename T>
__device__ __forceinline__ double as_double(T v) {
  if constexpr (std::is_same_v<T, __half>) return static_cast<double>(__half2float(v));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return static_cast<double>(__bfloat162float(v));
  else return static_cast<double>(v);
}

// graft's double -> int64 (NaN 0, saturating at the ends), so integer stores match the CPU's.
__device__ __forceinline__ int64_t saturating_i64(double v) {
  if (v != v) return 0;
  if (v >= 9223372036854775808.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(v);
}

// graft's store_from_double on the device: half types round through float (as the CPU does, so the
// double rounding matches), integers truncate toward zero, saturate at int64's ends and keep the low
// bits, so a kernel that computes in double stores exactly what the CPU reference stores.
template <typename T>
__device__ __forceinline__ T store_from_double(double v) {
  if constexpr (std::is_same_v<T, double>) return v;
  else if constexpr (std::is_same_v<T, float>) return __double2float_rn(v);
  else if constexpr (std::is_same_v<T, __half>) return __float2half_rn(__double2float_rn(v));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(__double2float_rn(v));
  else return static_cast<T>(saturating_i64(v));
}

// Element i of p as double, and v stored into element i of p (as store_from_double stores it): for
// kernels that accumulate in double, as the CPU references do.
template <typename T>
__device__ __forceinline__ double load_double(const T* p, int64_t i) {
  return as_double(p[i]);
}
template <typename T>
__device__ __forceinline__ void store_double(T* p, int64_t i, double v) {
  p[i] = store_from_double<T>(v);
}

constexpr int kThreads = 256;

inline unsigned grid_for(int64_t n, int per_thread = 1) {
  int64_t blocks = (n + int64_t(kThreads) * per_thread - 1) / (int64_t(kThreads) * per_thread);
  if (blocks < 1) blocks = 1;
  if (blocks > 65535LL * 16) blocks = 65535LL * 16;  // grid-stride loops cover the rest
  return static_cast<unsigned>(blocks);
}

// The current device's multiprocessor count (132 on an H200), for shaping grids; queried on every
// call, so a process on several GPUs sizes each launch for its own device. *n is set only on success.
inline cudaError_t current_multiprocessors(int* n) {
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(n, cudaDevAttrMultiProcessorCount, dev);
  return e;
}

// The same count where it only shapes a grid: an H100-like 132 where there is no device to ask (a
// launch plan is also made host-side, to say whether a problem is taken), the failed query's error
// cleared so that the next launch check does not report it.
inline int multiprocessors_or_default() {
  int n = 0;
  if (current_multiprocessors(&n) != cudaSuccess || n < 1) {
    (void)cudaGetLastError();
    return 132;
  }
  return n;
}

// The power of two >= n (1 for n <= 1): bitonic sort sizes (TopK, the NMS ops' candidate sorts).
__host__ __device__ __forceinline__ int64_t pow2_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

#define GRAFT_GRID_STRIDE(i, n) \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

// Runs CALL with T bound to the device type of a floating KType (float, __half, __nv_bfloat16);
// other types return cudaErrorInvalidValue from the enclosing launcher.
#define GRAFT_FLOAT_DISPATCH(t, CALL)                            \
  switch (t) {                                                   \
    case KType::kF32: { using T = float; CALL; break; }          \
    case KType::kF16: { using T = __half; CALL; break; }         \
    case KType::kBF16: { using T = __nv_bfloat16; CALL; break; } \
    default: return cudaErrorInvalidValue;                       \
  }

// As GRAFT_FLOAT_DISPATCH, then int32 and int64 (the numeric types of the reductions and scatters).
#define GRAFT_NUMERIC_DISPATCH(t, CALL)                          \
  switch (t) {                                                   \
    case KType::kF32: { using T = float; CALL; break; }          \
    case KType::kF16: { using T = __half; CALL; break; }         \
    case KType::kBF16: { using T = __nv_bfloat16; CALL; break; } \
    case KType::kI32: { using T = int32_t; CALL; break; }        \
    case KType::kI64: { using T = int64_t; CALL; break; }        \
    default: return cudaErrorInvalidValue;                       \
  }

// As GRAFT_NUMERIC_DISPATCH, float64, int8 and uint8 included (the windows' and Einsum's types).
#define GRAFT_EVERY_NUMERIC_DISPATCH(t, CALL)                    \
  switch (t) {                                                   \
    case KType::kF32: { using T = float; CALL; break; }          \
    case KType::kF16: { using T = __half; CALL; break; }         \
    case KType::kBF16: { using T = __nv_bfloat16; CALL; break; } \
    case KType::kF64: { using T = double; CALL; break; }         \
    case KType::kI8: { using T = int8_t; CALL; break; }          \
    case KType::kU8: { using T = uint8_t; CALL; break; }         \
    case KType::kI32: { using T = int32_t; CALL; break; }        \
    case KType::kI64: { using T = int64_t; CALL; break; }        \
    default: return cudaErrorInvalidValue;                       \
  }

// As GRAFT_FLOAT_DISPATCH, float64 included (for ops whose CPU references take it).
#define GRAFT_FLOAT64_DISPATCH(t, CALL)                          \
  switch (t) {                                                   \
    case KType::kF32: { using T = float; CALL; break; }          \
    case KType::kF16: { using T = __half; CALL; break; }         \
    case KType::kBF16: { using T = __nv_bfloat16; CALL; break; } \
    case KType::kF64: { using T = double; CALL; break; }         \
    default: return cudaErrorInvalidValue;                       \
  }

// Runs CALL with I bound to an index dtype (int32 or int64).
#define GRAFT_INDEX_DISPATCH(it, CALL)                     \
  switch (it) {                                            \
    case KType::kI32: { using I = int32_t; CALL; break; }  \
    case KType::kI64: { using I = int64_t; CALL; break; }  \
    default: return cudaErrorInvalidValue;                 \
  }

// Kernels that only move elements take an unsigned word E of the element's size.
#define GRAFT_SIZE_DISPATCH(es, CALL)                      \
  switch (es) {                                            \
    case 1: { using E = uint8_t; CALL; break; }            \
    case 2: { using E = uint16_t; CALL; break; }           \
    case 4: { using E = uint32_t; CALL; break; }           \
    case 8: { using E = uint64_t; CALL; break; }           \
    default: return cudaErrorInvalidValue;                 \
  }

// Offset of output element `i` in operand `k` of a broadcast.
__device__ __forceinline__ int64_t bcast_offset(const Bcast& p, int k, int64_t i) {
  int64_t off = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    int64_t q = i % p.dims[d];
    i /= p.dims[d];
    off += q * p.strides[k][d];
  }
  return off;
}

__device__ __forceinline__ int64_t strided_offset(const Strided& p, int64_t i) {
  int64_t off = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    int64_t q = i % p.dims[d];
    i /= p.dims[d];
    off += q * p.strides[d];
  }
  return off;
}

// Block-wide sum of a float or double (every thread gets the result). `sh` holds 32 of them; the
// first barrier lets a block call it again with the same `sh`.
template <typename A>
__device__ __forceinline__ A block_sum(A v, A* sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  v = lane < nw ? sh[lane] : A(0);
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float block_max(float v, float* sh) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  v = lane < nw ? sh[lane] : -INFINITY;
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

}  // namespace graft::cuda::k
