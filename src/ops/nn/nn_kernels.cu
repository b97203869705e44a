#include "ops/nn/nn_kernels.cuh"

#include <algorithm>
#include <climits>
#include <cstdint>

#include "ops/nn/conv_epilogue.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"

namespace graft::cuda::k {
namespace {

template <typename T>
__global__ void conv2d_direct_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                                     T* __restrict__ y, Window2d g, int64_t M, int64_t group, int64_t total) {
  const int64_t Cg = g.c / group, Mg = M / group;
  GRAFT_GRID_STRIDE(i, total) {
    int64_t ox = i % g.ow, t = i / g.ow;
    int64_t oy = t % g.oh;
    t /= g.oh;
    int64_t m = t % M, n = t / M;
    int64_t grp = m / Mg;
    float acc = b ? Elem<T>::ld(b[m]) : 0.f;
    for (int64_t c = 0; c < Cg; ++c) {
      const T* xp = x + ((n * g.c + grp * Cg + c) * g.h) * g.w;
      const T* wp = w + ((m * Cg + c) * g.kh) * g.kw;
      for (int64_t ky = 0; ky < g.kh; ++ky) {
        int64_t iy = oy * g.sh - g.ph + ky * g.dh;
        if (iy < 0 || iy >= g.h) continue;
        for (int64_t kx = 0; kx < g.kw; ++kx) {
          int64_t ix = ox * g.sw - g.pw + kx * g.dw;
          if (ix < 0 || ix >= g.w) continue;
          acc += Elem<T>::ld(xp[iy * g.w + ix]) * Elem<T>::ld(wp[ky * g.kw + kx]);
        }
      }
    }
    y[i] = Elem<T>::st(acc);
  }
}

// One output element per thread: the output's (n, m or c) plane index and its spatial position.
__device__ __forceinline__ int64_t window3d_position(const Window3d& g, int64_t i, int64_t o[3]) {
  o[2] = i % g.out[2];
  i /= g.out[2];
  o[1] = i % g.out[1];
  i /= g.out[1];
  o[0] = i % g.out[0];
  return i / g.out[0];
}

// Calls f(iz, iy, ix, tap) for each tap of output position o that lands inside the input, in window
// order (tap: the row-major index within the kernel).
template <typename F>
__device__ __forceinline__ void for_each_tap3d(const Window3d& g, const int64_t o[3], F&& f) {
  for (int64_t kz = 0; kz < g.k[0]; ++kz) {
    const int64_t iz = o[0] * g.s[0] - g.pb[0] + kz * g.d[0];
    if (iz < 0 || iz >= g.in[0]) continue;
    for (int64_t ky = 0; ky < g.k[1]; ++ky) {
      const int64_t iy = o[1] * g.s[1] - g.pb[1] + ky * g.d[1];
      if (iy < 0 || iy >= g.in[1]) continue;
      for (int64_t kx = 0; kx < g.k[2]; ++kx) {
        const int64_t ix = o[2] * g.s[2] - g.pb[2] + kx * g.d[2];
        if (ix < 0 || ix >= g.in[2]) continue;
        f(iz, iy, ix, (kz * g.k[1] + ky) * g.k[2] + kx);
      }
    }
  }
}

template <typename T>
__global__ void conv3d_direct_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                                     T* __restrict__ y, Window3d g, int64_t M, int64_t group, int64_t total) {
  const int64_t Cg = g.c / group, Mg = M / group;
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2], taps = g.k[0] * g.k[1] * g.k[2];
  GRAFT_GRID_STRIDE(i, total) {
    int64_t o[3];
    const int64_t t = window3d_position(g, i, o);
    const int64_t m = t % M, n = t / M, grp = m / Mg;
    float acc = b ? Elem<T>::ld(b[m]) : 0.f;
    for (int64_t c = 0; c < Cg; ++c) {
      const T* xp = x + (n * g.c + grp * Cg + c) * in_plane;
      const T* wp = w + (m * Cg + c) * taps;
      for_each_tap3d(g, o, [&](int64_t iz, int64_t iy, int64_t ix, int64_t tap) {
        acc += Elem<T>::ld(xp[(iz * g.in[1] + iy) * g.in[2] + ix]) * Elem<T>::ld(wp[tap]);
      });
    }
    y[i] = Elem<T>::st(acc);
  }
}

template <typename T>
__global__ void pool3d_kernel(PoolKind kind, const T* __restrict__ x, T* __restrict__ y, Window3d g, int64_t total) {
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  GRAFT_GRID_STRIDE(i, total) {
    int64_t o[3];
    const T* xp = x + window3d_position(g, i, o) * in_plane;
    float best = -INFINITY, sum = 0.f;
    bool nan = false;
    int64_t taps = 0;
    for_each_tap3d(g, o, [&](int64_t iz, int64_t iy, int64_t ix, int64_t) {
      const float a = Elem<T>::ld(xp[(iz * g.in[1] + iy) * g.in[2] + ix]);
      ++taps;
      sum += a;
      nan |= isnan(a);
      best = fmaxf(best, a);  // NaN is ignored here and restored from `nan` below
    });
    // count_include_pad's divisor: the window's taps inside the padded input, axis by axis.
    int64_t padded = 1;
    for (int a = 0; a < 3; ++a) {
      int64_t inside = 0;
      for (int64_t k = 0; k < g.k[a]; ++k) {
        const int64_t at = o[a] * g.s[a] - g.pb[a] + k * g.d[a];
        inside += at >= -g.pb[a] && at < g.in[a] + g.pe[a];
      }
      padded *= inside;
    }
    const int64_t count = kind == PoolKind::kAverageIncludePad ? padded : taps;
    float r;
    if (kind == PoolKind::kMax) r = nan ? NAN : best;
    else r = count > 0 ? sum / static_cast<float>(count) : NAN;
    // MaxPool only: r is one of the inputs (a window that sees none, possible with ceil_mode, has no
    // integer -inf: 0, not an undefined conversion).
    if constexpr (std::is_integral_v<T>) y[i] = taps > 0 ? static_cast<T>(r) : T(0);
    else y[i] = Elem<T>::st(r);
  }
}

template <typename T>
__global__ void max_pool_indices_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ ind,
                                        Window3d g, bool col_major, int64_t total) {
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  GRAFT_GRID_STRIDE(i, total) {
    int64_t o[3];
    const int64_t nc = window3d_position(g, i, o);
    const T* xp = x + nc * in_plane;
    float best = -INFINITY;
    int64_t best_at = -1;
    for_each_tap3d(g, o, [&](int64_t iz, int64_t iy, int64_t ix, int64_t) {
      const float v = Elem<T>::ld(xp[(iz * g.in[1] + iy) * g.in[2] + ix]);
      if (best_at >= 0 && (isnan(best) || !(v > best || isnan(v)))) return;  // NaN sticks; ties keep the first
      best = v;
      best_at = col_major ? iz + (iy + ix * g.in[1]) * g.in[0] : (iz * g.in[1] + iy) * g.in[2] + ix;
    });
    y[i] = Elem<T>::st(best);
    ind[i] = nc * in_plane + (best_at < 0 ? 0 : best_at);
  }
}

// V channels of one NHWC output pixel per thread; V * sizeof(T) <= 16 and c % V == 0, so every x, z
// and y access is one aligned vector access.
template <typename T, int V>
struct alignas(sizeof(T) * V) Lanes {
  T v[V];
};

// V pool outputs (V consecutive channels, one output position) over the window at (oy, ox) of a
// plane whose element (iy, ix) is at xp[(iy * g.w + ix) * step] (step 1 for NCHW planes, C for
// NHWC): V = 1 for the scalar kernels, 16 bytes of channels for the NHWC vector kernel, whose
// lanes share the window's bounds and average counts. I is the index type: 32-bit when every index
// of the tensors fits (64-bit division and multiplication cost several times more; resnet50's stem
// MaxPool at batch 32 spent most of its 0.18 ms in index math).
template <typename T, int V, typename I>
__device__ Lanes<T, V> pool_window(PoolKind kind, const T* __restrict__ xp, I step, const Window2d& g, I oy, I ox) {
  const I h = static_cast<I>(g.h), w = static_cast<I>(g.w), ph = static_cast<I>(g.ph), pw = static_cast<I>(g.pw);
  const I kh = static_cast<I>(g.kh), kw = static_cast<I>(g.kw);
  float best[V], sum[V];
  bool nan[V];
#pragma unroll
  for (int v = 0; v < V; ++v) best[v] = -INFINITY, sum[v] = 0.f, nan[v] = false;
  I taps = 0, padded = 0;
  for (I ky = 0; ky < kh; ++ky) {
    const I iy = oy * static_cast<I>(g.sh) - ph + ky * static_cast<I>(g.dh);
    const bool row_in_pad = iy >= -ph && iy < h + static_cast<I>(g.peh);
    for (I kx = 0; kx < kw; ++kx) {
      const I ix = ox * static_cast<I>(g.sw) - pw + kx * static_cast<I>(g.dw);
      if (row_in_pad && ix >= -pw && ix < w + static_cast<I>(g.pew)) ++padded;
      if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
      const Lanes<T, V> xv = *reinterpret_cast<const Lanes<T, V>*>(xp + (iy * w + ix) * step);
      ++taps;
#pragma unroll
      for (int v = 0; v < V; ++v) {
        const float a = Elem<T>::ld(xv.v[v]);
        sum[v] += a;
        nan[v] |= isnan(a);
        best[v] = fmaxf(best[v], a);  // NaN is ignored here and restored from nan[] below
      }
    }
  }
  const I count = kind == PoolKind::kAverageIncludePad ? padded : taps;
  Lanes<T, V> out;
#pragma unroll
  for (int v = 0; v < V; ++v) {
    float r;
    if (kind == PoolKind::kMax) r = nan[v] ? NAN : best[v];  // -inf where the window saw nothing
    else r = count > 0 ? sum[v] / static_cast<float>(count) : NAN;
    out.v[v] = Elem<T>::st(r);
  }
  return out;
}

template <typename T, typename I>
__global__ void pool2d_kernel(PoolKind kind, const T* __restrict__ x, T* __restrict__ y, Window2d g, I total) {
  const I ow = static_cast<I>(g.ow), oh = static_cast<I>(g.oh), plane = static_cast<I>(g.h * g.w);
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += static_cast<I>(gridDim.x) * blockDim.x) {
    const I ox = i % ow, t = i / ow;
    const I oy = t % oh, nc = t / oh;
    y[i] = pool_window<T, 1, I>(kind, x + nc * plane, I(1), g, oy, ox).v[0];
  }
}

// NHWC: consecutive threads take consecutive channels, so every tap is a coalesced row read.
template <typename T, typename I>
__global__ void pool2d_nhwc_kernel(PoolKind kind, const T* __restrict__ x, T* __restrict__ y, Window2d g, I total) {
  const I c_ = static_cast<I>(g.c), ow = static_cast<I>(g.ow), oh = static_cast<I>(g.oh);
  const I image = static_cast<I>(g.h * g.w * g.c);
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += static_cast<I>(gridDim.x) * blockDim.x) {
    const I c = i % c_;
    I t = i / c_;
    const I ox = t % ow;
    t /= ow;
    const I oy = t % oh, n = t / oh;
    y[i] = pool_window<T, 1, I>(kind, x + n * image + c, c_, g, oy, ox).v[0];
  }
}

