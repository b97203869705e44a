// ReverseSequence's CUDA kernel and op.
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


// x viewed as [d0, d1, block] with the batch on axis 0 (batch_axis_0) or 1 and time on the other;
// the first lens[b] steps of batch b are reversed. A length outside [0, steps] (which the CPU
// reference refuses) leaves that batch's steps in order and is reported through `fault`.
cudaError_t launch_reverse_sequence(int elem_size, const void* x, const int64_t* lens, void* y, bool batch_axis_0,
                                    int64_t d0, int64_t d1, int64_t block, cudaStream_t s, const DataFault& fault);

namespace {

template <typename E>
__global__ void reverse_sequence_kernel(const E* x, const int64_t* lens, E* y, bool batch0, int64_t d0, int64_t d1,
                                        int64_t block, int64_t n, DataFault fault) {
  const int64_t steps = batch0 ? d1 : d0;
  GRAFT_GRID_STRIDE(i, n) {
    const int64_t e = i % block, pair = i / block;
    const int64_t r0 = pair / d1, r1 = pair % d1;
    const int64_t b = batch0 ? r0 : r1, t = batch0 ? r1 : r0;
    const int64_t len = lens[b];
    const bool valid = len >= 0 && len <= steps;
    if (!valid) report_invalid_data(fault);
    const int64_t src_t = valid && t < len ? len - 1 - t : t;
    const int64_t src = batch0 ? b * d1 + src_t : src_t * d1 + b;
    y[i] = x[src * block + e];
  }
}

}  // namespace

cudaError_t launch_reverse_sequence(int elem_size, const void* x, const int64_t* lens, void* y, bool batch_axis_0,
                                    int64_t d0, int64_t d1, int64_t block, cudaStream_t s, const DataFault& fault) {
  const int64_t n = d0 * d1 * block;
  if (n == 0) return cudaSuccess;
  GRAFT_SIZE_DISPATCH(elem_size, (reverse_sequence_kernel<E><<<grid_for(n), kThreads, 0, s>>>(
                                          static_cast<const E*>(x), lens, static_cast<E*>(y), batch_axis_0, d0, d1,
                                          block, n, fault)));
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA op --------------------------------------------------------------------------------

namespace {

using namespace util;

bool reverse_sequence_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "needs input and sequence_lens");
  return true;
}

// sequence_lens stays on the device (the kernel reads it), which reports a length out of range
// (CudaOp::invalid_data): see launch_reverse_sequence.
Status reverse_sequence_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  const Tensor* lens = input_or_null(ex, 1);
  if (!x || !lens) return fail(ex, StatusCode::kInvalidModel, "needs input and sequence_lens");
  Tensor& y = *ex.ctx->outputs[0];
  auto axes = graft::reverse_sequence_axes(attrs_of(ex));
  if (!axes) return with_node(ex, axes.status());
  if (x->rank() < 2) return fail(ex, StatusCode::kInvalidModel, "input must have rank >= 2, got ", dims_str(x->dims()));
  if (y.dims() != x->dims() || y.dtype() != x->dtype())
    return fail(ex, StatusCode::kInternal, "output must have the input's shape and dtype");
  const bool batch0 = axes.value().first == 0;
  const int64_t batch = x->dims()[batch0 ? 0 : 1];
  if (lens->dtype() != DataType::kInt64 || lens->dims() != std::vector<int64_t>{batch})
    return fail(ex, StatusCode::kInvalidModel, "sequence_lens must be int64 [", batch, "], got ",
                dtype_name(lens->dtype()), " ", dims_str(lens->dims()));
  int64_t block = 1;
  for (int64_t d = 2; d < x->rank(); ++d) block *= x->dims()[static_cast<size_t>(d)];
  return launch_status(k::launch_reverse_sequence(static_cast<int>(dtype_size(x->dtype())), x->data(),
                                                  static_cast<const int64_t*>(lens->data()), y.data(), batch0,
                                                  x->dims()[0], x->dims()[1], block, stream_of(ex), ex.fault), ex);
}

}  // namespace

void append_cuda_reverse_sequence_ops(std::vector<CudaOp>& out) {
  // sequence_lens is read on the device as int64.
  out.push_back(reports_invalid_data(
      "a sequence length is outside [0, the number of steps]",
      kernel_dtypes({input_dtypes(0, kGpuKTypes), input_dtypes(1, {DataType::kInt64})},
                    CudaOp{"ReverseSequence", &reverse_sequence_supports, &reverse_sequence_run, {}, nullptr})));
}

}  // namespace graft::cuda
