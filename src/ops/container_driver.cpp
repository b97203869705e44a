#include "ops/container_driver.h"

#include <vector>

#include "ops/sequence_attrs.h"

namespace graft {
namespace {

// Input i as a sequence (inference has checked the kind; a direct call is checked again).
Result<const Tensor*> sequence_input(const ExecContext& ctx, size_t i) {
  const Tensor* s = i < ctx.inputs.size() ? ctx.inputs[i] : nullptr;
  if (!s || s->kind() != ValueKind::kSequence)
    return error(StatusCode::kInvalidArgument, "input ", static_cast<uint64_t>(i), " must be a sequence");
  return s;
}

const Tensor* optional_input(const ExecContext& ctx, size_t i) { return i < ctx.inputs.size() ? ctx.inputs[i] : nullptr; }

// A position or split input, which the backends pass on the host.
Result<const Tensor*> host_input(const ExecContext& ctx, size_t i, const char* what) {
  const Tensor* t = optional_input(ctx, i);
  if (t && t->device() != DeviceType::kCPU)
    return error(StatusCode::kInternal, what, " (input ", static_cast<uint64_t>(i), ") is not on the host");
  return t;
}

Status store_sequence(ContainerDevice& dev, DataType dtype, std::vector<Tensor> items) {
  GRAFT_ASSIGN_OR_RETURN(Tensor seq, Tensor::sequence(dtype, std::move(items)));
  return dev.set_output(0, std::move(seq));
}

}  // namespace

Status run_sequence_empty(const ExecContext& ctx, ContainerDevice& dev) {
  GRAFT_ASSIGN_OR_RETURN(int64_t onnx_type, ctx.attrs->get_int("dtype", static_cast<int64_t>(DataType::kFloat32)));
  DataType dt;
  if (!dtype_from_onnx_numeric(static_cast<int32_t>(onnx_type), &dt))
    return error(StatusCode::kInvalidModel, "dtype ", onnx_type, " is not an element type graft supports")
        .with_attribute("dtype");
  return store_sequence(dev, dt, {});
}

Status run_sequence_construct(const ExecContext& ctx, ContainerDevice& dev) {
  std::vector<Tensor> items;
  for (const Tensor* t : ctx.inputs) {
    if (!t) return error(StatusCode::kInvalidModel, "SequenceConstruct takes no omitted inputs");
    GRAFT_ASSIGN_OR_RETURN(Tensor kept, dev.keep(*t));
    items.push_back(std::move(kept));
  }
  if (items.empty()) return error(StatusCode::kInvalidModel, "SequenceConstruct takes at least one tensor");
  const DataType dtype = items[0].dtype();
  return store_sequence(dev, dtype, std::move(items));
}

Status run_sequence_insert(const ExecContext& ctx, ContainerDevice& dev) {
  GRAFT_ASSIGN_OR_RETURN(const Tensor* seq, sequence_input(ctx, 0));
  const Tensor* x = optional_input(ctx, 1);
  if (!x) return error(StatusCode::kInvalidModel, "the tensor to insert (input 1) is missing");
  std::vector<Tensor> items = seq->items();
  int64_t at = static_cast<int64_t>(items.size());
  GRAFT_ASSIGN_OR_RETURN(const Tensor* pos, host_input(ctx, 2, "the position"));
  if (pos) {
    GRAFT_ASSIGN_OR_RETURN(at, sequence_position(*pos, static_cast<int64_t>(items.size()), true));
  }
  GRAFT_ASSIGN_OR_RETURN(Tensor kept, dev.keep(*x));
  items.insert(items.begin() + at, std::move(kept));
  // Tensor::sequence names a tensor whose dtype differs from the sequence's.
  return store_sequence(dev, seq->dtype(), std::move(items));
}

Status run_sequence_at(const ExecContext& ctx, ContainerDevice& dev) {
  GRAFT_ASSIGN_OR_RETURN(const Tensor* seq, sequence_input(ctx, 0));
  GRAFT_ASSIGN_OR_RETURN(const Tensor* pos, host_input(ctx, 1, "the position"));
  if (!pos) return error(StatusCode::kInvalidModel, "the position (input 1) is missing");
  GRAFT_ASSIGN_OR_RETURN(int64_t at, sequence_position(*pos, static_cast<int64_t>(seq->items().size()), false));
  return dev.set_output(0, seq->items()[static_cast<size_t>(at)]);
}

Status run_sequence_erase(const ExecContext& ctx, ContainerDevice& dev) {
  GRAFT_ASSIGN_OR_RETURN(const Tensor* seq, sequence_input(ctx, 0));
  std::vector<Tensor> items = seq->items();
  if (items.empty()) return error(StatusCode::kInvalidArgument, "the sequence is empty: there is no tensor to erase");
  int64_t at = static_cast<int64_t>(items.size()) - 1;
  GRAFT_ASSIGN_OR_RETURN(const Tensor* pos, host_input(ctx, 1, "the position"));
  if (pos) {
    GRAFT_ASSIGN_OR_RETURN(at, sequence_position(*pos, static_cast<int64_t>(items.size()), false));
  }
  items.erase(items.begin() + at);
  return store_sequence(dev, seq->dtype(), std::move(items));
}

Status run_sequence_length(const ExecContext& ctx, ContainerDevice& dev) {
  GRAFT_ASSIGN_OR_RETURN(const Tensor* seq, sequence_input(ctx, 0));
  return dev.set_output(0, Tensor::scalar_int64(static_cast<int64_t>(seq->items().size())));
}

Status run_split_to_sequence(const ExecContext& ctx, ContainerDevice& dev) {
  const Tensor* x = optional_input(ctx, 0);
  if (!x || !x->is_tensor()) return error(StatusCode::kInvalidArgument, "input 0 must be a tensor");
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, ctx.attrs->get_int("axis", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t keepdims, ctx.attrs->get_int("keepdims", 1));
  auto axis = normalize_axis(axis_attr, x->rank());
  if (!axis) return Status(axis.status()).with_attribute("axis");
  const size_t a = static_cast<size_t>(*axis);
  GRAFT_ASSIGN_OR_RETURN(const Tensor* split, host_input(ctx, 1, "split"));
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> lengths, split_lengths(split, x->dims()[a]));
  // keepdims applies only without `split` (ONNX SplitToSequence).
  const bool drop = !split && keepdims == 0;
  std::vector<Tensor> items;
  int64_t begin = 0;
  for (int64_t len : lengths) {
    GRAFT_ASSIGN_OR_RETURN(Tensor item, dev.slice(*x, a, begin, len, drop));
    items.push_back(std::move(item));
    begin += len;
  }
  return store_sequence(dev, x->dtype(), std::move(items));
}