// NHWC with V channels per thread (16-byte vectors of a float16 tensor whose channels are a
// multiple of 8): the scalar kernel above spent its time on index math and 2-byte loads, not on
// memory (VGG-16's first MaxPool, 64 channels at 224x224 and batch 32, took 0.42 ms on an H200
// for 256 MB of traffic). The same window walk (pool_window) with V lanes.
template <typename T, int V, typename I>
__global__ void pool2d_nhwc_vec_kernel(PoolKind kind, const T* __restrict__ x, T* __restrict__ y, Window2d g, I total) {
  const I cv = static_cast<I>(g.c / V), c_ = static_cast<I>(g.c), ow = static_cast<I>(g.ow), oh = static_cast<I>(g.oh);
  const I image = static_cast<I>(g.h * g.w * g.c);
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += static_cast<I>(gridDim.x) * blockDim.x) {
    const I c0 = (i % cv) * V;
    const I p = i / cv;  // output pixel (n, oy, ox)
    const I ox = p % ow, t = p / ow;
    const I oy = t % oh, n = t / oh;
    *reinterpret_cast<Lanes<T, V>*>(y + p * c_ + c0) = pool_window<T, V, I>(kind, x + n * image + c0, c_, g, oy, ox);
  }
}

// Global pool over NHWC: block (32 channels) x (32 rows of the plane); lanes along channels keep
// every load coalesced, the 32 rows split the plane so a batch-1 SE block still fills the GPU.
// blockIdx.z is a slice of `rows` rows of the plane: with one slice the block writes y; with more
// (partial != null) it writes its slice's sum or max (NaN if it met one) to partial[z][n][c], which
// global_pool_finish_kernel combines. One block per (image, 32 channels) left EfficientNet's first
// SE pool (32 images of 112x112x32 at float16) with 32 blocks on 132 SMs: 36 us for 26 MB.
template <typename T>
__global__ void global_pool_nhwc_kernel(bool max, const T* __restrict__ x, T* __restrict__ y,
                                        float* __restrict__ partial, int64_t area, int64_t channels, int64_t rows) {
  __shared__ float part[32][33];
  __shared__ int nan_any[32];
  const int64_t c = blockIdx.x * 32 + threadIdx.x;
  const int64_t n = blockIdx.y;
  const int64_t p0 = blockIdx.z * rows, p1 = min(area, p0 + rows);
  float acc = max ? -INFINITY : 0.f;
  bool nan = false;
  if (threadIdx.y == 0) nan_any[threadIdx.x] = 0;
  __syncthreads();
  if (c < channels) {
    const T* xp = x + n * area * channels + c;
    for (int64_t p = p0 + threadIdx.y; p < p1; p += 32) {
      float v = Elem<T>::ld(xp[p * channels]);
      if (max) {
        nan |= isnan(v);
        acc = fmaxf(acc, v);
      } else {
        acc += v;
      }
    }
  }
  part[threadIdx.y][threadIdx.x] = acc;
  if (nan) atomicOr(&nan_any[threadIdx.x], 1);
  __syncthreads();
  if (threadIdx.y == 0 && c < channels) {
    float r = part[0][threadIdx.x];
    for (int k = 1; k < 32; ++k) r = max ? fmaxf(r, part[k][threadIdx.x]) : r + part[k][threadIdx.x];
    if (max && nan_any[threadIdx.x]) r = NAN;
    if (partial) partial[(blockIdx.z * gridDim.y + n) * channels + c] = r;
    else y[n * channels + c] = Elem<T>::st(max ? r : r / static_cast<float>(area));
  }
}

// The same pool with 16 bytes of channels per load (V channels; channels a multiple of V, x 16-byte
// aligned): a block is `lanes` threads across `lanes` vectors of channels (a power of two, at most
// 32) by 256 / lanes rows of the plane, so a warp reads whole runs of neighbouring pixels even when
// there are few channels, and the launcher narrows the lanes until the grid fills the GPU. The
// scalar kernel above gives each thread one 2-byte channel: MobileNetV3-Small's squeeze-excitation
// pools (16 to 576 channels) took 5 to 10 us each for 1 to 3 MB at batch 32 on an H200 (ncu,
// 67d87e7); with 32 lanes and one block per image they still took 6 to 14 us (ncu, 56b03a2), 32
// blocks for 132 multiprocessors. The row groups combine in a tree through shared memory.
// Per-channel results leave as in the kernel above (y, or partial[z][n][c] when the plane is sliced).
template <typename T, int V>
__global__ void __launch_bounds__(kThreads) global_pool_nhwc_vec_kernel(bool max, const T* __restrict__ x,
                                                                        T* __restrict__ y, float* __restrict__ partial,
                                                                        int64_t area, int64_t channels, int64_t rows,
                                                                        int lanes) {
  __shared__ float part[kThreads * V];     // [row group][lane][V]
  __shared__ unsigned nan_bits[kThreads];  // [row group][lane]: which of the V channels met a NaN
  const int t = static_cast<int>(threadIdx.x), lane = t % lanes, group = t / lanes, groups = kThreads / lanes;
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * lanes + lane) * V;  // this thread's first channel
  const int64_t n = blockIdx.y;
  const int64_t p0 = blockIdx.z * rows, p1 = min(area, p0 + rows);
  float acc[V];
#pragma unroll
  for (int v = 0; v < V; ++v) acc[v] = max ? -INFINITY : 0.f;
  unsigned nan = 0;
  const bool active = c0 < channels;
  if (active) {
    const T* xp = x + (n * area + p0 + group) * channels + c0;
    const int64_t step = static_cast<int64_t>(groups) * channels;
#pragma unroll 4
    for (int64_t p = p0 + group; p < p1; p += groups, xp += step) {
      const Lanes<T, V> xv = *reinterpret_cast<const Lanes<T, V>*>(xp);
#pragma unroll
      for (int v = 0; v < V; ++v) {
        const float f = Elem<T>::ld(xv.v[v]);
        if (max) {
          nan |= isnan(f) ? 1u << v : 0u;
          acc[v] = fmaxf(acc[v], f);
        } else {
          acc[v] += f;
        }
      }
    }
  }
  // Tree over the row groups (a power of two): the upper half hands its sums to the lower half.
  for (int half = groups / 2; half > 0; half /= 2) {
    if (group >= half && group < 2 * half) {
#pragma unroll
      for (int v = 0; v < V; ++v) part[t * V + v] = acc[v];
      nan_bits[t] = nan;
    }
    __syncthreads();
    if (group < half) {
      const int from = t + half * lanes;
#pragma unroll
      for (int v = 0; v < V; ++v) acc[v] = max ? fmaxf(acc[v], part[from * V + v]) : acc[v] + part[from * V + v];
      nan |= nan_bits[from];
    }
    __syncthreads();
  }
  if (group == 0 && active) {
#pragma unroll
    for (int v = 0; v < V; ++v) {
      const int64_t c = c0 + v;
      float r = acc[v];
      if (max && ((nan >> v) & 1u)) r = NAN;
      if (partial) partial[(blockIdx.z * gridDim.y + n) * channels + c] = r;
      else y[n * channels + c] = Elem<T>::st(max ? r : r / static_cast<float>(area));
    }
  }
}

// y[i] = the slices' partials of element i (i over n * channels) combined: summed and divided by
// the area, or the max (NaN when any slice met one, as the one-slice kernel does).
template <typename T>
__global__ void global_pool_finish_kernel(bool max, const float* __restrict__ partial, T* __restrict__ y, int64_t nc,
                                          int slices, int64_t area) {
  GRAFT_GRID_STRIDE(i, nc) {
    float r = partial[i];
    bool nan = isnan(r);
    for (int z = 1; z < slices; ++z) {
      const float v = partial[z * nc + i];
      nan |= isnan(v);
      r = max ? fmaxf(r, v) : r + v;
    }
    if (max && nan) r = NAN;
    y[i] = Elem<T>::st(max ? r : r / static_cast<float>(area));
  }
}

// y = act(y + bias[channel] + z), channel = (i / inner) % channels (inner: H*W for NCHW, 1 for NHWC),
// V consecutive elements per thread. kNhwc (inner 1, channels a multiple of V): the V elements are V
// channels, whose biases are one vector load. Otherwise inner is a multiple of V and the V elements
// share one channel (V = 1 takes any shape). I is the index type: 32-bit where every index fits, as
// 64-bit division made this a compute-bound pass (MobileNetV2's ReLU6 epilogues after cuDNN at batch
// 32: 14.6 us for 4.8 MB on an H200, a seventh of the memory's bandwidth).
template <typename T, int V, typename I, bool kNhwc>
__global__ void conv_epilogue_kernel(T* __restrict__ y, const T* __restrict__ bias, const T* __restrict__ z,
                                     I channels, I inner, Epilogue e, I vectors) {
  for (I q = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x); q < vectors;
       q += static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x)) {
    const I i = q * V;
    Lanes<T, V> yv = *reinterpret_cast<const Lanes<T, V>*>(y + i), zv{}, bv{};
    if (z) zv = *reinterpret_cast<const Lanes<T, V>*>(z + i);
    if (bias) {
      if constexpr (kNhwc) {
        bv = *reinterpret_cast<const Lanes<T, V>*>(bias + i % channels);
      } else {
        const T b = bias[(i / inner) % channels];
#pragma unroll
        for (int j = 0; j < V; ++j) bv.v[j] = b;
      }
    }
#pragma unroll
    for (int j = 0; j < V; ++j) {
      float v = Elem<T>::ld(yv.v[j]);
      if (bias) v += Elem<T>::ld(bv.v[j]);
      if (z) v += Elem<T>::ld(zv.v[j]);
      yv.v[j] = Elem<T>::st(apply_epilogue(e, v));
    }
    *reinterpret_cast<Lanes<T, V>*>(y + i) = yv;
  }
}

template <typename T, typename I>
cudaError_t conv_epilogue_t(void* yv, const void* biasv, const void* zv, int64_t channels, int64_t inner, Epilogue e,
                            int64_t total, cudaStream_t s) {
  T* y = static_cast<T*>(yv);
  const T *bias = static_cast<const T*>(biasv), *z = static_cast<const T*>(zv);
  constexpr int V = 16 / sizeof(T);
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const bool vec = total % V == 0 && aligned(y) && aligned(z);
  if (vec && inner == 1 && channels % V == 0 && aligned(bias)) {
    conv_epilogue_kernel<T, V, I, true><<<grid_for(total / V), kThreads, 0, s>>>(
        y, bias, z, static_cast<I>(channels), I{1}, e, static_cast<I>(total / V));
  } else if (vec && inner % V == 0) {
    conv_epilogue_kernel<T, V, I, false><<<grid_for(total / V), kThreads, 0, s>>>(
        y, bias, z, static_cast<I>(channels), static_cast<I>(inner), e, static_cast<I>(total / V));
  } else {
    conv_epilogue_kernel<T, 1, I, false><<<grid_for(total), kThreads, 0, s>>>(
        y, bias, z, static_cast<I>(channels), static_cast<I>(inner), e, static_cast<I>(total));
  }
  return cudaGetLastError();
}

