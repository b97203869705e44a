#include "backends/cuda/extra_kernels.cuh"

#include <climits>
#include <cstring>
#include <type_traits>

#include "backends/cuda/cuda_kernel_device.cuh"

namespace graft::cuda::k {
namespace {

constexpr unsigned kFull = 0xffffffffu;

template <typename T>
constexpr bool kIsFloat = !std::is_integral_v<T>;

// ---- Sum / Mean -------------------------------------------------------------------------------

template <typename T, bool kFloat = kIsFloat<T>>
struct SumAcc {
  using type = float;
};
template <typename T>
struct SumAcc<T, false> {
  using type = std::make_unsigned_t<T>;  // integers wrap
};

template <typename T>
__global__ void variadic_sum_kernel(VarBcast p, T* out, int64_t n, float scale) {
  using Acc = typename SumAcc<T>::type;
  GRAFT_GRID_STRIDE(i, n) {
    int64_t off[kMaxVariadic];
#pragma unroll
    for (int k = 0; k < kMaxVariadic; ++k) off[k] = 0;
    int64_t r = i;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t q = r % p.dims[d];
      r /= p.dims[d];
#pragma unroll
      for (int k = 0; k < kMaxVariadic; ++k)
        if (k < p.count) off[k] += q * p.strides[k][d];
    }
    Acc acc = 0;
#pragma unroll
    for (int k = 0; k < kMaxVariadic; ++k)
      if (k < p.count) acc += static_cast<Acc>(Elem<T>::ld(static_cast<const T*>(p.in[k])[off[k]]));
    if constexpr (kIsFloat<T>) out[i] = Elem<T>::st(acc * scale);
    else out[i] = static_cast<T>(acc);
  }
}

// ---- IsNaN / IsInf ----------------------------------------------------------------------------

template <typename T>
__global__ void float_class_kernel(bool inf, bool neg, bool pos, const T* __restrict__ x, uint8_t* __restrict__ y,
                                   int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    const float v = Elem<T>::ld(x[i]);
    y[i] = inf ? (isinf(v) && (v > 0.f ? pos : neg)) : isnan(v);
  }
}

// ---- ArgMax / ArgMin / Hardmax ----------------------------------------------------------------

template <typename K>
__device__ __forceinline__ bool is_nan_key(K v) {
  if constexpr (std::is_floating_point_v<K>) return isnan(v);
  else return false;
}

// Key type of an element for comparisons: float for the float types, long long for integers.
template <typename T>
using KeyOf = std::conditional_t<kIsFloat<T>, float, long long>;

template <typename T>
__device__ __forceinline__ KeyOf<T> key_of(T v) {
  return static_cast<KeyOf<T>>(Elem<T>::ld(v));
}

// The CPU reference's sequential scan over one line, exactly (NaN included).
template <typename T>
__device__ __forceinline__ int64_t arg_scan(const T* x, int64_t base, int64_t n, int64_t inner, bool want_max,
                                            bool last) {
  auto best = key_of(x[base]);
  int64_t best_k = 0;
  for (int64_t k = 1; k < n; ++k) {
    const auto val = key_of(x[base + k * inner]);
    const bool better = want_max ? (last ? val >= best : val > best) : (last ? val <= best : val < best);
    if (better) {
      best = val;
      best_k = k;
    }
  }
  return best_k;
}

