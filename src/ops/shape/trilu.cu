// Trilu's CUDA kernel (launcher declared in shape.h) and op.
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

template <typename E>
__global__ void trilu_kernel(bool upper, int64_t k, const E* __restrict__ x, E* __restrict__ y, int64_t total,
                             int64_t rows, int64_t cols) {
  GRAFT_GRID_STRIDE(i, total) {
    const int64_t c = i % cols, r = (i / cols) % rows;
    const bool keep = upper ? c - r >= k : c - r <= k;
    y[i] = keep ? x[i] : E(0);
  }
}

}  // namespace

cudaError_t launch_trilu(int elem_size, bool upper, int64_t k, const void* x, void* y, int64_t planes, int64_t rows,
                         int64_t cols, cudaStream_t s) {
  const int64_t total = planes * rows * cols;
  if (total == 0) return cudaSuccess;
  GRAFT_SIZE_DISPATCH(elem_size, (trilu_kernel<E><<<grid_for(total), kThreads, 0, s>>>(
                                     upper, k, static_cast<const E*>(x), static_cast<E*>(y), total, rows, cols)));
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA op ---------------------------------------------------------------------------------------

namespace {

using namespace util;

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

}  // namespace

void append_cuda_trilu_ops(std::vector<CudaOp>& out) {
  out.push_back(
      kernel_dtypes({input_dtypes(0, kGpuEveryDtype)}, CudaOp{"Trilu", &input0_given, &trilu_run, {1}, nullptr}));
}

}  // namespace graft::cuda
