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


// y = x << s (left) or x >> s, broadcast (operands 0 and 1 of `p`), t one of u8/u16/u32/u64 (x, s and
// y all of it); shifts by the width or more give 0.
cudaError_t launch_bit_shift(bool left, KType t, const void* x, const void* sh, const Bcast& p, void* y, int64_t n,
                             cudaStream_t s);

namespace {

template <typename U>
__global__ void bit_shift_kernel(bool left, const U* x, const U* sh, Bcast p, U* y, int64_t n) {
  constexpr U kWidth = sizeof(U) * 8;
  GRAFT_GRID_STRIDE(i, n) {
    // In at least unsigned int, as C++ promotes; the result is cut back to U's width.
    using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
    const W v = x[bcast_offset(p, 0, i)];
    const U by = sh[bcast_offset(p, 1, i)];
    // Shifting by the width or more shifts every bit out (and is undefined in C++).
    y[i] = by >= kWidth ? U{0} : static_cast<U>(left ? (v << by) : (v >> by));
  }
}

}  // namespace

cudaError_t launch_bit_shift(bool left, KType t, const void* x, const void* sh, const Bcast& p, void* y, int64_t n,
                             cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  auto go = [&](auto zero) {
    using U = decltype(zero);
    bit_shift_kernel<U><<<grid_for(n), kThreads, 0, s>>>(left, static_cast<const U*>(x), static_cast<const U*>(sh), p,
                                                         static_cast<U*>(y), n);
  };
  switch (t) {
    case KType::kU8: go(uint8_t{}); break;
    case KType::kU16: go(uint16_t{}); break;
    case KType::kU32: go(uint32_t{}); break;
    case KType::kU64: go(uint64_t{}); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA op --------------------------------------------------------------------------------

namespace {

using namespace util;

// BitShift's unsigned types: X's and Y's key.
constexpr std::initializer_list<DataType> kBitShiftTypes = {DataType::kUInt8, DataType::kUInt16, DataType::kUInt32,
                                                            DataType::kUInt64};

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
  k::Bcast p;
  std::string why;
  if (!make_bcast(y.dims(), {x->dims(), s->dims()}, &p, &why)) return fail(ex, StatusCode::kInvalidModel, why);
  return launch_status(k::launch_bit_shift(left.value(), ktype(x->dtype()), x->data(), s->data(), p, y.data(),
                                           y.numel(), stream_of(ex)), ex);
}

}  // namespace

void append_cuda_bit_shift_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, kBitShiftTypes), input_dtypes(1, kBitShiftTypes)},
                              CudaOp{"BitShift", &bit_shift_supports, &bit_shift_run, {}, nullptr}));
}

}  // namespace graft::cuda
