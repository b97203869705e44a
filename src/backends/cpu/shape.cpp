#include "backends/cpu/shape.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

namespace graft::cpu {
namespace {

// Copies out[...] = in[offset + sum(idx[a] * in_strides[a])] for every output index; in_strides are
// in elements and may be 0 (broadcast) or negative (reversed slices).
void gather_strided(const Tensor& in, Tensor& out, const std::vector<int64_t>& in_strides, int64_t offset) {
  const size_t es = dtype_size(out.dtype());
  const auto& od = out.dims();
  const int64_t n = out.numel();
  const char* src = static_cast<const char*>(in.data());
  char* dst = static_cast<char*>(out.data());
  std::vector<int64_t> idx(od.size(), 0);
  int64_t src_off = offset;
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(dst + i * es, src + src_off * static_cast<int64_t>(es), es);
    // Odometer increment, keeping src_off in step.
    for (int64_t a = static_cast<int64_t>(od.size()) - 1; a >= 0; --a) {
      if (++idx[a] < od[a]) {
        src_off += in_strides[a];
        break;
      }
      src_off -= in_strides[a] * (idx[a] - 1);
      idx[a] = 0;
    }
  }
}

Status check_io(const ExecContext& ctx, size_t n_in, size_t n_out) {
  if (ctx.inputs.size() < n_in || !ctx.inputs[0])
    return error(StatusCode::kInvalidModel, "expected at least ", static_cast<int64_t>(n_in), " input(s)");
  if (ctx.outputs.size() < n_out)
    return error(StatusCode::kInvalidModel, "expected ", static_cast<int64_t>(n_out), " output(s)");
  for (const Tensor* t : ctx.inputs)
    if (t && t->device() != DeviceType::kCPU)
      return error(StatusCode::kInternal, "CPU kernel given a device tensor");
  return Status::ok();
}

Status same_dtype(const Tensor& in, const Tensor& out) {
  if (in.dtype() != out.dtype())
    return error(StatusCode::kInternal, "output dtype ", dtype_name(out.dtype()), " differs from input dtype ",
                 dtype_name(in.dtype()));
  return Status::ok();
}

std::string dims_str(const std::vector<int64_t>& d) { return shape_to_string(shape_from_values(d)); }

}  // namespace

Result<Tensor> constant_node_value(const AttributeMap& attrs) {
  int count = 0;
  for (const char* name : {"value", "value_float", "value_floats", "value_int", "value_ints", "value_string",
                           "value_strings", "sparse_value"})
    count += attrs.has(name) ? 1 : 0;
  if (attrs.has("sparse_value"))
    return error(StatusCode::kUnsupported, "sparse_value (sparse tensor constants) is not supported")
        .with_attribute("sparse_value");
  if (count != 1)
    return error(StatusCode::kInvalidModel, "Constant needs exactly one of value, value_float, value_floats, ",
                 "value_int, value_ints, value_string, value_strings (found ", static_cast<int64_t>(count), ")");
  if (attrs.has("value_string")) {
    GRAFT_ASSIGN_OR_RETURN(std::string v, attrs.get_string("value_string", ""));
    return Tensor::from_strings({}, {v});
  }
  if (attrs.has("value_strings")) {
    GRAFT_ASSIGN_OR_RETURN(std::vector<std::string> v, attrs.get_strings("value_strings", {}));
    return Tensor::from_strings({static_cast<int64_t>(v.size())}, v);
  }
  if (attrs.has("value")) return attrs.get_tensor("value");
  if (attrs.has("value_float")) {
    GRAFT_ASSIGN_OR_RETURN(float f, attrs.get_float("value_float", 0.f));
    return Tensor::from_doubles(DataType::kFloat32, {}, {f});
  }
  if (attrs.has("value_floats")) {
    GRAFT_ASSIGN_OR_RETURN(std::vector<float> f, attrs.get_floats("value_floats", {}));
    return Tensor::from_doubles(DataType::kFloat32, {static_cast<int64_t>(f.size())},
                                std::vector<double>(f.begin(), f.end()));
  }
  if (attrs.has("value_int")) {
    GRAFT_ASSIGN_OR_RETURN(int64_t v, attrs.get_int("value_int", 0));
    return Tensor::scalar_int64(v);
  }
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> v, attrs.get_ints("value_ints", {}));
  return Tensor::vector_int64(v);
}

