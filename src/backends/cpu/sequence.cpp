#include "backends/cpu/sequence.h"

#include <cstring>
#include <vector>

#include "ops/sequence_attrs.h"

namespace graft::cpu {
namespace {

// Input i as a sequence (inference has checked the kind; a direct call is checked again).
Result<const Tensor*> sequence_input(const ExecContext& ctx, size_t i) {
  const Tensor* s = i < ctx.inputs.size() ? ctx.inputs[i] : nullptr;
  if (!s || s->kind() != ValueKind::kSequence)
    return error(StatusCode::kInvalidArgument, "input ", static_cast<uint64_t>(i), " must be a sequence");
  return s;
}

const Tensor* optional_input(const ExecContext& ctx, size_t i) { return i < ctx.inputs.size() ? ctx.inputs[i] : nullptr; }

Status store_sequence(ExecContext& ctx, DataType dtype, std::vector<Tensor> items) {
  GRAFT_ASSIGN_OR_RETURN(Tensor seq, Tensor::sequence(dtype, std::move(items)));
  return set_output_value(ctx, 0, std::move(seq));
}

// x's slice [begin, begin + len) along `axis`, as a new tensor (with that axis dropped when `drop`).
Tensor slice_axis(const Tensor& x, size_t axis, int64_t begin, int64_t len, bool drop) {
  const std::vector<int64_t>& dims = x.dims();
  int64_t outer = 1;
  for (size_t i = 0; i < axis; ++i) outer *= dims[i];
  size_t inner = dtype_size(x.dtype());
  for (size_t i = axis + 1; i < dims.size(); ++i) inner *= static_cast<size_t>(dims[i]);
  std::vector<int64_t> out_dims = dims;
  out_dims[axis] = len;
  if (drop) out_dims.erase(out_dims.begin() + static_cast<ptrdiff_t>(axis));
  Tensor y = Tensor::empty(x.dtype(), out_dims);
  const size_t row = static_cast<size_t>(len) * inner;
  const char* src = static_cast<const char*>(x.data());
  char* dst = static_cast<char*>(y.data());
  for (int64_t o = 0; o < outer && row; ++o)
    std::memcpy(dst + static_cast<size_t>(o) * row, src + (static_cast<size_t>(o * dims[axis] + begin)) * inner, row);
  return y;
}

}  // namespace

Status sequence_empty(ExecContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(int64_t onnx_type, ctx.attrs->get_int("dtype", static_cast<int64_t>(DataType::kFloat32)));
  DataType dt;
  if (!dtype_from_onnx(static_cast<int32_t>(onnx_type), &dt))
    return error(StatusCode::kInvalidModel, "dtype ", onnx_type, " is not an element type graft supports")
        .with_attribute("dtype");
  return store_sequence(ctx, dt, {});
}

Status sequence_construct(ExecContext& ctx) {
  std::vector<Tensor> items;
  for (const Tensor* t : ctx.inputs) {
    if (!t) return error(StatusCode::kInvalidModel, "SequenceConstruct takes no omitted inputs");
    items.push_back(*t);
  }
  if (items.empty()) return error(StatusCode::kInvalidModel, "SequenceConstruct takes at least one tensor");
  const DataType dtype = items[0].dtype();
  return store_sequence(ctx, dtype, std::move(items));
}

Status sequence_insert(ExecContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(const Tensor* seq, sequence_input(ctx, 0));
  const Tensor* x = optional_input(ctx, 1);
  if (!x) return error(StatusCode::kInvalidModel, "the tensor to insert (input 1) is missing");
  std::vector<Tensor> items = seq->items();
  int64_t at = static_cast<int64_t>(items.size());
  if (const Tensor* pos = optional_input(ctx, 2)) {
    GRAFT_ASSIGN_OR_RETURN(at, sequence_position(*pos, static_cast<int64_t>(items.size()), true));
  }
  items.insert(items.begin() + at, *x);
  // Tensor::sequence names a tensor whose dtype differs from the sequence's.
  return store_sequence(ctx, seq->dtype(), std::move(items));
}

Status sequence_at(ExecContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(const Tensor* seq, sequence_input(ctx, 0));
  const Tensor* pos = optional_input(ctx, 1);
  if (!pos) return error(StatusCode::kInvalidModel, "the position (input 1) is missing");
  GRAFT_ASSIGN_OR_RETURN(int64_t at, sequence_position(*pos, static_cast<int64_t>(seq->items().size()), false));
  return set_output_value(ctx, 0, seq->items()[static_cast<size_t>(at)]);
}

Status sequence_erase(ExecContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(const Tensor* seq, sequence_input(ctx, 0));
  std::vector<Tensor> items = seq->items();
  if (items.empty()) return error(StatusCode::kInvalidArgument, "the sequence is empty: there is no tensor to erase");
  int64_t at = static_cast<int64_t>(items.size()) - 1;
  if (const Tensor* pos = optional_input(ctx, 1)) {
    GRAFT_ASSIGN_OR_RETURN(at, sequence_position(*pos, static_cast<int64_t>(items.size()), false));
  }
  items.erase(items.begin() + at);
  return store_sequence(ctx, seq->dtype(), std::move(items));
}

Status sequence_length(ExecContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(const Tensor* seq, sequence_input(ctx, 0));
  return set_output_value(ctx, 0, Tensor::scalar_int64(static_cast<int64_t>(seq->items().size())));
}

Status split_to_sequence(ExecContext& ctx) {
  const Tensor* x = optional_input(ctx, 0);
  if (!x || !x->is_tensor()) return error(StatusCode::kInvalidArgument, "input 0 must be a tensor");
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, ctx.attrs->get_int("axis", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t keepdims, ctx.attrs->get_int("keepdims", 1));
  auto axis = normalize_axis(axis_attr, x->rank());
  if (!axis) return Status(axis.status()).with_attribute("axis");
  const size_t a = static_cast<size_t>(*axis);
  const Tensor* split = optional_input(ctx, 1);
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> lengths, split_lengths(split, x->dims()[a]));
  // keepdims applies only without `split` (ONNX SplitToSequence).
  const bool drop = !split && keepdims == 0;
  std::vector<Tensor> items;
  int64_t begin = 0;
  for (int64_t len : lengths) {
    items.push_back(slice_axis(*x, a, begin, len, drop));
    begin += len;
  }
  return store_sequence(ctx, x->dtype(), std::move(items));
}

