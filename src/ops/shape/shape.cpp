// The shape family's definition: Slice's axis geometry (shared with the CUDA op, so both clamp
// starts and ends alike), the CPU references and the schemas (see shape.h).
#include "ops/shape/shape.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "backends/cpu/element_traits.h"
#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"  // check_io(ctx, inputs), op_name, bad_dtype
#include "core/checked_math.h"
#include "graft/attribute.h"
#include "graft/status.h"
#include "graft/tensor.h"
#include "ops/attr_util.h"  // int_input
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- Slice's axis geometry -------------------------------------------------------------------------

SliceAxis slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step) {
  SliceAxis r;
  r.step = step;
  if (step > 0) {
    start = start < 0 ? std::max<int64_t>(start < -dim ? 0 : start + dim, 0) : std::min(start, dim);
    end = end < 0 ? std::max<int64_t>(end < -dim ? 0 : end + dim, 0) : std::min(end, dim);
    r.start = start;
    r.length = end > start ? 1 + (end - start - 1) / step : 0;
  } else {
    start = start < 0 ? (start < -dim ? 0 : start + dim) : std::min(start, dim - 1);
    end = end < 0 ? (end < -dim ? -1 : end + dim) : std::min(end, dim - 1);
    r.start = start;
    const int64_t s = step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step;
    r.length = start > end ? 1 + (start - end - 1) / s : 0;
  }
  if (dim == 0) r.length = 0;
  return r;
}

// ---- CPU references -------------------------------------------------------------------------------

namespace cpu {

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

// ---- Size, DepthToSpace, SpaceToDepth -------------------------------------------------------------

Status size(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  Tensor& y = *ctx.outputs[0];
  GRAFT_CHECK(y.dtype() == DataType::kInt64 && y.numel() == 1);
  y.data_as<int64_t>()[0] = ctx.inputs[0]->numel();
  return Status::ok();
}

namespace {

Status depth_space(ExecContext& ctx, bool to_space) {
  GRAFT_RETURN_IF_ERROR(cpu::check_io(ctx, 1));  // unary_kernel.h's, not the two-count one above
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  GRAFT_ASSIGN_OR_RETURN(int64_t b, attrs_of(ctx).get_int("blocksize", 0));
  GRAFT_ASSIGN_OR_RETURN(std::string mode, attrs_of(ctx).get_string("mode", "DCR"));
  if (x.rank() != 4 || b < 1) return error(StatusCode::kInvalidModel, op_name(ctx), " needs 4-D input and blocksize >= 1");
  GRAFT_CHECK(x.numel() == y.numel() && x.dtype() == y.dtype() && y.rank() == 4);
  // Walk the depth (fewer channels, larger space) side; `space` is the other tensor.
  const Tensor& deep = to_space ? x : y;
  const Tensor& space = to_space ? y : x;
  const int64_t N = space.dims()[0], C = space.dims()[1], H = deep.dims()[2], W = deep.dims()[3];
  const int64_t SH = space.dims()[2], SW = space.dims()[3];
  const bool crd = to_space && mode == "CRD";
  const size_t es = dtype_size(x.dtype());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          for (int64_t i = 0; i < b; ++i)
            for (int64_t j = 0; j < b; ++j) {
              const int64_t dc = crd ? (c * b + i) * b + j : (i * b + j) * C + c;
              const int64_t d_off = ((n * C * b * b + dc) * H + h) * W + w;
              const int64_t s_off = ((n * C + c) * SH + h * b + i) * SW + w * b + j;
              const int64_t src = to_space ? d_off : s_off, dst = to_space ? s_off : d_off;
              std::memcpy(static_cast<char*>(y.data()) + dst * es, static_cast<const char*>(x.data()) + src * es, es);
            }
  return Status::ok();
}

}  // namespace

Status depth_to_space(ExecContext& ctx) { return depth_space(ctx, true); }
Status space_to_depth(ExecContext& ctx) { return depth_space(ctx, false); }

}  // namespace cpu

// ---- schemas: inference and the table rows -------------------------------------------------------

namespace infer {

// numel(in) / prod(known): cancels structurally equal symbolic factors first so that
// [batch,3,4] reshaped to [batch,-1] gives 12, not floor_div(batch*12, batch).
Dim divide_shape(const Shape& in, const std::vector<Dim>& known) {
  // Constant factors multiply as Dims: an overflowing product becomes an invalid Dim, which shape
  // inference reports, instead of a wrapped int64.
  std::vector<Dim> num;
  Dim num_c(int64_t{1}), den_c(int64_t{1});
  for (const Dim& d : in) {
    if (d.is_const()) num_c = num_c * d;
    else num.push_back(d);
  }
  std::vector<Dim> den_left;
  for (const Dim& d : known) {
    if (d.is_const()) {
      den_c = den_c * d;
      continue;
    }
    auto it = std::find_if(num.begin(), num.end(), [&](const Dim& n) { return n.same_as(d); });
    if (it != num.end()) num.erase(it);
    else den_left.push_back(d);
  }
  Dim n(int64_t{1});
  for (const Dim& d : num) n = n * d;
  Dim den(int64_t{1});
  for (const Dim& d : den_left) den = den * d;
  if (num_c.is_const() && den_c.is_const() && den_c.value() > 0 && num_c.value() % den_c.value() == 0)
    return floor_div(n * Dim(num_c.value() / den_c.value()), den);
  return floor_div(n * num_c, den * den_c);
}

}  // namespace infer

