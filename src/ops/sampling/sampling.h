// The sampling family: ONNX's RoiAlign (opset 10, 16), GridSample (opset 16, 20) and AffineGrid
// (opset 20, GridSample's grid from affine matrices), and the
// kernels that mmdeploy's MMCVRoiAlign and grid_sampler and TensorRT's ROIAlign_TRT share with them
// (ops/roi_align, ops/grid_sample). This header holds what those users need: the attribute readers,
// the CPU references over TensorViews and, in CUDA builds, the kernel launchers (plain types only,
// so host code includes them). One file per op: roi_align.cpp and grid_sample.cpp (attributes, CPU
// reference, schema, over sampling_util.h), roi_align.cu and grid_sample.cu (kernels and the CUDA op,
// over sampling_cuda.cuh).
#pragma once

#include <cstdint>
#include <vector>

#include "graft/attribute.h"
#include "graft/status.h"
#include "graft/tensor.h"
#include "ops/operator.h"

#ifdef GRAFT_WITH_CUDA
#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_kernel_common.cuh"
#endif

namespace graft {

// ---- RoiAlign (Mask R-CNN, He et al., arXiv 1703.06870) ------------------------------------------
struct RoiAlignParams {
  enum class Pool { kAvg, kMax };
  Pool pool = Pool::kAvg;
  // Max pooling as ONNX defines it through its reference implementation (and ONNX Runtime): the
  // largest of the four weighted corner terms w_i * v_i of any sample. False: the largest
  // bilinearly interpolated sample (mmcv's roi_align).
  bool max_of_weighted_corners = true;
  int64_t output_height = 1, output_width = 1;
  int64_t sampling_ratio = 0;  // samples per bin and axis; 0: ceil(roi extent / output extent)
  double spatial_scale = 1.0;
  // true: roi corners are shifted by -0.5 pixel and a roi may be smaller than one pixel (ONNX
  // half_pixel, mmcv aligned=1); false: no shift and every roi is at least 1x1 (ONNX
  // output_half_pixel, the only behaviour before opset 16; mmcv aligned=0).
  bool half_pixel = true;
};

// ONNX RoiAlign attributes (opset 10 and 16). Before opset 16 the default coordinate transformation
// is output_half_pixel. Errors name the attribute.
Result<RoiAlignParams> parse_roi_align_attrs(const AttributeMap& attrs, int opset);

// ---- GridSample (Spatial Transformer Networks, Jaderberg et al., arXiv 1506.02025) ----------------
struct GridSampleParams {
  enum class Mode { kLinear, kNearest, kCubic };
  enum class Padding { kZeros, kBorder, kReflection };
  Mode mode = Mode::kLinear;
  Padding padding = Padding::kZeros;
  bool align_corners = false;
  // Order of the steps where ONNX and PyTorch differ. ONNX (its reference implementation and ONNX
  // Runtime): nearest rounds the coordinate and then applies the padding; cubic applies the
  // padding to the coordinate and again to each tap. PyTorch (mmdeploy's grid_sampler): nearest
  // applies the padding and then rounds; cubic applies it to each tap only. Linear is the same.
  bool torch_order = false;
};

// ONNX GridSample attributes: opset 16..19 modes bilinear|nearest|bicubic, opset 20+ linear|
// nearest|cubic; padding_mode zeros|border|reflection; align_corners 0|1. Errors name the attribute.
Result<GridSampleParams> parse_grid_sample_attrs(const AttributeMap& attrs, int opset);

// ---- AffineGrid (opset 20: theta, size; align_corners) --------------------------------------------
// The grid GridSample reads, from affine matrices. What the CPU reference and the CUDA op
// (affine_grid.cpp, affine_grid.cu) read one way: the attribute, the geometry from theta's dims and
// size's values, and each base coordinate.
Result<bool> affine_grid_align_corners(const AttributeMap& attrs);
struct AffineGridGeometry {
  int spatial = 2;               // 2 (H, W) or 3 (D, H, W)
  int64_t batch = 0;             // N
  std::vector<int64_t> extents;  // the spatial extents, outermost first
  int64_t points = 0;            // N times the spatial extents: the output holds points * spatial values
};
Result<AffineGridGeometry> affine_grid_geometry(const std::vector<int64_t>& theta_dims,
                                                const std::vector<int64_t>& size);
// The normalized coordinate of position i along an axis of `extent` positions: the one formula of
// the CPU reference and the CUDA kernel (host and device).
#if defined(__CUDACC__)
__host__ __device__
#endif
inline double affine_grid_coordinate(int64_t i, int64_t extent, bool align_corners) {
  if (align_corners) {
    if (extent <= 1) return -1.0;
    return -1.0 + static_cast<double>(i) * (2.0 / static_cast<double>(extent - 1));
  }
  const double step = 2.0 / static_cast<double>(extent);
  return (-1.0 + step / 2.0) + static_cast<double>(i) * step;
}

// ---- CPU references (roi_align.cpp, grid_sample.cpp, affine_grid.cpp) ----------------------------------------------------------------
// The kernels compute in double whatever the storage dtype (float16/float32/float64) and round once
// on store.
namespace cpu {

// x (N, C, H, W); rois (K, 4) as (x1, y1, x2, y2) with `batch_indices` (K) int64/int32, or, when
// `batch_indices` is null, rois (K, 5) as (batch_index, x1, y1, x2, y2) (mmcv's layout; the index
// is truncated toward zero). y (K, C, output_height, output_width). rois share x's dtype. A batch
// index outside [0, N), a non-finite roi coordinate or a bin of more than 2^24 samples is an error
// naming the roi. `op` prefixes the messages.
Status roi_align_run(const char* op, const RoiAlignParams& p, const TensorView& x, const TensorView& rois,
                     const TensorView* batch_indices, const TensorView& y);

// The gradient of x, dx (N, C, H, W) in x's dtype, from dy (K, C, output_height, output_width): each
// sample's bilinear weights times dy (over the sample count for average pooling); for max pooling
// only the winning sample's (or, for ONNX's weighted-corner max, the winning corner's), the first
// among equals. rois get no gradient (as in torchvision and mmcv). Checks as the forward's.
Status roi_align_backward_run(const char* op, const RoiAlignParams& p, const TensorView& x, const TensorView& rois,
                              const TensorView* batch_indices, const TensorView& dy, const TensorView& dx);

// x (N, C, D1..Dk) and grid (N, O1..Ok, k) with k = 2 or 3; grid's last axis holds the normalized
// coordinates in reverse axis order (x = width first). y (N, C, O1..Ok) in x's dtype; grid may have
// another float dtype. A non-finite coordinate samples nothing (0); no coordinate reads outside x.
Status grid_sample_run(const char* op, const GridSampleParams& p, const TensorView& x, const TensorView& grid,
                       const TensorView& y);

// The 2-D forward's gradients: dx (N, C, H, W) and dgrid (N, H_out, W_out, 2) from dy (N, C, H_out,
// W_out), each in its forward tensor's dtype, computed in double. The grid's gradient is the
// derivative of the interpolation weights through the coordinate's unnormalization and padding
// (0 where border or reflection clamps it, and for nearest); a non-finite coordinate gets 0.
Status grid_sample_backward_run(const char* op, const GridSampleParams& p, const TensorView& x, const TensorView& grid,
                                const TensorView& dy, const TensorView& dx, const TensorView& dgrid);

// Builtin kernels (ONNX RoiAlign, GridSample).
Status roi_align(ExecContext& ctx);
Status grid_sample(ExecContext& ctx);
Status affine_grid(ExecContext& ctx);

}  // namespace cpu
}  // namespace graft