Status reshape_like(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1, 1));
  const Tensor& in = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  GRAFT_RETURN_IF_ERROR(same_dtype(in, out));
  if (in.numel() != out.numel())
    return error(StatusCode::kInternal, "cannot copy ", dims_str(in.dims()), " into ", dims_str(out.dims()),
                 ": element counts differ");
  if (in.nbytes() && in.data() != out.data()) std::memcpy(out.data(), in.data(), in.nbytes());
  return Status::ok();
}

Status transpose(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1, 1));
  const Tensor& in = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  GRAFT_RETURN_IF_ERROR(same_dtype(in, out));
  const int64_t r = in.rank();
  std::vector<int64_t> rev(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) rev[i] = r - 1 - i;
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> perm, ctx.attrs->get_ints("perm", rev));
  if (static_cast<int64_t>(perm.size()) != r)
    return error(StatusCode::kInvalidModel, "perm has ", static_cast<int64_t>(perm.size()),
                 " entries for a rank-", r, " input").with_attribute("perm");
  const auto is = contiguous_strides(in.dims());
  std::vector<int64_t> strides(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) {
    if (perm[i] < 0 || perm[i] >= r) return error(StatusCode::kInvalidModel, "bad perm").with_attribute("perm");
    strides[i] = is[perm[i]];
    if (out.dims()[i] != in.dims()[perm[i]])
      return error(StatusCode::kInternal, "Transpose output shape ", dims_str(out.dims()), " does not match");
  }
  gather_strided(in, out, strides, 0);
  return Status::ok();
}

Status concat(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1, 1));
  Tensor& out = *ctx.outputs[0];
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, ctx.attrs->require_int("axis"));
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_attr, out.rank()));
  const size_t es = dtype_size(out.dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t a = 0; a < axis; ++a) outer *= out.dims()[a];
  for (int64_t a = axis + 1; a < out.rank(); ++a) inner *= out.dims()[a];
  const int64_t out_row = out.dims()[axis] * inner;
  int64_t col = 0;
  for (const Tensor* in : ctx.inputs) {
    if (!in) continue;
    GRAFT_RETURN_IF_ERROR(same_dtype(*in, out));
    if (in->rank() != out.rank())
      return error(StatusCode::kInvalidModel, "Concat inputs differ in rank");
    const int64_t row = in->dims()[axis] * inner;
    if (col + row > out_row || in->numel() != outer * row)
      return error(StatusCode::kInternal, "Concat input ", dims_str(in->dims()), " does not fit output ",
                   dims_str(out.dims()));
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<char*>(out.data()) + (o * out_row + col) * es,
                  static_cast<const char*>(in->data()) + o * row * es, static_cast<size_t>(row) * es);
    col += row;
  }
  if (col != out_row) return error(StatusCode::kInternal, "Concat inputs do not fill the output");
  return Status::ok();
}

Status split(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1, 1));
  const Tensor& in = *ctx.inputs[0];
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, ctx.attrs->get_int("axis", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_attr, in.rank()));
  const size_t es = dtype_size(in.dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t a = 0; a < axis; ++a) outer *= in.dims()[a];
  for (int64_t a = axis + 1; a < in.rank(); ++a) inner *= in.dims()[a];
  const int64_t in_row = in.dims()[axis] * inner;
  int64_t col = 0;
  // The split sizes are the allocated outputs' extents along the axis (inference computed them).
  for (Tensor* out : ctx.outputs) {
    if (!out) return error(StatusCode::kUnsupported, "Split with an omitted output");
    GRAFT_RETURN_IF_ERROR(same_dtype(in, *out));
    const int64_t row = out->dims()[axis] * inner;
    if (col + row > in_row || out->numel() != outer * row)
      return error(StatusCode::kInternal, "Split output ", dims_str(out->dims()), " does not fit input ",
                   dims_str(in.dims()));
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<char*>(out->data()) + o * row * es,
                  static_cast<const char*>(in.data()) + (o * in_row + col) * es, static_cast<size_t>(row) * es);
    col += row;
  }
  if (col != in_row) return error(StatusCode::kInternal, "Split outputs do not cover the input");
  return Status::ok();
}

