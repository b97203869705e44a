// Schemas of ONNX's sequence and optional ops (opset 11+: SequenceEmpty, SequenceConstruct,
// SequenceInsert, SequenceAt, SequenceErase, SequenceLength, SplitToSequence, ConcatFromSequence;
// opset 15+: Optional, OptionalHasElement, OptionalGetElement, which take plain tensors and
// sequences too, as opset 18 allows). SequenceMap, which runs a subgraph, is in control_flow_ops.cpp.
//
// A sequence's desc (TensorDesc with kind kSequence) carries the dtype of its tensors and the shape
// they share, when inference knows one. At build time that is all there is; at run time inference
// also sees the sequence itself (InferContext::input_value), so SequenceAt and ConcatFromSequence
// infer exact shapes. Kernels: src/backends/cpu/sequence.cpp (CPU engine only).
#include <string>

#include "backends/cpu/sequence.h"
#include "graph/subgraph.h"
#include "ops/infer_util.h"
#include "ops/operator.h"
#include "ops/sequence_attrs.h"

namespace graft {
namespace {

using namespace infer;

TensorDesc container_desc(ValueKind kind, DataType dtype, std::optional<Shape> shape) {
  TensorDesc d = desc_of(dtype, std::move(shape));
  d.kind = kind;
  return d;
}

// Input i, required, of kind `want`; the error names the input and what it is instead.
Result<const TensorDesc*> input_of_kind(const InferContext& ctx, size_t i, ValueKind want) {
  GRAFT_RETURN_IF_ERROR(require_input(ctx, i));
  const TensorDesc& d = ctx.input(i);
  if (d.kind != want)
    return ctx.fail("input ", static_cast<uint64_t>(i), " ('", ctx.node().inputs[i]->name, "') must be a ",
                    value_kind_name(want), ", not a ", value_kind_name(d.kind), " (", d.to_string(), ")");
  return &d;
}

// The sequence itself when inference runs at run time (every host value is known then).
const Tensor* known_sequence(const InferContext& ctx, size_t i) {
  const Tensor* t = ctx.input_value(i);
  return t && t->kind() == ValueKind::kSequence ? t : nullptr;
}

// A tensor that goes into a sequence of `seq`'s dtype.
Status check_item_dtype(const InferContext& ctx, size_t i, DataType seq) {
  GRAFT_ASSIGN_OR_RETURN(const TensorDesc* d, input_of_kind(ctx, i, ValueKind::kTensor));
  if (d->dtype != seq)
    return ctx.fail("input ", static_cast<uint64_t>(i), " ('", ctx.node().inputs[i]->name, "') is ",
                    dtype_name(d->dtype), " but the sequence holds ", dtype_name(seq));
  return Status::ok();
}

// A position input (optional where `required` is false): one int32/int64 element.
Status check_position_input(const InferContext& ctx, size_t i, bool required) {
  if (!ctx.has_input(i)) return required ? require_input(ctx, i) : Status::ok();
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, i, {kI32, kI64}));
  const TensorDesc& d = ctx.input(i);
  if (d.shape && shape_is_static(*d.shape) && numel_of(shape_values(*d.shape)) != 1)
    return ctx.fail("the position ('", ctx.node().inputs[i]->name, "') must hold one element, not shape ",
                    shape_to_string(*d.shape));
  return Status::ok();
}

// The shape two sets of tensors share: equal dims kept, others unknown, a rank difference unknown.
std::optional<Shape> shared_shape(InferContext& ctx, const std::optional<Shape>& a, const std::optional<Shape>& b) {
  return merge_shapes(a, b, [&] { return ctx.unknown_dim(); });
}

Status infer_sequence_empty(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(int64_t onnx_type, ctx.attrs().get_int("dtype", static_cast<int64_t>(DataType::kFloat32)));
  DataType dt;
  if (!dtype_from_onnx_numeric(static_cast<int32_t>(onnx_type), &dt))
    return ctx.fail("dtype ", onnx_type, " is not an element type graft supports").with_attribute("dtype");
  ctx.set_output(0, container_desc(ValueKind::kSequence, dt, std::nullopt));
  return Status::ok();
}

Status infer_sequence_construct(InferContext& ctx) {
  if (ctx.num_inputs() == 0) return ctx.fail("takes at least one tensor");
  GRAFT_ASSIGN_OR_RETURN(const TensorDesc* first, input_of_kind(ctx, 0, ValueKind::kTensor));
  std::optional<Shape> shape = first->shape;
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    GRAFT_RETURN_IF_ERROR(check_item_dtype(ctx, i, first->dtype));
    shape = shared_shape(ctx, shape, ctx.input(i).shape);
  }
  ctx.set_output(0, container_desc(ValueKind::kSequence, first->dtype, shape));
  return Status::ok();
}