#ifdef GRAFT_WITH_CUDA
// ---- CUDA launchers (roi_align.cu, grid_sample.cu), which follow the CPU references step by step -----------------
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

// The gradient of x, dx (N, C, H, W), from dy (K, C, oh, ow); x, rois, dy and dx of KType t
// (float32/float16), accumulated in float as the grid sampler's. The rois get no gradient.
cudaError_t launch_roi_align_backward(KType t, const void* x, const void* rois, const void* batch_idx, bool idx64,
                                     const void* dy, void* dx, const RoiAlignArgs& a, cudaStream_t s);

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

// The launch arguments for x (N, C, in...) and grid (N, out..., nd), nd = x's rank - 2 (2 or 3; the
// caller checks the shapes), with p's modes: ONNX's GridSample and mmdeploy's grid_sampler alike.
GridSampleArgs grid_sample_args(const GridSampleParams& p, const std::vector<int64_t>& x_dims,
                                const std::vector<int64_t>& grid_dims);

// The 2-D backward (nd = 2): dx (N, C, H, W) and dgrid (N, H_out, W_out, 2) from dy (N, C, H_out,
// W_out); all of KType t (float32/float16), computed and accumulated in float (float16 dx through
// a stream-ordered float scratch, cudaMallocAsync: not for use inside a graph capture).
cudaError_t launch_grid_sample_backward(KType t, const void* x, const void* grid, const void* dy, void* dx,
                                        void* dgrid, const GridSampleArgs& a, cudaStream_t s);

// x (N, C, in...) and grid (N, out..., nd) of KType t (float32/float16); y (N, C, out...).
cudaError_t launch_grid_sample(KType t, const void* x, const void* grid, void* y, const GridSampleArgs& a,
                               cudaStream_t s);

}  // namespace graft::cuda::k
#endif