namespace {

using infer::divide_shape;
using infer::kMaxSymElements;

// Slice bounds at or beyond this magnitude mean "to the end" (exporters use INT_MAX or INT64_MAX).
constexpr int64_t kHugeBound = std::numeric_limits<int32_t>::max();

int64_t as_i64(size_t v) { return static_cast<int64_t>(v); }

bool all_const(const std::vector<Dim>& v) {
  return std::all_of(v.begin(), v.end(), [](const Dim& d) { return d.is_const(); });
}

std::vector<int64_t> const_values(const std::vector<Dim>& v) {
  std::vector<int64_t> out;
  for (const Dim& d : v) out.push_back(d.value());
  return out;
}

// Sets output i's symbolic contents when it is a small integer tensor.
void maybe_set_sym(InferContext& ctx, size_t i, DataType dt, std::vector<Dim> v) {
  if (!dtype_is_integer(dt) || as_i64(v.size()) > kMaxSymElements) return;
  ctx.set_output_sym_value(i, std::move(v));
}

// Contents of an integer input whose every element is known as a constant.
std::optional<std::vector<int64_t>> const_int_input(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return std::nullopt;
  auto v = ctx.input_dims_value(i);
  if (!v || !all_const(*v)) return std::nullopt;
  return const_values(*v);
}

// Length of a 1-D input when its shape says so.
std::optional<int64_t> vector_length(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i) || !ctx.input(i).shape) return std::nullopt;
  const Shape& s = *ctx.input(i).shape;
  if (s.size() == 1 && s[0].is_const()) return s[0].value();
  if (s.empty()) return 1;
  return std::nullopt;
}

// A shape of `rank` fresh symbols. The rank often comes from the declared length of a shape tensor
// (Reshape, Expand, ConstantOfShape, Unsqueeze): a file can declare int64[1e12], so it is bounded
// before any Dim is made.
Result<Shape> unknown_shape(InferContext& ctx, int64_t rank) {
  if (rank < 0 || rank > kMaxRank)
    return ctx.fail("the output would have rank ", rank, " (from the declared length of a shape input), more than "
                    "graft's limit of ", kMaxRank);
  Shape s;
  for (int64_t i = 0; i < rank; ++i) s.push_back(ctx.unknown_dim());
  return s;
}

Status need_inputs(const InferContext& ctx, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (!ctx.has_input(i)) return ctx.fail("input ", as_i64(i), " is required");
  return Status::ok();
}

// Passes the input's symbolic contents through ops that keep element order (Reshape, Squeeze...).
void forward_sym(InferContext& ctx) {
  if (auto v = ctx.input_dims_value(0)) maybe_set_sym(ctx, 0, ctx.input(0).dtype, std::move(*v));
}

// ---------------------------------------------------------------------------------------------
Status infer_reshape(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(need_inputs(ctx, 2));
  const TensorDesc& in = ctx.input(0);
  GRAFT_ASSIGN_OR_RETURN(int64_t allowzero, ctx.attrs().get_int("allowzero", 0));
  auto target = ctx.input_dims_value(1);
  if (!target) {
    auto n = vector_length(ctx, 1);
    if (!n) {
      TensorDesc d;
      d.dtype = in.dtype;
      ctx.set_output(0, d);
      return Status::ok();
    }
    GRAFT_ASSIGN_OR_RETURN(Shape unknown, unknown_shape(ctx, *n));
    ctx.set_output(0, TensorDesc(in.dtype, std::move(unknown)));
    return Status::ok();
  }
  if (as_i64(target->size()) > kMaxRank)
    return ctx.fail("shape has ", as_i64(target->size()), " entries, more than graft's rank limit of ", kMaxRank);
  Shape out(target->size());
  int64_t infer_at = -1;
  bool has_zero = false;
  for (size_t i = 0; i < target->size(); ++i) {
    const Dim& v = (*target)[i];
    out[i] = v;
    if (!v.is_const()) continue;
    const int64_t x = v.value();
    if (x == -1) {
      if (infer_at >= 0)
        return ctx.fail("shape ", shape_to_string(*target), " has more than one -1 (entries ", infer_at, " and ",
                        as_i64(i), ")");
      infer_at = as_i64(i);
    } else if (x == 0 && !allowzero) {
      if (!in.shape) {
        out[i] = ctx.unknown_dim();
        continue;
      }
      if (as_i64(i) >= in.rank())
        return ctx.fail("shape ", shape_to_string(*target), " copies dimension ", as_i64(i), " (0) but the input ",
                        shape_to_string(*in.shape), " has rank ", in.rank());
      out[i] = (*in.shape)[i];
    } else if (x == 0) {
      has_zero = true;
    } else if (x < -1) {
      return ctx.fail("shape ", shape_to_string(*target), " has invalid entry ", x);
    }
  }
  if (allowzero && has_zero && infer_at >= 0)
    return ctx.fail("shape ", shape_to_string(*target), " has both 0 and -1 while allowzero=1");
  if (infer_at >= 0) {
    if (!in.shape) {
      out[infer_at] = ctx.unknown_dim();
    } else {
      std::vector<Dim> known;
      for (size_t i = 0; i < out.size(); ++i)
        if (as_i64(i) != infer_at) known.push_back(out[i]);
      Dim total = shape_numel(*in.shape), rest = shape_numel(known);
      if (total.is_const() && rest.is_const()) {
        if (rest.value() == 0 || total.value() % rest.value() != 0)
          return ctx.fail("cannot reshape ", shape_to_string(*in.shape), " (", total.value(), " elements) to ",
                          shape_to_string(*target), ": ", total.value(), " is not a multiple of ", rest.value());
        out[infer_at] = Dim(total.value() / rest.value());
      } else {
        out[infer_at] = divide_shape(*in.shape, known);
      }
    }
  } else if (in.shape) {
    Dim a = shape_numel(*in.shape), b = shape_numel(out);
    if (a.is_const() && b.is_const() && a.value() != b.value())
      return ctx.fail("cannot reshape ", shape_to_string(*in.shape), " (", a.value(), " elements) to ",
                      shape_to_string(out), " (", b.value(), " elements)");
  }
  ctx.set_output(0, TensorDesc(in.dtype, out));
  forward_sym(ctx);
  return Status::ok();
}

