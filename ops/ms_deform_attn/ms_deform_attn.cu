// CUDA kernels of multi-scale deformable attention.
//
// Forward: one thread per (n, q, m, chunk of VEC channels). The chunk is one 16-byte load when D and
// the pointers allow it (8 halves or 4 floats), so a bilinear tap of a D=32 fp16 head is four
// threads issuing one 16-byte load each; the (x, y, weight) of a sample are read by every thread of
// the chunk group (they hit L1). The gathered value rows are what bounds the time: they come from L2
// (the encoder's value tensor is ~20 MB in fp16 and fits in the H200's L2).
//
// Backward: one warp per (n, q, m); lanes stride over D. Each lane accumulates its channels' share
// of d(loss)/d(weight) and d(loss)/d(x, y); a warp reduction finishes them and lane 0 writes them,
// so they need no atomics. grad_value is scattered with float atomicAdd (into grad_value itself for
// float, into a float workspace that is converted afterwards for half).
#include "ops/ms_deform_attn/ms_deform_attn_kernels.cuh"

#include <algorithm>
#include <type_traits>

namespace graft::cuda {
namespace {

constexpr int kForwardThreads = 256;
constexpr int kBackwardThreads = 256;  // 8 warps

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }

// VEC consecutive elements as one aligned access (16, 8, 4 or 2 bytes).
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Pack {
  T v[VEC];
};

template <typename T, int VEC>
__device__ __forceinline__ void load_vec(const T* __restrict__ p, float (&out)[VEC]) {
  const Pack<T, VEC> pk = *reinterpret_cast<const Pack<T, VEC>*>(p);
#pragma unroll
  for (int i = 0; i < VEC; ++i) out[i] = to_float(pk.v[i]);
}

template <typename T, int VEC>
__device__ __forceinline__ void store_vec(T* __restrict__ p, const float (&in)[VEC]) {
  Pack<T, VEC> pk;
#pragma unroll
  for (int i = 0; i < VEC; ++i) pk.v[i] = from_float<T>(in[i]);
  *reinterpret_cast<Pack<T, VEC>*>(p) = pk;
}

// Where a sample falls in pixel coordinates of its level (align_corners=False: pixel centres at
// i + 0.5 in [0, size)). False when no tap can be inside, which also rejects NaN.
struct Tap {
  int h0, w0;
  float lh, lw;
};
__device__ __forceinline__ bool locate(float x, float y, int height, int width, Tap& t) {
  const float hf = y * static_cast<float>(height) - 0.5f;
  const float wf = x * static_cast<float>(width) - 0.5f;
  if (!(hf > -1.0f && wf > -1.0f && hf < static_cast<float>(height) && wf < static_cast<float>(width))) return false;
  const float hfl = floorf(hf), wfl = floorf(wf);
  t.h0 = static_cast<int>(hfl);
  t.w0 = static_cast<int>(wfl);
  t.lh = hf - hfl;
  t.lw = wf - wfl;
  return true;
}

template <typename T, typename I, int VEC>
__global__ void __launch_bounds__(kForwardThreads)
forward_kernel(const T* __restrict__ value, const I* __restrict__ shapes, const I* __restrict__ starts,
               const T* __restrict__ locs, const T* __restrict__ weights, T* __restrict__ out, int64_t s, int m,
               int d, int64_t lq, int levels, int points, int64_t total) {
  const int chunks = d / VEC;
  const int64_t row_stride = static_cast<int64_t>(m) * d;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(t % chunks);
    const int64_t nqm = t / chunks;  // (n * Lq + q) * M + head
    const int head = static_cast<int>(nqm % m);
    const int64_t n = nqm / m / lq;
    const T* vbase = value + n * s * row_stride + static_cast<int64_t>(head) * d + c * VEC;
    const T* loc = locs + nqm * levels * points * 2;
    const T* wgt = weights + nqm * levels * points;
    float acc[VEC];
#pragma unroll
    for (int i = 0; i < VEC; ++i) acc[i] = 0.0f;
    for (int l = 0; l < levels; ++l) {
      const int height = static_cast<int>(shapes[2 * l]), width = static_cast<int>(shapes[2 * l + 1]);
      const int64_t start = static_cast<int64_t>(starts[l]);
      for (int p = 0; p < points; ++p, loc += 2, ++wgt) {
        Tap tp;  // two scalar loads: a view of the locations need not be 2-element aligned
        if (!locate(to_float(loc[0]), to_float(loc[1]), height, width, tp)) continue;
        const float a = to_float(*wgt);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const int hh = tp.h0 + (k >> 1), ww = tp.w0 + (k & 1);
          if (hh < 0 || ww < 0 || hh >= height || ww >= width) continue;
          const int64_t row = start + static_cast<int64_t>(hh) * width + ww;
          if (row < 0 || row >= s) continue;
          const float bw = a * ((k >> 1) ? tp.lh : 1.0f - tp.lh) * ((k & 1) ? tp.lw : 1.0f - tp.lw);
          float v[VEC];
          load_vec<T, VEC>(vbase + row * row_stride, v);
#pragma unroll
          for (int i = 0; i < VEC; ++i) acc[i] = fmaf(bw, v[i], acc[i]);
        }
      }
    }
    store_vec<T, VEC>(out + nqm * d + c * VEC, acc);
  }
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <typename T, typename I>
__global__ void __launch_bounds__(kBackwardThreads)
backward_kernel(const T* __restrict__ value, const I* __restrict__ shapes, const I* __restrict__ starts,
                const T* __restrict__ locs, const T* __restrict__ weights, const T* __restrict__ grad_out,
                float* __restrict__ grad_value, T* __restrict__ grad_locs, T* __restrict__ grad_weights, int64_t s,
                int m, int d, int64_t lq, int levels, int points, int64_t warps_total) {
  const int lane = threadIdx.x & 31;
  const int64_t row_stride = static_cast<int64_t>(m) * d;
  const int64_t warps_per_grid = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t nqm = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; nqm < warps_total;
       nqm += warps_per_grid) {
    const int head = static_cast<int>(nqm % m);
    const int64_t n = nqm / m / lq;
    const int64_t vofs = n * s * row_stride + static_cast<int64_t>(head) * d;
    const T* g = grad_out + nqm * d;
    const int64_t sample0 = nqm * levels * points;
    for (int l = 0; l < levels; ++l) {
      const int height = static_cast<int>(shapes[2 * l]), width = static_cast<int>(shapes[2 * l + 1]);
      const int64_t start = static_cast<int64_t>(starts[l]);
      for (int p = 0; p < points; ++p) {
        const int64_t si = sample0 + static_cast<int64_t>(l) * points + p;
        const float x = to_float(locs[2 * si]), y = to_float(locs[2 * si + 1]);
        const float a = to_float(weights[si]);
        float s_w = 0.0f, s_x = 0.0f, s_y = 0.0f;
        Tap tp;
        if (locate(x, y, height, width, tp)) {
          int64_t rows[4];
          float cw[4];
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            const int hh = tp.h0 + (k >> 1), ww = tp.w0 + (k & 1);
            const int64_t row = start + static_cast<int64_t>(hh) * width + ww;
            const bool inside = hh >= 0 && ww >= 0 && hh < height && ww < width && row >= 0 && row < s;
            rows[k] = inside ? vofs + row * row_stride : -1;
            cw[k] = ((k >> 1) ? tp.lh : 1.0f - tp.lh) * ((k & 1) ? tp.lw : 1.0f - tp.lw);
          }
          const float hl = tp.lh, wl = tp.lw, hh1 = 1.0f - tp.lh, ww1 = 1.0f - tp.lw;
          for (int c = lane; c < d; c += 32) {
            const float go = to_float(g[c]);
            float v[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) {
              v[k] = rows[k] >= 0 ? to_float(value[rows[k] + c]) : 0.0f;
              if (rows[k] >= 0) atomicAdd(grad_value + rows[k] + c, a * cw[k] * go);
            }
            const float val = cw[0] * v[0] + cw[1] * v[1] + cw[2] * v[2] + cw[3] * v[3];
            const float dw = hh1 * (v[1] - v[0]) + hl * (v[3] - v[2]);  // d val / d w (pixels)
            const float dh = ww1 * (v[2] - v[0]) + wl * (v[3] - v[1]);  // d val / d h (pixels)
            s_w += go * val;
            s_x += go * dw;
            s_y += go * dh;
          }
        }
        s_w = warp_sum(s_w);
        s_x = warp_sum(s_x);
        s_y = warp_sum(s_y);
        if (lane == 0) {
          grad_weights[si] = from_float<T>(s_w);
          grad_locs[2 * si] = from_float<T>(s_x * a * static_cast<float>(width));
          grad_locs[2 * si + 1] = from_float<T>(s_y * a * static_cast<float>(height));
        }
      }
    }
  }
}

