// Launchers for the CUDA kernels of NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (CPU
// reference: src/backends/cpu/loss.cpp; attributes and shapes: src/ops/loss_attrs.h). Plain device
// pointers; each returns the launch's cudaError_t (cudaErrorInvalidValue for a dtype it does not
// handle).
#pragma once

#include "backends/cuda/cuda_kernel_common.cuh"

namespace graft::cuda::k {

// x [n, c, inner] of dtype t (float32, float16, bfloat16, float64), target [n, inner] of dtype
// target_t (int32, int64), weight [c] of dtype t or null. Per target element k: its loss
// -(logp[class]) * weight[class], where logp is x itself (NLL) or, with log_softmax,
// x - logsumexp over the class axis (also written to logp_out, [n, c, inner] of dtype t, unless
// null). A target equal to ignore_index (has_ii) gives loss 0 and weight 0. Any other target
// outside [0, c) gives NaN for its loss and weight (the CPU reference fails the run; a kernel cannot
// without a synchronization, and NaN cannot pass for a loss).
// reduction 0 (none): y[k] = the loss, in dtype t. 1 (sum) and 2 (mean): y[0] = the sum of the losses,
// or that sum over the sum of the weights, in one block in a fixed order (the same bits every run);
// `scratch` then holds 2 * n * inner doubles.
cudaError_t launch_loss(KType t, KType target_t, const void* x, const void* target, const void* weight, int64_t n,
                        int64_t c, int64_t inner, bool log_softmax, bool has_ii, int64_t ignore_index, int reduction,
                        void* y, void* logp_out, double* scratch, cudaStream_t s);

}  // namespace graft::cuda::k