Status infer_flatten(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(need_inputs(ctx, 1));
  GRAFT_ASSIGN_OR_RETURN(Shape s, ctx.input_shape(0));
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().get_int("axis", 1));
  const int64_t r = as_i64(s.size());
  if (axis < -r || axis > r)
    return ctx.fail("axis ", axis, " is out of range for rank ", r).with_attribute("axis");
  if (axis < 0) axis += r;
  Shape outer(s.begin(), s.begin() + axis), inner(s.begin() + axis, s.end());
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, {shape_numel(outer), shape_numel(inner)}));
  forward_sym(ctx);
  return Status::ok();
}

Status infer_transpose(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(need_inputs(ctx, 1));
  if (!ctx.input(0).shape) {
    // Rank unknown at build time (a value out of an If whose branches differ in rank): perm gives
    // the output's rank, each dim known once a run has the input; without perm nothing is known yet.
    TensorDesc out(ctx.input(0).dtype, Shape{});
    out.shape.reset();
    if (ctx.attrs().has("perm")) {
      GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> perm, ctx.attrs().get_ints("perm", {}));
      std::vector<bool> seen(perm.size(), false);
      for (int64_t p : perm) {
        if (p < 0 || p >= as_i64(perm.size()) || seen[static_cast<size_t>(p)])
          return ctx.fail("perm is not a permutation of 0..", as_i64(perm.size()) - 1).with_attribute("perm");
        seen[static_cast<size_t>(p)] = true;
      }
      Shape dims;
      for (size_t i = 0; i < perm.size(); ++i) dims.push_back(ctx.unknown_dim());
      out.shape = dims;
    }
    ctx.set_output(0, out);
    return Status::ok();
  }
  GRAFT_ASSIGN_OR_RETURN(Shape s, ctx.input_shape(0));
  const int64_t r = as_i64(s.size());
  std::vector<int64_t> rev(s.size());
  for (int64_t i = 0; i < r; ++i) rev[i] = r - 1 - i;
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> perm, ctx.attrs().get_ints("perm", rev));
  if (as_i64(perm.size()) != r)
    return ctx.fail("perm has ", as_i64(perm.size()), " entries for rank-", r, " input ", shape_to_string(s))
        .with_attribute("perm");
  std::vector<bool> seen(s.size(), false);
  Shape out;
  for (int64_t p : perm) {
    if (p < 0 || p >= r || seen[p])
      return ctx.fail("perm is not a permutation of 0..", r - 1).with_attribute("perm");
    seen[p] = true;
    out.push_back(s[p]);
  }
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, out));
  return Status::ok();
}

Status infer_concat(InferContext& ctx) {
  std::vector<size_t> present;
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) present.push_back(i);
  if (present.empty()) return ctx.fail("Concat needs at least one input");
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, ctx.attrs().require_int("axis"));
  const DataType dt = ctx.input(present[0]).dtype;
  std::optional<Shape> out;
  int64_t axis = 0;
  for (size_t i : present) {
    if (ctx.input(i).dtype != dt)
      return ctx.fail("inputs differ in dtype (", dtype_name(dt), " vs ", dtype_name(ctx.input(i).dtype), ")");
    if (!ctx.input(i).shape) {
      TensorDesc d;
      d.dtype = dt;
      ctx.set_output(0, d);
      return Status::ok();
    }
    const Shape& s = *ctx.input(i).shape;
    if (!out) {
      GRAFT_ASSIGN_OR_RETURN(axis, normalize_axis(axis_attr, as_i64(s.size())));
      out = s;
      continue;
    }
    if (s.size() != out->size())
      return ctx.fail("inputs differ in rank: ", shape_to_string(*out), " vs ", shape_to_string(s));
    for (size_t a = 0; a < s.size(); ++a) {
      Dim& o = (*out)[a];
      if (as_i64(a) == axis) {
        o = o + s[a];
      } else if (o.is_const() && s[a].is_const() && o.value() != s[a].value()) {
        return ctx.fail("inputs ", shape_to_string(*ctx.input(present[0]).shape), " and ", shape_to_string(s),
                        " differ in dimension ", as_i64(a), " (concatenating on axis ", axis, ")");
      } else if (!o.is_const() && s[a].is_const()) {
        o = s[a];  // the constant is the more informative of two dims that must agree
      }
    }
  }
  ctx.set_output(0, TensorDesc(dt, *out));
  if (out->size() == 1) {
    // The known parts of a shape built from pieces: a piece whose values are not known at build time
    // (a dim read from a graph input's values) but whose length is gives that many unknown dims, so
    // Concat(N, [2, 3]) is [?, 2, 3] and an Expand or Reshape to it keeps its 2 and 3.
    std::vector<Dim> all;
    for (size_t i : present) {
      auto v = ctx.input_dims_value(i);
      const auto& sh = ctx.input(i).shape;
      if (!v && sh && sh->size() == 1 && (*sh)[0].is_const() && (*sh)[0].value() <= kMaxSymElements) {
        v.emplace();
        for (int64_t k = 0; k < (*sh)[0].value(); ++k) v->push_back(ctx.unknown_dim());
      }
      if (!v) return Status::ok();
      all.insert(all.end(), v->begin(), v->end());
    }
    maybe_set_sym(ctx, 0, dt, std::move(all));
  }
  return Status::ok();
}

