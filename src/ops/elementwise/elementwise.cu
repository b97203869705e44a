// The elementwise family's CUDA kernels and ops: unary activations and math, broadcasting binary
// ops and comparisons (32-bit index math with fast division where the sizes allow), Where, Not,
// Cast/CastLike and Identity, and the broadcast copy Expand and Gemm's C use. The ops name the dtypes
// their kernels take (dtype keys), check attributes and the rest (supports) and turn the node into
// launcher arguments (run); the kernels repeat the CPU references' arithmetic in float for the half
// types.
#include "ops/elementwise/elementwise.h"

#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/fast_divide.h"
#include "backends/cuda/shape_kernels.cuh"
#include "core/float8.h"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------------

namespace k {

constexpr int kMaxVariadic = 8;
// Up to kMaxVariadic operands broadcast to one row-major output (per operand, per axis stride).
struct VarBcast {
  int rank = 0;
  int count = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxVariadic][kMaxRank] = {};
  const void* in[kMaxVariadic] = {};
};
// out = scale * sum of the operands (float types accumulate in float; i32/i64 wrap and ignore
// `scale`). An operand may be `out` itself when its strides are the identity (chained launches).
cudaError_t launch_variadic_sum(KType t, const VarBcast& p, void* out, int64_t n, float scale, cudaStream_t s);

// y (bool) = isnan(x) when !inf, else isinf(x) && (x > 0 ? pos : neg). Float types.
cudaError_t launch_float_class(KType t, bool inf, bool neg, bool pos, const void* x, void* y, int64_t n,
                               cudaStream_t s);
// Float32 y = x > 0 ? x : alpha * expm1(x / alpha) (alpha finite and nonzero, checked by the caller).
cudaError_t launch_celu(const float* x, float* y, int64_t n, float alpha, cudaStream_t s);

namespace {

// ---- unary ----------------------------------------------------------------------------------

__device__ __forceinline__ float unary_f(UnaryOp op, float x, float a, float b) {
  switch (op) {
    case UnaryOp::kRelu: return x < 0.f ? 0.f : x;
    case UnaryOp::kLeakyRelu: return x < 0.f ? a * x : x;
    // ONNX's definition, 1 / (1 + exp(-x)), as its reference implementation and PyTorch's CUDA
    // kernel write it, so a float32 engine gives PyTorch's values bit for bit (expf(-x) overflows
    // to inf below -88 and the result is 0, as there). The split by sign it replaces (e / (1 + e)
    // for x < 0) rounds differently by an ulp: in Faster R-CNN, objectness probabilities an ulp
    // apart reordered near-equal proposals, changed which box the RPN's NMS kept, and so a few of
    // each image's detections. The fused kernels (GraftElementwise, conv epilogues) already did this.
    case UnaryOp::kSigmoid: return 1.f / (1.f + expf(-x));
    case UnaryOp::kTanh: return tanhf(x);
    case UnaryOp::kErf: return erff(x);
    case UnaryOp::kGeluErf: return 0.5f * x * erfcf(x * -0.70710678118654752440f);  // = 1 + erf, no cancellation
    case UnaryOp::kGeluTanh: return 0.5f * x * (1.f + tanhf(0.79788456080286535588f * (x + 0.044715f * x * x * x)));
    case UnaryOp::kHardSigmoid: return fmaxf(0.f, fminf(1.f, a * x + b));
    case UnaryOp::kHardSwish: return x * fmaxf(0.f, fminf(1.f, x / 6.f + 0.5f));
    case UnaryOp::kClip: {  // min(max(x, a), b): b wherever a > b (ONNX, numpy.clip); NaN stays
      const float up = x < a ? a : x;
      return up > b ? b : up;
    }
    case UnaryOp::kExp: return expf(x);
    case UnaryOp::kLog: return logf(x);
    case UnaryOp::kSqrt: return sqrtf(x);
    case UnaryOp::kReciprocal: return 1.f / x;
    case UnaryOp::kNeg: return -x;
    case UnaryOp::kAbs: return fabsf(x);
    case UnaryOp::kFloor: return floorf(x);
    case UnaryOp::kCeil: return ceilf(x);
    case UnaryOp::kSin: return sinf(x);
    case UnaryOp::kCos: return cosf(x);
    case UnaryOp::kSoftplus: return x > 0.f ? x + log1pf(expf(-x)) : log1pf(expf(x));
    case UnaryOp::kElu: return x < 0.f ? a * expm1f(x) : x;
    case UnaryOp::kTan: return tanf(x);
    case UnaryOp::kAsin: return asinf(x);
    case UnaryOp::kAcos: return acosf(x);
    case UnaryOp::kAtan: return atanf(x);
    case UnaryOp::kSinh: return sinhf(x);
    case UnaryOp::kCosh: return coshf(x);
    case UnaryOp::kAsinh: return asinhf(x);
    case UnaryOp::kAcosh: return acoshf(x);
    case UnaryOp::kAtanh: return atanhf(x);
    case UnaryOp::kRound: return rintf(x);  // halves to even, as std::nearbyint in the CPU reference
    case UnaryOp::kSoftsign: return x / (1.f + fabsf(x));
    case UnaryOp::kSign: return isnan(x) ? x : (x > 0.f ? 1.f : (x < 0.f ? -1.f : 0.f));
    case UnaryOp::kSelu: return x > 0.f ? b * x : b * (a * expf(x) - a);
    case UnaryOp::kShrink: return x < -a ? x + b : (x > a ? x - b : 0.f);
    case UnaryOp::kThresholdedRelu: return x > a ? x : 0.f;
    case UnaryOp::kMish: return x * tanhf(x > 0.f ? x + log1pf(expf(-x)) : log1pf(expf(x)));  // x tanh(softplus(x))
    default: return x;
  }
}

template <typename T>
__global__ void unary_float_kernel(UnaryOp op, const T* __restrict__ x, T* __restrict__ y, int64_t n, float a, float b) {
  GRAFT_GRID_STRIDE(i, n) y[i] = Elem<T>::st(unary_f(op, Elem<T>::ld(x[i]), a, b));
}

// Four elements per thread through one 8/16-byte access when the buffers are aligned.
template <typename T>
struct alignas(sizeof(T) * 4) Vec4 {
  T v[4];
};
template <typename T>
__global__ void unary_float_vec_kernel(UnaryOp op, const Vec4<T>* __restrict__ x, Vec4<T>* __restrict__ y, int64_t n4,
                                       float a, float b) {
  GRAFT_GRID_STRIDE(i, n4) {
    Vec4<T> in = x[i], out;
#pragma unroll
    for (int j = 0; j < 4; ++j) out.v[j] = Elem<T>::st(unary_f(op, Elem<T>::ld(in.v[j]), a, b));
    y[i] = out;
  }
}

template <typename T>
__global__ void unary_int_kernel(UnaryOp op, const T* __restrict__ x, T* __restrict__ y, int64_t n, float a,
                                 float b) {
  using U = std::make_unsigned_t<T>;
  GRAFT_GRID_STRIDE(i, n) {
    T v = x[i];
    T neg = static_cast<T>(U(0) - static_cast<U>(v));  // wraps like the CPU reference
    switch (op) {
      case UnaryOp::kRelu: y[i] = v < 0 ? T(0) : v; break;
      case UnaryOp::kNeg: y[i] = neg; break;
      case UnaryOp::kSign: y[i] = v > 0 ? T(1) : (v < 0 ? T(-1) : T(0)); break;
      case UnaryOp::kShrink: {
        // In double, then truncated toward zero, as the CPU reference does.
        const double d = static_cast<double>(v), l = a;
        y[i] = static_cast<T>(d < -l ? d + b : (d > l ? d - b : 0.0));
        break;
      }
      case UnaryOp::kClip: {
        // Bounds a (min) and b (max) as floats, exact for int8 (the one integer key of Clip); the
        // upper bound applied last, so min > max gives max, as in the CPU reference.
        double d = static_cast<double>(v);
        if (d < a) d = a;
        if (d > b) d = b;
        y[i] = static_cast<T>(d);
        break;
      }
      default: y[i] = v < 0 ? neg : v; break;  // kAbs
    }
  }
}

__global__ void not_kernel(const uint8_t* __restrict__ x, uint8_t* __restrict__ y, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) y[i] = x[i] ? 0 : 1;
}

template <typename T>
cudaError_t unary_float(UnaryOp op, const void* x, void* y, int64_t n, float a, float b, cudaStream_t s) {
  const bool aligned = (reinterpret_cast<uintptr_t>(x) % sizeof(Vec4<T>)) == 0 &&
                       (reinterpret_cast<uintptr_t>(y) % sizeof(Vec4<T>)) == 0;
  int64_t done = 0;
  if (aligned && n >= 4) {
    const int64_t n4 = n / 4;
    unary_float_vec_kernel<T><<<grid_for(n4), kThreads, 0, s>>>(op, static_cast<const Vec4<T>*>(x),
                                                               static_cast<Vec4<T>*>(y), n4, a, b);
    done = n4 * 4;
  }
  if (done < n)
    unary_float_kernel<T><<<grid_for(n - done), kThreads, 0, s>>>(op, static_cast<const T*>(x) + done,
                                                                  static_cast<T*>(y) + done, n - done, a, b);
  return cudaGetLastError();
}