// V input elements with the window's input activation applied: 16-byte lanes through the shared
// out-of-line function; narrower ones (unaligned or few channels) element by element.
template <typename T, int V>
__device__ __forceinline__ Lanes<T, V> activated_lanes(const Window2d& g, Lanes<T, V> x) {
  if constexpr (sizeof(Lanes<T, V>) == 16) {
    const uint4 r = input_activated16<T>(*reinterpret_cast<const uint4*>(&x), g.in_act, g.in_lo, g.in_hi);
    return *reinterpret_cast<const Lanes<T, V>*>(&r);
  } else {
    const Epilogue ep{g.in_act, g.in_lo, g.in_hi};
#pragma unroll 1
    for (int v = 0; v < V; ++v) x.v[v] = Elem<T>::st(apply_epilogue(ep, Elem<T>::ld(x.v[v])));
    return x;
  }
}

// One output pixel's V channels of an NHWC depthwise convolution (the channels c0.., the output
// element `out`): the window sum over x and the epilogue, written as one vector. `tap_weight(ky, kx,
// v)` is channel c0 + v's weight at tap (ky, kx), wherever the kernel keeps its filter.
template <typename T, int V, typename I, typename W>
__device__ __forceinline__ void depthwise_nhwc_pixel(const T* __restrict__ x, const T* __restrict__ bias,
                                                     const T* __restrict__ z, T* __restrict__ y, const Window2d& g,
                                                     const Epilogue& e, I n, I oy, I ox, I c0, I out, W tap_weight) {
  const I c = static_cast<I>(g.c), wi = static_cast<I>(g.w), hi = static_cast<I>(g.h);
  const int kh = static_cast<int>(g.kh), kw = static_cast<int>(g.kw);
  float acc[V];
#pragma unroll
  for (int v = 0; v < V; ++v) acc[v] = 0.f;
  const I iy0 = oy * static_cast<I>(g.sh) - static_cast<I>(g.ph), ix0 = ox * static_cast<I>(g.sw) - static_cast<I>(g.pw);
  for (int ky = 0; ky < kh; ++ky) {
    const I iy = iy0 + ky * static_cast<I>(g.dh);
    if (iy < 0 || iy >= hi) continue;
    const T* row = x + ((n * hi + iy) * wi) * c + c0;
    for (int kx = 0; kx < kw; ++kx) {
      const I ix = ix0 + kx * static_cast<I>(g.dw);
      if (ix < 0 || ix >= wi) continue;
      Lanes<T, V> xv = *reinterpret_cast<const Lanes<T, V>*>(row + ix * c);
      if (g.in_act) xv = activated_lanes(g, xv);
#pragma unroll
      for (int v = 0; v < V; ++v) acc[v] += Elem<T>::ld(xv.v[v]) * tap_weight(ky, kx, v);
    }
  }
  Lanes<T, V> zv;
  if (z) zv = *reinterpret_cast<const Lanes<T, V>*>(z + out);
  Lanes<T, V> yv;
#pragma unroll
  for (int v = 0; v < V; ++v) {
    float r = acc[v];
    if (bias) r += Elem<T>::ld(bias[c0 + v]);
    if (z) r += Elem<T>::ld(zv.v[v]);
    yv.v[v] = Elem<T>::st(apply_epilogue(e, r));
  }
  *reinterpret_cast<Lanes<T, V>*>(y + out) = yv;
}

template <typename T, int V, typename I>
__global__ void depthwise_conv_nhwc_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                                           const T* __restrict__ z, T* __restrict__ y, Window2d g, Epilogue e, I total) {
  const I cv = static_cast<I>(g.c / V), ow = static_cast<I>(g.ow), oh = static_cast<I>(g.oh);
  const int kh = static_cast<int>(g.kh), kw = static_cast<int>(g.kw);
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += static_cast<I>(gridDim.x) * blockDim.x) {
    const I c0 = (i % cv) * V;
    I t = i / cv;
    const I ox = t % ow;
    t /= ow;
    const I oy = t % oh, n = t / oh;
    const T* wc = w + c0 * (kh * kw);
    depthwise_nhwc_pixel<T, V, I>(x, bias, z, y, g, e, n, oy, ox, c0, ((n * oh + oy) * ow + ox) * static_cast<I>(g.c) + c0,
                                  [&](int ky, int kx, int v) { return Elem<T>::ld(wc[v * kh * kw + ky * kw + kx]); });
  }
}

// Stages the filter taps of the block's chunk of cw channels (from channel cbase) into shared
// memory as float, tap-major ([taps][cw]), and waits for the whole block. Consecutive threads read
// consecutive filter elements: the chunk is one contiguous run of w ([c, kh, kw]).
template <typename T>
__device__ __forceinline__ void stage_dw_taps(const T* __restrict__ w, int64_t cbase, int taps, int cw, float* taps_s) {
  const int d = static_cast<int>(blockDim.x);
  const int tid = static_cast<int>(threadIdx.y) * d + static_cast<int>(threadIdx.x), nthreads = d * static_cast<int>(blockDim.y);
  for (int i = tid; i < taps * cw; i += nthreads) {
    const int cc = i / taps, tap = i - cc * taps;
    taps_s[tap * cw + cc] = Elem<T>::ld(w[cbase * taps + i]);
  }
  __syncthreads();
}

// The same convolution with the filter staged in shared memory. Threads are (d, ty): threadIdx.x is
// one of the block's d channel vectors (a chunk of d * V channels, blockIdx.y picks it), threadIdx.y
// a pixel lane. The chunk's taps sit in shared memory as float, tap-major ([kh * kw][d * V]), so a
// tap's V weights are contiguous shared reads. In the filter's own layout [c, kh, kw] a pixel's V
// channel weights lie kh * kw elements apart: V scattered loads per tap, which, not the input,
// bounded the kernel above (ConvNeXt's 7x7 over 96 channels at 56x56, batch 32: 0.26 ms, against
// 0.18 ms for graft's NCHW kernel, so the NHWC engine lost and ConvNeXt kept 54 transposes).
// A warp is d channel vectors of 32 / d neighbouring pixels: its x reads are whole 16-byte vectors
// of a few contiguous pixel rows.
template <typename T, int V, typename I>
__global__ void depthwise_conv_nhwc_smem_kernel(const T* __restrict__ x, const T* __restrict__ w,
                                                const T* __restrict__ bias, const T* __restrict__ z, T* __restrict__ y,
                                                Window2d g, Epilogue e, I pixels) {
  extern __shared__ float dw_taps[];
  const int d = static_cast<int>(blockDim.x), kh = static_cast<int>(g.kh), kw = static_cast<int>(g.kw);
  const int taps = kh * kw, cw = d * V;
  const I c = static_cast<I>(g.c), ow = static_cast<I>(g.ow), oh = static_cast<I>(g.oh);
  const I cbase = static_cast<I>(blockIdx.y) * cw;
  stage_dw_taps(w, static_cast<int64_t>(cbase), taps, cw, dw_taps);
  const I c0 = cbase + static_cast<I>(threadIdx.x) * V;
  const float* wv = dw_taps + threadIdx.x * V;
  for (I p = static_cast<I>(blockIdx.x) * blockDim.y + threadIdx.y; p < pixels; p += static_cast<I>(gridDim.x) * blockDim.y) {
    const I ox = p % ow;
    const I t = p / ow;
    depthwise_nhwc_pixel<T, V, I>(x, bias, z, y, g, e, t / oh, t % oh, ox, c0, p * c + c0,
                                  [&](int ky, int kx, int v) { return wv[(ky * kw + kx) * cw + v]; });
  }
}

// The common filters (square K = 3, 5, 7, stride S = 1 or 2, no dilation) with the taps staged as
// above, but each thread computes TX consecutive output pixels of one row: a filter row then reads
// (TX - 1) * S + K input vectors into registers, once, instead of TX * K, and with K, S and TX known
// at compile time the loads of a row are issued together instead of one tap's load waiting for the
// last (the runtime-K kernel spent 0.22 ms on ConvNeXt's 7x7 over 96 channels at 56x56, batch 32 in
// float16, about a tenth of the memory bandwidth). Accumulation is in float, as in the kernels above.
constexpr int kDwTileX = 4;

// At most 128 registers, so two 256-thread blocks share an SM (the stride-2 forms take up to 138 without the bound).
template <typename T, int V, int K, int S, int TX>
__global__ void __launch_bounds__(256, 2) depthwise_conv_nhwc_tiled_kernel(const T* __restrict__ x, const T* __restrict__ w,
                                                 const T* __restrict__ bias, const T* __restrict__ z,
                                                 T* __restrict__ y, Window2d g, Epilogue e, int32_t groups,
                                                 int32_t tiles_w) {
  extern __shared__ float dw_taps[];
  constexpr int kTaps = K * K, kIn = (TX - 1) * S + K;
  const int d = static_cast<int>(blockDim.x), cw = d * V;
  const int32_t c = static_cast<int32_t>(g.c), wi = static_cast<int32_t>(g.w), hi = static_cast<int32_t>(g.h);
  const int32_t ow = static_cast<int32_t>(g.ow), oh = static_cast<int32_t>(g.oh);
  const int32_t cbase = static_cast<int32_t>(blockIdx.y) * cw;
  stage_dw_taps(w, static_cast<int64_t>(cbase), kTaps, cw, dw_taps);
  const int32_t c0 = cbase + static_cast<int32_t>(threadIdx.x) * V;
  const float* wv = dw_taps + threadIdx.x * V;
  for (int32_t p = static_cast<int32_t>(blockIdx.x) * static_cast<int32_t>(blockDim.y) + static_cast<int32_t>(threadIdx.y);
       p < groups; p += static_cast<int32_t>(gridDim.x * blockDim.y)) {
    const int32_t ox0 = (p % tiles_w) * TX;
    const int32_t t = p / tiles_w;
    const int32_t oy = t % oh, n = t / oh;
    const int32_t iy0 = oy * S - static_cast<int32_t>(g.ph), ix0 = ox0 * S - static_cast<int32_t>(g.pw);
    float acc[TX][V];
#pragma unroll
    for (int o = 0; o < TX; ++o)
#pragma unroll
      for (int v = 0; v < V; ++v) acc[o][v] = 0.f;
#pragma unroll
    for (int ky = 0; ky < K; ++ky) {
      const int32_t iy = iy0 + ky;
      if (iy < 0 || iy >= hi) continue;
      const T* row = x + ((n * hi + iy) * wi) * c + c0;
      Lanes<T, V> xs[kIn];
#pragma unroll
      for (int j = 0; j < kIn; ++j) {
        const int32_t ix = ix0 + j;
        if (ix >= 0 && ix < wi) {
          xs[j] = *reinterpret_cast<const Lanes<T, V>*>(row + ix * c);
          if (g.in_act) xs[j] = activated_lanes(g, xs[j]);
        } else {
#pragma unroll
          for (int v = 0; v < V; ++v) xs[j].v[v] = Elem<T>::st(0.f);
        }
      }
#pragma unroll
      for (int kx = 0; kx < K; ++kx) {
        float wk[V];
#pragma unroll
        for (int v = 0; v < V; ++v) wk[v] = wv[(ky * K + kx) * cw + v];
#pragma unroll
        for (int o = 0; o < TX; ++o)
#pragma unroll
          for (int v = 0; v < V; ++v) acc[o][v] += Elem<T>::ld(xs[o * S + kx].v[v]) * wk[v];
      }
    }
#pragma unroll
    for (int o = 0; o < TX; ++o) {
      if (ox0 + o >= ow) break;
      const int32_t out = ((n * oh + oy) * ow + ox0 + o) * c + c0;
      Lanes<T, V> zv;
      if (z) zv = *reinterpret_cast<const Lanes<T, V>*>(z + out);
      Lanes<T, V> yv;
#pragma unroll
      for (int v = 0; v < V; ++v) {
        float r = acc[o][v];
        if (bias) r += Elem<T>::ld(bias[c0 + v]);
        if (z) r += Elem<T>::ld(zv.v[v]);
        yv.v[v] = Elem<T>::st(apply_epilogue(e, r));
      }
      *reinterpret_cast<Lanes<T, V>*>(y + out) = yv;
    }
  }
}

