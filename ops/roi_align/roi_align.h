// mmdeploy's MMCVRoiAlign (mmcv's roi_align exported by mmdeploy) as a graft custom op. ONNX's own
// RoiAlign is a builtin op (src/ops/sampling_ops.cpp); both run the kernel in
// src/backends/cpu/sampling.cpp. README.md in this folder has the math and the differences.
#pragma once

#include "graft/op.h"

namespace graft {

// mmdeploy::MMCVRoiAlign version "1": input (N, C, H, W), rois (K, 5) as (batch_index, x1, y1, x2,
// y2) -> output (K, C, output_height, output_width). Attributes output_height, output_width,
// spatial_scale, sampling_ratio, mode ("avg" | "max": mmcv's pool_mode), aligned (0 | 1).
// float32/float16/float64 on the CPU. The lookup ignores the domain when the name is unique, so
// older exports in domain "mmcv" find it too.
OpDef define_mmcv_roi_align();

}  // namespace graft
