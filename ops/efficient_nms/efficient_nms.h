// EfficientNMS_TRT: batched multi-class non-maximum suppression with fixed-size outputs, following
// the field conventions of TensorRT's EfficientNMS plugin, as a graft custom op with a CPU reference
// kernel and, when built with CUDA, a CUDA kernel that keeps the same detections. See README.md in this folder for the algorithm, inputs, outputs and attributes.
#pragma once

#include <cstdint>

#include "graft/op.h"

namespace graft {

// ai.onnx.contrib::EfficientNMS_TRT version "1" (TensorRT ignores the domain): boxes (B, N, 4) or
// (B, N, C, 4), scores (B, N, C), optional anchors (1 or B, N, 4) -> num_detections int32 (B, 1),
// detection_boxes (B, max_output_boxes, 4), detection_scores (B, max_output_boxes),
// detection_classes int32 (B, max_output_boxes). Float inputs float32/float16/float64 (CPU and CUDA).
OpDef define_efficient_nms();

// TensorRT's plugin sorts the candidates that pass the score threshold and runs NMS over the best
// 4096 of them only; graft does the same, so the results agree when more candidates pass.
inline constexpr int64_t kEfficientNmsMaxCandidates = 4096;
// The largest max_output_boxes graft accepts (the outputs are allocated to it whatever the data).
inline constexpr int64_t kEfficientNmsMaxOutputBoxes = int64_t{1} << 20;

}  // namespace graft