// The launch shape both staged-taps kernels share: d is the largest divisor of the c / V channel
// vectors up to 8 (so chunks tile the channels exactly) whose chunk of taps fits 48 KB of shared
// memory; 256 / d pixel lanes; each lane covers a few of the `units` (pixels, or row tiles) so the
// staging is paid once per block, unless that leaves too few blocks to fill the GPU. false when the
// filter does not fit even for one vector of channels.
struct DwLaunch {
  dim3 grid, block;
  size_t smem = 0;
};
bool depthwise_nhwc_launch(int64_t cv, int64_t taps, int v, int64_t units, DwLaunch* l) {
  int d = 8;
  while (d > 1 && (cv % d != 0 || static_cast<size_t>(taps * d * v) * sizeof(float) > 48 * 1024)) --d;
  l->smem = static_cast<size_t>(taps * d * v) * sizeof(float);
  if (l->smem > 48 * 1024 || cv / d > 65535) return false;
  const int ty = 256 / d;
  const int64_t chunks = cv / d;
  const int64_t one_each = (units + ty - 1) / ty;
  const int64_t blocks_x = std::max<int64_t>(1, std::min(one_each, std::max((one_each + 3) / 4, (1024 + chunks - 1) / chunks)));
  l->grid = dim3(static_cast<unsigned>(std::min<int64_t>(blocks_x, 1 << 30)), static_cast<unsigned>(chunks));
  l->block = dim3(static_cast<unsigned>(d), static_cast<unsigned>(ty));
  return true;
}

// The tiled kernel where it applies: the widest lanes (16 bytes), 32-bit indices and a filter it is
// compiled for. false where it does not (the caller runs the general kernels).
template <typename T, int V, int K, int S>
bool depthwise_nhwc_tiled_launch(const void* x, const void* w, const void* bias, const void* z, void* y,
                                 const Window2d& g, Epilogue e, cudaStream_t s) {
  const int64_t tiles_w = (g.ow + kDwTileX - 1) / kDwTileX, groups = g.n * g.oh * tiles_w;
  DwLaunch l;
  if (groups >= (int64_t{1} << 30) || !depthwise_nhwc_launch(g.c / V, K * K, V, groups, &l)) return false;
  depthwise_conv_nhwc_tiled_kernel<T, V, K, S, kDwTileX><<<l.grid, l.block, l.smem, s>>>(
      static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(bias), static_cast<const T*>(z),
      static_cast<T*>(y), g, e, static_cast<int32_t>(groups), static_cast<int32_t>(tiles_w));
  return true;
}

template <typename T, int V>
bool depthwise_nhwc_tiled(const void* x, const void* w, const void* bias, const void* z, void* y, const Window2d& g,
                          Epilogue e, cudaStream_t s, bool int32) {
  if constexpr (V * sizeof(T) != 16) {
    return false;
  } else {
    if (!int32 || !depthwise_nhwc_row_tiled_supported(g)) return false;
    const int64_t k = g.kh, st = g.sh;
#define GRAFT_DW_TILED(KK, SS) \
  if (k == KK && st == SS) return depthwise_nhwc_tiled_launch<T, V, KK, SS>(x, w, bias, z, y, g, e, s);
    GRAFT_DW_TILED(3, 1) GRAFT_DW_TILED(3, 2) GRAFT_DW_TILED(5, 1) GRAFT_DW_TILED(5, 2) GRAFT_DW_TILED(7, 1)
    GRAFT_DW_TILED(7, 2)
#undef GRAFT_DW_TILED
    return false;
  }
}

template <typename T, int V>
bool depthwise_nhwc_smem(const void* x, const void* w, const void* bias, const void* z, void* y, const Window2d& g,
                         Epilogue e, cudaStream_t s, bool int32) {
  const int64_t pixels = g.n * g.oh * g.ow;
  DwLaunch l;
  if (!depthwise_nhwc_launch(g.c / V, g.kh * g.kw, V, pixels, &l)) return false;
  if (int32)
    depthwise_conv_nhwc_smem_kernel<T, V, int32_t><<<l.grid, l.block, l.smem, s>>>(
        static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(bias), static_cast<const T*>(z),
        static_cast<T*>(y), g, e, static_cast<int32_t>(pixels));
  else
    depthwise_conv_nhwc_smem_kernel<T, V, int64_t><<<l.grid, l.block, l.smem, s>>>(
        static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(bias), static_cast<const T*>(z),
        static_cast<T*>(y), g, e, pixels);
  return true;
}

template <typename T, int V>
cudaError_t depthwise_nhwc_t(const void* x, const void* w, const void* bias, const void* z, void* y, const Window2d& g,
                             Epilogue e, cudaStream_t s, bool int32, bool row_tiled) {
  if (row_tiled && depthwise_nhwc_tiled<T, V>(x, w, bias, z, y, g, e, s, int32)) return cudaGetLastError();
  if (depthwise_nhwc_smem<T, V>(x, w, bias, z, y, g, e, s, int32)) return cudaGetLastError();
  // Filters too large for shared memory: the per-tap global reads.
  const int64_t total = g.n * g.oh * g.ow * (g.c / V);
  if (int32)
    depthwise_conv_nhwc_kernel<T, V, int32_t><<<grid_for(total), kThreads, 0, s>>>(
        static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(bias), static_cast<const T*>(z),
        static_cast<T*>(y), g, e, static_cast<int32_t>(total));
  else
    depthwise_conv_nhwc_kernel<T, V, int64_t><<<grid_for(total), kThreads, 0, s>>>(
        static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(bias), static_cast<const T*>(z),
        static_cast<T*>(y), g, e, total);
  return cudaGetLastError();
}

// Widest lane count (16 bytes at most) that divides the channels and whose vector width every
// vector-accessed pointer (x, z, y; a view may start mid-buffer) is aligned to.
template <typename T>
cudaError_t depthwise_nhwc_dispatch(const void* x, const void* w, const void* bias, const void* z, void* y,
                                    const Window2d& g, Epilogue e, cudaStream_t s, bool int32, bool row_tiled) {
  const auto addr = reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y) | reinterpret_cast<uintptr_t>(z);
  auto fits = [&](int v) { return g.c % v == 0 && addr % (sizeof(T) * static_cast<size_t>(v)) == 0; };
  constexpr int kMax = 16 / static_cast<int>(sizeof(T));
  if (fits(kMax)) return depthwise_nhwc_t<T, kMax>(x, w, bias, z, y, g, e, s, int32, row_tiled);
  if (kMax > 4 && fits(4)) return depthwise_nhwc_t<T, (kMax > 4 ? 4 : 1)>(x, w, bias, z, y, g, e, s, int32, false);
  if (fits(2)) return depthwise_nhwc_t<T, 2>(x, w, bias, z, y, g, e, s, int32, false);
  return depthwise_nhwc_t<T, 1>(x, w, bias, z, y, g, e, s, int32, false);
}

// ---- Depthwise convolution over NCHW ----
//
// One block computes one output tile of one (n, c) plane. The input tile with its halo and the
// plane's kh*kw weights are staged once in shared memory as float (zeros where the window reaches
// into the padding, so the inner loop has no bounds checks); every tap then reads shared memory
// instead of re-reading global memory through the cache, which is what makes cuDNN's legacy NCHW
// depthwise path slow (ConvNeXt's 7x7 at batch 32 ran at ~96 GB/s on an H200).
//
// Threads are (TW, 8): threadIdx.x is the output column, so a warp's shared reads of one tap are
// consecutive words (conflict-free at stride 1) and its stores are coalesced; each thread owns R
// consecutive output rows, so the tile is TW x 8R.
constexpr int kDwRowsOfThreads = 8;
constexpr size_t kMaxDynamicShared = 48 * 1024;  // the default dynamic shared-memory limit, no opt-in needed

template <typename T, int K, int R>
__global__ void __launch_bounds__(256, 1)
    depthwise_conv_nchw_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                               const T* __restrict__ z, T* __restrict__ y, Window2d g, Epilogue e, int tiles_w,
                               int in_rows, int in_cols) {
  extern __shared__ float dw_smem[];
  const int kh = K > 0 ? K : static_cast<int>(g.kh), kw = K > 0 ? K : static_cast<int>(g.kw);
  float* w_s = dw_smem;
  float* x_s = dw_smem + kh * kw;
  const int64_t plane = blockIdx.x;
  const int64_t ch = plane % g.c;
  const int tile_y = static_cast<int>(blockIdx.y) / tiles_w, tile_x = static_cast<int>(blockIdx.y) - tile_y * tiles_w;
  const int64_t oy0 = static_cast<int64_t>(tile_y) * (blockDim.y * R), ox0 = static_cast<int64_t>(tile_x) * blockDim.x;
  const int64_t iy0 = oy0 * g.sh - g.ph, ix0 = ox0 * g.sw - g.pw;
  const T* xp = x + plane * g.h * g.w;
  const int tid = threadIdx.y * blockDim.x + threadIdx.x, nthreads = blockDim.x * blockDim.y;
  for (int i = tid; i < kh * kw; i += nthreads) w_s[i] = Elem<T>::ld(w[ch * kh * kw + i]);
  // Rows by threadIdx.y and columns by threadIdx.x: consecutive threads read consecutive input
  // columns (coalesced), and no index division is needed.
  for (int r = threadIdx.y; r < in_rows; r += blockDim.y) {
    const int64_t iy = iy0 + r;
    const bool row_in = iy >= 0 && iy < g.h;
    const T* xrow = xp + iy * g.w;
    for (int col = threadIdx.x; col < in_cols; col += blockDim.x) {
      const int64_t ix = ix0 + col;
      x_s[r * in_cols + col] = row_in && ix >= 0 && ix < g.w ? Elem<T>::ld(xrow[ix]) : 0.f;
    }
  }
  __syncthreads();

  const int r0 = threadIdx.y * R;  // this thread's first tile row
  const int sw = static_cast<int>(g.sw), dw = static_cast<int>(g.dw);
  const float* xs = x_s + threadIdx.x * sw;
  float acc[R];
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = 0.f;
  if constexpr (K > 0) {
    // Square K x K filter with row stride and dilation 1: input row r0 + i feeds output row r0 + r
    // through tap ky = i - r, so each staged value is read once for all R rows it contributes to
    // (R + K - 1 rows read instead of R * K) and the weights sit in registers.
    float wr[K * K];
#pragma unroll
    for (int i = 0; i < K * K; ++i) wr[i] = w_s[i];
#pragma unroll
    for (int i = 0; i < R + K - 1; ++i) {
      const float* row = xs + (r0 + i) * in_cols;
#pragma unroll
      for (int kx = 0; kx < K; ++kx) {
        const float xv = row[kx * dw];
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const int ky = i - r;
          if (ky >= 0 && ky < K) acc[r] += xv * wr[ky * K + kx];
        }
      }
    }
  } else {
    const int sh = static_cast<int>(g.sh), dh = static_cast<int>(g.dh);
    for (int ky = 0; ky < kh; ++ky)
      for (int kx = 0; kx < kw; ++kx) {
        const float wv = w_s[ky * kw + kx];
        const float* col = xs + ky * dh * in_cols + kx * dw;
#pragma unroll
        for (int r = 0; r < R; ++r) acc[r] += col[(r0 + r) * sh * in_cols] * wv;
      }
  }

  const int64_t ox = ox0 + threadIdx.x;
  if (ox >= g.ow) return;
  const float b = bias ? Elem<T>::ld(bias[ch]) : 0.f;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t oy = oy0 + r0 + r;
    if (oy >= g.oh) break;
    const int64_t o = (plane * g.oh + oy) * g.ow + ox;
    float v = acc[r] + b;
    if (z) v += Elem<T>::ld(z[o]);
    y[o] = Elem<T>::st(apply_epilogue(e, v));
  }
}

