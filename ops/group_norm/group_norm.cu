// CUDA kernels of GroupNorm. One block per (sample, group): the group's elements are contiguous
// (cpg channels x S positions), so a block reads them with coalesced loads. Mean and variance use
// two passes (shifted mean, then squared deviations) in float, which avoids the cancellation of
// E[x^2] - E[x]^2 when |mean| >> std.
#include "ops/group_norm/group_norm_kernels.cuh"

#include <algorithm>

namespace graft::cuda {
namespace {

constexpr int kThreads = 512;  // a multiple of 32 (block_sum relies on whole warps)

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }

// Sum over the block, returned to every thread. smem holds 32 floats per value.
__device__ __forceinline__ float2 block_sum2(float2 v, float2* smem) {
  for (int o = 16; o > 0; o >>= 1) {
    v.x += __shfl_xor_sync(0xffffffffu, v.x, o);
    v.y += __shfl_xor_sync(0xffffffffu, v.y, o);
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // smem may still be read by a previous call
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  const int warps = blockDim.x / 32;
  v = lane < warps ? smem[lane] : make_float2(0.0f, 0.0f);
  for (int o = 16; o > 0; o >>= 1) {
    v.x += __shfl_xor_sync(0xffffffffu, v.x, o);
    v.y += __shfl_xor_sync(0xffffffffu, v.y, o);
  }
  return v;
}

// Statistics kept relative to a shift (the group's first element): with |mean| >> std, x - shift
// is exact in float (Sterbenz) while x - mean would carry the rounding of mean, an error of
// ulp(mean)/std in every xhat (caught by the large_mean case).
struct GroupStats {
  float shift, mean, rstd;  // mean of (x - shift)
  __device__ __forceinline__ float xhat(float x) const { return ((x - shift) - mean) * rstd; }
};

template <typename T>
__device__ GroupStats group_stats(const T* __restrict__ xg, int64_t count, float epsilon, float2* smem) {
  const float shift = to_float(xg[0]);
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) sum += to_float(xg[i]) - shift;
  const float mean = block_sum2(make_float2(sum, 0.0f), smem).x / static_cast<float>(count);
  float sq = 0.0f;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    const float d = (to_float(xg[i]) - shift) - mean;
    sq += d * d;
  }
  const float var = block_sum2(make_float2(sq, 0.0f), smem).x / static_cast<float>(count);
  return {shift, mean, rsqrtf(var + epsilon)};
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
forward_kernel(const T* __restrict__ x, const T* __restrict__ scale, const T* __restrict__ bias, T* __restrict__ y,
               int64_t channels, int64_t s, int64_t groups, float epsilon) {
  __shared__ float2 smem[32];
  const int64_t n = blockIdx.x / groups, g = blockIdx.x % groups;
  const int64_t cpg = channels / groups, count = cpg * s;
  const int64_t base = (n * channels + g * cpg) * s;
  const GroupStats st = group_stats(x + base, count, epsilon, smem);
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    const int64_t c = g * cpg + i / s;
    const float xhat = st.xhat(to_float(x[base + i]));
    y[base + i] = from_float<T>(xhat * to_float(scale[c]) + to_float(bias[c]));
  }
}

// Per (sample, group): dx, plus per-(sample, channel) partial sums of dbias and dscale into ws.
template <typename T>
__global__ void __launch_bounds__(kThreads)
backward_dx_kernel(const T* __restrict__ x, const T* __restrict__ scale, const T* __restrict__ dy,
                   T* __restrict__ dx, float* __restrict__ ws_dbias, float* __restrict__ ws_dscale,
                   int64_t channels, int64_t s, int64_t groups, float epsilon) {
  __shared__ float2 smem[32];
  const int64_t n = blockIdx.x / groups, g = blockIdx.x % groups;
  const int64_t cpg = channels / groups, count = cpg * s;
  const int64_t base = (n * channels + g * cpg) * s;
  const GroupStats st = group_stats(x + base, count, epsilon, smem);
  // sum over the group of g = dy*scale and of g*xhat, built channel by channel from the partials.
  float sum_g = 0.0f, sum_gx = 0.0f;
  for (int64_t cl = 0; cl < cpg; ++cl) {
    const int64_t c = g * cpg + cl;
    const int64_t off = base + cl * s;
    float2 acc = make_float2(0.0f, 0.0f);
    for (int64_t i = threadIdx.x; i < s; i += blockDim.x) {
      const float d = to_float(dy[off + i]);
      acc.x += d;
      acc.y += d * st.xhat(to_float(x[off + i]));
    }
    acc = block_sum2(acc, smem);
    if (threadIdx.x == 0) {
      ws_dbias[n * channels + c] = acc.x;
      ws_dscale[n * channels + c] = acc.y;
    }
    const float sc = to_float(scale[c]);
    sum_g += sc * acc.x;
    sum_gx += sc * acc.y;
  }
  const float mean_g = sum_g / static_cast<float>(count), mean_gx = sum_gx / static_cast<float>(count);
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    const int64_t c = g * cpg + i / s;
    const float xhat = st.xhat(to_float(x[base + i]));
    const float gi = to_float(dy[base + i]) * to_float(scale[c]);
    dx[base + i] = from_float<T>(st.rstd * (gi - mean_g - xhat * mean_gx));
  }
}