Status infer_split(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(need_inputs(ctx, 1));
  GRAFT_ASSIGN_OR_RETURN(Shape s, ctx.input_shape(0));
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, ctx.attrs().get_int("axis", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_attr, as_i64(s.size())));
  const DataType dt = ctx.input(0).dtype;
  const int64_t n = as_i64(ctx.num_outputs());
  if (n == 0) return ctx.fail("Split has no outputs");
  const Dim d = s[axis];
  std::vector<Dim> sizes;
  bool given = false;
  if (ctx.opset() < 13 && ctx.attrs().has("split")) {
    GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> v, ctx.attrs().get_ints("split", {}));
    sizes.assign(v.begin(), v.end());
    given = true;
  } else if (ctx.opset() >= 13 && ctx.has_input(1)) {
    auto v = ctx.input_dims_value(1);
    if (!v) {
      for (int64_t i = 0; i < n; ++i) {
        Shape o = s;
        o[axis] = ctx.unknown_dim();
        ctx.set_output(i, TensorDesc(dt, o));
      }
      return Status::ok();
    }
    sizes = *v;
    given = true;
  }
  if (given) {
    if (as_i64(sizes.size()) != n)
      return ctx.fail("split has ", as_i64(sizes.size()), " entries but the node has ", n, " outputs");
    Dim total(int64_t{0});
    for (const Dim& x : sizes) {
      if (x.is_const() && x.value() < 0) return ctx.fail("split has a negative entry ", x.value());
      total = total + x;
    }
    if (total.is_const() && d.is_const() && total.value() != d.value())
      return ctx.fail("split sizes sum to ", total.value(), " but axis ", axis, " of ", shape_to_string(s),
                      " has extent ", d.value());
  } else {
    if (ctx.opset() >= 18) {
      GRAFT_ASSIGN_OR_RETURN(int64_t num_outputs, ctx.attrs().get_int("num_outputs", n));
      if (num_outputs != n)
        return ctx.fail("num_outputs is ", num_outputs, " but the node has ", n, " outputs")
            .with_attribute("num_outputs");
    }
    if (d.is_const() && d.value() % n != 0) {
      if (ctx.opset() < 18)
        return ctx.fail("axis ", axis, " of ", shape_to_string(s), " (", d.value(), ") does not split into ", n,
                        " equal parts");
      // Opset 18: every chunk has ceil(d/n) elements except a smaller last one.
      const int64_t chunk = (d.value() + n - 1) / n;
      if (chunk * (n - 1) >= d.value())
        return ctx.fail("axis ", axis, " of ", shape_to_string(s), " (", d.value(), ") cannot be split into ",
                        n, " non-empty chunks");
      sizes.assign(static_cast<size_t>(n), Dim(chunk));
      sizes.back() = Dim(d.value() - chunk * (n - 1));
    } else if (ctx.opset() >= 18 && !d.is_const()) {
      Dim chunk = ceil_div(d, n);
      sizes.assign(static_cast<size_t>(n), chunk);
      sizes.back() = d - chunk * Dim(n - 1);
    } else {
      sizes.assign(static_cast<size_t>(n), floor_div(d, n));
    }
  }
  auto sym = ctx.input_dims_value(0);
  Dim offset(int64_t{0});
  for (int64_t i = 0; i < n; ++i) {
    Shape o = s;
    o[axis] = sizes[i];
    ctx.set_output(i, TensorDesc(dt, o));
    if (sym && s.size() == 1 && offset.is_const() && sizes[i].is_const() &&
        offset.value() + sizes[i].value() <= as_i64(sym->size()))
      maybe_set_sym(ctx, i, dt,
                    std::vector<Dim>(sym->begin() + offset.value(), sym->begin() + offset.value() + sizes[i].value()));
    offset = offset + sizes[i];
  }
  return Status::ok();
}

// Output extent of one sliced axis over a possibly symbolic extent; see slice_axis.
Dim slice_dim(const Dim& d, int64_t s, int64_t e, int64_t step) {
  if (d.is_const()) return Dim(slice_axis(d.value(), s, e, step).length);
  if (step > 0) {
    Dim st = s >= 0 ? (s == 0 ? Dim(0) : dim_min(Dim(s), d)) : (s <= -kHugeBound ? Dim(0) : dim_max(d + Dim(s), 0));
    Dim en = e >= kHugeBound ? d : e >= 0 ? dim_min(Dim(e), d) : (e <= -kHugeBound ? Dim(0) : dim_max(d + Dim(e), 0));
    Dim len = ceil_div(en - st, step);
    const bool nonneg = s == 0 || e >= kHugeBound || (s < 0 && e < 0 && s <= e);
    return nonneg ? len : dim_max(len, 0);
  }
  Dim last = d - Dim(1);
  Dim st = s >= kHugeBound ? last : s >= 0 ? dim_min(Dim(s), last) : (s <= -kHugeBound ? Dim(0) : dim_max(d + Dim(s), 0));
  Dim en = e <= -kHugeBound ? Dim(-1) : e < 0 ? dim_max(d + Dim(e), -1) : dim_min(Dim(e), last);
  const int64_t ns = step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step;
  return dim_max(ceil_div(st - en, ns), 0);
}

