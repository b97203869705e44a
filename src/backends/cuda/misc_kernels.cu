#include "backends/cuda/misc_kernels.cuh"

#include <cstdint>
#include <type_traits>

#include "backends/cuda/cuda_kernel_device.cuh"

namespace graft::cuda::k {
namespace {

#define GRAFT_MISC_NUMERIC_DISPATCH(t, CALL)                     \
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

// ---- Normalizations -----------------------------------------------------------------------------

// Block-wide sum of a double (every thread gets it); `sh` holds 32 doubles. Synchronizes first, so
// consecutive calls may share `sh`.
__device__ __forceinline__ double block_sum_d(double v, double* sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  v = lane < nw ? sh[lane] : 0.0;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// One block per plane (grid-striding over planes); two passes in double as the CPU reference.
template <typename T>
__global__ void instance_norm_kernel(const T* x, const T* scale, const T* bias, T* y, int64_t planes,
                                     int64_t channels, int64_t spatial, double eps) {
  __shared__ double sh[32];
  for (int64_t p = blockIdx.x; p < planes; p += gridDim.x) {
    const T* xp = x + p * spatial;
    T* yp = y + p * spatial;
    double acc = 0;
    for (int64_t i = threadIdx.x; i < spatial; i += blockDim.x) acc += as_double(xp[i]);
    const double mean = block_sum_d(acc, sh) / static_cast<double>(spatial);
    acc = 0;
    for (int64_t i = threadIdx.x; i < spatial; i += blockDim.x) {
      const double d = as_double(xp[i]) - mean;
      acc = __dadd_rn(acc, __dmul_rn(d, d));
    }
    const double var = block_sum_d(acc, sh) / static_cast<double>(spatial);
    const int64_t ch = p % channels;
    const double k = as_double(scale[ch]) / sqrt(var + eps), b = as_double(bias[ch]);
    for (int64_t i = threadIdx.x; i < spatial; i += blockDim.x)
      yp[i] = store_from_double<T>(__dadd_rn(__dmul_rn(as_double(xp[i]) - mean, k), b));
  }
}

template <typename T>
__global__ void mvn_kernel(const T* x, T* y, Strided kept, Strided red, int64_t groups, int64_t count) {
  __shared__ double sh[32];
  for (int64_t g = blockIdx.x; g < groups; g += gridDim.x) {
    const int64_t base = strided_offset(kept, g);
    double acc = 0;
    for (int64_t r = threadIdx.x; r < count; r += blockDim.x) acc += as_double(x[base + strided_offset(red, r)]);
    const double mean = block_sum_d(acc, sh) / static_cast<double>(count);
    acc = 0;
    for (int64_t r = threadIdx.x; r < count; r += blockDim.x) {
      const double d = as_double(x[base + strided_offset(red, r)]) - mean;
      acc = __dadd_rn(acc, __dmul_rn(d, d));
    }
    // The epsilon of the ONNX function body, added to the standard deviation.
    const double den = sqrt(block_sum_d(acc, sh) / static_cast<double>(count)) + 1e-9;
    for (int64_t r = threadIdx.x; r < count; r += blockDim.x) {
      const int64_t at = base + strided_offset(red, r);
      y[at] = store_from_double<T>((as_double(x[at]) - mean) / den);
    }
  }
}

template <typename T>
__global__ void lrn_kernel(const T* x, T* y, int64_t channels, int64_t inner, int64_t n, int64_t before,
                           int64_t after, double alpha_over_size, double bias, double beta) {
  GRAFT_GRID_STRIDE(i, n) {
    const int64_t in = i % inner, ch = (i / inner) % channels, o = i / (inner * channels);
    const int64_t lo = ch - before < 0 ? 0 : ch - before;
    const int64_t hi = channels - 1 < ch + after ? channels - 1 : ch + after;
    double sq = 0;
    for (int64_t c = lo; c <= hi; ++c) {
      const double e = as_double(x[(o * channels + c) * inner + in]);
      sq = __dadd_rn(sq, __dmul_rn(e, e));
    }
    const double den = pow(__dadd_rn(bias, __dmul_rn(alpha_over_size, sq)), beta);
    y[i] = store_from_double<T>(as_double(x[i]) / den);
  }
}

// ---- Data ---------------------------------------------------------------------------------------

__global__ void bit_shift_kernel(bool left, const uint8_t* x, const uint8_t* sh, Bcast p, uint8_t* y, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    const unsigned v = x[bcast_offset(p, 0, i)], by = sh[bcast_offset(p, 1, i)];
    // Shifting by the width or more shifts every bit out (and is undefined in C++).
    y[i] = by >= 8 ? uint8_t{0} : static_cast<uint8_t>(left ? (v << by) : (v >> by));
  }
}

template <typename E>
__global__ void eye_like_kernel(E one, int64_t cols, int64_t k, E* y, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    const int64_t r = i / cols, c = i % cols;
    y[i] = c - r == k ? one : E{0};
  }
}

template <typename T>
__global__ void window_kernel(int kind, bool periodic, T* y, int64_t n) {
  constexpr double kPi = 3.14159265358979323846;
  const double den = periodic ? static_cast<double>(n) : static_cast<double>(n - 1);
  GRAFT_GRID_STRIDE(i, n) {
    if (den == 0) {
      y[i] = store_from_double<T>(1.0);
      continue;
    }
    // 2 * pi * i / den, evaluated left to right like the CPU reference.
    const double a = __ddiv_rn(__dmul_rn(2 * kPi, static_cast<double>(i)), den);
    double v;
    if (kind == 0) v = __dsub_rn(0.5, __dmul_rn(0.5, cos(a)));
    else if (kind == 1) v = __dsub_rn(25.0 / 46.0, __dmul_rn(21.0 / 46.0, cos(a)));
    else v = __dadd_rn(__dsub_rn(0.42, __dmul_rn(0.5, cos(a))), __dmul_rn(0.08, cos(2 * a)));
    y[i] = store_from_double<T>(v);
  }
}

template <typename E>
__global__ void reverse_sequence_kernel(const E* x, const int64_t* lens, E* y, bool batch0, int64_t d0, int64_t d1,
                                        int64_t block, int64_t n) {
  const int64_t steps = batch0 ? d1 : d0;
  GRAFT_GRID_STRIDE(i, n) {
    const int64_t e = i % block, pair = i / block;
    const int64_t r0 = pair / d1, r1 = pair % d1;
    const int64_t b = batch0 ? r0 : r1, t = batch0 ? r1 : r0;
    const int64_t len = lens[b];
    const int64_t src_t = len >= 0 && len <= steps && t < len ? len - 1 - t : t;
    const int64_t src = batch0 ? b * d1 + src_t : src_t * d1 + b;
    y[i] = x[src * block + e];
  }
}

}  // namespace

