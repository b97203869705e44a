// The shape family: ONNX's data-movement ops, Flatten, Reshape, Squeeze, Unsqueeze, Transpose,
// Concat, Split, Slice, Gather, Expand, Tile, Shape, Size, Constant, ConstantOfShape, Range, Trilu,
// OneHot, DepthToSpace, SpaceToDepth and Compress. Their
// CPU references move bytes only (every dtype by copying dtype_size() bytes per element) and fail,
// rather than write out of bounds, when the allocated outputs disagree with what they recompute.
// Their schemas also propagate the symbolic contents of small integer tensors, so PyTorch's
// dynamic reshapes (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) keep symbolic shapes.
// The ops with kernels of their own have files of their own: trilu, one_hot and compress (a .cpp for
// the CPU reference and schema, a .cu for the kernel and CUDA op). shape.cpp: Slice's axis geometry,
// the other ops' CPU references and schemas; shape.cu: ConstantOfShape's and Range's kernels;
// shape_cuda.cpp: the other CUDA ops, over the data-movement kernels of
// src/backends/cuda/shape_kernels.cu, which other ops share.
#pragma once

#include <cstdint>

#include "graft/attribute.h"
#include "graft/status.h"
#include "graft/tensor.h"
#include "ops/operator.h"

#ifdef GRAFT_WITH_CUDA
#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_kernel_common.cuh"
#endif

namespace graft {

// One sliced axis after ONNX clamping: output element k reads input index start + k*step.
struct SliceAxis {
  int64_t start = 0;
  int64_t step = 1;
  int64_t length = 0;
};
// ONNX Slice semantics (opset 10+) for one axis of extent `dim`: negative indices count from the
// end, starts/ends clamp to [0,dim] (step > 0) or [0,dim-1] / [-1,dim-1] (step < 0). step != 0.
SliceAxis slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step);

// ---- CPU references (shape.cpp) --------------------------------------------------------------------
namespace cpu {

// The tensor a Constant node produces, from whichever value attribute it carries.
Result<Tensor> constant_node_value(const AttributeMap& attrs);

Status reshape_like(ExecContext& ctx);  // Reshape, Flatten, Squeeze, Unsqueeze: a plain byte copy
Status transpose(ExecContext& ctx);
Status concat(ExecContext& ctx);
Status split(ExecContext& ctx);
Status slice(ExecContext& ctx);
Status gather(ExecContext& ctx);
Status expand(ExecContext& ctx);
Status shape(ExecContext& ctx);
Status constant(ExecContext& ctx);
Status constant_of_shape(ExecContext& ctx);
Status range(ExecContext& ctx);
Status tile(ExecContext& ctx);
Status trilu(ExecContext& ctx);
Status size(ExecContext& ctx);
Status one_hot(ExecContext& ctx);
Status depth_to_space(ExecContext& ctx);
Status space_to_depth(ExecContext& ctx);
Status compress(ExecContext& ctx);

}  // namespace cpu
}  // namespace graft

#ifdef GRAFT_WITH_CUDA
// ---- CUDA launchers (shape.cu, trilu.cu, one_hot.cu, compress.cu) of the ops that have kernels of their own; shape_cuda.cpp's other
// ops run on the shared data-movement kernels of src/backends/cuda/shape_kernels.cu. OneHot's
// indices are read on the device and cannot fail per element the way the CPU reference does: an
// out-of-range index writes the off value in every position (as the CPU does).
namespace graft::cuda::k {

// ---- Trilu ------------------------------------------------------------------------------------

// y = x where (upper ? c - r >= k : c - r <= k), else 0; planes of rows x cols; element size 1/2/4/8.
cudaError_t launch_trilu(int elem_size, bool upper, int64_t k, const void* x, void* y, int64_t planes, int64_t rows,
                         int64_t cols, cudaStream_t s);

// ---- OneHot -----------------------------------------------------------------------------------

// out[(o * depth + d) * inner + i] = vals[d == index ? 1 : 0], index = indices[o * inner + i]
// truncated toward zero, + depth when negative. Indices i32/i64/f32/f16/bf16; values element
// size 1/2/4/8 (vals is the device tensor [off, on]).
cudaError_t launch_one_hot(KType idx_t, int elem_size, const void* idx, const void* vals, void* out, int64_t outer,
                           int64_t depth, int64_t inner, cudaStream_t s);

// ---- Compress ---------------------------------------------------------------------------------

constexpr int kCompressChunk = 480;
// Source positions along the axis of up to kCompressChunk consecutive kept slots, passed by value.
struct CompressChunk {
  int count = 0;
  int32_t src[kCompressChunk] = {};
};
// y[(o * kn + t0 + j) * inner + i] = x[(o * n + c.src[j]) * inner + i] for j < c.count.
cudaError_t launch_compress_chunk(int elem_size, const void* x, void* y, int64_t outer, int64_t n, int64_t inner,
                                  int64_t kn, int64_t t0, const CompressChunk& c, cudaStream_t s);

// ---- ConstantOfShape, Range ---------------------------------------------------------------------

// out[i] = the element whose bytes are the low elem_size bytes of `bits` (little-endian).
cudaError_t launch_fill(int elem_size, uint64_t bits, void* out, int64_t n, cudaStream_t s);
// out[i] = start + i * delta: floats in double, rounded once (as the CPU reference); i32/i64 in
// wrapping 64-bit integer arithmetic from istart/idelta.
cudaError_t launch_range(KType t, double start, double delta, int64_t istart, int64_t idelta, void* out, int64_t n,
                         cudaStream_t s);

}  // namespace graft::cuda::k
#endif
