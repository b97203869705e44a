// CUDA kernels of multi-scale deformable attention.
//
// Forward: one thread per (n, q, m, chunk of VEC channels). The chunk is one 16-byte load when D and
// the pointers allow it (8 halves or 4 floats), so a bilinear tap of a D=32 fp16 head is four
// threads issuing one 16-byte load each; the (x, y, weight) of a sample are read by every thread of
// the chunk group (they hit L1). The gathered value rows are what bounds the time: they come from L2
// (the encoder's value tensor is ~20 MB in fp16 and fits in the H200's L2).
//
// Backward: one group of lanes per (n, q, m), each lane owning VEC-channel chunks (see
// backward_kernel). The per-sample sums of d(loss)/d(weight) and d(loss)/d(x, y) are finished by a
// shuffle reduction inside the group and written once, without atomics. grad_value is scattered
// with float atomics, VEC-wide on sm_90 (into grad_value itself for float, into a float workspace
// that is converted afterwards for half: __half atomics are slow and lose precision).
#include "ops/ms_deform_attn/ms_deform_attn_kernels.cuh"

#include <algorithm>
#include <type_traits>

namespace graft::cuda {
namespace {

constexpr int kForwardThreads = 256;
constexpr int kBackwardThreads = 256;  // 8 warps
constexpr int kBackwardMinBlocks = 4;  // <= 64 registers: 32 resident warps per SM to hide the gather latency

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

// Sum of v over the `width` lanes of this thread's group (a power of two <= 32, aligned in the warp);
// `mask` holds exactly those lanes, so groups of one warp reduce independently (xor offsets below
// `width` never leave the group) and may sit at different points of their loops.
__device__ __forceinline__ float group_sum(float v, unsigned mask, int width) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    if (o < width) v += __shfl_xor_sync(mask, v, o);
  return v;
}

// grad_value[p .. p+VEC) += v. sm_90 has 8- and 16-byte float reductions (red.global.add.v2/v4.f32),
// which cut the atomic instructions by up to 4x; `p` is a multiple of VEC floats into a row, so
// min(VEC, 4) * 4 bytes aligned (the launcher checks the base pointer). `red` (no return value) is
// written out so the compiler cannot pick a returning atomic; nothing in the kernel reads grad_value,
// so no ordering with other memory accesses is needed.
template <int VEC>
__device__ __forceinline__ void atomic_add_vec(float* p, const float (&v)[VEC]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (VEC % 4 == 0) {
#pragma unroll
    for (int i = 0; i < VEC; i += 4)
      asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(__cvta_generic_to_global(p + i)),
                   "f"(v[i]), "f"(v[i + 1]), "f"(v[i + 2]), "f"(v[i + 3]));
  } else if constexpr (VEC == 2) {
    asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(__cvta_generic_to_global(p)), "f"(v[0]), "f"(v[1]));
  } else {
    atomicAdd(p, v[0]);
  }
#else
#pragma unroll
  for (int i = 0; i < VEC; ++i) atomicAdd(p + i, v[i]);
#endif
}