template <typename T>
cudaError_t unary_int(UnaryOp op, const void* x, void* y, int64_t n, float a, float b, cudaStream_t s) {
  if (op != UnaryOp::kRelu && op != UnaryOp::kNeg && op != UnaryOp::kAbs && op != UnaryOp::kSign &&
      op != UnaryOp::kShrink && op != UnaryOp::kClip)
    return cudaErrorInvalidValue;
  unary_int_kernel<T><<<grid_for(n), kThreads, 0, s>>>(op, static_cast<const T*>(x), static_cast<T*>(y), n, a, b);
  return cudaGetLastError();
}

// ---- binary ---------------------------------------------------------------------------------

template <typename C>
__device__ __forceinline__ bool isnan_c(C v) {
  if constexpr (std::is_floating_point_v<C>) return isnan(v);
  return false;
}

template <typename C>
__device__ __forceinline__ C arith(BinaryOp op, C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    switch (op) {
      case BinaryOp::kAdd: return static_cast<C>(static_cast<U>(a) + static_cast<U>(b));
      case BinaryOp::kSub: return static_cast<C>(static_cast<U>(a) - static_cast<U>(b));
      case BinaryOp::kMul: return static_cast<C>(static_cast<U>(a) * static_cast<U>(b));
      case BinaryOp::kMax: return a < b ? b : a;
      case BinaryOp::kMin: return b < a ? b : a;
      case BinaryOp::kPRelu:
        if constexpr (std::is_unsigned_v<C>) return a;  // never negative
        else return a < 0 ? static_cast<C>(static_cast<U>(a) * static_cast<U>(b)) : a;
      case BinaryOp::kDiv:
        // Truncating toward zero, as the CPU reference; x / -1 negates in wrapping arithmetic (the
        // minimum's quotient would trap). A zero divisor writes 0, reported by
        // launch_report_zero_divisor.
        if (b == 0) return 0;
        if constexpr (std::is_signed_v<C>) {
          if (b == C(-1)) return static_cast<C>(U(0) - static_cast<U>(a));
        }
        return static_cast<C>(a / b);
      case BinaryOp::kMod:
      case BinaryOp::kFmod:
        // A zero divisor writes 0, reported by launch_report_zero_divisor (the CPU reference fails).
        if constexpr (std::is_unsigned_v<C>) {
          return b == 0 ? C(0) : static_cast<C>(a % b);  // both signs agree: % is Python's and C's
        } else {
          // In 64 bits, and x % -1 is 0 for every x (INT64_MIN % -1 would trap).
          if (b == 0 || b == C(-1)) return 0;
          int64_t t = static_cast<int64_t>(a) % static_cast<int64_t>(b);
          if (op == BinaryOp::kMod && t != 0 && ((t < 0) != (b < 0))) t += b;  // the divisor's sign
          return static_cast<C>(t);
        }
      default: return 0;  // Pow on integers takes pow_op's mixed kernel
    }
  } else {
    switch (op) {
      case BinaryOp::kAdd: return a + b;
      case BinaryOp::kSub: return a - b;
      case BinaryOp::kMul: return a * b;
      case BinaryOp::kDiv: return a / b;
      case BinaryOp::kPow:
        if constexpr (std::is_same_v<C, double>) return pow(a, b);
        else return powf(a, b);
      case BinaryOp::kMax: return (isnan_c(a) || isnan_c(b)) ? (isnan_c(a) ? a : b) : (a < b ? b : a);
      case BinaryOp::kMin: return (isnan_c(a) || isnan_c(b)) ? (isnan_c(a) ? a : b) : (b < a ? b : a);
      case BinaryOp::kPRelu: return a < 0 ? b * a : a;
      case BinaryOp::kFmod:  // floating kMod (fmod=0) is rejected by supports()
        if constexpr (std::is_same_v<C, double>) return fmod(a, b);
        else return fmodf(a, b);
      default: return 0;
    }
  }
}

template <typename C>
__device__ __forceinline__ bool cmp(BinaryOp op, C a, C b) {
  switch (op) {
    case BinaryOp::kEqual: return a == b;
    case BinaryOp::kLess: return a < b;
    case BinaryOp::kGreater: return a > b;
    case BinaryOp::kLessEq: return a <= b;
    case BinaryOp::kGreaterEq: return a >= b;
    case BinaryOp::kAnd: return a && b;
    case BinaryOp::kOr: return a || b;
    case BinaryOp::kXor: return static_cast<bool>(a) != static_cast<bool>(b);
    default: return false;
  }
}

// out = op(a, b) as the output type O: T (arithmetic) or uint8_t (kCmp: comparisons and logic).
template <typename T, typename O, bool kCmp>
__device__ __forceinline__ O apply_binary(BinaryOp op, T a, T b) {
  if constexpr (kCmp) return cmp(op, Elem<T>::ld(a), Elem<T>::ld(b)) ? O(1) : O(0);
  else return Elem<T>::st(arith(op, Elem<T>::ld(a), Elem<T>::ld(b)));
}

// N elements moved by one aligned access (16 bytes for f32/f16 operands).
template <typename T, int N>
struct alignas(sizeof(T) * N) VecN {
  T v[N];
};
template <typename T> constexpr int kVecN = sizeof(T) >= 8 ? 2 : 16 / static_cast<int>(sizeof(T));

// Same-shape operands and scalar operands (kScalarA / kScalarB: that operand has one element):
// no broadcast index math at all. The vector kernel covers n / N groups of N; the scalar kernel
// covers the rest (or everything when a pointer is misaligned).
template <typename T, typename O, bool kCmp, bool kScalarA, bool kScalarB>
__global__ void binary_flat_kernel(BinaryOp op, const T* __restrict__ a, const T* __restrict__ b, O* __restrict__ out,
                                   int64_t n) {
  GRAFT_GRID_STRIDE(i, n) out[i] = apply_binary<T, O, kCmp>(op, a[kScalarA ? 0 : i], b[kScalarB ? 0 : i]);
}

template <typename T, typename O, bool kCmp, bool kScalarA, bool kScalarB>
__global__ void binary_flat_vec_kernel(BinaryOp op, const T* __restrict__ a, const T* __restrict__ b,
                                       O* __restrict__ out, int64_t ngroups) {
  constexpr int N = kVecN<T>;
  // The scalars, read only for scalar operands: a full operand may be the output (in-place bias add).
  T sa{}, sb{};
  if constexpr (kScalarA) sa = a[0];
  if constexpr (kScalarB) sb = b[0];
  GRAFT_GRID_STRIDE(g, ngroups) {
    VecN<T, N> va, vb;
    if constexpr (!kScalarA) va = reinterpret_cast<const VecN<T, N>*>(a)[g];
    if constexpr (!kScalarB) vb = reinterpret_cast<const VecN<T, N>*>(b)[g];
    VecN<O, N> o;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      T x, y;
      if constexpr (kScalarA) x = sa; else x = va.v[j];
      if constexpr (kScalarB) y = sb; else y = vb.v[j];
      o.v[j] = apply_binary<T, O, kCmp>(op, x, y);
    }
    reinterpret_cast<VecN<O, N>*>(out)[g] = o;
  }
}

// General broadcast with index type I (int32_t when n < 2^30: every operand offset is below n).
// Axes innermost first (the reverse of Bcast), so the kernels' unrolled loops index them with constants.
template <typename I>
struct BcastI {
  int rank = 0;
  I dims[kMaxRank] = {};
  I strides[3][kMaxRank] = {};
  FastDivide fast_dims[kMaxRank];  // the dims as divisors (used with 32-bit indices)
};
template <typename I>
BcastI<I> narrow_bcast(const Bcast& p) {
  BcastI<I> q;
  q.rank = p.rank;
  for (int d = 0; d < p.rank; ++d) {
    const int from = p.rank - 1 - d;
    q.dims[d] = static_cast<I>(p.dims[from]);
    if constexpr (std::is_same_v<I, int32_t>) q.fast_dims[d] = FastDivide(static_cast<uint32_t>(p.dims[from]));
    for (int k = 0; k < 3; ++k) q.strides[k][d] = static_cast<I>(p.strides[k][from]);
  }
  return q;
}

#define GRAFT_GRID_STRIDE_I(I, i, n)                                                                         \
  for (I i = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x); i < (n); \
       i += static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x))

template <typename I, int K>
__device__ __forceinline__ void bcast_offsets(const BcastI<I>& p, I i, I (&off)[K]) {
#pragma unroll
  for (int k = 0; k < K; ++k) off[k] = 0;
  // Unrolled over kMaxRank with constant indices (the axes are stored innermost first), so the
  // parameters are read in place and nothing goes to local memory; the loop leaves at p.rank.
#pragma unroll
  for (int d = 0; d < kMaxRank; ++d) {
    if (d >= p.rank) break;
    const I q = pop_axis(i, p.dims[d], p.fast_dims[d]);
#pragma unroll
    for (int k = 0; k < K; ++k) off[k] += q * p.strides[k][d];
  }
}

// Elements per thread of the scalar (unvectorized) kernels: a thread issues all its loads before
// its first store. One element per thread left these kernels waiting on memory latency at about a
// sixth of the bandwidth (a 5M-element broadcast Div took 41 us).
constexpr int kUnroll = 4;

