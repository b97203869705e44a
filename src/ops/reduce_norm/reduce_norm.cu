// The reduce-and-normalize family's CUDA kernels (float accumulation) and ops: Softmax/LogSoftmax
// over an [outer, n, inner] view (a warp or part of one per row when rows are short and
// contiguous), LayerNormalization over the trailing block, and generic reductions over any set of
// axes (up to kMaxRank) with one block per output element, for all ten Reduce ops. Axes come from
// the attribute or a host input.
#include "ops/reduce_norm/reduce_norm.h"

#include <climits>
#include <string>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------------

namespace k {

namespace {

template <typename T>
__global__ void softmax_kernel(bool log, const T* __restrict__ x, T* __restrict__ y, int64_t n, int64_t inner) {
  __shared__ float sh[32];
  const int64_t row = blockIdx.x;
  const int64_t base = (row / inner) * n * inner + row % inner;
  float m = -INFINITY;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) m = fmaxf(m, Elem<T>::ld(x[base + k * inner]));
  m = block_max(m, sh);
  float sum = 0.f;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) sum += expf(Elem<T>::ld(x[base + k * inner]) - m);
  sum = block_sum(sum, sh);
  const float log_sum = logf(sum), inv = 1.f / sum;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
    const float v = Elem<T>::ld(x[base + k * inner]);
    y[base + k * inner] = Elem<T>::st(log ? v - m - log_sum : expf(v - m) * inv);
  }
}

template <typename T>
__global__ void layernorm_kernel(const T* __restrict__ x, const T* __restrict__ scale, int64_t scale_n,
                                 const T* __restrict__ bias, int64_t bias_n, T* __restrict__ y, float* mean_out,
                                 float* inv_out, int64_t inner, float eps) {
  __shared__ float sh[32];
  const T* xp = x + blockIdx.x * inner;
  T* yp = y + blockIdx.x * inner;
  float s = 0.f;
  for (int64_t k = threadIdx.x; k < inner; k += blockDim.x) s += Elem<T>::ld(xp[k]);
  const float mean = block_sum(s, sh) / static_cast<float>(inner);
  float v = 0.f;
  for (int64_t k = threadIdx.x; k < inner; k += blockDim.x) {
    float d = Elem<T>::ld(xp[k]) - mean;
    v += d * d;
  }
  const float inv = rsqrtf(block_sum(v, sh) / static_cast<float>(inner) + eps);
  for (int64_t k = threadIdx.x; k < inner; k += blockDim.x) {
    float o = (Elem<T>::ld(xp[k]) - mean) * inv * Elem<T>::ld(scale[scale_n == 1 ? 0 : k]);
    if (bias) o += Elem<T>::ld(bias[bias_n == 1 ? 0 : k]);
    yp[k] = Elem<T>::st(o);
  }
  if (threadIdx.x == 0) {
    if (mean_out) mean_out[blockIdx.x] = mean;
    if (inv_out) inv_out[blockIdx.x] = inv;
  }
}

// ---- one warp per row (rows of at most kWarpRowMax elements, contiguous) ----
// The row lives in registers: lane l holds the kVec-element groups l, l + 32, ... (kIters of them),
// loaded with one aligned access each when kVec > 1. Max and sums are warp shuffles in fp32, so
// the row is read from memory once and written once.

constexpr int kWarpRowMax = 1024;
constexpr int kRowsPerBlock = kThreads / 32;

template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Loads the groups of row `xr` (n elements, n % kVec == 0) that lane `lane` owns; missing ones get `fill`.
template <typename T, int kVec, int kIters>
__device__ __forceinline__ void load_row(const T* xr, int n, int lane, float fill, float (&v)[kIters][kVec]) {
  const int ng = n / kVec;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int g = lane + 32 * it;
    if (g < ng) {
      const Pack<T, kVec> p = reinterpret_cast<const Pack<T, kVec>*>(xr)[g];
#pragma unroll
      for (int j = 0; j < kVec; ++j) v[it][j] = Elem<T>::ld(p.v[j]);
    } else {
#pragma unroll
      for (int j = 0; j < kVec; ++j) v[it][j] = fill;
    }
  }
}

// Softmax / log-softmax of contiguous rows; x may equal y (in-place scores): every element is read
// into registers before any is written, so no __restrict__.
template <typename T, int kVec, int kIters>
__global__ void softmax_warp_kernel(bool log, const T* x, T* y, int64_t rows, int n) {
  const int lane = threadIdx.x & 31;
  const int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
  if (row >= rows) return;  // whole warps leave together: the shuffles below see full warps
  const T* xr = x + row * n;
  T* yr = y + row * n;
  float v[kIters][kVec];
  load_row<T, kVec, kIters>(xr, n, lane, -INFINITY, v);
  float m = -INFINITY;
#pragma unroll
  for (int it = 0; it < kIters; ++it)
#pragma unroll
    for (int j = 0; j < kVec; ++j) m = fmaxf(m, v[it][j]);
  m = warp_max(m);
  const int ng = n / kVec;
  float sum = 0.f;
#pragma unroll
  for (int it = 0; it < kIters; ++it)
    if (lane + 32 * it < ng)
#pragma unroll
      for (int j = 0; j < kVec; ++j) sum += expf(v[it][j] - m);
  sum = warp_sum(sum);
  const float log_sum = logf(sum), inv = 1.f / sum;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int g = lane + 32 * it;
    if (g >= ng) continue;
    Pack<T, kVec> o;
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      o.v[j] = Elem<T>::st(log ? v[it][j] - m - log_sum : expf(v[it][j] - m) * inv);
    reinterpret_cast<Pack<T, kVec>*>(yr)[g] = o;
  }
}