// One group of `width` lanes per (n, q, m); lane r of the group owns channel chunks r, r + width, ...
// of VEC channels each (width = D / VEC rounded up to a power of two, at most 32). Per sample, each
// lane gathers its chunks of the four taps with VEC-wide loads, scatters a * corner_weight * grad_out
// into grad_value with VEC-wide atomics, and accumulates three partial sums that a group reduction
// finishes; lane r == 0 writes grad_attention_weights and grad_sampling_locations once. For D = 32
// (VEC = 4: 8 lanes) a warp works on 4 (n, q, m) at a time, so the per-sample index math, shuffles
// and atomics take 4x fewer instructions than with one channel per lane. Any D works: D = 1 is one
// lane per (n, q, m); odd D uses VEC = 1; D > 32 * VEC loops each lane over several chunks (e.g.
// D = 257: VEC = 1, 32 lanes, 9 or 8 chunks per lane).
//
// With the tap values v_k (k = 0..3: (h0,w0), (h0,w0+1), (h0+1,w0), (h0+1,w0+1)) and the dot product
// t_k = sum_c grad_out[c] * v_k[c] over the channels:
//   d loss / d a      = sum_k cw_k  * t_k                  (cw_k the bilinear corner weights)
//   d loss / d x_pix  = a * sum_k cdw_k * t_k, cdw = (-(1-lh), 1-lh, -lh, lh)
//   d loss / d y_pix  = a * sum_k cdh_k * t_k, cdh = (-(1-lw), -lw, 1-lw, lw)
// (the derivatives of the bilinear value in pixels), times W or H for the normalized location.
template <typename T, typename I, int VEC>
__global__ void __launch_bounds__(kBackwardThreads, kBackwardMinBlocks)
backward_kernel(const T* __restrict__ value, const I* __restrict__ shapes, const I* __restrict__ starts,
                const T* __restrict__ locs, const T* __restrict__ weights, const T* __restrict__ grad_out,
                float* __restrict__ grad_value, T* __restrict__ grad_locs, T* __restrict__ grad_weights, int64_t s,
                int m, int d, int64_t lq, int levels, int points, int width_log2, int64_t groups_total) {
  const int width = 1 << width_log2;
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int r = lane & (width - 1);  // lane within the group
  const unsigned mask = width == 32 ? 0xffffffffu : ((1u << width) - 1u) << (lane - r);
  const int chunks = d / VEC;
  const int64_t row_stride = static_cast<int64_t>(m) * d;
  const int64_t groups_per_block = blockDim.x >> width_log2;
  const int64_t groups_per_grid = static_cast<int64_t>(gridDim.x) * groups_per_block;
  // Every lane of a group has the same nqm, so a group enters and leaves this loop together.
  for (int64_t nqm = static_cast<int64_t>(blockIdx.x) * groups_per_block + (threadIdx.x >> width_log2);
       nqm < groups_total; nqm += groups_per_grid) {
    const int head = static_cast<int>(nqm % m);
    const int64_t n = nqm / m / lq;
    const int64_t vofs = n * s * row_stride + static_cast<int64_t>(head) * d;
    const T* g = grad_out + nqm * d;
    // grad_out of the lane's first chunk, kept for all samples (the only chunk when D <= 32 * VEC).
    float go_first[VEC] = {};
    if (r < chunks) load_vec<T, VEC>(g + r * VEC, go_first);
    const int64_t sample0 = nqm * levels * points;
    for (int l = 0; l < levels; ++l) {
      const int height = static_cast<int>(shapes[2 * l]), width_l = static_cast<int>(shapes[2 * l + 1]);
      const int64_t start = static_cast<int64_t>(starts[l]);
      for (int p = 0; p < points; ++p) {
        const int64_t si = sample0 + static_cast<int64_t>(l) * points + p;
        const float x = to_float(locs[2 * si]), y = to_float(locs[2 * si + 1]);
        const float a = to_float(weights[si]);
        float s_w = 0.0f, s_x = 0.0f, s_y = 0.0f;
        Tap tp;
        if (locate(x, y, height, width_l, tp)) {  // uniform within the group
          const float hl = tp.lh, wl = tp.lw, hh = 1.0f - tp.lh, wh = 1.0f - tp.lw;
          const float cw[4] = {hh * wh, hh * wl, hl * wh, hl * wl};
          const float cdw[4] = {-hh, hh, -hl, hl};
          const float cdh[4] = {-wh, -wl, wh, wl};
          int64_t rows[4];  // element offset of the tap's (n, row, head) in value, or -1 outside
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            const int yy = tp.h0 + (k >> 1), xx = tp.w0 + (k & 1);
            const int64_t row = start + static_cast<int64_t>(yy) * width_l + xx;
            const bool inside = yy >= 0 && xx >= 0 && yy < height && xx < width_l && row >= 0 && row < s;
            rows[k] = inside ? vofs + row * row_stride : -1;
          }
          for (int c = r; c < chunks; c += width) {
            float go[VEC];
            if (c == r) {
#pragma unroll
              for (int i = 0; i < VEC; ++i) go[i] = go_first[i];
            } else {
              load_vec<T, VEC>(g + c * VEC, go);
            }
#pragma unroll
            for (int k = 0; k < 4; ++k) {
              if (rows[k] < 0) continue;
              const int64_t ofs = rows[k] + static_cast<int64_t>(c) * VEC;
              float v[VEC], gv[VEC];
              load_vec<T, VEC>(value + ofs, v);
              float t = 0.0f;
              const float acw = a * cw[k];
#pragma unroll
              for (int i = 0; i < VEC; ++i) {
                t = fmaf(go[i], v[i], t);
                gv[i] = acw * go[i];
              }
              atomic_add_vec<VEC>(grad_value + ofs, gv);
              s_w = fmaf(cw[k], t, s_w);
              s_x = fmaf(cdw[k], t, s_x);
              s_y = fmaf(cdh[k], t, s_y);
            }
          }
        }
        s_w = group_sum(s_w, mask, width);
        s_x = group_sum(s_x, mask, width);
        s_y = group_sum(s_y, mask, width);
        if (r == 0) {
          grad_weights[si] = from_float<T>(s_w);
          grad_locs[2 * si] = from_float<T>(s_x * a * static_cast<float>(width_l));
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

template <typename T, typename I, int VEC>
cudaError_t launch_backward_vec(const T* value, const I* shapes, const I* starts, const T* locs, const T* weights,
                                const T* grad_out, float* acc, T* grad_locs, T* grad_weights, const MsdaSizes& z,
                                cudaStream_t stream) {
  // Lanes per (n, q, m): the chunk count rounded up to a power of two, at most a warp.
  const int64_t chunks = z.d / VEC;
  int width_log2 = 0;
  while (width_log2 < 5 && (int64_t{1} << width_log2) < chunks) ++width_log2;
  const int64_t groups = z.n * z.lq * z.m;
  const int groups_per_block = kBackwardThreads >> width_log2;
  backward_kernel<T, I, VEC><<<grid_for(groups, groups_per_block), kBackwardThreads, 0, stream>>>(
      value, shapes, starts, locs, weights, grad_out, acc, grad_locs, grad_weights, z.s, static_cast<int>(z.m),
      static_cast<int>(z.d), z.lq, static_cast<int>(z.l), static_cast<int>(z.p), width_log2, groups);
  return cudaGetLastError();
}

// The widest chunk D and the pointers allow, at most 4 channels: value and grad_out are read VEC
// elements at a time and the float accumulator is updated with one VEC-wide reduction. (8 halves per
// lane would need more than the 64 registers kBackwardMinBlocks allows and spill.)
template <typename T, typename I>
cudaError_t launch_backward(const T* value, const I* shapes, const I* starts, const T* locs, const T* weights,
                            const T* grad_out, float* acc, T* grad_locs, T* grad_weights, const MsdaSizes& z,
                            cudaStream_t stream) {
  auto fits = [&](int vec) {
    const size_t bytes = sizeof(T) * vec;
    return z.d % vec == 0 && aligned(value, bytes) && aligned(grad_out, bytes) &&
           aligned(acc, sizeof(float) * std::min(vec, 4));
  };
  if (fits(4))
    return launch_backward_vec<T, I, 4>(value, shapes, starts, locs, weights, grad_out, acc, grad_locs, grad_weights,
                                        z, stream);
  if (fits(2))
    return launch_backward_vec<T, I, 2>(value, shapes, starts, locs, weights, grad_out, acc, grad_locs, grad_weights,
                                        z, stream);
  return launch_backward_vec<T, I, 1>(value, shapes, starts, locs, weights, grad_out, acc, grad_locs, grad_weights, z,
                                      stream);
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
  const int64_t groups = z.n * z.lq * z.m;
  if (err == cudaSuccess && groups > 0 && z.l > 0 && z.p > 0)
    err = launch_backward(value, spatial_shapes, level_start_index, sampling_locations, attention_weights, grad_output,
                          acc, grad_sampling_locations, grad_attention_weights, z, stream);
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