template <typename T, typename O, bool kCmp, typename I>
__global__ void binary_bcast_kernel(BinaryOp op, const T* __restrict__ a, const T* __restrict__ b, O* __restrict__ out,
                                    BcastI<I> p, I n) {
  const I step = static_cast<I>(blockDim.x);
  for (I base = static_cast<I>(blockIdx.x) * step * kUnroll + static_cast<I>(threadIdx.x); base < n;
       base += static_cast<I>(gridDim.x) * step * kUnroll) {
    T va[kUnroll], vb[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const I i = base + static_cast<I>(u) * step;
      if (i >= n) break;
      I off[2];
      bcast_offsets<I, 2>(p, i, off);
      va[u] = a[off[0]];
      vb[u] = b[off[1]];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const I i = base + static_cast<I>(u) * step;
      if (i >= n) break;
      out[i] = apply_binary<T, O, kCmp>(op, va[u], vb[u]);
    }
  }
}

constexpr int64_t kIndex32Limit = int64_t(1) << 30;  // n plus one grid's width (x kUnroll) stays below 2^31

// Broadcast whose innermost axis every operand either runs along (stride 1) or is broadcast over
// (stride 0), as the SE gate of an NHWC engine ([n, h*w, c] * [n, 1, c]): a thread takes N
// consecutive elements of that axis, one aligned vector of the output and of each running operand
// and one scalar of each broadcast one (kSplatA / kSplatB). `p` is in groups of N along the inner
// axis (dims[0] / N) with element strides (N or 0 on the inner axis). The scalar kernel above ran
// EfficientNet's first SE gate at batch 32 (float16, 26 MB out) in 43 us, a third of the bandwidth.
template <typename T, typename O, bool kCmp, bool kSplatA, bool kSplatB>
__global__ void binary_bcast_vec_kernel(BinaryOp op, const T* __restrict__ a, const T* __restrict__ b,
                                        O* __restrict__ out, BcastI<int32_t> p, int32_t ngroups) {
  constexpr int N = kVecN<T>;
  GRAFT_GRID_STRIDE_I(int32_t, g, ngroups) {
    int32_t off[2];
    bcast_offsets<int32_t, 2>(p, g, off);
    VecN<T, N> va, vb;
    T sa{}, sb{};
    if constexpr (kSplatA) sa = a[off[0]]; else va = *reinterpret_cast<const VecN<T, N>*>(a + off[0]);
    if constexpr (kSplatB) sb = b[off[1]]; else vb = *reinterpret_cast<const VecN<T, N>*>(b + off[1]);
    VecN<O, N> o;
#pragma unroll
    for (int j = 0; j < N; ++j) o.v[j] = apply_binary<T, O, kCmp>(op, kSplatA ? sa : va.v[j], kSplatB ? sb : vb.v[j]);
    reinterpret_cast<VecN<O, N>*>(out)[g] = o;
  }
}

// The vector broadcast where it applies (see above): false leaves the call to the scalar kernel.
template <typename T, typename O, bool kCmp>
bool binary_bcast_vec(BinaryOp op, const T* a, const T* b, O* out, const Bcast& p, int64_t n, cudaStream_t s) {
  constexpr int N = kVecN<T>;
  if (p.rank < 2 || n >= kIndex32Limit) return false;
  const int inner = p.rank - 1;
  if (p.dims[inner] % N != 0 || reinterpret_cast<uintptr_t>(out) % sizeof(VecN<O, N>) != 0) return false;
  const void* ptrs[2] = {a, b};
  bool splat[2];
  for (int k = 0; k < 2; ++k) {
    const int64_t si = p.strides[k][inner];
    if (si != 0 && si != 1) return false;
    splat[k] = si == 0;
    if (splat[k]) continue;
    if (reinterpret_cast<uintptr_t>(ptrs[k]) % sizeof(VecN<T, N>) != 0) return false;
    for (int d = 0; d < inner; ++d)
      if (p.strides[k][d] % N != 0) return false;
  }
  Bcast q = p;
  q.dims[inner] /= N;
  for (int k = 0; k < 2; ++k) q.strides[k][inner] = splat[k] ? 0 : N;
  const int64_t groups = n / N;
  const BcastI<int32_t> qi = narrow_bcast<int32_t>(q);
  const auto g32 = static_cast<int32_t>(groups);
  if (splat[0] && splat[1]) binary_bcast_vec_kernel<T, O, kCmp, true, true><<<grid_for(groups), kThreads, 0, s>>>(op, a, b, out, qi, g32);
  else if (splat[0]) binary_bcast_vec_kernel<T, O, kCmp, true, false><<<grid_for(groups), kThreads, 0, s>>>(op, a, b, out, qi, g32);
  else if (splat[1]) binary_bcast_vec_kernel<T, O, kCmp, false, true><<<grid_for(groups), kThreads, 0, s>>>(op, a, b, out, qi, g32);
  else binary_bcast_vec_kernel<T, O, kCmp, false, false><<<grid_for(groups), kThreads, 0, s>>>(op, a, b, out, qi, g32);
  return true;
}

template <typename T, typename O, bool kCmp, bool kScalarA, bool kScalarB>
void binary_flat(BinaryOp op, const T* a, const T* b, O* out, int64_t n, cudaStream_t s) {
  constexpr int N = kVecN<T>;
  const auto al = [](const void* ptr, size_t v) { return reinterpret_cast<uintptr_t>(ptr) % v == 0; };
  const bool aligned = (kScalarA || al(a, sizeof(VecN<T, N>))) && (kScalarB || al(b, sizeof(VecN<T, N>))) &&
                       al(out, sizeof(VecN<O, N>));
  int64_t done = 0;
  if (aligned && n >= N) {
    const int64_t ng = n / N;
    binary_flat_vec_kernel<T, O, kCmp, kScalarA, kScalarB><<<grid_for(ng), kThreads, 0, s>>>(op, a, b, out, ng);
    done = ng * N;
  }
  if (done < n)
    binary_flat_kernel<T, O, kCmp, kScalarA, kScalarB><<<grid_for(n - done), kThreads, 0, s>>>(
        op, kScalarA ? a : a + done, kScalarB ? b : b + done, out + done, n - done);
}

template <typename T, typename O, bool kCmp>
cudaError_t binary_dispatch(BinaryOp op, const T* a, const T* b, O* out, const Bcast& p, int64_t n, cudaStream_t s) {
  // make_bcast merged every axis it could: rank <= 1 with strides in {0, 1} is same-shape or scalar.
  const int64_t sa = p.rank == 0 ? 1 : p.strides[0][0], sb = p.rank == 0 ? 1 : p.strides[1][0];
  if (p.rank <= 1 && (sa == 0 || sa == 1) && (sb == 0 || sb == 1)) {
    if (sa == 1 && sb == 1) binary_flat<T, O, kCmp, false, false>(op, a, b, out, n, s);
    else if (sa == 1) binary_flat<T, O, kCmp, false, true>(op, a, b, out, n, s);
    else if (sb == 1) binary_flat<T, O, kCmp, true, false>(op, a, b, out, n, s);
    else binary_flat<T, O, kCmp, true, true>(op, a, b, out, n, s);
  } else if (binary_bcast_vec<T, O, kCmp>(op, a, b, out, p, n, s)) {
    // launched
  } else if (n < kIndex32Limit) {
    binary_bcast_kernel<T, O, kCmp, int32_t><<<grid_for(n, kUnroll), kThreads, 0, s>>>(
        op, a, b, out, narrow_bcast<int32_t>(p), static_cast<int32_t>(n));
  } else {
    binary_bcast_kernel<T, O, kCmp, int64_t><<<grid_for(n, kUnroll), kThreads, 0, s>>>(op, a, b, out,
                                                                                       narrow_bcast<int64_t>(p), n);
  }
  return cudaGetLastError();
}

// kBool: T is uint8_t holding bool operands, which only take the logic and comparison ops
// (launch_binary checks), so no arithmetic on them; uint8 data is T uint8_t with kBool false.
template <typename T, bool kBool = false>
cudaError_t binary_t(BinaryOp op, const void* a, const void* b, void* out, const Bcast& p, int64_t n, cudaStream_t s) {
  const T* pa = static_cast<const T*>(a);
  const T* pb = static_cast<const T*>(b);
  if (binary_writes_bool(op)) return binary_dispatch<T, uint8_t, true>(op, pa, pb, static_cast<uint8_t*>(out), p, n, s);
  if constexpr (kBool) return cudaErrorInvalidValue;
  else return binary_dispatch<T, T, false>(op, pa, pb, static_cast<T*>(out), p, n, s);
}

// ---- where ------------------------------------------------------------------------------------

template <typename E, typename I>
__global__ void where_kernel(const uint8_t* __restrict__ c, const E* __restrict__ x, const E* __restrict__ y,
                             E* __restrict__ out, BcastI<I> p, I n) {
  GRAFT_GRID_STRIDE_I(I, i, n) {
    I off[3];
    bcast_offsets<I, 3>(p, i, off);
    out[i] = c[off[0]] ? x[off[1]] : y[off[2]];
  }
}

