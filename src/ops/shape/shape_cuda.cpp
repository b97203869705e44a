// The shape family's CUDA ops (host code only: the kernels are the data-movement library of
// src/backends/cuda/shape_kernels.cu, which other ops share): Reshape/Flatten/Squeeze/Unsqueeze as
// device-to-device copies (their shape inputs are host inputs), Transpose and Slice through a
// strided gather, Expand through a broadcast copy, Concat/Split as pitched row copies, Gather with
// device indices, and Tile. Parameters come from the CPU reference's own helpers (slice_axis, the
// view plans), so both backends read a node the same way.
#include "ops/shape/shape.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/shape_kernels.cuh"
#include "ops/attr_util.h"
#include "ops/elementwise/elementwise.h"  // the elementwise launchers
#include "ops/views/views.h"

namespace graft::cuda {
namespace {

using namespace util;


Status copy_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  if (x.nbytes() != y.nbytes()) return fail(ex, StatusCode::kInternal, "output size differs from input size");
  if (x.nbytes() == 0 || x.data() == y.data()) return Status::ok();
  return launch_status(cudaMemcpyAsync(y.data(), x.data(), x.nbytes(), cudaMemcpyDeviceToDevice, stream_of(ex)), ex,
                       "cudaMemcpyAsync");
}

Status transpose_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  const int64_t r = x.rank();
  std::vector<int64_t> rev(static_cast<size_t>(r));
  std::iota(rev.rbegin(), rev.rend(), 0);
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> perm, attrs_of(ex).get_ints("perm", rev));
  if (static_cast<int64_t>(perm.size()) != r) return fail(ex, StatusCode::kInvalidModel, "perm has the wrong length");
  for (int64_t a : perm)
    if (a < 0 || a >= r) return fail(ex, StatusCode::kInvalidModel, "perm entry out of range");
  k::Strided p;
  if (!k::permute_view(x.dims(), perm, &p))
    return fail(ex, StatusCode::kUnsupported, "more than ", k::kMaxRank, " axes after merging");
  if (y.numel() != x.numel()) return fail(ex, StatusCode::kInternal, "output size differs from input size");
  return launch_status(k::launch_strided_gather(x.data(), y.data(), static_cast<int>(dtype_size(x.dtype())), p, y.numel(),
                                                stream_of(ex)), ex);
}

Status expand_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  k::Bcast p;
  std::string why;
  if (!make_bcast(y.dims(), {x.dims()}, &p, &why)) return fail(ex, StatusCode::kInvalidModel, why);
  return launch_status(k::launch_broadcast_copy(x.data(), y.data(), static_cast<int>(dtype_size(x.dtype())), p, y.numel(),
                                                stream_of(ex)), ex);
}

// ---- Concat / Split: every input's / output's pitched row copy in one launch ----

bool concat_supports(const Node& n, std::string* why) {
  if (!input0_given(n, why)) return false;
  for (size_t i = 1; i < n.inputs.size(); ++i)
    if (n.inputs[i] && in_dtype(n, i) != in_dtype(n, 0)) return reject(why, "inputs differ in dtype");
  return output_dtype_matches(n, why);
}

Status concat_run(CudaExec& ex) {
  Tensor& y = *ex.ctx->outputs[0];
  auto axis_attr = attrs_of(ex).require_int("axis");
  if (!axis_attr.is_ok()) return with_node(ex, axis_attr.status());
  auto axis_r = normalize_axis(axis_attr.value(), y.rank());
  if (!axis_r.is_ok()) return with_node(ex, axis_r.status());
  const int64_t axis = axis_r.value();
  int64_t outer = 1, inner = 1;
  for (int64_t a = 0; a < axis; ++a) outer *= y.dims()[a];
  for (int64_t a = axis + 1; a < y.rank(); ++a) inner *= y.dims()[a];
  const int64_t out_row = y.dims()[axis] * inner;
  int64_t col = 0;
  std::vector<k::PitchedCopy> copies;
  for (const Tensor* x : ex.ctx->inputs) {
    if (!x) continue;
    GRAFT_RETURN_IF_ERROR(check_same_dtype(ex, *x, y));
    if (x->rank() != y.rank()) return fail(ex, StatusCode::kInvalidModel, "inputs differ in rank");
    const int64_t row = x->dims()[axis] * inner;
    if (col + row > out_row || x->numel() != outer * row)
      return fail(ex, StatusCode::kInternal, "input ", dims_str(x->dims()), " does not fit output ", dims_str(y.dims()));
    copies.push_back({x->data(), static_cast<char*>(y.data()) + col * esize(y), row, row, out_row});
    col += row;
  }
  if (col != out_row) return fail(ex, StatusCode::kInternal, "inputs do not fill the output");
  return launch_status(k::launch_pitched_copies(copies.data(), static_cast<int>(copies.size()), esize(y),
                                                outer, stream_of(ex)),
                       ex);
}

