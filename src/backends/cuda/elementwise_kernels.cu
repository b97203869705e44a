#include "backends/cuda/elementwise_kernels.cuh"

#include <cmath>
#include <type_traits>

#include "backends/cuda/cuda_kernel_device.cuh"

namespace graft::cuda::k {
namespace {

// ---- unary ----------------------------------------------------------------------------------

__device__ __forceinline__ float unary_f(UnaryOp op, float x, float a, float b) {
  switch (op) {
    case UnaryOp::kRelu: return x < 0.f ? 0.f : x;
    case UnaryOp::kLeakyRelu: return x < 0.f ? a * x : x;
    case UnaryOp::kSigmoid: {
      if (x >= 0.f) return 1.f / (1.f + expf(-x));
      float e = expf(x);
      return e / (1.f + e);
    }
    case UnaryOp::kTanh: return tanhf(x);
    case UnaryOp::kErf: return erff(x);
    case UnaryOp::kGeluErf: return 0.5f * x * (1.f + erff(x * 0.70710678118654752440f));
    case UnaryOp::kGeluTanh: return 0.5f * x * (1.f + tanhf(0.79788456080286535588f * (x + 0.044715f * x * x * x)));
    case UnaryOp::kHardSigmoid: return fmaxf(0.f, fminf(1.f, a * x + b));
    case UnaryOp::kHardSwish: return x * fmaxf(0.f, fminf(1.f, x / 6.f + 0.5f));
    case UnaryOp::kClip: return x < a ? a : (x > b ? b : x);
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
__global__ void unary_int_kernel(UnaryOp op, const T* __restrict__ x, T* __restrict__ y, int64_t n) {
  using U = std::make_unsigned_t<T>;
  GRAFT_GRID_STRIDE(i, n) {
    T v = x[i];
    T neg = static_cast<T>(U(0) - static_cast<U>(v));  // wraps like the CPU reference
    switch (op) {
      case UnaryOp::kRelu: y[i] = v < 0 ? T(0) : v; break;
      case UnaryOp::kNeg: y[i] = neg; break;
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
cudaError_t unary_int(UnaryOp op, const void* x, void* y, int64_t n, cudaStream_t s) {
  if (op != UnaryOp::kRelu && op != UnaryOp::kNeg && op != UnaryOp::kAbs) return cudaErrorInvalidValue;
  unary_int_kernel<T><<<grid_for(n), kThreads, 0, s>>>(op, static_cast<const T*>(x), static_cast<T*>(y), n);
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
      case BinaryOp::kPRelu: return a < 0 ? static_cast<C>(static_cast<U>(a) * static_cast<U>(b)) : a;
      default: return 0;  // Div/Pow on integers are rejected by supports()
    }
  } else {
    switch (op) {
      case BinaryOp::kAdd: return a + b;
      case BinaryOp::kSub: return a - b;
      case BinaryOp::kMul: return a * b;
      case BinaryOp::kDiv: return a / b;
      case BinaryOp::kPow: return powf(a, b);
      case BinaryOp::kMax: return (isnan_c(a) || isnan_c(b)) ? (isnan_c(a) ? a : b) : (a < b ? b : a);
      case BinaryOp::kMin: return (isnan_c(a) || isnan_c(b)) ? (isnan_c(a) ? a : b) : (b < a ? b : a);
      case BinaryOp::kPRelu: return a < 0 ? b * a : a;
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
    default: return false;
  }
}

template <typename T, bool kFlat>
__global__ void binary_kernel(BinaryOp op, const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out,
                              Bcast p, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    int64_t ia = i, ib = i;
    if constexpr (!kFlat) {
      ia = bcast_offset(p, 0, i);
      ib = bcast_offset(p, 1, i);
    }
    out[i] = Elem<T>::st(arith(op, Elem<T>::ld(a[ia]), Elem<T>::ld(b[ib])));
  }
}

template <typename T, bool kFlat>
__global__ void compare_kernel(BinaryOp op, const T* __restrict__ a, const T* __restrict__ b,
                               uint8_t* __restrict__ out, Bcast p, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    int64_t ia = i, ib = i;
    if constexpr (!kFlat) {
      ia = bcast_offset(p, 0, i);
      ib = bcast_offset(p, 1, i);
    }
    out[i] = cmp(op, Elem<T>::ld(a[ia]), Elem<T>::ld(b[ib])) ? 1 : 0;
  }
}

bool flat(const Bcast& p) {
  if (p.rank == 0) return true;
  return p.rank == 1 && p.strides[0][0] == 1 && p.strides[1][0] == 1;
}

template <typename T>
cudaError_t binary_t(BinaryOp op, const void* a, const void* b, void* out, const Bcast& p, int64_t n, cudaStream_t s) {
  const T* pa = static_cast<const T*>(a);
  const T* pb = static_cast<const T*>(b);
  if (binary_writes_bool(op)) {
    auto* po = static_cast<uint8_t*>(out);
    if (flat(p)) compare_kernel<T, true><<<grid_for(n), kThreads, 0, s>>>(op, pa, pb, po, p, n);
    else compare_kernel<T, false><<<grid_for(n), kThreads, 0, s>>>(op, pa, pb, po, p, n);
  } else {
    auto* po = static_cast<T*>(out);
    if (flat(p)) binary_kernel<T, true><<<grid_for(n), kThreads, 0, s>>>(op, pa, pb, po, p, n);
    else binary_kernel<T, false><<<grid_for(n), kThreads, 0, s>>>(op, pa, pb, po, p, n);
  }
  return cudaGetLastError();
}

// ---- where / broadcast copy -------------------------------------------------------------------

template <typename E>
__global__ void where_kernel(const uint8_t* __restrict__ c, const E* __restrict__ x, const E* __restrict__ y,
                             E* __restrict__ out, Bcast p, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    out[i] = c[bcast_offset(p, 0, i)] ? x[bcast_offset(p, 1, i)] : y[bcast_offset(p, 2, i)];
  }
}

template <typename E>
__global__ void bcopy_kernel(const E* __restrict__ src, E* __restrict__ out, Bcast p, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) out[i] = src[bcast_offset(p, 0, i)];
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
  GRAFT_GRID_STRIDE(i, n) y[i] = cast_one<F, T>(x[i]);
}

// Bool is stored as one byte; read it through uint8_t, write through bool.
template <typename F>
cudaError_t cast_from(KType to, const void* x, void* y, int64_t n, cudaStream_t s) {
  const F* px = static_cast<const F*>(x);
  const unsigned g = grid_for(n);
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
    case KType::kI8: return unary_int<int8_t>(op, x, y, n, s);
    case KType::kI32: return unary_int<int32_t>(op, x, y, n, s);
    case KType::kI64: return unary_int<int64_t>(op, x, y, n, s);
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
    case KType::kI32: return binary_t<int32_t>(op, a, b, out, p, n, s);
    case KType::kI64: return binary_t<int64_t>(op, a, b, out, p, n, s);
    case KType::kBool:
      if (!binary_writes_bool(op)) return cudaErrorInvalidValue;
      return binary_t<uint8_t>(op, a, b, out, p, n, s);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t launch_where(const void* cond, const void* x, const void* y, void* out, int elem_size, const Bcast& p,
                         int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const auto* c = static_cast<const uint8_t*>(cond);
  const unsigned g = grid_for(n);
  switch (elem_size) {
    case 1: where_kernel<uint8_t><<<g, kThreads, 0, s>>>(c, static_cast<const uint8_t*>(x), static_cast<const uint8_t*>(y), static_cast<uint8_t*>(out), p, n); break;
    case 2: where_kernel<uint16_t><<<g, kThreads, 0, s>>>(c, static_cast<const uint16_t*>(x), static_cast<const uint16_t*>(y), static_cast<uint16_t*>(out), p, n); break;
    case 4: where_kernel<uint32_t><<<g, kThreads, 0, s>>>(c, static_cast<const uint32_t*>(x), static_cast<const uint32_t*>(y), static_cast<uint32_t*>(out), p, n); break;
    case 8: where_kernel<uint64_t><<<g, kThreads, 0, s>>>(c, static_cast<const uint64_t*>(x), static_cast<const uint64_t*>(y), static_cast<uint64_t*>(out), p, n); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_broadcast_copy(const void* src, void* out, int elem_size, const Bcast& p, int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const unsigned g = grid_for(n);
  switch (elem_size) {
    case 1: bcopy_kernel<uint8_t><<<g, kThreads, 0, s>>>(static_cast<const uint8_t*>(src), static_cast<uint8_t*>(out), p, n); break;
    case 2: bcopy_kernel<uint16_t><<<g, kThreads, 0, s>>>(static_cast<const uint16_t*>(src), static_cast<uint16_t*>(out), p, n); break;
    case 4: bcopy_kernel<uint32_t><<<g, kThreads, 0, s>>>(static_cast<const uint32_t*>(src), static_cast<uint32_t*>(out), p, n); break;
    case 8: bcopy_kernel<uint64_t><<<g, kThreads, 0, s>>>(static_cast<const uint64_t*>(src), static_cast<uint64_t*>(out), p, n); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
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

}  // namespace graft::cuda::k