// ---- launchers ----------------------------------------------------------------------------------

static unsigned plane_grid(int64_t planes) {
  return static_cast<unsigned>(planes < 65535LL * 16 ? planes : 65535LL * 16);
}

cudaError_t launch_instance_norm(KType t, const void* x, const void* scale, const void* bias, void* y, int64_t planes,
                                 int64_t channels, int64_t spatial, double eps, cudaStream_t s) {
  if (planes == 0 || spatial == 0) return cudaSuccess;
  if (channels <= 0) return cudaErrorInvalidValue;
  GRAFT_FLOAT64_DISPATCH(t, (instance_norm_kernel<T><<<plane_grid(planes), kThreads, 0, s>>>(
                                   static_cast<const T*>(x), static_cast<const T*>(scale),
                                   static_cast<const T*>(bias), static_cast<T*>(y), planes, channels, spatial, eps)));
  return cudaGetLastError();
}

cudaError_t launch_mvn(KType t, const void* x, void* y, const Strided& kept, const Strided& reduced, int64_t groups,
                       int64_t count, cudaStream_t s) {
  if (groups == 0 || count == 0) return cudaSuccess;
  GRAFT_FLOAT64_DISPATCH(t, (mvn_kernel<T><<<plane_grid(groups), kThreads, 0, s>>>(
                                   static_cast<const T*>(x), static_cast<T*>(y), kept, reduced, groups, count)));
  return cudaGetLastError();
}

cudaError_t launch_lrn(KType t, const void* x, void* y, int64_t outer, int64_t channels, int64_t inner, int64_t before,
                       int64_t after, double alpha_over_size, double bias, double beta, cudaStream_t s) {
  const int64_t n = outer * channels * inner;
  if (n == 0) return cudaSuccess;
  GRAFT_FLOAT64_DISPATCH(t, (lrn_kernel<T><<<grid_for(n), kThreads, 0, s>>>(
                                   static_cast<const T*>(x), static_cast<T*>(y), channels, inner, n, before, after,
                                   alpha_over_size, bias, beta)));
  return cudaGetLastError();
}

cudaError_t launch_bit_shift(bool left, const uint8_t* x, const uint8_t* sh, const Bcast& p, uint8_t* y, int64_t n,
                             cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  bit_shift_kernel<<<grid_for(n), kThreads, 0, s>>>(left, x, sh, p, y, n);
  return cudaGetLastError();
}

cudaError_t launch_eye_like(int elem_size, uint64_t one_bits, int64_t rows, int64_t cols, int64_t k, void* y,
                            cudaStream_t s) {
  const int64_t n = rows * cols;
  if (n == 0) return cudaSuccess;
  GRAFT_SIZE_DISPATCH(elem_size, (eye_like_kernel<E><<<grid_for(n), kThreads, 0, s>>>(
                                          static_cast<E>(one_bits), cols, k, static_cast<E*>(y), n)));
  return cudaGetLastError();
}