// Softmax / log-softmax of short contiguous rows (at most 16 groups of kVec): kLanes lanes per
// row, 32 / kLanes rows per warp. One warp per row would leave most lanes idle on rows such as
// deformable attention's 16 weights per head. Rows past the end still take part in the shuffles
// (the xor offsets stay inside a row's lanes) and store nothing.
template <typename T, int kVec, int kLanes>
__global__ void softmax_subwarp_kernel(bool log, const T* x, T* y, int64_t rows, int n) {
  constexpr int kRowsPerWarp = 32 / kLanes;
  const int lane = threadIdx.x & 31, sub = lane % kLanes;
  const int64_t first = (int64_t(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5)) * kRowsPerWarp;
  if (first >= rows) return;  // whole warps leave together
  const int64_t row = first + lane / kLanes;
  const bool mine = row < rows && sub < n / kVec;
  float v[kVec];
  if (mine) {
    const Pack<T, kVec> p = reinterpret_cast<const Pack<T, kVec>*>(x + row * n)[sub];
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] = Elem<T>::ld(p.v[j]);
  } else {
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] = -INFINITY;
  }
  float m = -INFINITY;
#pragma unroll
  for (int j = 0; j < kVec; ++j) m = fmaxf(m, v[j]);
#pragma unroll
  for (int o = kLanes / 2; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float sum = 0.f;
  if (mine) {
#pragma unroll
    for (int j = 0; j < kVec; ++j) sum += expf(v[j] - m);
  }
#pragma unroll
  for (int o = kLanes / 2; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (!mine) return;
  const float log_sum = logf(sum), inv = 1.f / sum;
  Pack<T, kVec> out;
#pragma unroll
  for (int j = 0; j < kVec; ++j) out.v[j] = Elem<T>::st(log ? v[j] - m - log_sum : expf(v[j] - m) * inv);
  reinterpret_cast<Pack<T, kVec>*>(y + row * n)[sub] = out;
}

// LayerNormalization of contiguous rows, two passes over the registers (mean, then the centred
// variance) as the block kernel does. scale/bias: `inner` elements (kVec-aligned when kVec > 1)
// or one.
template <typename T, int kVec, int kIters>
__global__ void layernorm_warp_kernel(const T* __restrict__ x, const T* __restrict__ scale, int64_t scale_n,
                                      const T* __restrict__ bias, int64_t bias_n, T* __restrict__ y,
                                      float* mean_out, float* inv_out, int64_t rows, int inner, float eps) {
  const int lane = threadIdx.x & 31;
  const int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
  if (row >= rows) return;
  float v[kIters][kVec];
  load_row<T, kVec, kIters>(x + row * inner, inner, lane, 0.f, v);
  const int ng = inner / kVec;
  float s = 0.f;
#pragma unroll
  for (int it = 0; it < kIters; ++it)
#pragma unroll
    for (int j = 0; j < kVec; ++j) s += v[it][j];
  const float mean = warp_sum(s) / static_cast<float>(inner);
  float q = 0.f;
#pragma unroll
  for (int it = 0; it < kIters; ++it)
    if (lane + 32 * it < ng)
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        const float d = v[it][j] - mean;
        q += d * d;
      }
  const float inv = rsqrtf(warp_sum(q) / static_cast<float>(inner) + eps);
  T* yr = y + row * inner;
  const float s0 = Elem<T>::ld(scale[0]), b0 = bias ? Elem<T>::ld(bias[0]) : 0.f;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int g = lane + 32 * it;
    if (g >= ng) continue;
    Pack<T, kVec> sc, bi, o;
    if (scale_n != 1) sc = reinterpret_cast<const Pack<T, kVec>*>(scale)[g];
    if (bias && bias_n != 1) bi = reinterpret_cast<const Pack<T, kVec>*>(bias)[g];
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      float r = (v[it][j] - mean) * inv * (scale_n == 1 ? s0 : Elem<T>::ld(sc.v[j]));
      if (bias) r += bias_n == 1 ? b0 : Elem<T>::ld(bi.v[j]);
      o.v[j] = Elem<T>::st(r);
    }
    reinterpret_cast<Pack<T, kVec>*>(yr)[g] = o;
  }
  if (lane == 0) {
    if (mean_out) mean_out[row] = mean;
    if (inv_out) inv_out[row] = inv;
  }
}

// LayerNormalization of short rows (at most 16 groups): kLanes lanes per row, 32 / kLanes rows per
// warp, as softmax_subwarp_kernel. A warp per row left most lanes idle on the channel rows of
// Swin's and ConvNeXt's first stage (96 half-size channels: 12 groups of 8), which ran at about
// 1.2 TB/s on an H200 at batch 32.
template <typename T, int kVec, int kLanes>
__global__ void layernorm_subwarp_kernel(const T* __restrict__ x, const T* __restrict__ scale, int64_t scale_n,
                                         const T* __restrict__ bias, int64_t bias_n, T* __restrict__ y,
                                         float* mean_out, float* inv_out, int64_t rows, int inner, float eps) {
  constexpr int kRowsPerWarp = 32 / kLanes;
  const int lane = threadIdx.x & 31, sub = lane % kLanes;
  const int64_t first = (int64_t(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5)) * kRowsPerWarp;
  if (first >= rows) return;  // whole warps leave together
  const int64_t row = first + lane / kLanes;
  const int ng = inner / kVec;
  const bool mine = row < rows && sub < ng;
  float v[kVec];
  if (mine) {
    const Pack<T, kVec> p = reinterpret_cast<const Pack<T, kVec>*>(x + row * inner)[sub];
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] = Elem<T>::ld(p.v[j]);
  } else {
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] = 0.f;
  }
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < kVec; ++j) s += v[j];
  // XOR partners below kLanes stay inside the row's aligned group of lanes.
