// ArgMax/ArgMin/Hardmax's CUDA kernels and ops, over the [outer, n, inner] view around the axis (a
// warp per line when lines are contiguous).
#include "ops/selection/selection.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/selection/selection_keys.cuh"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------------

namespace k {

// y[o * inner + i] = the index along n of the max (min) of x; ties pick the first index, or the
// last with `last`; NaN never wins, except that a NaN first element is kept (as the CPU's
// sequential scan does). f32/f16/bf16/i8/u8/i32/i64.
cudaError_t launch_arg_reduce(KType t, bool want_max, bool last, const void* x, int64_t* y, int64_t outer,
                              int64_t n, int64_t inner, cudaStream_t s);
// y = 1 at the first max along n, 0 elsewhere. Float types.
cudaError_t launch_hardmax(KType t, const void* x, void* y, int64_t outer, int64_t n, int64_t inner, cudaStream_t s);

namespace {

// The CPU reference's sequential scan over one line, exactly (NaN included).
template <typename T>
__device__ __forceinline__ int64_t arg_scan(const T* x, int64_t base, int64_t n, int64_t inner, bool want_max,
                                            bool last) {
  auto best = key_of(x[base]);
  int64_t best_k = 0;
  for (int64_t k = 1; k < n; ++k) {
    const auto val = key_of(x[base + k * inner]);
    const bool better = want_max ? (last ? val >= best : val > best) : (last ? val <= best : val < best);
    if (better) {
      best = val;
      best_k = k;
    }
  }
  return best_k;
}

// One warp per contiguous row: each lane scans a strided part, skipping NaN, then the lanes
// combine (value, index) pairs; ties break by index, so the result is the sequential scan's.
template <typename T>
__device__ __forceinline__ int64_t arg_warp(const T* row, int64_t n, bool want_max, bool last) {
  using K = KeyOf<T>;
  const int lane = threadIdx.x & 31;
  K bv = K(0);
  long long bi = -1;
  auto better = [&](K va, long long ia, K vb, long long ib) {
    if (ia < 0) return false;
    if (ib < 0) return true;
    if (va != vb) return want_max ? va > vb : va < vb;
    return last ? ia > ib : ia < ib;
  };
  for (int64_t k = lane; k < n; k += 32) {
    const K v = key_of(row[k]);
    if (is_nan_key(v)) continue;
    if (better(v, k, bv, bi)) {
      bv = v;
      bi = k;
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    const K ov = __shfl_xor_sync(kFullWarp, bv, o);
    const long long oi = __shfl_xor_sync(kFullWarp, bi, o);
    if (better(ov, oi, bv, bi)) {
      bv = ov;
      bi = oi;
    }
  }
  if (is_nan_key(key_of(row[0])) || bi < 0) return 0;
  return bi;
}

constexpr int kWarpsPerBlock = kThreads / 32;

template <typename T>
__global__ void arg_warp_kernel(bool want_max, bool last, const T* __restrict__ x, int64_t* __restrict__ y,
                                int64_t rows, int64_t n) {
  const int64_t warps = int64_t(gridDim.x) * kWarpsPerBlock;
  for (int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); r < rows; r += warps) {
    const int64_t b = arg_warp(x + r * n, n, want_max, last);
    if ((threadIdx.x & 31) == 0) y[r] = b;
  }
}

template <typename T>
__global__ void arg_line_kernel(bool want_max, bool last, const T* __restrict__ x, int64_t* __restrict__ y,
                                int64_t lines, int64_t n, int64_t inner) {
  GRAFT_GRID_STRIDE(l, lines) {
    const int64_t o = l / inner, i = l % inner;
    y[l] = arg_scan(x, o * n * inner + i, n, inner, want_max, last);
  }
}

template <typename T>
__global__ void hardmax_warp_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t n) {
  const int64_t warps = int64_t(gridDim.x) * kWarpsPerBlock;
  for (int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); r < rows; r += warps) {
    const int64_t b = arg_warp(x + r * n, n, true, false);
    for (int64_t k = threadIdx.x & 31; k < n; k += 32) y[r * n + k] = Elem<T>::st(k == b ? 1.f : 0.f);
  }
}

template <typename T>
__global__ void hardmax_line_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t lines, int64_t n,
                                    int64_t inner) {
  GRAFT_GRID_STRIDE(l, lines) {
    const int64_t o = l / inner, i = l % inner, base = o * n * inner + i;
    const int64_t b = arg_scan(x, base, n, inner, true, false);
    for (int64_t k = 0; k < n; ++k) y[base + k * inner] = Elem<T>::st(k == b ? 1.f : 0.f);
  }
}

}  // namespace