// GraftConcatSlices (defined in src/ops/views/views.cpp; its CUDA op is here, on Concat's copies):
// each input's slice copied into its columns, all in one launch.
Status concat_slices_run(CudaExec& ex) {
  Tensor& y = *ex.ctx->outputs[0];
  const auto& in = ex.ctx->inputs;
  for (const Tensor* x : in)
    if (!x) return fail(ex, StatusCode::kInvalidModel, "an input is missing");
  auto c = read_concat_slices(attrs_of(ex), in.size(), static_cast<size_t>(y.rank()));
  if (!c.is_ok()) return with_node(ex, c.status());
  const int64_t axis = c.value().axis;
  int64_t outer = 1, inner = 1;
  for (int64_t a = 0; a < axis; ++a) outer *= y.dims()[static_cast<size_t>(a)];
  for (int64_t a = axis + 1; a < y.rank(); ++a) inner *= y.dims()[static_cast<size_t>(a)];
  const int64_t out_extent = y.dims()[static_cast<size_t>(axis)];
  const int es = esize(y);
  int64_t col = 0;
  std::vector<k::PitchedCopy> copies;
  for (size_t i = 0; i < in.size(); ++i) {
    const Tensor& x = *in[i];
    GRAFT_RETURN_IF_ERROR(check_same_dtype(ex, x, y));
    if (x.rank() != y.rank()) return fail(ex, StatusCode::kInvalidModel, "inputs differ in rank");
    const int64_t extent = x.dims()[static_cast<size_t>(axis)];
    const auto [b, e] = slice_range(c.value().starts[i], c.value().ends[i], extent);
    if (col + (e - b) > out_extent || x.numel() != outer * extent * inner)
      return fail(ex, StatusCode::kInternal, "input ", dims_str(x.dims()), " does not fit output ", dims_str(y.dims()));
    copies.push_back({static_cast<const char*>(x.data()) + b * inner * es, static_cast<char*>(y.data()) + col * inner * es,
                      (e - b) * inner, extent * inner, out_extent * inner});
    col += e - b;
  }
  if (col != out_extent) return fail(ex, StatusCode::kInternal, "the slices do not fill the output");
  return launch_status(k::launch_pitched_copies(copies.data(), static_cast<int>(copies.size()), es, outer, stream_of(ex)),
                       ex);
}

bool split_supports(const Node& n, std::string* why) {
  if (!same_bytes_ok(n, why)) return false;
  for (const Value* o : n.outputs)
    if (!o) return reject(why, "an output is omitted");
  return true;
}

