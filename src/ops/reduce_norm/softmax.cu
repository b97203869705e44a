// Softmax/LogSoftmax's CUDA kernels and ops over an [outer, n, inner] view: a warp or part of one
// per row when rows are short and contiguous (row_kernels.cuh), else a block per row.
#include "ops/reduce_norm/reduce_norm.h"

#include <climits>
#include <string>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/reduce_norm/row_kernels.cuh"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------------

namespace k {

namespace {

template <typename T>
__global__ void softmax_kernel(bool log, const T* __restrict__ x, T* __restrict__ y, int64_t n, int64_t inner) {
  __shared__ float sh[32];
  const int64_t row = blockIdx.x;
  const int64_t base = (row / inner) * n * inner + row % inner;
  float m = -INFINITY;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) m = fmaxf(m, Elem<T>::ld(x[base + k * inner]));
  m = block_max(m, sh);
  float sum = 0.f;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) sum += expf(Elem<T>::ld(x[base + k * inner]) - m);
  sum = block_sum(sum, sh);
  const float log_sum = logf(sum), inv = 1.f / sum;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
    const float v = Elem<T>::ld(x[base + k * inner]);
    y[base + k * inner] = Elem<T>::st(log ? v - m - log_sum : expf(v - m) * inv);
  }
}

// Softmax / log-softmax of contiguous rows; x may equal y (in-place scores): every element is read
// into registers before any is written, so no __restrict__.
template <typename T, int kVec, int kIters>
__global__ void softmax_warp_kernel(bool log, const T* x, T* y, int64_t rows, int n) {
  const int lane = threadIdx.x & 31;
  const int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
  if (row >= rows) return;  // whole warps leave together: the shuffles below see full warps
  const T* xr = x + row * n;
  T* yr = y + row * n;
  float v[kIters][kVec];
  load_row<T, kVec, kIters>(xr, n, lane, -INFINITY, v);
  float m = -INFINITY;
#pragma unroll
  for (int it = 0; it < kIters; ++it)
#pragma unroll
    for (int j = 0; j < kVec; ++j) m = fmaxf(m, v[it][j]);
  m = warp_max(m);
  const int ng = n / kVec;
  float sum = 0.f;
#pragma unroll
  for (int it = 0; it < kIters; ++it)
    if (lane + 32 * it < ng)
#pragma unroll
      for (int j = 0; j < kVec; ++j) sum += expf(v[it][j] - m);
  sum = warp_sum(sum);
  const float log_sum = logf(sum), inv = 1.f / sum;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int g = lane + 32 * it;
    if (g >= ng) continue;
    Pack<T, kVec> o;
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      o.v[j] = Elem<T>::st(log ? v[it][j] - m - log_sum : expf(v[it][j] - m) * inv);
    reinterpret_cast<Pack<T, kVec>*>(yr)[g] = o;
  }
}

// Softmax / log-softmax of short contiguous rows (at most 16 groups of kVec): kLanes lanes per
// row, 32 / kLanes rows per warp. One warp per row would leave most lanes idle on rows such as
// deformable attention's 16 weights per head. Rows past the end still take part in the shuffles
// (the xor offsets stay inside a row's lanes) and store nothing.
template <typename T, int kVec, int kLanes>
__global__ void softmax_subwarp_kernel(bool log, const T* x, T* y, int64_t rows, int n) {
  constexpr int kRowsPerWarp = 32 / kLanes;
  const int lane = threadIdx.x & 31, sub = lane % kLanes;
  const int64_t first = (int64_t(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5)) * kRowsPerWarp;
  if (first >= rows) return;  // whole warps leave together
  const int64_t row = first + lane / kLanes;
  const bool mine = row < rows && sub < n / kVec;
  float v[kVec];
  if (mine) {
    const Pack<T, kVec> p = reinterpret_cast<const Pack<T, kVec>*>(x + row * n)[sub];
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] = Elem<T>::ld(p.v[j]);
  } else {
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] = -INFINITY;
  }
  float m = -INFINITY;
#pragma unroll
  for (int j = 0; j < kVec; ++j) m = fmaxf(m, v[j]);