Status infer_slice(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(need_inputs(ctx, 3));
  GRAFT_ASSIGN_OR_RETURN(Shape s, ctx.input_shape(0));
  const DataType dt = ctx.input(0).dtype;
  const int64_t r = as_i64(s.size());
  auto starts = ctx.input_dims_value(1);
  auto ends = ctx.input_dims_value(2);
  std::optional<std::vector<int64_t>> axes, steps;
  auto n = starts ? std::optional<int64_t>(as_i64(starts->size())) : vector_length(ctx, 1);
  if (ctx.has_input(3)) {
    axes = const_int_input(ctx, 3);
  } else if (n) {
    axes.emplace(static_cast<size_t>(*n));
    std::iota(axes->begin(), axes->end(), 0);
  }
  if (ctx.has_input(4)) {
    steps = const_int_input(ctx, 4);
  } else if (n) {
    steps.emplace(static_cast<size_t>(*n), 1);
  }
  if (!axes) {  // which axes change is unknown: only the rank survives
    GRAFT_ASSIGN_OR_RETURN(Shape unknown, unknown_shape(ctx, r));
    ctx.set_output(0, TensorDesc(dt, std::move(unknown)));
    return Status::ok();
  }
  const size_t k = axes->size();
  if ((starts && starts->size() != k) || (ends && ends->size() != k) || (steps && steps->size() != k))
    return ctx.fail("starts, ends, axes and steps must have the same length (axes has ", as_i64(k), ")");
  Shape out = s;
  std::vector<bool> seen(s.size(), false);
  bool exact = starts && ends && steps && all_const(*starts) && all_const(*ends);
  std::vector<SliceAxis> resolved(s.size());
  for (size_t i = 0; i < k; ++i) {
    GRAFT_ASSIGN_OR_RETURN(int64_t a, normalize_axis((*axes)[i], r));
    if (seen[a]) return ctx.fail("axis ", a, " is sliced twice");
    seen[a] = true;
    if (steps && (*steps)[i] == 0) return ctx.fail("step for axis ", a, " is 0");
    if (!starts || !ends || !steps || !(*starts)[i].is_const() || !(*ends)[i].is_const()) {
      // x[:, :n] with a symbolic n equal to the whole extent is common enough to keep exact.
      if (starts && ends && steps && (*starts)[i] == 0 && (*steps)[i] == 1 && (*ends)[i].same_as(s[a]))
        continue;
      out[a] = ctx.unknown_dim();
      continue;
    }
    const int64_t st = (*starts)[i].value(), en = (*ends)[i].value(), sp = (*steps)[i];
    out[a] = slice_dim(s[a], st, en, sp);
    if (s[a].is_const()) resolved[a] = slice_axis(s[a].value(), st, en, sp);
  }
  ctx.set_output(0, TensorDesc(dt, out));
  auto sym = ctx.input_dims_value(0);
  if (exact && sym && r == 1 && s[0].is_const() && as_i64(sym->size()) == s[0].value()) {
    SliceAxis sa = seen[0] ? resolved[0] : SliceAxis{0, 1, s[0].value()};
    std::vector<Dim> v;
    for (int64_t j = 0; j < sa.length; ++j) v.push_back((*sym)[sa.start + j * sa.step]);
    maybe_set_sym(ctx, 0, dt, std::move(v));
  }
  return Status::ok();
}

Status infer_gather(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(need_inputs(ctx, 2));
  GRAFT_ASSIGN_OR_RETURN(Shape s, ctx.input_shape(0));
  GRAFT_ASSIGN_OR_RETURN(Shape is, ctx.input_shape(1));
  if (s.empty()) return ctx.fail("Gather data must have rank >= 1");
  if (!dtype_is_integer(ctx.input(1).dtype))
    return ctx.fail("indices must be int32 or int64, got ", dtype_name(ctx.input(1).dtype));
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, ctx.attrs().get_int("axis", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_attr, as_i64(s.size())));
  Shape out(s.begin(), s.begin() + axis);
  out.insert(out.end(), is.begin(), is.end());
  out.insert(out.end(), s.begin() + axis + 1, s.end());
  const DataType dt = ctx.input(0).dtype;
  ctx.set_output(0, TensorDesc(dt, out));
  auto idx = const_int_input(ctx, 1);
  if (idx && s[axis].is_const()) {
    const int64_t n = s[axis].value();
    for (int64_t j : *idx)
      if (j < -n || j >= n)
        return ctx.fail("index ", j, " is out of range for axis ", axis, " of ", shape_to_string(s));
  }
  auto sym = ctx.input_dims_value(0);
  if (idx && sym && s.size() == 1 && s[0].is_const() && as_i64(sym->size()) == s[0].value()) {
    std::vector<Dim> v;
    const int64_t n = s[0].value();
    for (int64_t j : *idx) v.push_back((*sym)[j < 0 ? j + n : j]);
    maybe_set_sym(ctx, 0, dt, std::move(v));
  }
  return Status::ok();
}

// Axes of Squeeze/Unsqueeze: an attribute before opset 13, an input from 13. nullopt = absent, or
// (from 13) an input whose contents are not known yet.
Status squeeze_axes(const InferContext& ctx, bool required, std::optional<std::vector<int64_t>>* out) {
  out->reset();
  if (ctx.opset() < 13) {
    if (!ctx.attrs().has("axes")) {
      if (required) return ctx.fail("attribute 'axes' is required").with_attribute("axes");
      return Status::ok();
    }
    GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> v, ctx.attrs().get_ints("axes", {}));
    *out = std::move(v);
    return Status::ok();
  }
  if (!ctx.has_input(1)) {
    if (required) return ctx.fail("input 1 (axes) is required");
    return Status::ok();
  }
  *out = const_int_input(ctx, 1);
  return Status::ok();
}

// Build-time result when the axes are a runtime input: only the rank may be known.
Status set_unknown_axes_output(InferContext& ctx, int64_t rank_delta) {
  TensorDesc d;
  d.dtype = ctx.input(0).dtype;
  auto n = vector_length(ctx, 1);
  if (n && ctx.input(0).shape) {
    if (*n > kMaxRank) return ctx.fail("axes has ", *n, " entries, more than graft's rank limit of ", kMaxRank);
    GRAFT_ASSIGN_OR_RETURN(d.shape, unknown_shape(ctx, ctx.input(0).rank() + rank_delta * *n));
  }
  ctx.set_output(0, d);
  return Status::ok();
}

