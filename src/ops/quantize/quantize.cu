// The quantize family's CUDA kernels and CUDA ops (definitions and CPU references: quantize.cpp).
#include "ops/quantize/quantize.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/attr_util.h"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------

namespace k {

// The arithmetic follows the CPU reference step by step (float32 division and round-half-even for
// quantization, double for dequantization, stored as graft's store_from_double does), so integer
// outputs match it exactly.

// ---- (De)QuantizeLinear ---------------------------------------------------------------------------

// Per-tensor when channels == 1, else per-axis: the scale/zero-point entry of flat index i is
// (i / inner) % channels. `scale` has any float KType; `zp` (may be null) has y's type (quantize)
// or x's type (dequantize).
struct QuantArgs {
  const void* scale = nullptr;
  KType scale_t = KType::kF32;
  const void* zp = nullptr;
  int64_t channels = 1;
  int64_t inner = 1;
};
// y (u8/i8) = saturate(round_half_even(float(x) / float(scale)) + zp); NaN gives the zero point.
// x: f32/f16/bf16/f64/i32.
cudaError_t launch_quantize_linear(KType xt, KType yt, const void* x, const QuantArgs& q, void* y, int64_t n,
                                   cudaStream_t s);
// y (any float type) = (x - zp) * scale in double, rounded once to y's type. x: u8/i8/i32.
cudaError_t launch_dequantize_linear(KType xt, KType yt, const void* x, const QuantArgs& q, void* y, int64_t n,
                                     cudaStream_t s);

// GraftQuantizeDequantize: y (x's float type) = DequantizeLinear(QuantizeLinear(x)) over a scalar
// scale and zero point, integers in [lo, hi].
cudaError_t launch_quantize_dequantize(KType t, const void* x, void* y, int64_t n, float scale, float zp, float lo,
                                       float hi, cudaStream_t s);

// DynamicQuantizeLinear (float32 -> uint8): min/max over x (with 0, NaN skipped) in per-block
// partials, then scale/zero point, then y. `partials` is device scratch of
// dynamic_quantize_workspace_bytes().
size_t dynamic_quantize_workspace_bytes();
cudaError_t launch_dynamic_quantize_linear(const float* x, int64_t n, uint8_t* y, float* y_scale, uint8_t* y_zp,
                                           void* partials, cudaStream_t s);

namespace {

// The scale's entry c in double (its KType chosen per launch, one branch uniform over the grid).
__device__ __forceinline__ double scale_at(const void* p, KType t, int64_t c) {
  switch (t) {
    case KType::kF16: return as_double(static_cast<const __half*>(p)[c]);
    case KType::kBF16: return as_double(static_cast<const __nv_bfloat16*>(p)[c]);
    case KType::kF64: return static_cast<const double*>(p)[c];
    default: return static_cast<const float*>(p)[c];
  }
}

__device__ __forceinline__ int64_t channel_of(const QuantArgs& q, int64_t i) {
  return q.channels == 1 ? 0 : (i / q.inner) % q.channels;
}

// The CPU's quantize_one: round half to even, add the zero point, clamp, all in float; NaN gives
// the zero point. Explicit _rn intrinsics keep the steps from being fused or approximated.
__device__ __forceinline__ float quantize_one(float v, float zp, float lo, float hi) {
  const float q = isnan(v) ? zp : __fadd_rn(rintf(v), zp);
  return fminf(fmaxf(q, lo), hi);
}

template <typename X, typename Y>
__global__ void quantize_kernel(const X* x, QuantArgs q, Y* y, int64_t n, float lo, float hi) {
  const Y* zp = static_cast<const Y*>(q.zp);
  GRAFT_GRID_STRIDE(i, n) {
    const int64_t c = channel_of(q, i);
    const float s = __double2float_rn(scale_at(q.scale, q.scale_t, c));
    const float z = zp ? static_cast<float>(zp[c]) : 0.0f;
    // float(x) through double as the CPU reads it: exact for the half types, int32 rounds once.
    const float xv = __double2float_rn(as_double(x[i]));
    y[i] = static_cast<Y>(quantize_one(__fdiv_rn(xv, s), z, lo, hi));
  }
}

template <typename X, typename Y>
__global__ void dequantize_kernel(const X* x, QuantArgs q, Y* y, int64_t n) {
  const X* zp = static_cast<const X*>(q.zp);
  GRAFT_GRID_STRIDE(i, n) {
    const int64_t c = channel_of(q, i);
    const double d = static_cast<double>(x[i]) - (zp ? static_cast<double>(zp[c]) : 0.0);
    y[i] = store_from_double<Y>(__dmul_rn(d, scale_at(q.scale, q.scale_t, c)));
  }
}

// QuantizeLinear's steps, then DequantizeLinear's (the CPU reference's quantize_dequantize), per
// element over a scalar scale and zero point passed by value.
template <typename T>
__global__ void quantize_dequantize_kernel(const T* x, T* y, int64_t n, float s, float z, float lo, float hi) {
  const double sd = s, zd = z;
  GRAFT_GRID_STRIDE(i, n) {
    const float q = quantize_one(__fdiv_rn(__double2float_rn(as_double(x[i])), s), z, lo, hi);
    y[i] = store_from_double<T>(__dmul_rn(static_cast<double>(q) - zd, sd));
  }
}

// ---- DynamicQuantizeLinear ----------------------------------------------------------------------

constexpr int kDqBlocks = 256;

// Min and max of x with 0 (the CPU starts its scan at 0); fminf/fmaxf skip NaN as std::fmin does,
// and min/max do not depend on the order, so the result is exactly the CPU's.
__global__ void dq_minmax_kernel(const float* x, int64_t n, float* partials) {
  __shared__ float sh[32];
  float lo = 0.0f, hi = 0.0f;
  GRAFT_GRID_STRIDE(i, n) {
    lo = fminf(lo, x[i]);
    hi = fmaxf(hi, x[i]);
  }
  lo = -block_max(-lo, sh);
  hi = block_max(hi, sh);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = lo;
    partials[kDqBlocks + blockIdx.x] = hi;
  }
}

__global__ void dq_params_kernel(const float* partials, int blocks, float* y_scale, uint8_t* y_zp) {
  __shared__ float sh[32];
  float lo = 0.0f, hi = 0.0f;
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) {
    lo = fminf(lo, partials[b]);
    hi = fmaxf(hi, partials[kDqBlocks + b]);
  }
  lo = -block_max(-lo, sh);
  hi = block_max(hi, sh);
  if (threadIdx.x == 0) {
    const float scale = __fdiv_rn(__fsub_rn(hi, lo), 255.0f);
    // Scale 0 (an all-zero input): zero point 0, as the CPU gives, rather than 0 / 0.
    const float zp = scale == 0.0f ? 0.0f : quantize_one(__fdiv_rn(__fsub_rn(0.0f, lo), scale), 0.0f, 0.0f, 255.0f);
    *y_scale = scale;
    *y_zp = static_cast<uint8_t>(zp);
  }
}

