// EyeLike's CUDA kernel and op.
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


// y[r, c] = (c - r == k) ? one : 0, where `one` is the low elem_size bytes of `one_bits`.
cudaError_t launch_eye_like(int elem_size, uint64_t one_bits, int64_t rows, int64_t cols, int64_t k, void* y,
                            cudaStream_t s);

namespace {

template <typename E>
__global__ void eye_like_kernel(E one, int64_t cols, int64_t k, E* y, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    const int64_t r = i / cols, c = i % cols;
    y[i] = c - r == k ? one : E{0};
  }
}

}  // namespace

cudaError_t launch_eye_like(int elem_size, uint64_t one_bits, int64_t rows, int64_t cols, int64_t k, void* y,
                            cudaStream_t s) {
  const int64_t n = rows * cols;
  if (n == 0) return cudaSuccess;
  GRAFT_SIZE_DISPATCH(elem_size, (eye_like_kernel<E><<<grid_for(n), kThreads, 0, s>>>(
                                          static_cast<E>(one_bits), cols, k, static_cast<E*>(y), n)));
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA op --------------------------------------------------------------------------------

namespace {

using namespace util;

// x given (its shape is read) and the output, whose dtype is the key (a key on an absent value says nothing).
bool eye_like_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input 0 is missing");
  if (!n.output(0)) return reject(why, "output 0 is missing");
  return true;
}

// Only x's shape is used: its values are never read.
Status eye_like_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  if (!x) return fail(ex, StatusCode::kInvalidModel, "input 0 is missing");
  Tensor& y = *ex.ctx->outputs[0];
  GRAFT_ASSIGN_OR_RETURN(int64_t kdiag, attrs_of(ex).get_int("k", 0));
  if (x->rank() != 2) return fail(ex, StatusCode::kInvalidModel, "input must be 2-D, got ", dims_str(x->dims()));
  if (y.dims() != x->dims()) return fail(ex, StatusCode::kInternal, "output shape differs from the input's");
  // The bytes of 1 in y's dtype, made by the same store the CPU reference uses.
  uint64_t one = 0;
  store_from_double(y.dtype(), &one, 0, 1.0);
  return launch_status(k::launch_eye_like(static_cast<int>(dtype_size(y.dtype())), one, x->dims()[0], x->dims()[1],
                                          kdiag, y.data(), stream_of(ex)), ex);
}

}  // namespace

void append_cuda_eye_like_ops(std::vector<CudaOp>& out) {
  // Keyed by the output's dtype (the dtype attribute's, or x's): x's values are never read.
  out.push_back(kernel_dtypes({output_dtypes(0, kGpuKTypes)},
                              CudaOp{"EyeLike", &eye_like_supports, &eye_like_run, {}, nullptr}));
}

}  // namespace graft::cuda
