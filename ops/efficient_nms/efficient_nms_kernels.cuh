// CUDA kernel of EfficientNMS_TRT. A plain launcher over raw device pointers, no graft or framework
// types; it returns the launch error and never allocates or synchronizes (CUDA-graph capture works).
// Every decision is computed in double exactly as the CPU reference does (same threshold test, tie
// order, IoU formula and operation order), so the kernel keeps the same detections for every dtype.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace graft::cuda {

// The most candidates per image the kernel examines (sorted best first); must equal the CPU's cap.
inline constexpr int64_t kEfficientNmsCudaMaxCandidates = 4096;

struct EfficientNmsArgs {
  int64_t batch = 0, boxes = 0, classes = 0;  // scores (batch, boxes, classes)
  bool per_class_boxes = false;               // boxes (batch, boxes, classes, 4), else (batch, boxes, 4)
  int64_t anchor_rows = 0;                    // 0: no anchors; 1: shared; batch: one row per image
  int64_t background_class = -1;              // -1: none
  int box_coding = 0;                         // 0: corners; 1: centre and size
  bool score_activation = false, class_agnostic = false;
  double raw_score_threshold = 0.0;  // compared with the raw score (logit of the threshold with the sigmoid)
  double iou_threshold = 0.5;
  int64_t max_output_boxes = 100;
  int64_t max_candidates = kEfficientNmsCudaMaxCandidates;
};

// Bytes of device workspace the launchers need for these shapes (0 when there is nothing to sort).
size_t efficient_nms_workspace_bytes(int64_t batch, int64_t boxes, int64_t classes, int64_t max_candidates);

// anchors may be null (anchor_rows 0). Returns cudaErrorInvalidValue for sizes the kernel cannot
// index (boxes * classes above 2^31 - 1, batch above 2^31 - 1) or a too small workspace.
cudaError_t efficient_nms_f32(const EfficientNmsArgs& args, const float* boxes, const float* scores,
                              const float* anchors, int32_t* num_detections, float* detection_boxes,
                              float* detection_scores, int32_t* detection_classes, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream);
cudaError_t efficient_nms_f16(const EfficientNmsArgs& args, const __half* boxes, const __half* scores,
                              const __half* anchors, int32_t* num_detections, __half* detection_boxes,
                              __half* detection_scores, int32_t* detection_classes, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream);
cudaError_t efficient_nms_f64(const EfficientNmsArgs& args, const double* boxes, const double* scores,
                              const double* anchors, int32_t* num_detections, double* detection_boxes,
                              double* detection_scores, int32_t* detection_classes, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream);

}  // namespace graft::cuda