__global__ void dq_apply_kernel(const float* x, int64_t n, const float* y_scale, const uint8_t* y_zp, uint8_t* y) {
  const float scale = *y_scale;
  const float zp = static_cast<float>(*y_zp);
  GRAFT_GRID_STRIDE(i, n) {
    y[i] = scale == 0.0f ? uint8_t{0}
                         : static_cast<uint8_t>(quantize_one(__fdiv_rn(x[i], scale), zp, 0.0f, 255.0f));
  }
}

}  // namespace

// ---- launchers ----------------------------------------------------------------------------------

cudaError_t launch_quantize_linear(KType xt, KType yt, const void* x, const QuantArgs& q, void* y, int64_t n,
                                   cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const unsigned g = grid_for(n);
#define GRAFT_QUANT_Y(X)                                                                                      \
  switch (yt) {                                                                                               \
    case KType::kU8:                                                                                          \
      quantize_kernel<X, uint8_t><<<g, kThreads, 0, s>>>(static_cast<const X*>(x), q, static_cast<uint8_t*>(y), n, \
                                                         0.0f, 255.0f);                                       \
      break;                                                                                                  \
    case KType::kI8:                                                                                          \
      quantize_kernel<X, int8_t><<<g, kThreads, 0, s>>>(static_cast<const X*>(x), q, static_cast<int8_t*>(y), n, \
                                                        -128.0f, 127.0f);                                     \
      break;                                                                                                  \
    default: return cudaErrorInvalidValue;                                                                    \
  }
  switch (xt) {
    case KType::kF32: GRAFT_QUANT_Y(float); break;
    case KType::kF16: GRAFT_QUANT_Y(__half); break;
    case KType::kBF16: GRAFT_QUANT_Y(__nv_bfloat16); break;
    case KType::kF64: GRAFT_QUANT_Y(double); break;
    case KType::kI32: GRAFT_QUANT_Y(int32_t); break;
    default: return cudaErrorInvalidValue;
  }
#undef GRAFT_QUANT_Y
  return cudaGetLastError();
}