// One warp per contiguous row: each lane scans a strided part, skipping NaN, then the lanes
// combine (value, index) pairs; ties break by index, so the result is the sequential scan's.
template <typename T>
__device__ __forceinline__ int64_t arg_warp(const T* row, int64_t n, bool want_max, bool last) {
  using K = KeyOf<T>;
  const int lane = threadIdx.x & 31;
  K bv = K(0);
  long long bi = -1;
  auto better = [&](K va, long long ia, K vb, long long ib) {
    if (ia < 0) return false;
    if (ib < 0) return true;
    if (va != vb) return want_max ? va > vb : va < vb;
    return last ? ia > ib : ia < ib;
  };
  for (int64_t k = lane; k < n; k += 32) {
    const K v = key_of(row[k]);
    if (is_nan_key(v)) continue;
    if (better(v, k, bv, bi)) {
      bv = v;
      bi = k;
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    const K ov = __shfl_xor_sync(kFull, bv, o);
    const long long oi = __shfl_xor_sync(kFull, bi, o);
    if (better(ov, oi, bv, bi)) {
      bv = ov;
      bi = oi;
    }
  }
  if (is_nan_key(key_of(row[0])) || bi < 0) return 0;
  return bi;
}

constexpr int kWarpsPerBlock = kThreads / 32;

template <typename T>
__global__ void arg_warp_kernel(bool want_max, bool last, const T* __restrict__ x, int64_t* __restrict__ y,
                                int64_t rows, int64_t n) {
  const int64_t warps = int64_t(gridDim.x) * kWarpsPerBlock;
  for (int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); r < rows; r += warps) {
    const int64_t b = arg_warp(x + r * n, n, want_max, last);
    if ((threadIdx.x & 31) == 0) y[r] = b;
  }
}

template <typename T>
__global__ void arg_line_kernel(bool want_max, bool last, const T* __restrict__ x, int64_t* __restrict__ y,
                                int64_t lines, int64_t n, int64_t inner) {
  GRAFT_GRID_STRIDE(l, lines) {
    const int64_t o = l / inner, i = l % inner;
    y[l] = arg_scan(x, o * n * inner + i, n, inner, want_max, last);
  }
}

template <typename T>
__global__ void hardmax_warp_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t n) {
  const int64_t warps = int64_t(gridDim.x) * kWarpsPerBlock;
  for (int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); r < rows; r += warps) {
    const int64_t b = arg_warp(x + r * n, n, true, false);
    for (int64_t k = threadIdx.x & 31; k < n; k += 32) y[r * n + k] = Elem<T>::st(k == b ? 1.f : 0.f);
  }
}

