#include "backends/cuda/shape_kernels.cuh"

#include "backends/cuda/cuda_kernel_device.cuh"

namespace graft::cuda::k {
namespace {

// Calls LAUNCH(E) with E the unsigned type of `elem_size` bytes; other sizes are rejected.
#define GRAFT_BY_ELEM_SIZE(elem_size, LAUNCH)    \
  switch (elem_size) {                           \
    case 1: LAUNCH(uint8_t); break;              \
    case 2: LAUNCH(uint16_t); break;             \
    case 4: LAUNCH(uint32_t); break;             \
    case 8: LAUNCH(uint64_t); break;             \
    default: return cudaErrorInvalidValue;       \
  }

template <typename E>
__global__ void strided_gather_kernel(const E* __restrict__ in, E* __restrict__ out, Strided p, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) out[i] = in[strided_offset(p, i)];
}

template <typename E>
__global__ void pitched_copy_kernel(const E* __restrict__ src, E* __restrict__ dst, int64_t row, int64_t src_pitch,
                                    int64_t dst_pitch, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    const int64_t r = i / row, j = i - r * row;
    dst[r * dst_pitch + j] = src[r * src_pitch + j];
  }
}

template <typename E, typename I>
__global__ void gather_axis_kernel(const E* __restrict__ data, const I* __restrict__ idx, E* __restrict__ out,
                                   int64_t n_axis, int64_t m, int64_t inner, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    const int64_t k = i % inner;
    const int64_t t = i / inner;
    const int64_t j = t % m, o = t / m;
    int64_t q = static_cast<int64_t>(idx[j]);
    if (q < 0) q += n_axis;
    out[i] = (q >= 0 && q < n_axis) ? data[(o * n_axis + q) * inner + k] : E(0);
  }
}

template <typename E>
__global__ void tile_kernel(const E* __restrict__ in, E* __restrict__ out, AxisMap p, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    int64_t rem = i, off = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t q = rem % p.out_dims[d];
      rem /= p.out_dims[d];
      off += (q % p.in_dims[d]) * p.in_strides[d];
    }
    out[i] = in[off];
  }
}

template <typename E>
__global__ void pad_constant_kernel(const E* __restrict__ in, E* __restrict__ out, AxisMap p,
                                    const E* __restrict__ fill_ptr, int64_t n) {
  const E fill = fill_ptr ? *fill_ptr : E(0);
  GRAFT_GRID_STRIDE(i, n) {
    int64_t rem = i, off = 0;
    bool inside = true;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t q = rem % p.out_dims[d] - p.begin[d];
      rem /= p.out_dims[d];
      if (q < 0 || q >= p.in_dims[d]) inside = false;
      else off += q * p.in_strides[d];
    }
    out[i] = inside ? in[off] : fill;
  }
}

// Input coordinate for output coordinate x along axis d: the CPU reference's formulas, each
// operation rounded on its own (the _rn intrinsics are never contracted into an FMA).
__device__ __forceinline__ double resize_source(const ResizeParams& p, int d, double x) {
  const double scale = p.scale[d], din = static_cast<double>(p.in_dims[d]), dout = p.resized[d];
  switch (p.coord) {
    case ResizeCoord::kHalfPixel:
      return __dsub_rn(__ddiv_rn(__dadd_rn(x, 0.5), scale), 0.5);
    case ResizeCoord::kHalfPixelSymmetric: {
      const double adjustment = __ddiv_rn(static_cast<double>(p.out_dims[d]), __dmul_rn(scale, din));
      const double offset = __dmul_rn(__ddiv_rn(din, 2.0), __dsub_rn(1.0, adjustment));
      return __dsub_rn(__dadd_rn(offset, __ddiv_rn(__dadd_rn(x, 0.5), scale)), 0.5);
    }
    case ResizeCoord::kPytorchHalfPixel:
      return dout > 1.0 ? __dsub_rn(__ddiv_rn(__dadd_rn(x, 0.5), scale), 0.5) : 0.0;
    case ResizeCoord::kAlignCorners:
      return dout == 1.0 ? 0.0 : __ddiv_rn(__dmul_rn(x, __dsub_rn(din, 1.0)), __dsub_rn(dout, 1.0));
    case ResizeCoord::kAsymmetric:
      return __ddiv_rn(x, scale);
    case ResizeCoord::kTfHalfPixelForNn:
      return __ddiv_rn(__dadd_rn(x, 0.5), scale);
  }
  return 0.0;
}

