// Launchers for the CUDA kernels of MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv (CPU
// reference: src/backends/cpu/integer.cpp; layout readers: src/ops/integer_attrs.h). Plain device pointers and strides
// computed on the host; each returns the launch's cudaError_t (cudaErrorInvalidValue for a dtype
// it does not handle).
//
// Sums are exact as the reference's: every (x - zero point) * (w - zero point) product fits in
// int32 and is added modulo 2^32, which is the reference's int64 sum wrapped to int32. The QLinear
// outputs requantize in float32 step by step as the reference does (multiplier = float(scale_a *
// scale_b) / y_scale, float(sum) * multiplier, round half to even, + y_zero_point, saturate), with
// explicitly rounded intrinsics so that no step is fused or approximated.
#pragma once

#include "backends/cuda/cuda_kernel_common.cuh"

namespace graft::cuda::k {

// The operands and parameters of a batched integer matmul, by index into the stride tables.
enum IntMatMulOperand { kIntA = 0, kIntB, kIntAZp, kIntBZp, kIntAScale, kIntBScale, kIntOperands };

// y[batch, m, n] = sum_k (A[.., m, k] - a_zp) * (B[.., k, n] - b_zp), A [.., M, K], B [.., K, N],
// y [batch..., M, N] row-major. Per output batch axis (batch_rank of them, extents batch_dims), each
// operand's element offset stride (0 where it broadcasts); per row m (A's zero point and scale) or
// column n (B's) a further stride (0 per tensor). Zero points have the dtype of their operand (null:
// none); scales are of dtype scale_t (float32, float16, bfloat16), y_scale and y_zp one element.
struct IntMatMulArgs {
  int64_t M = 0, K = 0, N = 0;
  int batch_rank = 0;
  int64_t batch_dims[kMaxRank] = {};
  int64_t batch_strides[kIntOperands][kMaxRank] = {};
  int64_t vary_stride[kIntOperands] = {};  // used for the zero points and scales
  const void* a = nullptr;
  const void* b = nullptr;
  const void* a_zp = nullptr;
  const void* b_zp = nullptr;
  // QLinearMatMul only (y of dtype int8/uint8).
  KType scale_t = KType::kF32;
  const void* a_scale = nullptr;
  const void* b_scale = nullptr;
  const void* y_scale = nullptr;
  const void* y_zp = nullptr;
};

// a_t, b_t: int8 or uint8. y_t: int32 (MatMulInteger: the sums) or int8/uint8 (QLinearMatMul: the
// requantized sums, y_zp of that dtype). `batch` is the product of batch_dims.
cudaError_t launch_int_matmul(KType a_t, KType b_t, KType y_t, const IntMatMulArgs& args, int64_t batch, void* y,
                              cudaStream_t s);

// The spatial axes a conv kernel takes; fewer are padded in front with extent-1 axes.
constexpr int kIntConvMaxSpatial = 3;

// x [N, C, in...], w [M, Cg, kernel...], y [N, M, out...]; channel group g = m / (M / group) reads
// x channels [g * Cg, (g + 1) * Cg). Input position of output p and tap t on axis a:
// p * stride - pad_begin + t * dilation; outside the input the tap adds nothing.
struct IntConvArgs {
  int64_t N = 0, C = 0, M = 0, Cg = 0, Mg = 1;  // Mg: output channels per group
  int64_t in[kIntConvMaxSpatial] = {1, 1, 1};
  int64_t out[kIntConvMaxSpatial] = {1, 1, 1};
  int64_t kernel[kIntConvMaxSpatial] = {1, 1, 1};
  int64_t stride[kIntConvMaxSpatial] = {1, 1, 1};
  int64_t pad[kIntConvMaxSpatial] = {0, 0, 0};
  int64_t dilation[kIntConvMaxSpatial] = {1, 1, 1};
  const void* x = nullptr;
  const void* w = nullptr;
  const void* x_zp = nullptr;  // one element, x's dtype, or null
  const void* w_zp = nullptr;  // one element or M (w_zp_per_channel), w's dtype, or null
  bool w_zp_per_channel = false;
  // QLinearConv only (y of dtype int8/uint8). x_scale and y_scale one element; w_scale one or M.
  KType scale_t = KType::kF32;
  const void* x_scale = nullptr;
  const void* w_scale = nullptr;
  bool w_scale_per_channel = false;
  const void* y_scale = nullptr;
  const void* y_zp = nullptr;
  const int32_t* bias = nullptr;  // [M] or null, added to the int32 sum before requantizing
};

// x_t, w_t: int8 or uint8. y_t: int32 (ConvInteger) or int8/uint8 (QLinearConv).
cudaError_t launch_int_conv(KType x_t, KType w_t, KType y_t, const IntConvArgs& args, void* y, cudaStream_t s);

}  // namespace graft::cuda::k
