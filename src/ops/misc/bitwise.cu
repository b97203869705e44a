// BitwiseAnd, BitwiseOr, BitwiseXor and BitwiseNot: CUDA kernels and ops over the integer types the
// CUDA backend keeps (int8, uint8, int32, int64; the CPU reference of bitwise.cpp takes every width).
#include "ops/misc/misc.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------

namespace k {

// y = a op b, broadcast (operands 0 and 1 of `p`), t any integer type; cudaErrorInvalidValue for
// another type.
cudaError_t launch_bitwise_binary(BitwiseOp op, KType t, const void* a, const void* b, const Bcast& p, void* y,
                                  int64_t n, cudaStream_t s);
// y = ~x over n elements, t as above.
cudaError_t launch_bitwise_not(KType t, const void* x, void* y, int64_t n, cudaStream_t s);

namespace {

// In the unsigned type of T's width, as the CPU reference computes.
template <typename T>
__global__ void bitwise_binary_kernel(BitwiseOp op, const T* a, const T* b, Bcast p, T* y, int64_t n) {
  using U = std::make_unsigned_t<T>;
  GRAFT_GRID_STRIDE(i, n) {
    const U u = static_cast<U>(a[bcast_offset(p, 0, i)]), v = static_cast<U>(b[bcast_offset(p, 1, i)]);
    y[i] = static_cast<T>(op == BitwiseOp::kAnd ? U(u & v) : op == BitwiseOp::kOr ? U(u | v) : U(u ^ v));
  }
}

template <typename T>
__global__ void bitwise_not_kernel(const T* x, T* y, int64_t n) {
  using U = std::make_unsigned_t<T>;
  GRAFT_GRID_STRIDE(i, n) { y[i] = static_cast<T>(static_cast<U>(~static_cast<U>(x[i]))); }
}

// fn(T{}) for the integer KTypes the kernels take.
template <typename Fn>
cudaError_t visit_bitwise_type(KType t, Fn&& fn) {
  switch (t) {
    case KType::kI8: fn(int8_t{}); break;
    case KType::kU8: fn(uint8_t{}); break;
    case KType::kI16: fn(int16_t{}); break;
    case KType::kU16: fn(uint16_t{}); break;
    case KType::kI32: fn(int32_t{}); break;
    case KType::kU32: fn(uint32_t{}); break;
    case KType::kI64: fn(int64_t{}); break;
    case KType::kU64: fn(uint64_t{}); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_bitwise_binary(BitwiseOp op, KType t, const void* a, const void* b, const Bcast& p, void* y,
                                  int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  return visit_bitwise_type(t, [&](auto zero) {
    using T = decltype(zero);
    bitwise_binary_kernel<T><<<grid_for(n), kThreads, 0, s>>>(op, static_cast<const T*>(a), static_cast<const T*>(b),
                                                               p, static_cast<T*>(y), n);
  });
}

cudaError_t launch_bitwise_not(KType t, const void* x, void* y, int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  return visit_bitwise_type(t, [&](auto zero) {
    using T = decltype(zero);
    bitwise_not_kernel<T><<<grid_for(n), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), n);
  });
}

}  // namespace k

// ---- CUDA ops -------------------------------------------------------------------------------

namespace {

using namespace util;


bool bitwise_binary_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "needs A and B");
  if (in_dtype(n, 0) != in_dtype(n, 1)) return reject(why, "A and B have different dtypes");
  return true;
}

template <BitwiseOp kOp>
Status bitwise_binary_run(CudaExec& ex) {
  const Tensor* a = input_or_null(ex, 0);
  const Tensor* b = input_or_null(ex, 1);
  if (!a || !b) return fail(ex, StatusCode::kInvalidModel, "needs A and B");
  Tensor& y = *ex.ctx->outputs[0];
  if (a->dtype() != b->dtype() || y.dtype() != a->dtype())
    return fail(ex, StatusCode::kInvalidModel, "A and B must share a dtype, got ", dtype_name(a->dtype()), " and ",
                dtype_name(b->dtype()));
  k::Bcast p;
  std::string why;
  if (!make_bcast(y.dims(), {a->dims(), b->dims()}, &p, &why)) return fail(ex, StatusCode::kInvalidModel, why);
  return launch_status(k::launch_bitwise_binary(kOp, ktype(a->dtype()), a->data(), b->data(), p, y.data(), y.numel(),
                                                stream_of(ex)), ex);
}

Status bitwise_not_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  if (!x) return fail(ex, StatusCode::kInvalidModel, "needs X");
  Tensor& y = *ex.ctx->outputs[0];
  if (y.dtype() != x->dtype() || y.numel() != x->numel())
    return fail(ex, StatusCode::kInternal, "the output must be the input's dtype and size");
  return launch_status(k::launch_bitwise_not(ktype(x->dtype()), x->data(), y.data(), x->numel(), stream_of(ex)), ex);
}

}  // namespace

// Every operand's key: every integer type, as the CPU reference takes them.
void append_cuda_bitwise_ops(std::vector<CudaOp>& out) {
#define GRAFT_BITWISE_ROW(name, op)                                                                    \
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuIntegers), input_dtypes(1, kGpuIntegers)},          \
                              CudaOp{name, &bitwise_binary_supports, &bitwise_binary_run<op>, {}, nullptr}))
  GRAFT_BITWISE_ROW("BitwiseAnd", BitwiseOp::kAnd);
  GRAFT_BITWISE_ROW("BitwiseOr", BitwiseOp::kOr);
  GRAFT_BITWISE_ROW("BitwiseXor", BitwiseOp::kXor);
#undef GRAFT_BITWISE_ROW
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuIntegers)},
                              CudaOp{"BitwiseNot", &input0_given, &bitwise_not_run, {}, nullptr}));
}

}  // namespace graft::cuda