// The split sizes are the allocated outputs' extents along the axis, as in the CPU reference
// (inference computed them from the split attribute / input / num_outputs).
Status split_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  auto axis_attr = attrs_of(ex).get_int("axis", 0);
  if (!axis_attr.is_ok()) return with_node(ex, axis_attr.status());
  auto axis_r = normalize_axis(axis_attr.value(), x.rank());
  if (!axis_r.is_ok()) return with_node(ex, axis_r.status());
  const int64_t axis = axis_r.value();
  int64_t outer = 1, inner = 1;
  for (int64_t a = 0; a < axis; ++a) outer *= x.dims()[a];
  for (int64_t a = axis + 1; a < x.rank(); ++a) inner *= x.dims()[a];
  const int64_t in_row = x.dims()[axis] * inner;
  int64_t col = 0;
  std::vector<k::PitchedCopy> copies;
  for (Tensor* y : ex.ctx->outputs) {
    if (!y) return fail(ex, StatusCode::kUnsupported, "an output is omitted");
    GRAFT_RETURN_IF_ERROR(check_same_dtype(ex, x, *y));
    if (y->rank() != x.rank()) return fail(ex, StatusCode::kInternal, "output rank differs from the input rank");
    const int64_t row = y->dims()[axis] * inner;
    if (col + row > in_row || y->numel() != outer * row)
      return fail(ex, StatusCode::kInternal, "output ", dims_str(y->dims()), " does not fit input ", dims_str(x.dims()));
    copies.push_back({static_cast<const char*>(x.data()) + col * esize(x), y->data(), row, in_row, row});
    col += row;
  }
  if (col != in_row) return fail(ex, StatusCode::kInternal, "outputs do not cover the input");
  return launch_status(k::launch_pitched_copies(copies.data(), static_cast<int>(copies.size()), esize(x),
                                                outer, stream_of(ex)),
                       ex);
}

// ---- Slice: a strided gather from the first selected element (negative steps: negative strides) ----

bool slice_supports(const Node& n, std::string* why) {
  if (n.opset != 0 && n.opset < 10) return reject(why, "Slice before opset 10 (attribute form) is not handled");
  return same_bytes_ok(n, why) && rank_fits(n, 0, why);
}

Status slice_run(CudaExec& ex) {
  const ExecContext& ctx = *ex.ctx;
  if (ctx.inputs.size() < 3) return fail(ex, StatusCode::kInvalidModel, "needs data, starts and ends");
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  GRAFT_RETURN_IF_ERROR(check_same_dtype(ex, x, y));
  const int64_t r = x.rank();
  auto starts = graft::int_input(ctx, 1, "starts");
  if (!starts.is_ok()) return with_node(ex, starts.status());
  auto ends = graft::int_input(ctx, 2, "ends");
  if (!ends.is_ok()) return with_node(ex, ends.status());
  const size_t na = starts.value().size();
  std::vector<int64_t> axes(na), steps(na, 1);
  std::iota(axes.begin(), axes.end(), 0);
  if (ctx.inputs.size() > 3 && ctx.inputs[3]) {
    auto v = graft::int_input(ctx, 3, "axes");
    if (!v.is_ok()) return with_node(ex, v.status());
    axes = v.value();
  }
  if (ctx.inputs.size() > 4 && ctx.inputs[4]) {
    auto v = graft::int_input(ctx, 4, "steps");
    if (!v.is_ok()) return with_node(ex, v.status());
    steps = v.value();
  }
  if (ends.value().size() != na || axes.size() != na || steps.size() != na)
    return fail(ex, StatusCode::kInvalidModel, "starts, ends, axes and steps differ in length");
  const auto is = contiguous_strides(x.dims());
  std::vector<int64_t> strides(is), expect(x.dims());
  int64_t offset = 0;
  for (size_t q = 0; q < na; ++q) {
    auto a = normalize_axis(axes[q], r);
    if (!a.is_ok()) return with_node(ex, a.status());
    if (steps[q] == 0) return fail(ex, StatusCode::kInvalidModel, "a step is 0");
    const graft::SliceAxis s = graft::slice_axis(x.dims()[a.value()], starts.value()[q], ends.value()[q], steps[q]);
    expect[a.value()] = s.length;
    strides[a.value()] = s.length > 1 ? is[a.value()] * s.step : 0;
    if (s.length > 0) offset += s.start * is[a.value()];
  }
  if (expect != y.dims())
    return fail(ex, StatusCode::kInternal, "output allocated as ", dims_str(y.dims()), " but the slice is ",
                dims_str(expect));
  if (y.numel() == 0) return Status::ok();
  k::Strided p;
  for (int64_t a = 0; a < r; ++a) {
    if (expect[a] == 1) continue;  // unit axes add nothing to the offset
    if (k::append_axis(&p, expect[a], strides[a]))
      return fail(ex, StatusCode::kUnsupported, "more than ", k::kMaxRank, " axes after merging");
  }
  return launch_status(k::launch_strided_gather(static_cast<const char*>(x.data()) + offset * esize(x), y.data(),
                                                esize(x), p, y.numel(), stream_of(ex)),
                       ex);
}

