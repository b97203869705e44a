// Batched multi-class NMS with per-class pre-selection and fixed-size outputs, under the two names
// detection exports use for it: TensorRT's BatchedNMSDynamic_TRT and mmdeploy's TRTBatchedNMS.
// One algorithm (README.md in this folder); the two differ in attribute names, the IoU formula's
// details and the output layout. CPU reference kernel and, when built with CUDA, a CUDA kernel that
// keeps the same detections.
#pragma once

#include <cstdint>

#include "graft/op.h"

namespace graft {

// TensorRT's BatchedNMSDynamic_TRT (version "1", namespace ""; graft registers it in
// ai.onnx.contrib and TensorRT ignores the domain): boxes (B, N, 1 or C, 4), scores (B, N, C) or
// (B, N, C, 1) -> num_detections int32 (B, 1), nmsed_boxes (B, keepTopK, 4), nmsed_scores
// (B, keepTopK), nmsed_classes (B, keepTopK) in the boxes' float dtype.
OpDef define_batched_nms_dynamic_trt();

// mmdeploy's mmdeploy::TRTBatchedNMS (version "1"): boxes (B, N, 4) or (B, N, 1 or C, 4), scores
// (B, N, C) -> dets (B, keep_topk, 5) = box and score, labels int32 (B, keep_topk), and index int32
// (B, keep_topk) when the node has a third output.
OpDef define_trt_batched_nms();

// TensorRT refuses topK above this (its NMS kernel's block limit); graft keeps the rule.
inline constexpr int64_t kBatchedNmsMaxTopK = 4096;
// The largest keep_topk graft accepts (the outputs are allocated to it whatever the data).
inline constexpr int64_t kBatchedNmsMaxKeepTopK = int64_t{1} << 20;

}  // namespace graft