#pragma unroll
  for (int o = kLanes / 2; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  const float mean = s / static_cast<float>(inner);
  float q = 0.f;
  if (mine) {
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      const float d = v[j] - mean;
      q += d * d;
    }
  }
#pragma unroll
  for (int o = kLanes / 2; o > 0; o >>= 1) q += __shfl_xor_sync(0xffffffffu, q, o);
  if (!mine) return;
  const float inv = rsqrtf(q / static_cast<float>(inner) + eps);
  const float s0 = Elem<T>::ld(scale[0]), b0 = bias ? Elem<T>::ld(bias[0]) : 0.f;
  Pack<T, kVec> sc, bi, o;
  if (scale_n != 1) sc = reinterpret_cast<const Pack<T, kVec>*>(scale)[sub];
  if (bias && bias_n != 1) bi = reinterpret_cast<const Pack<T, kVec>*>(bias)[sub];
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    float r = (v[j] - mean) * inv * (scale_n == 1 ? s0 : Elem<T>::ld(sc.v[j]));
    if (bias) r += bias_n == 1 ? b0 : Elem<T>::ld(bi.v[j]);
    o.v[j] = Elem<T>::st(r);
  }
  reinterpret_cast<Pack<T, kVec>*>(y + row * inner)[sub] = o;
  if (sub == 0) {
    if (mean_out) mean_out[row] = mean;
    if (inv_out) inv_out[row] = inv;
  }
}

// Launches KERNEL<T, kVec, kIters> with the smallest kIters (a power of two) whose groups cover
// `n`; instantiations stop at 32 values per lane (n <= kWarpRowMax keeps within that).
template <typename T, int kVec, int kIters = 1>
cudaError_t softmax_rows(bool log, const T* x, T* y, int64_t rows, int n, cudaStream_t s) {
  if constexpr (kVec * kIters > 32) {
    return cudaErrorInvalidValue;
  } else {
    if (n > kVec * kIters * 32) return softmax_rows<T, kVec, kIters * 2>(log, x, y, rows, n, s);
    const unsigned grid = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
    softmax_warp_kernel<T, kVec, kIters><<<grid, kThreads, 0, s>>>(log, x, y, rows, n);
    return cudaGetLastError();
  }
}

template <typename T, int kVec, int kIters = 1>
cudaError_t layernorm_rows(const T* x, const T* scale, int64_t scale_n, const T* bias, int64_t bias_n, T* y,
                           float* mean, float* inv, int64_t rows, int inner, float eps, cudaStream_t s) {
  if constexpr (kVec * kIters > 32) {
    return cudaErrorInvalidValue;
  } else {
    if (inner > kVec * kIters * 32)
      return layernorm_rows<T, kVec, kIters * 2>(x, scale, scale_n, bias, bias_n, y, mean, inv, rows, inner, eps, s);
    const unsigned grid = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
    layernorm_warp_kernel<T, kVec, kIters><<<grid, kThreads, 0, s>>>(x, scale, scale_n, bias, bias_n, y, mean, inv,
                                                                    rows, inner, eps);
    return cudaGetLastError();
  }
}

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// LayerNormalization rows of at most 16 groups: the sub-warp kernel with the fewest lanes (a power
// of two) that cover a row's groups.
template <typename T, int kVec, int kLanes = 1>
cudaError_t layernorm_short_rows(const T* x, const T* scale, int64_t scale_n, const T* bias, int64_t bias_n, T* y,
                                 float* mean, float* inv, int64_t rows, int inner, float eps, cudaStream_t s) {
  if constexpr (kLanes > 16) {
    return cudaErrorInvalidValue;
  } else {
    if (inner > kVec * kLanes)
      return layernorm_short_rows<T, kVec, kLanes * 2>(x, scale, scale_n, bias, bias_n, y, mean, inv, rows, inner, eps,
                                                       s);
    constexpr int64_t kRowsPerLaunchBlock = int64_t(kRowsPerBlock) * (32 / kLanes);
    const unsigned grid = static_cast<unsigned>((rows + kRowsPerLaunchBlock - 1) / kRowsPerLaunchBlock);
    layernorm_subwarp_kernel<T, kVec, kLanes><<<grid, kThreads, 0, s>>>(x, scale, scale_n, bias, bias_n, y, mean, inv,
                                                                       rows, inner, eps);
    return cudaGetLastError();
  }
}

// Rows of at most 16 groups: the sub-warp kernel with the fewest lanes (a power of two) that
// cover a row's groups.
template <typename T, int kVec, int kLanes = 1>
cudaError_t softmax_short_rows(bool log, const T* x, T* y, int64_t rows, int n, cudaStream_t s) {
  if constexpr (kLanes > 16) {
    return cudaErrorInvalidValue;
  } else {
    if (n > kVec * kLanes) return softmax_short_rows<T, kVec, kLanes * 2>(log, x, y, rows, n, s);
    constexpr int64_t kRowsPerLaunchBlock = int64_t(kRowsPerBlock) * (32 / kLanes);
    const unsigned grid = static_cast<unsigned>((rows + kRowsPerLaunchBlock - 1) / kRowsPerLaunchBlock);
    softmax_subwarp_kernel<T, kVec, kLanes><<<grid, kThreads, 0, s>>>(log, x, y, rows, n);
    return cudaGetLastError();
  }
}

