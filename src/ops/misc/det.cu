// Det's CUDA kernel and op: one thread per matrix, elimination in double as the CPU reference of
// det.cpp.
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


// y[b] = det(x[b]) for `batches` matrices [m, m] of float dtype t (float32, float16, bfloat16,
// float64): one thread per matrix, Gaussian elimination with partial pivoting in double, as the CPU
// reference does it, on the matrix copied to `scratch` (batches * m * m doubles).
cudaError_t launch_det(KType t, const void* x, int64_t batches, int64_t m, double* scratch, void* y, cudaStream_t s);

namespace {

template <typename T>
__global__ void det_kernel(const T* x, int64_t batches, int64_t m, double* scratch, T* y) {
  GRAFT_GRID_STRIDE(b, batches) {
    const int64_t mm = m * m;
    double* a = scratch + b * mm;
    for (int64_t i = 0; i < mm; ++i) a[i] = static_cast<double>(Elem<T>::ld(x[b * mm + i]));
    double d = 1.0;
    for (int64_t col = 0; col < m && d != 0.0; ++col) {
      int64_t piv = col;
      for (int64_t r = col + 1; r < m; ++r)
        if (fabs(a[r * m + col]) > fabs(a[piv * m + col])) piv = r;
      if (a[piv * m + col] == 0.0) {
        d = 0.0;
        break;
      }
      if (piv != col) {
        for (int64_t c = 0; c < m; ++c) {
          const double t = a[piv * m + c];
          a[piv * m + c] = a[col * m + c];
          a[col * m + c] = t;
        }
        d = -d;
      }
      d *= a[col * m + col];
      for (int64_t r = col + 1; r < m; ++r) {
        const double f = a[r * m + col] / a[col * m + col];
        for (int64_t c = col; c < m; ++c) a[r * m + c] -= f * a[col * m + c];
      }
    }
    y[b] = Elem<T>::st(static_cast<typename Elem<T>::C>(d));
  }
}

}  // namespace

cudaError_t launch_det(KType t, const void* x, int64_t batches, int64_t m, double* scratch, void* y, cudaStream_t s) {
  if (batches == 0) return cudaSuccess;
  GRAFT_FLOAT64_DISPATCH(t, (det_kernel<T><<<grid_for(batches), kThreads, 0, s>>>(static_cast<const T*>(x), batches, m,
                                                                                   scratch, static_cast<T*>(y))));
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA op --------------------------------------------------------------------------------

namespace {

using namespace util;

// Each matrix is eliminated in a double copy of its own in the workspace.
size_t det_workspace(const Node&, const std::vector<const Tensor*>& inputs, const std::vector<Tensor>& /*outputs*/) {
  if (inputs.empty() || !inputs[0] || inputs[0]->rank() < 2) return 0;
  return static_cast<size_t>(inputs[0]->numel()) * sizeof(double);
}

Status det_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  if (!x) return fail(ex, StatusCode::kInvalidModel, "needs X");
  Tensor& y = *ex.ctx->outputs[0];
  if (x->rank() < 2 || x->dims()[x->rank() - 1] != x->dims()[x->rank() - 2])
    return fail(ex, StatusCode::kInvalidModel, "input must be [..., M, M], got ", dims_str(x->dims()));
  const int64_t m = x->dims()[x->rank() - 1];
  // An empty matrix (m = 0) has determinant 1: the kernel's elimination then does nothing.
  const int64_t batches = m == 0 ? y.numel() : x->numel() / (m * m);
  if (y.numel() != batches || y.dtype() != x->dtype())
    return fail(ex, StatusCode::kInternal, "output must hold one determinant per matrix, in the input's dtype");
  if (ex.workspace_size < static_cast<size_t>(x->numel()) * sizeof(double))
    return fail(ex, StatusCode::kInternal, "Det workspace missing");
  return launch_status(k::launch_det(ktype(x->dtype()), x->data(), batches, m, static_cast<double*>(ex.workspace),
                                     y.data(), stream_of(ex)), ex);
}

}  // namespace

void append_cuda_det_ops(std::vector<CudaOp>& out) {
  out.push_back(
      kernel_dtypes({input_dtypes(0, kGpuFloats64)}, CudaOp{"Det", &input0_given, &det_run, {}, &det_workspace}));
}

}  // namespace graft::cuda