// dscale[c], dbias[c]: sums of the per-sample partials.
template <typename T>
__global__ void backward_params_kernel(const float* __restrict__ ws_dbias, const float* __restrict__ ws_dscale,
                                       T* __restrict__ dscale, T* __restrict__ dbias, int64_t n, int64_t channels) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  float db = 0.0f, ds = 0.0f;
  for (int64_t k = 0; k < n; ++k) {
    db += ws_dbias[k * channels + c];
    ds += ws_dscale[k * channels + c];
  }
  dbias[c] = from_float<T>(db);
  dscale[c] = from_float<T>(ds);
}

bool bad_sizes(int64_t n, int64_t c, int64_t s, int64_t groups) {
  return n < 0 || c < 0 || s < 0 || groups <= 0 || c % groups != 0 || n * groups > 0x7fffffffLL;
}

template <typename T>
cudaError_t launch_forward(const T* x, const T* scale, const T* bias, T* y, int64_t n, int64_t c, int64_t s,
                           int64_t groups, float epsilon, cudaStream_t stream) {
  if (bad_sizes(n, c, s, groups)) return cudaErrorInvalidValue;
  if (n == 0 || c == 0 || s == 0) return cudaSuccess;
  forward_kernel<T><<<static_cast<unsigned>(n * groups), kThreads, 0, stream>>>(x, scale, bias, y, c, s, groups,
                                                                                epsilon);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_backward(const T* x, const T* scale, const T* dy, T* dx, T* dscale, T* dbias, int64_t n,
                            int64_t c, int64_t s, int64_t groups, float epsilon, void* workspace,
                            size_t workspace_bytes, cudaStream_t stream) {
  if (bad_sizes(n, c, s, groups)) return cudaErrorInvalidValue;
  if (c == 0) return cudaSuccess;
  if (workspace_bytes < group_norm_backward_workspace_bytes(n, c) || (n > 0 && workspace == nullptr))
    return cudaErrorInvalidValue;
  float* ws_dbias = static_cast<float*>(workspace);
  float* ws_dscale = ws_dbias + n * c;
  if (n > 0 && s > 0) {
    backward_dx_kernel<T><<<static_cast<unsigned>(n * groups), kThreads, 0, stream>>>(x, scale, dy, dx, ws_dbias,
                                                                                      ws_dscale, c, s, groups,
                                                                                      epsilon);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  } else if (n > 0) {
    // No positions: every partial sum is zero.
    if (cudaError_t e = cudaMemsetAsync(workspace, 0, group_norm_backward_workspace_bytes(n, c), stream);
        e != cudaSuccess)
      return e;
  }
  constexpr int kParamThreads = 256;
  const int64_t blocks = (c + kParamThreads - 1) / kParamThreads;
  backward_params_kernel<T><<<static_cast<unsigned>(blocks), kParamThreads, 0, stream>>>(ws_dbias, ws_dscale, dscale,
                                                                                        dbias, n, c);
  return cudaGetLastError();
}

}  // namespace

size_t group_norm_backward_workspace_bytes(int64_t n, int64_t c) {
  return n > 0 && c > 0 ? static_cast<size_t>(2 * n * c) * sizeof(float) : 0;
}

cudaError_t group_norm_forward_f32(const float* x, const float* scale, const float* bias, float* y, int64_t n,
                                   int64_t c, int64_t s, int64_t groups, float epsilon, cudaStream_t stream) {
  return launch_forward(x, scale, bias, y, n, c, s, groups, epsilon, stream);
}
cudaError_t group_norm_forward_f16(const __half* x, const __half* scale, const __half* bias, __half* y, int64_t n,
                                   int64_t c, int64_t s, int64_t groups, float epsilon, cudaStream_t stream) {
  return launch_forward(x, scale, bias, y, n, c, s, groups, epsilon, stream);
}
cudaError_t group_norm_backward_f32(const float* x, const float* scale, const float* dy, float* dx, float* dscale,
                                    float* dbias, int64_t n, int64_t c, int64_t s, int64_t groups, float epsilon,
                                    void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  return launch_backward(x, scale, dy, dx, dscale, dbias, n, c, s, groups, epsilon, workspace, workspace_bytes,
                         stream);
}
cudaError_t group_norm_backward_f16(const __half* x, const __half* scale, const __half* dy, __half* dx,
                                    __half* dscale, __half* dbias, int64_t n, int64_t c, int64_t s, int64_t groups,
                                    float epsilon, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  return launch_backward(x, scale, dy, dx, dscale, dbias, n, c, s, groups, epsilon, workspace, workspace_bytes,
                         stream);
}

}  // namespace graft::cuda