// ---- Gather: indices stay on the device ----

bool gather_supports(const Node& n, std::string* why) {
  if (!same_bytes_ok(n, why)) return false;
  if (!has_input(n, 1)) return reject(why, "input 1 (indices) is missing");
  return true;
}

Status gather_run(CudaExec& ex) {
  const ExecContext& ctx = *ex.ctx;
  if (ctx.inputs.size() < 2 || !ctx.inputs[1]) return fail(ex, StatusCode::kInvalidModel, "input 1 (indices) is missing");
  const Tensor& data = *ctx.inputs[0];
  const Tensor& idx = *ctx.inputs[1];
  Tensor& y = *ctx.outputs[0];
  GRAFT_RETURN_IF_ERROR(check_same_dtype(ex, data, y));
  if (idx.dtype() != DataType::kInt64 && idx.dtype() != DataType::kInt32)
    return fail(ex, StatusCode::kInvalidModel, "indices must be int32 or int64, got ", dtype_name(idx.dtype()));
  auto axis_attr = attrs_of(ex).get_int("axis", 0);
  if (!axis_attr.is_ok()) return with_node(ex, axis_attr.status());
  auto axis_r = normalize_axis(axis_attr.value(), data.rank());
  if (!axis_r.is_ok()) return with_node(ex, axis_r.status());
  const int64_t axis = axis_r.value();
  int64_t outer = 1, inner = 1;
  for (int64_t a = 0; a < axis; ++a) outer *= data.dims()[a];
  for (int64_t a = axis + 1; a < data.rank(); ++a) inner *= data.dims()[a];
  const int64_t m = idx.numel();
  if (y.numel() != outer * m * inner)
    return fail(ex, StatusCode::kInternal, "output ", dims_str(y.dims()), " has the wrong size");
  return launch_status(k::launch_gather_axis(data.data(), idx.data(), idx.dtype() == DataType::kInt64, y.data(),
                                             esize(data), outer, data.dims()[axis], m, inner, stream_of(ex), ex.fault),
                       ex);
}

// ---- Tile: a per-axis index map ----

bool tile_supports(const Node& n, std::string* why) { return same_bytes_ok(n, why) && rank_fits(n, 0, why); }

Status tile_run(CudaExec& ex) {
  const ExecContext& ctx = *ex.ctx;
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  GRAFT_RETURN_IF_ERROR(check_same_dtype(ex, x, y));
  auto reps = graft::int_input(ctx, 1, "repeats");
  if (!reps.is_ok()) return with_node(ex, reps.status());
  const int64_t r = x.rank();
  if (static_cast<int64_t>(reps.value().size()) != r || y.rank() != r)
    return fail(ex, StatusCode::kInvalidModel, "repeats has ", static_cast<int64_t>(reps.value().size()),
                " entries for a rank-", r, " input");
  if (r > k::kMaxRank) return fail(ex, StatusCode::kUnsupported, "rank ", r, " exceeds ", k::kMaxRank);
  const auto is = contiguous_strides(x.dims());
  k::AxisMap p;
  p.rank = static_cast<int>(r);
  for (int64_t a = 0; a < r; ++a) {
    if (y.dims()[a] != x.dims()[a] * reps.value()[a])
      return fail(ex, StatusCode::kInternal, "output shape ", dims_str(y.dims()), " does not match");
    p.out_dims[a] = y.dims()[a];
    p.in_dims[a] = x.dims()[a];
    p.in_strides[a] = is[a];
  }
  if (y.numel() == 0) return Status::ok();
  return launch_status(k::launch_tile(x.data(), y.data(), esize(x), p, y.numel(), stream_of(ex)), ex);
}

// ---- DepthToSpace / SpaceToDepth --------------------------------------------------------------