cudaError_t launch_arg_reduce(KType t, bool want_max, bool last, const void* x, int64_t* y, int64_t outer, int64_t n,
                              int64_t inner, cudaStream_t s) {
  const int64_t lines = outer * inner;
  if (lines == 0) return cudaSuccess;
  if (n == 0) return cudaErrorInvalidValue;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x);
    if (inner == 1 && n >= 32)
      arg_warp_kernel<T><<<grid_for(lines * 32), kThreads, 0, s>>>(want_max, last, px, y, lines, n);
    else
      arg_line_kernel<T><<<grid_for(lines), kThreads, 0, s>>>(want_max, last, px, y, lines, n, inner);
  };
  switch (t) {
    case KType::kF32: run(float{}); break;
    case KType::kF16: run(__half{}); break;
    case KType::kBF16: run(__nv_bfloat16{}); break;
    case KType::kI8: run(int8_t{}); break;
    case KType::kU8: run(uint8_t{}); break;
    case KType::kI32: run(int32_t{}); break;
    case KType::kI64: run(int64_t{}); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_hardmax(KType t, const void* x, void* y, int64_t outer, int64_t n, int64_t inner, cudaStream_t s) {
  const int64_t lines = outer * inner;
  if (lines == 0 || n == 0) return cudaSuccess;
  if (inner == 1 && n >= 32) {
    GRAFT_FLOAT_DISPATCH(t, (hardmax_warp_kernel<T><<<grid_for(lines * 32), kThreads, 0, s>>>(
                                static_cast<const T*>(x), static_cast<T*>(y), lines, n)));
  } else {
    GRAFT_FLOAT_DISPATCH(t, (hardmax_line_kernel<T><<<grid_for(lines), kThreads, 0, s>>>(
                                static_cast<const T*>(x), static_cast<T*>(y), lines, n, inner)));
  }
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA ops -------------------------------------------------------------------------------------

namespace {

using namespace util;

// ArgMax's and ArgMin's key: the dtypes launch_arg_reduce compares.
constexpr std::initializer_list<DataType> kArgDtypes = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16,
                                                        DataType::kInt8,    DataType::kUInt8,   DataType::kInt32,
                                                        DataType::kInt64};

template <bool kMax>
Status arg_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, attrs_of(ex).get_int("axis", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t last, attrs_of(ex).get_int("select_last_index", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_attr, x.rank()));
  const AxisView v = axis_view(x.dims(), axis, false);
  if (v.n == 0 && v.outer * v.inner > 0) return fail(ex, StatusCode::kInvalidModel, "reduction over an empty axis ", axis);
  if (y.dtype() != DataType::kInt64 || y.numel() != v.outer * v.inner)
    return fail(ex, StatusCode::kInternal, "output must be int64 with ", v.outer * v.inner, " elements");
  return launch_status(k::launch_arg_reduce(ktype(x.dtype()), kMax, last != 0, x.data(), static_cast<int64_t*>(y.data()),
                                            v.outer, v.n, v.inner, stream_of(ex)), ex);
}

Status hardmax_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  if (x.numel() != y.numel() || x.dtype() != y.dtype()) return fail(ex, StatusCode::kInternal, "output differs from input");
  const bool legacy = ex.ctx->opset > 0 && ex.ctx->opset < 13;
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, attrs_of(ex).get_int("axis", legacy ? 1 : -1));
  if (x.rank() == 0)  // a scalar: 1
    return launch_status(k::launch_hardmax(ktype(x.dtype()), x.data(), y.data(), 1, 1, 1, stream_of(ex)), ex);
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_attr, x.rank()));
  const AxisView v = axis_view(x.dims(), axis, legacy);  // before opset 13: the 2-D coercion
  return launch_status(k::launch_hardmax(ktype(x.dtype()), x.data(), y.data(), v.outer, v.n, v.inner, stream_of(ex)), ex);
}

}  // namespace

void append_cuda_arg_max_ops(std::vector<CudaOp>& out) {
  out.push_back(
      kernel_dtypes({input_dtypes(0, kArgDtypes)}, CudaOp{"ArgMax", &input0_given, &arg_run<true>, {}, nullptr}));
  out.push_back(
      kernel_dtypes({input_dtypes(0, kArgDtypes)}, CudaOp{"ArgMin", &input0_given, &arg_run<false>, {}, nullptr}));
  out.push_back(
      kernel_dtypes({input_dtypes(0, kGpuFloats)}, CudaOp{"Hardmax", &input0_given, &hardmax_run, {}, nullptr}));
}

}  // namespace graft::cuda
