#include "backends/cuda/integer_kernels.cuh"

#include <cstdint>
#include <type_traits>

#include "backends/cuda/cuda_kernel_device.cuh"

namespace graft::cuda::k {
namespace {

// Runs CALL with NAME bound to the 8-bit integer type of KType t.
#define GRAFT_INT8_DISPATCH(t, NAME, CALL)                  \
  switch (t) {                                              \
    case KType::kI8: { using NAME = int8_t; CALL; break; }  \
    case KType::kU8: { using NAME = uint8_t; CALL; break; } \
    default: return cudaErrorInvalidValue;                  \
  }

// The output: int32 sums, or 8-bit requantized values.
#define GRAFT_INT_OUT_DISPATCH(t, CALL)                      \
  switch (t) {                                               \
    case KType::kI32: { using TY = int32_t; CALL; break; }   \
    case KType::kI8: { using TY = int8_t; CALL; break; }     \
    case KType::kU8: { using TY = uint8_t; CALL; break; }    \
    default: return cudaErrorInvalidValue;                   \
  }

// Scale element i in float32, as the reference reads it (exact for the half types).
__device__ __forceinline__ float scale_at(const void* p, KType t, int64_t i) {
  switch (t) {
    case KType::kF16: return __half2float(static_cast<const __half*>(p)[i]);
    case KType::kBF16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

// The reference's requantize: float(sum) * multiplier rounded half to even, plus the zero point,
// saturated; NaN (0 * inf from a zero y_scale) gives the zero point.
template <typename TY>
__device__ __forceinline__ TY requantize(int32_t sum, float multiplier, float zp) {
  constexpr float lo = std::is_same_v<TY, uint8_t> ? 0.0f : -128.0f;
  constexpr float hi = std::is_same_v<TY, uint8_t> ? 255.0f : 127.0f;
  const float v = __fmul_rn(__int2float_rn(sum), multiplier);
  const float q = isnan(v) ? zp : __fadd_rn(rintf(v), zp);
  return static_cast<TY>(fminf(fmaxf(q, lo), hi));
}

// The reference's multiplier: float(float(s1 * s2) / y_scale).
__device__ __forceinline__ float multiplier_of(float s1, float s2, float y_scale) {
  return __fdiv_rn(__fmul_rn(s1, s2), y_scale);
}

// Modular int32 accumulation (the reference's exact sum wrapped to int32, without signed overflow).
__device__ __forceinline__ uint32_t as_u32(int32_t v) { return static_cast<uint32_t>(v); }
__device__ __forceinline__ int32_t as_i32(uint32_t v) { return static_cast<int32_t>(v); }

// ---- matmul ----

// A kTile x kTile block of outputs per block of kTile x kBlockRows threads, each thread kRowsPerThread
// rows of one column; K walked in steps of kTile through shared memory, the zero points subtracted
// as the tiles are loaded.
constexpr int kTile = 32;
constexpr int kRowsPerThread = 4;
constexpr int kBlockRows = kTile / kRowsPerThread;
constexpr int kMaxGridYZ = 65535;

template <typename TA, typename TB, typename TY>
__global__ void __launch_bounds__(kTile* kBlockRows)
    int_matmul_kernel(IntMatMulArgs p, int64_t batch, int64_t tiles_m, TY* y) {
  __shared__ int32_t a_tile[kTile][kTile + 1];
  __shared__ int32_t b_tile[kTile][kTile + 1];
  const TA* A = static_cast<const TA*>(p.a);
  const TB* B = static_cast<const TB*>(p.b);
  const TA* a_zp = static_cast<const TA*>(p.a_zp);
  const TB* b_zp = static_cast<const TB*>(p.b_zp);
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t n = int64_t(blockIdx.x) * kTile + tx;
  // Loop bounds are uniform over the block, so every thread reaches each __syncthreads.
  for (int64_t z = blockIdx.z; z < batch; z += gridDim.z) {
    int64_t off[kIntOperands] = {};
    int64_t rem = z;
    for (int d = p.batch_rank - 1; d >= 0; --d) {
      const int64_t q = rem % p.batch_dims[d];
      rem /= p.batch_dims[d];
      for (int o = 0; o < kIntOperands; ++o) off[o] += q * p.batch_strides[o][d];
    }
    for (int64_t tm = blockIdx.y; tm < tiles_m; tm += gridDim.y) {
      const int64_t m0 = tm * kTile;
      uint32_t acc[kRowsPerThread] = {};
      for (int64_t k0 = 0; k0 < p.K; k0 += kTile) {
#pragma unroll
        for (int i = 0; i < kRowsPerThread; ++i) {
          const int r = ty + i * kBlockRows;
          const int64_t am = m0 + r, ak = k0 + tx;
          int32_t av = 0;
          if (am < p.M && ak < p.K) {
            av = static_cast<int32_t>(A[off[kIntA] + am * p.K + ak]);
            if (a_zp) av -= static_cast<int32_t>(a_zp[off[kIntAZp] + am * p.vary_stride[kIntAZp]]);
          }
          a_tile[r][tx] = av;
          const int64_t bk = k0 + r;
          int32_t bv = 0;
          if (bk < p.K && n < p.N) {
            bv = static_cast<int32_t>(B[off[kIntB] + bk * p.N + n]);
            if (b_zp) bv -= static_cast<int32_t>(b_zp[off[kIntBZp] + n * p.vary_stride[kIntBZp]]);
          }
          b_tile[r][tx] = bv;
        }
        __syncthreads();
#pragma unroll 8
        for (int kk = 0; kk < kTile; ++kk) {
          const int32_t bv = b_tile[kk][tx];
#pragma unroll
          for (int i = 0; i < kRowsPerThread; ++i) acc[i] += as_u32(a_tile[ty + i * kBlockRows][kk] * bv);
        }
        __syncthreads();
      }
      if (n >= p.N) continue;
#pragma unroll
      for (int i = 0; i < kRowsPerThread; ++i) {
        const int64_t m = m0 + ty + i * kBlockRows;
        if (m >= p.M) continue;
        const int64_t at = (z * p.M + m) * p.N + n;
        if constexpr (std::is_same_v<TY, int32_t>) {
          y[at] = as_i32(acc[i]);
        } else {
          const float sa = scale_at(p.a_scale, p.scale_t, off[kIntAScale] + m * p.vary_stride[kIntAScale]);
          const float sb = scale_at(p.b_scale, p.scale_t, off[kIntBScale] + n * p.vary_stride[kIntBScale]);
          const float mult = multiplier_of(sa, sb, scale_at(p.y_scale, p.scale_t, 0));
          const float zp = static_cast<float>(static_cast<const TY*>(p.y_zp)[0]);
          y[at] = requantize<TY>(as_i32(acc[i]), mult, zp);
        }
      }
    }
  }
}

template <typename TA, typename TB, typename TY>
cudaError_t matmul_typed(const IntMatMulArgs& p, int64_t batch, void* y, cudaStream_t s) {
  const int64_t tiles_n = (p.N + kTile - 1) / kTile, tiles_m = (p.M + kTile - 1) / kTile;
  if (tiles_n > 0x7fffffff) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(tiles_n), static_cast<unsigned>(tiles_m < kMaxGridYZ ? tiles_m : kMaxGridYZ),
                  static_cast<unsigned>(batch < kMaxGridYZ ? batch : kMaxGridYZ));
  int_matmul_kernel<TA, TB, TY><<<grid, dim3(kTile, kBlockRows), 0, s>>>(p, batch, tiles_m, static_cast<TY*>(y));
  return cudaGetLastError();
}

// ---- conv ----

// One thread per output element: the taps inside the input, over the group's channels.
template <typename TX, typename TW, typename TY>
__global__ void int_conv_kernel(IntConvArgs p, int64_t total, TY* y) {
  const TX* X = static_cast<const TX*>(p.x);
  const TW* W = static_cast<const TW*>(p.w);
  const TW* w_zp = static_cast<const TW*>(p.w_zp);
  const int32_t xz = p.x_zp ? static_cast<int32_t>(static_cast<const TX*>(p.x_zp)[0]) : 0;
  const int64_t area = p.out[0] * p.out[1] * p.out[2];
  const int64_t in_area = p.in[0] * p.in[1] * p.in[2];
  const int64_t k_area = p.kernel[0] * p.kernel[1] * p.kernel[2];
  GRAFT_GRID_STRIDE(i, total) {
    int64_t o = i % area;
    const int64_t nm = i / area;
    const int64_t m = nm % p.M, nb = nm / p.M;
    const int64_t o2 = o % p.out[2];
    o /= p.out[2];
    const int64_t o1 = o % p.out[1], o0 = o / p.out[1];
    const int64_t b0 = o0 * p.stride[0] - p.pad[0], b1 = o1 * p.stride[1] - p.pad[1],
                  b2 = o2 * p.stride[2] - p.pad[2];
    const int32_t wz = w_zp ? static_cast<int32_t>(w_zp[p.w_zp_per_channel ? m : 0]) : 0;
    const int64_t g = m / p.Mg;
    uint32_t acc = 0;
    for (int64_t c = 0; c < p.Cg; ++c) {
      const TX* xc = X + (nb * p.C + g * p.Cg + c) * in_area;
      const TW* wc = W + (m * p.Cg + c) * k_area;
      for (int64_t k0 = 0; k0 < p.kernel[0]; ++k0) {
        const int64_t i0 = b0 + k0 * p.dilation[0];
        if (i0 < 0 || i0 >= p.in[0]) continue;
        for (int64_t k1 = 0; k1 < p.kernel[1]; ++k1) {
          const int64_t i1 = b1 + k1 * p.dilation[1];
          if (i1 < 0 || i1 >= p.in[1]) continue;
          const TX* xr = xc + (i0 * p.in[1] + i1) * p.in[2];
          const TW* wr = wc + (k0 * p.kernel[1] + k1) * p.kernel[2];
          for (int64_t k2 = 0; k2 < p.kernel[2]; ++k2) {
            const int64_t i2 = b2 + k2 * p.dilation[2];
            if (i2 < 0 || i2 >= p.in[2]) continue;
            acc += as_u32((static_cast<int32_t>(xr[i2]) - xz) * (static_cast<int32_t>(wr[k2]) - wz));
          }
        }
      }
    }
    if constexpr (std::is_same_v<TY, int32_t>) {
      y[i] = as_i32(acc);
    } else {
      if (p.bias) acc += as_u32(p.bias[m]);
      const float sw = scale_at(p.w_scale, p.scale_t, p.w_scale_per_channel ? m : 0);
      const float mult =
          multiplier_of(scale_at(p.x_scale, p.scale_t, 0), sw, scale_at(p.y_scale, p.scale_t, 0));
      y[i] = requantize<TY>(as_i32(acc), mult, static_cast<float>(static_cast<const TY*>(p.y_zp)[0]));
    }
  }
}

template <typename TX, typename TW, typename TY>
cudaError_t conv_typed(const IntConvArgs& p, int64_t total, void* y, cudaStream_t s) {
  int_conv_kernel<TX, TW, TY><<<grid_for(total), kThreads, 0, s>>>(p, total, static_cast<TY*>(y));
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_int_matmul(KType a_t, KType b_t, KType y_t, const IntMatMulArgs& args, int64_t batch, void* y,
                              cudaStream_t s) {
  if (y_t != KType::kI32 && (!args.a_scale || !args.b_scale || !args.y_scale || !args.y_zp))
    return cudaErrorInvalidValue;
  if (args.batch_rank < 0 || args.batch_rank > kMaxRank) return cudaErrorInvalidValue;
  if (batch <= 0 || args.M <= 0 || args.N <= 0) return cudaSuccess;  // nothing to write
  cudaError_t e = cudaErrorInvalidValue;
  GRAFT_INT8_DISPATCH(a_t, TA,
                      GRAFT_INT8_DISPATCH(b_t, TB, GRAFT_INT_OUT_DISPATCH(y_t, (e = matmul_typed<TA, TB, TY>(args, batch, y, s)))));
  return e;
}

cudaError_t launch_int_conv(KType x_t, KType w_t, KType y_t, const IntConvArgs& args, void* y, cudaStream_t s) {
  if (y_t != KType::kI32 && (!args.x_scale || !args.w_scale || !args.y_scale || !args.y_zp))
    return cudaErrorInvalidValue;
  if (args.M <= 0 || args.Mg <= 0) return args.M == 0 ? cudaSuccess : cudaErrorInvalidValue;
  const int64_t total = args.N * args.M * args.out[0] * args.out[1] * args.out[2];
  if (total <= 0) return cudaSuccess;
  cudaError_t e = cudaErrorInvalidValue;
  GRAFT_INT8_DISPATCH(x_t, TX,
                      GRAFT_INT8_DISPATCH(w_t, TW, GRAFT_INT_OUT_DISPATCH(y_t, (e = conv_typed<TX, TW, TY>(args, total, y, s)))));
  return e;
}

}  // namespace graft::cuda::k
