// The integer and quantized linear-algebra family's CUDA kernels and CUDA ops (definition and CPU
// references: integer.cpp; layout readers: integer.h).
#include "ops/integer/integer.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/attr_util.h"
#include "ops/window_attrs.h"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------

namespace k {

// The launchers take plain device pointers and strides computed on the host; each returns the
// launch's cudaError_t (cudaErrorInvalidValue for a dtype it does not handle).
//
// Sums are exact as the reference's: every (x - zero point) * (w - zero point) product fits in
// int32 and is added modulo 2^32, which is the reference's int64 sum wrapped to int32. The QLinear
// outputs requantize in float32 step by step as the reference does (multiplier = float(scale_a *
// scale_b) / y_scale, float(sum) * multiplier, round half to even, + y_zero_point, saturate), with
// explicitly rounded intrinsics so that no step is fused or approximated.

// The operands and parameters of a batched integer matmul, by index into the stride tables.
enum IntMatMulOperand { kIntA = 0, kIntB, kIntAZp, kIntBZp, kIntAScale, kIntBScale, kIntOperands };

// y[batch, m, n] = sum_k (A[.., m, k] - a_zp) * (B[.., k, n] - b_zp), A [.., M, K], B [.., K, N],
// y [batch..., M, N] row-major. Per output batch axis (batch_rank of them, extents batch_dims), each
// operand's element offset stride (0 where it broadcasts); per row m (A's zero point and scale) or
// column n (B's) a further stride (0 per tensor). Zero points have the dtype of their operand (null:
// none); scales are of dtype scale_t (float32, float16, bfloat16), y_scale and y_zp one element.
struct IntMatMulArgs {
  int64_t M = 0, K = 0, N = 0;
  int batch_rank = 0;
  int64_t batch_dims[kMaxRank] = {};
  int64_t batch_strides[kIntOperands][kMaxRank] = {};
  int64_t vary_stride[kIntOperands] = {};  // used for the zero points and scales
  const void* a = nullptr;
  const void* b = nullptr;
  const void* a_zp = nullptr;
  const void* b_zp = nullptr;
  // QLinearMatMul only (y of dtype int8/uint8).
  KType scale_t = KType::kF32;
  const void* a_scale = nullptr;
  const void* b_scale = nullptr;
  const void* y_scale = nullptr;
  const void* y_zp = nullptr;
};

// a_t, b_t: int8 or uint8. y_t: int32 (MatMulInteger: the sums) or int8/uint8 (QLinearMatMul: the
// requantized sums, y_zp of that dtype). `batch` is the product of batch_dims.
cudaError_t launch_int_matmul(KType a_t, KType b_t, KType y_t, const IntMatMulArgs& args, int64_t batch, void* y,
                              cudaStream_t s);

// The spatial axes a conv kernel takes; fewer are padded in front with extent-1 axes.
constexpr int kIntConvMaxSpatial = 3;

// x [N, C, in...], w [M, Cg, kernel...], y [N, M, out...]; channel group g = m / (M / group) reads
// x channels [g * Cg, (g + 1) * Cg). Input position of output p and tap t on axis a:
// p * stride - pad_begin + t * dilation; outside the input the tap adds nothing.
struct IntConvArgs {
  int64_t N = 0, C = 0, M = 0, Cg = 0, Mg = 1;  // Mg: output channels per group
  int64_t in[kIntConvMaxSpatial] = {1, 1, 1};
  int64_t out[kIntConvMaxSpatial] = {1, 1, 1};
  int64_t kernel[kIntConvMaxSpatial] = {1, 1, 1};
  int64_t stride[kIntConvMaxSpatial] = {1, 1, 1};
  int64_t pad[kIntConvMaxSpatial] = {0, 0, 0};
  int64_t dilation[kIntConvMaxSpatial] = {1, 1, 1};
  const void* x = nullptr;
  const void* w = nullptr;
  const void* x_zp = nullptr;  // one element, x's dtype, or null
  const void* w_zp = nullptr;  // one element or M (w_zp_per_channel), w's dtype, or null
  bool w_zp_per_channel = false;
  // QLinearConv only (y of dtype int8/uint8). x_scale and y_scale one element; w_scale one or M.
  KType scale_t = KType::kF32;
  const void* x_scale = nullptr;
  const void* w_scale = nullptr;
  bool w_scale_per_channel = false;
  const void* y_scale = nullptr;
  const void* y_zp = nullptr;
  const int32_t* bias = nullptr;  // [M] or null, added to the int32 sum before requantizing
};

// x_t, w_t: int8 or uint8. y_t: int32 (ConvInteger) or int8/uint8 (QLinearConv).
cudaError_t launch_int_conv(KType x_t, KType w_t, KType y_t, const IntConvArgs& args, void* y, cudaStream_t s);

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

}  // namespace k