cudaError_t launch_dequantize_linear(KType xt, KType yt, const void* x, const QuantArgs& q, void* y, int64_t n,
                                     cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const unsigned g = grid_for(n);
#define GRAFT_DEQUANT_X(X)                                                                                   \
  GRAFT_FLOAT64_DISPATCH(yt, (dequantize_kernel<X, T><<<g, kThreads, 0, s>>>(static_cast<const X*>(x), q, \
                                                                                 static_cast<T*>(y), n)))
  switch (xt) {
    case KType::kU8: GRAFT_DEQUANT_X(uint8_t); break;
    case KType::kI8: GRAFT_DEQUANT_X(int8_t); break;
    case KType::kI32: GRAFT_DEQUANT_X(int32_t); break;
    default: return cudaErrorInvalidValue;
  }
#undef GRAFT_DEQUANT_X
  return cudaGetLastError();
}

cudaError_t launch_quantize_dequantize(KType t, const void* x, void* y, int64_t n, float scale, float zp, float lo,
                                       float hi, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const unsigned g = grid_for(n);
  GRAFT_FLOAT64_DISPATCH(t, (quantize_dequantize_kernel<T><<<g, kThreads, 0, s>>>(static_cast<const T*>(x),
                                                                                  static_cast<T*>(y), n, scale, zp,
                                                                                  lo, hi)))
  return cudaGetLastError();
}

size_t dynamic_quantize_workspace_bytes() { return 2 * kDqBlocks * sizeof(float); }

