// BatchNormalization in training mode (opset 14) on CUDA: the statistics of the batch, as the CPU
// reference (batch_norm.cpp) computes them. One block per channel: the mean, then the squared
// deviations from it (two passes, as the reference, so the variance stays exact for data far from
// 0; the population variance, divided by the count), both summed in double; then Y, and the
// running statistics running_mean = input_mean * momentum + mean * (1 - momentum) (running_var
// alike). The host side (the CudaOp row) is batch_norm_cuda.cpp.
#include "ops/nn/nn_kernels.cuh"

#include "backends/cuda/cuda_kernel_device.cuh"

namespace graft::cuda::k {

namespace {

// The block's sum of v, in double, in every thread (sh: 32 doubles).
__device__ double block_sum_double(double v, double* sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  __syncthreads();  // sh may still be read from a previous call
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  v = lane < warps ? sh[lane] : 0.0;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <typename T, typename P>
__global__ void batchnorm_training_kernel(const T* __restrict__ x, const P* __restrict__ scale,
                                          const P* __restrict__ bias, const P* __restrict__ in_mean,
                                          const P* __restrict__ in_var, T* __restrict__ y, P* running_mean,
                                          P* running_var, int64_t n, int64_t channels, int64_t inner, double eps,
                                          double momentum) {
  __shared__ double sh[32];
  const int64_t c = blockIdx.x, count = n * inner;
  auto at = [&](int64_t j) { return (j / inner * channels + c) * inner + j % inner; };  // j-th element of channel c
  double s = 0.0;
  for (int64_t j = threadIdx.x; j < count; j += blockDim.x) s += as_double(x[at(j)]);
  const double mean = count > 0 ? block_sum_double(s, sh) / static_cast<double>(count) : 0.0;
  double q = 0.0;
  for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
    const double d = as_double(x[at(j)]) - mean;
    q += d * d;
  }
  const double var = count > 0 ? block_sum_double(q, sh) / static_cast<double>(count) : 0.0;
  const double inv = 1.0 / sqrt(var + eps), sc = as_double(scale[c]), b = as_double(bias[c]);
  for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
    const int64_t k = at(j);
    y[k] = store_from_double<T>((as_double(x[k]) - mean) * inv * sc + b);
  }
  if (threadIdx.x == 0) {
    if (running_mean) running_mean[c] = store_from_double<P>(as_double(in_mean[c]) * momentum + mean * (1.0 - momentum));
    if (running_var) running_var[c] = store_from_double<P>(as_double(in_var[c]) * momentum + var * (1.0 - momentum));
  }
}

template <typename T, typename P>
cudaError_t batchnorm_training_typed(const void* x, const void* scale, const void* bias, const void* mean,
                                     const void* var, void* y, void* running_mean, void* running_var, int64_t n,
                                     int64_t c, int64_t inner, double eps, double momentum, cudaStream_t s) {
  batchnorm_training_kernel<T, P><<<static_cast<unsigned>(c), 256, 0, s>>>(
      static_cast<const T*>(x), static_cast<const P*>(scale), static_cast<const P*>(bias), static_cast<const P*>(mean),
      static_cast<const P*>(var), static_cast<T*>(y), static_cast<P*>(running_mean), static_cast<P*>(running_var), n, c,
      inner, eps, momentum);
  return cudaGetLastError();
}

// The parameters' type pt (float32, float16, bfloat16 or float64) for data of type T.
template <typename T>
cudaError_t batchnorm_training_for(KType pt, const void* x, const void* scale, const void* bias, const void* mean,
                                   const void* var, void* y, void* running_mean, void* running_var, int64_t n,
                                   int64_t c, int64_t inner, double eps, double momentum, cudaStream_t s) {
  switch (pt) {
    case KType::kF32:
      return batchnorm_training_typed<T, float>(x, scale, bias, mean, var, y, running_mean, running_var, n, c, inner, eps, momentum, s);
    case KType::kF16:
      return batchnorm_training_typed<T, __half>(x, scale, bias, mean, var, y, running_mean, running_var, n, c, inner, eps, momentum, s);
    case KType::kBF16:
      return batchnorm_training_typed<T, __nv_bfloat16>(x, scale, bias, mean, var, y, running_mean, running_var, n, c, inner, eps,
                                                        momentum, s);
    case KType::kF64:
      return batchnorm_training_typed<T, double>(x, scale, bias, mean, var, y, running_mean, running_var, n, c, inner, eps, momentum, s);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t launch_batchnorm_training(KType t, KType pt, const void* x, const void* scale, const void* bias,
                                      const void* mean, const void* var, void* y, void* running_mean, void* running_var,
                                      int64_t n, int64_t c, int64_t inner, double eps, double momentum, cudaStream_t s) {
  if (c == 0) return cudaSuccess;
  if (c > 0x7fffffffLL) return cudaErrorInvalidValue;
  switch (t) {
    case KType::kF32: return batchnorm_training_for<float>(pt, x, scale, bias, mean, var, y, running_mean, running_var, n, c, inner, eps, momentum, s);
    case KType::kF16: return batchnorm_training_for<__half>(pt, x, scale, bias, mean, var, y, running_mean, running_var, n, c, inner, eps, momentum, s);
    case KType::kBF16: return batchnorm_training_for<__nv_bfloat16>(pt, x, scale, bias, mean, var, y, running_mean, running_var, n, c, inner, eps, momentum, s);
    case KType::kF64: return batchnorm_training_for<double>(pt, x, scale, bias, mean, var, y, running_mean, running_var, n, c, inner, eps, momentum, s);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace graft::cuda::k
