// InstanceNormalization, GroupNormalization, MeanVarianceNormalization and LRN's CUDA kernels and
// ops, in double as the CPU reference of normalization.cpp, whose attribute readers the ops call.
#include "ops/misc/misc.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/attr_util.h"
#include "ops/misc/misc_cuda.h"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------

namespace k {

// Launchers: plain device pointers, no framework types; each returns the launch's cudaError_t
// (cudaErrorInvalidValue for a type the launcher does not handle).
//
// The arithmetic follows the CPU reference step by step (double for the normalizations and the
// windows; results stored as graft's store_from_double does) so that integer outputs match it
// exactly.


// ---- Normalizations -------------------------------------------------------------------------------

// x viewed as [batch * groups planes, channels / groups * spatial] (GroupNormLayout, misc.h; instance
// normalization is groups = channels); per plane, mean and (biased) variance in double, then
// y = (x - mean) * (scale[k] / sqrt(var + eps)) + bias[k], k the group (per_group_affine) or the
// channel. Float types (scale, bias share x's type).
cudaError_t launch_group_norm(KType t, const void* x, const void* scale, const void* bias, void* y,
                              const GroupNormLayout& l, double eps, cudaStream_t s);

// One group per combination of the kept axes (`kept`: their extents and x strides), `count`
// elements each (`reduced`: the reduced axes' extents and x strides). y = (x - mean) /
// (sqrt(var) + 1e-9), statistics in double. Float types.
cudaError_t launch_mvn(KType t, const void* x, void* y, const Strided& kept, const Strided& reduced, int64_t groups,
                       int64_t count, cudaStream_t s);

// x viewed as [outer, channels, inner]; y = x / (bias + alpha / size * sum of x^2 over the channel
// window [ch - before, ch + after] clipped to the channels) ^ beta, in double. Float types.
cudaError_t launch_lrn(KType t, const void* x, void* y, int64_t outer, int64_t channels, int64_t inner, int64_t before,
                       int64_t after, double alpha_over_size, double bias, double beta, cudaStream_t s);

namespace {

// Block-wide sum of a double (every thread gets it); `sh` holds 32 doubles. Synchronizes first, so
// consecutive calls may share `sh`.
__device__ __forceinline__ double block_sum_d(double v, double* sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  v = lane < nw ? sh[lane] : 0.0;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// One block per plane (grid-striding over planes); two passes in double as the CPU reference.
template <typename T>
__global__ void group_norm_kernel(const T* x, const T* scale, const T* bias, T* y, int64_t planes, int64_t groups,
                                  int64_t per_group, int64_t spatial, bool per_group_affine, double eps) {
  __shared__ double sh[32];
  const int64_t size = per_group * spatial;
  for (int64_t p = blockIdx.x; p < planes; p += gridDim.x) {
    const T* xp = x + p * size;
    T* yp = y + p * size;
    double acc = 0;
    for (int64_t i = threadIdx.x; i < size; i += blockDim.x) acc += as_double(xp[i]);
    const double mean = block_sum_d(acc, sh) / static_cast<double>(size);
    acc = 0;
    for (int64_t i = threadIdx.x; i < size; i += blockDim.x) {
      const double d = as_double(xp[i]) - mean;
      acc = __dadd_rn(acc, __dmul_rn(d, d));
    }
    const double den = sqrt(block_sum_d(acc, sh) / static_cast<double>(size) + eps);
    const int64_t g = p % groups;
    for (int64_t i = threadIdx.x; i < size; i += blockDim.x) {
      const int64_t ch = per_group_affine ? g : g * per_group + i / spatial;
      const double k = as_double(scale[ch]) / den;
      yp[i] = store_from_double<T>(__dadd_rn(__dmul_rn(as_double(xp[i]) - mean, k), as_double(bias[ch])));
    }
  }
}

template <typename T>
__global__ void mvn_kernel(const T* x, T* y, Strided kept, Strided red, int64_t groups, int64_t count) {
  __shared__ double sh[32];
  for (int64_t g = blockIdx.x; g < groups; g += gridDim.x) {
    const int64_t base = strided_offset(kept, g);
    double acc = 0;
    for (int64_t r = threadIdx.x; r < count; r += blockDim.x) acc += as_double(x[base + strided_offset(red, r)]);
    const double mean = block_sum_d(acc, sh) / static_cast<double>(count);
    acc = 0;
    for (int64_t r = threadIdx.x; r < count; r += blockDim.x) {
      const double d = as_double(x[base + strided_offset(red, r)]) - mean;
      acc = __dadd_rn(acc, __dmul_rn(d, d));
    }
    // The epsilon of the ONNX function body, added to the standard deviation.
    const double den = sqrt(block_sum_d(acc, sh) / static_cast<double>(count)) + 1e-9;
    for (int64_t r = threadIdx.x; r < count; r += blockDim.x) {
      const int64_t at = base + strided_offset(red, r);
      y[at] = store_from_double<T>((as_double(x[at]) - mean) / den);
    }
  }
}

template <typename T>
__global__ void lrn_kernel(const T* x, T* y, int64_t channels, int64_t inner, int64_t n, int64_t before,
                           int64_t after, double alpha_over_size, double bias, double beta) {
  GRAFT_GRID_STRIDE(i, n) {
    const int64_t in = i % inner, ch = (i / inner) % channels, o = i / (inner * channels);
    const int64_t lo = ch - before < 0 ? 0 : ch - before;
    const int64_t hi = channels - 1 < ch + after ? channels - 1 : ch + after;
    double sq = 0;
    for (int64_t c = lo; c <= hi; ++c) {
      const double e = as_double(x[(o * channels + c) * inner + in]);
      sq = __dadd_rn(sq, __dmul_rn(e, e));
    }
    const double den = pow(__dadd_rn(bias, __dmul_rn(alpha_over_size, sq)), beta);
    y[i] = store_from_double<T>(as_double(x[i]) / den);
  }
}

}  // namespace

static unsigned plane_grid(int64_t planes) {
  return static_cast<unsigned>(planes < 65535LL * 16 ? planes : 65535LL * 16);
}

cudaError_t launch_group_norm(KType t, const void* x, const void* scale, const void* bias, void* y,
                              const GroupNormLayout& l, double eps, cudaStream_t s) {
  const int64_t planes = l.batch * l.groups;
  if (planes == 0 || l.spatial == 0 || l.channels == 0) return cudaSuccess;
  if (l.groups <= 0 || l.channels % l.groups != 0) return cudaErrorInvalidValue;
  GRAFT_FLOAT64_DISPATCH(t, (group_norm_kernel<T><<<plane_grid(planes), kThreads, 0, s>>>(
                                   static_cast<const T*>(x), static_cast<const T*>(scale),
                                   static_cast<const T*>(bias), static_cast<T*>(y), planes, l.groups,
                                   l.channels / l.groups, l.spatial, l.per_group_affine, eps)));
  return cudaGetLastError();
}

cudaError_t launch_mvn(KType t, const void* x, void* y, const Strided& kept, const Strided& reduced, int64_t groups,
                       int64_t count, cudaStream_t s) {
  if (groups == 0 || count == 0) return cudaSuccess;
  GRAFT_FLOAT64_DISPATCH(t, (mvn_kernel<T><<<plane_grid(groups), kThreads, 0, s>>>(
                                   static_cast<const T*>(x), static_cast<T*>(y), kept, reduced, groups, count)));
  return cudaGetLastError();
}

cudaError_t launch_lrn(KType t, const void* x, void* y, int64_t outer, int64_t channels, int64_t inner, int64_t before,
                       int64_t after, double alpha_over_size, double bias, double beta, cudaStream_t s) {
  const int64_t n = outer * channels * inner;
  if (n == 0) return cudaSuccess;
  GRAFT_FLOAT64_DISPATCH(t, (lrn_kernel<T><<<grid_for(n), kThreads, 0, s>>>(
                                   static_cast<const T*>(x), static_cast<T*>(y), channels, inner, n, before, after,
                                   alpha_over_size, bias, beta)));
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA op --------------------------------------------------------------------------------

namespace {

using namespace util;


// InstanceNormalization's and GroupNormalization's: the input, then a scale and bias of its dtype.
bool instance_norm_supports(const Node& n, std::string* why) {
  if (!input0_given(n, why)) return false;
  for (size_t i = 1; i < 3; ++i) {
    if (!has_input(n, i)) return reject(why, "needs scale and B");
    if (in_dtype(n, i) != in_dtype(n, 0)) return reject(why, "scale and B must have the input's dtype");
  }
  return true;
}

Status same_shape_output(const CudaExec& ex, const Tensor& x, const Tensor& y) {
  if (y.numel() != x.numel() || y.dtype() != x.dtype())
    return fail(ex, StatusCode::kInternal, "output must have the input's size and dtype");
  return Status::ok();
}

// X, scale and bias, named as the op's schema names them, each of X's dtype, and Y of X's shape: what
// InstanceNormalization and GroupNormalization both hand their one kernel.
struct NormOperands {
  const Tensor* x = nullptr;
  const Tensor* scale = nullptr;
  const Tensor* bias = nullptr;
  Tensor* y = nullptr;
};
Result<NormOperands> norm_operands(CudaExec& ex, const char* x_name, const char* bias_name) {
  NormOperands o{input_or_null(ex, 0), input_or_null(ex, 1), input_or_null(ex, 2), ex.ctx->outputs[0]};
  if (!o.x || !o.scale || !o.bias)
    return fail(ex, StatusCode::kInvalidModel, "needs ", x_name, ", scale and ", bias_name);
  GRAFT_RETURN_IF_ERROR(same_shape_output(ex, *o.x, *o.y));
  if (o.scale->dtype() != o.x->dtype() || o.bias->dtype() != o.x->dtype())
    return fail(ex, StatusCode::kInvalidModel, "scale and ", bias_name, " must have ", x_name, "'s dtype");
  return o;
}

Status launch_norm(CudaExec& ex, const NormOperands& o, const GroupNormLayout& layout, double epsilon) {
  return launch_status(k::launch_group_norm(ktype(o.x->dtype()), o.x->data(), o.scale->data(), o.bias->data(),
                                            o.y->data(), layout, epsilon, stream_of(ex)),
                       ex);
}

Status instance_norm_run(CudaExec& ex) {
  GRAFT_ASSIGN_OR_RETURN(NormOperands o, norm_operands(ex, "input", "B"));
  auto eps = graft::instance_norm_epsilon(attrs_of(ex));
  if (!eps) return with_node(ex, eps.status());
  auto l = graft::instance_norm_layout(o.x->dims(), o.scale->dims(), o.bias->dims());
  if (!l) return fail(ex, l.status().code(), l.status().message());
  return launch_norm(ex, o, l.value(), static_cast<double>(eps.value()));
}

Status group_norm_run(CudaExec& ex) {
  GRAFT_ASSIGN_OR_RETURN(NormOperands o, norm_operands(ex, "X", "bias"));
  auto a = graft::group_norm_attrs(attrs_of(ex));
  if (!a) return with_node(ex, a.status());
  auto l = graft::group_norm_layout(o.x->dims(), o.scale->dims(), o.bias->dims(), a.value().groups, ex.ctx->opset);
  if (!l) return with_node(ex, l.status());
  return launch_norm(ex, o, l.value(), static_cast<double>(a.value().epsilon));
}

bool mvn_supports(const Node& n, std::string* why) {
  if (!input0_given(n, why)) return false;
  const Value* x = n.input(0);
  if (x->desc.shape && x->desc.shape->size() > static_cast<size_t>(k::kMaxRank))
    return reject(why, "input rank exceeds the CUDA kernel's " + std::to_string(k::kMaxRank));
  return true;
}

Status mvn_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  if (!x) return fail(ex, StatusCode::kInvalidModel, "input 0 is missing");
  Tensor& y = *ex.ctx->outputs[0];
  GRAFT_RETURN_IF_ERROR(same_shape_output(ex, *x, y));
  auto axes = graft::mvn_axes(attrs_of(ex), x->rank());
  if (!axes) return with_node(ex, axes.status());
  const int64_t rank = x->rank();
  if (rank > k::kMaxRank)
    return fail(ex, StatusCode::kUnsupported, "input rank ", rank, " exceeds the CUDA kernel's ", k::kMaxRank);
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : axes.value()) reduced[static_cast<size_t>(a)] = true;
  // Kept and reduced axes, each with its row-major stride in x: a group's elements are its base
  // offset plus every combination of the reduced axes.
  k::Strided kept, red;
  int64_t stride = 1, groups = 1, count = 1;
  std::vector<int64_t> strides(static_cast<size_t>(rank));
  for (int64_t d = rank - 1; d >= 0; --d) {
    strides[static_cast<size_t>(d)] = stride;
    stride *= x->dims()[static_cast<size_t>(d)];
  }
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t extent = x->dims()[static_cast<size_t>(d)];
    k::Strided& s = reduced[static_cast<size_t>(d)] ? red : kept;
    s.dims[s.rank] = extent;
    s.strides[s.rank] = strides[static_cast<size_t>(d)];
    ++s.rank;
    (reduced[static_cast<size_t>(d)] ? count : groups) *= extent;
  }
  return launch_status(k::launch_mvn(ktype(x->dtype()), x->data(), y.data(), kept, red, groups, count, stream_of(ex)),
                       ex);
}

Status lrn_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  if (!x) return fail(ex, StatusCode::kInvalidModel, "input 0 is missing");
  Tensor& y = *ex.ctx->outputs[0];
  GRAFT_RETURN_IF_ERROR(same_shape_output(ex, *x, y));
  auto a = graft::lrn_attrs(attrs_of(ex));
  if (!a) return with_node(ex, a.status());
  if (x->rank() < 2)
    return fail(ex, StatusCode::kInvalidModel, "input must have rank >= 2 (N, C, ...), got ", dims_str(x->dims()));
  const graft::AxisView v = graft::axis_view(x->dims(), 1, false);
  const int64_t size = a.value().size;
  // floor((size - 1) / 2) channels before, ceil after; `after` clamped to the channel count so
  // ch + after cannot overflow for a huge size.
  const int64_t before = (size - 1) / 2;
  const int64_t after = std::min(size - 1 - before, v.n);
  const double alpha_over_size = static_cast<double>(a.value().alpha) / static_cast<double>(size);
  return launch_status(k::launch_lrn(ktype(x->dtype()), x->data(), y.data(), v.outer, v.n, v.inner, before, after,
                                     alpha_over_size, static_cast<double>(a.value().bias),
                                     static_cast<double>(a.value().beta), stream_of(ex)), ex);
}

}  // namespace

void append_cuda_normalization_ops(std::vector<CudaOp>& out) {
  out.push_back(
      kernel_dtypes({input_dtypes(0, kGpuFloats64)},
                    CudaOp{"InstanceNormalization", &instance_norm_supports, &instance_norm_run, {}, nullptr}));
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats64)},
                              CudaOp{"GroupNormalization", &instance_norm_supports, &group_norm_run, {}, nullptr}));
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats64)},
                              CudaOp{"MeanVarianceNormalization", &mvn_supports, &mvn_run, {}, nullptr}));
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats64)}, CudaOp{"LRN", &input0_given, &lrn_run, {}, nullptr}));
}

}  // namespace graft::cuda