template <typename E>
void where_t(const void* cond, const void* x, const void* y, void* out, const Bcast& p, int64_t n, cudaStream_t s) {
  const auto* c = static_cast<const uint8_t*>(cond);
  const E* px = static_cast<const E*>(x);
  const E* py = static_cast<const E*>(y);
  E* po = static_cast<E*>(out);
  if (n < kIndex32Limit)
    where_kernel<E, int32_t><<<grid_for(n), kThreads, 0, s>>>(c, px, py, po, narrow_bcast<int32_t>(p),
                                                             static_cast<int32_t>(n));
  else
    where_kernel<E, int64_t><<<grid_for(n), kThreads, 0, s>>>(c, px, py, po, narrow_bcast<int64_t>(p), n);
}

// ---- cast -------------------------------------------------------------------------------------

template <typename T> struct Lim;
template <> struct Lim<int8_t> { static constexpr double lo = -128.0, hi = 127.0; };
template <> struct Lim<uint8_t> { static constexpr double lo = 0.0, hi = 255.0; };
template <> struct Lim<int32_t> { static constexpr double lo = -2147483648.0, hi = 2147483647.0; };
template <> struct Lim<int64_t> { static constexpr double lo = -9223372036854775808.0, hi = 9223372036854775807.0; };

template <typename F, typename T>
__device__ __forceinline__ T cast_one(F v) {
  using CF = typename Elem<F>::C;
  CF c = Elem<F>::ld(v);
  if constexpr (std::is_same_v<T, bool>) {
    return c != CF(0);
  } else if constexpr (std::is_integral_v<T> && std::is_floating_point_v<CF>) {
    double d = static_cast<double>(c);
    if (isnan(d)) d = 0;
    d = fmin(fmax(d, Lim<T>::lo), Lim<T>::hi);
    // hi of int64 rounds up to 2^63 in double; saturate explicitly there.
    if (d >= 9223372036854775807.0 && sizeof(T) == 8) return static_cast<T>(0x7fffffffffffffffLL);
    return static_cast<T>(d);
  } else if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
    return Elem<T>::st(static_cast<float>(c));
  } else {
    return static_cast<T>(c);
  }
}

template <typename F, typename T>
__global__ void cast_kernel(const F* __restrict__ x, T* __restrict__ y, int64_t n) {
  const int64_t step = blockDim.x;
  for (int64_t base = int64_t(blockIdx.x) * step * kUnroll + threadIdx.x; base < n; base += int64_t(gridDim.x) * step * kUnroll) {
    F v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (base + u * step < n) v[u] = x[base + u * step];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (base + u * step < n) y[base + u * step] = cast_one<F, T>(v[u]);
  }
}

