// Fused ("flash") attention for GraftAttention: Y = softmax(scale * Q.Kt, last axis) . V in one
// kernel that keeps the scores in registers (online softmax over key tiles) instead of writing a
// [batch, S, S2] score matrix to memory and reading it back twice. Plain device pointers with
// element strides, so the caller can hand in views (heads interleaved in a [S, B, D] buffer, K
// transposed by strides); no framework types.
#pragma once

#include <cstdint>

#include "backends/cuda/cuda_kernel_common.cuh"

namespace graft::cuda::k {

// One operand of the attention as a strided 3-D view [batch, rows, cols]; strides in elements.
// The batch index may be two-level, b = outer * batch_inner + inner (launch_flash_attention's
// batch_inner): entry b then starts at outer * outer_stride + inner * batch_stride. That lets Q/K/V
// be views of a packed [S, B, 3, H, hd] projection, whose (B, H) heads no single stride walks.
// With batch_inner = batch (the default) outer is always 0 and outer_stride unused.
struct AttnOperand {
  const void* data = nullptr;
  int64_t batch_stride = 0, row_stride = 0, col_stride = 0;
  int64_t outer_stride = 0;
};
struct AttnOutput {
  void* data = nullptr;
  int64_t batch_stride = 0, row_stride = 0, col_stride = 0;
  int64_t outer_stride = 0;
};

// Shapes: Q [batch, S, D], Kt [batch, D, S2] (K already transposed), V [batch, S2, Dv],
// Y [batch, S, Dv]; all four in the same dtype. Scores, softmax and the PV product accumulate in
// float32; the softmax weights are rounded to the input dtype before the PV product.
//
// Taken (true) when:
//   - dt is float16 or bfloat16;
//   - 8 <= D, Dv <= 128 and both are multiples of 8;
//   - Q, V and Y have col_stride 1; Kt has col_stride 1 (key index contiguous, e.g. a contiguous
//     [batch, D, S2] tensor) or row_stride 1 (head dim contiguous: the transpose view of a K
//     buffer whose rows are keys);
//   - every stride is >= 0 (a batch stride of 0 broadcasts an operand over the batch).
// Any pointer alignment and any strides are accepted: an operand whose data pointer is 16-byte
// aligned and whose batch and (non-unit) row strides are multiples of 8 elements is read with
// 16-byte asynchronous copies, any other one element by element (slower, never out of bounds).
bool flash_attention_supported(KType dt, int64_t D, int64_t Dv, const AttnOperand& q, const AttnOperand& kt,
                               const AttnOperand& v, const AttnOutput& y);

// Runs the attention on `stream`. batch or S == 0: nothing to do (cudaSuccess). S2 must be >= 1.
// Returns cudaErrorInvalidValue for problems flash_attention_supported() rejects (or sizes past
// 2^31 rows), else the launch's error. `warps` picks the query tile (16 rows per warp: 1, 2 or 4
// warps per block); 0 lets the launcher choose (4, fewer when the grid would not fill the GPU).
// Tests force each tile size through it. batch_inner (0: batch) must divide batch.
// `bias` (optional, contiguous [bias_period, S, S2], the operands' dtype) is added to the scores
// after the scale: batch entry b adds bias[b % bias_period] (Swin's relative position bias and
// shifted-window mask, periodic over windows and heads).
cudaError_t launch_flash_attention(KType dt, AttnOperand q, AttnOperand kt, AttnOperand v, AttnOutput y,
                                   int64_t batch, int64_t S, int64_t D, int64_t S2, int64_t Dv, float scale,
                                   cudaStream_t stream, int warps = 0, int64_t batch_inner = 0,
                                   const void* bias = nullptr, int64_t bias_period = 1);

}  // namespace graft::cuda::k
