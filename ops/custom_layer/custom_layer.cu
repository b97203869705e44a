// CUDA kernels of CustomLayer. Elementwise and memory-bound: each thread moves 16-byte packs
// (4 floats or 8 halves) when every pointer is 16-byte aligned, and the remainder element by element.
// All arithmetic is in float; half values are rounded once on store.
#include "ops/custom_layer/custom_layer_kernels.cuh"

#include <algorithm>

namespace graft::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 8192;  // grid-stride beyond this; enough to fill any current GPU

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }

template <bool kBackward>
__device__ __forceinline__ float apply(float x, float dy, float beta) {
  // expf rather than __expf: the fast intrinsic's error grows with |x| and fp32 is checked at 1e-5.
  const float s = 1.0f / (1.0f + expf(-beta * x));
  if constexpr (kBackward) {
    return dy * (s + beta * x * s * (1.0f - s));
  } else {
    return x * s;
  }
}

// out = f(x[, dy]) over n elements; the first npacks 16-byte packs are read and written as uint4.
template <typename T, bool kBackward>
__global__ void __launch_bounds__(kThreads)
swish_kernel(const T* __restrict__ x, const T* __restrict__ dy, T* __restrict__ out, int64_t n,
             int64_t npacks, float beta) {
  constexpr int kPack = 16 / sizeof(T);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t p = tid; p < npacks; p += stride) {
    const uint4 xr = reinterpret_cast<const uint4*>(x)[p];
    uint4 gr = make_uint4(0, 0, 0, 0);
    if constexpr (kBackward) gr = reinterpret_cast<const uint4*>(dy)[p];
    uint4 outr;
    const T* xv = reinterpret_cast<const T*>(&xr);
    const T* gv = reinterpret_cast<const T*>(&gr);
    T* ov = reinterpret_cast<T*>(&outr);
#pragma unroll
    for (int k = 0; k < kPack; ++k)
      ov[k] = from_float<T>(apply<kBackward>(to_float(xv[k]), kBackward ? to_float(gv[k]) : 0.0f, beta));
    reinterpret_cast<uint4*>(out)[p] = outr;
  }
  for (int64_t i = npacks * kPack + tid; i < n; i += stride)
    out[i] = from_float<T>(apply<kBackward>(to_float(x[i]), kBackward ? to_float(dy[i]) : 0.0f, beta));
}

bool aligned16(const void* p) { return p == nullptr || (reinterpret_cast<uintptr_t>(p) % 16) == 0; }

template <typename T, bool kBackward>
cudaError_t launch(const T* x, const T* dy, T* out, int64_t n, float beta, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  constexpr int kPack = 16 / sizeof(T);
  const int64_t npacks = (aligned16(x) && aligned16(dy) && aligned16(out)) ? n / kPack : 0;
  const int64_t work = std::max<int64_t>(npacks, n - npacks * kPack);
  const int64_t blocks = std::min<int64_t>((work + kThreads - 1) / kThreads, kMaxBlocks);
  swish_kernel<T, kBackward><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, dy, out, n, npacks, beta);
  return cudaGetLastError();
}

}  // namespace

cudaError_t custom_layer_forward_f32(const float* x, float* y, int64_t n, float beta, cudaStream_t stream) {
  return launch<float, false>(x, nullptr, y, n, beta, stream);
}
cudaError_t custom_layer_forward_f16(const __half* x, __half* y, int64_t n, float beta, cudaStream_t stream) {
  return launch<__half, false>(x, nullptr, y, n, beta, stream);
}
cudaError_t custom_layer_backward_f32(const float* x, const float* dy, float* dx, int64_t n, float beta,
                                      cudaStream_t stream) {
  return launch<float, true>(x, dy, dx, n, beta, stream);
}
cudaError_t custom_layer_backward_f16(const __half* x, const __half* dy, __half* dx, int64_t n, float beta,
                                      cudaStream_t stream) {
  return launch<__half, true>(x, dy, dx, n, beta, stream);
}

}  // namespace graft::cuda