template <typename T>
cudaError_t softmax_last_axis(bool log, const void* x, void* y, int64_t rows, int64_t n, cudaStream_t s) {
  constexpr int V = 16 / sizeof(T);
  const T* px = static_cast<const T*>(x);
  T* py = static_cast<T*>(y);
  const int ni = static_cast<int>(n);
  if (n % V == 0 && aligned16(x) && aligned16(y))
    return n <= 16 * V ? softmax_short_rows<T, V>(log, px, py, rows, ni, s) : softmax_rows<T, V>(log, px, py, rows, ni, s);
  return n <= 16 ? softmax_short_rows<T, 1>(log, px, py, rows, ni, s) : softmax_rows<T, 1>(log, px, py, rows, ni, s);
}

template <typename T>
cudaError_t layernorm_warp(const void* x, const void* scale, int64_t scale_n, const void* bias, int64_t bias_n,
                           void* y, float* mean, float* inv, int64_t rows, int64_t inner, float eps, cudaStream_t s) {
  constexpr int V = 16 / sizeof(T);
  const T* px = static_cast<const T*>(x);
  const T* ps = static_cast<const T*>(scale);
  const T* pb = static_cast<const T*>(bias);
  T* py = static_cast<T*>(y);
  const int in = static_cast<int>(inner);
  const bool vec = inner % V == 0 && aligned16(x) && aligned16(y) && (scale_n == 1 || aligned16(scale)) &&
                   (!bias || bias_n == 1 || aligned16(bias));
  if (vec)
    return in <= 16 * V ? layernorm_short_rows<T, V>(px, ps, scale_n, pb, bias_n, py, mean, inv, rows, in, eps, s)
                        : layernorm_rows<T, V>(px, ps, scale_n, pb, bias_n, py, mean, inv, rows, in, eps, s);
  return in <= 16 ? layernorm_short_rows<T, 1>(px, ps, scale_n, pb, bias_n, py, mean, inv, rows, in, eps, s)
                  : layernorm_rows<T, 1>(px, ps, scale_n, pb, bias_n, py, mean, inv, rows, in, eps, s);
}

