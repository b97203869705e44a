// QuantizeLinear's and DequantizeLinear's CUDA kernels and CUDA ops (definitions and CPU
// references: quantize_linear.cpp). The two stay together as in quantize_linear.cpp: one
// scale/zero-point layout (QuantArgs, quant_args, per-tensor, per-axis or blocked) read both ways.
#include "ops/quantize/quantize.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "core/float8.h"
#include "ops/attr_util.h"
#include "ops/quantize/quantize_cuda.cuh"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------

namespace k {

// ---- (De)QuantizeLinear ---------------------------------------------------------------------------

// The layout (QuantLayout, quantize.h): per-tensor, per-axis or blocked, the entry of flat index i
// being quant_entry's. `scale` has any float KType; `zp` (may be null) has y's type (quantize) or
// x's type (dequantize).
struct QuantArgs {
  const void* scale = nullptr;
  KType scale_t = KType::kF32;
  const void* zp = nullptr;
  QuantLayout layout;
};
// y (u8/i8 storage) = saturate(round_half_even(float(x) / float(scale)) + zp) to [lo, hi] (the
// 8-bit range, or a 4-bit one held a byte); NaN gives the zero point. x: f32/f16/bf16/f64/i32.
cudaError_t launch_quantize_linear(KType xt, KType yt, const void* x, const QuantArgs& q, void* y, int64_t n,
                                   float lo, float hi, cudaStream_t s);
// y (any float type) = (x - zp) * scale in double, rounded once to y's type. x: u8/i8/i32 (a 4-bit
// type as its byte storage).
cudaError_t launch_dequantize_linear(KType xt, KType yt, const void* x, const QuantArgs& q, void* y, int64_t n,
                                     cudaStream_t s);
// The 8-bit floats (float8.h's formats, ONNX's numbers), whose zero point is zero (q.zp unread):
// y = float8(float(x) / float(scale)), rounded to nearest even, saturating or not, as the CPU
// reference does; and y (any float type) = float8 x * scale in double, rounded once.
cudaError_t launch_quantize_float8(KType xt, int format, bool saturate, const void* x, const QuantArgs& q, void* y,
                                   int64_t n, cudaStream_t s);
cudaError_t launch_dequantize_float8(int format, KType yt, const void* x, const QuantArgs& q, void* y, int64_t n,
                                     cudaStream_t s);

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

template <typename X, typename Y>
__global__ void quantize_kernel(const X* x, QuantArgs q, Y* y, int64_t n, float lo, float hi) {
  const Y* zp = static_cast<const Y*>(q.zp);
  GRAFT_GRID_STRIDE(i, n) {
    const int64_t c = quant_entry(q.layout, i);
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
    const int64_t c = quant_entry(q.layout, i);
    const double d = static_cast<double>(x[i]) - (zp ? static_cast<double>(zp[c]) : 0.0);
    y[i] = store_from_double<Y>(__dmul_rn(d, scale_at(q.scale, q.scale_t, c)));
  }
}

template <typename X>
__global__ void quantize_float8_kernel(const X* x, QuantArgs q, uint8_t* y, int64_t n, int format, bool saturate) {
  GRAFT_GRID_STRIDE(i, n) {
    const float s = __double2float_rn(scale_at(q.scale, q.scale_t, quant_entry(q.layout, i)));
    const float xv = __double2float_rn(as_double(x[i]));
    y[i] = float8::from_double(static_cast<float8::Format>(format), __fdiv_rn(xv, s), saturate);
  }
}

template <typename Y>
__global__ void dequantize_float8_kernel(const uint8_t* x, QuantArgs q, Y* y, int64_t n, int format) {
  GRAFT_GRID_STRIDE(i, n) {
    const double d = float8::to_double(static_cast<float8::Format>(format), x[i]);
    y[i] = store_from_double<Y>(__dmul_rn(d, scale_at(q.scale, q.scale_t, quant_entry(q.layout, i))));
  }
}

// fn(X{}) for x's element type X, one of those QuantizeLinear takes (the float types and int32, as
// the CPU reference does); false for another KType.
template <typename Fn>
bool visit_quantize_input(KType xt, Fn&& fn) {
  switch (xt) {
    case KType::kF32: fn(float{}); return true;
    case KType::kF16: fn(__half{}); return true;
    case KType::kBF16: fn(__nv_bfloat16{}); return true;
    case KType::kF64: fn(double{}); return true;
    case KType::kI32: fn(int32_t{}); return true;
    default: return false;
  }
}

}  // namespace

