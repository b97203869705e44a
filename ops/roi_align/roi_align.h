// mmdeploy's MMCVRoiAlign (mmcv's roi_align exported by mmdeploy) as a graft custom op. ONNX's own
// RoiAlign is a builtin op (src/ops/sampling); both run the kernel in
// src/ops/sampling/roi_align.cpp. README.md in this folder has the math and the differences.
#pragma once

#include "graft/op.h"

namespace graft {

// mmdeploy::MMCVRoiAlign version "1": input (N, C, H, W), rois (K, 5) as (batch_index, x1, y1, x2,
// y2) -> output (K, C, output_height, output_width). Attributes output_height, output_width,
// spatial_scale, sampling_ratio, mode ("avg" | "max": mmcv's pool_mode), aligned (0 | 1).
// float32/float16/float64 on the CPU, float32/float16 on CUDA. The lookup ignores the domain when the name is unique, so
// older exports in domain "mmcv" find it too.
OpDef define_mmcv_roi_align();

// TensorRT's ROIAlign_TRT plugin (version "1"), ONNX's RoiAlign with integer-coded attributes: X (N,
// C, H, W), rois (K, 4) as (x1, y1, x2, y2), batch_indices (K) int32/int64 -> Y (K, C, output_height,
// output_width). Attributes coordinate_transformation_mode (1: half_pixel, 0: output_half_pixel),
// mode (1: avg, 0: max as ONNX defines it), output_height, output_width, sampling_ratio,
// spatial_scale. float32/float16/float64 on the CPU, float32/float16 on CUDA.
OpDef define_roi_align_trt();

}  // namespace graft
