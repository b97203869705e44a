// The reduce-and-normalize family: ONNX's ten reductions (ReduceMean, ReduceSum, ReduceMax,
// ReduceMin, ReduceProd, ReduceSumSquare, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp) and
// the normalizations built on reductions (Softmax, LogSoftmax, LayerNormalization), and CumSum.
// This header holds what other code shares with them: the reduce axes (read one way by the schemas,
// the CPU references and the CUDA ops), the CPU references and, in CUDA builds, the kernel
// launchers (the fused attention calls the softmax). One file per op (or group of ops sharing a
// kernel): reduce.cpp (the axes and the ten Reduce ops), softmax.cpp, layer_norm.cpp, cumsum.cpp and
// l2_normalize.cpp hold the CPU references (float inputs accumulate in double and round once on
// store; integers in int64) and schemas; the .cu of the same names hold the kernels (float
// accumulation) and the CUDA ops, the row kernels' shared parts in row_kernels.cuh.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "graft/attribute.h"
#include "graft/status.h"
#include "ops/operator.h"

#ifdef GRAFT_WITH_CUDA
#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_kernel_common.cuh"
#endif

namespace graft {

// The reduce axes of a ReduceXxx node at `opset`, normalized and sorted, from the `axes` input or
// attribute. An empty result with `noop` true means "copy the input"; empty with `noop` false
// means "reduce every axis". Shared by the schema and the kernel so both read the node one way.
struct ReduceAxes {
  std::vector<int64_t> axes;
  bool noop = false;
  bool known = true;  // false: the axes input exists but its contents are not known yet
};
// `axes_input` is the axes tensor contents (nullopt when absent or unknown); `axes_input_present`
// says whether the node has a second input at all.
Result<ReduceAxes> resolve_reduce_axes(const AttributeMap& attrs, int64_t rank, bool axes_input_present,
                                       const std::optional<std::vector<int64_t>>& axes_input);

// ---- CPU references ----------------------------------------------------------------------------------
namespace cpu {

Status reduce_mean(ExecContext& ctx);
Status reduce_sum(ExecContext& ctx);
Status reduce_max(ExecContext& ctx);
Status reduce_min(ExecContext& ctx);
Status reduce_prod(ExecContext& ctx);
Status reduce_sum_square(ExecContext& ctx);
Status reduce_l2(ExecContext& ctx);
Status reduce_l1(ExecContext& ctx);
Status reduce_log_sum(ExecContext& ctx);
Status reduce_log_sum_exp(ExecContext& ctx);
Status softmax(ExecContext& ctx);
Status log_softmax(ExecContext& ctx);
Status layer_normalization(ExecContext& ctx);
Status cumsum(ExecContext& ctx);
Status l2_normalize(ExecContext& ctx);  // GraftL2Normalize (internal)

}  // namespace cpu
}  // namespace graft

#ifdef GRAFT_WITH_CUDA
// ---- CUDA launchers (reduce.cu, softmax.cu, layer_norm.cu, cumsum.cu, l2_normalize.cu) ------------
namespace graft::cuda::k {

cudaError_t launch_softmax(KType t, bool log, const void* x, void* y, int64_t outer, int64_t n, int64_t inner,
                           cudaStream_t s);

// scale/bias (bias may be null) have `inner` elements or one (broadcast); mean/inv_std (float32,
// may be null) get one value per row.
cudaError_t launch_layernorm(KType t, const void* x, const void* scale, int64_t scale_n, const void* bias,
                             int64_t bias_n, void* y, float* mean, float* inv_std, int64_t outer, int64_t inner,
                             float eps, cudaStream_t s);

// GraftL2Normalize: each of `rows` contiguous rows of n elements over max(its L2 norm, eps), the norm
// accumulated in float32.
cudaError_t launch_l2_normalize(KType t, const void* x, void* y, int64_t rows, int64_t n, float eps, cudaStream_t s);

enum class ReduceKind : int { kSum, kMean, kMax, kMin, kProd, kSumSquare, kL1, kL2, kLogSum, kLogSumExp };
// y[o] = reduce over r of x[offset(kept, o) + offset(reduced, r)]. Float types accumulate in
// float, Max/Min keep NaN (as the CPU reference); i32/i64 accumulate in int64 with wraparound
// (Mean truncates) for every kind but L2/LogSum/LogSumExp.
cudaError_t launch_reduce(KType t, ReduceKind kind, const void* x, void* y, const Strided& kept, int64_t out_n,
                          const Strided& reduced, int64_t red_n, cudaStream_t s);


// CumSum over [outer, n, inner]: float types accumulate in float, i32/i64 in int64.
cudaError_t launch_cumsum(KType t, bool exclusive, bool reverse, const void* x, void* y, int64_t outer, int64_t n,
                          int64_t inner, cudaStream_t s);

}  // namespace graft::cuda::k
#endif
