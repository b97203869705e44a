// Schemas of the ONNX ops whose output size depends on the input data, not only on input shapes:
// NonZero and NonMaxSuppression. Their count dimension is a fresh symbol (InferContext::unknown_dim)
// at build time and at run time alike; the kernels (src/backends/cpu/detection.cpp) allocate the
// output once they have counted (OpEntry::output_shape_from_kernel), and every later node is
// inferred from the tensor actually produced.
#include <string>

#include "backends/cpu/detection.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {
namespace {

using namespace infer;

// NonZero (opset 9/13): int64 [rank, count], the indices of the nonzero elements in row-major order.
// A scalar is read as a one-element vector (NumPy and ONNX Runtime do the same): [1, count].
Status infer_non_zero(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  const TensorDesc& x = ctx.input(0);
  if (!x.shape) {
    ctx.set_output(0, TensorDesc(kI64, Shape{ctx.unknown_dim(), ctx.unknown_dim()}));
    return Status::ok();
  }
  const int64_t rows = std::max<int64_t>(x.rank(), 1);
  // No elements at all: the count is 0 whatever the data.
  bool empty = false;
  for (const Dim& d : *x.shape) empty = empty || (d.is_const() && d.value() == 0);
  ctx.set_output(0, TensorDesc(kI64, Shape{Dim(rows), empty ? Dim(0) : ctx.unknown_dim()}));
  return Status::ok();
}

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

void append_detection_ops(std::vector<OpEntry>& out) {
  const std::vector<OpEntry> ops = {
      keeps_float32({"NonZero", 9, infer_non_zero, cpu::non_zero, /*output_shape_from_kernel=*/true}),
      {"NonMaxSuppression", 10, infer_non_max_suppression, cpu::non_max_suppression,
       /*output_shape_from_kernel=*/true},
  };
  out.insert(out.end(), ops.begin(), ops.end());
}

}  // namespace graft
