// Launchers for the CUDA kernels of src/backends/cuda/extra_ops.cpp: CumSum, Trilu, OneHot,
// Compress, ConstantOfShape's fill and Range. Plain device pointers, no
// framework types; each returns the launch's cudaError_t (cudaErrorInvalidValue for a type the
// launcher does not handle).
//
// Indices read on the device (OneHot) cannot fail per element the way the CPU reference does: an
// out-of-range index makes OneHot write the off value in every position (as the CPU does).
#pragma once

#include "backends/cuda/cuda_kernel_common.cuh"

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