Status concat_from_sequence(ExecContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(const Tensor* seq, sequence_input(ctx, 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, ctx.attrs->get_int("axis", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t new_axis, ctx.attrs->get_int("new_axis", 0));
  size_t a;
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> dims, concat_from_sequence_dims(seq->items(), axis, new_axis == 1, &a));
  GRAFT_ASSIGN_OR_RETURN(Tensor * y, allocate_output(ctx, 0, seq->dtype(), dims));
  // y is [outer, dims[a], inner]; item i fills rows [offset, offset + its extent) of every outer block.
  int64_t outer = 1;
  for (size_t i = 0; i < a; ++i) outer *= dims[i];
  size_t inner = dtype_size(seq->dtype());
  for (size_t i = a + 1; i < dims.size(); ++i) inner *= static_cast<size_t>(dims[i]);
  char* dst = static_cast<char*>(y->data());
  int64_t offset = 0;
  for (const Tensor& t : seq->items()) {
    const int64_t extent = new_axis == 1 ? 1 : t.dims()[a];
    const size_t row = static_cast<size_t>(extent) * inner;
    const char* src = static_cast<const char*>(t.data());
    for (int64_t o = 0; o < outer && row; ++o)
      std::memcpy(dst + (static_cast<size_t>(o * dims[a] + offset)) * inner, src + static_cast<size_t>(o) * row, row);
    offset += extent;
  }
  return Status::ok();
}

Status optional(ExecContext& ctx) {
  const Tensor* x = optional_input(ctx, 0);
  if (x) {
    if (is_optional_kind(x->kind())) return error(StatusCode::kInvalidArgument, "input 0 is already an optional");
    GRAFT_ASSIGN_OR_RETURN(Tensor o, Tensor::optional(x->is_tensor() ? ValueKind::kOptionalTensor
                                                                      : ValueKind::kOptionalSequence,
                                                      x->dtype(), *x));
    return set_output_value(ctx, 0, std::move(o));
  }
  // An empty optional of the type inference read from the attribute.
  auto type = ctx.attrs->get_ints("type", {});
  if (!type || type->size() < 2) return error(StatusCode::kInvalidModel, "the attribute 'type' is missing").with_attribute("type");
  DataType dt;
  if (!dtype_from_onnx(static_cast<int32_t>((*type)[1]), &dt))
    return error(StatusCode::kInvalidModel, "the attribute 'type' names no dtype graft supports").with_attribute("type");
  GRAFT_ASSIGN_OR_RETURN(Tensor o, Tensor::optional((*type)[0] == kOptionalTypeSequence ? ValueKind::kOptionalSequence
                                                                                          : ValueKind::kOptionalTensor,
                                                    dt));
  return set_output_value(ctx, 0, std::move(o));
}

Status optional_has_element(ExecContext& ctx) {
  // Since opset 18 a tensor or a sequence (always present) and an omitted input (never) are allowed too.
  const Tensor* x = optional_input(ctx, 0);
  const bool has = x && (!is_optional_kind(x->kind()) || x->has_element());
  return set_output_value(ctx, 0, Tensor::from_doubles(DataType::kBool, {}, {has ? 1.0 : 0.0}));
}

Status optional_get_element(ExecContext& ctx) {
  const Tensor* x = optional_input(ctx, 0);
  if (!x) return error(StatusCode::kInvalidModel, "input 0 is missing");
  if (!is_optional_kind(x->kind())) return set_output_value(ctx, 0, *x);
  if (!x->has_element()) return optional_empty_error();
  return set_output_value(ctx, 0, x->items()[0]);
}

}  // namespace graft::cpu
