// CPU reference kernels for the sampling ops RoiAlign and GridSample; their attributes are read by
// src/ops/sampling_attrs.h.
//
// The kernels are plain functions over TensorViews so that the builtin ONNX ops and their mmdeploy
// counterparts (ops/roi_align: MMCVRoiAlign, ops/grid_sample: grid_sampler; SDK ops with other
// attributes and input layouts) run the same code. Every kernel computes in double whatever the
// storage dtype (float16/float32/float64) and rounds once on store.
#pragma once

#include <cstdint>

#include "graft/attribute.h"
#include "graft/status.h"
#include "graft/tensor.h"
#include "ops/operator.h"
#include "ops/sampling_attrs.h"

namespace graft::cpu {

// ---- RoiAlign (Mask R-CNN, He et al., arXiv 1703.06870) ------------------------------------------
// x (N, C, H, W); rois (K, 4) as (x1, y1, x2, y2) with `batch_indices` (K) int64/int32, or, when
// `batch_indices` is null, rois (K, 5) as (batch_index, x1, y1, x2, y2) (mmcv's layout; the index
// is truncated toward zero). y (K, C, output_height, output_width). rois share x's dtype. A batch
// index outside [0, N), a non-finite roi coordinate or a bin of more than 2^24 samples is an error
// naming the roi. `op` prefixes the messages.
Status roi_align_run(const char* op, const RoiAlignParams& p, const TensorView& x, const TensorView& rois,
                     const TensorView* batch_indices, const TensorView& y);

// ---- GridSample (Spatial Transformer Networks, Jaderberg et al., arXiv 1506.02025) ----------------
// x (N, C, D1..Dk) and grid (N, O1..Ok, k) with k = 2 or 3; grid's last axis holds the normalized
// coordinates in reverse axis order (x = width first). y (N, C, O1..Ok) in x's dtype; grid may have
// another float dtype. A non-finite coordinate samples nothing (0); no coordinate reads outside x.
Status grid_sample_run(const char* op, const GridSampleParams& p, const TensorView& x, const TensorView& grid,
                       const TensorView& y);

// Builtin kernels (ONNX RoiAlign, GridSample).
Status roi_align(ExecContext& ctx);
Status grid_sample(ExecContext& ctx);

}  // namespace graft::cpu