// Bool is stored as one byte; read it through uint8_t, write through bool.
template <typename F>
cudaError_t cast_from(KType to, const void* x, void* y, int64_t n, cudaStream_t s) {
  const F* px = static_cast<const F*>(x);
  const unsigned g = grid_for(n, kUnroll);
  switch (to) {
    case KType::kF32: cast_kernel<F, float><<<g, kThreads, 0, s>>>(px, static_cast<float*>(y), n); break;
    case KType::kF16: cast_kernel<F, __half><<<g, kThreads, 0, s>>>(px, static_cast<__half*>(y), n); break;
    case KType::kBF16: cast_kernel<F, __nv_bfloat16><<<g, kThreads, 0, s>>>(px, static_cast<__nv_bfloat16*>(y), n); break;
    case KType::kF64: cast_kernel<F, double><<<g, kThreads, 0, s>>>(px, static_cast<double*>(y), n); break;
    case KType::kI8: cast_kernel<F, int8_t><<<g, kThreads, 0, s>>>(px, static_cast<int8_t*>(y), n); break;
    case KType::kU8: cast_kernel<F, uint8_t><<<g, kThreads, 0, s>>>(px, static_cast<uint8_t*>(y), n); break;
    case KType::kI32: cast_kernel<F, int32_t><<<g, kThreads, 0, s>>>(px, static_cast<int32_t*>(y), n); break;
    case KType::kI64: cast_kernel<F, int64_t><<<g, kThreads, 0, s>>>(px, static_cast<int64_t*>(y), n); break;
    case KType::kBool: cast_kernel<F, bool><<<g, kThreads, 0, s>>>(px, static_cast<bool*>(y), n); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_unary(UnaryOp op, KType t, const void* x, void* y, int64_t n, float a, float b, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  if (op == UnaryOp::kNot) {
    if (t != KType::kBool) return cudaErrorInvalidValue;
    not_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<const uint8_t*>(x), static_cast<uint8_t*>(y), n);
    return cudaGetLastError();
  }
  switch (t) {
    case KType::kF32: return unary_float<float>(op, x, y, n, a, b, s);
    case KType::kF16: return unary_float<__half>(op, x, y, n, a, b, s);
    case KType::kBF16: return unary_float<__nv_bfloat16>(op, x, y, n, a, b, s);
    case KType::kI8: return unary_int<int8_t>(op, x, y, n, a, b, s);
    case KType::kI32: return unary_int<int32_t>(op, x, y, n, a, b, s);
    case KType::kI64: return unary_int<int64_t>(op, x, y, n, a, b, s);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t launch_binary(BinaryOp op, KType t, const void* a, const void* b, void* out, const Bcast& p, int64_t n,
                          cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  switch (t) {
    case KType::kF32: return binary_t<float>(op, a, b, out, p, n, s);
    case KType::kF16: return binary_t<__half>(op, a, b, out, p, n, s);
    case KType::kBF16: return binary_t<__nv_bfloat16>(op, a, b, out, p, n, s);
    case KType::kF64: return binary_t<double>(op, a, b, out, p, n, s);
    case KType::kI8: return binary_t<int8_t>(op, a, b, out, p, n, s);
    case KType::kU8: return binary_t<uint8_t>(op, a, b, out, p, n, s);
    case KType::kI16: return binary_t<int16_t>(op, a, b, out, p, n, s);
    case KType::kU16: return binary_t<uint16_t>(op, a, b, out, p, n, s);
    case KType::kI32: return binary_t<int32_t>(op, a, b, out, p, n, s);
    case KType::kU32: return binary_t<uint32_t>(op, a, b, out, p, n, s);
    case KType::kI64: return binary_t<int64_t>(op, a, b, out, p, n, s);
    case KType::kU64: return binary_t<uint64_t>(op, a, b, out, p, n, s);
    case KType::kBool:
      if (!binary_writes_bool(op)) return cudaErrorInvalidValue;
      return binary_t<uint8_t, true>(op, a, b, out, p, n, s);
    default: return cudaErrorInvalidValue;
  }
}

// ---- integer divisors of zero ----------------------------------------------------------------

namespace {

// An integer is zero exactly when all its bytes are: E is the unsigned word of its size.
template <typename E>
__global__ void report_zero_kernel(const E* __restrict__ d, int64_t n, DataFault f) {
  GRAFT_GRID_STRIDE(i, n) {
    if (d[i] == E(0)) {
      report_invalid_data(f);
      return;
    }
  }
}

}  // namespace

cudaError_t launch_report_zero_divisor(int elem_size, const void* d, int64_t n, const DataFault& f, cudaStream_t s) {
  if (n == 0 || !f.word) return cudaSuccess;
  GRAFT_SIZE_DISPATCH(elem_size, (report_zero_kernel<E><<<grid_for(n), kThreads, 0, s>>>(static_cast<const E*>(d), n, f)));
  return cudaGetLastError();
}

// ---- Pow of mixed types ---------------------------------------------------------------------

namespace {

// x^e for an integer base, as the CPU reference computes it (in double, then stored with graft's
// saturating conversion): a whole non-negative exponent by squaring, exact while the result stays
// below 2^53, where the device's pow may miss an integer result by an ulp and truncate to the one
// below it.
__device__ __forceinline__ double integer_base_pow(double x, double e) {
  if (e >= 0.0 && e <= 64.0 && e == floor(e)) {
    double r = 1.0, b = x;
    for (unsigned n = static_cast<unsigned>(e); n; n >>= 1) {
      if (n & 1u) r *= b;
      b *= b;
    }
    return r;
  }
  return pow(x, e);
}

// out = a^b with the base's type T and the exponent's U (opset 12+): a float base in float (double
// for float64), as the CPU reference does; an integer base through integer_base_pow.
template <typename T, typename U>
__global__ void pow_mixed_kernel(const T* __restrict__ a, const U* __restrict__ b, T* __restrict__ out, Bcast p,
                                 int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    const T x = a[bcast_offset(p, 0, i)];
    const double e = as_double(b[bcast_offset(p, 1, i)]);
    if constexpr (std::is_same_v<T, double>) out[i] = pow(x, e);
    else if constexpr (kIsFloat<T>) out[i] = Elem<T>::st(powf(Elem<T>::ld(x), static_cast<float>(e)));
    else out[i] = store_from_double<T>(integer_base_pow(static_cast<double>(x), e));
  }
}

template <typename T>
cudaError_t pow_mixed_for_base(KType tb, const void* a, const void* b, void* out, const Bcast& p, int64_t n,
                               cudaStream_t s) {
  const unsigned g = grid_for(n);
  const T* pa = static_cast<const T*>(a);
  T* po = static_cast<T*>(out);
  switch (tb) {
#define GRAFT_POW_EXPONENT(KT, U)                                                          \
  case KType::KT:                                                                          \
    pow_mixed_kernel<T, U><<<g, kThreads, 0, s>>>(pa, static_cast<const U*>(b), po, p, n); \
    break;
    GRAFT_POW_EXPONENT(kF32, float)
    GRAFT_POW_EXPONENT(kF16, __half)
    GRAFT_POW_EXPONENT(kBF16, __nv_bfloat16)
    GRAFT_POW_EXPONENT(kF64, double)
    GRAFT_POW_EXPONENT(kI32, int32_t)
    GRAFT_POW_EXPONENT(kI64, int64_t)
    GRAFT_POW_EXPONENT(kU32, uint32_t)
    GRAFT_POW_EXPONENT(kU64, uint64_t)
#undef GRAFT_POW_EXPONENT
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_pow_mixed(KType ta, KType tb, const void* a, const void* b, void* out, const Bcast& p, int64_t n,
                             cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  switch (ta) {
    case KType::kF32: return pow_mixed_for_base<float>(tb, a, b, out, p, n, s);
    case KType::kF16: return pow_mixed_for_base<__half>(tb, a, b, out, p, n, s);
    case KType::kBF16: return pow_mixed_for_base<__nv_bfloat16>(tb, a, b, out, p, n, s);
    case KType::kF64: return pow_mixed_for_base<double>(tb, a, b, out, p, n, s);
    case KType::kI32: return pow_mixed_for_base<int32_t>(tb, a, b, out, p, n, s);
    case KType::kI64: return pow_mixed_for_base<int64_t>(tb, a, b, out, p, n, s);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t launch_where(const void* cond, const void* x, const void* y, void* out, int elem_size, const Bcast& p,
                         int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  switch (elem_size) {
    case 1: where_t<uint8_t>(cond, x, y, out, p, n, s); break;
    case 2: where_t<uint16_t>(cond, x, y, out, p, n, s); break;
    case 4: where_t<uint32_t>(cond, x, y, out, p, n, s); break;
    case 8: where_t<uint64_t>(cond, x, y, out, p, n, s); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

namespace {

template <typename T>
__global__ void add_periodic_bias_kernel(T* __restrict__ y, const T* __restrict__ bias, int64_t period, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) { y[i] = Elem<T>::st(Elem<T>::ld(y[i]) + Elem<T>::ld(bias[i % period])); }
}

}  // namespace

cudaError_t launch_add_periodic_bias(KType t, void* y, const void* bias, int64_t period, int64_t n, cudaStream_t s) {
  if (period < 1 || n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  GRAFT_FLOAT_DISPATCH(t, (add_periodic_bias_kernel<T><<<grid_for(n), kThreads, 0, s>>>(
                              static_cast<T*>(y), static_cast<const T*>(bias), period, n)));
  return cudaGetLastError();
}

// A broadcast copy is a strided gather whose broadcast axes have stride 0: the shape launcher
// coalesces axes, copies contiguous rows 16 bytes at a time and uses 32-bit index math.
cudaError_t launch_broadcast_copy(const void* src, void* out, int elem_size, const Bcast& p, int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  Strided g;
  g.rank = p.rank;
  for (int d = 0; d < p.rank; ++d) {
    g.dims[d] = p.dims[d];
    g.strides[d] = p.strides[0][d];
  }
  return launch_strided_gather(src, out, elem_size, g, n, s);
}

namespace {

// ONNX's Cast to int4/uint4: the value clamped into [lo, hi] and rounded half to even (rint's
// default mode), NaN to 0; Out is the one-a-byte storage (int8_t for int4, uint8_t for uint4).
template <typename F, typename Out>
__global__ void cast_to_4bit_kernel(const F* __restrict__ x, Out* __restrict__ y, int64_t n, double lo, double hi) {
  GRAFT_GRID_STRIDE(i, n) {
    const double v = as_double(x[i]);
    y[i] = static_cast<Out>(v != v ? 0.0 : rint(fmin(fmax(v, lo), hi)));
  }
}

template <typename Out>
cudaError_t cast_to_4bit_as(KType from, const void* x, Out* y, int64_t n, double lo, double hi, cudaStream_t s) {
  GRAFT_EVERY_NUMERIC_DISPATCH(from, (cast_to_4bit_kernel<T, Out><<<grid_for(n), kThreads, 0, s>>>(
                                         static_cast<const T*>(x), y, n, lo, hi)));
  return cudaGetLastError();
}

// To and from ONNX's 8-bit floats, through double, with the host's conversions (src/core/float8.h).
template <typename F>
__global__ void cast_to_float8_kernel(const F* __restrict__ x, uint8_t* __restrict__ y, int64_t n, int format,
                                      bool saturate) {
  GRAFT_GRID_STRIDE(i, n) { y[i] = float8::from_double(static_cast<float8::Format>(format), as_double(x[i]), saturate); }
}

__global__ void float8_to_float_kernel(const uint8_t* __restrict__ x, float* __restrict__ y, int64_t n, int format) {
  GRAFT_GRID_STRIDE(i, n) { y[i] = static_cast<float>(float8::to_double(static_cast<float8::Format>(format), x[i])); }
}

}  // namespace

cudaError_t launch_cast_to_float8(KType from, int format, bool saturate, const void* x, void* y, int64_t n,
                                  cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  if (from == KType::kBool) from = KType::kU8;  // one byte, 0 or 1
  GRAFT_EVERY_NUMERIC_DISPATCH(from, (cast_to_float8_kernel<T><<<grid_for(n), kThreads, 0, s>>>(
                                         static_cast<const T*>(x), static_cast<uint8_t*>(y), n, format, saturate)));
  return cudaGetLastError();
}

cudaError_t launch_float8_to_float(int format, const void* x, void* y, int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  float8_to_float_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<const uint8_t*>(x), static_cast<float*>(y), n,
                                                          format);
  return cudaGetLastError();
}

cudaError_t launch_cast_to_4bit(KType from, bool is_signed, int lo, int hi, const void* x, void* y, int64_t n,
                                cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  if (from == KType::kBool) from = KType::kU8;  // one byte, 0 or 1
  return is_signed ? cast_to_4bit_as(from, x, static_cast<int8_t*>(y), n, lo, hi, s)
                   : cast_to_4bit_as(from, x, static_cast<uint8_t*>(y), n, lo, hi, s);
}

cudaError_t launch_cast(KType from, KType to, const void* x, void* y, int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  switch (from) {
    case KType::kF32: return cast_from<float>(to, x, y, n, s);
    case KType::kF16: return cast_from<__half>(to, x, y, n, s);
    case KType::kBF16: return cast_from<__nv_bfloat16>(to, x, y, n, s);
    case KType::kF64: return cast_from<double>(to, x, y, n, s);
    case KType::kI8: return cast_from<int8_t>(to, x, y, n, s);
    case KType::kU8: return cast_from<uint8_t>(to, x, y, n, s);
    case KType::kI32: return cast_from<int32_t>(to, x, y, n, s);
    case KType::kI64: return cast_from<int64_t>(to, x, y, n, s);
    case KType::kBool: return cast_from<bool>(to, x, y, n, s);
    default: return cudaErrorInvalidValue;
  }
}

namespace {

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

__global__ void celu_kernel(const float* x, float* y, int64_t n, float alpha) {
  GRAFT_GRID_STRIDE(i, n) {
    const float v = x[i];
    // expm1f as the CPU reference uses std::expm1: no cancellation for small negative inputs.
    y[i] = v > 0.0f ? v : alpha * expm1f(v / alpha);
  }
}

}  // namespace

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

cudaError_t launch_celu(const float* x, float* y, int64_t n, float alpha, cudaStream_t s) {
  if (!(alpha != 0.0f)) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  celu_kernel<<<grid_for(n), kThreads, 0, s>>>(x, y, n, alpha);
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA ops -------------------------------------------------------------------------------------

namespace {

using k::BinaryOp;
using k::UnaryOp;
using namespace util;

constexpr std::initializer_list<DataType> kBoolDtype = {DataType::kBool};
// The key of the unary ops with integer kernels too (unary_int: Relu, Neg, Abs, Sign, Shrink).
constexpr std::initializer_list<DataType> kUnaryIntDtypes = {
    DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kInt8, DataType::kInt32, DataType::kInt64};
// The key of the arithmetic (Add, Sub, Mul, Max, Min, Mod, PRelu) and comparison ops: every float
// type the device keeps and every integer type, as the CPU reference takes them.
constexpr std::initializer_list<DataType> kBinaryDtypes = {
    DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64, DataType::kInt8,
    DataType::kUInt8,   DataType::kInt16,   DataType::kUInt16,   DataType::kInt32,   DataType::kUInt32,
    DataType::kInt64,   DataType::kUInt64};
// Equal's key: the comparisons' types and bool.
constexpr std::initializer_list<DataType> kEqualDtypes = {
    DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64, DataType::kInt8,
    DataType::kUInt8,   DataType::kInt16,   DataType::kUInt16,   DataType::kInt32,   DataType::kUInt32,
    DataType::kInt64,   DataType::kUInt64,  DataType::kBool};

constexpr bool is_float_unary(UnaryOp op) {
  return op != UnaryOp::kRelu && op != UnaryOp::kNeg && op != UnaryOp::kAbs && op != UnaryOp::kNot &&
         op != UnaryOp::kSign && op != UnaryOp::kShrink;
}

// Clip's key: the float types and int8, whose bounds the kernel's float arguments hold exactly.
constexpr std::initializer_list<DataType> kClipDtypes = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16,
                                                         DataType::kInt8};

// A unary op's key (input 0): Not takes bool; Clip kClipDtypes; Relu, Neg, Abs, Sign and Shrink also
// int8/int32/int64; the others the float types.
constexpr std::initializer_list<DataType> unary_key_dtypes(UnaryOp op) {
  return op == UnaryOp::kNot    ? kBoolDtype
         : op == UnaryOp::kClip ? kClipDtypes
         : is_float_unary(op)   ? kGpuFloats
                                : kUnaryIntDtypes;
}

template <UnaryOp kOp>
bool unary_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input 0 is missing");
  if constexpr (kOp == UnaryOp::kGeluErf) {
    auto a = n.attrs.get_string("approximate", "none");
    if (!a || (a.value() != "none" && a.value() != "tanh"))
      return reject(why, "attribute 'approximate' must be \"none\" or \"tanh\"");
  }
  if constexpr (kOp == UnaryOp::kClip) {
    for (size_t i = 1; i < 3; ++i)
      if (has_input(n, i) && in_dtype(n, i) != in_dtype(n, 0))
        return reject(why, "Clip min/max dtype differs from the input dtype");
  }
  return true;
}

template <UnaryOp kOp>
Status unary_run(CudaExec& ex) {
  ExecContext& ctx = *ex.ctx;
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  if (x.numel() != y.numel() || x.dtype() != y.dtype())
    return fail(ex, StatusCode::kInternal, "output ", dtype_name(y.dtype()), " does not match input ", dtype_name(x.dtype()));
  const AttributeMap& attrs = attrs_of(ex);
  UnaryOp op = kOp;
  float a = 0.f, b = 0.f;
  switch (kOp) {
    case UnaryOp::kLeakyRelu: { GRAFT_ASSIGN_OR_RETURN(a, attrs.get_float("alpha", 0.01f)); break; }
    case UnaryOp::kElu: { GRAFT_ASSIGN_OR_RETURN(a, attrs.get_float("alpha", 1.0f)); break; }
    case UnaryOp::kThresholdedRelu: { GRAFT_ASSIGN_OR_RETURN(a, attrs.get_float("alpha", 1.0f)); break; }
    case UnaryOp::kSelu: {
      GRAFT_ASSIGN_OR_RETURN(a, attrs.get_float("alpha", 1.67326319217681884765625f));
      GRAFT_ASSIGN_OR_RETURN(b, attrs.get_float("gamma", 1.05070102214813232421875f));
      break;
    }
    case UnaryOp::kShrink: {
      GRAFT_ASSIGN_OR_RETURN(a, attrs.get_float("lambd", 0.5f));
      GRAFT_ASSIGN_OR_RETURN(b, attrs.get_float("bias", 0.0f));
      break;
    }
    case UnaryOp::kHardSigmoid: {
      GRAFT_ASSIGN_OR_RETURN(a, attrs.get_float("alpha", 0.2f));
      GRAFT_ASSIGN_OR_RETURN(b, attrs.get_float("beta", 0.5f));
      break;
    }
    case UnaryOp::kGeluErf: {
      GRAFT_ASSIGN_OR_RETURN(std::string approx, attrs.get_string("approximate", "none"));
      if (approx == "tanh") op = UnaryOp::kGeluTanh;
      else if (approx != "none") return fail(ex, StatusCode::kInvalidModel, "attribute 'approximate' is \"", approx, "\"");
      break;
    }
    case UnaryOp::kClip: {
      // Bounds are host inputs (opset 11+) or attributes (before); absent means unbounded.
      const Tensor* lo = ctx.inputs.size() > 1 ? ctx.inputs[1] : nullptr;
      const Tensor* hi = ctx.inputs.size() > 2 ? ctx.inputs[2] : nullptr;
      for (const Tensor* t : {lo, hi})
        if (t && (t->numel() != 1 || t->device() != DeviceType::kCPU))
          return fail(ex, StatusCode::kInvalidModel, "Clip min/max must be host scalars");
      if (lo) a = static_cast<float>(lo->get(0));
      else { GRAFT_ASSIGN_OR_RETURN(a, attrs.get_float("min", -INFINITY)); }
      if (hi) b = static_cast<float>(hi->get(0));
      else { GRAFT_ASSIGN_OR_RETURN(b, attrs.get_float("max", INFINITY)); }
      break;
    }
    default: break;
  }
  return launch_status(k::launch_unary(op, ktype(x.dtype()), x.data(), y.data(), x.numel(), a, b, stream_of(ex)), ex);
}

// A binary op's key (input 0; the other inputs must have its dtype): And, Or and Xor bool; Equal also
// bool; the others, Div and Mod included (Mod's fmod=0 takes the integer types only: supports
// checks), every float and integer type. (Pow has a row of its own, pow_op.)
constexpr std::initializer_list<DataType> binary_key_dtypes(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAnd:
    case BinaryOp::kOr:
    case BinaryOp::kXor: return kBoolDtype;
    case BinaryOp::kEqual: return kEqualDtypes;
    default: return kBinaryDtypes;
  }
}

template <BinaryOp kOp>
bool binary_supports(const Node& n, std::string* why) {
  if (n.inputs.size() < 2 && kOp != BinaryOp::kMax && kOp != BinaryOp::kMin) return reject(why, "needs two inputs");
  if (!input0_given(n, why)) return false;  // variadic Max/Min with no input
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (!has_input(n, i)) return reject(why, "input " + std::to_string(i) + " is missing");
    if (in_dtype(n, i) != in_dtype(n, 0)) return reject(why, "inputs of different dtypes");
  }
  if constexpr (kOp == BinaryOp::kMod) {
    // fmod=0 (the default) on floats is an error in the CPU reference; integer fmod=0 is Python's %.
    auto fmod = n.attrs.get_int("fmod", 0);
    if (!fmod) return reject(why, "attribute 'fmod' is not an int");
    if (fmod.value() != 0 && fmod.value() != 1) return reject(why, "attribute 'fmod' must be 0 or 1");
    if (fmod.value() == 0)
      return require_dtype(n, 0, kGpuIntegers, why) ||
             reject(why, "Mod with fmod=0 needs integer inputs (floating inputs need fmod=1), got " +
                             std::string(dtype_name(in_dtype(n, 0))));
  }
  return true;
}

Status binary_once(CudaExec& ex, BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  k::Bcast p;
  std::string why;
  if (!make_bcast(out.dims(), {a.dims(), b.dims()}, &p, &why)) return fail(ex, StatusCode::kRuntimeError, why);
  // An integer divisor of zero fails the run, as on the CPU (CudaOp::invalid_data).
  const bool divides = op == BinaryOp::kDiv || op == BinaryOp::kMod || op == BinaryOp::kFmod;
  if (divides && dtype_is_integer(b.dtype()) && out.numel() > 0)
    GRAFT_RETURN_IF_ERROR(launch_status(k::launch_report_zero_divisor(static_cast<int>(dtype_size(b.dtype())), b.data(),
                                                                      b.numel(), ex.fault, stream_of(ex)),
                                        ex, "checking the divisor for zeros"));
  return launch_status(k::launch_binary(op, ktype(a.dtype()), a.data(), b.data(), out.data(), p, out.numel(), stream_of(ex)), ex);
}

template <BinaryOp kOp>
Status binary_run(CudaExec& ex) {
  ExecContext& ctx = *ex.ctx;
  Tensor& out = *ctx.outputs[0];
  const DataType want = k::binary_writes_bool(kOp) ? DataType::kBool : ctx.inputs[0]->dtype();
  if (out.dtype() != want) return fail(ex, StatusCode::kInternal, "output dtype ", dtype_name(out.dtype()));
  if constexpr (kOp == BinaryOp::kMod) {
    GRAFT_ASSIGN_OR_RETURN(int64_t fmod, attrs_of(ex).get_int("fmod", 0));
    if (ctx.inputs.size() != 2) return fail(ex, StatusCode::kInvalidModel, "Mod needs two inputs");
    return binary_once(ex, fmod ? BinaryOp::kFmod : BinaryOp::kMod, *ctx.inputs[0], *ctx.inputs[1], out);
  }
  if (ctx.inputs.size() == 1) {  // variadic Max/Min of one input: a broadcast copy
    k::Bcast p;
    std::string why;
    if (!make_bcast(out.dims(), {ctx.inputs[0]->dims()}, &p, &why)) return fail(ex, StatusCode::kRuntimeError, why);
    return launch_status(k::launch_broadcast_copy(ctx.inputs[0]->data(), out.data(), static_cast<int>(dtype_size(out.dtype())),
                                                  p, out.numel(), stream_of(ex)), ex);
  }
  GRAFT_RETURN_IF_ERROR(binary_once(ex, kOp, *ctx.inputs[0], *ctx.inputs[1], out));
  // Variadic Max/Min fold the rest into the output (same index read and written per element).
  for (size_t i = 2; i < ctx.inputs.size(); ++i) GRAFT_RETURN_IF_ERROR(binary_once(ex, kOp, out, *ctx.inputs[i], out));
  return Status::ok();
}

// Where's keys: the condition bool, X any dtype the device keeps (the kernel moves elements of 1, 2,
// 4 or 8 bytes). Y must have X's dtype.
bool where_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1) || !has_input(n, 2)) return reject(why, "Where needs three inputs");
  if (in_dtype(n, 1) != in_dtype(n, 2)) return reject(why, "X and Y dtypes differ");
  return true;
}

Status where_run(CudaExec& ex) {
  ExecContext& ctx = *ex.ctx;
  const Tensor &c = *ctx.inputs[0], &x = *ctx.inputs[1], &y = *ctx.inputs[2];
  Tensor& out = *ctx.outputs[0];
  if (out.dtype() != x.dtype()) return fail(ex, StatusCode::kInternal, "output dtype differs from X");
  k::Bcast p;
  std::string why;
  if (!make_bcast(out.dims(), {c.dims(), x.dims(), y.dims()}, &p, &why)) return fail(ex, StatusCode::kRuntimeError, why);
  return launch_status(k::launch_where(c.data(), x.data(), y.data(), out.data(), static_cast<int>(dtype_size(x.dtype())), p,
                                       out.numel(), stream_of(ex)), ex);
}

Status copy_bytes(CudaExec& ex, const Tensor& x, Tensor& y) {
  if (x.nbytes() != y.nbytes()) return fail(ex, StatusCode::kInternal, "output size differs from input size");
  if (x.nbytes() == 0 || x.data() == y.data()) return Status::ok();
  return launch_status(cudaMemcpyAsync(y.data(), x.data(), x.nbytes(), cudaMemcpyDeviceToDevice, stream_of(ex)), ex,
                       "cudaMemcpyAsync");
}

// Cast's scratch: an 8-bit float input going anywhere but float32 is first decoded into float32 there.
size_t cast_workspace(const Node& node, const std::vector<const Tensor*>& inputs, const std::vector<Tensor>&) {
  const Tensor* x = inputs.empty() ? nullptr : inputs[0];
  if (!x || !dtype_is_float8(x->dtype()) || out_dtype(node, 0) == DataType::kFloat32) return 0;
  return static_cast<size_t>(x->numel()) * sizeof(float);
}

// Cast x (not an 8-bit float) into y.
Status cast_into(CudaExec& ex, const Tensor& x, Tensor& y) {
  // int4/uint4 hold their values one a byte, as int8/uint8 do: read as those.
  const k::KType from = ktype(dtype_storage(x.dtype()));
  if (dtype_is_float8(y.dtype())) {
    GRAFT_ASSIGN_OR_RETURN(int64_t saturate, attrs_of(ex).get_int("saturate", 1));
    return launch_status(k::launch_cast_to_float8(from, static_cast<int>(y.dtype()), saturate != 0, x.data(), y.data(),
                                                  x.numel(), stream_of(ex)), ex);
  }
  if (dtype_is_4bit(y.dtype()))
    return launch_status(k::launch_cast_to_4bit(from, y.dtype() == DataType::kInt4, four_bit_min(y.dtype()),
                                                four_bit_max(y.dtype()), x.data(), y.data(), x.numel(),
                                                stream_of(ex)), ex);
  return launch_status(k::launch_cast(from, ktype(y.dtype()), x.data(), y.data(), x.numel(), stream_of(ex)), ex);
}

Status cast_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  if (x.numel() != y.numel()) return fail(ex, StatusCode::kInternal, "output size differs from input size");
  if (x.dtype() == y.dtype()) return copy_bytes(ex, x, y);
  if (dtype_is_float8(x.dtype())) {
    // Every 8-bit float is exact in float32: decode into y when y is float32, else into the float32
    // scratch of cast_workspace, from which the float32 Cast goes on (as the CPU reference does).
    if (y.dtype() == DataType::kFloat32)
      return launch_status(k::launch_float8_to_float(static_cast<int>(x.dtype()), x.data(), y.data(), x.numel(),
                                                     stream_of(ex)), ex);
    if (ex.workspace_size < static_cast<size_t>(x.numel()) * sizeof(float))
      return fail(ex, StatusCode::kInternal, "Cast from ", dtype_name(x.dtype()), " without its float32 workspace");
    GRAFT_RETURN_IF_ERROR(launch_status(
        k::launch_float8_to_float(static_cast<int>(x.dtype()), x.data(), ex.workspace, x.numel(), stream_of(ex)), ex));
    return cast_into(ex, Tensor::wrap(ex.workspace, DataType::kFloat32, x.dims(), DeviceType::kCUDA), y);
  }
  return cast_into(ex, x, y);
}

// A tensor is copied; a sequence or optional (a makes_outputs node, CudaOp::passes_containers) is
// handed on as it is, as the sequence ops hand on theirs (ContainerDevice::set_output in
// control_flow_cuda.cpp): the container and this output share its device tensors.
Status identity_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  if (!x.is_tensor()) {
    if (ex.ctx->outputs[0]) *ex.ctx->outputs[0] = x;
    return Status::ok();
  }
  return copy_bytes(ex, x, *ex.ctx->outputs[0]);
}

template <UnaryOp kOp>
CudaOp unary(const char* name) {
  return kernel_dtypes({input_dtypes(0, unary_key_dtypes(kOp))},
                       CudaOp{name, &unary_supports<kOp>, &unary_run<kOp>, {}, nullptr});
}
template <BinaryOp kOp>
CudaOp binary(const char* name) {
  CudaOp op = kernel_dtypes({input_dtypes(0, binary_key_dtypes(kOp))},
                            CudaOp{name, &binary_supports<kOp>, &binary_run<kOp>, {}, nullptr});
  if (kOp == BinaryOp::kDiv || kOp == BinaryOp::kMod) op.invalid_data = "an integer divisor is zero";
  return op;
}

// ---- Pow ----------------------------------------------------------------------------------------

// Pow's keys: the base (input 0) float or int32/int64, the exponent (input 1) any of those types or
// uint32/uint64 (opset 12+ lets them differ; the result has the base's type). Same-type float
// operands take the binary kernels (vectorized); everything else the mixed kernel.
constexpr std::initializer_list<DataType> kPowExponentDtypes = {
    DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64,
    DataType::kInt32,   DataType::kInt64,   DataType::kUInt32,   DataType::kUInt64};

bool pow_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "Pow needs X and Y");
  if (out_dtype(n, 0) != in_dtype(n, 0)) return reject(why, "the output's dtype differs from the base's");
  return true;
}