template <typename T>
__global__ void float_to_kernel(const float* __restrict__ in, T* __restrict__ out, int64_t count) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = from_float<T>(in[i]);
}

bool bad_sizes(const MsdaSizes& z) {
  return z.n < 0 || z.s < 0 || z.m < 0 || z.d < 0 || z.lq < 0 || z.l < 0 || z.p < 0 || z.m > 0x7fffffff ||
         z.d > 0x7fffffff || z.l > 0x7fffffff || z.p > 0x7fffffff;
}

unsigned grid_for(int64_t work, int threads) {
  const int64_t blocks = (work + threads - 1) / threads;
  return static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(blocks, 1), 1 << 30));
}

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

template <typename T, typename I, int VEC>
cudaError_t launch_forward_vec(const T* value, const I* shapes, const I* starts, const T* locs, const T* weights,
                               T* out, const MsdaSizes& z, cudaStream_t stream) {
  const int64_t total = z.n * z.lq * z.m * (z.d / VEC);
  forward_kernel<T, I, VEC><<<grid_for(total, kForwardThreads), kForwardThreads, 0, stream>>>(
      value, shapes, starts, locs, weights, out, z.s, static_cast<int>(z.m), static_cast<int>(z.d), z.lq,
      static_cast<int>(z.l), static_cast<int>(z.p), total);
  return cudaGetLastError();
}

}  // namespace

