// CUDA ops for the data-movement ops of src/ops/extra_ops.cpp (CumSum, Trilu, OneHot,
// DepthToSpace/SpaceToDepth, Compress) and for ConstantOfShape and Range when the engine places them
// on the GPU rather than on the host. Kernels live in extra_kernels.cu.
//
// Where the CPU reference fails on a bad index value read on the device (OneHot), the kernel cannot:
// see extra_kernels.cuh for what it does instead. The gathers and scatters are their own family
// (src/ops/gather_scatter).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/extra_kernels.cuh"
#include "backends/cuda/shape_kernels.cuh"
#include "ops/attr_util.h"

namespace graft::cuda {
namespace {

using namespace util;

bool elem_size_fits(DataType t) {
  const size_t es = dtype_size(t);
  return es == 1 || es == 2 || es == 4 || es == 8;
}

// ---- Trilu ------------------------------------------------------------------------------------

Status trilu_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  GRAFT_ASSIGN_OR_RETURN(int64_t upper, attrs_of(ex).get_int("upper", 1));
  int64_t k = 0;
  if (ex.ctx->inputs.size() > 1 && ex.ctx->inputs[1]) { GRAFT_ASSIGN_OR_RETURN(k, host_scalar(ex, 1, "k")); }
  if (x.rank() < 2) return fail(ex, StatusCode::kInvalidModel, "input must have rank >= 2, got ", x.rank());
  if (x.nbytes() != y.nbytes() || x.dtype() != y.dtype()) return fail(ex, StatusCode::kInternal, "output differs from input");
  const int64_t rows = x.dims()[x.rank() - 2], cols = x.dims()[x.rank() - 1];
  const int64_t plane = rows * cols;
  const int64_t planes = plane != 0 ? x.numel() / plane : 0;
  return launch_status(k::launch_trilu(static_cast<int>(dtype_size(x.dtype())), upper != 0, k, x.data(), y.data(), planes,
                                       rows, cols, stream_of(ex)), ex);
}

// ---- OneHot -----------------------------------------------------------------------------------

bool one_hot_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1) || !has_input(n, 2)) return reject(why, "needs indices, depth and values");
  if (!require_dtype(n, 0, {DataType::kInt32, DataType::kInt64, DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16},
                     why))
    return false;
  if (!elem_size_fits(in_dtype(n, 2))) return reject(why, "values have an unsupported element size");
  return true;
}

Status one_hot_run(CudaExec& ex) {
  const Tensor& ind = *ex.ctx->inputs[0];
  const Tensor& depth_t = *ex.ctx->inputs[1];
  const Tensor& vals = *ex.ctx->inputs[2];
  Tensor& y = *ex.ctx->outputs[0];
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, attrs_of(ex).get_int("axis", -1));
  if (depth_t.device() != DeviceType::kCPU) return fail(ex, StatusCode::kInternal, "depth must be a host input");
  if (depth_t.numel() != 1 || vals.numel() != 2)
    return fail(ex, StatusCode::kInvalidModel, "needs a one-value depth and two values (off, on)");
  const int64_t depth = static_cast<int64_t>(depth_t.get(0));  // as the CPU reference: truncated
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_attr, ind.rank() + 1));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < ind.rank(); ++d) (d < axis ? outer : inner) *= ind.dims()[d];
  if (y.numel() != outer * depth * inner || y.dtype() != vals.dtype())
    return fail(ex, StatusCode::kInternal, "output has ", y.numel(), " elements, expected ", outer * depth * inner);
  return launch_status(k::launch_one_hot(ktype(ind.dtype()), static_cast<int>(dtype_size(vals.dtype())), ind.data(),
                                         vals.data(), y.data(), outer, depth, inner, stream_of(ex)), ex);
}

// ---- DepthToSpace / SpaceToDepth --------------------------------------------------------------

