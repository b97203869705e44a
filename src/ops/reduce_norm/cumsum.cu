// CumSum's CUDA kernels and op: a thread per line, or a block per contiguous row when rows are few.
#include "ops/reduce_norm/reduce_norm.h"

#include <climits>
#include <string>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------------

namespace k {

namespace {

// float64 sums in double, the other float types in float, the integers in 64 bits.
template <typename T>
using ScanAcc = std::conditional_t<std::is_same_v<T, double>, double, std::conditional_t<kIsFloat<T>, float, long long>>;

template <typename T>
__device__ __forceinline__ T scan_store(ScanAcc<T> v) {
  if constexpr (kIsFloat<T>) return Elem<T>::st(v);
  else return static_cast<T>(v);
}

template <typename T>
__global__ void cumsum_line_kernel(bool excl, bool rev, const T* __restrict__ x, T* __restrict__ y, int64_t lines,
                                   int64_t n, int64_t inner) {
  using A = ScanAcc<T>;
  GRAFT_GRID_STRIDE(l, lines) {
    const int64_t o = l / inner, i = l % inner;
    A acc = 0;
    for (int64_t t = 0; t < n; ++t) {
      const int64_t k = rev ? n - 1 - t : t;
      const int64_t off = (o * n + k) * inner + i;
      const A v = static_cast<A>(Elem<T>::ld(x[off]));
      if (!excl) acc += v;
      y[off] = scan_store<T>(acc);
      if (excl) acc += v;
    }
  }
}

// One block per contiguous row: chunks of blockDim.x elements scanned by warp shuffles, with the
// running total carried across chunks.
template <typename T>
__global__ void cumsum_block_kernel(bool excl, bool rev, const T* __restrict__ x, T* __restrict__ y, int64_t n) {
  using A = ScanAcc<T>;
  __shared__ A warp_tot[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  const T* xl = x + int64_t(blockIdx.x) * n;
  T* yl = y + int64_t(blockIdx.x) * n;
  A carry = 0;
  for (int64_t c0 = 0; c0 < n; c0 += blockDim.x) {
    const int64_t t = c0 + threadIdx.x;
    const int64_t k = rev ? n - 1 - t : t;
    const A v = t < n ? static_cast<A>(Elem<T>::ld(xl[k])) : A(0);
    A s = v;
    for (int o = 1; o < 32; o <<= 1) {
      const A u = __shfl_up_sync(kFullWarp, s, o);
      if (lane >= o) s += u;
    }
    if (lane == 31) warp_tot[warp] = s;
    __syncthreads();
    if (warp == 0) {
      A w = lane < nw ? warp_tot[lane] : A(0);
      for (int o = 1; o < 32; o <<= 1) {
        const A u = __shfl_up_sync(kFullWarp, w, o);
        if (lane >= o) w += u;
      }
      if (lane < nw) warp_tot[lane] = w;
    }
    __syncthreads();
    const A incl = carry + (warp > 0 ? warp_tot[warp - 1] : A(0)) + s;
    if (t < n) yl[k] = scan_store<T>(excl ? incl - v : incl);
    carry += warp_tot[nw - 1];
    __syncthreads();  // warp_tot is rewritten by the next chunk
  }
}

}  // namespace

cudaError_t launch_cumsum(KType t, bool exclusive, bool reverse, const void* x, void* y, int64_t outer, int64_t n,
                          int64_t inner, cudaStream_t s) {
  const int64_t lines = outer * inner;
  if (lines == 0 || n == 0) return cudaSuccess;
  // Contiguous rows, too few to fill the GPU one thread each: one block per row.
  const bool block_rows = inner == 1 && n >= 64 && lines <= 0x7fffffffLL && lines < 8192;
  if (block_rows) {
    const int threads = n >= 1024 ? 1024 : (n >= 256 ? 256 : 64);
    GRAFT_EVERY_NUMERIC_DISPATCH(t, (cumsum_block_kernel<T><<<static_cast<unsigned>(lines), threads, 0, s>>>(
                                  exclusive, reverse, static_cast<const T*>(x), static_cast<T*>(y), n)));
  } else {
    GRAFT_EVERY_NUMERIC_DISPATCH(t, (cumsum_line_kernel<T><<<grid_for(lines), kThreads, 0, s>>>(
                                  exclusive, reverse, static_cast<const T*>(x), static_cast<T*>(y), lines, n, inner)));
  }
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA op ---------------------------------------------------------------------------------------

namespace {

using namespace util;

bool cumsum_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "needs x and axis");
  return true;
}

Status cumsum_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  GRAFT_ASSIGN_OR_RETURN(int64_t exclusive, attrs_of(ex).get_int("exclusive", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t reverse, attrs_of(ex).get_int("reverse", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_v, host_scalar(ex, 1, "axis"));
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_v, x.rank()));
  if (x.numel() != y.numel() || x.dtype() != y.dtype()) return fail(ex, StatusCode::kInternal, "output differs from input");
  const AxisView v = axis_view(x.dims(), axis, false);
  return launch_status(k::launch_cumsum(ktype(x.dtype()), exclusive != 0, reverse != 0, x.data(), y.data(), v.outer, v.n,
                                        v.inner, stream_of(ex)), ex);
}

}  // namespace

// The key: the float types with float64 (summed in double, as the CPU reference), and int32/int64.
void append_cuda_cumsum_ops(std::vector<CudaOp>& out) {
  out.push_back(
      kernel_dtypes({input_dtypes(0, kGpuFloats64Ints)}, CudaOp{"CumSum", &cumsum_supports, &cumsum_run, {1}, nullptr}));
}

}  // namespace graft::cuda
