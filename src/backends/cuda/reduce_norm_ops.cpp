// CUDA reduce/normalization ops: Softmax/LogSoftmax (opset < 13 coerces to 2-D, 13+ is per-axis),
// LayerNormalization, ReduceMean/Sum/Max/Min/Prod/SumSquare/L1/L2/LogSum/LogSumExp (axes from the
// attribute or a host input).
#include <string>

#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/reduce_norm_kernels.cuh"
#include "ops/reduce_axes.h"

namespace graft::cuda {
namespace {

using namespace util;

bool float_x(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input 0 is missing");
  return require_dtype(n, 0, {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}, why);
}

template <bool kLog>
Status softmax_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  if (x.numel() != y.numel()) return fail(ex, StatusCode::kInternal, "output size differs from input size");
  const bool legacy = ex.ctx->opset > 0 && ex.ctx->opset < 13;
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, attrs_of(ex).get_int("axis", legacy ? 1 : -1));
  if (x.rank() == 0) {  // a scalar: softmax is 1, log-softmax 0
    return launch_status(k::launch_softmax(ktype(x.dtype()), kLog, x.data(), y.data(), 1, 1, 1, stream_of(ex)), ex);
  }
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_attr, x.rank()));
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d < axis) outer *= x.dims()[d];
    else if (d == axis || legacy) n *= x.dims()[d];
    else inner *= x.dims()[d];
  }
  return launch_status(k::launch_softmax(ktype(x.dtype()), kLog, x.data(), y.data(), outer, n, inner, stream_of(ex)), ex);
}

bool layernorm_supports(const Node& n, std::string* why) {
  if (!float_x(n, why)) return false;
  if (!has_input(n, 1)) return reject(why, "Scale is missing");
  for (size_t i = 1; i < 3; ++i)
    if (has_input(n, i) && in_dtype(n, i) != in_dtype(n, 0)) return reject(why, "Scale/B dtype differs from X");
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (n.outputs[i] && n.outputs[i]->desc.dtype != DataType::kFloat32)
      return reject(why, "Mean/InvStdDev outputs are handled only as float32");
  return true;
}

Status layernorm_run(CudaExec& ex) {
  const auto& in = ex.ctx->inputs;
  const auto& out = ex.ctx->outputs;
  const Tensor& x = *in[0];
  const Tensor& scale = *in[1];
  const Tensor* bias = in.size() > 2 ? in[2] : nullptr;
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, attrs_of(ex).get_int("axis", -1));
  GRAFT_ASSIGN_OR_RETURN(float eps, attrs_of(ex).get_float("epsilon", 1e-5f));
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_attr, x.rank()));
  int64_t inner = 1;
  for (int64_t d = axis; d < x.rank(); ++d) inner *= x.dims()[d];
  const int64_t outer = inner ? x.numel() / inner : 0;
  for (const Tensor* p : {&scale, bias})
    if (p && p->numel() != inner && p->numel() != 1)
      return fail(ex, StatusCode::kUnsupported, "Scale/B must have the normalized block's size or one element");
  float* mean = out.size() > 1 && out[1] ? static_cast<float*>(out[1]->data()) : nullptr;
  float* inv = out.size() > 2 && out[2] ? static_cast<float*>(out[2]->data()) : nullptr;
  return launch_status(k::launch_layernorm(ktype(x.dtype()), x.data(), scale.data(), scale.numel(), bias ? bias->data() : nullptr,
                                           bias ? bias->numel() : 0, out[0]->data(), mean, inv, outer, inner, eps,
                                           stream_of(ex)), ex);
}

// Integer inputs for every kind the CPU reference takes them for (not L2/LogSum/LogSumExp).
template <k::ReduceKind kKind>
bool reduce_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input 0 is missing");
  constexpr bool kInts = kKind != k::ReduceKind::kL2 && kKind != k::ReduceKind::kLogSum &&
                         kKind != k::ReduceKind::kLogSumExp;
  if (kInts) {
    if (!require_dtype(n, 0, {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kInt32,
                              DataType::kInt64}, why))
      return false;
  } else if (!float_x(n, why)) {
    return false;
  }
  if (has_input(n, 1) && !require_dtype(n, 1, {DataType::kInt64, DataType::kInt32}, why)) return false;
  return true;
}