cudaError_t launch_dynamic_quantize_linear(const float* x, int64_t n, uint8_t* y, float* y_scale, uint8_t* y_zp,
                                           void* partials, cudaStream_t s) {
  if (!partials) return cudaErrorInvalidValue;
  float* part = static_cast<float*>(partials);
  unsigned blocks = grid_for(n);
  if (blocks > static_cast<unsigned>(kDqBlocks)) blocks = kDqBlocks;
  // Even an empty x gets its scale (0) and zero point (0) written.
  dq_minmax_kernel<<<blocks, kThreads, 0, s>>>(x, n, part);
  dq_params_kernel<<<1, kThreads, 0, s>>>(part, static_cast<int>(blocks), y_scale, y_zp);
  if (n > 0) dq_apply_kernel<<<grid_for(n), kThreads, 0, s>>>(x, n, y_scale, y_zp, y);
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA ops -------------------------------------------------------------------------------
// The CUDA ops validate the scale/zero-point layout with the CPU reference's own reader
// (quant_layout), so errors read the same on both backends; blocked quantization is refused.

namespace {

using namespace util;

constexpr std::initializer_list<DataType> kQuantTypes = {DataType::kUInt8, DataType::kInt8};

bool out_dtype_in(const Node& n, size_t i, std::initializer_list<DataType> allowed, std::string* why) {
  const DataType t = out_dtype(n, i);
  for (DataType a : allowed)
    if (t == a) return true;
  return reject(why, "output " + std::to_string(i) + " has dtype " + dtype_name(t) +
                         ", which the CUDA kernel does not handle");
}

// ---- QuantizeLinear / DequantizeLinear ------------------------------------------------------------

bool block_size_unset(const Node& n, std::string* why) {
  auto bs = n.attrs.get_int("block_size", 0);
  if (!bs || bs.value() != 0) return reject(why, "blocked quantization (block_size) is not supported");
  return true;
}

bool quantize_supports(const Node& n, std::string* why) {
  // x as the CPU reference takes it (any float type or int32).
  if (!require_dtype(n, 0, {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64,
                            DataType::kInt32}, why))
    return false;
  if (!has_input(n, 1)) return reject(why, "needs a scale");
  if (!require_dtype(n, 1, kGpuFloats64, why)) return false;
  if (has_input(n, 2) && !require_dtype(n, 2, kQuantTypes, why)) return false;
  if (!out_dtype_in(n, 0, kQuantTypes, why)) return false;
  return block_size_unset(n, why);
}

bool dequantize_supports(const Node& n, std::string* why) {
  if (!require_dtype(n, 0, {DataType::kUInt8, DataType::kInt8, DataType::kInt32}, why)) return false;
  if (!has_input(n, 1)) return reject(why, "needs a scale");
  if (!require_dtype(n, 1, kGpuFloats64, why)) return false;
  if (has_input(n, 2) && in_dtype(n, 2) != in_dtype(n, 0)) return reject(why, "the zero point's dtype differs from x's");
  if (!out_dtype_in(n, 0, kGpuFloats64, why)) return false;
  return block_size_unset(n, why);
}

// The layout checks of the CPU reference, then the kernel's arguments.
Result<k::QuantArgs> quant_args(const CudaExec& ex, const Tensor& x, const Tensor& scale, const Tensor* zp) {
  if (!dtype_is_float(scale.dtype())) return fail(ex, StatusCode::kInvalidModel, "the scale must be a float tensor");
  Status bs = graft::check_no_block_size(attrs_of(ex));
  if (!bs.is_ok()) return with_node(ex, bs);
  auto l = graft::quant_layout(attrs_of(ex), x.dims(), scale.dims(), zp ? &zp->dims() : nullptr);
  if (!l) return with_node(ex, l.status());
  k::QuantArgs q;
  q.scale = scale.data();
  q.scale_t = ktype(scale.dtype());
  q.zp = zp ? zp->data() : nullptr;
  q.channels = l.value().channels;
  q.inner = l.value().inner;
  return q;
}

Status quantize_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  const Tensor* scale = input_or_null(ex, 1);
  const Tensor* zp = input_or_null(ex, 2);
  if (!x || !scale) return fail(ex, StatusCode::kInvalidModel, "needs x and a scale");
  Tensor& y = *ex.ctx->outputs[0];
  if (zp && zp->dtype() != y.dtype())
    return fail(ex, StatusCode::kInvalidModel, "zero point dtype ", dtype_name(zp->dtype()), " differs from the output's ",
                dtype_name(y.dtype()));
  if (y.numel() != x->numel()) return fail(ex, StatusCode::kInternal, "output size differs from the input's");
  GRAFT_ASSIGN_OR_RETURN(k::QuantArgs q, quant_args(ex, *x, *scale, zp));
  return launch_status(k::launch_quantize_linear(ktype(x->dtype()), ktype(y.dtype()), x->data(), q, y.data(), y.numel(),
                                                 stream_of(ex)), ex);
}

Status dequantize_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  const Tensor* scale = input_or_null(ex, 1);
  const Tensor* zp = input_or_null(ex, 2);
  if (!x || !scale) return fail(ex, StatusCode::kInvalidModel, "needs x and a scale");
  Tensor& y = *ex.ctx->outputs[0];
  if (zp && zp->dtype() != x->dtype())
    return fail(ex, StatusCode::kInvalidModel, "zero point dtype ", dtype_name(zp->dtype()), " differs from x's ",
                dtype_name(x->dtype()));
  if (y.numel() != x->numel() || !dtype_is_float(y.dtype()))
    return fail(ex, StatusCode::kInternal, "output must be a float tensor of the input's size");
  GRAFT_ASSIGN_OR_RETURN(k::QuantArgs q, quant_args(ex, *x, *scale, zp));
  return launch_status(k::launch_dequantize_linear(ktype(x->dtype()), ktype(y.dtype()), x->data(), q, y.data(),
                                                   y.numel(), stream_of(ex)), ex);
}

