// Launchers for the sampling CUDA kernels: RoiAlign and GridSample (the CPU references, which these
// follow step by step, are in src/backends/cpu/sampling.cpp). Host-compilable: plain types only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/cuda_kernel_common.cuh"

namespace graft::cuda::k {

struct RoiAlignArgs {
  int64_t n = 0, c = 0, h = 0, w = 0;  // X
  int64_t k = 0;                       // rois
  int64_t oh = 1, ow = 1, sampling_ratio = 0;
  float spatial_scale = 1.f;
  bool half_pixel = true;
  bool max_mode = false;
  bool max_of_weighted_corners = true;  // ONNX's max; false: mmcv's (largest sample)
  bool packed_rois = false;             // rois (K, 5) with the batch index first; batch_idx unused
};

// x (N,C,H,W) and rois of KType t (float32/float16); batch_idx int64 (idx64) or int32. A roi whose
// batch index is outside [0, N) or whose coordinates are not finite is written as zeros (the CPU
// reference reports it as an error; the GPU cannot without synchronizing). Adaptive sampling is
// capped at 4096 samples per bin and axis.
cudaError_t launch_roi_align(KType t, const void* x, const void* rois, const void* batch_idx, bool idx64, void* y,
                             const RoiAlignArgs& a, cudaStream_t s);

struct GridSampleArgs {
  int nd = 2;                    // spatial axes: 2 or 3
  int64_t n = 0, c = 0;
  int64_t in[3] = {1, 1, 1};     // input spatial extents (D, H, W or H, W)
  int64_t out[3] = {1, 1, 1};    // output spatial extents
  int mode = 0;                  // 0 linear, 1 nearest, 2 cubic
  int padding = 0;               // 0 zeros, 1 border, 2 reflection
  bool align_corners = false;
  bool torch_order = false;      // see graft::GridSampleParams
};

// x (N, C, in...) and grid (N, out..., nd) of KType t (float32/float16); y (N, C, out...).
cudaError_t launch_grid_sample(KType t, const void* x, const void* grid, void* y, const GridSampleArgs& a,
                               cudaStream_t s);

}  // namespace graft::cuda::k