Status pow_run(CudaExec& ex) {
  ExecContext& ctx = *ex.ctx;
  const Tensor &a = *ctx.inputs[0], &b = *ctx.inputs[1];
  Tensor& out = *ctx.outputs[0];
  if (out.dtype() != a.dtype()) return fail(ex, StatusCode::kInternal, "output dtype ", dtype_name(out.dtype()));
  const bool same_float = a.dtype() == b.dtype() && (a.dtype() == DataType::kFloat32 || a.dtype() == DataType::kFloat16 ||
                                                     a.dtype() == DataType::kBFloat16);
  if (same_float) return binary_once(ex, BinaryOp::kPow, a, b, out);
  k::Bcast p;
  std::string why;
  if (!make_bcast(out.dims(), {a.dims(), b.dims()}, &p, &why)) return fail(ex, StatusCode::kRuntimeError, why);
  return launch_status(k::launch_pow_mixed(ktype(a.dtype()), ktype(b.dtype()), a.data(), b.data(), out.data(), p,
                                           out.numel(), stream_of(ex)),
                       ex);
}

CudaOp pow_op() {
  return kernel_dtypes({input_dtypes(0, kGpuFloats64Ints), input_dtypes(1, kPowExponentDtypes)},
                       CudaOp{"Pow", &pow_supports, &pow_run, {}, nullptr});
}