template <typename T>
__global__ void hardmax_line_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t lines, int64_t n,
                                    int64_t inner) {
  GRAFT_GRID_STRIDE(l, lines) {
    const int64_t o = l / inner, i = l % inner, base = o * n * inner + i;
    const int64_t b = arg_scan(x, base, n, inner, true, false);
    for (int64_t k = 0; k < n; ++k) y[base + k * inner] = Elem<T>::st(k == b ? 1.f : 0.f);
  }
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
      const A u = __shfl_up_sync(kFull, s, o);
      if (lane >= o) s += u;
    }
    if (lane == 31) warp_tot[warp] = s;
    __syncthreads();
    if (warp == 0) {
      A w = lane < nw ? warp_tot[lane] : A(0);
      for (int o = 1; o < 32; o <<= 1) {
        const A u = __shfl_up_sync(kFull, w, o);
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

// ---- Trilu ------------------------------------------------------------------------------------

template <typename E>
__global__ void trilu_kernel(bool upper, int64_t k, const E* __restrict__ x, E* __restrict__ y, int64_t total,
                             int64_t rows, int64_t cols) {
  GRAFT_GRID_STRIDE(i, total) {
    const int64_t c = i % cols, r = (i / cols) % rows;
    const bool keep = upper ? c - r >= k : c - r <= k;
    y[i] = keep ? x[i] : E(0);
  }
}

// ---- OneHot -----------------------------------------------------------------------------------

template <typename E, typename IT>
__global__ void one_hot_kernel(const IT* __restrict__ idx, const E* __restrict__ vals, E* __restrict__ out,
                               int64_t total, int64_t depth, int64_t inner) {
  const E off_v = vals[0], on_v = vals[1];
  GRAFT_GRID_STRIDE(j, total) {
    const int64_t i = j % inner, d = (j / inner) % depth, o = j / (inner * depth);
    // As the CPU reference: the value as double, truncated toward zero.
    int64_t k = static_cast<int64_t>(static_cast<double>(Elem<IT>::ld(idx[o * inner + i])));
    if (k < 0) k += depth;
    out[j] = d == k ? on_v : off_v;
  }
}

// ---- TopK -------------------------------------------------------------------------------------

template <typename T>
constexpr size_t topk_slot_bytes() {
  return sizeof(KeyOf<T>) + sizeof(int32_t);
}

constexpr size_t kTopkSharedMax = 48 * 1024;

// Whether entry (ka, ia) comes before (kb, ib): padding (index >= n) last; NaN counts as larger
// than every number; then by value; equal values in index order (stable).
template <typename K>
__device__ __forceinline__ bool topk_before(bool largest, K ka, int ia, K kb, int ib, int n) {
  if (ia >= n) return false;
  if (ib >= n) return true;
  const bool na = is_nan_key(ka), nb = is_nan_key(kb);
  if (na || nb) {
    if (na && nb) return ia < ib;
    return largest ? na : nb;
  }
  if (ka != kb) return largest ? ka > kb : ka < kb;
  return ia < ib;
}

// Bitonic sort of P (a power of two) entries in place, best first in topk_before's order; every
// thread of the block takes part.
template <typename K>
__device__ void topk_bitonic_sort(bool largest, K* keys, int* idx, int P, int n) {
  for (int size = 2; size <= P; size <<= 1)
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int t = threadIdx.x; t < P; t += blockDim.x) {
        const int j = t ^ stride;
        if (j <= t) continue;
        const bool t_first = (t & size) == 0;
        const bool swap = t_first ? topk_before(largest, keys[j], idx[j], keys[t], idx[t], n)
                                  : topk_before(largest, keys[t], idx[t], keys[j], idx[j], n);
        if (swap) {
          const K kt = keys[t];
          keys[t] = keys[j];
          keys[j] = kt;
          const int it = idx[t];
          idx[t] = idx[j];
          idx[j] = it;
        }
      }
      __syncthreads();
    }
}

// The output of a line's best k entries (sorted): the element itself (not the key) so the value is
// bit-exact, and its index.
template <typename T>
__device__ __forceinline__ void topk_emit(const T* __restrict__ x, T* __restrict__ vals, int64_t* __restrict__ inds,
                                          const int* idx, int64_t o, int64_t i, int64_t n, int64_t inner, int64_t k) {
  const int64_t base = o * n * inner + i;
  for (int64_t t = threadIdx.x; t < k; t += blockDim.x) {
    const int64_t out = (o * k + t) * inner + i;
    vals[out] = x[base + int64_t(idx[t]) * inner];
    if (inds) inds[out] = idx[t];
  }
}

// One block per line: the whole line sorted in shared memory, or in the workspace (gkeys, gidx)
// when it is too long for shared memory and k too large for the tournament below.
template <typename T>
__global__ void topk_kernel(bool largest, const T* __restrict__ x, T* __restrict__ vals, int64_t* __restrict__ inds,
                            int n, int64_t inner, int64_t k, int P, KeyOf<T>* gkeys, int* gidx) {
  using K = KeyOf<T>;
  extern __shared__ __align__(16) unsigned char topk_smem[];
  K* keys;
  int* idx;
  if (gkeys) {
    keys = gkeys + int64_t(blockIdx.x) * P;
    idx = gidx + int64_t(blockIdx.x) * P;
  } else {
    keys = reinterpret_cast<K*>(topk_smem);
    idx = reinterpret_cast<int*>(keys + P);
  }
  const int64_t line = blockIdx.x, o = line / inner, i = line % inner;
  const int64_t base = o * n * inner + i;
  for (int t = threadIdx.x; t < P; t += blockDim.x) {
    keys[t] = t < n ? key_of(x[base + int64_t(t) * inner]) : K(0);
    idx[t] = t < n ? t : INT_MAX;
  }
  __syncthreads();
  topk_bitonic_sort(largest, keys, idx, P, n);
  topk_emit(x, vals, inds, idx, o, i, n, inner, k);
}