Status slice(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 3, 1));
  const Tensor& in = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  GRAFT_RETURN_IF_ERROR(same_dtype(in, out));
  const int64_t r = in.rank();
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> starts, int_input(ctx, 1, "starts"));
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> ends, int_input(ctx, 2, "ends"));
  std::vector<int64_t> axes(starts.size()), steps(starts.size(), 1);
  std::iota(axes.begin(), axes.end(), 0);
  if (ctx.inputs.size() > 3 && ctx.inputs[3]) {
    GRAFT_ASSIGN_OR_RETURN(axes, int_input(ctx, 3, "axes"));
  }
  if (ctx.inputs.size() > 4 && ctx.inputs[4]) {
    GRAFT_ASSIGN_OR_RETURN(steps, int_input(ctx, 4, "steps"));
  }
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return error(StatusCode::kInvalidModel, "Slice starts, ends, axes and steps differ in length");
  const auto is = contiguous_strides(in.dims());
  std::vector<int64_t> strides(is);
  std::vector<int64_t> expect(in.dims());
  int64_t offset = 0;
  for (size_t k = 0; k < starts.size(); ++k) {
    GRAFT_ASSIGN_OR_RETURN(int64_t a, normalize_axis(axes[k], r));
    if (steps[k] == 0) return error(StatusCode::kInvalidModel, "Slice step is 0");
    SliceAxis s = slice_axis(in.dims()[a], starts[k], ends[k], steps[k]);
    expect[a] = s.length;
    strides[a] = s.length > 1 ? is[a] * s.step : 0;  // |step| > extent must not overflow
    if (s.length > 0) offset += s.start * is[a];
  }
  if (expect != out.dims())
    return error(StatusCode::kInternal, "Slice output allocated as ", dims_str(out.dims()), " but the slice is ",
                 dims_str(expect));
  if (out.numel() > 0) gather_strided(in, out, strides, offset);
  return Status::ok();
}

Status gather(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2, 1));
  const Tensor& data = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  GRAFT_RETURN_IF_ERROR(same_dtype(data, out));
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, ctx.attrs->get_int("axis", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_attr, data.rank()));
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> idx, int_input(ctx, 1, "indices"));
  const size_t es = dtype_size(data.dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t a = 0; a < axis; ++a) outer *= data.dims()[a];
  for (int64_t a = axis + 1; a < data.rank(); ++a) inner *= data.dims()[a];
  const int64_t n = data.dims()[axis];
  const int64_t m = static_cast<int64_t>(idx.size());
  if (out.numel() != outer * m * inner)
    return error(StatusCode::kInternal, "Gather output ", dims_str(out.dims()), " has the wrong size");
  for (int64_t j = 0; j < m; ++j) {
    if (idx[j] < -n || idx[j] >= n)
      return error(StatusCode::kInvalidArgument, "Gather index ", idx[j], " is out of range for axis ", axis,
                   " of extent ", n);
    if (idx[j] < 0) idx[j] += n;
  }
  const char* src = static_cast<const char*>(data.data());
  char* dst = static_cast<char*>(out.data());
  const size_t block = static_cast<size_t>(inner) * es;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < m; ++j)
      std::memcpy(dst + ((o * m + j) * inner) * es, src + ((o * n + idx[j]) * inner) * es, block);
  return Status::ok();
}

Status expand(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1, 1));
  const Tensor& in = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  GRAFT_RETURN_IF_ERROR(same_dtype(in, out));
  const int64_t ro = out.rank(), ri = in.rank();
  if (ri > ro) return error(StatusCode::kInternal, "Expand output rank is below the input rank");
  const auto is = contiguous_strides(in.dims());
  std::vector<int64_t> strides(static_cast<size_t>(ro), 0);
  for (int64_t a = 0; a < ri; ++a) {
    const int64_t oa = a + ro - ri;
    const int64_t d = in.dims()[a];
    if (d == out.dims()[oa]) strides[oa] = is[a];
    else if (d != 1)
      return error(StatusCode::kInvalidArgument, "cannot expand ", dims_str(in.dims()), " to ",
                   dims_str(out.dims()));
  }
  if (out.numel() > 0) gather_strided(in, out, strides, 0);
  return Status::ok();
}

Status shape(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1, 1));
  const Tensor& in = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  const int64_t r = in.rank();
  GRAFT_ASSIGN_OR_RETURN(int64_t start, ctx.attrs->get_int("start", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t end, ctx.attrs->get_int("end", r));
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  const int64_t n = std::max<int64_t>(end - start, 0);
  if (out.dtype() != DataType::kInt64 || out.numel() != n)
    return error(StatusCode::kInternal, "Shape output must be int64[", n, "]");
  for (int64_t i = 0; i < n; ++i) out.data_as<int64_t>()[i] = in.dims()[start + i];
  return Status::ok();
}