// ---- Sum / Mean -------------------------------------------------------------------------------

// Every input given, of input 0's dtype (the keys: Sum the float types and int32/int64, Mean the float types).
bool variadic_supports(const Node& n, std::string* why) {
  if (n.inputs.empty()) return reject(why, "needs at least one input");
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (!has_input(n, i)) return reject(why, "input " + std::to_string(i) + " is missing");
    if (in_dtype(n, i) != in_dtype(n, 0)) return reject(why, "inputs have different dtypes");
  }
  return true;
}

// merge_broadcast (cuda_op_util.h) for the variadic kernels' operand count.
bool make_var_bcast(const std::vector<int64_t>& out, const std::vector<const std::vector<int64_t>*>& ins,
                    k::VarBcast* p, std::string* why) {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> ks;
  if (!merge_broadcast(out, ins, &dims, &ks, why)) return false;
  *p = k::VarBcast{};
  p->rank = static_cast<int>(dims.size());
  p->count = static_cast<int>(ins.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    p->dims[d] = dims[d];
    for (size_t k = 0; k < ins.size(); ++k) p->strides[k][d] = ks[k][d];
  }
  return true;
}

// Up to kMaxVariadic operands per launch; later launches take the output itself as operand 0.
// Mean scales once, in the last launch.
template <bool kMean>
Status variadic_run(CudaExec& ex) {
  const auto& in = ex.ctx->inputs;
  Tensor& y = *ex.ctx->outputs[0];
  if (in.empty()) return fail(ex, StatusCode::kInvalidModel, "needs at least one input");
  for (const Tensor* t : in)
    if (!t || t->dtype() != y.dtype()) return fail(ex, StatusCode::kInternal, "an input is missing or has another dtype");
  const size_t total = in.size();
  size_t next = 0;
  bool first = true;
  while (next < total) {
    std::vector<const std::vector<int64_t>*> dims;
    std::vector<const void*> ptrs;
    if (!first) {
      dims.push_back(&y.dims());
      ptrs.push_back(y.data());
    }
    while (next < total && dims.size() < static_cast<size_t>(k::kMaxVariadic)) {
      dims.push_back(&in[next]->dims());
      ptrs.push_back(in[next]->data());
      ++next;
    }
    k::VarBcast p;
    std::string why;
    if (!make_var_bcast(y.dims(), dims, &p, &why)) return fail(ex, StatusCode::kRuntimeError, why);
    for (size_t k = 0; k < ptrs.size(); ++k) p.in[k] = ptrs[k];
    const float scale = kMean && next == total ? 1.0f / static_cast<float>(total) : 1.0f;
    GRAFT_RETURN_IF_ERROR(launch_status(k::launch_variadic_sum(ktype(y.dtype()), p, y.data(), y.numel(), scale,
                                                               stream_of(ex)), ex));
    first = false;
  }
  return Status::ok();
}