template <bool kToSpace>
bool depth_space_supports(const Node& n, std::string* why) {
  if (!elem_size_ok(n, why)) return false;
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

// ---- Compress ---------------------------------------------------------------------------------

bool compress_supports(const Node& n, std::string* why) {
  if (!elem_size_ok(n, why)) return false;
  if (!has_input(n, 1)) return reject(why, "condition is missing");
  return true;
}

// The condition is a host input (it sizes the output); the kept positions travel to the kernel by
// value, kCompressChunk per launch.
Status compress_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  const Tensor& cond_t = *ex.ctx->inputs[1];
  Tensor& y = *ex.ctx->outputs[0];
  if (cond_t.device() != DeviceType::kCPU) return fail(ex, StatusCode::kInternal, "condition must be a host input");
  const auto cond = cond_t.to_int64_vector();
  const bool has_axis = attrs_of(ex).find("axis") != nullptr;
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, attrs_of(ex).get_int("axis", 0));
  const std::vector<int64_t> dims = has_axis ? x.dims() : std::vector<int64_t>{x.numel()};
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(has_axis ? axis_attr : 0, static_cast<int64_t>(dims.size())));
  const AxisView v = axis_view(dims, axis, false);
  if (static_cast<int64_t>(cond.size()) > v.n)
    return fail(ex, StatusCode::kInvalidModel, "condition has ", static_cast<int64_t>(cond.size()), " entries but the axis has ", v.n);
  if (v.n > 0x7fffffffLL) return fail(ex, StatusCode::kUnsupported, "axis longer than 2^31");
  std::vector<int32_t> keep;
  for (size_t t = 0; t < cond.size(); ++t)
    if (cond[t]) keep.push_back(static_cast<int32_t>(t));
  const int64_t kn = static_cast<int64_t>(keep.size());
  if (y.numel() != v.outer * kn * v.inner || y.dtype() != x.dtype())
    return fail(ex, StatusCode::kInternal, "output has ", y.numel(), " elements, expected ", v.outer * kn * v.inner);
  for (int64_t t0 = 0; t0 < kn; t0 += k::kCompressChunk) {
    k::CompressChunk c;
    c.count = static_cast<int>(std::min<int64_t>(k::kCompressChunk, kn - t0));
    std::copy(keep.begin() + t0, keep.begin() + t0 + c.count, c.src);
    GRAFT_RETURN_IF_ERROR(launch_status(k::launch_compress_chunk(static_cast<int>(dtype_size(x.dtype())), x.data(), y.data(),
                                                                 v.outer, v.n, v.inner, kn, t0, c, stream_of(ex)), ex));
  }
  return Status::ok();
}

// ---- ConstantOfShape, Range ---------------------------------------------------------------------

bool constant_of_shape_supports(const Node& n, std::string* why) {
  const DataType t = out_dtype(n, 0);
  if (t != DataType::kUndefined && !elem_size_fits(t)) return reject(why, "unsupported element size");
  return true;
}

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
  return require_dtype(n, 0, kGpuFloatsInts, why);
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

void append_cuda_extra_ops(std::vector<CudaOp>& out) {
  out.push_back(CudaOp{"Trilu", &elem_size_ok, &trilu_run, {1}, nullptr});
  out.push_back(CudaOp{"OneHot", &one_hot_supports, &one_hot_run, {1}, nullptr});
  out.push_back(CudaOp{"DepthToSpace", &depth_space_supports<true>, &depth_space_run<true>, {}, nullptr});
  out.push_back(CudaOp{"SpaceToDepth", &depth_space_supports<false>, &depth_space_run<false>, {}, nullptr});
  out.push_back(CudaOp{"Compress", &compress_supports, &compress_run, {1}, nullptr});
  out.push_back(CudaOp{"ConstantOfShape", &constant_of_shape_supports, &constant_of_shape_run, {0}, nullptr});
  out.push_back(CudaOp{"Range", &range_supports, &range_run, {0, 1, 2}, nullptr});
}

}  // namespace graft::cuda