// Block-wide reduction of `v` under `op` with identity `id` (every thread gets the result); `sh`
// holds 32 values.
template <typename A, typename Op>
__device__ __forceinline__ A block_reduce(A v, A* sh, A id, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  v = lane < nw ? sh[lane] : id;
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// NaN sticks, as in the CPU reference (nothing compares greater than it).
__device__ __forceinline__ float max_nan(float a, float b) { return (isnan(a) || a > b) ? a : b; }
__device__ __forceinline__ float min_nan(float a, float b) { return (isnan(a) || a < b) ? a : b; }

template <typename T>
__global__ void reduce_kernel(ReduceKind kind, const T* __restrict__ x, T* __restrict__ y, Strided kept,
                              Strided red, int64_t red_n) {
  __shared__ float sh[32];
  const int64_t base = strided_offset(kept, blockIdx.x);
  auto add = [](float a, float b) { return a + b; };
  float out;
  switch (kind) {
    case ReduceKind::kMax:
    case ReduceKind::kMin: {
      const bool mx = kind == ReduceKind::kMax;
      float acc = mx ? -INFINITY : INFINITY;
      for (int64_t r = threadIdx.x; r < red_n; r += blockDim.x) {
        const float v = Elem<T>::ld(x[base + strided_offset(red, r)]);
        acc = mx ? max_nan(v, acc) : min_nan(v, acc);
      }
      out = mx ? block_reduce(acc, sh, -INFINITY, [](float a, float b) { return max_nan(a, b); })
               : block_reduce(acc, sh, INFINITY, [](float a, float b) { return min_nan(a, b); });
      break;
    }
    case ReduceKind::kProd: {
      float acc = 1.f;
      for (int64_t r = threadIdx.x; r < red_n; r += blockDim.x) acc *= Elem<T>::ld(x[base + strided_offset(red, r)]);
      out = block_reduce(acc, sh, 1.f, [](float a, float b) { return a * b; });
      break;
    }
    case ReduceKind::kLogSumExp: {
      // The max first, so large inputs do not overflow; an infinite max is not subtracted.
      float m = -INFINITY;
      for (int64_t r = threadIdx.x; r < red_n; r += blockDim.x)
        m = fmaxf(m, Elem<T>::ld(x[base + strided_offset(red, r)]));
      m = block_reduce(m, sh, -INFINITY, [](float a, float b) { return fmaxf(a, b); });
      const float sub = isinf(m) ? 0.f : m;
      float acc = 0.f;
      for (int64_t r = threadIdx.x; r < red_n; r += blockDim.x)
        acc += expf(Elem<T>::ld(x[base + strided_offset(red, r)]) - sub);
      out = logf(block_reduce(acc, sh, 0.f, add)) + sub;
      break;
    }
    default: {
      float acc = 0.f;
      for (int64_t r = threadIdx.x; r < red_n; r += blockDim.x) {
        const float v = Elem<T>::ld(x[base + strided_offset(red, r)]);
        acc += kind == ReduceKind::kSumSquare || kind == ReduceKind::kL2 ? v * v
               : kind == ReduceKind::kL1                                ? fabsf(v)
                                                                        : v;
      }
      out = block_reduce(acc, sh, 0.f, add);
      if (kind == ReduceKind::kMean) out /= static_cast<float>(red_n);
      else if (kind == ReduceKind::kL2) out = sqrtf(out);
      else if (kind == ReduceKind::kLogSum) out = logf(out);
      break;
    }
  }
  if (threadIdx.x == 0) y[blockIdx.x] = Elem<T>::st(out);
}

// Integers: int64 accumulation, unsigned so that overflow wraps like the CPU reference.
template <typename T>
__global__ void reduce_int_kernel(ReduceKind kind, const T* __restrict__ x, T* __restrict__ y, Strided kept,
                                  Strided red, int64_t red_n) {
  using U = unsigned long long;
  __shared__ long long sh[32];
  const int64_t base = strided_offset(kept, blockIdx.x);
  const bool mx = kind == ReduceKind::kMax, mn = kind == ReduceKind::kMin, prod = kind == ReduceKind::kProd;
  long long acc = mx ? LLONG_MIN : mn ? LLONG_MAX : prod ? 1 : 0;
  for (int64_t r = threadIdx.x; r < red_n; r += blockDim.x) {
    const long long v = static_cast<long long>(x[base + strided_offset(red, r)]);
    switch (kind) {
      case ReduceKind::kMax: acc = v > acc ? v : acc; break;
      case ReduceKind::kMin: acc = v < acc ? v : acc; break;
      case ReduceKind::kProd: acc = static_cast<long long>(U(acc) * U(v)); break;
      case ReduceKind::kSumSquare: acc = static_cast<long long>(U(acc) + U(v) * U(v)); break;
      case ReduceKind::kL1: acc = static_cast<long long>(U(acc) + U(v < 0 ? -v : v)); break;
      default: acc = static_cast<long long>(U(acc) + U(v)); break;
    }
  }
  long long out;
  if (mx) out = block_reduce(acc, sh, LLONG_MIN, [](long long a, long long b) { return a > b ? a : b; });
  else if (mn) out = block_reduce(acc, sh, LLONG_MAX, [](long long a, long long b) { return a < b ? a : b; });
  else if (prod) out = block_reduce(acc, sh, 1LL, [](long long a, long long b) { return static_cast<long long>(U(a) * U(b)); });
  else out = block_reduce(acc, sh, 0LL, [](long long a, long long b) { return static_cast<long long>(U(a) + U(b)); });
  if (kind == ReduceKind::kMean) out /= red_n;
  if (threadIdx.x == 0) y[blockIdx.x] = static_cast<T>(out);
}

// ---- CumSum -----------------------------------------------------------------------------------

template <typename T>
using ScanAcc = std::conditional_t<kIsFloat<T>, float, long long>;

template <typename T>
__device__ __forceinline__ T scan_store(ScanAcc<T> v) {
  if constexpr (kIsFloat<T>) return Elem<T>::st(v);
  else return static_cast<T>(v);
}

template <typename T>
__global__ void cumsum_line_kernel(bool excl, bool rev, const T* __restrict__ x, T* __restrict__ y, int64_t lines,
                                   int64_t n, int64_t inner) {
  using A = ScanAcc<T>;
  GRAFT_GRID_STRIDE(l, lines) {
    const int64_t o = l / inner, i = l % inner;
    A acc = 0;
    for (int64_t t = 0; t < n; ++t) {
      const int64_t k = rev ? n - 1 - t : t;
      const int64_t off = (o * n + k) * inner + i;
      const A v = static_cast<A>(Elem<T>::ld(x[off]));
      if (!excl) acc += v;
      y[off] = scan_store<T>(acc);
      if (excl) acc += v;
    }
  }
}

// One block per contiguous row: chunks of blockDim.x elements scanned by warp shuffles, with the
// running total carried across chunks.
template <typename T>
__global__ void cumsum_block_kernel(bool excl, bool rev, const T* __restrict__ x, T* __restrict__ y, int64_t n) {
  using A = ScanAcc<T>;
  __shared__ A warp_tot[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  const T* xl = x + int64_t(blockIdx.x) * n;
  T* yl = y + int64_t(blockIdx.x) * n;
  A carry = 0;
  for (int64_t c0 = 0; c0 < n; c0 += blockDim.x) {
    const int64_t t = c0 + threadIdx.x;
    const int64_t k = rev ? n - 1 - t : t;
    const A v = t < n ? static_cast<A>(Elem<T>::ld(xl[k])) : A(0);
    A s = v;
    for (int o = 1; o < 32; o <<= 1) {
      const A u = __shfl_up_sync(kFullWarp, s, o);
      if (lane >= o) s += u;
    }
    if (lane == 31) warp_tot[warp] = s;
    __syncthreads();
    if (warp == 0) {
      A w = lane < nw ? warp_tot[lane] : A(0);
      for (int o = 1; o < 32; o <<= 1) {
        const A u = __shfl_up_sync(kFullWarp, w, o);
        if (lane >= o) w += u;
      }
      if (lane < nw) warp_tot[lane] = w;
    }
    __syncthreads();
    const A incl = carry + (warp > 0 ? warp_tot[warp - 1] : A(0)) + s;
    if (t < n) yl[k] = scan_store<T>(excl ? incl - v : incl);
    carry += warp_tot[nw - 1];
    __syncthreads();  // warp_tot is rewritten by the next chunk
  }
}

}  // namespace

cudaError_t launch_softmax(KType t, bool log, const void* x, void* y, int64_t outer, int64_t n, int64_t inner,
                           cudaStream_t s) {
  const int64_t rows = outer * inner;
  if (rows == 0 || n == 0) return cudaSuccess;
  if (rows > 0x7fffffffLL) return cudaErrorInvalidValue;
  if (inner == 1 && n <= kWarpRowMax) {  // softmax over contiguous rows: one warp per row
    switch (t) {
      case KType::kF32: return softmax_last_axis<float>(log, x, y, rows, n, s);
      case KType::kF16: return softmax_last_axis<__half>(log, x, y, rows, n, s);
      case KType::kBF16: return softmax_last_axis<__nv_bfloat16>(log, x, y, rows, n, s);
      default: return cudaErrorInvalidValue;
    }
  }
  GRAFT_FLOAT_DISPATCH(t, (softmax_kernel<T><<<static_cast<unsigned>(rows), kThreads, 0, s>>>(
                              log, static_cast<const T*>(x), static_cast<T*>(y), n, inner)));
  return cudaGetLastError();
}

cudaError_t launch_layernorm(KType t, const void* x, const void* scale, int64_t scale_n, const void* bias,
                             int64_t bias_n, void* y, float* mean, float* inv_std, int64_t outer, int64_t inner,
                             float eps, cudaStream_t s) {
  if (outer == 0 || inner == 0) return cudaSuccess;
  if (outer > 0x7fffffffLL) return cudaErrorInvalidValue;
  if (inner <= kWarpRowMax) {  // one warp per row, the row in registers
    switch (t) {
      case KType::kF32: return layernorm_warp<float>(x, scale, scale_n, bias, bias_n, y, mean, inv_std, outer, inner, eps, s);
      case KType::kF16: return layernorm_warp<__half>(x, scale, scale_n, bias, bias_n, y, mean, inv_std, outer, inner, eps, s);
      case KType::kBF16:
        return layernorm_warp<__nv_bfloat16>(x, scale, scale_n, bias, bias_n, y, mean, inv_std, outer, inner, eps, s);
      default: return cudaErrorInvalidValue;
    }
  }
  GRAFT_FLOAT_DISPATCH(t, (layernorm_kernel<T><<<static_cast<unsigned>(outer), kThreads, 0, s>>>(
                              static_cast<const T*>(x), static_cast<const T*>(scale), scale_n,
                              static_cast<const T*>(bias), bias_n, static_cast<T*>(y), mean, inv_std, inner, eps)));
  return cudaGetLastError();
}

cudaError_t launch_reduce(KType t, ReduceKind kind, const void* x, void* y, const Strided& kept, int64_t out_n,
                          const Strided& reduced, int64_t red_n, cudaStream_t s) {
  if (out_n == 0) return cudaSuccess;
  if (out_n > 0x7fffffffLL) return cudaErrorInvalidValue;
  const unsigned blocks = static_cast<unsigned>(out_n);
  if (t == KType::kI32 || t == KType::kI64) {
    if (kind == ReduceKind::kL2 || kind == ReduceKind::kLogSum || kind == ReduceKind::kLogSumExp)
      return cudaErrorInvalidValue;
    if (t == KType::kI32)
      reduce_int_kernel<int32_t><<<blocks, kThreads, 0, s>>>(kind, static_cast<const int32_t*>(x),
                                                             static_cast<int32_t*>(y), kept, reduced, red_n);
    else
      reduce_int_kernel<int64_t><<<blocks, kThreads, 0, s>>>(kind, static_cast<const int64_t*>(x),
                                                             static_cast<int64_t*>(y), kept, reduced, red_n);
    return cudaGetLastError();
  }
  GRAFT_FLOAT_DISPATCH(t, (reduce_kernel<T><<<blocks, kThreads, 0, s>>>(kind, static_cast<const T*>(x), static_cast<T*>(y),
                                                                        kept, reduced, red_n)));
  return cudaGetLastError();
}

cudaError_t launch_cumsum(KType t, bool exclusive, bool reverse, const void* x, void* y, int64_t outer, int64_t n,
                          int64_t inner, cudaStream_t s) {
  const int64_t lines = outer * inner;
  if (lines == 0 || n == 0) return cudaSuccess;
  // Contiguous rows, too few to fill the GPU one thread each: one block per row.
  const bool block_rows = inner == 1 && n >= 64 && lines <= 0x7fffffffLL && lines < 8192;
  if (block_rows) {
    const int threads = n >= 1024 ? 1024 : (n >= 256 ? 256 : 64);
    GRAFT_NUMERIC_DISPATCH(t, (cumsum_block_kernel<T><<<static_cast<unsigned>(lines), threads, 0, s>>>(
                                  exclusive, reverse, static_cast<const T*>(x), static_cast<T*>(y), n)));
  } else {
    GRAFT_NUMERIC_DISPATCH(t, (cumsum_line_kernel<T><<<grid_for(lines), kThreads, 0, s>>>(
                                  exclusive, reverse, static_cast<const T*>(x), static_cast<T*>(y), lines, n, inner)));
  }
  return cudaGetLastError();
}

namespace {

// GraftL2Normalize: one warp per row; the sum of squares in float32, reduced across the warp, then
// every element times 1 / max(norm, eps). All lanes of a warp share its row, so they leave together.
template <typename T>
__global__ void l2_normalize_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t n, float eps) {
  const int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x & 31);
  if (row >= rows) return;
  const T* xr = x + row * n;
  T* yr = y + row * n;
  float sum = 0.f;
  for (int64_t k = lane; k < n; k += 32) {
    const float v = Elem<T>::ld(xr[k]);
    sum += v * v;
  }
  const float inv = 1.f / fmaxf(sqrtf(warp_sum(sum)), eps);
  for (int64_t k = lane; k < n; k += 32) yr[k] = Elem<T>::st(Elem<T>::ld(xr[k]) * inv);
}

}  // namespace

