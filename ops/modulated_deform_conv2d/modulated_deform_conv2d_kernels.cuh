// CUDA kernels of modulated deformable convolution (DCNv2, arXiv 1811.11168; mmcv semantics).
// Plain launchers over raw device pointers, no graft or framework types; each returns the first
// launch error and never synchronizes. Arithmetic and accumulation are in float for every dtype.
//
// Layouts (row-major): x (N, C, H, W); offset (N, 2*dg*kh*kw, Ho, Wo) with dy of deform group g and
// kernel tap k at channel 2*(g*kh*kw + k) and dx at the next one; mask (N, dg*kh*kw, Ho, Wo);
// weight (Co, C/groups, kh, kw); bias (Co) or nullptr; output (N, Co, Ho, Wo).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace graft::cuda {

struct MdcnSizes {
  int64_t n = 0, c = 0, h = 0, w = 0, co = 0, kh = 0, kw = 0, ho = 0, wo = 0;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1, deform_groups = 1;
};

// Bytes of scratch the forward (columns of one image, in float) or the backward (columns, their
// gradient and, for __half, float accumulators of one image's grad_x and of grad_weight) needs.
template <typename T>
size_t modulated_deform_conv2d_workspace_bytes(const MdcnSizes& sz, bool backward);

// Forward: per image, the modulated deformable columns (C*kh*kw rows of Ho*Wo) then one GEMM per
// group with the weights, plus the bias. When `workspace` is smaller than the size above the launcher
// takes stream-ordered memory itself (cudaMallocAsync). T is float or __half.
template <typename T>
cudaError_t modulated_deform_conv2d_forward(const T* x, const T* offset, const T* mask, const T* weight, const T* bias,
                                            T* output, const MdcnSizes& sz, void* workspace, size_t workspace_bytes,
                                            cudaStream_t stream);

// Backward: grad_x (atomics into a zeroed float buffer), grad_offset and grad_mask (each element
// written once), grad_weight (GEMMs accumulated over the batch), grad_bias (skipped when nullptr).
template <typename T>
cudaError_t modulated_deform_conv2d_backward(const T* x, const T* offset, const T* mask, const T* weight,
                                             const T* grad_output, T* grad_x, T* grad_offset, T* grad_mask,
                                             T* grad_weight, T* grad_bias, const MdcnSizes& sz, void* workspace,
                                             size_t workspace_bytes, cudaStream_t stream);

}  // namespace graft::cuda
