// CUDA kernels of modulated deformable convolution (DCNv2, arXiv 1811.11168; mmcv semantics).
// Plain launchers over raw device pointers, no graft or framework types; each returns the first
// launch error and never synchronizes. Arithmetic and accumulation are in float for every dtype
// (the FP16 forward stores its sampled columns in half, as the matmul's operand).
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
  // The forward only: x is stored (N, H, W, C) and the output is written (N, Ho, Wo, Co)
  // (KernelContext::channels_last_io); the sizes above stay those of the NCHW problem.
  bool channels_last_io = false;
};

// Where a launcher failed, for the caller's error message (this file holds no graft types): the
// call that failed and, for cuBLASLt, its status name. Static strings; null when not known.
struct MdcnFailure {
  const char* call = nullptr;
  const char* detail = nullptr;
};

// Bytes of scratch the forward needs to run `images` images per column pass: their columns in T
// plus cuBLASLt's workspace (0 when there is nothing to multiply).
template <typename T>
size_t modulated_deform_conv2d_forward_workspace_bytes(const MdcnSizes& sz, int64_t images);

// Declared scratch. Forward: the bytes above for as many images per pass as keep the columns within
// 256 MiB (all N when they fit; at least one). Backward: one image's float columns and their
// gradient and, for __half, float accumulators of one image's grad_x and of grad_weight.
template <typename T>
size_t modulated_deform_conv2d_workspace_bytes(const MdcnSizes& sz, bool backward);

// Forward: per chunk of images (as many as `workspace` holds), their modulated deformable columns
// (C*kh*kw rows of Ho*Wo each, in T) then one cuBLASLt matmul per conv group batched over the
// chunk's images (or per image batched over groups, when there are more groups), float
// accumulation, onto the bias. When `workspace` holds no image the launcher takes the declared size
// in stream-ordered memory itself (cudaMallocAsync). The cuBLASLt handle (one per device) is
// created on the first call and kept; matmul plans are cached, so after the first call with a shape
// nothing is created, and a call is safe inside a CUDA-graph capture. T is float or __half.
// `failure` (optional) says which call failed.
template <typename T>
cudaError_t modulated_deform_conv2d_forward(const T* x, const T* offset, const T* mask, const T* weight, const T* bias,
                                            T* output, const MdcnSizes& sz, void* workspace, size_t workspace_bytes,
                                            cudaStream_t stream, MdcnFailure* failure = nullptr);

// Backward: grad_x (atomics into a zeroed float buffer), grad_offset and grad_mask (each element
// written once), grad_weight (GEMMs accumulated over the batch), grad_bias (skipped when nullptr).
template <typename T>
cudaError_t modulated_deform_conv2d_backward(const T* x, const T* offset, const T* mask, const T* weight,
                                             const T* grad_output, T* grad_x, T* grad_offset, T* grad_mask,
                                             T* grad_weight, T* grad_bias, const MdcnSizes& sz, void* workspace,
                                             size_t workspace_bytes, cudaStream_t stream);

}  // namespace graft::cuda