cudaError_t launch_l2_normalize(KType t, const void* x, void* y, int64_t rows, int64_t n, float eps, cudaStream_t s) {
  if (rows == 0 || n == 0) return cudaSuccess;
  constexpr int kWarpsPerBlock = 8;
  const int64_t blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (blocks > 0x7fffffffLL) return cudaErrorInvalidValue;
  GRAFT_FLOAT_DISPATCH(t, (l2_normalize_kernel<T><<<static_cast<unsigned>(blocks), kWarpsPerBlock * 32, 0, s>>>(
                              static_cast<const T*>(x), static_cast<T*>(y), rows, n, eps)));
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA ops -------------------------------------------------------------------------------------

namespace {

using namespace util;

bool float_x(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input 0 is missing");
  return require_dtype(n, 0, {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}, why);
}

template <bool kLog>
Status softmax_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  if (x.numel() != y.numel()) return fail(ex, StatusCode::kInternal, "output size differs from input size");
  const bool legacy = ex.ctx->opset > 0 && ex.ctx->opset < 13;
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, attrs_of(ex).get_int("axis", legacy ? 1 : -1));
  if (x.rank() == 0) {  // a scalar: softmax is 1, log-softmax 0
    return launch_status(k::launch_softmax(ktype(x.dtype()), kLog, x.data(), y.data(), 1, 1, 1, stream_of(ex)), ex);
  }
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_attr, x.rank()));
  const AxisView v = axis_view(x.dims(), axis, legacy);  // before opset 13: the 2-D coercion
  return launch_status(k::launch_softmax(ktype(x.dtype()), kLog, x.data(), y.data(), v.outer, v.n, v.inner, stream_of(ex)),
                       ex);
}