template <bool kToSpace>
bool depth_space_supports(const Node& n, std::string* why) {
  if (!input0_given(n, why)) return false;
  auto mode = n.attrs.get_string("mode", "DCR");
  if (!mode || (mode.value() != "DCR" && mode.value() != "CRD")) return reject(why, "attribute 'mode' must be DCR or CRD");
  return true;
}

// A gather over the output viewed as 6 axes with the input's strides along each.
template <bool kToSpace>
Status depth_space_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  GRAFT_ASSIGN_OR_RETURN(int64_t b, attrs_of(ex).get_int("blocksize", 0));
  GRAFT_ASSIGN_OR_RETURN(std::string mode, attrs_of(ex).get_string("mode", "DCR"));
  if (x.rank() != 4 || b < 1) return fail(ex, StatusCode::kInvalidModel, "needs 4-D input and blocksize >= 1");
  if (x.numel() != y.numel() || x.dtype() != y.dtype() || y.rank() != 4)
    return fail(ex, StatusCode::kInternal, "output differs from input");
  const auto& xd = x.dims();
  k::Strided p;
  p.rank = 6;
  auto set = [&](int d, int64_t dim, int64_t stride) {
    p.dims[d] = dim;
    p.strides[d] = stride;
  };
  if (kToSpace) {
    // y[n, c, h*b+i, w*b+j] = x[n, ch(c, i, j), h, w]; output axes (n, c, h, i, w, j).
    const int64_t N = xd[0], C = xd[1] / (b * b), H = xd[2], W = xd[3], HW = H * W;
    if (C * b * b != xd[1]) return fail(ex, StatusCode::kInvalidModel, "channels not divisible by blocksize^2");
    const bool crd = mode == "CRD";
    set(0, N, xd[1] * HW);
    set(1, C, crd ? b * b * HW : HW);
    set(2, H, W);
    set(3, b, crd ? b * HW : b * C * HW);
    set(4, W, 1);
    set(5, b, crd ? HW : C * HW);
  } else {
    // y[n, (i*b+j)*C + c, h, w] = x[n, c, h*b+i, w*b+j]; output axes (n, i, j, c, h, w).
    const int64_t N = xd[0], C = xd[1], H = xd[2] / b, W = xd[3] / b, SH = xd[2], SW = xd[3];
    if (H * b != SH || W * b != SW) return fail(ex, StatusCode::kInvalidModel, "spatial dims not divisible by blocksize");
    set(0, N, C * SH * SW);
    set(1, b, SW);
    set(2, b, 1);
    set(3, C, SH * SW);
    set(4, H, b * SW);
    set(5, W, b);
  }
  return launch_status(k::launch_strided_gather(x.data(), y.data(), static_cast<int>(dtype_size(x.dtype())), p, y.numel(),
                                                stream_of(ex)), ex);
}

// ---- ConstantOfShape, Range ---------------------------------------------------------------------

// The key (output 0: any element size the fill writes) is the whole check.
bool constant_of_shape_supports(const Node&, std::string*) { return true; }

// The shape is a host input; the value (an attribute, float 0 when absent) travels by value.
Status constant_of_shape_run(CudaExec& ex) {
  Tensor& y = *ex.ctx->outputs[0];
  Tensor fill;
  if (attrs_of(ex).has("value")) {
    GRAFT_ASSIGN_OR_RETURN(fill, attrs_of(ex).get_tensor("value"));
    if (fill.numel() != 1) return fail(ex, StatusCode::kInvalidModel, "attribute 'value' must hold one element");
  } else {
    fill = Tensor::from_doubles(DataType::kFloat32, {1}, {0.0});
  }
  if (fill.dtype() != y.dtype())
    return fail(ex, StatusCode::kInvalidModel, "value dtype ", dtype_name(fill.dtype()), " differs from the output's ",
                dtype_name(y.dtype()));
  const size_t es = dtype_size(y.dtype());
  uint64_t bits = 0;
  std::memcpy(&bits, fill.data(), es);
  return launch_status(k::launch_fill(static_cast<int>(es), bits, y.data(), y.numel(), stream_of(ex)), ex);
}

bool range_supports(const Node& n, std::string* why) {
  for (size_t i = 0; i < 3; ++i)
    if (!has_input(n, i)) return reject(why, "needs start, limit and delta");
  return true;
}