// ---- GraftQuantizeDequantize ----------------------------------------------------------------------
// The scale and zero point are read on the host (scalars, passed to the kernel by value), which also
// keeps the scale float32 in a float16 engine: the pair's quantization steps stay the model's.

bool quantize_dequantize_supports(const Node& n, std::string* why) {
  if (!require_dtype(n, 0, kGpuFloats64, why)) return false;
  if (!has_input(n, 1) || !has_input(n, 2)) return reject(why, "needs a scale and a zero point");
  if (!require_dtype(n, 1, kGpuFloats64, why) || !require_dtype(n, 2, kQuantTypes, why)) return false;
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

// ---- DynamicQuantizeLinear ------------------------------------------------------------------------

bool dynamic_quantize_supports(const Node& n, std::string* why) {
  if (!require_dtype(n, 0, {DataType::kFloat32}, why)) return false;
  if (n.outputs.size() != 3 || !n.output(0) || !n.output(1) || !n.output(2))
    return reject(why, "needs its three outputs (y, y_scale, y_zero_point)");
  if (out_dtype(n, 0) != DataType::kUInt8 || out_dtype(n, 1) != DataType::kFloat32 || out_dtype(n, 2) != DataType::kUInt8)
    return reject(why, "outputs must be uint8, float32 and uint8");
  return true;
}

size_t dynamic_quantize_workspace(const Node&, const std::vector<const Tensor*>&, const std::vector<Tensor>&) {
  return k::dynamic_quantize_workspace_bytes();
}

Status dynamic_quantize_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  const auto& outs = ex.ctx->outputs;
  if (!x || x->dtype() != DataType::kFloat32) return fail(ex, StatusCode::kInvalidModel, "x must be float32");
  if (outs.size() < 3 || !outs[0] || !outs[1] || !outs[2])
    return fail(ex, StatusCode::kInternal, "needs its three outputs (y, y_scale, y_zero_point)");
  Tensor& y = *outs[0];
  Tensor& ys = *outs[1];
  Tensor& yz = *outs[2];
  if (y.numel() != x->numel() || y.dtype() != DataType::kUInt8 || ys.numel() != 1 || ys.dtype() != DataType::kFloat32 ||
      yz.numel() != 1 || yz.dtype() != DataType::kUInt8)
    return fail(ex, StatusCode::kInternal, "outputs must be uint8 [x's shape], float32 [] and uint8 []");
  if (!ex.workspace || ex.workspace_size < k::dynamic_quantize_workspace_bytes())
    return fail(ex, StatusCode::kInternal, "workspace too small");
  return launch_status(k::launch_dynamic_quantize_linear(static_cast<const float*>(x->data()), x->numel(),
                                                         static_cast<uint8_t*>(y.data()), static_cast<float*>(ys.data()),
                                                         static_cast<uint8_t*>(yz.data()), ex.workspace, stream_of(ex)),
                       ex);
}

}  // namespace

void append_cuda_quantize_ops(std::vector<CudaOp>& out) {
  out.push_back(CudaOp{"QuantizeLinear", &quantize_supports, &quantize_run, {}, nullptr});
  out.push_back(CudaOp{"DequantizeLinear", &dequantize_supports, &dequantize_run, {}, nullptr});
  out.push_back(CudaOp{"DynamicQuantizeLinear", &dynamic_quantize_supports, &dynamic_quantize_run, {},
                       &dynamic_quantize_workspace});
  out.push_back(CudaOp{"GraftQuantizeDequantize", &quantize_dequantize_supports, &quantize_dequantize_run, {1, 2},
                       nullptr});
}

}  // namespace graft::cuda
