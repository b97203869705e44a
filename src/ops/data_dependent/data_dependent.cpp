// The data-dependent family's definitions and CPU references: NonZero, NonMaxSuppression and Unique
// (CUDA: data_dependent.cu). Their count dimension is a fresh symbol (InferContext::unknown_dim) at
// build time and at run time alike; the CPU kernels allocate their outputs once they have counted
// (OpEntry::output_shape_from_kernel), and every later node is inferred from the tensor actually
// produced.
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
// Each kernel allocates its outputs with allocate_output once it has counted.

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

// Three-way comparison of two elements under Unique's order: numbers by value (so -0 == 0), NaN
// after every number and equal to every NaN. A plain `<` would make NaN incomparable, and a sort
// over it is undefined behaviour.
template <typename C>
int compare_values(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    const bool na = std::isnan(a), nb = std::isnan(b);
    if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
  }
  return a < b ? -1 : (b < a ? 1 : 0);
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

// ---- Unique -----------------------------------------------------------------------------------

// Unique (opset 11): the distinct elements of X (axis absent: X flattened) or its distinct slices
// along `axis`, ascending (sorted=1, the default; lexicographic for slices) or in order of first
// occurrence (sorted=0), with the optional outputs indices (first occurrence of each), inverse
// indices (for every element or slice of X, its position in Y) and counts. Floats compare by value
// (-0 equals 0, the first occurrence's bits are kept) and every NaN equals every other NaN and
// sorts after all numbers, as numpy.unique does.
Status unique(ExecContext& ctx) {
  const Tensor* x = input_or_null(ctx, 0);
  if (!x || ctx.outputs.empty() || !ctx.outputs[0])
    return error(StatusCode::kInternal, "Unique kernel called without X or its output Y");
  const AttributeMap& attrs = attrs_of(ctx);
  GRAFT_ASSIGN_OR_RETURN(int64_t sorted, attrs.get_int("sorted", 1));
  if (sorted != 0 && sorted != 1) return attr_error("sorted", "must be 0 or 1, got ", sorted);
  // The view [outer, n, inner]: n "slices" (elements when flattened), each of outer * inner
  // elements, compared lexicographically in row-major order of the remaining axes (numpy's order).
  const bool has_axis = attrs.has("axis");
  int64_t axis = 0;
  AxisView v;
  if (has_axis) {
    GRAFT_ASSIGN_OR_RETURN(int64_t a, attrs.get_int("axis", 0));
    auto na = normalize_axis(a, x->rank());
    if (!na) return Status(na.status()).with_attribute("axis");
    axis = na.value();
    v = axis_view(x->dims(), axis, false);
  } else {
    v.n = x->numel();
  }
  const int64_t n = v.n, outer = v.outer, inner = v.inner, slice = outer * inner;

  // cmp(a, b): three-way comparison of slices a and b.
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::vector<int64_t> group_of(static_cast<size_t>(n));  // slice -> its group in sorted order
  std::vector<int64_t> first;                             // per group (sorted order): first slice
  std::vector<int64_t> count;                             // per group: how many slices
  Status st = visit_all(
      x->dtype(),
      [&](auto tr) -> Status {
        using Tr = decltype(tr);
        const void* data = x->data();
        auto cmp = [&](int64_t a, int64_t b) {
          for (int64_t k = 0; k < slice; ++k) {
            const int64_t o = k / inner, i = k % inner;
            const int c = compare_values(Tr::load(data, (o * n + a) * inner + i),
                                         Tr::load(data, (o * n + b) * inner + i));
            if (c != 0) return c;
          }
          return 0;
        };
        // Stable, so within a group of equal slices the first occurrence comes first.
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
        for (size_t r = 0; r < order.size(); ++r) {
          if (r == 0 || cmp(order[r - 1], order[r]) != 0) {
            first.push_back(order[r]);
            count.push_back(0);
          }
          group_of[static_cast<size_t>(order[r])] = static_cast<int64_t>(first.size()) - 1;
          ++count.back();
        }
        return Status::ok();
      },
      [&](DataType t) { return bad_dtype(ctx, t); });
  GRAFT_RETURN_IF_ERROR(st);

  // Output position of each group: sorted order as it is, or by first occurrence.
  const int64_t u = static_cast<int64_t>(first.size());
  std::vector<int64_t> pos_of_group(static_cast<size_t>(u));
  std::vector<int64_t> group_at(static_cast<size_t>(u));  // output position -> group
  std::iota(group_at.begin(), group_at.end(), 0);
  if (!sorted)
    std::sort(group_at.begin(), group_at.end(), [&](int64_t a, int64_t b) {
      return first[static_cast<size_t>(a)] < first[static_cast<size_t>(b)];
    });
  for (int64_t p = 0; p < u; ++p) pos_of_group[static_cast<size_t>(group_at[static_cast<size_t>(p)])] = p;

  // Y: X's dims with the axis (or the flattened length) replaced by u; slices copied bytewise so
  // the first occurrence's exact bits (-0, NaN payloads) are kept.
  std::vector<int64_t> y_dims = has_axis ? x->dims() : std::vector<int64_t>{u};
  if (has_axis) y_dims[static_cast<size_t>(axis)] = u;
  GRAFT_ASSIGN_OR_RETURN(Tensor * y, allocate_output(ctx, 0, x->dtype(), y_dims));
  const size_t es = dtype_size(x->dtype());
  const auto* src = static_cast<const unsigned char*>(x->data());
  auto* dst = static_cast<unsigned char*>(y->data());
  const size_t block = static_cast<size_t>(inner) * es;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t p = 0; p < u; ++p) {
      const int64_t s = first[static_cast<size_t>(group_at[static_cast<size_t>(p)])];
      if (block)
        std::memcpy(dst + static_cast<size_t>(o * u + p) * block,
                    src + static_cast<size_t>(o * n + s) * block, block);
    }

  auto write_i64 = [&](size_t i, int64_t len, auto value_at) -> Status {
    if (!output_or_null(ctx, i)) return Status::ok();  // omitted optional output
    GRAFT_ASSIGN_OR_RETURN(Tensor * t, allocate_output(ctx, i, DataType::kInt64, {len}));
    int64_t* out = t->data_as<int64_t>();
    for (int64_t k = 0; k < len; ++k) out[k] = value_at(k);
    return Status::ok();
  };
  GRAFT_RETURN_IF_ERROR(write_i64(
      1, u, [&](int64_t p) { return first[static_cast<size_t>(group_at[static_cast<size_t>(p)])]; }));
  GRAFT_RETURN_IF_ERROR(write_i64(
      2, n, [&](int64_t s) { return pos_of_group[static_cast<size_t>(group_of[static_cast<size_t>(s)])]; }));
  GRAFT_RETURN_IF_ERROR(write_i64(
      3, u, [&](int64_t p) { return count[static_cast<size_t>(group_at[static_cast<size_t>(p)])]; }));
  return Status::ok();
}

}  // namespace cpu

