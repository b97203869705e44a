// BitShift's CUDA kernel and op (uint8; the CPU reference of bit_shift.cpp takes every width).
#include "ops/misc/misc.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
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


// uint8 y = x << s (left) or x >> s, broadcast (operands 0 and 1 of `p`); shifts of 8 or more give 0.
cudaError_t launch_bit_shift(bool left, const uint8_t* x, const uint8_t* sh, const Bcast& p, uint8_t* y, int64_t n,
                             cudaStream_t s);

namespace {

__global__ void bit_shift_kernel(bool left, const uint8_t* x, const uint8_t* sh, Bcast p, uint8_t* y, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    const unsigned v = x[bcast_offset(p, 0, i)], by = sh[bcast_offset(p, 1, i)];
    // Shifting by the width or more shifts every bit out (and is undefined in C++).
    y[i] = by >= 8 ? uint8_t{0} : static_cast<uint8_t>(left ? (v << by) : (v >> by));
  }
}

}  // namespace

cudaError_t launch_bit_shift(bool left, const uint8_t* x, const uint8_t* sh, const Bcast& p, uint8_t* y, int64_t n,
                             cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  bit_shift_kernel<<<grid_for(n), kThreads, 0, s>>>(left, x, sh, p, y, n);
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA op --------------------------------------------------------------------------------

namespace {

using namespace util;

// uint8 is the one integer type of BitShift graft has (its schema takes nothing else): X's and Y's key.
constexpr std::initializer_list<DataType> kBitShiftTypes = {DataType::kUInt8};

bool bit_shift_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "needs X and Y");
  return true;
}

Status bit_shift_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  const Tensor* s = input_or_null(ex, 1);
  if (!x || !s) return fail(ex, StatusCode::kInvalidModel, "needs X and Y");
  Tensor& y = *ex.ctx->outputs[0];
  auto left = graft::bit_shift_left(attrs_of(ex));
  if (!left) return with_node(ex, left.status());
  if (x->dtype() != s->dtype() || y.dtype() != x->dtype())
    return fail(ex, StatusCode::kInvalidModel, "X and Y must share a dtype, got ", dtype_name(x->dtype()), " and ",
                dtype_name(s->dtype()));
  if (x->dtype() != DataType::kUInt8) return fail(ex, StatusCode::kUnsupported, "dtype ", dtype_name(x->dtype()));
  k::Bcast p;
  std::string why;
  if (!make_bcast(y.dims(), {x->dims(), s->dims()}, &p, &why)) return fail(ex, StatusCode::kInvalidModel, why);
  return launch_status(k::launch_bit_shift(left.value(), static_cast<const uint8_t*>(x->data()),
                                           static_cast<const uint8_t*>(s->data()), p, static_cast<uint8_t*>(y.data()),
                                           y.numel(), stream_of(ex)), ex);
}

}  // namespace

void append_cuda_bit_shift_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, kBitShiftTypes), input_dtypes(1, kBitShiftTypes)},
                              CudaOp{"BitShift", &bit_shift_supports, &bit_shift_run, {}, nullptr}));
}

}  // namespace graft::cuda