// Lines too long for shared memory (e.g. a detector's top 1000 of 90,000 scores): a tournament.
// Each round cuts every line into chunks of kTopkChunk entries; one block per (line, chunk) sorts
// its chunk in shared memory and keeps the chunk's best k (key, index) pairs as the next round's
// entries. The order (value, then index) is total, so the line's best k survive every round, and
// the last round (one chunk per line) emits them. Round 0 reads the input (line stride `inner`),
// later rounds the previous round's pairs; padding pairs carry index INT_MAX (>= n: last).
// With 2k <= kTopkChunk each round at least halves the entries, and every round runs
// lines x chunks blocks, where the one-block-per-line sort above leaves most of the GPU idle.
constexpr int kTopkChunk = 4096;
constexpr int kTopkChunkThreads = 512;

template <typename T>
__global__ void __launch_bounds__(kTopkChunkThreads)
    topk_round_kernel(bool largest, const T* __restrict__ x, const KeyOf<T>* __restrict__ in_keys,
                      const int* __restrict__ in_idx, int64_t m, int n, int64_t inner, int64_t k, int64_t chunks,
                      int P, KeyOf<T>* __restrict__ out_keys, int* __restrict__ out_idx, T* __restrict__ vals,
                      int64_t* __restrict__ inds) {
  using K = KeyOf<T>;
  __shared__ K keys[kTopkChunk];
  __shared__ int idx[kTopkChunk];
  const int64_t line = blockIdx.x / chunks, chunk = blockIdx.x % chunks;
  const int64_t o = line / inner, i = line % inner, first = chunk * kTopkChunk;
  for (int t = threadIdx.x; t < P; t += blockDim.x) {
    const int64_t j = first + t;
    K key = K(0);
    int id = INT_MAX;
    if (j < m) {
      if (in_keys) {
        key = in_keys[line * m + j];
        id = in_idx[line * m + j];
      } else {
        key = key_of(x[(o * n + j) * inner + i]);
        id = static_cast<int>(j);
      }
    }
    keys[t] = key;
    idx[t] = id;
  }
  __syncthreads();
  topk_bitonic_sort(largest, keys, idx, P, n);
  if (vals) {  // the last round: one chunk per line
    topk_emit(x, vals, inds, idx, o, i, n, inner, k);
    return;
  }
  const int64_t dst = line * chunks * k + chunk * k;
  for (int64_t t = threadIdx.x; t < k; t += blockDim.x) {
    out_keys[dst + t] = keys[t];
    out_idx[dst + t] = idx[t];
  }
}

// ---- Compress ---------------------------------------------------------------------------------

template <typename E>
__global__ void compress_kernel(const E* __restrict__ x, E* __restrict__ y, int64_t total, int64_t n, int64_t inner,
                                int64_t kn, int64_t t0, CompressChunk c) {
  GRAFT_GRID_STRIDE(j, total) {
    const int64_t i = j % inner, s = (j / inner) % c.count, o = j / (inner * c.count);
    y[(o * kn + t0 + s) * inner + i] = x[(o * n + c.src[s]) * inner + i];
  }
}

// ---- ConstantOfShape, Range ---------------------------------------------------------------------

template <typename E>
__global__ void fill_kernel(E v, E* __restrict__ out, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) out[i] = v;
}

template <typename T>
__global__ void range_kernel(double start, double delta, int64_t istart, int64_t idelta, T* __restrict__ out,
                             int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    if constexpr (kIsFloat<T>) {
      out[i] = Elem<T>::st(static_cast<float>(start + static_cast<double>(i) * delta));
    } else {
      using U = unsigned long long;
      out[i] = static_cast<T>(static_cast<long long>(U(istart) + U(i) * U(idelta)));
    }
  }
}

