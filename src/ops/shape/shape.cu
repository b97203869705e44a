// The shape family's own CUDA kernels and launchers (declared in shape.h): Trilu, OneHot, the
// compaction chunks of Compress, ConstantOfShape's fill and Range. The family's other ops run on the
// data-movement kernels of src/backends/cuda/shape_kernels.cu.
#include "ops/shape/shape.h"

#include <climits>
#include <cstring>
#include <type_traits>

#include "backends/cuda/cuda_kernel_device.cuh"

namespace graft::cuda::k {

namespace {

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
