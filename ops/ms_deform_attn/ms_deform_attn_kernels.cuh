// CUDA kernels of multi-scale deformable attention (Deformable DETR, arXiv 2010.04159).
// Plain launchers over raw device pointers, no graft or framework types; each returns the launch
// error and never synchronizes. Arithmetic and accumulation are in float for every dtype.
//
// Layouts (row-major): value (N, S, M, D); spatial_shapes (L, 2) as (H, W); level_start_index (L);
// sampling_locations (N, Lq, M, L, P, 2) as (x, y) in [0, 1]; attention_weights (N, Lq, M, L, P);
// output (N, Lq, M, D). The index arrays live in device memory and are int32 or int64.
// A tap whose row (level start + y * W + x) falls outside [0, S) reads zero, so inconsistent shapes
// cannot read out of bounds.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace graft::cuda {

struct MsdaSizes {
  int64_t n = 0, s = 0, m = 0, d = 0, lq = 0, l = 0, p = 0;
};

// Forward. T is float or __half; I is int32_t or int64_t.
template <typename T, typename I>
cudaError_t ms_deform_attn_forward(const T* value, const I* spatial_shapes, const I* level_start_index,
                                   const T* sampling_locations, const T* attention_weights, T* output,
                                   const MsdaSizes& sz, cudaStream_t stream);

// Bytes of workspace the backward needs: a float copy of grad_value for __half, none for float.
template <typename T>
size_t ms_deform_attn_backward_workspace_bytes(const MsdaSizes& sz);

// Backward: grad_value (atomics, so it is zeroed first), grad_sampling_locations and
// grad_attention_weights (each written once). When `workspace` is smaller than the size above the
// launcher takes stream-ordered memory itself (cudaMallocAsync), so a host without a workspace
// still gets a correct result.
template <typename T, typename I>
cudaError_t ms_deform_attn_backward(const T* value, const I* spatial_shapes, const I* level_start_index,
                                    const T* sampling_locations, const T* attention_weights, const T* grad_output,
                                    T* grad_value, T* grad_sampling_locations, T* grad_attention_weights,
                                    const MsdaSizes& sz, void* workspace, size_t workspace_bytes,
                                    cudaStream_t stream);

}  // namespace graft::cuda