// The tile of one NCHW depthwise launch: TW output columns (threads along x), R rows per thread.
struct DwNchwTile {
  int tw = 32, r = 4;
  int in_rows = 0, in_cols = 0;
  int64_t tiles_w = 0, tiles = 0;
  size_t smem = 0;
};

// Fills `t` for a TW x 8R tile; false when it needs more than kMaxDynamicShared bytes or more than
// 65535 tiles (grid.y) per plane.
bool dw_nchw_tile(const Window2d& g, int tw, int r, DwNchwTile* t) {
  const int64_t th = int64_t{kDwRowsOfThreads} * r;
  const int64_t rows = (th - 1) * g.sh + (g.kh - 1) * g.dh + 1, cols = (tw - 1) * g.sw + (g.kw - 1) * g.dw + 1;
  const int64_t floats = rows * cols + g.kh * g.kw;
  // Each factor is checked before the product, so a huge stride or kernel cannot overflow it.
  if (rows > int64_t{kMaxDynamicShared} || cols > int64_t{kMaxDynamicShared} || g.kh * g.kw > int64_t{kMaxDynamicShared} ||
      floats * 4 > static_cast<int64_t>(kMaxDynamicShared))
    return false;
  const int64_t tiles_w = (g.ow + tw - 1) / tw, tiles = tiles_w * ((g.oh + th - 1) / th);
  if (tiles > 65535) return false;
  *t = DwNchwTile{tw, r, static_cast<int>(rows), static_cast<int>(cols), tiles_w, tiles, static_cast<size_t>(floats) * 4};
  return true;
}

// The tile shape follows the output plane, so a 7x7 or 14x14 plane (ConvNeXt's later stages) does
// not leave most of a 32x32 tile's threads idle; a problem whose preferred tile does not fit
// shared memory retries with the smallest tile before it is refused.
bool dw_nchw_plan(const Window2d& g, DwNchwTile* t) {
  if (g.n * g.c > 0x7fffffffLL || g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1 || g.kh < 1 || g.kw < 1) return false;
  int tw = 32, r = 4;
  if (g.ow <= 8 && g.oh <= 8) {
    tw = 8; r = 1;
  } else if (g.ow <= 16 && g.oh <= 16) {
    tw = 16; r = 2;
  }
  return dw_nchw_tile(g, tw, r, t) || dw_nchw_tile(g, 8, 1, t);
}

template <typename T, int K, int R>
cudaError_t dw_nchw_t(const void* x, const void* w, const void* bias, const void* z, void* y, const Window2d& g,
                      Epilogue e, const DwNchwTile& t, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>(g.n * g.c), static_cast<unsigned>(t.tiles));
  const dim3 block(static_cast<unsigned>(t.tw), kDwRowsOfThreads);
  depthwise_conv_nchw_kernel<T, K, R><<<grid, block, t.smem, s>>>(
      static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(bias), static_cast<const T*>(z),
      static_cast<T*>(y), g, e, static_cast<int>(t.tiles_w), t.in_rows, t.in_cols);
  return cudaGetLastError();
}

template <typename T, int K>
cudaError_t dw_nchw_rows(const void* x, const void* w, const void* bias, const void* z, void* y, const Window2d& g,
                         Epilogue e, const DwNchwTile& t, cudaStream_t s) {
  switch (t.r) {
    case 1: return dw_nchw_t<T, K, 1>(x, w, bias, z, y, g, e, t, s);
    case 2: return dw_nchw_t<T, K, 2>(x, w, bias, z, y, g, e, t, s);
    default: return dw_nchw_t<T, K, 4>(x, w, bias, z, y, g, e, t, s);
  }
}

// The common square filters with row stride and dilation 1 (ConvNeXt's 7x7, MobileNet's 3x3 and
// 5x5) get the register-blocked path; everything else the generic one.
template <typename T>
cudaError_t dw_nchw_dispatch(const void* x, const void* w, const void* bias, const void* z, void* y, const Window2d& g,
                             Epilogue e, const DwNchwTile& t, cudaStream_t s) {
  const bool rows_unit = g.sh == 1 && g.dh == 1 && g.kh == g.kw;
  if (rows_unit && g.kh == 3) return dw_nchw_rows<T, 3>(x, w, bias, z, y, g, e, t, s);
  if (rows_unit && g.kh == 5) return dw_nchw_rows<T, 5>(x, w, bias, z, y, g, e, t, s);
  if (rows_unit && g.kh == 7) return dw_nchw_rows<T, 7>(x, w, bias, z, y, g, e, t, s);
  return dw_nchw_rows<T, 0>(x, w, bias, z, y, g, e, t, s);
}

// ---- Pointwise (1x1, stride 1, no padding, one group) convolution over NHWC ----
//
// A GEMM y[P, m] = x[P, c] * w[m, c]^T with a small c (MobileNetV2/EfficientNet expansions: 16 or
// 24 input channels into 96 or 144): memory-bound on the output, which cuDNN's legacy NHWC path
// writes at well under the bandwidth. A block stages the whole weight matrix once, transposed to
// [c][m] so the threads of one pixel read consecutive words, then walks pixel tiles of kPwPixels:
// each tile is staged as float, and a thread computes V consecutive output channels (one 16-byte
// store in the vector case) of kPwRows pixels, so each weight read from shared memory serves
// kPwRows pixels and each x read V channels.
constexpr int kPwPixels = 64;
constexpr int kPwRows = 4;
constexpr int kPwQuads = kPwPixels / kPwRows;  // pixel groups of a tile: pixels q, q + 16, q + 32, q + 48

// x tile row stride: odd, so the pixels a warp reads at once fall in different banks.
__host__ __device__ constexpr int pw_x_stride(int c) { return c % 2 ? c : c + 1; }

int64_t pw_shared_floats(int64_t c, int64_t m) { return c * m + int64_t{kPwPixels} * pw_x_stride(static_cast<int>(c)); }

// __launch_bounds__(256, 1) on both kernels: with the default occupancy target ptxas kept the
// float16 8-lane pointwise variant (and the 3x3 depthwise one) at 64 registers and spilled.
template <typename T, int V>
__global__ void __launch_bounds__(256, 1)
    pointwise_conv_nhwc_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                               const T* __restrict__ z, T* __restrict__ y, int64_t pixels, int c, int m, Epilogue e,
                               int64_t tiles) {
  // float4 so the dynamic shared memory is 16-byte aligned for the vector weight reads.
  extern __shared__ float4 pw_smem4[];
  float* w_s = reinterpret_cast<float*>(pw_smem4);  // [c][m]
  const int xs = pw_x_stride(c);
  float* x_s = w_s + c * m;  // [kPwPixels][xs]
  for (int i = threadIdx.x; i < c * m; i += blockDim.x) {
    const int co = i / c, ci = i - co * c;
    w_s[ci * m + co] = Elem<T>::ld(w[i]);
  }
  const int groups = m / V, items = kPwQuads * groups;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t p0 = tile * kPwPixels;
    const int np = static_cast<int>(pixels - p0 < kPwPixels ? pixels - p0 : kPwPixels);
    __syncthreads();  // the previous tile's reads of x_s are done (and, first time, w_s is staged)
    // The tile is np * c consecutive elements of x: coalesced whatever c is. Pixels past the end
    // are zeros (computed, never stored).
    const T* xt = x + p0 * c;
    for (int i = threadIdx.x; i < kPwPixels * c; i += blockDim.x) {
      const int p = i / c;
      x_s[p * xs + (i - p * c)] = p < np ? Elem<T>::ld(xt[i]) : 0.f;
    }
    __syncthreads();
    for (int it = threadIdx.x; it < items; it += blockDim.x) {
      const int q = it / groups, co = (it - q * groups) * V;
      float acc[kPwRows][V];
#pragma unroll
      for (int r = 0; r < kPwRows; ++r)
#pragma unroll
        for (int v = 0; v < V; ++v) acc[r][v] = 0.f;
      const float* xq = x_s + q * xs;
      for (int ci = 0; ci < c; ++ci) {
        float wv[V];
        const float* wp = w_s + ci * m + co;
        if constexpr (V % 4 == 0) {
#pragma unroll
          for (int v = 0; v < V; v += 4) {
            const float4 f = *reinterpret_cast<const float4*>(wp + v);
            wv[v] = f.x; wv[v + 1] = f.y; wv[v + 2] = f.z; wv[v + 3] = f.w;
          }
        } else {
#pragma unroll
          for (int v = 0; v < V; ++v) wv[v] = wp[v];
        }
#pragma unroll
        for (int r = 0; r < kPwRows; ++r) {
          const float xv = xq[r * kPwQuads * xs + ci];
#pragma unroll
          for (int v = 0; v < V; ++v) acc[r][v] += xv * wv[v];
        }
      }
      float bv[V];
#pragma unroll
      for (int v = 0; v < V; ++v) bv[v] = bias ? Elem<T>::ld(bias[co + v]) : 0.f;
#pragma unroll
      for (int r = 0; r < kPwRows; ++r) {
        const int p = q + r * kPwQuads;
        if (p >= np) break;
        const int64_t o = (p0 + p) * m + co;
        Lanes<T, V> zv;
        if (z) zv = *reinterpret_cast<const Lanes<T, V>*>(z + o);
        Lanes<T, V> yv;
#pragma unroll
        for (int v = 0; v < V; ++v) {
          float s = acc[r][v] + bv[v];
          if (z) s += Elem<T>::ld(zv.v[v]);
          yv.v[v] = Elem<T>::st(apply_epilogue(e, s));
        }
        *reinterpret_cast<Lanes<T, V>*>(y + o) = yv;
      }
    }
  }
}