__device__ __forceinline__ int64_t clamp_index(int64_t i, int64_t n) { return i < 0 ? 0 : (i > n - 1 ? n - 1 : i); }

__device__ __forceinline__ int64_t nearest_of(ResizeNearest m, double x) {
  switch (m) {
    case ResizeNearest::kRoundPreferFloor: return static_cast<int64_t>(ceil(__dsub_rn(x, 0.5)));
    case ResizeNearest::kRoundPreferCeil: return static_cast<int64_t>(floor(__dadd_rn(x, 0.5)));
    case ResizeNearest::kFloor: return static_cast<int64_t>(floor(x));
    case ResizeNearest::kCeil: return static_cast<int64_t>(ceil(x));
  }
  return 0;
}

template <typename E>
__global__ void resize_nearest_kernel(const E* __restrict__ in, E* __restrict__ out, ResizeParams p, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    int64_t rem = i, off = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t o = rem % p.out_dims[d];
      rem /= p.out_dims[d];
      const int64_t src =
          p.identity[d] ? o : clamp_index(nearest_of(p.nearest, resize_source(p, d, static_cast<double>(o))), p.in_dims[d]);
      off += src * p.in_strides[d];
    }
    out[i] = in[off];
  }
}

// Linear: the sum over the corners of the per-axis two-tap stencils, in the reference's order (the
// last resized axis varies fastest), weights multiplied in axis order, accumulated in double.
template <typename T>
__global__ void resize_linear_kernel(const T* __restrict__ in, T* __restrict__ out, ResizeParams p, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    int64_t base = 0;  // offset contributed by identity axes
    int64_t i0[kMaxRank], i1[kMaxRank];
    double w0[kMaxRank], w1[kMaxRank];
    int axes[kMaxRank];
    int nl = 0;
    int64_t rem = i;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t o = rem % p.out_dims[d];
      rem /= p.out_dims[d];
      if (p.identity[d]) {
        base += o * p.in_strides[d];
        continue;
      }
      const double x = resize_source(p, d, static_cast<double>(o));
      const double f = floor(x), frac = __dsub_rn(x, f);
      const int64_t lo = static_cast<int64_t>(f);
      i0[d] = clamp_index(lo, p.in_dims[d]) * p.in_strides[d];
      i1[d] = clamp_index(lo + 1, p.in_dims[d]) * p.in_strides[d];
      w0[d] = __dsub_rn(1.0, frac);
      w1[d] = frac;
    }
    for (int d = 0; d < p.rank; ++d)
      if (!p.identity[d]) axes[nl++] = d;
    double acc = 0.0;
    for (int c = 0; c < (1 << nl); ++c) {
      double w = 1.0;
      int64_t off = base;
      for (int k = 0; k < nl; ++k) {
        const int d = axes[k];
        const bool hi = (c >> (nl - 1 - k)) & 1;
        w = __dmul_rn(w, hi ? w1[d] : w0[d]);
        off += hi ? i1[d] : i0[d];
      }
      if (w != 0.0) acc = __dadd_rn(acc, __dmul_rn(w, static_cast<double>(Elem<T>::ld(in[off]))));
    }
    out[i] = Elem<T>::st(static_cast<typename Elem<T>::C>(static_cast<float>(acc)));
  }
}

}  // namespace

cudaError_t launch_strided_gather(const void* in, void* out, int elem_size, const Strided& p, int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const unsigned g = grid_for(n);
#define L(E) strided_gather_kernel<E><<<g, kThreads, 0, s>>>(static_cast<const E*>(in), static_cast<E*>(out), p, n)
  GRAFT_BY_ELEM_SIZE(elem_size, L)
#undef L
  return cudaGetLastError();
}