template <typename T, typename I>
cudaError_t ms_deform_attn_forward(const T* value, const I* spatial_shapes, const I* level_start_index,
                                   const T* sampling_locations, const T* attention_weights, T* output,
                                   const MsdaSizes& z, cudaStream_t stream) {
  if (bad_sizes(z)) return cudaErrorInvalidValue;
  if (z.n == 0 || z.lq == 0 || z.m == 0 || z.d == 0) return cudaSuccess;
  // The widest access D and both pointers allow: 16 bytes when possible.
  auto fits = [&](int vec) {
    const size_t bytes = sizeof(T) * vec;
    return z.d % vec == 0 && aligned(value, bytes) && aligned(output, bytes);
  };
  if constexpr (std::is_same_v<T, __half>) {
    if (fits(8))
      return launch_forward_vec<T, I, 8>(value, spatial_shapes, level_start_index, sampling_locations,
                                         attention_weights, output, z, stream);
  }
  if (fits(4))
    return launch_forward_vec<T, I, 4>(value, spatial_shapes, level_start_index, sampling_locations,
                                       attention_weights, output, z, stream);
  if (fits(2))
    return launch_forward_vec<T, I, 2>(value, spatial_shapes, level_start_index, sampling_locations,
                                       attention_weights, output, z, stream);
  return launch_forward_vec<T, I, 1>(value, spatial_shapes, level_start_index, sampling_locations, attention_weights,
                                     output, z, stream);
}