__global__ void celu_kernel(const float* x, float* y, int64_t n, float alpha) {
  GRAFT_GRID_STRIDE(i, n) {
    const float v = x[i];
    // expm1f as the CPU reference uses std::expm1: no cancellation for small negative inputs.
    y[i] = v > 0.0f ? v : alpha * expm1f(v / alpha);
  }
}

}  // namespace

template <typename E>
cudaError_t fill_as(uint64_t bits, void* out, int64_t n, cudaStream_t s) {
  E v;
  memcpy(&v, &bits, sizeof(E));
  fill_kernel<E><<<grid_for(n), kThreads, 0, s>>>(v, static_cast<E*>(out), n);
  return cudaGetLastError();
}

cudaError_t launch_fill(int elem_size, uint64_t bits, void* out, int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  switch (elem_size) {
    case 1: return fill_as<uint8_t>(bits, out, n, s);
    case 2: return fill_as<uint16_t>(bits, out, n, s);
    case 4: return fill_as<uint32_t>(bits, out, n, s);
    case 8: return fill_as<uint64_t>(bits, out, n, s);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t launch_range(KType t, double start, double delta, int64_t istart, int64_t idelta, void* out, int64_t n,
                         cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  GRAFT_NUMERIC_DISPATCH(t, (range_kernel<T><<<grid_for(n), kThreads, 0, s>>>(start, delta, istart, idelta,
                                                                              static_cast<T*>(out), n)));
  return cudaGetLastError();
}

cudaError_t launch_variadic_sum(KType t, const VarBcast& p, void* out, int64_t n, float scale, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  if (p.count < 1 || p.count > kMaxVariadic) return cudaErrorInvalidValue;
  GRAFT_NUMERIC_DISPATCH(t, (variadic_sum_kernel<T><<<grid_for(n), kThreads, 0, s>>>(p, static_cast<T*>(out), n, scale)));
  return cudaGetLastError();
}

cudaError_t launch_float_class(KType t, bool inf, bool neg, bool pos, const void* x, void* y, int64_t n,
                               cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  GRAFT_FLOAT_DISPATCH(t, (float_class_kernel<T><<<grid_for(n), kThreads, 0, s>>>(
                              inf, neg, pos, static_cast<const T*>(x), static_cast<uint8_t*>(y), n)));
  return cudaGetLastError();
}

cudaError_t launch_arg_reduce(KType t, bool want_max, bool last, const void* x, int64_t* y, int64_t outer, int64_t n,
                              int64_t inner, cudaStream_t s) {
  const int64_t lines = outer * inner;
  if (lines == 0) return cudaSuccess;
  if (n == 0) return cudaErrorInvalidValue;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x);
    if (inner == 1 && n >= 32)
      arg_warp_kernel<T><<<grid_for(lines * 32), kThreads, 0, s>>>(want_max, last, px, y, lines, n);
    else
      arg_line_kernel<T><<<grid_for(lines), kThreads, 0, s>>>(want_max, last, px, y, lines, n, inner);
  };
  switch (t) {
    case KType::kF32: run(float{}); break;
    case KType::kF16: run(__half{}); break;
    case KType::kBF16: run(__nv_bfloat16{}); break;
    case KType::kI8: run(int8_t{}); break;
    case KType::kU8: run(uint8_t{}); break;
    case KType::kI32: run(int32_t{}); break;
    case KType::kI64: run(int64_t{}); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_hardmax(KType t, const void* x, void* y, int64_t outer, int64_t n, int64_t inner, cudaStream_t s) {
  const int64_t lines = outer * inner;
  if (lines == 0 || n == 0) return cudaSuccess;
  if (inner == 1 && n >= 32) {
    GRAFT_FLOAT_DISPATCH(t, (hardmax_warp_kernel<T><<<grid_for(lines * 32), kThreads, 0, s>>>(
                                static_cast<const T*>(x), static_cast<T*>(y), lines, n)));
  } else {
    GRAFT_FLOAT_DISPATCH(t, (hardmax_line_kernel<T><<<grid_for(lines), kThreads, 0, s>>>(
                                static_cast<const T*>(x), static_cast<T*>(y), lines, n, inner)));
  }
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

cudaError_t launch_trilu(int elem_size, bool upper, int64_t k, const void* x, void* y, int64_t planes, int64_t rows,
                         int64_t cols, cudaStream_t s) {
  const int64_t total = planes * rows * cols;
  if (total == 0) return cudaSuccess;
  GRAFT_SIZE_DISPATCH(elem_size, (trilu_kernel<E><<<grid_for(total), kThreads, 0, s>>>(
                                     upper, k, static_cast<const E*>(x), static_cast<E*>(y), total, rows, cols)));
  return cudaGetLastError();
}


cudaError_t launch_one_hot(KType idx_t, int elem_size, const void* idx, const void* vals, void* out, int64_t outer,
                           int64_t depth, int64_t inner, cudaStream_t s) {
  const int64_t total = outer * depth * inner;
  if (total == 0) return cudaSuccess;
  auto run = [&](auto tag) -> cudaError_t {
    using IT = decltype(tag);
    GRAFT_SIZE_DISPATCH(elem_size, (one_hot_kernel<E, IT><<<grid_for(total), kThreads, 0, s>>>(
                                       static_cast<const IT*>(idx), static_cast<const E*>(vals), static_cast<E*>(out),
                                       total, depth, inner)));
    return cudaGetLastError();
  };
  switch (idx_t) {
    case KType::kI32: return run(int32_t{});
    case KType::kI64: return run(int64_t{});
    case KType::kF32: return run(float{});
    case KType::kF16: return run(__half{});
    case KType::kBF16: return run(__nv_bfloat16{});
    default: return cudaErrorInvalidValue;
  }
}

// Whether a line of n entries takes the tournament (too long for shared memory, k small enough
// for each round to shrink the line).
template <typename T>
bool topk_uses_tournament(int64_t n, int64_t k) {
  return static_cast<size_t>(pow2_at_least(n)) * topk_slot_bytes<T>() > kTopkSharedMax && 2 * k <= kTopkChunk;
}

// Workspace of a line too long for shared memory: the global-memory sort's P entries per line. It
// also covers the tournament for every k it takes: two buffers of ceil(n / C) * k pairs per line
// with 2k <= C is at most ceil(n / C) * C <= P pairs (P and C are powers of two, P > C). So the size
// does not depend on K, which is known only at run time.
template <typename T>
size_t topk_workspace_bytes_of(int64_t lines, int64_t n) {
  const size_t line_bytes = static_cast<size_t>(pow2_at_least(n)) * topk_slot_bytes<T>();
  return line_bytes <= kTopkSharedMax ? 0 : line_bytes * static_cast<size_t>(lines);
}

size_t topk_workspace_bytes(KType t, int64_t lines, int64_t n) {
  switch (t) {
    case KType::kF32: return topk_workspace_bytes_of<float>(lines, n);
    case KType::kF16: return topk_workspace_bytes_of<__half>(lines, n);
    case KType::kBF16: return topk_workspace_bytes_of<__nv_bfloat16>(lines, n);
    case KType::kI32: return topk_workspace_bytes_of<int32_t>(lines, n);
    case KType::kI64: return topk_workspace_bytes_of<int64_t>(lines, n);
    default: return 0;
  }
}

cudaError_t launch_topk(KType t, bool largest, const void* x, void* vals, int64_t* inds, int64_t outer, int64_t n,
                        int64_t inner, int64_t k, void* workspace, size_t workspace_size, cudaStream_t s) {
  const int64_t lines = outer * inner;
  if (lines == 0 || k == 0) return cudaSuccess;
  if (k < 0 || k > n || n > (int64_t(1) << 30) || lines > 0x7fffffffLL) return cudaErrorInvalidValue;
  const int64_t P = pow2_at_least(n);
  const int threads = P >= 512 ? kThreads : static_cast<int>(P / 2 < 32 ? 32 : P / 2);
  auto run = [&](auto tag) -> cudaError_t {
    using T = decltype(tag);
    using K = KeyOf<T>;
    const T* xt = static_cast<const T*>(x);
    T* vt = static_cast<T*>(vals);
    const size_t need = topk_workspace_bytes_of<T>(lines, n);
    if (need > 0 && (!workspace || workspace_size < need)) return cudaErrorInvalidValue;
    if (topk_uses_tournament<T>(n, k)) {
      const int64_t cap = (n + kTopkChunk - 1) / kTopkChunk * k * lines;  // pairs per buffer
      K* keys[2] = {static_cast<K*>(workspace), static_cast<K*>(workspace) + cap};
      int* idx[2] = {reinterpret_cast<int*>(keys[1] + cap), reinterpret_cast<int*>(keys[1] + cap) + cap};
      int64_t m = n;
      int from = -1;  // -1: the input itself
      while (true) {
        const int64_t chunks = (m + kTopkChunk - 1) / kTopkChunk;
        const bool last = chunks == 1;
        if (lines * chunks > 0x7fffffffLL) return cudaErrorInvalidValue;
        const int to = from == 0 ? 1 : 0;
        const int P_round = last ? static_cast<int>(pow2_at_least(m)) : kTopkChunk;
        topk_round_kernel<T><<<static_cast<unsigned>(lines * chunks), kTopkChunkThreads, 0, s>>>(
            largest, xt, from < 0 ? nullptr : keys[from], from < 0 ? nullptr : idx[from], m, static_cast<int>(n),
            inner, k, chunks, P_round, last ? nullptr : keys[to], last ? nullptr : idx[to], last ? vt : nullptr,
            last ? inds : nullptr);
        const cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess || last) return e;
        m = chunks * k;
        from = to;
      }
    }
    const size_t line_bytes = static_cast<size_t>(P) * topk_slot_bytes<T>();
    K* gkeys = nullptr;
    int* gidx = nullptr;
    size_t smem = line_bytes;
    if (line_bytes > kTopkSharedMax) {
      gkeys = static_cast<K*>(workspace);
      gidx = reinterpret_cast<int*>(gkeys + P * lines);
      smem = 0;
    }
    topk_kernel<T><<<static_cast<unsigned>(lines), threads, smem, s>>>(largest, xt, vt, inds, static_cast<int>(n), inner,
                                                                       k, static_cast<int>(P), gkeys, gidx);
    return cudaGetLastError();
  };
  switch (t) {
    case KType::kF32: return run(float{});
    case KType::kF16: return run(__half{});
    case KType::kBF16: return run(__nv_bfloat16{});
    case KType::kI32: return run(int32_t{});
    case KType::kI64: return run(int64_t{});
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t launch_compress_chunk(int elem_size, const void* x, void* y, int64_t outer, int64_t n, int64_t inner,
                                  int64_t kn, int64_t t0, const CompressChunk& c, cudaStream_t s) {
  const int64_t total = outer * c.count * inner;
  if (total == 0) return cudaSuccess;
  GRAFT_SIZE_DISPATCH(elem_size, (compress_kernel<E><<<grid_for(total), kThreads, 0, s>>>(
                                     static_cast<const E*>(x), static_cast<E*>(y), total, n, inner, kn, t0, c)));
  return cudaGetLastError();
}

cudaError_t launch_celu(const float* x, float* y, int64_t n, float alpha, cudaStream_t s) {
  if (!(alpha != 0.0f)) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  celu_kernel<<<grid_for(n), kThreads, 0, s>>>(x, y, n, alpha);
  return cudaGetLastError();
}

}  // namespace graft::cuda::k
