#include "backends/cuda/reduce_norm_kernels.cuh"

#include "backends/cuda/cuda_kernel_device.cuh"

namespace graft::cuda::k {
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

template <typename T>
__global__ void reduce_kernel(ReduceKind kind, const T* __restrict__ x, T* __restrict__ y, Strided kept,
                              Strided red, int64_t red_n) {
  __shared__ float sh[32];
  const int64_t base = strided_offset(kept, blockIdx.x);
  const bool is_max = kind == ReduceKind::kMax, is_min = kind == ReduceKind::kMin;
  float acc = is_max ? -INFINITY : is_min ? INFINITY : 0.f;
  for (int64_t r = threadIdx.x; r < red_n; r += blockDim.x) {
    float v = Elem<T>::ld(x[base + strided_offset(red, r)]);
    acc = is_max ? fmaxf(acc, v) : is_min ? fminf(acc, v) : acc + v;
  }
  float out;
  if (is_max) out = block_max(acc, sh);
  else if (is_min) out = -block_max(-acc, sh);
  else out = block_sum(acc, sh);
  if (kind == ReduceKind::kMean) out /= static_cast<float>(red_n);
  if (threadIdx.x == 0) y[blockIdx.x] = Elem<T>::st(out);
}

}  // namespace

#define GRAFT_FLOAT_DISPATCH(t, CALL)                              \
  switch (t) {                                                     \
    case KType::kF32: { using T = float; CALL; break; }            \
    case KType::kF16: { using T = __half; CALL; break; }           \
    case KType::kBF16: { using T = __nv_bfloat16; CALL; break; }   \
    default: return cudaErrorInvalidValue;                         \
  }

cudaError_t launch_softmax(KType t, bool log, const void* x, void* y, int64_t outer, int64_t n, int64_t inner,
                           cudaStream_t s) {
  const int64_t rows = outer * inner;
  if (rows == 0 || n == 0) return cudaSuccess;
  if (rows > 0x7fffffffLL) return cudaErrorInvalidValue;
  GRAFT_FLOAT_DISPATCH(t, (softmax_kernel<T><<<static_cast<unsigned>(rows), kThreads, 0, s>>>(
                              log, static_cast<const T*>(x), static_cast<T*>(y), n, inner)));
  return cudaGetLastError();
}

cudaError_t launch_layernorm(KType t, const void* x, const void* scale, int64_t scale_n, const void* bias,
                             int64_t bias_n, void* y, float* mean, float* inv_std, int64_t outer, int64_t inner,
                             float eps, cudaStream_t s) {
  if (outer == 0 || inner == 0) return cudaSuccess;
  if (outer > 0x7fffffffLL) return cudaErrorInvalidValue;
  GRAFT_FLOAT_DISPATCH(t, (layernorm_kernel<T><<<static_cast<unsigned>(outer), kThreads, 0, s>>>(
                              static_cast<const T*>(x), static_cast<const T*>(scale), scale_n,
                              static_cast<const T*>(bias), bias_n, static_cast<T*>(y), mean, inv_std, inner, eps)));
  return cudaGetLastError();
}

cudaError_t launch_reduce(KType t, ReduceKind kind, const void* x, void* y, const Strided& kept, int64_t out_n,
                          const Strided& reduced, int64_t red_n, cudaStream_t s) {
  if (out_n == 0) return cudaSuccess;
  if (out_n > 0x7fffffffLL) return cudaErrorInvalidValue;
  GRAFT_FLOAT_DISPATCH(t, (reduce_kernel<T><<<static_cast<unsigned>(out_n), kThreads, 0, s>>>(
                              kind, static_cast<const T*>(x), static_cast<T*>(y), kept, reduced, red_n)));
  return cudaGetLastError();
}

}  // namespace graft::cuda::k
