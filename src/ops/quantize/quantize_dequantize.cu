// GraftQuantizeDequantize's CUDA kernel and CUDA op (definition and CPU reference:
// quantize_dequantize.cpp): QuantizeLinear's steps, then DequantizeLinear's, through
// quantize_cuda.cuh's quantize_one, so the result equals the pair's to the bit.
#include "ops/quantize/quantize.h"

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/quantize/quantize_cuda.cuh"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------

namespace k {

// GraftQuantizeDequantize: y (x's float type) = DequantizeLinear(QuantizeLinear(x)) over a scalar
// scale and zero point, integers in [lo, hi].
cudaError_t launch_quantize_dequantize(KType t, const void* x, void* y, int64_t n, float scale, float zp, float lo,
                                       float hi, cudaStream_t s);

namespace {

// QuantizeLinear's steps, then DequantizeLinear's (the CPU reference's quantize_dequantize), for one
// element over a scalar scale and zero point. The reference multiplies in double and rounds the
// product to x's type, half types through float. Below double, one float32 multiply gives the same
// bits: q - z is an integer of at most 9 bits and s a float32, so their exact product is what the
// double holds, and IEEE multiplication rounds that exact product once, as the conversion to float
// does. Hopper converts to and from double at a small fraction of its float rate, so the double
// steps made this pass, one per quantized layer of a Q/DQ model, about twice its memory time.
template <typename T>
__device__ __forceinline__ T quantize_dequantize_one(T v, float s, float z, float lo, float hi) {
  if constexpr (std::is_same_v<T, double>) {
    const float q = quantize_one(__fdiv_rn(__double2float_rn(v), s), z, lo, hi);
    return __dmul_rn(static_cast<double>(q) - static_cast<double>(z), static_cast<double>(s));
  } else {
    // Elem: float for float, __half and __nv_bfloat16, stored back rounding to nearest.
    const float q = quantize_one(__fdiv_rn(Elem<T>::ld(v), s), z, lo, hi);
    return Elem<T>::st(__fmul_rn(__fsub_rn(q, z), s));
  }
}

template <typename T>
__global__ void quantize_dequantize_kernel(const T* x, T* y, int64_t n, float s, float z, float lo, float hi) {
  GRAFT_GRID_STRIDE(i, n) y[i] = quantize_dequantize_one(x[i], s, z, lo, hi);
}

// The same over 16-byte groups (x and y 16-byte aligned, n a multiple of the group): a pair sits
// before every quantized layer of a Q/DQ model, over whole activations, so its loads are the
// memory's widest.
template <typename T>
__global__ void quantize_dequantize_vec_kernel(const uint4* x, uint4* y, int64_t groups, float s, float z, float lo,
                                               float hi) {
  constexpr int kPer = sizeof(uint4) / sizeof(T);
  GRAFT_GRID_STRIDE(i, groups) {
    uint4 raw = x[i];
    T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
    for (int k = 0; k < kPer; ++k) e[k] = quantize_dequantize_one(e[k], s, z, lo, hi);
    y[i] = raw;
  }
}

template <typename T>
cudaError_t launch_qdq(const void* x, void* y, int64_t n, float s, float z, float lo, float hi, cudaStream_t st) {
  constexpr int64_t kPer = sizeof(uint4) / sizeof(T);
  const bool aligned = reinterpret_cast<uintptr_t>(x) % sizeof(uint4) == 0 && reinterpret_cast<uintptr_t>(y) % sizeof(uint4) == 0;
  if (aligned && n % kPer == 0) {
    const int64_t groups = n / kPer;
    quantize_dequantize_vec_kernel<T><<<grid_for(groups), kThreads, 0, st>>>(static_cast<const uint4*>(x),
                                                                             static_cast<uint4*>(y), groups, s, z, lo, hi);
  } else {
    quantize_dequantize_kernel<T><<<grid_for(n), kThreads, 0, st>>>(static_cast<const T*>(x), static_cast<T*>(y), n, s, z,
                                                                    lo, hi);
  }
  return cudaGetLastError();
}

}  // namespace

// ---- launchers ----------------------------------------------------------------------------------

cudaError_t launch_quantize_dequantize(KType t, const void* x, void* y, int64_t n, float scale, float zp, float lo,
                                       float hi, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  GRAFT_FLOAT64_DISPATCH(t, return launch_qdq<T>(x, y, n, scale, zp, lo, hi, s))
  return cudaErrorInvalidValue;
}

}  // namespace k

// ---- CUDA op --------------------------------------------------------------------------------

namespace {

using namespace util;

// The scale and zero point are read on the host (scalars, passed to the kernel by value), which also
// keeps the scale float32 in a float16 engine: the pair's quantization steps stay the model's.

// The keys: x and the scale float32/float16/bfloat16/float64, the zero point uint8/int8.
bool quantize_dequantize_supports(const Node& n, std::string* why) {
  if (!input0_given(n, why)) return false;
  if (!has_input(n, 1) || !has_input(n, 2)) return reject(why, "needs a scale and a zero point");
  if (out_dtype(n, 0) != in_dtype(n, 0)) return reject(why, "the output's dtype differs from x's");
  return true;
}

Status quantize_dequantize_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  const Tensor* scale = input_or_null(ex, 1);
  const Tensor* zp = input_or_null(ex, 2);
  if (!x || !scale || !zp) return fail(ex, StatusCode::kInvalidModel, "needs x, a scale and a zero point");
  if (!dtype_is_float(scale->dtype()) || scale->numel() != 1 || zp->numel() != 1)
    return fail(ex, StatusCode::kInvalidModel, "the scale and zero point must be scalars (a float scale)");
  const bool is_u8 = zp->dtype() == DataType::kUInt8;
  if (!is_u8 && zp->dtype() != DataType::kInt8)
    return fail(ex, StatusCode::kInvalidModel, "the zero point must be uint8 or int8, got ", dtype_name(zp->dtype()));
  Tensor& y = *ex.ctx->outputs[0];
  if (y.numel() != x->numel() || y.dtype() != x->dtype())
    return fail(ex, StatusCode::kInternal, "output must have x's dtype and size");
  return launch_status(k::launch_quantize_dequantize(ktype(x->dtype()), x->data(), y.data(), y.numel(),
                                                     static_cast<float>(scale->get(0)), static_cast<float>(zp->get(0)),
                                                     is_u8 ? 0.0f : -128.0f, is_u8 ? 255.0f : 127.0f, stream_of(ex)),
                       ex);
}

}  // namespace

void append_cuda_quantize_dequantize_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats64), input_dtypes(1, kGpuFloats64),
                               input_dtypes(2, kQuantTypes)},
                              CudaOp{"GraftQuantizeDequantize", &quantize_dequantize_supports, &quantize_dequantize_run,
                                     {1, 2}, nullptr}));
}

}  // namespace graft::cuda
