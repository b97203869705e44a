// Launchers for the data-movement CUDA kernels, by element size where they only move bytes:
// a strided gather out[i] = in[offset(p, i)] (Transpose, Slice), a pitched row copy (Concat, Split),
// Gather along an axis with device indices, Tile, constant Pad and Resize (nearest / linear).
#pragma once

#include "backends/cuda/cuda_kernel_common.cuh"

namespace graft::cuda::k {

cudaError_t launch_strided_gather(const void* in, void* out, int elem_size, const Strided& p, int64_t n, cudaStream_t s);

// dst[r * dst_pitch + j] = src[r * src_pitch + j] for r < rows, j < row (pitches and row in elements).
cudaError_t launch_pitched_copy(const void* src, void* dst, int elem_size, int64_t rows, int64_t row,
                                int64_t src_pitch, int64_t dst_pitch, cudaStream_t s);

// out[o, j, k] = data[o, idx[j], k] with data viewed as [outer, n, inner] and m indices (int32 or
// int64); a negative index counts from the end; an index outside [-n, n) writes zero bytes (a
// kernel cannot report it, and must not read out of bounds).
cudaError_t launch_gather_axis(const void* data, const void* idx, bool idx_int64, void* out, int elem_size,
                               int64_t outer, int64_t n, int64_t m, int64_t inner, cudaStream_t s);

// Per output axis: extent, input extent, input stride and the begin pad (Pad) — shared by Tile and Pad.
struct AxisMap {
  int rank = 0;
  int64_t out_dims[kMaxRank] = {};
  int64_t in_dims[kMaxRank] = {};
  int64_t in_strides[kMaxRank] = {};
  int64_t begin[kMaxRank] = {};
};

// out[i] = in[sum((i_a % in_dims[a]) * in_strides[a])].
cudaError_t launch_tile(const void* in, void* out, int elem_size, const AxisMap& p, int64_t n, cudaStream_t s);

// out[i] = in[i - begin] where inside the input along every axis, else *fill (one element on the
// device; nullptr: zero bytes).
cudaError_t launch_pad_constant(const void* in, void* out, int elem_size, const AxisMap& p, const void* fill,
                                int64_t n, cudaStream_t s);

// Resize parameters per axis, computed on the host the way the CPU reference does; the device
// repeats the reference's double-precision coordinate arithmetic operation by operation (no FMA
// contraction) so nearest indices and linear weights match it exactly.
enum class ResizeCoord : int { kHalfPixel, kHalfPixelSymmetric, kPytorchHalfPixel, kAlignCorners, kAsymmetric,
                               kTfHalfPixelForNn };
enum class ResizeNearest : int { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
struct ResizeParams {
  int rank = 0;
  bool linear = false;
  ResizeCoord coord = ResizeCoord::kHalfPixel;
  ResizeNearest nearest = ResizeNearest::kRoundPreferFloor;
  int64_t in_dims[kMaxRank] = {};
  int64_t out_dims[kMaxRank] = {};
  int64_t in_strides[kMaxRank] = {};
  double scale[kMaxRank] = {};
  double resized[kMaxRank] = {};  // real-valued resized length (see the CPU reference)
  bool identity[kMaxRank] = {};   // axis maps each coordinate to itself
};

// Nearest: any element size (a byte copy). Linear: `t` in {f32, f16, bf16}; `elem_size` is ignored.
cudaError_t launch_resize(KType t, int elem_size, const void* in, void* out, const ResizeParams& p, int64_t n,
                          cudaStream_t s);

}  // namespace graft::cuda::k