// ---- CUDA ops -------------------------------------------------------------------------------
// Shapes, attributes, zero-point and scale layouts are read by the CPU reference's own readers
// (integer.h), so a bad layout is refused in the same
// words on both backends; the kernels then index the parameters through the strides those readers
// give instead of the reference's per-element index tables.

namespace {

using namespace util;

constexpr std::initializer_list<DataType> k8Bit = {DataType::kUInt8, DataType::kInt8};
constexpr std::initializer_list<DataType> kScaleTypes = {DataType::kFloat32, DataType::kFloat16,
                                                         DataType::kBFloat16};

// Input indices of the operands and parameters: MatMulInteger/ConvInteger take (a, b, a_zp, b_zp),
// the QLinear ops (a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp[, bias]).
struct Inputs {
  size_t a, b, a_zp, b_zp;
};
constexpr Inputs kIntegerInputs{0, 1, 2, 3};
constexpr Inputs kQLinearInputs{0, 3, 2, 5};

std::string input_name(size_t i) { return "input " + std::to_string(i); }

// ---- supports ----

// An optional zero point has its operand's dtype.
bool zero_point_ok(const Node& n, size_t zp, size_t of, std::string* why) {
  if (!has_input(n, zp) || in_dtype(n, zp) == in_dtype(n, of)) return true;
  return reject(why, input_name(zp) + " (a zero point) has dtype " + dtype_name(in_dtype(n, zp)) + " but " +
                         input_name(of) + " has " + dtype_name(in_dtype(n, of)));
}

// Both operands given (their dtypes, uint8/int8: the rows' keys), each zero point of its operand's dtype.
bool operands_ok(const Node& n, const Inputs& io, std::string* why) {
  if (!has_input(n, io.a) || !has_input(n, io.b)) return reject(why, "needs both operands");
  return zero_point_ok(n, io.a_zp, io.a, why) && zero_point_ok(n, io.b_zp, io.b, why);
}

// MatMulInteger's and ConvInteger's output 0 is given (its dtype, int32: their key).
bool output0_given(const Node& n, std::string* why) { return n.output(0) || reject(why, "output 0 is missing"); }

bool output_is(const Node& n, DataType t, std::string* why) {
  if (out_dtype(n, 0) == t) return true;
  return reject(why, std::string("output 0 has dtype ") + dtype_name(out_dtype(n, 0)) + "; the kernel writes " +
                         dtype_name(t));
}

// The QLinear ops' three scales (inputs 1, 4, 6: one float dtype, of kScaleTypes by their keys) and
// output zero point (input 7, uint8/int8 by its key, whose dtype the output has).
bool qlinear_params_ok(const Node& n, std::string* why) {
  for (size_t i : {1, 4, 6}) {
    if (!has_input(n, i)) return reject(why, "needs its three scales (inputs 1, 4 and 6)");
    if (in_dtype(n, i) != in_dtype(n, 1)) return reject(why, "the three scales differ in dtype");
  }
  if (!has_input(n, 7)) return reject(why, "needs y_zero_point (input 7)");
  return output_is(n, in_dtype(n, 7), why);
}

// Both operand ranks known, the batch within what the kernel's stride tables hold.
bool matmul_ranks_ok(const Node& n, const Inputs& io, std::string* why) {
  for (size_t i : {io.a, io.b}) {
    const int64_t r = n.input(i)->desc.rank();
    if (r < 1) return reject(why, input_name(i) + " has no known rank at build time");
    if (r > k::kMaxRank + 2)
      return reject(why, input_name(i) + " has rank " + std::to_string(r) + "; the kernel handles " +
                             std::to_string(k::kMaxRank) + " batch axes");
  }
  return true;
}

bool conv_rank_ok(const Node& n, std::string* why) {
  const int64_t r = n.input(0)->desc.rank();
  if (r < 3 || r > 2 + k::kIntConvMaxSpatial)
    return reject(why, "x must have a known rank of 3 to " + std::to_string(2 + k::kIntConvMaxSpatial) +
                           " (1-D to 3-D convolution), got " + (r < 0 ? std::string("unknown") : std::to_string(r)));
  return true;
}

bool matmul_integer_supports(const Node& n, std::string* why) {
  return operands_ok(n, kIntegerInputs, why) && output0_given(n, why) && matmul_ranks_ok(n, kIntegerInputs, why);
}

bool qlinear_matmul_supports(const Node& n, std::string* why) {
  return operands_ok(n, kQLinearInputs, why) && qlinear_params_ok(n, why) && matmul_ranks_ok(n, kQLinearInputs, why);
}

bool conv_integer_supports(const Node& n, std::string* why) {
  return operands_ok(n, kIntegerInputs, why) && output0_given(n, why) && conv_rank_ok(n, why);
}

// The optional bias (input 8) is int32 by the row's key.
bool qlinear_conv_supports(const Node& n, std::string* why) {
  return operands_ok(n, kQLinearInputs, why) && qlinear_params_ok(n, why) && conv_rank_ok(n, why);
}

// ---- run ----

// The dtypes the kernels assume, checked again on the concrete tensors.
Status check_operands(const CudaExec& ex, const Inputs& io) {
  const Tensor* a = input_or_null(ex, io.a);
  const Tensor* b = input_or_null(ex, io.b);
  if (!a || !b) return fail(ex, StatusCode::kInvalidModel, "needs both operands");
  for (const Tensor* t : {a, b})
    if (t->dtype() != DataType::kInt8 && t->dtype() != DataType::kUInt8)
      return fail(ex, StatusCode::kUnsupported, "an operand has dtype ", dtype_name(t->dtype()),
                  "; expected int8 or uint8");
  const Tensor* az = input_or_null(ex, io.a_zp);
  const Tensor* bz = input_or_null(ex, io.b_zp);
  if ((az && az->dtype() != a->dtype()) || (bz && bz->dtype() != b->dtype()))
    return fail(ex, StatusCode::kInvalidModel, "a zero point has the dtype of its tensor");
  return Status::ok();
}

// The QLinear ops' scales (one float dtype), y_scale and y_zero_point per tensor, and the output's
// dtype that of y_zero_point.
Status check_qlinear_params(const CudaExec& ex) {
  const Tensor* s0 = input_or_null(ex, 1);
  for (size_t i : {1, 4, 6}) {
    const Tensor* s = input_or_null(ex, i);
    if (!s) return fail(ex, StatusCode::kInvalidModel, "required input ", static_cast<int64_t>(i), " (a scale) is missing");
    if ((s->dtype() != DataType::kFloat32 && s->dtype() != DataType::kFloat16 && s->dtype() != DataType::kBFloat16) ||
        s->dtype() != s0->dtype())
      return fail(ex, StatusCode::kUnsupported, "the scales must share one dtype of float32, float16 or bfloat16");
  }
  const Tensor* yzp = input_or_null(ex, 7);
  if (!yzp) return fail(ex, StatusCode::kInvalidModel, "required input y_zero_point is missing");
  if (yzp->dtype() != DataType::kInt8 && yzp->dtype() != DataType::kUInt8)
    return fail(ex, StatusCode::kUnsupported, "y_zero_point has dtype ", dtype_name(yzp->dtype()),
                "; expected int8 or uint8");
  GRAFT_RETURN_IF_ERROR(with_node(ex, check_per_tensor(input_or_null(ex, 6)->dims(), "y_scale")));
  GRAFT_RETURN_IF_ERROR(with_node(ex, check_per_tensor(yzp->dims(), "y_zero_point")));
  return Status::ok();
}

Status check_output(const CudaExec& ex, const Tensor& y, const std::vector<int64_t>& dims, DataType dt) {
  if (y.dims() != dims || y.dtype() != dt)
    return fail(ex, StatusCode::kInternal, "output ", dtype_name(y.dtype()), ints_to_string(y.dims()),
                " inconsistent with the inputs (", dtype_name(dt), ints_to_string(dims), ")");
  return Status::ok();
}

// Per output batch axis, the stride of an operand whose own batch axes (right-aligned against the
// output's `rank` axes) advance by `own` (0 where it broadcasts).
void place_strides(const std::vector<int64_t>& own, size_t rank, int64_t (&dst)[k::kMaxRank]) {
  const size_t lead = rank - own.size();
  for (size_t j = 0; j < rank; ++j) dst[j] = j < lead ? 0 : own[j - lead];
}

// An operand's own batch strides in elements: contiguous over its batch dims, times the matrix size.
std::vector<int64_t> operand_batch_strides(const std::vector<int64_t>& dims) {
  const size_t nb = dims.size() - 2;
  std::vector<int64_t> st(nb, 0);
  int64_t step = dims[nb] * dims[nb + 1];
  for (size_t a = nb; a-- > 0;) {
    st[a] = dims[a] == 1 ? 0 : step;
    step *= dims[a];
  }
  return st;
}

Status matmul_run(CudaExec& ex, bool qlinear) {
  const Inputs& io = qlinear ? kQLinearInputs : kIntegerInputs;
  GRAFT_RETURN_IF_ERROR(check_operands(ex, io));
  if (qlinear) GRAFT_RETURN_IF_ERROR(check_qlinear_params(ex));
  const Tensor& A = *input_or_null(ex, io.a);
  const Tensor& B = *input_or_null(ex, io.b);
  const Tensor* azp = input_or_null(ex, io.a_zp);
  const Tensor* bzp = input_or_null(ex, io.b_zp);
  auto plan_or = int_matmul_plan(A.dims(), B.dims());
  if (!plan_or) return with_node(ex, plan_or.status());
  const IntMatMulPlan& p = plan_or.value();
  const size_t rank = p.batch.size();
  if (rank > static_cast<size_t>(k::kMaxRank))
    return fail(ex, StatusCode::kUnsupported, "the broadcast batch has ", static_cast<int64_t>(rank),
                " axes; the kernel handles ", static_cast<int64_t>(k::kMaxRank));

  k::IntMatMulArgs args;
  args.M = p.M;
  args.K = p.K;
  args.N = p.N;
  args.batch_rank = static_cast<int>(rank);
  int64_t batch = 1;
  for (size_t j = 0; j < rank; ++j) {
    args.batch_dims[j] = p.batch[j];
    batch *= p.batch[j];
  }
  place_strides(operand_batch_strides(p.a_dims), rank, args.batch_strides[k::kIntA]);
  place_strides(operand_batch_strides(p.b_dims), rank, args.batch_strides[k::kIntB]);
  // A parameter's layout (zero point or scale) as strides; errors in the reference's words.
  auto place_param = [&](const Tensor* t, bool a_side, const char* name, k::IntMatMulOperand slot) -> Status {
    if (!t) return Status::ok();
    auto st = matmul_param_strides(p, a_side, t->dims(), name);
    if (!st) return with_node(ex, st.status());
    place_strides(st.value().batch, rank, args.batch_strides[slot]);
    args.vary_stride[slot] = st.value().vary;
    return Status::ok();
  };
  GRAFT_RETURN_IF_ERROR(place_param(azp, true, "a_zero_point", k::kIntAZp));
  GRAFT_RETURN_IF_ERROR(place_param(bzp, false, "b_zero_point", k::kIntBZp));
  args.a = A.data();
  args.b = B.data();
  args.a_zp = azp ? azp->data() : nullptr;
  args.b_zp = bzp ? bzp->data() : nullptr;
  DataType out_t = DataType::kInt32;
  if (qlinear) {
    const Tensor* as = input_or_null(ex, 1);
    const Tensor* bs = input_or_null(ex, 4);
    GRAFT_RETURN_IF_ERROR(place_param(as, true, "a_scale", k::kIntAScale));
    GRAFT_RETURN_IF_ERROR(place_param(bs, false, "b_scale", k::kIntBScale));
    args.scale_t = ktype(as->dtype());
    args.a_scale = as->data();
    args.b_scale = bs->data();
    args.y_scale = input_or_null(ex, 6)->data();
    args.y_zp = input_or_null(ex, 7)->data();
    out_t = input_or_null(ex, 7)->dtype();
  }
  Tensor& Y = *ex.ctx->outputs[0];
  GRAFT_RETURN_IF_ERROR(check_output(ex, Y, p.out_dims, out_t));
  return launch_status(
      k::launch_int_matmul(ktype(A.dtype()), ktype(B.dtype()), ktype(out_t), args, batch, Y.data(), stream_of(ex)),
      ex);
}

Status conv_run(CudaExec& ex, bool qlinear) {
  const Inputs& io = qlinear ? kQLinearInputs : kIntegerInputs;
  GRAFT_RETURN_IF_ERROR(check_operands(ex, io));
  if (qlinear) {
    GRAFT_RETURN_IF_ERROR(check_qlinear_params(ex));
    GRAFT_RETURN_IF_ERROR(with_node(ex, check_per_tensor(input_or_null(ex, 1)->dims(), "x_scale")));
  }
  const Tensor& X = *input_or_null(ex, io.a);
  const Tensor& W = *input_or_null(ex, io.b);
  const Tensor* xzp = input_or_null(ex, io.a_zp);
  const Tensor* wzp = input_or_null(ex, io.b_zp);
  auto plan_or = int_conv_plan(attrs_of(ex), X.dims(), W.dims());
  if (!plan_or) return with_node(ex, plan_or.status());
  const IntConvPlan& p = plan_or.value();
  if (xzp) GRAFT_RETURN_IF_ERROR(with_node(ex, check_per_tensor(xzp->dims(), "x_zero_point")));
  if (wzp) GRAFT_RETURN_IF_ERROR(with_node(ex, check_per_channel(wzp->dims(), p.M, "w_zero_point")));
  const size_t nsp = X.dims().size() - 2;
  if (nsp > static_cast<size_t>(k::kIntConvMaxSpatial))
    return fail(ex, StatusCode::kUnsupported, "a ", static_cast<int64_t>(nsp), "-D convolution; the kernel handles up to ",
                static_cast<int64_t>(k::kIntConvMaxSpatial), "-D");

  k::IntConvArgs args;
  args.N = p.N;
  args.C = p.C;
  args.M = p.M;
  args.Cg = p.Cg;
  args.Mg = p.M / p.group;
  const std::vector<int64_t> in_sp(X.dims().begin() + 2, X.dims().end());
  std::vector<int64_t> pb, pe;
  resolve_pads(p.window, in_sp, &pb, &pe);
  // Fewer spatial axes than the kernel's take the leading slots' extent-1 defaults.
  const size_t shift = static_cast<size_t>(k::kIntConvMaxSpatial) - nsp;
  for (size_t a = 0; a < nsp; ++a) {
    args.in[shift + a] = in_sp[a];
    args.out[shift + a] = p.out_dims[2 + a];
    args.kernel[shift + a] = p.window.kernel[a];
    args.stride[shift + a] = p.window.strides[a];
    args.pad[shift + a] = pb[a];
    args.dilation[shift + a] = p.window.dilations[a];
  }
  args.x = X.data();
  args.w = W.data();
  args.x_zp = xzp ? xzp->data() : nullptr;
  args.w_zp = wzp ? wzp->data() : nullptr;
  args.w_zp_per_channel = wzp && wzp->numel() > 1;
  DataType out_t = DataType::kInt32;
  if (qlinear) {
    const Tensor* ws = input_or_null(ex, 4);
    GRAFT_RETURN_IF_ERROR(with_node(ex, check_per_channel(ws->dims(), p.M, "w_scale")));
    const Tensor* bias = input_or_null(ex, 8);
    if (bias) GRAFT_RETURN_IF_ERROR(with_node(ex, check_conv_bias(bias->dtype(), bias->dims(), p.M)));
    args.scale_t = ktype(ws->dtype());
    args.x_scale = input_or_null(ex, 1)->data();
    args.w_scale = ws->data();
    args.w_scale_per_channel = ws->numel() > 1;
    args.y_scale = input_or_null(ex, 6)->data();
    args.y_zp = input_or_null(ex, 7)->data();
    args.bias = bias ? static_cast<const int32_t*>(bias->data()) : nullptr;
    out_t = input_or_null(ex, 7)->dtype();
  }
  Tensor& Y = *ex.ctx->outputs[0];
  GRAFT_RETURN_IF_ERROR(check_output(ex, Y, p.out_dims, out_t));
  return launch_status(k::launch_int_conv(ktype(X.dtype()), ktype(W.dtype()), ktype(out_t), args, Y.data(), stream_of(ex)),
                       ex);
}

Status matmul_integer_run(CudaExec& ex) { return matmul_run(ex, false); }
Status qlinear_matmul_run(CudaExec& ex) { return matmul_run(ex, true); }
Status conv_integer_run(CudaExec& ex) { return conv_run(ex, false); }
Status qlinear_conv_run(CudaExec& ex) { return conv_run(ex, true); }

}  // namespace