// ---- schema: inference and the table rows ---------------------------------------------------
// Unique's count of distinct elements is one symbol shared by Y, indices and counts.

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

// ---- Unique ------------------------------------------------------------------------------------

// Unique (opset 11): X of any type -> Y (X's dtype), indices, inverse_indices, counts (int64, 1-D);
// every output after Y is optional.
Status infer_unique(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  if (ctx.num_outputs() < 1 || ctx.num_outputs() > 4)
    return ctx.fail("has 1 to 4 outputs (Y, indices, inverse_indices, counts), got ",
                    static_cast<uint64_t>(ctx.num_outputs()));
  auto sorted = ctx.attrs().get_int("sorted", 1);
  if (!sorted) return Status(sorted.status()).with_attribute("sorted");
  if (sorted.value() != 0 && sorted.value() != 1)
    return Status(ctx.fail("must be 0 or 1, got ", sorted.value())).with_attribute("sorted");
  const TensorDesc& x = ctx.input(0);
  const bool has_axis = ctx.attrs().has("axis");
  int64_t axis = 0;
  if (has_axis) {
    auto a = ctx.attrs().get_int("axis", 0);
    if (!a) return Status(a.status()).with_attribute("axis");
    axis = a.value();
  }
  if (!x.shape) {
    // Rank unknown: Y's rank is known only when flattened.
    const Dim u = ctx.unknown_dim();
    ctx.set_output(0, desc_of(x.dtype, has_axis ? std::nullopt : std::optional<Shape>(Shape{u})));
    ctx.set_output(1, desc_of(kI64, Shape{u}));
    ctx.set_output(2, desc_of(kI64, Shape{ctx.unknown_dim()}));
    ctx.set_output(3, desc_of(kI64, Shape{u}));
    return Status::ok();
  }
  const Shape& s = *x.shape;
  // n: how many elements (flattened) or slices (along the axis) are compared. None at all means no
  // distinct one; otherwise the count is known only once the kernel has looked at the data.
  Dim n(1);
  if (has_axis) {
    auto na = normalize_axis(axis, x.rank());
    if (!na) return Status(na.status()).with_attribute("axis");
    axis = na.value();
    n = s[static_cast<size_t>(axis)];
  } else {
    bool known = true;
    int64_t total = 1;
    for (const Dim& d : s) {
      known = known && d.is_const();
      if (known) total *= d.value();  // a static shape's element count, checked when it was made
      if (d.is_const() && d.value() == 0) {
        known = true;
        total = 0;
        break;
      }
    }
    n = known ? Dim(total) : ctx.unknown_dim();
  }
  const Dim u = n.is_const() && n.value() == 0 ? Dim(0) : ctx.unknown_dim();
  Shape y = has_axis ? s : Shape{u};
  if (has_axis) y[static_cast<size_t>(axis)] = u;
  ctx.set_output(0, desc_of(x.dtype, y));
  ctx.set_output(1, desc_of(kI64, Shape{u}));
  ctx.set_output(2, desc_of(kI64, Shape{n}));
  ctx.set_output(3, desc_of(kI64, Shape{u}));
  return Status::ok();
}

}  // namespace

void append_data_dependent_ops(std::vector<OpEntry>& out) {
  const std::vector<OpEntry> ops = {
      keeps_float32({"NonZero", 9, infer_non_zero, cpu::non_zero, /*output_shape_from_kernel=*/true}),
      {"NonMaxSuppression", 10, infer_non_max_suppression, cpu::non_max_suppression,
       /*output_shape_from_kernel=*/true},
      keeps_float32({"Unique", 11, infer_unique, cpu::unique, /*output_shape_from_kernel=*/true}),
  };
  out.insert(out.end(), ops.begin(), ops.end());
}

}  // namespace graft