Status infer_sequence_insert(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(const TensorDesc* seq, input_of_kind(ctx, 0, ValueKind::kSequence));
  GRAFT_RETURN_IF_ERROR(check_item_dtype(ctx, 1, seq->dtype));
  GRAFT_RETURN_IF_ERROR(check_position_input(ctx, 2, false));
  // An empty sequence's shape is unknown, and so stays the shape of what it holds after an insert:
  // the sequence may have held tensors of other shapes.
  std::optional<Shape> shape = shared_shape(ctx, seq->shape, ctx.input(1).shape);
  if (const Tensor* s = known_sequence(ctx, 0)) {
    if (const Tensor* pos = ctx.input_value(2))
      GRAFT_RETURN_IF_ERROR(sequence_position(*pos, static_cast<int64_t>(s->items().size()), true).status());
    if (s->items().empty()) shape = ctx.input(1).shape;
  }
  ctx.set_output(0, container_desc(ValueKind::kSequence, seq->dtype, shape));
  return Status::ok();
}

Status infer_sequence_at(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(const TensorDesc* seq, input_of_kind(ctx, 0, ValueKind::kSequence));
  GRAFT_RETURN_IF_ERROR(check_position_input(ctx, 1, true));
  const Tensor* s = known_sequence(ctx, 0);
  const Tensor* pos = ctx.input_value(1);
  if (s && pos) {
    GRAFT_ASSIGN_OR_RETURN(int64_t p, sequence_position(*pos, static_cast<int64_t>(s->items().size()), false));
    ctx.set_output(0, desc_of_value(s->items()[static_cast<size_t>(p)]));
    return Status::ok();
  }
  ctx.set_output(0, desc_of(seq->dtype, seq->shape));
  return Status::ok();
}

Status infer_sequence_erase(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(const TensorDesc* seq, input_of_kind(ctx, 0, ValueKind::kSequence));
  GRAFT_RETURN_IF_ERROR(check_position_input(ctx, 1, false));
  if (const Tensor* s = known_sequence(ctx, 0)) {
    const int64_t n = static_cast<int64_t>(s->items().size());
    if (const Tensor* pos = ctx.input_value(1)) GRAFT_RETURN_IF_ERROR(sequence_position(*pos, n, false).status());
    else if (n == 0) return error(StatusCode::kInvalidArgument, "the sequence is empty: there is no tensor to erase");
  }
  ctx.set_output(0, *seq);
  return Status::ok();
}

Status infer_sequence_length(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(input_of_kind(ctx, 0, ValueKind::kSequence).status());
  ctx.set_output(0, desc_of(kI64, Shape{}));
  return Status::ok();
}

Status infer_split_to_sequence(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(const TensorDesc* x, input_of_kind(ctx, 0, ValueKind::kTensor));
  if (ctx.has_input(1)) GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, {kI32, kI64}));
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, ctx.attrs().get_int("axis", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t keepdims, ctx.attrs().get_int("keepdims", 1));
  if (!x->shape) {
    ctx.set_output(0, container_desc(ValueKind::kSequence, x->dtype, std::nullopt));
    return Status::ok();
  }
  Shape shape = *x->shape;
  auto axis = normalize_axis(axis_attr, static_cast<int64_t>(shape.size()));
  if (!axis) return Status(axis.status()).with_attribute("axis");
  const size_t a = static_cast<size_t>(*axis);
  const Dim dim = shape[a];
  if (!ctx.has_input(1)) {
    // Chunks of one element; keepdims=0 drops the axis.
    if (keepdims == 0) shape.erase(shape.begin() + static_cast<ptrdiff_t>(a));
    else shape[a] = Dim(1);
  } else if (const Tensor* split = ctx.input_value(1); split && dim.is_const()) {
    GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> lengths, split_lengths(split, dim.value()));
    bool equal = !lengths.empty();
    for (int64_t l : lengths) equal = equal && l == lengths[0];
    shape[a] = equal ? Dim(lengths[0]) : ctx.unknown_dim();
  } else {
    shape[a] = ctx.unknown_dim();
  }
  ctx.set_output(0, container_desc(ValueKind::kSequence, x->dtype, std::move(shape)));
  return Status::ok();
}