// ---- launchers ----------------------------------------------------------------------------------

cudaError_t launch_quantize_linear(KType xt, KType yt, const void* x, const QuantArgs& q, void* y, int64_t n,
                                   float lo, float hi, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const unsigned g = grid_for(n);
  if (yt != KType::kU8 && yt != KType::kI8) return cudaErrorInvalidValue;
  const bool known = visit_quantize_input(xt, [&](auto zero) {
    using X = decltype(zero);
    if (yt == KType::kU8)
      quantize_kernel<X, uint8_t><<<g, kThreads, 0, s>>>(static_cast<const X*>(x), q, static_cast<uint8_t*>(y), n, lo, hi);
    else
      quantize_kernel<X, int8_t><<<g, kThreads, 0, s>>>(static_cast<const X*>(x), q, static_cast<int8_t*>(y), n, lo, hi);
  });
  return known ? cudaGetLastError() : cudaErrorInvalidValue;
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

cudaError_t launch_quantize_float8(KType xt, int format, bool saturate, const void* x, const QuantArgs& q, void* y,
                                   int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const bool known = visit_quantize_input(xt, [&](auto zero) {
    using X = decltype(zero);
    quantize_float8_kernel<X><<<grid_for(n), kThreads, 0, s>>>(static_cast<const X*>(x), q, static_cast<uint8_t*>(y), n,
                                                                format, saturate);
  });
  return known ? cudaGetLastError() : cudaErrorInvalidValue;
}

cudaError_t launch_dequantize_float8(int format, KType yt, const void* x, const QuantArgs& q, void* y, int64_t n,
                                     cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  GRAFT_FLOAT64_DISPATCH(yt, (dequantize_float8_kernel<T><<<grid_for(n), kThreads, 0, s>>>(
                                 static_cast<const uint8_t*>(x), q, static_cast<T*>(y), n, format)));
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA ops -------------------------------------------------------------------------------
// The CUDA ops validate the scale/zero-point layout with the CPU reference's own reader
// (quant_layout), so errors read the same on both backends.

namespace {

using namespace util;

// ---- QuantizeLinear / DequantizeLinear ------------------------------------------------------------

// The kernels' element type for a quantized type: opset 21's 4-bit types are held one a byte
// (dtype.h), so they run as int8/uint8 storage with their own range (quant_bounds).
k::KType storage_ktype(DataType t) { return ktype(dtype_storage(t)); }

// The quantized types the kernels take: kQuantizedTypes but the 16-bit ones (the CUDA backend keeps
// no int16/uint16 tensors; a node with them runs on the CPU, and the placement summary says why).
constexpr std::initializer_list<DataType> kGpuQuantizedTypes = {
    DataType::kUInt8,        DataType::kInt8,           DataType::kUInt4,      DataType::kInt4,
    DataType::kFloat8E4M3FN, DataType::kFloat8E4M3FNUZ, DataType::kFloat8E5M2, DataType::kFloat8E5M2FNUZ};
constexpr std::initializer_list<DataType> kGpuDequantizeInputTypes = {
    DataType::kUInt8,        DataType::kInt8,           DataType::kUInt4,      DataType::kInt4,
    DataType::kFloat8E4M3FN, DataType::kFloat8E4M3FNUZ, DataType::kFloat8E5M2, DataType::kFloat8E5M2FNUZ,
    DataType::kInt32};

// x as the CPU reference takes it (any float type or int32): QuantizeLinear's key on input 0.
constexpr std::initializer_list<DataType> kQuantizeInputTypes = {DataType::kFloat32, DataType::kFloat16,
                                                                 DataType::kBFloat16, DataType::kFloat64,
                                                                 DataType::kInt32};

// An 8-bit float zero point must be zero; inference checks one that is a constant, at build time.
// The kernels do not read it, so one computed by the model is refused here (the CPU reference checks
// it at run time) rather than taken as zero unchecked.
bool float8_zero_point_known(const Node& n, std::string* why) {
  if (!has_input(n, 2) || !dtype_is_float8(in_dtype(n, 2)) || n.inputs[2]->constant) return true;
  return reject(why, "an 8-bit float zero point must be a constant (zero); this one is computed by the model");
}

// The keys: x kQuantizeInputTypes, the scale any float type, the zero point (if given) and y
// kGpuQuantizedTypes.
bool quantize_supports(const Node& n, std::string* why) {
  if (!input0_given(n, why)) return false;
  if (!has_input(n, 1)) return reject(why, "needs a scale");
  if (!n.output(0)) return reject(why, "output 0 is missing");
  return float8_zero_point_known(n, why);
}

// The keys: x kGpuDequantizeInputTypes, the scale and y any float type.
bool dequantize_supports(const Node& n, std::string* why) {
  if (!input0_given(n, why)) return false;
  if (!has_input(n, 1)) return reject(why, "needs a scale");
  if (has_input(n, 2) && in_dtype(n, 2) != in_dtype(n, 0)) return reject(why, "the zero point's dtype differs from x's");
  if (!n.output(0)) return reject(why, "output 0 is missing");
  return float8_zero_point_known(n, why);
}

// The layout checks of the CPU reference, then the kernel's arguments.
Result<k::QuantArgs> quant_args(const CudaExec& ex, const Tensor& x, const Tensor& scale, const Tensor* zp) {
  if (!dtype_is_float(scale.dtype())) return fail(ex, StatusCode::kInvalidModel, "the scale must be a float tensor");
  auto l = graft::quant_layout(attrs_of(ex), x.dims(), scale.dims(), zp ? &zp->dims() : nullptr);
  if (!l) return with_node(ex, l.status());
  k::QuantArgs q;
  q.scale = scale.data();
  q.scale_t = ktype(scale.dtype());
  q.zp = zp ? zp->data() : nullptr;
  q.layout = l.value();
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
  if (dtype_is_float8(y.dtype())) {
    auto saturate = attrs_of(ex).get_int("saturate", 1);
    if (!saturate) return with_node(ex, Status(saturate.status()).with_attribute("saturate"));
    return launch_status(k::launch_quantize_float8(ktype(x->dtype()), static_cast<int>(y.dtype()), saturate.value() != 0,
                                                   x->data(), q, y.data(), y.numel(), stream_of(ex)), ex);
  }
  float lo, hi;
  if (!quant_bounds(y.dtype(), &lo, &hi))
    return fail(ex, StatusCode::kUnsupported, "cannot quantize to ", dtype_name(y.dtype()));
  return launch_status(k::launch_quantize_linear(ktype(x->dtype()), storage_ktype(y.dtype()), x->data(), q, y.data(),
                                                 y.numel(), lo, hi, stream_of(ex)), ex);
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
  if (dtype_is_float8(x->dtype()))
    return launch_status(k::launch_dequantize_float8(static_cast<int>(x->dtype()), ktype(y.dtype()), x->data(), q,
                                                     y.data(), y.numel(), stream_of(ex)), ex);
  return launch_status(k::launch_dequantize_linear(storage_ktype(x->dtype()), ktype(y.dtype()), x->data(), q, y.data(),
                                                   y.numel(), stream_of(ex)), ex);
}

}  // namespace

void append_cuda_quantize_linear_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, kQuantizeInputTypes), input_dtypes(1, kGpuFloats64),
                               input_dtypes(2, kGpuQuantizedTypes), output_dtypes(0, kGpuQuantizedTypes)},
                              CudaOp{"QuantizeLinear", &quantize_supports, &quantize_run, {}, nullptr}));
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuDequantizeInputTypes), input_dtypes(1, kGpuFloats64),
                               output_dtypes(0, kGpuFloats64)},
                              CudaOp{"DequantizeLinear", &dequantize_supports, &dequantize_run, {}, nullptr}));
}

}  // namespace graft::cuda