template <typename T, int V>
cudaError_t pointwise_nhwc_t(const void* x, const void* w, const void* bias, const void* z, void* y, int64_t pixels,
                             int c, int m, Epilogue e, cudaStream_t s) {
  const int items = kPwQuads * (m / V);
  const int threads = items >= 256 ? 256 : (items + 31) / 32 * 32;
  const size_t smem = static_cast<size_t>(pw_shared_floats(c, m)) * sizeof(float);
  const int64_t tiles = (pixels + kPwPixels - 1) / kPwPixels;
  // One resident wave of blocks walking the pixel tiles: each block stages the weights once and
  // reuses them for every tile it takes.
  int sms = 0, per_sm = 0;
  cudaError_t err = current_multiprocessors(&sms);
  if (err == cudaSuccess)
    err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, pointwise_conv_nhwc_kernel<T, V>, threads, smem);
  if (err != cudaSuccess) return err;
  const int64_t wave = static_cast<int64_t>(sms > 0 ? sms : 1) * (per_sm > 0 ? per_sm : 1);
  const unsigned grid = static_cast<unsigned>(tiles < wave ? tiles : wave);
  pointwise_conv_nhwc_kernel<T, V><<<grid, threads, smem, s>>>(
      static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(bias), static_cast<const T*>(z),
      static_cast<T*>(y), pixels, c, m, e, tiles);
  return cudaGetLastError();
}

// Widest lane count (16 bytes at most) that divides m and that the vector-accessed y and z are
// aligned to; x and w are read element by element into shared memory, so they need no alignment.
template <typename T>
cudaError_t pointwise_nhwc_dispatch(const void* x, const void* w, const void* bias, const void* z, void* y,
                                    int64_t pixels, int c, int m, Epilogue e, cudaStream_t s) {
  const auto addr = reinterpret_cast<uintptr_t>(y) | reinterpret_cast<uintptr_t>(z);
  auto fits = [&](int v) { return m % v == 0 && addr % (sizeof(T) * static_cast<size_t>(v)) == 0; };
  constexpr int kMax = 16 / static_cast<int>(sizeof(T));
  if (fits(kMax)) return pointwise_nhwc_t<T, kMax>(x, w, bias, z, y, pixels, c, m, e, s);
  if (kMax > 4 && fits(4)) return pointwise_nhwc_t<T, (kMax > 4 ? 4 : 1)>(x, w, bias, z, y, pixels, c, m, e, s);
  if (fits(2)) return pointwise_nhwc_t<T, 2>(x, w, bias, z, y, pixels, c, m, e, s);
  return pointwise_nhwc_t<T, 1>(x, w, bias, z, y, pixels, c, m, e, s);
}

template <typename T>
__global__ void global_pool_kernel(bool max, const T* __restrict__ x, T* __restrict__ y, int64_t area) {
  __shared__ float sh[32];
  const T* xp = x + blockIdx.x * area;
  float acc = max ? -INFINITY : 0.f;
  bool nan = false;
  for (int64_t i = threadIdx.x; i < area; i += blockDim.x) {
    float v = Elem<T>::ld(xp[i]);
    if (max) {
      nan |= isnan(v);
      acc = fmaxf(acc, v);
    } else {
      acc += v;
    }
  }
  float r = max ? block_max(acc, sh) : block_sum(acc, sh);
  int any_nan = __syncthreads_or(nan ? 1 : 0);
  if (threadIdx.x == 0) y[blockIdx.x] = Elem<T>::st(max ? (any_nan ? NAN : r) : r / static_cast<float>(area));
}

template <typename T, typename P>
__global__ void batchnorm_kernel(const T* __restrict__ x, const P* __restrict__ scale, const P* __restrict__ bias,
                                 const P* __restrict__ mean, const P* __restrict__ var, T* __restrict__ y, int64_t c,
                                 int64_t inner, float eps, int64_t total) {
  GRAFT_GRID_STRIDE(i, total) {
    int64_t ch = (i / inner) % c;
    float inv = rsqrtf(Elem<P>::ld(var[ch]) + eps);
    float v = (Elem<T>::ld(x[i]) - Elem<P>::ld(mean[ch])) * inv * Elem<P>::ld(scale[ch]) + Elem<P>::ld(bias[ch]);
    y[i] = Elem<T>::st(v);
  }
}

