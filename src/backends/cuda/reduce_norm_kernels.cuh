// Launchers for the reduce/normalization CUDA kernels (FP32 accumulation): Softmax/LogSoftmax over
// an [outer, n, inner] view, LayerNormalization over the trailing block, and generic reductions
// (any set of axes, up to kMaxRank) with one block per output element.
#pragma once

#include "backends/cuda/cuda_kernel_common.cuh"

namespace graft::cuda::k {

cudaError_t launch_softmax(KType t, bool log, const void* x, void* y, int64_t outer, int64_t n, int64_t inner,
                           cudaStream_t s);

// scale/bias (bias may be null) have `inner` elements or one (broadcast); mean/inv_std (float32,
// may be null) get one value per row.
cudaError_t launch_layernorm(KType t, const void* x, const void* scale, int64_t scale_n, const void* bias,
                             int64_t bias_n, void* y, float* mean, float* inv_std, int64_t outer, int64_t inner,
                             float eps, cudaStream_t s);

enum class ReduceKind : int { kSum, kMean, kMax, kMin, kProd, kSumSquare, kL1, kL2, kLogSum, kLogSumExp };
// y[o] = reduce over r of x[offset(kept, o) + offset(reduced, r)]. Float types accumulate in
// float, Max/Min keep NaN (as the CPU reference); i32/i64 accumulate in int64 with wraparound
// (Mean truncates) for every kind but L2/LogSum/LogSumExp.
cudaError_t launch_reduce(KType t, ReduceKind kind, const void* x, void* y, const Strided& kept, int64_t out_n,
                          const Strided& reduced, int64_t red_n, cudaStream_t s);

}  // namespace graft::cuda::k
