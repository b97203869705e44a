// OneHot's CUDA kernel (launcher declared in shape.h) and op.
#include "ops/shape/shape.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/attr_util.h"

namespace graft::cuda {

// ---- kernel ----------------------------------------------------------------------------------------

namespace k {

namespace {

template <typename E, typename IT>
__global__ void one_hot_kernel(const IT* __restrict__ idx, const E* __restrict__ vals, E* __restrict__ out,
                               int64_t total, int64_t depth, int64_t inner) {
  const E off_v = vals[0], on_v = vals[1];
  GRAFT_GRID_STRIDE(j, total) {
    const int64_t i = j % inner, d = (j / inner) % depth, o = j / (inner * depth);
    // As the CPU reference: the value as double, truncated toward zero.
    int64_t k = static_cast<int64_t>(static_cast<double>(Elem<IT>::ld(idx[o * inner + i])));
    if (k < 0) k += depth;
    out[j] = d == k ? on_v : off_v;
  }
}

}  // namespace

cudaError_t launch_one_hot(KType idx_t, int elem_size, const void* idx, const void* vals, void* out, int64_t outer,
                           int64_t depth, int64_t inner, cudaStream_t s) {
  const int64_t total = outer * depth * inner;
  if (total == 0) return cudaSuccess;
  auto run = [&](auto tag) -> cudaError_t {
    using IT = decltype(tag);
    GRAFT_SIZE_DISPATCH(elem_size, (one_hot_kernel<E, IT><<<grid_for(total), kThreads, 0, s>>>(
                                       static_cast<const IT*>(idx), static_cast<const E*>(vals), static_cast<E*>(out),
                                       total, depth, inner)));
    return cudaGetLastError();
  };
  switch (idx_t) {
    case KType::kI32: return run(int32_t{});
    case KType::kI64: return run(int64_t{});
    case KType::kF32: return run(float{});
    case KType::kF16: return run(__half{});
    case KType::kBF16: return run(__nv_bfloat16{});
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace k

// ---- CUDA op ---------------------------------------------------------------------------------------

namespace {

using namespace util;

bool one_hot_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1) || !has_input(n, 2)) return reject(why, "needs indices, depth and values");
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

}  // namespace

// Keys: the indices (input 0) are read as int32/int64/float32/float16/bfloat16 (launch_one_hot's
// switch); the values (input 2) are moved as bytes, any element size.
void append_cuda_one_hot_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloatsInts), input_dtypes(2, kGpuEveryDtype)},
                              CudaOp{"OneHot", &one_hot_supports, &one_hot_run, {1}, nullptr}));
}

}  // namespace graft::cuda
