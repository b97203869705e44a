// CUDA kernels of CustomLayer (y = x * sigmoid(beta * x)). Plain launchers over raw device
// pointers: no graft or framework types, so the same kernels serve every host. Each returns the
// launch error (cudaGetLastError) and never synchronizes.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace graft::cuda {

cudaError_t custom_layer_forward_f32(const float* x, float* y, int64_t n, float beta, cudaStream_t stream);
cudaError_t custom_layer_forward_f16(const __half* x, __half* y, int64_t n, float beta, cudaStream_t stream);

// dx = dy * (s + beta * x * s * (1 - s)), s = sigmoid(beta * x).
cudaError_t custom_layer_backward_f32(const float* x, const float* dy, float* dx, int64_t n, float beta,
                                      cudaStream_t stream);
cudaError_t custom_layer_backward_f16(const __half* x, const __half* dy, __half* dx, int64_t n, float beta,
                                      cudaStream_t stream);

}  // namespace graft::cuda