cudaError_t launch_pitched_copy(const void* src, void* dst, int elem_size, int64_t rows, int64_t row,
                                int64_t src_pitch, int64_t dst_pitch, cudaStream_t s) {
  const int64_t n = rows * row;
  if (n == 0) return cudaSuccess;
  const unsigned g = grid_for(n);
#define L(E)                                                                                                  \
  pitched_copy_kernel<E><<<g, kThreads, 0, s>>>(static_cast<const E*>(src), static_cast<E*>(dst), row, src_pitch, \
                                                 dst_pitch, n)
  GRAFT_BY_ELEM_SIZE(elem_size, L)
#undef L
  return cudaGetLastError();
}

cudaError_t launch_gather_axis(const void* data, const void* idx, bool idx_int64, void* out, int elem_size,
                               int64_t outer, int64_t n_axis, int64_t m, int64_t inner, cudaStream_t s) {
  const int64_t n = outer * m * inner;
  if (n == 0) return cudaSuccess;
  const unsigned g = grid_for(n);
  if (idx_int64) {
#define L(E)                                                                                                  \
  gather_axis_kernel<E, int64_t><<<g, kThreads, 0, s>>>(static_cast<const E*>(data), static_cast<const int64_t*>(idx), \
                                                         static_cast<E*>(out), n_axis, m, inner, n)
    GRAFT_BY_ELEM_SIZE(elem_size, L)
#undef L
  } else {
#define L(E)                                                                                                  \
  gather_axis_kernel<E, int32_t><<<g, kThreads, 0, s>>>(static_cast<const E*>(data), static_cast<const int32_t*>(idx), \
                                                         static_cast<E*>(out), n_axis, m, inner, n)
    GRAFT_BY_ELEM_SIZE(elem_size, L)
#undef L
  }
  return cudaGetLastError();
}

cudaError_t launch_tile(const void* in, void* out, int elem_size, const AxisMap& p, int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const unsigned g = grid_for(n);
#define L(E) tile_kernel<E><<<g, kThreads, 0, s>>>(static_cast<const E*>(in), static_cast<E*>(out), p, n)
  GRAFT_BY_ELEM_SIZE(elem_size, L)
#undef L
  return cudaGetLastError();
}

cudaError_t launch_pad_constant(const void* in, void* out, int elem_size, const AxisMap& p, const void* fill,
                                int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const unsigned g = grid_for(n);
#define L(E)                                                                                               \
  pad_constant_kernel<E><<<g, kThreads, 0, s>>>(static_cast<const E*>(in), static_cast<E*>(out), p, \
                                                static_cast<const E*>(fill), n)
  GRAFT_BY_ELEM_SIZE(elem_size, L)
#undef L
  return cudaGetLastError();
}

cudaError_t launch_resize(KType t, int elem_size, const void* in, void* out, const ResizeParams& p, int64_t n,
                          cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const unsigned g = grid_for(n);
  if (!p.linear) {
#define L(E) resize_nearest_kernel<E><<<g, kThreads, 0, s>>>(static_cast<const E*>(in), static_cast<E*>(out), p, n)
    GRAFT_BY_ELEM_SIZE(elem_size, L)
#undef L
    return cudaGetLastError();
  }
  switch (t) {
    case KType::kF32:
      resize_linear_kernel<float><<<g, kThreads, 0, s>>>(static_cast<const float*>(in), static_cast<float*>(out), p, n);
      break;
    case KType::kF16:
      resize_linear_kernel<__half><<<g, kThreads, 0, s>>>(static_cast<const __half*>(in), static_cast<__half*>(out), p, n);
      break;
    case KType::kBF16:
      resize_linear_kernel<__nv_bfloat16><<<g, kThreads, 0, s>>>(static_cast<const __nv_bfloat16*>(in),
                                                                 static_cast<__nv_bfloat16*>(out), p, n);
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace graft::cuda::k