Status constant(ExecContext& ctx) {
  if (ctx.outputs.empty() || !ctx.outputs[0]) return error(StatusCode::kInvalidModel, "Constant has no output");
  GRAFT_ASSIGN_OR_RETURN(Tensor v, constant_node_value(*ctx.attrs));
  Tensor& out = *ctx.outputs[0];
  GRAFT_RETURN_IF_ERROR(same_dtype(v, out));
  if (v.dims() != out.dims()) return error(StatusCode::kInternal, "Constant output has the wrong shape");
  return out.copy_data_from(v);
}

Status constant_of_shape(ExecContext& ctx) {
  if (ctx.outputs.empty() || !ctx.outputs[0])
    return error(StatusCode::kInvalidModel, "ConstantOfShape has no output");
  Tensor& out = *ctx.outputs[0];
  Tensor fill;
  if (ctx.attrs->has("value")) {
    GRAFT_ASSIGN_OR_RETURN(fill, ctx.attrs->get_tensor("value"));
    if (fill.numel() != 1)
      return error(StatusCode::kInvalidModel, "value must hold one element").with_attribute("value");
  } else {
    fill = Tensor::from_doubles(DataType::kFloat32, {1}, {0.0});
  }
  GRAFT_RETURN_IF_ERROR(same_dtype(fill, out));
  const size_t es = dtype_size(out.dtype());
  for (int64_t i = 0; i < out.numel(); ++i)
    std::memcpy(static_cast<char*>(out.data()) + i * static_cast<int64_t>(es), fill.data(), es);
  return Status::ok();
}

Status range(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 3, 1));
  Tensor& out = *ctx.outputs[0];
  for (size_t i = 0; i < 3; ++i) {
    if (!ctx.inputs[i] || ctx.inputs[i]->numel() != 1)
      return error(StatusCode::kInvalidModel, "Range input ", static_cast<int64_t>(i), " must be a scalar");
    GRAFT_RETURN_IF_ERROR(same_dtype(*ctx.inputs[i], out));
  }
  if (dtype_is_integer(out.dtype())) {
    const int64_t start = ctx.inputs[0]->to_int64_vector()[0];
    const int64_t delta = ctx.inputs[2]->to_int64_vector()[0];
    // start + i * delta lies between start and limit, but i * delta alone may not fit in int64:
    // computed in uint64 (defined wrap-around), whose result converts back exactly.
    auto value = [&](int64_t i) {
      return static_cast<int64_t>(static_cast<uint64_t>(start) + static_cast<uint64_t>(i) * static_cast<uint64_t>(delta));
    };
    for (int64_t i = 0; i < out.numel(); ++i) out.set(i, static_cast<double>(value(i)));
    if (out.dtype() == DataType::kInt64)  // exact for values beyond double's 53-bit mantissa
      for (int64_t i = 0; i < out.numel(); ++i) out.data_as<int64_t>()[i] = value(i);
  } else {
    const double start = ctx.inputs[0]->get(0), delta = ctx.inputs[2]->get(0);
    for (int64_t i = 0; i < out.numel(); ++i) out.set(i, start + static_cast<double>(i) * delta);
  }
  return Status::ok();
}

Status tile(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2, 1));
  const Tensor& in = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  GRAFT_RETURN_IF_ERROR(same_dtype(in, out));
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> reps, int_input(ctx, 1, "repeats"));
  const int64_t r = in.rank();
  if (static_cast<int64_t>(reps.size()) != r || out.rank() != r)
    return error(StatusCode::kInvalidModel, "Tile repeats has ", static_cast<int64_t>(reps.size()),
                 " entries for a rank-", r, " input");
  for (int64_t a = 0; a < r; ++a)
    if (out.dims()[a] != in.dims()[a] * reps[a])
      return error(StatusCode::kInternal, "Tile output shape ", dims_str(out.dims()), " does not match");
  const size_t es = dtype_size(in.dtype());
  const auto is = contiguous_strides(in.dims());
  std::vector<int64_t> idx(static_cast<size_t>(r), 0);
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t off = 0;
    for (int64_t a = 0; a < r; ++a) off += (idx[a] % in.dims()[a]) * is[a];
    std::memcpy(static_cast<char*>(out.data()) + i * static_cast<int64_t>(es),
                static_cast<const char*>(in.data()) + off * static_cast<int64_t>(es), es);
    for (int64_t a = r - 1; a >= 0; --a) {
      if (++idx[a] < out.dims()[a]) break;
      idx[a] = 0;
    }
  }
  return Status::ok();
}

}  // namespace graft::cpu