// ---- IsNaN / IsInf ----------------------------------------------------------------------------

template <bool kInf>
Status float_class_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  if (y.dtype() != DataType::kBool || y.numel() != x.numel())
    return fail(ex, StatusCode::kInternal, "output must be bool with the input's size");
  int64_t neg = 1, pos = 1;
  if (kInf) {
    GRAFT_ASSIGN_OR_RETURN(neg, attrs_of(ex).get_int("detect_negative", 1));
    GRAFT_ASSIGN_OR_RETURN(pos, attrs_of(ex).get_int("detect_positive", 1));
  }
  return launch_status(k::launch_float_class(ktype(x.dtype()), kInf, neg != 0, pos != 0, x.data(), y.data(), x.numel(),
                                             stream_of(ex)), ex);
}

// ---- Celu ---------------------------------------------------------------------------------------

Status celu_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  if (!x) return fail(ex, StatusCode::kInvalidModel, "needs X");
  Tensor& y = *ex.ctx->outputs[0];
  auto alpha = graft::celu_alpha(attrs_of(ex));
  if (!alpha) return with_node(ex, alpha.status());
  if (x->dtype() != DataType::kFloat32 || y.dtype() != DataType::kFloat32 || y.numel() != x->numel())
    return fail(ex, StatusCode::kInvalidModel, "X and Y must be float32 of one size");
  return launch_status(k::launch_celu(static_cast<const float*>(x->data()), static_cast<float*>(y.data()),
                                      y.numel(), alpha.value(), stream_of(ex)),
                       ex);
}

}  // namespace

void append_cuda_elementwise_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloatsInts)},
                              CudaOp{"Sum", &variadic_supports, &variadic_run<false>, {}, nullptr}));
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats)},
                              CudaOp{"Mean", &variadic_supports, &variadic_run<true>, {}, nullptr}));
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats)},
                              CudaOp{"IsNaN", &input0_given, &float_class_run<false>, {}, nullptr}));
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats)},
                              CudaOp{"IsInf", &input0_given, &float_class_run<true>, {}, nullptr}));
  // float32 is Celu's one type in the specification (and in its schema).
  out.push_back(kernel_dtypes({input_dtypes(0, {DataType::kFloat32})},
                              CudaOp{"Celu", &input0_given, &celu_run, {}, nullptr}));
  out.push_back(unary<UnaryOp::kRelu>("Relu"));
  out.push_back(unary<UnaryOp::kLeakyRelu>("LeakyRelu"));
  out.push_back(unary<UnaryOp::kSigmoid>("Sigmoid"));
  out.push_back(unary<UnaryOp::kTanh>("Tanh"));
  out.push_back(unary<UnaryOp::kErf>("Erf"));
  out.push_back(unary<UnaryOp::kGeluErf>("Gelu"));  // approximate="tanh" picks kGeluTanh at run
  out.push_back(unary<UnaryOp::kHardSigmoid>("HardSigmoid"));
  out.push_back(unary<UnaryOp::kHardSwish>("HardSwish"));
  out.push_back(kernel_dtypes({input_dtypes(0, unary_key_dtypes(UnaryOp::kClip))},
                              CudaOp{"Clip", &unary_supports<UnaryOp::kClip>, &unary_run<UnaryOp::kClip>, {1, 2},
                                     nullptr}));
  out.push_back(unary<UnaryOp::kExp>("Exp"));
  out.push_back(unary<UnaryOp::kLog>("Log"));
  out.push_back(unary<UnaryOp::kSqrt>("Sqrt"));
  out.push_back(unary<UnaryOp::kReciprocal>("Reciprocal"));
  out.push_back(unary<UnaryOp::kNeg>("Neg"));
  out.push_back(unary<UnaryOp::kAbs>("Abs"));
  out.push_back(unary<UnaryOp::kFloor>("Floor"));
  out.push_back(unary<UnaryOp::kCeil>("Ceil"));
  out.push_back(unary<UnaryOp::kSin>("Sin"));
  out.push_back(unary<UnaryOp::kCos>("Cos"));
  out.push_back(unary<UnaryOp::kSoftplus>("Softplus"));
  out.push_back(unary<UnaryOp::kElu>("Elu"));
  out.push_back(unary<UnaryOp::kNot>("Not"));
  out.push_back(unary<UnaryOp::kTan>("Tan"));
  out.push_back(unary<UnaryOp::kAsin>("Asin"));
  out.push_back(unary<UnaryOp::kAcos>("Acos"));
  out.push_back(unary<UnaryOp::kAtan>("Atan"));
  out.push_back(unary<UnaryOp::kSinh>("Sinh"));
  out.push_back(unary<UnaryOp::kCosh>("Cosh"));
  out.push_back(unary<UnaryOp::kAsinh>("Asinh"));
  out.push_back(unary<UnaryOp::kAcosh>("Acosh"));
  out.push_back(unary<UnaryOp::kAtanh>("Atanh"));
  out.push_back(unary<UnaryOp::kRound>("Round"));
  out.push_back(unary<UnaryOp::kSoftsign>("Softsign"));
  out.push_back(unary<UnaryOp::kSign>("Sign"));
  out.push_back(unary<UnaryOp::kSelu>("Selu"));
  out.push_back(unary<UnaryOp::kShrink>("Shrink"));
  out.push_back(unary<UnaryOp::kThresholdedRelu>("ThresholdedRelu"));
  out.push_back(unary<UnaryOp::kMish>("Mish"));
  out.push_back(binary<BinaryOp::kAdd>("Add"));
  out.push_back(binary<BinaryOp::kSub>("Sub"));
  out.push_back(binary<BinaryOp::kMul>("Mul"));
  out.push_back(binary<BinaryOp::kDiv>("Div"));
  out.push_back(pow_op());
  out.push_back(binary<BinaryOp::kMax>("Max"));
  out.push_back(binary<BinaryOp::kMin>("Min"));
  out.push_back(binary<BinaryOp::kPRelu>("PRelu"));
  out.push_back(binary<BinaryOp::kEqual>("Equal"));
  out.push_back(binary<BinaryOp::kLess>("Less"));
  out.push_back(binary<BinaryOp::kGreater>("Greater"));
  out.push_back(binary<BinaryOp::kLessEq>("LessOrEqual"));
  out.push_back(binary<BinaryOp::kGreaterEq>("GreaterOrEqual"));
  out.push_back(binary<BinaryOp::kAnd>("And"));
  out.push_back(binary<BinaryOp::kOr>("Or"));
  out.push_back(binary<BinaryOp::kXor>("Xor"));
  out.push_back(binary<BinaryOp::kMod>("Mod"));
  out.push_back(kernel_dtypes({input_dtypes(0, kBoolDtype), input_dtypes(1, kGpuEveryDtype)},
                              CudaOp{"Where", &where_supports, &where_run, {}, nullptr}));
  // Cast and CastLike convert between every device dtype (launch_cast's switches; the 4-bit types
  // through their 8-bit storage and launch_cast_to_4bit, the 8-bit floats through float32).
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuEveryDtype), output_dtypes(0, kGpuEveryDtype)},
                              CudaOp{"Cast", &input0_given, &cast_run, {}, &cast_workspace}));
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuEveryDtype), output_dtypes(0, kGpuEveryDtype)},
                              CudaOp{"CastLike", &input0_given, &cast_run, {}, &cast_workspace}));
  CudaOp identity = kernel_dtypes({input_dtypes(0, kGpuEveryDtype)},
                                  CudaOp{"Identity", &input0_given, &identity_run, {}, nullptr});
  identity.passes_containers = true;
  out.push_back(identity);
}

}  // namespace graft::cuda
