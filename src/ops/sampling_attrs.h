// RoiAlign's and GridSample's attributes, read one way by the schemas (src/ops/sampling_ops.cpp),
// the CPU references (src/backends/cpu/sampling.h), the mmdeploy ops (ops/roi_align,
// ops/grid_sample) and the CUDA ops.
#pragma once

#include <cstdint>

#include "graft/attribute.h"
#include "graft/status.h"

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

}  // namespace graft
