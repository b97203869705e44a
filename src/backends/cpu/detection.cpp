#include "backends/cpu/detection.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "ops/detection_attrs.h"

namespace graft::cpu {
namespace {

// A box as the extents NonMaxSuppression compares: min/max along each axis, and its area.
struct Extent {
  float lo0, lo1, hi0, hi1, area;
};

// center_point_box 0: [y1, x1, y2, x2], either diagonal pair of corners. 1: [x_center, y_center,
// width, height]. The IoU is symmetric in the two axes, so which one is "x" does not matter.
Extent extent_of(const float* b, bool center) {
  Extent e;
  if (center) {
    e.lo0 = b[0] - b[2] / 2.0f;
    e.hi0 = b[0] + b[2] / 2.0f;
    e.lo1 = b[1] - b[3] / 2.0f;
    e.hi1 = b[1] + b[3] / 2.0f;
  } else {
    e.lo0 = std::min(b[0], b[2]);
    e.hi0 = std::max(b[0], b[2]);
    e.lo1 = std::min(b[1], b[3]);
    e.hi1 = std::max(b[1], b[3]);
  }
  e.area = (e.hi0 - e.lo0) * (e.hi1 - e.lo1);
  return e;
}

// True when `b` overlaps the already selected `a` by more than the threshold (strictly, as the
// ONNX specification and ONNX Runtime do). Boxes without area, or not overlapping, never suppress.
bool suppresses(const Extent& a, const Extent& b, float iou_threshold) {
  const float lo0 = std::max(a.lo0, b.lo0), hi0 = std::min(a.hi0, b.hi0);
  const float lo1 = std::max(a.lo1, b.lo1), hi1 = std::min(a.hi1, b.hi1);
  if (!(hi0 > lo0) || !(hi1 > lo1)) return false;
  if (!(a.area > 0.0f) || !(b.area > 0.0f)) return false;
  const float inter = (hi0 - lo0) * (hi1 - lo1);
  const float uni = a.area + b.area - inter;
  if (!(uni > 0.0f)) return false;
  return inter / uni > iou_threshold;
}

}  // namespace

Status non_zero(ExecContext& ctx) {
  const Tensor* x = input_or_null(ctx, 0);
  if (!x || ctx.outputs.empty() || !ctx.outputs[0])
    return error(StatusCode::kInternal, "NonZero kernel called without its input or output");
  const int64_t n = x->numel();
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < n; ++i)
    if (x->get(i) != 0.0) hits.push_back(i);  // NaN is nonzero; -0.0 is zero
  const int64_t rank = x->rank();
  const int64_t rows = std::max<int64_t>(rank, 1);
  const int64_t count = static_cast<int64_t>(hits.size());
  GRAFT_ASSIGN_OR_RETURN(Tensor * y, allocate_output(ctx, 0, DataType::kInt64, {rows, count}));
  int64_t* out = y->data_as<int64_t>();
  if (rank == 0) {
    for (int64_t k = 0; k < count; ++k) out[k] = 0;
    return Status::ok();
  }
  const std::vector<int64_t>& dims = x->dims();
  for (int64_t k = 0; k < count; ++k) {
    int64_t rest = hits[static_cast<size_t>(k)];
    for (int64_t a = rank - 1; a >= 0; --a) {
      const int64_t d = dims[static_cast<size_t>(a)];
      out[a * count + k] = rest % d;  // d > 0: an element exists
      rest /= d;
    }
  }
  return Status::ok();
}

Status non_max_suppression(ExecContext& ctx) {
  const Tensor* boxes = input_or_null(ctx, 0);
  const Tensor* scores = input_or_null(ctx, 1);
  if (!boxes || !scores || ctx.outputs.empty() || !ctx.outputs[0])
    return error(StatusCode::kInternal,
                 "NonMaxSuppression kernel called without boxes, scores or its output");
  if (boxes->dtype() != DataType::kFloat32 || scores->dtype() != DataType::kFloat32)
    return error(StatusCode::kUnsupported, "NonMaxSuppression takes float32 boxes and scores, got ",
                 dtype_name(boxes->dtype()), " and ", dtype_name(scores->dtype()));
  GRAFT_ASSIGN_OR_RETURN(NmsDims dims, nms_dims(*boxes, *scores));
  const int64_t batches = dims.batches, num_boxes = dims.boxes, classes = dims.classes;
  // Optional scalar inputs: each must hold exactly one value when given.
  GRAFT_RETURN_IF_ERROR(nms_check_scalar_inputs(ctx.node, ctx.inputs));
  const Tensor* max_t = input_or_null(ctx, 2);
  const Tensor* iou_t = input_or_null(ctx, 3);
  const Tensor* score_t = input_or_null(ctx, 4);
  // Absent or <= 0: nothing is selected. A huge value is bounded by the number of boxes.
  const int64_t max_per_class = max_t ? std::max<int64_t>(max_t->data_as<int64_t>()[0], 0) : 0;
  const int64_t per_class = std::min(max_per_class, num_boxes);
  const float iou_threshold = iou_t ? iou_t->data_as<float>()[0] : 0.0f;
  GRAFT_RETURN_IF_ERROR(nms_check_iou_threshold(ctx.node, iou_threshold));
  const bool has_score_threshold = score_t != nullptr;
  const float score_threshold = score_t ? score_t->data_as<float>()[0] : 0.0f;
  GRAFT_ASSIGN_OR_RETURN(bool center, nms_center_point_box(attrs_of(ctx)));

  const float* box_data = boxes->data_as<const float>();
  const float* score_data = scores->data_as<const float>();
  std::vector<int64_t> selected;  // (batch, class, box) triples, flat
  std::vector<Extent> extents(static_cast<size_t>(num_boxes));
  std::vector<int64_t> order, kept;
  for (int64_t b = 0; b < batches && per_class > 0; ++b) {
    for (int64_t i = 0; i < num_boxes; ++i)
      extents[static_cast<size_t>(i)] = extent_of(box_data + (b * num_boxes + i) * 4, center);
    for (int64_t c = 0; c < classes; ++c) {
      const float* s = score_data + (b * classes + c) * num_boxes;
      // Candidates: scores above the threshold (strictly); a NaN score is never a candidate.
      order.clear();
      for (int64_t i = 0; i < num_boxes; ++i)
        if (!std::isnan(s[i]) && (!has_score_threshold || s[i] > score_threshold)) order.push_back(i);
      // Highest score first; equal scores by lower box index.
      std::sort(order.begin(), order.end(),
                [&](int64_t x, int64_t y) { return s[x] > s[y] || (s[x] == s[y] && x < y); });
      kept.clear();
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= per_class) break;
        bool suppressed = false;
        for (int64_t k : kept)
          if (suppresses(extents[static_cast<size_t>(k)], extents[static_cast<size_t>(i)], iou_threshold)) {
            suppressed = true;
            break;
          }
        if (!suppressed) kept.push_back(i);
      }
      for (int64_t i : kept) selected.insert(selected.end(), {b, c, i});
    }
  }
  const int64_t count = static_cast<int64_t>(selected.size() / 3);
  GRAFT_ASSIGN_OR_RETURN(Tensor * y, allocate_output(ctx, 0, DataType::kInt64, {count, 3}));
  std::copy(selected.begin(), selected.end(), y->data_as<int64_t>());
  return Status::ok();
}

}  // namespace graft::cpu
