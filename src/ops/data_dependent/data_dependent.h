// The data-dependent family: the ONNX ops whose output size depends on the values of their inputs,
// not only on their shapes (NonZero, NonMaxSuppression, Unique). One file per op: non_zero.cpp,
// non_max_suppression.cpp and unique.cpp (definition and CPU reference), the .cu of the same names
// (kernels and the CUDA op, over data_dependent_cuda.cuh). This header holds what both sides
// read: NonMaxSuppression's inputs and attribute, checked one way so that an error reads the same
// whichever backend finds it.
#pragma once

#include <cstdint>
#include <vector>

#include "graft/attribute.h"
#include "graft/status.h"
#include "graft/tensor.h"

namespace graft {

struct Node;


// boxes [batches, boxes, 4] and scores [batches, classes, boxes] that agree.
struct NmsDims {
  int64_t batches = 0, boxes = 0, classes = 0;
};
Result<NmsDims> nms_dims(const Tensor& boxes, const Tensor& scores);

// The optional inputs 2 to 4 (max_output_boxes_per_class, iou_threshold, score_threshold), each
// holding one value when given; errors name the input (`node` may be null).
Status nms_check_scalar_inputs(const Node* node, const std::vector<const Tensor*>& inputs);

// iou_threshold must lie in [0, 1] (NaN does not); the error names input 3.
Status nms_check_iou_threshold(const Node* node, float iou_threshold);

// center_point_box: 0 ([y1, x1, y2, x2] corners) or 1 ([x_center, y_center, width, height]).
Result<bool> nms_center_point_box(const AttributeMap& attrs);

}  // namespace graft