template <typename T>
size_t ms_deform_attn_backward_workspace_bytes(const MsdaSizes& z) {
  if constexpr (std::is_same_v<T, float>) {
    return 0;
  } else {
    const int64_t count = z.n * z.s * z.m * z.d;
    return count > 0 ? static_cast<size_t>(count) * sizeof(float) : 0;
  }
}

template <typename T, typename I>
cudaError_t ms_deform_attn_backward(const T* value, const I* spatial_shapes, const I* level_start_index,
                                    const T* sampling_locations, const T* attention_weights, const T* grad_output,
                                    T* grad_value, T* grad_sampling_locations, T* grad_attention_weights,
                                    const MsdaSizes& z, void* workspace, size_t workspace_bytes,
                                    cudaStream_t stream) {
  if (bad_sizes(z)) return cudaErrorInvalidValue;
  const int64_t value_count = z.n * z.s * z.m * z.d;
  float* acc = nullptr;
  bool owned = false;
  if constexpr (std::is_same_v<T, float>) {
    acc = grad_value;
  } else {
    const size_t need = ms_deform_attn_backward_workspace_bytes<T>(z);
    if (need > 0 && (workspace == nullptr || workspace_bytes < need)) {
      if (cudaError_t e = cudaMallocAsync(reinterpret_cast<void**>(&acc), need, stream); e != cudaSuccess) return e;
      owned = true;
    } else {
      acc = static_cast<float*>(workspace);
    }
  }
  cudaError_t err = cudaSuccess;
  if (value_count > 0) err = cudaMemsetAsync(acc, 0, static_cast<size_t>(value_count) * sizeof(float), stream);
  const int64_t warps = z.n * z.lq * z.m;
  if (err == cudaSuccess && warps > 0 && z.l > 0 && z.p > 0) {
    const int warps_per_block = kBackwardThreads / 32;
    backward_kernel<T, I><<<grid_for(warps, warps_per_block), kBackwardThreads, 0, stream>>>(
        value, spatial_shapes, level_start_index, sampling_locations, attention_weights, grad_output, acc,
        grad_sampling_locations, grad_attention_weights, z.s, static_cast<int>(z.m), static_cast<int>(z.d), z.lq,
        static_cast<int>(z.l), static_cast<int>(z.p), warps);
    err = cudaGetLastError();
  }
  if constexpr (!std::is_same_v<T, float>) {
    if (err == cudaSuccess && value_count > 0) {
      float_to_kernel<T><<<grid_for(value_count, 256), 256, 0, stream>>>(acc, grad_value, value_count);
      err = cudaGetLastError();
    }
    if (owned) {
      const cudaError_t f = cudaFreeAsync(acc, stream);
      if (err == cudaSuccess) err = f;
    }
  }
  return err;
}

#define GRAFT_MSDA_INSTANTIATE(T, I)                                                                                \
  template cudaError_t ms_deform_attn_forward<T, I>(const T*, const I*, const I*, const T*, const T*, T*,          \
                                                    const MsdaSizes&, cudaStream_t);                               \
  template cudaError_t ms_deform_attn_backward<T, I>(const T*, const I*, const I*, const T*, const T*, const T*,   \
                                                     T*, T*, T*, const MsdaSizes&, void*, size_t, cudaStream_t);
GRAFT_MSDA_INSTANTIATE(float, int32_t)
GRAFT_MSDA_INSTANTIATE(float, int64_t)
GRAFT_MSDA_INSTANTIATE(__half, int32_t)
GRAFT_MSDA_INSTANTIATE(__half, int64_t)
#undef GRAFT_MSDA_INSTANTIATE
template size_t ms_deform_attn_backward_workspace_bytes<float>(const MsdaSizes&);
template size_t ms_deform_attn_backward_workspace_bytes<__half>(const MsdaSizes&);

}  // namespace graft::cuda
