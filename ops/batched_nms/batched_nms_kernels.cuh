// CUDA kernel of the batched NMS ops (BatchedNMSDynamic_TRT, TRTBatchedNMS). A plain launcher over
// raw device pointers, no graft or framework types; it returns the launch error and never
// allocates or synchronizes (CUDA-graph capture works). Every decision is computed in double as the
// CPU reference does (same threshold test, tie order, IoU formula and operation order).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace graft::cuda {

enum class BatchedNmsLayout {
  kTensorRt,  // num_detections, boxes (B, K, 4), scores (B, K), classes (B, K) as floats
  kMmdeploy,  // dets (B, K, 5), labels int32 (B, K), index int32 (B, K) (optional)
};

struct BatchedNmsArgs {
  int64_t batch = 0, boxes = 0, classes = 0;  // scores (batch, boxes, classes)
  bool share_location = true;                 // boxes (batch, boxes, 1, 4), else (batch, boxes, classes, 4)
  int64_t background_class = -1;              // -1: none
  int64_t top_k = 1;                          // candidates per class into the suppression, 1..boxes
  int64_t keep_top_k = 1;                     // detections per image (the outputs' second dimension)
  double score_threshold = 0.0;               // a candidate's score is > this
  double iou_threshold = 0.5;                 // suppressed when IoU > this
  bool order_corners = true;                  // IoU of each box's ordered corners, else as given
  double size_offset = 0.0;                   // added to a box's width and height for its area
  double intersection_offset = 0.0;           // added to the intersection's width and height
  bool clip_boxes = false;                    // output boxes clamped to [0, 1]
  BatchedNmsLayout layout = BatchedNmsLayout::kTensorRt;
};

// The outputs of one layout (the other layout's pointers stay null).
template <typename T>
struct BatchedNmsOutputs {
  int32_t* num_detections = nullptr;  // kTensorRt
  T *boxes = nullptr, *scores = nullptr, *classes = nullptr;
  T* dets = nullptr;  // kMmdeploy
  int32_t *labels = nullptr, *index = nullptr;
};

// Bytes of device workspace the launchers need for these shapes and top_k.
size_t batched_nms_workspace_bytes(int64_t batch, int64_t boxes, int64_t classes, int64_t top_k);

// Returns cudaErrorInvalidValue for sizes the kernel cannot index (boxes * classes or batch *
// classes above 2^31 - 1) or a too small workspace.
cudaError_t batched_nms_f32(const BatchedNmsArgs& args, const float* boxes, const float* scores,
                            const BatchedNmsOutputs<float>& out, void* workspace, size_t workspace_bytes,
                            cudaStream_t stream);
cudaError_t batched_nms_f16(const BatchedNmsArgs& args, const __half* boxes, const __half* scores,
                            const BatchedNmsOutputs<__half>& out, void* workspace, size_t workspace_bytes,
                            cudaStream_t stream);
cudaError_t batched_nms_f64(const BatchedNmsArgs& args, const double* boxes, const double* scores,
                            const BatchedNmsOutputs<double>& out, void* workspace, size_t workspace_bytes,
                            cudaStream_t stream);

}  // namespace graft::cuda
