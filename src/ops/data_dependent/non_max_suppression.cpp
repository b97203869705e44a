// NonMaxSuppression's definition and CPU reference (CUDA: non_max_suppression.cu), with its inputs'
// and attribute's checks that data_dependent.h declares for both sides. Its count dimension is a
// fresh symbol (InferContext::unknown_dim) at build time and at run time alike; the CPU kernel
// allocates its output once it has counted (OpEntry::output_shape_from_kernel), and every later node
// is inferred from the tensor actually produced.
#include "ops/data_dependent/data_dependent.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/element_traits.h"
#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"
#include "core/checked_math.h"
#include "graph/graph.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- NonMaxSuppression's inputs and attribute (data_dependent.h) ----------------------------

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

// ---- CPU reference --------------------------------------------------------------------------
// The kernel allocates its outputs with allocate_output once it has counted.

namespace cpu {

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

}  // namespace cpu

// ---- schema ---------------------------------------------------------------------------------

namespace {

using namespace infer;

// A scalar-like optional input (shape [] or [1]) of one of `allowed` dtypes; errors name the input.
Status check_scalar_input(InferContext& ctx, size_t i, const char* what,
                          const std::vector<DataType>& allowed) {
  if (!ctx.has_input(i)) return Status::ok();
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, i, allowed));
  const TensorDesc& d = ctx.input(i);
  if (!d.shape) return Status::ok();
  bool one = d.shape->size() <= 1;
  for (const Dim& k : *d.shape) one = one && (!k.is_const() || k.value() == 1);
  if (!one)
    return ctx.fail("input ", static_cast<int64_t>(i), " (", what, ", '", ctx.node().inputs[i]->name,
                    "') must be a scalar or a one-element vector, got ", d.to_string());
  return Status::ok();
}

// NonMaxSuppression (opset 10/11): boxes [B, N, 4], scores [B, C, N], optional
// max_output_boxes_per_class (int64), iou_threshold and score_threshold (float) -> selected_indices
// int64 [count, 3] of (batch, class, box).
Status infer_non_max_suppression(InferContext& ctx) {
  if (ctx.num_inputs() < 2 || ctx.num_inputs() > 5)
    return ctx.fail(
        "takes 2 to 5 inputs (boxes, scores, max_output_boxes_per_class, iou_threshold, "
        "score_threshold), got ",
        static_cast<uint64_t>(ctx.num_inputs()));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, {kF32}));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, {kF32}));
  GRAFT_RETURN_IF_ERROR(check_scalar_input(ctx, 2, "max_output_boxes_per_class", {kI64}));
  GRAFT_RETURN_IF_ERROR(check_scalar_input(ctx, 3, "iou_threshold", {kF32}));
  GRAFT_RETURN_IF_ERROR(check_scalar_input(ctx, 4, "score_threshold", {kF32}));
  auto cpb = ctx.attrs().get_int("center_point_box", 0);
  if (!cpb) return Status(cpb.status()).with_attribute("center_point_box");
  if (cpb.value() != 0 && cpb.value() != 1)
    return ctx
        .fail(
            "center_point_box must be 0 ([y1, x1, y2, x2] corners) or 1 ([x_center, y_center, width, "
            "height]), got ",
            cpb.value())
        .with_attribute("center_point_box");
  const TensorDesc& boxes = ctx.input(0);
  const TensorDesc& scores = ctx.input(1);
  bool none =
      false;  // a batch, class or box count of 0, or max_output_boxes_per_class <= 0: nothing selected
  if (boxes.shape) {
    const Shape& b = *boxes.shape;
    if (b.size() != 3 || (b[2].is_const() && b[2].value() != 4))
      return ctx.fail("boxes ('", ctx.node().inputs[0]->name, "') must have shape [batch, boxes, 4], got ",
                      boxes.to_string());
  }
  if (scores.shape && scores.shape->size() != 3)
    return ctx.fail("scores ('", ctx.node().inputs[1]->name,
                    "') must have shape [batch, classes, boxes], got ", scores.to_string());
  if (boxes.shape && scores.shape) {
    const Shape& b = *boxes.shape;
    const Shape& s = *scores.shape;
    if (b[0].is_const() && s[0].is_const() && b[0].value() != s[0].value())
      return ctx.fail("boxes ", boxes.to_string(), " and scores ", scores.to_string(),
                      " disagree on the batch size");
    if (b[1].is_const() && s[2].is_const() && b[1].value() != s[2].value())
      return ctx.fail("boxes ", boxes.to_string(), " and scores ", scores.to_string(),
                      " disagree on the number of boxes (boxes dimension 1, scores dimension 2)");
    for (const Dim& d : {b[0], b[1], s[1]}) none = none || (d.is_const() && d.value() == 0);
  }
  if (ctx.has_input(2)) {
    if (auto v = ctx.input_dims_value(2); v && v->size() == 1 && (*v)[0].is_const() && (*v)[0].value() <= 0)
      none = true;
  } else {
    none = true;  // absent: 0, so no box is output (ONNX's default)
  }
  ctx.set_output(0, TensorDesc(kI64, Shape{none ? Dim(0) : ctx.unknown_dim(), Dim(3)}));
  return Status::ok();
}

}  // namespace

void append_non_max_suppression_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"NonMaxSuppression", 10, infer_non_max_suppression, cpu::non_max_suppression,
                        /*output_shape_from_kernel=*/true});
}

}  // namespace graft