Status infer_squeeze(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(need_inputs(ctx, 1));
  GRAFT_ASSIGN_OR_RETURN(Shape s, ctx.input_shape(0));
  std::optional<std::vector<int64_t>> axes;
  GRAFT_RETURN_IF_ERROR(squeeze_axes(ctx, false, &axes));
  if (!axes && ctx.has_input(1)) {
    return set_unknown_axes_output(ctx, -1);
  }
  const int64_t r = as_i64(s.size());
  std::vector<bool> drop(s.size(), false);
  if (axes) {
    for (int64_t a0 : *axes) {
      GRAFT_ASSIGN_OR_RETURN(int64_t a, normalize_axis(a0, r));
      if (s[a].is_const() && s[a].value() != 1)
        return ctx.fail("cannot squeeze axis ", a, " of ", shape_to_string(s), ": its extent is not 1");
      drop[a] = true;
    }
  } else {
    // Symbolic dims are assumed not to be 1; run-time inference sees the real extents.
    for (size_t a = 0; a < s.size(); ++a) drop[a] = s[a] == 1;
  }
  Shape out;
  for (size_t a = 0; a < s.size(); ++a)
    if (!drop[a]) out.push_back(s[a]);
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, out));
  forward_sym(ctx);
  return Status::ok();
}

Status infer_unsqueeze(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(need_inputs(ctx, 1));
  GRAFT_ASSIGN_OR_RETURN(Shape s, ctx.input_shape(0));
  std::optional<std::vector<int64_t>> axes;
  GRAFT_RETURN_IF_ERROR(squeeze_axes(ctx, true, &axes));
  if (!axes) {
    return set_unknown_axes_output(ctx, 1);
  }
  const int64_t r = as_i64(s.size()) + as_i64(axes->size());
  std::vector<bool> ins(static_cast<size_t>(r), false);
  for (int64_t a0 : *axes) {
    if (a0 < -r || a0 >= r) return ctx.fail("axis ", a0, " is out of range for output rank ", r);
    const int64_t a = a0 < 0 ? a0 + r : a0;
    if (ins[a]) return ctx.fail("axis ", a, " appears twice in axes");
    ins[a] = true;
  }
  Shape out;
  size_t j = 0;
  for (int64_t a = 0; a < r; ++a) out.push_back(ins[a] ? Dim(1) : s[j++]);
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, out));
  forward_sym(ctx);
  return Status::ok();
}

Status infer_expand(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(need_inputs(ctx, 2));
  GRAFT_ASSIGN_OR_RETURN(Shape s, ctx.input_shape(0));
  const DataType dt = ctx.input(0).dtype;
  auto target = ctx.input_dims_value(1);
  if (!target) {
    auto n = vector_length(ctx, 1);
    TensorDesc d;
    d.dtype = dt;
    if (n) {
      GRAFT_ASSIGN_OR_RETURN(d.shape, unknown_shape(ctx, std::max(*n, as_i64(s.size()))));
    }
    ctx.set_output(0, d);
    return Status::ok();
  }
  for (const Dim& x : *target)
    if (x.is_const() && x.value() < 0) return ctx.fail("shape ", shape_to_string(*target), " has a negative entry");
  auto out = broadcast_shapes(s, *target);
  if (!out.is_ok())
    return ctx.fail("cannot expand ", shape_to_string(s), " to ", shape_to_string(*target), ": ",
                    out.status().message());
  ctx.set_output(0, TensorDesc(dt, *out));
  return Status::ok();
}

Status infer_shape(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(need_inputs(ctx, 1));
  const TensorDesc& in = ctx.input(0);
  if (!in.shape) {
    ctx.set_output(0, TensorDesc(DataType::kInt64, {ctx.unknown_dim()}));
    return Status::ok();
  }
  const int64_t r = in.rank();
  GRAFT_ASSIGN_OR_RETURN(int64_t start, ctx.attrs().get_int("start", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t end, ctx.attrs().get_int("end", r));
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  std::vector<Dim> v;
  for (int64_t i = start; i < end; ++i) v.push_back((*in.shape)[i]);
  ctx.set_output(0, TensorDesc(DataType::kInt64, {Dim(as_i64(v.size()))}));
  ctx.set_output_sym_value(0, std::move(v));
  return Status::ok();
}

void set_sym_from_tensor(InferContext& ctx, const Tensor& t) {
  if (!dtype_is_integer(t.dtype()) || t.rank() > 1 || t.numel() > kMaxSymElements) return;
  auto v = t.to_int64_vector();
  ctx.set_output_sym_value(0, std::vector<Dim>(v.begin(), v.end()));
}

Status infer_constant(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Tensor t, cpu::constant_node_value(ctx.attrs()));
  ctx.set_output(0, TensorDesc(t.dtype(), shape_from_values(t.dims())));
  set_sym_from_tensor(ctx, t);
  return Status::ok();
}