Status infer_concat_from_sequence(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(const TensorDesc* seq, input_of_kind(ctx, 0, ValueKind::kSequence));
  if (!ctx.attrs().has("axis")) return ctx.fail("the attribute 'axis' is required").with_attribute("axis");
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().get_int("axis", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t new_axis, ctx.attrs().get_int("new_axis", 0));
  if (new_axis != 0 && new_axis != 1) return ctx.fail("new_axis must be 0 or 1, not ", new_axis).with_attribute("new_axis");
  if (const Tensor* s = known_sequence(ctx, 0)) {
    size_t a;
    GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> dims, concat_from_sequence_dims(s->items(), axis, new_axis == 1, &a));
    ctx.set_output(0, desc_of(seq->dtype, shape_from_values(dims)));
    return Status::ok();
  }
  if (!seq->shape) {
    ctx.set_output(0, desc_of(seq->dtype, std::nullopt));
    return Status::ok();
  }
  // How many tensors the sequence holds is known only at run time: the concatenated axis is unknown.
  Shape shape = *seq->shape;
  auto a = normalize_axis(axis, static_cast<int64_t>(shape.size()) + new_axis);
  if (!a) return Status(a.status()).with_attribute("axis");
  if (new_axis == 1) shape.insert(shape.begin() + *a, ctx.unknown_dim());
  else shape[static_cast<size_t>(*a)] = ctx.unknown_dim();
  ctx.set_output(0, desc_of(seq->dtype, std::move(shape)));
  return Status::ok();
}

Status infer_optional(InferContext& ctx) {
  if (ctx.has_input(0)) {
    const TensorDesc& in = ctx.input(0);
    if (is_optional_kind(in.kind))
      return ctx.fail("input 0 ('", ctx.node().inputs[0]->name, "') is already an optional (", in.to_string(), ")");
    ctx.set_output(0, container_desc(in.is_tensor() ? ValueKind::kOptionalTensor : ValueKind::kOptionalSequence,
                                     in.dtype, in.shape));
    return Status::ok();
  }
  // No input: an empty optional of the type the attribute names (see sequence_attrs.h).
  if (!ctx.attrs().has("type"))
    return ctx.fail("an Optional without input needs the attribute 'type'").with_attribute("type");
  auto type = ctx.attrs().get_ints("type", {});
  if (!type) return Status(type.status()).with_attribute("type");
  const std::vector<int64_t>& t = *type;
  DataType dt;
  if (t.size() < 3 || (t[0] != kOptionalTypeTensor && t[0] != kOptionalTypeSequence) ||
      !dtype_from_onnx_numeric(static_cast<int32_t>(t[1]), &dt) || t[2] < -1 ||
      (t[2] >= 0 && t.size() != static_cast<size_t>(3 + t[2])))
    return ctx.fail("the attribute 'type' does not describe a tensor or a sequence of a dtype graft supports")
        .with_attribute("type");
  std::optional<Shape> shape;
  if (t[2] >= 0) {
    shape = Shape{};
    for (size_t i = 3; i < t.size(); ++i) shape->push_back(t[i] >= 0 ? Dim(t[i]) : ctx.unknown_dim());
  }
  ctx.set_output(0, container_desc(t[0] == kOptionalTypeTensor ? ValueKind::kOptionalTensor : ValueKind::kOptionalSequence,
                                   dt, std::move(shape)));
  return Status::ok();
}

Status infer_optional_has_element(InferContext& ctx) {
  ctx.set_output(0, desc_of(kBool, Shape{}));
  return Status::ok();
}

Status infer_optional_get_element(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(require_input(ctx, 0));
  TensorDesc d = ctx.input(0);
  d.kind = optional_content(d.kind);  // a plain tensor or sequence passes through (opset 18)
  if (const Tensor* o = ctx.input_value(0); o && is_optional_kind(o->kind())) {
    if (!o->has_element()) return optional_empty_error();
    d = desc_of_value(o->items()[0]);
  }
  ctx.set_output(0, d);
  return Status::ok();
}

}  // namespace

void append_sequence_ops(std::vector<OpEntry>& out) {
  constexpr bool kFromKernel = false, kContainers = true;
  const std::vector<OpEntry> ops = {
      {"SequenceEmpty", 11, infer_sequence_empty, cpu::sequence_empty, kFromKernel, kContainers},
      {"SequenceConstruct", 11, infer_sequence_construct, cpu::sequence_construct, kFromKernel, kContainers},
      {"SequenceInsert", 11, infer_sequence_insert, cpu::sequence_insert, kFromKernel, kContainers},
      {"SequenceAt", 11, infer_sequence_at, cpu::sequence_at, kFromKernel, kContainers},
      {"SequenceErase", 11, infer_sequence_erase, cpu::sequence_erase, kFromKernel, kContainers},
      {"SequenceLength", 11, infer_sequence_length, cpu::sequence_length, kFromKernel, kContainers},
      {"SplitToSequence", 11, infer_split_to_sequence, cpu::split_to_sequence, kFromKernel, kContainers},
      {"ConcatFromSequence", 11, infer_concat_from_sequence, cpu::concat_from_sequence, kFromKernel, kContainers},
      {"Optional", 15, infer_optional, cpu::optional, kFromKernel, kContainers},
      {"OptionalHasElement", 15, infer_optional_has_element, cpu::optional_has_element, kFromKernel, kContainers},
      {"OptionalGetElement", 15, infer_optional_get_element, cpu::optional_get_element, kFromKernel, kContainers},
  };
  out.insert(out.end(), ops.begin(), ops.end());
}

}  // namespace graft