bool layernorm_supports(const Node& n, std::string* why) {
  if (!float_x(n, why)) return false;
  if (!has_input(n, 1)) return reject(why, "Scale is missing");
  for (size_t i = 1; i < 3; ++i)
    if (has_input(n, i) && in_dtype(n, i) != in_dtype(n, 0)) return reject(why, "Scale/B dtype differs from X");
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (n.outputs[i] && n.outputs[i]->desc.dtype != DataType::kFloat32)
      return reject(why, "Mean/InvStdDev outputs are handled only as float32");
  return true;
}

Status layernorm_run(CudaExec& ex) {
  const auto& in = ex.ctx->inputs;
  const auto& out = ex.ctx->outputs;
  const Tensor& x = *in[0];
  const Tensor& scale = *in[1];
  const Tensor* bias = in.size() > 2 ? in[2] : nullptr;
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, attrs_of(ex).get_int("axis", -1));
  GRAFT_ASSIGN_OR_RETURN(float eps, attrs_of(ex).get_float("epsilon", 1e-5f));
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_attr, x.rank()));
  int64_t inner = 1;
  for (int64_t d = axis; d < x.rank(); ++d) inner *= x.dims()[d];
  const int64_t outer = inner ? x.numel() / inner : 0;
  for (const Tensor* p : {&scale, bias})
    if (p && p->numel() != inner && p->numel() != 1)
      return fail(ex, StatusCode::kUnsupported, "Scale/B must have the normalized block's size or one element");
  float* mean = out.size() > 1 && out[1] ? static_cast<float*>(out[1]->data()) : nullptr;
  float* inv = out.size() > 2 && out[2] ? static_cast<float*>(out[2]->data()) : nullptr;
  return launch_status(k::launch_layernorm(ktype(x.dtype()), x.data(), scale.data(), scale.numel(), bias ? bias->data() : nullptr,
                                           bias ? bias->numel() : 0, out[0]->data(), mean, inv, outer, inner, eps,
                                           stream_of(ex)), ex);
}

// Integer inputs for every kind the CPU reference takes them for (not L2/LogSum/LogSumExp).
template <k::ReduceKind kKind>
bool reduce_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input 0 is missing");
  constexpr bool kInts = kKind != k::ReduceKind::kL2 && kKind != k::ReduceKind::kLogSum &&
                         kKind != k::ReduceKind::kLogSumExp;
  if (kInts) {
    if (!require_dtype(n, 0, {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kInt32,
                              DataType::kInt64}, why))
      return false;
  } else if (!float_x(n, why)) {
    return false;
  }
  if (has_input(n, 1) && !require_dtype(n, 1, {DataType::kInt64, DataType::kInt32}, why)) return false;
  return true;
}

// With noop_with_empty_axes and no axes, the CPU reference copies the input for the kinds of its
// `reduce` (Sum/Mean/Max/Min/Prod/SumSquare/L2) but applies the per-element function for
// L1/LogSum/LogSumExp (a one-element reduction): |x|, log(x), x.
constexpr bool noop_copies(k::ReduceKind kind) {
  return kind != k::ReduceKind::kL1 && kind != k::ReduceKind::kLogSum && kind != k::ReduceKind::kLogSumExp;
}

