#include "ops/operator.h"

#include <atomic>
#include <cstring>

namespace graft {

InferContext::InferContext(const Node& node, std::vector<InputInfo> inputs, int opset)
    : node_(node), inputs_(std::move(inputs)), opset_(opset) {
  outputs_.resize(node.outputs.size());
  out_sym_.resize(node.outputs.size());
}

std::optional<std::vector<Dim>> InferContext::input_dims_value(size_t i) const {
  if (const Tensor* t = input_value(i)) {
    if (!dtype_is_integer(t->dtype()) || t->device() != DeviceType::kCPU) return std::nullopt;
    auto v = t->to_int64_vector();
    return std::vector<Dim>(v.begin(), v.end());
  }
  if (const auto* s = input_sym_value(i)) return *s;
  return std::nullopt;
}

Result<Shape> InferContext::input_shape(size_t i) const {
  if (!has_input(i)) return error(StatusCode::kInvalidModel, "input ", static_cast<int64_t>(i), " is missing");
  if (!input(i).shape)
    return error(StatusCode::kUnsupported, "the rank of input ", static_cast<int64_t>(i), " ('",
                 node_.inputs[i]->name, "') is unknown");
  return *input(i).shape;
}

void InferContext::set_output(size_t i, TensorDesc desc) {
  if (i < outputs_.size()) outputs_[i] = std::move(desc);
}

void InferContext::set_output_sym_value(size_t i, std::vector<Dim> v) {
  if (i < out_sym_.size()) out_sym_[i] = std::move(v);
}

Dim InferContext::unknown_dim() {
  // Names only need to be unique within a process. Atomic: run-time inference runs on every thread
  // that calls ExecutionContext::run, concurrently.
  static std::atomic<int64_t> counter{0};
  return Dim::symbol("unk__" + std::to_string(counter.fetch_add(1, std::memory_order_relaxed)));
}

Result<Tensor*> allocate_output(ExecContext& ctx, size_t i, DataType dtype, std::vector<int64_t> dims) {
  const std::string name = ctx.node && i < ctx.node->outputs.size() && ctx.node->outputs[i]
                               ? ctx.node->outputs[i]->name
                               : std::string();
  auto describe = [&](DataType t, const std::vector<int64_t>& d) {
    return TensorDesc(t, shape_from_values(d)).to_string();
  };
  if (i >= ctx.outputs.size() || !ctx.outputs[i])
    return error(StatusCode::kInternal, "output ", static_cast<uint64_t>(i), " is omitted but the kernel writes it");
  Tensor& out = *ctx.outputs[i];
  if (out.defined()) {
    if (out.dtype() != dtype || out.dims() != dims)
      return error(StatusCode::kInternal, "output ", static_cast<uint64_t>(i), " ('", name, "') was allocated as ",
                   describe(out.dtype(), out.dims()), " but the kernel computed ", describe(dtype, dims));
    return &out;
  }
  auto t = Tensor::allocate(dtype, std::move(dims));
  if (!t) {
    Status st = std::move(t).take_status();
    return Status(st.code(), "output " + std::to_string(i) + " ('" + name + "'): " + st.message());
  }
  out = std::move(t).value();
  out.poison();
  return &out;
}

Status set_output_value(ExecContext& ctx, size_t i, Tensor value) {
  if (i >= ctx.outputs.size() || !ctx.outputs[i]) return Status::ok();
  if (!value.is_tensor()) {
    *ctx.outputs[i] = std::move(value);
    return Status::ok();
  }
  // A tensor is copied: it may be a constant of a subgraph, which must not leave as an output.
  GRAFT_ASSIGN_OR_RETURN(Tensor * dst, allocate_output(ctx, i, value.dtype(), value.dims()));
  return dst->copy_data_from(value);
}

Result<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const Dim* da = i < n - a.size() ? nullptr : &a[i - (n - a.size())];
    const Dim* db = i < n - b.size() ? nullptr : &b[i - (n - b.size())];
    if (!da) { out[i] = *db; continue; }
    if (!db) { out[i] = *da; continue; }
    if (*da == 1) { out[i] = *db; continue; }
    if (*db == 1) { out[i] = *da; continue; }
    if (da->same_as(*db)) { out[i] = *da; continue; }
    if (da->is_const() && db->is_const())
      return error(StatusCode::kInvalidModel, "shapes ", shape_to_string(a), " and ", shape_to_string(b),
                   " cannot be broadcast (dimension ", static_cast<int64_t>(i), ": ", da->value(), " vs ",
                   db->value(), ")");
    // One side symbolic: the runtime check happens with concrete shapes; a constant > 1 wins.
    out[i] = da->is_const() ? *da : (db->is_const() ? *db : dim_max(*da, *db));
  }
  return out;
}

Result<int64_t> normalize_axis(int64_t axis, int64_t rank) {
  // Valid axes are [-rank, rank-1]. A scalar (rank 0) has none: accepting axis 0 there made Split,
  // Squeeze, Slice, Compress and Concat index an empty shape. Ops whose axis may equal the rank
  // (Unsqueeze, Flatten) normalize against their own range.
  if (rank <= 0)
    return error(StatusCode::kInvalidModel, "axis ", axis, " is invalid: the input is a scalar (rank 0), which has no axes");
  if (axis < -rank || axis >= rank)
    return error(StatusCode::kInvalidModel, "axis ", axis, " is out of range for rank ", rank, " (valid: ", -rank,
                 " to ", rank - 1, ")");
  return axis < 0 ? axis + rank : axis;
}

}  // namespace graft