template <typename T>
cudaError_t bn_t(KType pt, const void* x, const void* sc, const void* b, const void* m, const void* v, void* y,
                 int64_t n, int64_t c, int64_t inner, float eps, cudaStream_t s) {
  const int64_t total = n * c * inner;
  const T* px = static_cast<const T*>(x);
  T* py = static_cast<T*>(y);
  switch (pt) {
#define GRAFT_BN(P)                                                                                           \
  batchnorm_kernel<T, P><<<grid_for(total), kThreads, 0, s>>>(px, static_cast<const P*>(sc), static_cast<const P*>(b), \
                                                             static_cast<const P*>(m), static_cast<const P*>(v), py, c, \
                                                             inner, eps, total);                              \
  break;
    case KType::kF32: GRAFT_BN(float)
    case KType::kF16: GRAFT_BN(__half)
    case KType::kBF16: GRAFT_BN(__nv_bfloat16)
#undef GRAFT_BN
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_conv2d_direct(KType t, const void* x, const void* w, const void* b, void* y, const Window2d& g,
                                 int64_t M, int64_t group, cudaStream_t s) {
  const int64_t total = g.n * M * g.oh * g.ow;
  if (total == 0) return cudaSuccess;
  GRAFT_FLOAT_DISPATCH(t, (conv2d_direct_kernel<T><<<grid_for(total), kThreads, 0, s>>>(
                              static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(b),
                              static_cast<T*>(y), g, M, group, total)));
  return cudaGetLastError();
}

cudaError_t launch_conv3d_direct(KType t, const void* x, const void* w, const void* b, void* y, const Window3d& g,
                                 int64_t M, int64_t group, cudaStream_t s) {
  const int64_t total = g.n * M * g.out[0] * g.out[1] * g.out[2];
  if (total == 0) return cudaSuccess;
  if (group < 1 || M % group != 0 || g.c % group != 0) return cudaErrorInvalidValue;
  GRAFT_FLOAT_DISPATCH(t, (conv3d_direct_kernel<T><<<grid_for(total), kThreads, 0, s>>>(
                              static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(b),
                              static_cast<T*>(y), g, M, group, total)));
  return cudaGetLastError();
}

cudaError_t launch_pool3d(KType t, PoolKind kind, const void* x, void* y, const Window3d& g, cudaStream_t s) {
  const int64_t total = g.n * g.c * g.out[0] * g.out[1] * g.out[2];
  if (total == 0) return cudaSuccess;
  // MaxPool of int8 and uint8 (opset 12): the maximum is one of the inputs, exact in float.
  if (t == KType::kU8 || t == KType::kI8) {
    if (kind != PoolKind::kMax) return cudaErrorInvalidValue;
    if (t == KType::kU8)
      pool3d_kernel<uint8_t><<<grid_for(total), kThreads, 0, s>>>(kind, static_cast<const uint8_t*>(x),
                                                                  static_cast<uint8_t*>(y), g, total);
    else
      pool3d_kernel<int8_t><<<grid_for(total), kThreads, 0, s>>>(kind, static_cast<const int8_t*>(x),
                                                                 static_cast<int8_t*>(y), g, total);
    return cudaGetLastError();
  }
  GRAFT_FLOAT_DISPATCH(t, (pool3d_kernel<T><<<grid_for(total), kThreads, 0, s>>>(kind, static_cast<const T*>(x),
                                                                                   static_cast<T*>(y), g, total)));
  return cudaGetLastError();
}

cudaError_t launch_max_pool_indices(KType t, const void* x, void* y, int64_t* indices, const Window3d& g, bool col_major,
                                    cudaStream_t s) {
  const int64_t total = g.n * g.c * g.out[0] * g.out[1] * g.out[2];
  if (total == 0) return cudaSuccess;
  GRAFT_FLOAT_DISPATCH(t, (max_pool_indices_kernel<T><<<grid_for(total), kThreads, 0, s>>>(
                              static_cast<const T*>(x), static_cast<T*>(y), indices, g, col_major, total)));
  return cudaGetLastError();
}

namespace {

// Every index a pool kernel forms (input and output elements, padded window coordinates) fits in
// 32 bits with room for the window's reach past the edges.
bool fits_int32(const Window2d& g, int64_t total) {
  const int64_t lim = int64_t{1} << 30;
  return total < lim && g.n * g.c * g.h * g.w < lim && g.h + g.ph + g.peh + g.kh * g.dh < lim &&
         g.w + g.pw + g.pew + g.kw * g.dw < lim;
}

// The vector kernel's launch, where the channels and both pointers allow 16-byte lanes.
template <typename T>
bool pool2d_nhwc_vectors(PoolKind kind, const void* x, void* y, const Window2d& g, int64_t total, bool int32,
                         cudaStream_t s) {
  constexpr int kV = 16 / static_cast<int>(sizeof(T));
  const auto addr = reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y);
  if (g.c % kV != 0 || addr % 16 != 0) return false;
  const int64_t vectors = total / kV;
  if (int32)
    pool2d_nhwc_vec_kernel<T, kV, int32_t><<<grid_for(vectors), kThreads, 0, s>>>(
        kind, static_cast<const T*>(x), static_cast<T*>(y), g, static_cast<int32_t>(vectors));
  else
    pool2d_nhwc_vec_kernel<T, kV, int64_t><<<grid_for(vectors), kThreads, 0, s>>>(
        kind, static_cast<const T*>(x), static_cast<T*>(y), g, vectors);
  return true;
}

}  // namespace

cudaError_t launch_pool2d(KType t, PoolKind kind, const void* x, void* y, const Window2d& g, cudaStream_t s) {
  const int64_t total = g.n * g.c * g.oh * g.ow;
  if (total == 0) return cudaSuccess;
  if (fits_int32(g, total)) {
    GRAFT_FLOAT_DISPATCH(t, (pool2d_kernel<T, int32_t><<<grid_for(total), kThreads, 0, s>>>(
                                kind, static_cast<const T*>(x), static_cast<T*>(y), g, static_cast<int32_t>(total))));
  } else {
    GRAFT_FLOAT_DISPATCH(t, (pool2d_kernel<T, int64_t><<<grid_for(total), kThreads, 0, s>>>(
                                kind, static_cast<const T*>(x), static_cast<T*>(y), g, total)));
  }
  return cudaGetLastError();
}

cudaError_t launch_pool2d_nhwc(KType t, PoolKind kind, const void* x, void* y, const Window2d& g, cudaStream_t s) {
  const int64_t total = g.n * g.c * g.oh * g.ow;
  if (total == 0) return cudaSuccess;
  const bool int32 = fits_int32(g, total);
  GRAFT_FLOAT_DISPATCH(t, if (pool2d_nhwc_vectors<T>(kind, x, y, g, total, int32, s)) return cudaGetLastError());
  if (int32) {
    GRAFT_FLOAT_DISPATCH(t, (pool2d_nhwc_kernel<T, int32_t><<<grid_for(total), kThreads, 0, s>>>(
                                kind, static_cast<const T*>(x), static_cast<T*>(y), g, static_cast<int32_t>(total))));
  } else {
    GRAFT_FLOAT_DISPATCH(t, (pool2d_nhwc_kernel<T, int64_t><<<grid_for(total), kThreads, 0, s>>>(
                                kind, static_cast<const T*>(x), static_cast<T*>(y), g, total)));
  }
  return cudaGetLastError();
}

namespace {
// The 16-byte kernel's lanes (vectors of channels per block, a power of two): the widest that
// leaves at least two blocks per multiprocessor, but never under 4 (64-byte runs of a row) unless
// the channels are fewer.
int global_pool_lanes(int64_t n, int64_t vectors) {
  const int sms = multiprocessors_or_default();
  int lanes = 1;
  while (lanes * 2 <= std::min<int64_t>(vectors, 32)) lanes *= 2;
  while (lanes > 4 && ((vectors + lanes - 1) / lanes) * n < 2 * sms) lanes /= 2;
  return lanes;
}

// Slices of the plane for a global pool: only where one pass still leaves most SMs idle (fewer than
// 64 blocks) over a plane of 1024 rows or more, since the second kernel costs a few microseconds;
// then enough slices for about four blocks per SM, each at least 256 rows, at most 32.
// MobileNetV3-Small's first squeeze-excitation pool (16 channels, 56x56, batch 32: 32 blocks of 2
// lanes) took 14 us unsliced on an H200 (ncu, 56b03a2).
int64_t global_pool_slices(int64_t area, int64_t blocks) {
  if (blocks >= 64 || area < 1024) return 1;
  const int64_t want = (528 + blocks - 1) / blocks;
  return std::max<int64_t>(1, std::min<int64_t>({want, area / 256, 32}));
}

// Blocks of one slice: the 16-byte kernel's with `lanes` lanes over `vectors` vectors of channels,
// or (lanes 0) the scalar kernel's.
int64_t global_pool_blocks(int64_t n, int64_t channels, int64_t vectors, int lanes) {
  if (!lanes) return ((channels + 31) / 32) * n;
  return ((vectors + lanes - 1) / lanes) * n;
}


// The partials' bytes for `slices` slices (0 for one: no partials).
size_t global_pool_partial_bytes(int64_t slices, int64_t n, int64_t channels) {
  return slices > 1 ? static_cast<size_t>(slices * n * channels) * sizeof(float) : 0;
}
}  // namespace

// Sized for the scalar kernel's grid. Where slicing happens the 16-byte kernel has its narrowest
// lanes, so at least as many blocks and at most as many slices; a launch whose slices would not fit
// runs unsliced.
size_t global_pool_nhwc_workspace(int64_t n, int64_t area, int64_t channels) {
  return global_pool_partial_bytes(global_pool_slices(area, global_pool_blocks(n, channels, 0, 0)), n, channels);
}

namespace {
// One pass of the global pool (per slice when partial is set): the 16-byte kernel with `lanes`
// lanes, or (lanes 0) the one-channel-per-thread kernel.
template <typename T>
void global_pool_t(bool max, const T* x, T* y, float* partial, int64_t n, int64_t area, int64_t channels, int64_t rows,
                   int64_t slices, int lanes, cudaStream_t s) {
  constexpr int V = 16 / sizeof(T);
  if (lanes) {
    const int64_t vectors = channels / V;
    const dim3 grid(static_cast<unsigned>((vectors + lanes - 1) / lanes), static_cast<unsigned>(n),
                    static_cast<unsigned>(slices));
    global_pool_nhwc_vec_kernel<T, V><<<grid, kThreads, 0, s>>>(max, x, y, partial, area, channels, rows, lanes);
    return;
  }
  const dim3 grid(static_cast<unsigned>((channels + 31) / 32), static_cast<unsigned>(n), static_cast<unsigned>(slices));
  global_pool_nhwc_kernel<T><<<grid, dim3(32, 32), 0, s>>>(max, x, y, partial, area, channels, rows);
}
}  // namespace

cudaError_t launch_global_pool_nhwc(KType t, bool max, const void* x, void* y, int64_t n, int64_t area,
                                    int64_t channels, void* workspace, size_t workspace_size, cudaStream_t s) {
  if (n * channels == 0) return cudaSuccess;
  if (n > 65535) return cudaErrorInvalidValue;
  // The 16-byte kernel where the channels are whole 16-byte vectors and x is aligned to them; its
  // lanes worked out once, for the slicing and the launch.
  const int64_t v = t == KType::kF32 ? 4 : 8;
  const int64_t vectors = channels / v;
  const int lanes = channels % v == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 ? global_pool_lanes(n, vectors) : 0;
  int64_t slices = global_pool_slices(area, global_pool_blocks(n, channels, vectors, lanes));
  if (!workspace || workspace_size < global_pool_partial_bytes(slices, n, channels)) slices = 1;
  const int64_t rows = (area + slices - 1) / slices;
  float* partial = slices > 1 ? static_cast<float*>(workspace) : nullptr;
  GRAFT_FLOAT_DISPATCH(t, (global_pool_t<T>(max, static_cast<const T*>(x), static_cast<T*>(y), partial, n, area,
                                            channels, rows, slices, lanes, s)));
  if (partial)
    GRAFT_FLOAT_DISPATCH(t, (global_pool_finish_kernel<T><<<grid_for(n * channels), kThreads, 0, s>>>(
                                max, partial, static_cast<T*>(y), n * channels, static_cast<int>(slices), area)));
  return cudaGetLastError();
}

cudaError_t launch_conv_epilogue(KType t, void* y, const void* bias, const void* z, int64_t channels, int64_t inner,
                                 Epilogue e, int64_t total, cudaStream_t s) {
  if (total == 0) return cudaSuccess;
  if (channels < 1 || inner < 1) return cudaErrorInvalidValue;
  // 32-bit indices while the grid-stride loop's last step (at most grid_for's cap of threads past
  // the end) cannot overflow them either.
  const bool int32 = total <= INT_MAX - int64_t{65535} * 16 * kThreads;
  GRAFT_FLOAT_DISPATCH(t, return (int32 ? conv_epilogue_t<T, int32_t>(y, bias, z, channels, inner, e, total, s)
                                        : conv_epilogue_t<T, int64_t>(y, bias, z, channels, inner, e, total, s)));
  return cudaErrorInvalidValue;
}

cudaError_t launch_depthwise_conv_nhwc(KType t, const void* x, const void* w, const void* bias, const void* z, void* y,
                                       const Window2d& g, Epilogue e, bool row_tiled, cudaStream_t s) {
  const int64_t total = g.n * g.oh * g.ow * g.c;
  if (total == 0) return cudaSuccess;
  const bool int32 = fits_int32(g, total);
  GRAFT_FLOAT_DISPATCH(t, return depthwise_nhwc_dispatch<T>(x, w, bias, z, y, g, e, s, int32, row_tiled));
  return cudaErrorInvalidValue;
}

bool depthwise_nhwc_row_tiled_supported(const Window2d& g) {
  return g.kh == g.kw && (g.kh == 3 || g.kh == 5 || g.kh == 7) && g.sh == g.sw && (g.sh == 1 || g.sh == 2) &&
         g.dh == 1 && g.dw == 1 && g.c % 8 == 0;
}

bool depthwise_nhwc_row_tiled_preferred(const Window2d& g) {
  if (!depthwise_nhwc_row_tiled_supported(g)) return false;
  // A thread per row tile leaves a quarter of the threads of a thread per pixel: too few to fill the
  // GPU on small problems (batch 1 ran 15-20% slower on MobileNetV2 and EfficientNet-B0), and for
  // 3x3 and 5x5 filters the saved loads paid only past about 2^18 tile-vectors of 8 halves (H200
  // profiles of EfficientNet-B0 and ConvNeXt-T at batch 32); a 7x7 filter gains from 2^15 on.
  const int64_t work = g.n * g.oh * ((g.ow + kDwTileX - 1) / kDwTileX) * (g.c / 8);
  return work >= (g.kh == 7 ? (int64_t{1} << 15) : (int64_t{1} << 18));
}

bool depthwise_conv_nchw_supported(const Window2d& g) {
  DwNchwTile t;
  return dw_nchw_plan(g, &t);
}

cudaError_t launch_depthwise_conv_nchw(KType t, const void* x, const void* w, const void* bias, const void* z, void* y,
                                       const Window2d& g, Epilogue e, cudaStream_t s) {
  if (g.n * g.c * g.oh * g.ow == 0) return cudaSuccess;
  DwNchwTile tile;
  if (!dw_nchw_plan(g, &tile)) return cudaErrorInvalidValue;
  GRAFT_FLOAT_DISPATCH(t, return dw_nchw_dispatch<T>(x, w, bias, z, y, g, e, tile, s));
  return cudaErrorInvalidValue;
}

bool pointwise_conv_nhwc_supported(int64_t c, int64_t m) {
  return c >= 1 && m >= 1 && c <= int64_t{kMaxDynamicShared} && m <= int64_t{kMaxDynamicShared} &&
         pw_shared_floats(c, m) * static_cast<int64_t>(sizeof(float)) <= static_cast<int64_t>(kMaxDynamicShared);
}

cudaError_t launch_pointwise_conv_nhwc(KType t, const void* x, const void* w, const void* bias, const void* z, void* y,
                                       int64_t pixels, int64_t c, int64_t m, Epilogue e, cudaStream_t s) {
  if (!pointwise_conv_nhwc_supported(c, m) || pixels < 0) return cudaErrorInvalidValue;
  if (pixels == 0) return cudaSuccess;
  GRAFT_FLOAT_DISPATCH(t, return pointwise_nhwc_dispatch<T>(x, w, bias, z, y, pixels, static_cast<int>(c),
                                                            static_cast<int>(m), e, s));
  return cudaErrorInvalidValue;
}

namespace {

// One thread per pixel: the c strided reads of a pixel are coalesced across the warp's neighbouring
// pixels, and its cp outputs are contiguous (one 16-byte store for 8 half-size channels when `vec8`:
// cp is 8 and y is 16-byte aligned, as the engine's arena buffers are). The grid is (pixels of an
// image, images), so no thread divides by the image size: a 64-bit division per pixel had made the
// copy of a batch-32 224x224 image compute-bound (56 us on an H200 for 45 MB of traffic).
template <typename TI, typename TO>
__global__ void channels_last_padded_kernel(const TI* __restrict__ x, TO* __restrict__ y, int64_t c, int64_t hw,
                                            int64_t cp, int64_t n, bool vec8) {
  for (int64_t b = blockIdx.y; b < n; b += gridDim.y) {
    for (int64_t s = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; s < hw; s += int64_t(gridDim.x) * blockDim.x) {
      const TI* xs = x + b * c * hw + s;
      TO* yp = y + (b * hw + s) * cp;
      if constexpr (sizeof(TO) == 2) {
        if (vec8) {
          alignas(16) TO v[8];
#pragma unroll
          for (int k = 0; k < 8; ++k) v[k] = Elem<TO>::st(k < c ? Elem<TI>::ld(xs[k * hw]) : 0.f);
          *reinterpret_cast<uint4*>(yp) = *reinterpret_cast<const uint4*>(v);
          continue;
        }
      }
      for (int64_t k = 0; k < cp; ++k) yp[k] = Elem<TO>::st(k < c ? Elem<TI>::ld(xs[k * hw]) : 0.f);
    }
  }
}

// The common case of the kernel above (an image's 3 channels padded to 8 half-size channels, the
// image size a multiple of 4, x aligned to 4 elements and y to 16 bytes): each thread converts four
// consecutive pixels, one 4-element load per input channel and four 16-byte stores. With one pixel
// per thread each thread had only c 4-byte loads in flight, and the batch-32 224x224 copy (45 MB)
// took 58 us on an H200, about 0.8 TB/s.
template <typename TI, typename TO>
__global__ void channels_last_padded_quad_kernel(const TI* __restrict__ x, TO* __restrict__ y, int c, int64_t quads,
                                                 int64_t n) {
  struct alignas(4 * sizeof(TI)) Quad {
    TI v[4];
  };
  const int64_t hw = quads * 4;
  for (int64_t b = blockIdx.y; b < n; b += gridDim.y) {
    for (int64_t q = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; q < quads; q += int64_t(gridDim.x) * blockDim.x) {
      const TI* xs = x + b * c * hw + q * 4;
      alignas(16) TO out[4][8];
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        if (k < c) {
          const Quad in = *reinterpret_cast<const Quad*>(xs + k * hw);
#pragma unroll
          for (int p = 0; p < 4; ++p) out[p][k] = Elem<TO>::st(Elem<TI>::ld(in.v[p]));
        } else {
#pragma unroll
          for (int p = 0; p < 4; ++p) out[p][k] = Elem<TO>::st(0.f);
        }
      }
      uint4* yp = reinterpret_cast<uint4*>(y + (b * hw + q * 4) * 8);
#pragma unroll
      for (int p = 0; p < 4; ++p) yp[p] = *reinterpret_cast<const uint4*>(out[p]);
    }
  }
}

template <typename TO>
cudaError_t channels_last_padded_to(KType in, const void* x, void* y, int64_t n, int64_t c, int64_t hw, int64_t cp,
                                    cudaStream_t s) {
  const bool vec8 = cp == 8 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
  if constexpr (sizeof(TO) == 2) {
    const size_t in_size = in == KType::kF32 ? 4 : 2;
    if (vec8 && hw % 4 == 0 && reinterpret_cast<uintptr_t>(x) % (4 * in_size) == 0) {
      const int64_t quads = hw / 4;
      const dim3 grid(std::min<unsigned>(grid_for(quads), 65535u), static_cast<unsigned>(std::min<int64_t>(n, 65535)));
      GRAFT_FLOAT_DISPATCH(in, (channels_last_padded_quad_kernel<T, TO><<<grid, kThreads, 0, s>>>(
                                   static_cast<const T*>(x), static_cast<TO*>(y), static_cast<int>(c), quads, n)));
      return cudaGetLastError();
    }
  }
  const dim3 grid(std::min<unsigned>(grid_for(hw), 65535u), static_cast<unsigned>(std::min<int64_t>(n, 65535)));
  GRAFT_FLOAT_DISPATCH(in, (channels_last_padded_kernel<T, TO><<<grid, kThreads, 0, s>>>(
                               static_cast<const T*>(x), static_cast<TO*>(y), c, hw, cp, n, vec8)));
  return cudaGetLastError();
}

// Space to depth (GraftChannelsLast with block S): one thread per output pixel (i, j) of image b
// reads the S x S block of X's C planes at (S*i - top, S*j - left) and writes its cp = S*S*C
// channels rounded up to 8 as cp / 8 16-byte stores of half-size values. S and C are template
// arguments so that every channel's (dy, dx, c) is known at compile time: the kernel below,
// which works them out per channel, is the fallback for other blocks and channel counts.
template <typename TI, typename TO, int S, int C>
__global__ void space_to_depth_fixed_kernel(const TI* __restrict__ x, TO* __restrict__ y, int h, int w, int oh, int ow,
                                            int top, int left, int64_t n) {
  constexpr int kUsed = S * S * C, kCp = (kUsed + 7) / 8 * 8;
  const int pixels = oh * ow;
  for (int64_t b = blockIdx.y; b < n; b += gridDim.y) {
    for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < pixels; p += gridDim.x * blockDim.x) {
      const int i = p / ow, j = p % ow;
      alignas(16) TO v[kCp];
#pragma unroll
      for (int dy = 0; dy < S; ++dy) {
        const int r = S * i + dy - top;
#pragma unroll
        for (int dx = 0; dx < S; ++dx) {
          const int col = S * j + dx - left;
          const bool inside = r >= 0 && r < h && col >= 0 && col < w;
#pragma unroll
          for (int c = 0; c < C; ++c)
            v[(dy * S + dx) * C + c] =
                Elem<TO>::st(inside ? Elem<TI>::ld(x[((b * C + c) * h + r) * static_cast<int64_t>(w) + col]) : 0.f);
        }
      }
#pragma unroll
      for (int k = kUsed; k < kCp; ++k) v[k] = Elem<TO>::st(0.f);
      uint4* yp = reinterpret_cast<uint4*>(y + (b * pixels + p) * static_cast<int64_t>(kCp));
#pragma unroll
      for (int k = 0; k < kCp * static_cast<int>(sizeof(TO)) / 16; ++k) yp[k] = reinterpret_cast<const uint4*>(v)[k];
    }
  }
}