Status infer_constant_of_shape(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(need_inputs(ctx, 1));
  DataType dt = DataType::kFloat32;
  std::optional<int64_t> fill;
  if (ctx.attrs().has("value")) {
    GRAFT_ASSIGN_OR_RETURN(Tensor v, ctx.attrs().get_tensor("value"));
    if (v.numel() != 1) return ctx.fail("value must hold exactly one element").with_attribute("value");
    dt = v.dtype();
    if (dtype_is_integer(dt)) fill = v.to_int64_vector()[0];
  }
  auto target = ctx.input_dims_value(0);
  TensorDesc d;
  d.dtype = dt;
  if (target) {
    for (const Dim& x : *target)
      if (x.is_const() && x.value() < 0) return ctx.fail("shape ", shape_to_string(*target), " has a negative entry");
    d.shape = *target;
  } else if (auto n = vector_length(ctx, 0)) {
    GRAFT_ASSIGN_OR_RETURN(d.shape, unknown_shape(ctx, *n));
  }
  ctx.set_output(0, d);
  if (fill && d.shape && d.shape->size() <= 1 && shape_is_static(*d.shape)) {
    const int64_t n = shape_values(*d.shape).empty() ? 1 : shape_values(*d.shape)[0];
    if (n <= kMaxSymElements) maybe_set_sym(ctx, 0, dt, std::vector<Dim>(static_cast<size_t>(n), Dim(*fill)));
  }
  return Status::ok();
}

// Range outputs above 2^53 elements could not be indexed through double (the CPU kernel's
// float path) and would need exabytes anyway; the allocation check bounds the rest.
constexpr int64_t kMaxRangeLength = int64_t{1} << 53;

// Number of elements of Range(start, limit, delta) for integers, max(ceil((limit-start)/delta), 0),
// computed without overflow: limit - start may not fit in int64 (e.g. INT64_MAX - INT64_MIN).
Result<int64_t> range_length_int(int64_t start, int64_t limit, int64_t delta) {
  if ((delta > 0 && limit <= start) || (delta < 0 && limit >= start)) return int64_t{0};
  // |limit - start| as unsigned never overflows; delta's magnitude likewise.
  const uint64_t span = delta > 0 ? static_cast<uint64_t>(limit) - static_cast<uint64_t>(start)
                                  : static_cast<uint64_t>(start) - static_cast<uint64_t>(limit);
  const uint64_t step = delta > 0 ? static_cast<uint64_t>(delta) : uint64_t{0} - static_cast<uint64_t>(delta);
  const uint64_t n = span / step + (span % step != 0 ? 1 : 0);
  if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return error(StatusCode::kInvalidModel, "Range from ", start, " to ", limit, " by ", delta,
                 " has more elements than fit in a 64-bit integer");
  return static_cast<int64_t>(n);
}

Status infer_range(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(need_inputs(ctx, 3));
  const DataType dt = ctx.input(0).dtype;
  for (size_t i = 1; i < 3; ++i)
    if (ctx.input(i).dtype != dt)
      return ctx.fail("start, limit and delta must share a dtype (", dtype_name(dt), " vs ",
                      dtype_name(ctx.input(i).dtype), ")");
  const Tensor* vs[3] = {ctx.input_value(0), ctx.input_value(1), ctx.input_value(2)};
  if (vs[0] && vs[1] && vs[2]) {
    for (const Tensor* t : vs)
      if (t->numel() != 1) return ctx.fail("start, limit and delta must be scalars");
    int64_t n = 0;
    if (dtype_is_integer(dt)) {
      const int64_t st = vs[0]->to_int64_vector()[0], li = vs[1]->to_int64_vector()[0],
                    de = vs[2]->to_int64_vector()[0];
      if (de == 0) return ctx.fail("delta is 0");
      GRAFT_ASSIGN_OR_RETURN(n, range_length_int(st, li, de));
      if (n > kMaxRangeLength)
        return ctx.fail("Range from ", st, " to ", li, " by ", de, " has ", n, " elements, more than the limit of ",
                        kMaxRangeLength);
      ctx.set_output(0, TensorDesc(dt, {Dim(n)}));
      if (n <= kMaxSymElements) {
        std::vector<Dim> v;
        // In uint64: i * de alone may exceed int64 although st + i * de lies between start and limit.
        for (int64_t i = 0; i < n; ++i)
          v.push_back(Dim(static_cast<int64_t>(static_cast<uint64_t>(st) + static_cast<uint64_t>(i) * static_cast<uint64_t>(de))));
        maybe_set_sym(ctx, 0, dt, std::move(v));
      }
      return Status::ok();
    }
    const double st = vs[0]->get(0), li = vs[1]->get(0), de = vs[2]->get(0);
    if (de == 0) return ctx.fail("delta is 0");
    if (!std::isfinite(st) || !std::isfinite(li) || !std::isfinite(de))
      return ctx.fail("Range start ", st, ", limit ", li, " and delta ", de, " must be finite");
    // In double, checked before the conversion to int64 (a NaN, infinite or out-of-range double
    // converted to int64 is undefined behaviour).
    const double len = std::ceil((li - st) / de);
    if (std::isnan(len) || len > static_cast<double>(kMaxRangeLength))
      return ctx.fail("Range from ", st, " to ", li, " by ", de, " has ", len, " elements, more than the limit of ",
                      kMaxRangeLength);
    n = len > 0 ? static_cast<int64_t>(len) : 0;
    ctx.set_output(0, TensorDesc(dt, {Dim(n)}));
    return Status::ok();
  }
  auto st = ctx.input_dims_value(0), li = ctx.input_dims_value(1), de = ctx.input_dims_value(2);
  if (dtype_is_integer(dt) && st && li && de && st->size() == 1 && li->size() == 1 && de->size() == 1 &&
      (*de)[0].is_const() && (*de)[0].value() != 0) {
    ctx.set_output(0, TensorDesc(dt, {dim_max(ceil_div((*li)[0] - (*st)[0], (*de)[0]), 0)}));
    return Status::ok();
  }
  ctx.set_output(0, TensorDesc(dt, {ctx.unknown_dim()}));
  return Status::ok();
}