template <k::ReduceKind kKind>
Status reduce_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  const Tensor* axes_t = ex.ctx->inputs.size() > 1 ? ex.ctx->inputs[1] : nullptr;
  std::optional<std::vector<int64_t>> axes_in;
  if (axes_t) {
    if (axes_t->device() != DeviceType::kCPU) return fail(ex, StatusCode::kInternal, "axes must be a host input");
    axes_in = axes_t->to_int64_vector();
  }
  GRAFT_ASSIGN_OR_RETURN(graft::ReduceAxes ra, graft::resolve_reduce_axes(attrs_of(ex), x.rank(), axes_t != nullptr, axes_in));
  std::vector<bool> red(static_cast<size_t>(x.rank()), false);
  if (ra.noop && noop_copies(kKind)) {
    if (x.nbytes() != y.nbytes()) return fail(ex, StatusCode::kInternal, "output size differs from input size");
    if (x.nbytes() == 0) return Status::ok();
    return launch_status(cudaMemcpyAsync(y.data(), x.data(), x.nbytes(), cudaMemcpyDeviceToDevice, stream_of(ex)), ex,
                         "cudaMemcpyAsync");
  }
  if (ra.noop) {
    // Copy the input (a reduction over nothing); Sum/Mean/Max/Min of one element is itself.
  } else if (ra.axes.empty()) {
    red.assign(red.size(), true);
  } else {
    for (int64_t a : ra.axes) red[static_cast<size_t>(a)] = true;
  }
  k::Strided kept, rs;
  const auto st = contiguous_strides(x.dims());
  int64_t red_n = 1;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (x.dims()[d] == 1) continue;
    k::Strided& s = red[static_cast<size_t>(d)] ? rs : kept;
    if (s.rank == k::kMaxRank) return fail(ex, StatusCode::kUnsupported, "more than ", k::kMaxRank, " axes");
    s.dims[s.rank] = x.dims()[d];
    s.strides[s.rank] = st[static_cast<size_t>(d)];
    ++s.rank;
    if (red[static_cast<size_t>(d)]) red_n *= x.dims()[d];
  }
  if (y.numel() * red_n != x.numel()) return fail(ex, StatusCode::kInternal, "output shape inconsistent with the axes");
  if (red_n == 0) return fail(ex, StatusCode::kUnsupported, "reduction over an empty axis");
  return launch_status(k::launch_reduce(ktype(x.dtype()), kKind, x.data(), y.data(), kept, y.numel(), rs, red_n, stream_of(ex)), ex);
}

template <k::ReduceKind kKind>
CudaOp reduce_op(const char* name) {
  return CudaOp{name, &reduce_supports<kKind>, &reduce_run<kKind>, {1}, nullptr};
}

// ---- CumSum -----------------------------------------------------------------------------------

bool cumsum_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "needs x and axis");
  return require_dtype(n, 0, kGpuFloatsInts, why);
}

Status cumsum_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  GRAFT_ASSIGN_OR_RETURN(int64_t exclusive, attrs_of(ex).get_int("exclusive", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t reverse, attrs_of(ex).get_int("reverse", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_v, host_scalar(ex, 1, "axis"));
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_v, x.rank()));
  if (x.numel() != y.numel() || x.dtype() != y.dtype()) return fail(ex, StatusCode::kInternal, "output differs from input");
  const AxisView v = axis_view(x.dims(), axis, false);
  return launch_status(k::launch_cumsum(ktype(x.dtype()), exclusive != 0, reverse != 0, x.data(), y.data(), v.outer, v.n,
                                        v.inner, stream_of(ex)), ex);
}

Status l2_normalize_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  if (x.numel() != y.numel()) return fail(ex, StatusCode::kInternal, "output size differs from input size");
  GRAFT_ASSIGN_OR_RETURN(float eps, attrs_of(ex).get_float("eps", 0.f));
  const int64_t n = x.rank() == 0 ? 1 : x.dims().back();
  const int64_t rows = n ? x.numel() / n : 0;
  return launch_status(k::launch_l2_normalize(ktype(x.dtype()), x.data(), y.data(), rows, n, eps, stream_of(ex)), ex);
}

}  // namespace

void append_cuda_reduce_norm_ops(std::vector<CudaOp>& out) {
  out.push_back(CudaOp{"GraftL2Normalize", &float_x, &l2_normalize_run, {}, nullptr});
  out.push_back(CudaOp{"CumSum", &cumsum_supports, &cumsum_run, {1}, nullptr});
  out.push_back(CudaOp{"Softmax", &float_x, &softmax_run<false>, {}, nullptr});
  out.push_back(CudaOp{"LogSoftmax", &float_x, &softmax_run<true>, {}, nullptr});
  out.push_back(CudaOp{"LayerNormalization", &layernorm_supports, &layernorm_run, {}, nullptr});
  out.push_back(reduce_op<k::ReduceKind::kMean>("ReduceMean"));
  out.push_back(reduce_op<k::ReduceKind::kSum>("ReduceSum"));
  out.push_back(reduce_op<k::ReduceKind::kMax>("ReduceMax"));
  out.push_back(reduce_op<k::ReduceKind::kMin>("ReduceMin"));
  out.push_back(reduce_op<k::ReduceKind::kProd>("ReduceProd"));
  out.push_back(reduce_op<k::ReduceKind::kSumSquare>("ReduceSumSquare"));
  out.push_back(reduce_op<k::ReduceKind::kL1>("ReduceL1"));
  out.push_back(reduce_op<k::ReduceKind::kL2>("ReduceL2"));
  out.push_back(reduce_op<k::ReduceKind::kLogSum>("ReduceLogSum"));
  out.push_back(reduce_op<k::ReduceKind::kLogSumExp>("ReduceLogSumExp"));
}

}  // namespace graft::cuda