template <typename TI, typename TO>
__global__ void space_to_depth_kernel(const TI* __restrict__ x, TO* __restrict__ y, int c, int s, int h, int w, int oh,
                                      int ow, int top, int left, int cp, int64_t n) {
  const int pixels = oh * ow;
  for (int64_t b = blockIdx.y; b < n; b += gridDim.y) {
    for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < pixels; p += gridDim.x * blockDim.x) {
      const int i = p / ow, j = p % ow;
      TO* yp = y + (b * pixels + p) * static_cast<int64_t>(cp);
      for (int k = 0; k < cp; ++k) {
        float v = 0.f;
        if (k < s * s * c) {
          const int dy = k / c / s, dx = k / c % s, ch = k % c, r = s * i + dy - top, col = s * j + dx - left;
          if (r >= 0 && r < h && col >= 0 && col < w) v = Elem<TI>::ld(x[((b * c + ch) * h + r) * static_cast<int64_t>(w) + col]);
        }
        yp[k] = Elem<TO>::st(v);
      }
    }
  }
}

template <typename TO>
cudaError_t space_to_depth_to(KType in, const void* x, void* y, int64_t n, int c, int s, int h, int w, int oh, int ow,
                              int top, int left, int cp, cudaStream_t st) {
  const int64_t pixels = int64_t{oh} * ow;
  const dim3 grid(std::min<unsigned>(grid_for(pixels), 65535u), static_cast<unsigned>(std::min<int64_t>(n, 65535)));
  if constexpr (sizeof(TO) == 2) {
    if (reinterpret_cast<uintptr_t>(y) % 16 == 0 && c == 3 && (s == 2 || s == 4) && cp == (s * s * 3 + 7) / 8 * 8) {
      if (s == 2) {
        GRAFT_FLOAT_DISPATCH(in, (space_to_depth_fixed_kernel<T, TO, 2, 3><<<grid, kThreads, 0, st>>>(
                                     static_cast<const T*>(x), static_cast<TO*>(y), h, w, oh, ow, top, left, n)));
      } else {
        GRAFT_FLOAT_DISPATCH(in, (space_to_depth_fixed_kernel<T, TO, 4, 3><<<grid, kThreads, 0, st>>>(
                                     static_cast<const T*>(x), static_cast<TO*>(y), h, w, oh, ow, top, left, n)));
      }
      return cudaGetLastError();
    }
  }
  GRAFT_FLOAT_DISPATCH(in, (space_to_depth_kernel<T, TO><<<grid, kThreads, 0, st>>>(
                               static_cast<const T*>(x), static_cast<TO*>(y), c, s, h, w, oh, ow, top, left, cp, n)));
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_channels_last_padded(KType in, KType out, const void* x, void* y, int64_t n, int64_t c, int64_t hw,
                                        int64_t cp, cudaStream_t s) {
  if (c > cp || c < 0) return cudaErrorInvalidValue;
  if (n * hw == 0 || cp == 0) return cudaSuccess;
  GRAFT_FLOAT_DISPATCH(out, return channels_last_padded_to<T>(in, x, y, n, c, hw, cp, s));
  return cudaErrorInvalidValue;
}

cudaError_t launch_space_to_depth(KType in, KType out, const void* x, void* y, int64_t n, int64_t c, int64_t h,
                                  int64_t w, int64_t block, int64_t top, int64_t left, int64_t oh, int64_t ow,
                                  int64_t cp, cudaStream_t s) {
  constexpr int64_t kMax = 0x7fffffff;
  if (c < 1 || block < 1 || c * block * block > cp || h < 0 || w < 0 || oh < 0 || ow < 0 || h * w > kMax ||
      oh * ow > kMax || block * (std::max(oh, ow) + 1) + std::max(std::abs(top), std::abs(left)) > kMax)
    return cudaErrorInvalidValue;
  if (n * oh * ow == 0) return cudaSuccess;
  GRAFT_FLOAT_DISPATCH(out, return space_to_depth_to<T>(in, x, y, n, static_cast<int>(c), static_cast<int>(block),
                                                       static_cast<int>(h), static_cast<int>(w), static_cast<int>(oh),
                                                       static_cast<int>(ow), static_cast<int>(top),
                                                       static_cast<int>(left), static_cast<int>(cp), s));
  return cudaErrorInvalidValue;
}

cudaError_t launch_global_pool(KType t, bool max, const void* x, void* y, int64_t rows, int64_t area, cudaStream_t s) {
  if (rows == 0) return cudaSuccess;
  if (rows > 0x7fffffffLL) return cudaErrorInvalidValue;
  GRAFT_FLOAT_DISPATCH(t, (global_pool_kernel<T><<<static_cast<unsigned>(rows), kThreads, 0, s>>>(
                              max, static_cast<const T*>(x), static_cast<T*>(y), area)));
  return cudaGetLastError();
}

cudaError_t launch_batchnorm(KType t, KType pt, const void* x, const void* scale, const void* bias, const void* mean,
                             const void* var, void* y, int64_t n, int64_t c, int64_t inner, float eps, cudaStream_t s) {
  if (n * c * inner == 0) return cudaSuccess;
  GRAFT_FLOAT_DISPATCH(t, return bn_t<T>(pt, x, scale, bias, mean, var, y, n, c, inner, eps, s));
  return cudaSuccess;
}

}  // namespace graft::cuda::k
