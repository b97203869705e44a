#include "backends/cuda/extra_kernels.cuh"

#include <climits>
#include <cstring>
#include <type_traits>

#include "backends/cuda/cuda_kernel_device.cuh"

namespace graft::cuda::k {
namespace {

constexpr unsigned kFull = 0xffffffffu;

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

cudaError_t launch_compress_chunk(int elem_size, const void* x, void* y, int64_t outer, int64_t n, int64_t inner,
                                  int64_t kn, int64_t t0, const CompressChunk& c, cudaStream_t s) {
  const int64_t total = outer * c.count * inner;
  if (total == 0) return cudaSuccess;
  GRAFT_SIZE_DISPATCH(elem_size, (compress_kernel<E><<<grid_for(total), kThreads, 0, s>>>(
                                     static_cast<const E*>(x), static_cast<E*>(y), total, n, inner, kn, t0, c)));
  return cudaGetLastError();
}

}  // namespace graft::cuda::k