// With noop_with_empty_axes and no axes, the CPU reference copies the input for the kinds of its
// `reduce` (Sum/Mean/Max/Min/Prod/SumSquare/L2) but applies the per-element function for
// L1/LogSum/LogSumExp (a one-element reduction): |x|, log(x), x.
constexpr bool noop_copies(k::ReduceKind kind) {
  return kind != k::ReduceKind::kL1 && kind != k::ReduceKind::kLogSum && kind != k::ReduceKind::kLogSumExp;
}

template <k::ReduceKind kKind>
Status reduce_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  const Tensor* axes_t = ex.ctx->inputs.size() > 1 ? ex.ctx->inputs[1] : nullptr;
  std::optional<std::vector<int64_t>> axes_in;
  if (axes_t) {
    if (axes_t->device() != DeviceType::kCPU) return fail(ex, StatusCode::kInternal, "axes must be a host input");
    axes_in = axes_t->to_int64_vector();
  }
  GRAFT_ASSIGN_OR_RETURN(graft::ReduceAxes ra, graft::resolve_reduce_axes(attrs_of(ex), x.rank(), axes_t != nullptr, axes_in));
  std::vector<bool> red(static_cast<size_t>(x.rank()), false);
  if (ra.noop && noop_copies(kKind)) {
    if (x.nbytes() != y.nbytes()) return fail(ex, StatusCode::kInternal, "output size differs from input size");
    if (x.nbytes() == 0) return Status::ok();
    return launch_status(cudaMemcpyAsync(y.data(), x.data(), x.nbytes(), cudaMemcpyDeviceToDevice, stream_of(ex)), ex,
                         "cudaMemcpyAsync");
  }
  if (ra.noop) {
    // Copy the input (a reduction over nothing); Sum/Mean/Max/Min of one element is itself.
  } else if (ra.axes.empty()) {
    red.assign(red.size(), true);
  } else {
    for (int64_t a : ra.axes) red[static_cast<size_t>(a)] = true;
  }
  k::Strided kept, rs;
  const auto st = contiguous_strides(x.dims());
  int64_t red_n = 1;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (x.dims()[d] == 1) continue;
    k::Strided& s = red[static_cast<size_t>(d)] ? rs : kept;
    if (s.rank == k::kMaxRank) return fail(ex, StatusCode::kUnsupported, "more than ", k::kMaxRank, " axes");
    s.dims[s.rank] = x.dims()[d];
    s.strides[s.rank] = st[static_cast<size_t>(d)];
    ++s.rank;
    if (red[static_cast<size_t>(d)]) red_n *= x.dims()[d];
  }
  if (y.numel() * red_n != x.numel()) return fail(ex, StatusCode::kInternal, "output shape inconsistent with the axes");
  if (red_n == 0) return fail(ex, StatusCode::kUnsupported, "reduction over an empty axis");
  return launch_status(k::launch_reduce(ktype(x.dtype()), kKind, x.data(), y.data(), kept, y.numel(), rs, red_n, stream_of(ex)), ex);
}

template <k::ReduceKind kKind>
CudaOp reduce_op(const char* name) {
  return CudaOp{name, &reduce_supports<kKind>, &reduce_run<kKind>, {1}, nullptr};
}

}  // namespace

void append_cuda_reduce_norm_ops(std::vector<CudaOp>& out) {
  out.push_back(CudaOp{"Softmax", &float_x, &softmax_run<false>, {}, nullptr});
  out.push_back(CudaOp{"LogSoftmax", &float_x, &softmax_run<true>, {}, nullptr});
  out.push_back(CudaOp{"LayerNormalization", &layernorm_supports, &layernorm_run, {}, nullptr});
  out.push_back(reduce_op<k::ReduceKind::kMean>("ReduceMean"));
  out.push_back(reduce_op<k::ReduceKind::kSum>("ReduceSum"));
  out.push_back(reduce_op<k::ReduceKind::kMax>("ReduceMax"));
  out.push_back(reduce_op<k::ReduceKind::kMin>("ReduceMin"));
  out.push_back(reduce_op<k::ReduceKind::kProd>("ReduceProd"));
  out.push_back(reduce_op<k::ReduceKind::kSumSquare>("ReduceSumSquare"));
  out.push_back(reduce_op<k::ReduceKind::kL1>("ReduceL1"));
  out.push_back(reduce_op<k::ReduceKind::kL2>("ReduceL2"));
  out.push_back(reduce_op<k::ReduceKind::kLogSum>("ReduceLogSum"));
  out.push_back(reduce_op<k::ReduceKind::kLogSumExp>("ReduceLogSumExp"));
}

}  // namespace graft::cuda