Status infer_tile(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(need_inputs(ctx, 2));
  GRAFT_ASSIGN_OR_RETURN(Shape s, ctx.input_shape(0));
  const DataType dt = ctx.input(0).dtype;
  auto reps = ctx.input_dims_value(1);
  if (!reps) {
    GRAFT_ASSIGN_OR_RETURN(Shape unknown, unknown_shape(ctx, as_i64(s.size())));
    ctx.set_output(0, TensorDesc(dt, std::move(unknown)));
    return Status::ok();
  }
  if (reps->size() != s.size())
    return ctx.fail("repeats has ", as_i64(reps->size()), " entries for input ", shape_to_string(s));
  Shape out;
  for (size_t a = 0; a < s.size(); ++a) {
    if ((*reps)[a].is_const() && (*reps)[a].value() < 0)
      return ctx.fail("repeats ", shape_to_string(*reps), " has a negative entry");
    out.push_back(s[a] * (*reps)[a]);
  }
  ctx.set_output(0, TensorDesc(dt, out));
  return Status::ok();
}

// ---- Size, DepthToSpace, SpaceToDepth -------------------------------------------------------------

using namespace infer;

Status infer_size(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  ctx.set_output(0, desc_of(kI64, Shape{}));
  // The element count is shape arithmetic: keep it symbolic so shape subgraphs resolve.
  if (const auto& s = ctx.input(0).shape) {
    Dim n(1);
    for (const Dim& d : *s) n = n * d;
    ctx.set_output_sym_value(0, {n});
  }
  return Status::ok();
}

// DepthToSpace (to_space) and SpaceToDepth over NCHW.
Status infer_depth_space(InferContext& ctx, bool to_space) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  auto bs = ctx.attrs().get_int("blocksize", 0);
  if (!bs) return Status(bs.status()).with_attribute("blocksize");
  if (!ctx.attrs().find("blocksize")) return Status(ctx.fail("is required")).with_attribute("blocksize");
  if (bs.value() < 1) return Status(ctx.fail("must be >= 1, got ", bs.value())).with_attribute("blocksize");
  if (to_space) {
    auto mode = ctx.attrs().get_string("mode", "DCR");
    if (!mode) return Status(mode.status()).with_attribute("mode");
    if (mode.value() != "DCR" && mode.value() != "CRD")
      return Status(ctx.fail("must be DCR or CRD, got '", mode.value(), "'")).with_attribute("mode");
  }
  const TensorDesc& x = ctx.input(0);
  if (!x.shape) {
    ctx.set_output(0, x);
    return Status::ok();
  }
  if (x.rank() != 4) return ctx.fail("input must be 4-D NCHW, got ", x.to_string());
  const Shape& in = *x.shape;
  const Dim b(bs.value()), bb(bs.value() * bs.value());
  auto divisible = [&](const Dim& d, const Dim& by, const char* what) -> Status {
    if (d.is_const() && d.value() % by.value() != 0)
      return ctx.fail(what, " ", d.value(), " of ", x.to_string(), " is not divisible by ", by.value());
    return Status::ok();
  };
  Shape s;
  if (to_space) {
    GRAFT_RETURN_IF_ERROR(divisible(in[1], bb, "channels"));
    s = {in[0], floor_div(in[1], bb), in[2] * b, in[3] * b};
  } else {
    GRAFT_RETURN_IF_ERROR(divisible(in[2], b, "height"));
    GRAFT_RETURN_IF_ERROR(divisible(in[3], b, "width"));
    s = {in[0], in[1] * bb, floor_div(in[2], b), floor_div(in[3], b)};
  }
  ctx.set_output(0, desc_of(x.dtype, s));
  return Status::ok();
}
Status infer_depth_to_space(InferContext& ctx) { return infer_depth_space(ctx, true); }
Status infer_space_to_depth(InferContext& ctx) { return infer_depth_space(ctx, false); }

}  // namespace

void append_shape_ops(std::vector<OpEntry>& out) {
  out.push_back({"Concat", 11, infer_concat, cpu::concat});
  out.push_back(takes_strings(keeps_float32({"Constant", 11, infer_constant, cpu::constant})));
  out.push_back(keeps_float32({"ConstantOfShape", 9,  // unchanged since opset 9
                               infer_constant_of_shape, cpu::constant_of_shape}));
  out.push_back({"Expand", 11, infer_expand, cpu::expand});
  out.push_back(reshapes_in_place({"Flatten", 11, infer_flatten, cpu::reshape_like}));
  out.push_back({"Gather", 11, infer_gather, cpu::gather});
  out.push_back(keeps_float32({"Range", 11, infer_range, cpu::range}));
  out.push_back(reshapes_in_place({"Reshape", 11, infer_reshape, cpu::reshape_like}));
  out.push_back(keeps_float32({"Shape", 11, infer_shape, cpu::shape}));
  out.push_back({"Slice", 11, infer_slice, cpu::slice});
  out.push_back({"Split", 11, infer_split, cpu::split});
  out.push_back(reshapes_in_place({"Squeeze", 11, infer_squeeze, cpu::reshape_like}));
  out.push_back({"Tile", 11, infer_tile, cpu::tile});
  out.push_back({"Transpose", 11, infer_transpose, cpu::transpose});
  out.push_back(reshapes_in_place({"Unsqueeze", 11, infer_unsqueeze, cpu::reshape_like}));
  out.push_back(keeps_float32({"Size", 1, infer_size, cpu::size}));
  out.push_back({"DepthToSpace", 11, infer_depth_to_space, cpu::depth_to_space});
  out.push_back({"SpaceToDepth", 11, infer_space_to_depth, cpu::space_to_depth});
}

}  // namespace graft