void append_cuda_integer_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, k8Bit), input_dtypes(1, k8Bit), output_dtypes(0, {DataType::kInt32})},
                              CudaOp{"MatMulInteger", &matmul_integer_supports, &matmul_integer_run, {}, nullptr}));
  out.push_back(kernel_dtypes({input_dtypes(0, k8Bit), input_dtypes(1, k8Bit), output_dtypes(0, {DataType::kInt32})},
                              CudaOp{"ConvInteger", &conv_integer_supports, &conv_integer_run, {}, nullptr}));
  out.push_back(kernel_dtypes({input_dtypes(0, k8Bit), input_dtypes(1, kScaleTypes), input_dtypes(3, k8Bit),
                               input_dtypes(4, kScaleTypes), input_dtypes(6, kScaleTypes), input_dtypes(7, k8Bit)},
                              CudaOp{"QLinearMatMul", &qlinear_matmul_supports, &qlinear_matmul_run, {}, nullptr}));
  out.push_back(kernel_dtypes({input_dtypes(0, k8Bit), input_dtypes(1, kScaleTypes), input_dtypes(3, k8Bit),
                               input_dtypes(4, kScaleTypes), input_dtypes(6, kScaleTypes), input_dtypes(7, k8Bit),
                               input_dtypes(8, {DataType::kInt32})},
                              CudaOp{"QLinearConv", &qlinear_conv_supports, &qlinear_conv_run, {}, nullptr}));
}

}  // namespace graft::cuda