Status range_run(CudaExec& ex) {
  Tensor& y = *ex.ctx->outputs[0];
  for (size_t i = 0; i < 3; ++i) {
    const Tensor* t = ex.ctx->inputs[i];
    if (!t || t->numel() != 1 || t->device() != DeviceType::kCPU || t->dtype() != y.dtype())
      return fail(ex, StatusCode::kInvalidModel, "input ", static_cast<int64_t>(i), " must be a host scalar of the output's dtype");
  }
  const Tensor& start = *ex.ctx->inputs[0];
  const Tensor& delta = *ex.ctx->inputs[2];
  int64_t istart = 0, idelta = 0;
  if (dtype_is_integer(y.dtype())) {
    istart = start.to_int64_vector()[0];
    idelta = delta.to_int64_vector()[0];
  }
  return launch_status(k::launch_range(ktype(y.dtype()), start.get(0), delta.get(0), istart, idelta, y.data(), y.numel(),
                                       stream_of(ex)), ex);
}

}  // namespace

void append_cuda_shape_ops(std::vector<CudaOp>& out) {
  // The byte movers copy elements of any device dtype: their key is input 0 in kGpuEveryDtype.
  const KernelDtypes any = input_dtypes(0, kGpuEveryDtype);
  out.push_back(kernel_dtypes({any}, CudaOp{"Reshape", &input0_given, &copy_run, {1}, nullptr}));
  out.push_back(kernel_dtypes({any}, CudaOp{"Flatten", &input0_given, &copy_run, {}, nullptr}));
  out.push_back(kernel_dtypes({any}, CudaOp{"Squeeze", &input0_given, &copy_run, {1}, nullptr}));
  out.push_back(kernel_dtypes({any}, CudaOp{"Unsqueeze", &input0_given, &copy_run, {1}, nullptr}));
  out.push_back(kernel_dtypes({any}, CudaOp{"Transpose", &input0_given, &transpose_run, {}, nullptr}));
  out.push_back(kernel_dtypes({any}, CudaOp{"Expand", &input0_given, &expand_run, {1}, nullptr}));
  out.push_back(kernel_dtypes({any}, CudaOp{"Concat", &concat_supports, &concat_run, {}, nullptr}));
  out.push_back(kernel_dtypes({any}, CudaOp{"GraftConcatSlices", &concat_supports, &concat_slices_run, {}, nullptr}));
  out.push_back(kernel_dtypes({any}, CudaOp{"Split", &split_supports, &split_run, {1}, nullptr}));
  out.push_back(kernel_dtypes({any}, CudaOp{"Slice", &slice_supports, &slice_run, {1, 2, 3, 4}, nullptr}));
  // Gather reads its indices (input 1) on the device as int32 or int64, and reports one out of range.
  out.push_back(reports_invalid_data("an index is out of range",
                                     kernel_dtypes({any, input_dtypes(1, kGpuInts)},
                                                   CudaOp{"Gather", &gather_supports, &gather_run, {}, nullptr})));
  out.push_back(kernel_dtypes({any}, CudaOp{"Tile", &tile_supports, &tile_run, {1}, nullptr}));
  out.push_back(
      kernel_dtypes({any}, CudaOp{"DepthToSpace", &depth_space_supports<true>, &depth_space_run<true>, {}, nullptr}));
  out.push_back(
      kernel_dtypes({any}, CudaOp{"SpaceToDepth", &depth_space_supports<false>, &depth_space_run<false>, {}, nullptr}));
  // ConstantOfShape's dtype is its attribute's: the key is its output's (any element size).
  out.push_back(kernel_dtypes(
      {output_dtypes(0, kGpuEveryDtype)},
      CudaOp{"ConstantOfShape", &constant_of_shape_supports, &constant_of_shape_run, {0}, nullptr}));
  // Range writes its start's dtype (limit and delta must have it too: checked as it runs).
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloatsInts)},
                              CudaOp{"Range", &range_supports, &range_run, {0, 1, 2}, nullptr}));
}

}  // namespace graft::cuda