#pragma unroll
  for (int o = kLanes / 2; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float sum = 0.f;
  if (mine) {
#pragma unroll
    for (int j = 0; j < kVec; ++j) sum += expf(v[j] - m);
  }
#pragma unroll
  for (int o = kLanes / 2; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (!mine) return;
  const float log_sum = logf(sum), inv = 1.f / sum;
  Pack<T, kVec> out;
#pragma unroll
  for (int j = 0; j < kVec; ++j) out.v[j] = Elem<T>::st(log ? v[j] - m - log_sum : expf(v[j] - m) * inv);
  reinterpret_cast<Pack<T, kVec>*>(y + row * n)[sub] = out;
}

// Launches KERNEL<T, kVec, kIters> with the smallest kIters (a power of two) whose groups cover
// `n`; instantiations stop at 32 values per lane (n <= kWarpRowMax keeps within that).
template <typename T, int kVec, int kIters = 1>
cudaError_t softmax_rows(bool log, const T* x, T* y, int64_t rows, int n, cudaStream_t s) {
  if constexpr (kVec * kIters > 32) {
    return cudaErrorInvalidValue;
  } else {
    if (n > kVec * kIters * 32) return softmax_rows<T, kVec, kIters * 2>(log, x, y, rows, n, s);
    const unsigned grid = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
    softmax_warp_kernel<T, kVec, kIters><<<grid, kThreads, 0, s>>>(log, x, y, rows, n);
    return cudaGetLastError();
  }
}

// Rows of at most 16 groups: the sub-warp kernel with the fewest lanes (a power of two) that
// cover a row's groups.
template <typename T, int kVec, int kLanes = 1>
cudaError_t softmax_short_rows(bool log, const T* x, T* y, int64_t rows, int n, cudaStream_t s) {
  if constexpr (kLanes > 16) {
    return cudaErrorInvalidValue;
  } else {
    if (n > kVec * kLanes) return softmax_short_rows<T, kVec, kLanes * 2>(log, x, y, rows, n, s);
    constexpr int64_t kRowsPerLaunchBlock = int64_t(kRowsPerBlock) * (32 / kLanes);
    const unsigned grid = static_cast<unsigned>((rows + kRowsPerLaunchBlock - 1) / kRowsPerLaunchBlock);
    softmax_subwarp_kernel<T, kVec, kLanes><<<grid, kThreads, 0, s>>>(log, x, y, rows, n);
    return cudaGetLastError();
  }
}

template <typename T>
cudaError_t softmax_last_axis(bool log, const void* x, void* y, int64_t rows, int64_t n, cudaStream_t s) {
  constexpr int V = 16 / sizeof(T);
  const T* px = static_cast<const T*>(x);
  T* py = static_cast<T*>(y);
  const int ni = static_cast<int>(n);
  if (n % V == 0 && aligned16(x) && aligned16(y))
    return n <= 16 * V ? softmax_short_rows<T, V>(log, px, py, rows, ni, s) : softmax_rows<T, V>(log, px, py, rows, ni, s);
  return n <= 16 ? softmax_short_rows<T, 1>(log, px, py, rows, ni, s) : softmax_rows<T, 1>(log, px, py, rows, ni, s);
}

}  // namespace

cudaError_t launch_softmax(KType t, bool log, const void* x, void* y, int64_t outer, int64_t n, int64_t inner,
                           cudaStream_t s) {
  const int64_t rows = outer * inner;
  if (rows == 0 || n == 0) return cudaSuccess;
  if (rows > 0x7fffffffLL) return cudaErrorInvalidValue;
  if (inner == 1 && n <= kWarpRowMax) {  // softmax over contiguous rows: one warp per row
    switch (t) {
      case KType::kF32: return softmax_last_axis<float>(log, x, y, rows, n, s);
      case KType::kF16: return softmax_last_axis<__half>(log, x, y, rows, n, s);
      case KType::kBF16: return softmax_last_axis<__nv_bfloat16>(log, x, y, rows, n, s);
      default: return cudaErrorInvalidValue;
    }
  }
  GRAFT_FLOAT_DISPATCH(t, (softmax_kernel<T><<<static_cast<unsigned>(rows), kThreads, 0, s>>>(
                              log, static_cast<const T*>(x), static_cast<T*>(y), n, inner)));
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA op ---------------------------------------------------------------------------------------

namespace {

using namespace util;

template <bool kLog>
Status softmax_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  if (x.numel() != y.numel()) return fail(ex, StatusCode::kInternal, "output size differs from input size");
  const bool legacy = ex.ctx->opset > 0 && ex.ctx->opset < 13;
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, attrs_of(ex).get_int("axis", legacy ? 1 : -1));
  if (x.rank() == 0) {  // a scalar: softmax is 1, log-softmax 0
    return launch_status(k::launch_softmax(ktype(x.dtype()), kLog, x.data(), y.data(), 1, 1, 1, stream_of(ex)), ex);
  }
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_attr, x.rank()));
  const AxisView v = axis_view(x.dims(), axis, legacy);  // before opset 13: the 2-D coercion
  return launch_status(k::launch_softmax(ktype(x.dtype()), kLog, x.data(), y.data(), v.outer, v.n, v.inner, stream_of(ex)),
                       ex);
}

}  // namespace

void append_cuda_softmax_ops(std::vector<CudaOp>& out) {
  out.push_back(
      kernel_dtypes({input_dtypes(0, kGpuFloats)}, CudaOp{"Softmax", &input0_given, &softmax_run<false>, {}, nullptr}));
  out.push_back(
      kernel_dtypes({input_dtypes(0, kGpuFloats)}, CudaOp{"LogSoftmax", &input0_given, &softmax_run<true>, {}, nullptr}));
}

}  // namespace graft::cuda