Status run_concat_from_sequence(const ExecContext& ctx, ContainerDevice& dev) {
  GRAFT_ASSIGN_OR_RETURN(const Tensor* seq, sequence_input(ctx, 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, ctx.attrs->get_int("axis", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t new_axis, ctx.attrs->get_int("new_axis", 0));
  size_t a;
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> dims, concat_from_sequence_dims(seq->items(), axis, new_axis == 1, &a));
  GRAFT_ASSIGN_OR_RETURN(Tensor * y, dev.allocate_output(0, seq->dtype(), dims));
  if (!y) return Status::ok();
  // Item i fills [offset, offset + its extent) along the axis.
  int64_t offset = 0;
  for (const Tensor& t : seq->items()) {
    GRAFT_RETURN_IF_ERROR(dev.place(*y, a, offset, t));
    offset += new_axis == 1 ? 1 : t.dims()[a];
  }
  return Status::ok();
}

Status run_optional(const ExecContext& ctx, ContainerDevice& dev) {
  const Tensor* x = optional_input(ctx, 0);
  if (x) {
    if (is_optional_kind(x->kind())) return error(StatusCode::kInvalidArgument, "input 0 is already an optional");
    GRAFT_ASSIGN_OR_RETURN(Tensor kept, dev.keep(*x));
    GRAFT_ASSIGN_OR_RETURN(Tensor o, Tensor::optional(x->is_tensor() ? ValueKind::kOptionalTensor
                                                                      : ValueKind::kOptionalSequence,
                                                      x->dtype(), std::move(kept)));
    return dev.set_output(0, std::move(o));
  }
  // An empty optional of the type inference read from the attribute.
  auto type = ctx.attrs->get_ints("type", {});
  if (!type || type->size() < 2) return error(StatusCode::kInvalidModel, "the attribute 'type' is missing").with_attribute("type");
  DataType dt;
  if (!dtype_from_onnx_numeric(static_cast<int32_t>((*type)[1]), &dt))
    return error(StatusCode::kInvalidModel, "the attribute 'type' names no dtype graft supports").with_attribute("type");
  GRAFT_ASSIGN_OR_RETURN(Tensor o, Tensor::optional((*type)[0] == kOptionalTypeSequence ? ValueKind::kOptionalSequence
                                                                                          : ValueKind::kOptionalTensor,
                                                    dt));
  return dev.set_output(0, std::move(o));
}

Status run_optional_has_element(const ExecContext& ctx, ContainerDevice& dev) {
  // Since opset 18 a tensor or a sequence (always present) and an omitted input (never) are allowed too.
  const Tensor* x = optional_input(ctx, 0);
  const bool has = x && (!is_optional_kind(x->kind()) || x->has_element());
  return dev.set_output(0, Tensor::from_doubles(DataType::kBool, {}, {has ? 1.0 : 0.0}));
}

Status run_optional_get_element(const ExecContext& ctx, ContainerDevice& dev) {
  const Tensor* x = optional_input(ctx, 0);
  if (!x) return error(StatusCode::kInvalidModel, "input 0 is missing");
  if (!is_optional_kind(x->kind())) return dev.set_output(0, *x);
  if (!x->has_element()) return optional_empty_error();
  return dev.set_output(0, x->items()[0]);
}

}  // namespace graft