cudaError_t launch_window(KType t, int kind, bool periodic, void* y, int64_t n, cudaStream_t s) {
  if (kind < 0 || kind > 2) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  GRAFT_MISC_NUMERIC_DISPATCH(t, (window_kernel<T><<<grid_for(n), kThreads, 0, s>>>(kind, periodic,
                                                                                     static_cast<T*>(y), n)));
  return cudaGetLastError();
}

cudaError_t launch_reverse_sequence(int elem_size, const void* x, const int64_t* lens, void* y, bool batch_axis_0,
                                    int64_t d0, int64_t d1, int64_t block, cudaStream_t s) {
  const int64_t n = d0 * d1 * block;
  if (n == 0) return cudaSuccess;
  GRAFT_SIZE_DISPATCH(elem_size, (reverse_sequence_kernel<E><<<grid_for(n), kThreads, 0, s>>>(
                                          static_cast<const E*>(x), lens, static_cast<E*>(y), batch_axis_0, d0, d1,
                                          block, n)));
  return cudaGetLastError();
}

namespace {

template <typename T>
__global__ void einsum_kernel(EinsumArgs a, T* y, int64_t n) {
  constexpr bool kInt = std::is_integral_v<T>;
  GRAFT_GRID_STRIDE(o, n) {
    int64_t idx[kEinsumMaxLabels];
    int64_t rem = o;
    for (int p = a.n_out - 1; p >= 0; --p) {
      idx[p] = rem % a.ext[p];
      rem /= a.ext[p];
    }
    for (int p = a.n_out; p < a.n_labels; ++p) idx[p] = 0;
    double acc = 0;
    uint64_t iacc = 0;
    for (int64_t t = 0; t < a.inner; ++t) {
      double prod = 1;
      uint64_t iprod = 1;
      for (int k = 0; k < a.n_in; ++k) {
        int64_t off = 0;
        for (int p = 0; p < a.n_labels; ++p) off += idx[p] * a.stride[k][p];
        const T v = static_cast<const T*>(a.in[k])[off];
        if constexpr (kInt) iprod *= static_cast<uint64_t>(static_cast<int64_t>(v));
        else prod *= as_double(v);
      }
      acc += prod;
      iacc += iprod;
      for (int p = a.n_labels - 1; p >= a.n_out; --p) {
        if (++idx[p] < a.ext[p]) break;
        idx[p] = 0;
      }
    }
    if constexpr (kInt) y[o] = static_cast<T>(static_cast<int64_t>(iacc));
    else y[o] = store_from_double<T>(acc);
  }
}

}  // namespace

cudaError_t launch_einsum(KType t, const EinsumArgs& a, void* y, int64_t n, cudaStream_t s) {
  if (a.n_in < 1 || a.n_in > kEinsumMaxInputs || a.n_labels > kEinsumMaxLabels || a.n_out > a.n_labels)
    return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  GRAFT_MISC_NUMERIC_DISPATCH(t, (einsum_kernel<T><<<grid_for(n), kThreads, 0, s>>>(a, static_cast<T*>(y), n)));
  return cudaGetLastError();
}

namespace {

template <typename T>
__global__ void det_kernel(const T* x, int64_t batches, int64_t m, double* scratch, T* y) {
  GRAFT_GRID_STRIDE(b, batches) {
    const int64_t mm = m * m;
    double* a = scratch + b * mm;
    for (int64_t i = 0; i < mm; ++i) a[i] = static_cast<double>(Elem<T>::ld(x[b * mm + i]));
    double d = 1.0;
    for (int64_t col = 0; col < m && d != 0.0; ++col) {
      int64_t piv = col;
      for (int64_t r = col + 1; r < m; ++r)
        if (fabs(a[r * m + col]) > fabs(a[piv * m + col])) piv = r;
      if (a[piv * m + col] == 0.0) {
        d = 0.0;
        break;
      }
      if (piv != col) {
        for (int64_t c = 0; c < m; ++c) {
          const double t = a[piv * m + c];
          a[piv * m + c] = a[col * m + c];
          a[col * m + c] = t;
        }
        d = -d;
      }
      d *= a[col * m + col];
      for (int64_t r = col + 1; r < m; ++r) {
        const double f = a[r * m + col] / a[col * m + col];
        for (int64_t c = col; c < m; ++c) a[r * m + c] -= f * a[col * m + c];
      }
    }
    y[b] = Elem<T>::st(static_cast<typename Elem<T>::C>(d));
  }
}

}  // namespace

cudaError_t launch_det(KType t, const void* x, int64_t batches, int64_t m, double* scratch, void* y, cudaStream_t s) {
  if (batches == 0) return cudaSuccess;
  GRAFT_FLOAT64_DISPATCH(t, (det_kernel<T><<<grid_for(batches), kThreads, 0, s>>>(static_cast<const T*>(x), batches, m,
                                                                                   scratch, static_cast<T*>(y))));
  return cudaGetLastError();
}

}  // namespace graft::cuda::k
