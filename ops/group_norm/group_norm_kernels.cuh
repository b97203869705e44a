// CUDA kernels of GroupNorm over x viewed as (N, C, S) with S the product of the spatial dims.
// Plain launchers over raw device pointers, no graft or framework types; each returns the launch
// error and never synchronizes. Statistics and sums are accumulated in float for every dtype.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace graft::cuda {

cudaError_t group_norm_forward_f32(const float* x, const float* scale, const float* bias, float* y, int64_t n,
                                   int64_t c, int64_t s, int64_t groups, float epsilon, cudaStream_t stream);
cudaError_t group_norm_forward_f16(const __half* x, const __half* scale, const __half* bias, __half* y, int64_t n,
                                   int64_t c, int64_t s, int64_t groups, float epsilon, cudaStream_t stream);

// Bytes of device workspace the backward launchers need (per-sample partial sums of dscale/dbias).
size_t group_norm_backward_workspace_bytes(int64_t n, int64_t c);

// dx, dscale, dbias from x, scale and dy. Returns cudaErrorInvalidValue when workspace_bytes is too small.
cudaError_t group_norm_backward_f32(const float* x, const float* scale, const float* dy, float* dx, float* dscale,
                                    float* dbias, int64_t n, int64_t c, int64_t s, int64_t groups, float epsilon,
                                    void* workspace, size_t workspace_bytes, cudaStream_t stream);
cudaError_t group_norm_backward_f16(const __half* x, const __half* scale, const __half* dy, __half* dx,
                                    __half* dscale, __half* dbias, int64_t n, int64_t c, int64_t s, int64_t groups,
                                    float epsilon, void* workspace, size_t workspace_bytes, cudaStream_t stream);

}  // namespace graft::cuda
