#include "ops/detection_attrs.h"

#include <string>

#include "graph/graph.h"

namespace graft {
namespace {

std::string input_name(const Node* node, size_t i, const char* fallback) {
  if (node && i < node->inputs.size() && node->inputs[i]) return node->inputs[i]->name;
  return fallback;
}

}  // namespace

Result<NmsDims> nms_dims(const Tensor& boxes, const Tensor& scores) {
  const auto& bd = boxes.dims();
  const auto& sd = scores.dims();
  if (bd.size() != 3 || bd[2] != 4 || sd.size() != 3 || sd[0] != bd[0] || sd[2] != bd[1])
    return error(StatusCode::kInvalidArgument,
                 "NonMaxSuppression needs boxes [batch, boxes, 4] and scores [batch, "
                 "classes, boxes] that agree, got boxes ",
                 TensorDesc(boxes.dtype(), shape_from_values(bd)).to_string(), " and scores ",
                 TensorDesc(scores.dtype(), shape_from_values(sd)).to_string());
  return NmsDims{bd[0], bd[1], sd[1]};
}

Status nms_check_scalar_inputs(const Node* node, const std::vector<const Tensor*>& inputs) {
  static const char* const kWhat[] = {"max_output_boxes_per_class", "iou_threshold", "score_threshold"};
  for (size_t i = 2; i < 5 && i < inputs.size(); ++i) {
    const Tensor* t = inputs[i];
    if (t && t->numel() != 1)
      return error(StatusCode::kInvalidArgument, "input ", static_cast<uint64_t>(i), " (", kWhat[i - 2], ", '",
                   input_name(node, i, kWhat[i - 2]), "') must hold one value, got ", t->numel());
  }
  return Status::ok();
}

Status nms_check_iou_threshold(const Node* node, float iou_threshold) {
  if (iou_threshold >= 0.0f && iou_threshold <= 1.0f) return Status::ok();
  return error(StatusCode::kInvalidArgument, "input 3 (iou_threshold, '", input_name(node, 3, "iou_threshold"),
               "') must lie in [0, 1], got ", static_cast<double>(iou_threshold));
}

Result<bool> nms_center_point_box(const AttributeMap& attrs) {
  GRAFT_ASSIGN_OR_RETURN(int64_t center, attrs.get_int("center_point_box", 0));
  if (center != 0 && center != 1)
    return Status(error(StatusCode::kInvalidModel, "center_point_box must be 0 or 1, got ", center))
        .with_attribute("center_point_box");
  return center == 1;
}

}  // namespace graft
