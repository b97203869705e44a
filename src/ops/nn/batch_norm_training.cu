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

template <typename T, typename P>
__global__ void batchnorm_training_kernel(BatchNormTraining a) {
  const T* __restrict__ x = static_cast<const T*>(a.x);
  T* __restrict__ y = static_cast<T*>(a.y);
  const P* scale = static_cast<const P*>(a.scale);
  const P* bias = static_cast<const P*>(a.bias);
  __shared__ double sh[32];
  const int64_t c = blockIdx.x, count = a.n * a.inner;
  auto at = [&](int64_t j) { return (j / a.inner * a.c + c) * a.inner + j % a.inner; };  // j-th element of channel c
  double s = 0.0;
  for (int64_t j = threadIdx.x; j < count; j += blockDim.x) s += as_double(x[at(j)]);
  const double mean = count > 0 ? block_sum(s, sh) / static_cast<double>(count) : 0.0;
  double q = 0.0;
  for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
    const double d = as_double(x[at(j)]) - mean;
    q += d * d;
  }
  const double var = count > 0 ? block_sum(q, sh) / static_cast<double>(count) : 0.0;
  const double inv = 1.0 / sqrt(var + a.eps), sc = as_double(scale[c]), b = as_double(bias[c]);
  for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
    const int64_t k = at(j);
    y[k] = store_from_double<T>((as_double(x[k]) - mean) * inv * sc + b);
  }
  if (threadIdx.x == 0) {
    const double m = a.momentum;
    if (a.running_mean)
      static_cast<P*>(a.running_mean)[c] = store_from_double<P>(as_double(static_cast<const P*>(a.mean)[c]) * m + mean * (1.0 - m));
    if (a.running_var)
      static_cast<P*>(a.running_var)[c] = store_from_double<P>(as_double(static_cast<const P*>(a.var)[c]) * m + var * (1.0 - m));
  }
}

// The parameters' type pt (float32, float16, bfloat16 or float64) for data of type T.
template <typename T>
cudaError_t batchnorm_training_for(KType pt, const BatchNormTraining& a, cudaStream_t s) {
  const unsigned blocks = static_cast<unsigned>(a.c);
  switch (pt) {
    case KType::kF32: batchnorm_training_kernel<T, float><<<blocks, 256, 0, s>>>(a); break;
    case KType::kF16: batchnorm_training_kernel<T, __half><<<blocks, 256, 0, s>>>(a); break;
    case KType::kBF16: batchnorm_training_kernel<T, __nv_bfloat16><<<blocks, 256, 0, s>>>(a); break;
    case KType::kF64: batchnorm_training_kernel<T, double><<<blocks, 256, 0, s>>>(a); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_batchnorm_training(KType t, KType pt, const BatchNormTraining& a, cudaStream_t s) {
  if (a.c == 0) return cudaSuccess;
  if (a.c > 0x7fffffffLL) return cudaErrorInvalidValue;
  GRAFT_FLOAT64_DISPATCH(t, return batchnorm_training_for<T>(pt, a, s));
  return cudaErrorInvalidValue;  // not reached: the dispatch returns
}

}  // namespace graft::cuda::k
