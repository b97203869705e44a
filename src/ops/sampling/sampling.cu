// The sampling family's CUDA kernels (RoiAlign, GridSample; launchers declared in sampling.h, where
// ops/roi_align reaches them too) and its CUDA ops. The kernels follow the CPU references of
// sampling.cpp step by step; the ops read attributes with the same parsers, so both backends
// interpret a node alike.
#include "ops/sampling/sampling.h"

#include <cstdint>
#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------------

namespace k {

namespace {

// ---- RoiAlign -------------------------------------------------------------------------------------
// A roi's geometry: its image, its corner, its bins' size and the samples per bin and axis. ok is
// false for a roi the GPU reads as zeros (a batch index outside [0, N) or a coordinate that is not
// finite; the CPU reference reports those).
struct RoiGeom {
  bool ok = false;
  int64_t b = 0, gh = 0, gw = 0;
  double x1 = 0, y1 = 0, bh = 0, bw = 0;
};

template <typename T>
__device__ RoiGeom roi_geom(const T* rois, const void* batch_idx, bool idx64, const RoiAlignArgs& a, int64_t k) {
  using E = Elem<T>;
  RoiGeom g;
  const T* r = rois + k * (a.packed_rois ? 5 : 4);
  bool ok = true;
  if (a.packed_rois) {
    const float bv = float(E::ld(r[0]));
    ok = bv > -1.f && bv < float(a.n);
    g.b = ok ? int64_t(bv) : 0;
    r += 1;
  } else {
    g.b = idx64 ? static_cast<const int64_t*>(batch_idx)[k] : int64_t(static_cast<const int32_t*>(batch_idx)[k]);
    ok = g.b >= 0 && g.b < a.n;
  }
  double box[4];
  for (int j = 0; j < 4; ++j) {
    box[j] = double(float(E::ld(r[j])));
    ok = ok && isfinite(box[j]);
  }
  if (!ok) return g;
  const double off = a.half_pixel ? 0.5 : 0.0, s = a.spatial_scale;
  g.x1 = box[0] * s - off, g.y1 = box[1] * s - off;
  double rw = box[2] * s - off - g.x1, rh = box[3] * s - off - g.y1;
  if (!a.half_pixel) {
    rw = fmax(rw, 1.0);
    rh = fmax(rh, 1.0);
  }
  g.bh = rh / double(a.oh), g.bw = rw / double(a.ow);
  const double gh_d = a.sampling_ratio > 0 ? double(a.sampling_ratio) : ceil(g.bh);
  const double gw_d = a.sampling_ratio > 0 ? double(a.sampling_ratio) : ceil(g.bw);
  g.gh = gh_d > 0.0 ? int64_t(fmin(gh_d, 4096.0)) : 0;
  g.gw = gw_d > 0.0 ? int64_t(fmin(gw_d, 4096.0)) : 0;
  g.ok = true;
  return g;
}

// Sample (iy, ix) of bin (ph, pw): its four corners' positions in an H*W plane and their weights;
// false when it lies beyond one pixel outside the map (it reads nothing).
__device__ bool roi_sample(const RoiGeom& g, const RoiAlignArgs& a, int64_t ph, int64_t pw, int64_t iy, int64_t ix,
                           int64_t pos[4], float w4[4]) {
  float sy = float(g.y1 + double(ph) * g.bh + (double(iy) + 0.5) * g.bh / double(g.gh));
  const float xx = float(g.x1 + double(pw) * g.bw + (double(ix) + 0.5) * g.bw / double(g.gw));
  if (!(sy >= -1.f && sy <= float(a.h) && xx >= -1.f && xx <= float(a.w))) return false;
  sy = fmaxf(sy, 0.f);
  float sx = fmaxf(xx, 0.f);
  int64_t y0 = int64_t(sy), x0 = int64_t(sx), y1i, x1i;
  if (y0 >= a.h - 1) { y0 = y1i = a.h - 1; sy = float(y0); } else { y1i = y0 + 1; }
  if (x0 >= a.w - 1) { x0 = x1i = a.w - 1; sx = float(x0); } else { x1i = x0 + 1; }
  const float ly = sy - float(y0), lx = sx - float(x0), hy = 1.f - ly, hx = 1.f - lx;
  w4[0] = hy * hx; w4[1] = hy * lx; w4[2] = ly * hx; w4[3] = ly * lx;
  pos[0] = y0 * a.w + x0; pos[1] = y0 * a.w + x1i; pos[2] = y1i * a.w + x0; pos[3] = y1i * a.w + x1i;
  return true;
}

// One bin of one channel plane, pooled. For max pooling, winner (when given) receives the sample
// index iy * gw + ix that gave the value and, for ONNX's weighted-corner max, the corner (else -1);
// the first one among equals; (-1, -1) when the bin has no sample.
template <typename T>
__device__ float roi_pool_bin(const T* plane, const RoiGeom& g, const RoiAlignArgs& a, int64_t ph, int64_t pw,
                              int64_t* winner = nullptr, int* corner = nullptr) {
  using E = Elem<T>;
  float acc = 0.f;
  bool first = true;
  if (winner) *winner = -1, *corner = -1;
  for (int64_t iy = 0; iy < g.gh; ++iy)
    for (int64_t ix = 0; ix < g.gw; ++ix) {
      int64_t pos[4];
      float w4[4] = {0.f, 0.f, 0.f, 0.f}, v4[4] = {0.f, 0.f, 0.f, 0.f};
      if (roi_sample(g, a, ph, pw, iy, ix, pos, w4))
        for (int t = 0; t < 4; ++t) v4[t] = float(E::ld(plane[pos[t]]));
      if (!a.max_mode) {
        acc += w4[0] * v4[0] + w4[1] * v4[1] + w4[2] * v4[2] + w4[3] * v4[3];
        continue;
      }
      const float val = a.max_of_weighted_corners
                            ? fmaxf(fmaxf(w4[0] * v4[0], w4[1] * v4[1]), fmaxf(w4[2] * v4[2], w4[3] * v4[3]))
                            : w4[0] * v4[0] + w4[1] * v4[1] + w4[2] * v4[2] + w4[3] * v4[3];
      if (winner && (first || val > acc)) {
        *winner = iy * g.gw + ix;
        *corner = -1;
        for (int t = 0; t < 4 && a.max_of_weighted_corners && *corner < 0; ++t)
          if (w4[t] * v4[t] == val) *corner = t;
      }
      acc = first ? val : fmaxf(acc, val);
      first = false;
    }
  return a.max_mode ? acc : acc / float(g.gh * g.gw > 1 ? g.gh * g.gw : 1);
}

template <typename T>
__global__ void roi_align_kernel(const T* __restrict__ x, const T* __restrict__ rois, const void* batch_idx,
                                 bool idx64, T* __restrict__ y, RoiAlignArgs a, int64_t total) {
  using E = Elem<T>;
  GRAFT_GRID_STRIDE(i, total) {
    const int64_t pw = i % a.ow, ph = (i / a.ow) % a.oh, ch = (i / (a.ow * a.oh)) % a.c, k = i / (a.ow * a.oh * a.c);
    const RoiGeom g = roi_geom(rois, batch_idx, idx64, a, k);
    const float result = g.ok ? roi_pool_bin(x + (g.b * a.c + ch) * a.h * a.w, g, a, ph, pw) : 0.f;
    y[i] = E::st(typename E::C(result));
  }
}

// The backward: one thread per output element adds its gradient's shares into dx, a float
// accumulator zeroed before (atomically, as bins and rois share pixels): every sample's corner
// weights over the sample count for average pooling, the winning sample's (or corner's) for max.
template <typename T>
__global__ void roi_align_backward_kernel(const T* __restrict__ x, const T* __restrict__ rois, const void* batch_idx,
                                          bool idx64, const T* __restrict__ dy, float* __restrict__ dx, RoiAlignArgs a,
                                          int64_t total) {
  using E = Elem<T>;
  GRAFT_GRID_STRIDE(i, total) {
    const int64_t pw = i % a.ow, ph = (i / a.ow) % a.oh, ch = (i / (a.ow * a.oh)) % a.c, k = i / (a.ow * a.oh * a.c);
    const RoiGeom g = roi_geom(rois, batch_idx, idx64, a, k);
    if (!g.ok) continue;
    const float gy = float(E::ld(dy[i]));
    const int64_t base = (g.b * a.c + ch) * a.h * a.w;
    int64_t pos[4];
    float w4[4];
    if (!a.max_mode) {
      const float share = gy / float(g.gh * g.gw > 1 ? g.gh * g.gw : 1);
      for (int64_t iy = 0; iy < g.gh; ++iy)
        for (int64_t ix = 0; ix < g.gw; ++ix)
          if (roi_sample(g, a, ph, pw, iy, ix, pos, w4))
            for (int t = 0; t < 4; ++t) atomicAdd(dx + base + pos[t], w4[t] * share);
      continue;
    }
    int64_t winner;
    int corner;
    roi_pool_bin(x + base, g, a, ph, pw, &winner, &corner);
    if (winner < 0 || !roi_sample(g, a, ph, pw, winner / g.gw, winner % g.gw, pos, w4)) continue;
    for (int t = 0; t < 4; ++t)
      if (corner < 0 || corner == t) atomicAdd(dx + base + pos[t], w4[t] * gy);
  }
}

// ---- GridSample -----------------------------------------------------------------------------------
__device__ __forceinline__ float keys_cubic(float d) {
  const float A = -0.75f;
  d = fabsf(d);
  if (d <= 1.f) return ((A + 2.f) * d - (A + 3.f)) * d * d + 1.f;
  if (d < 2.f) return ((A * d - 5.f * A) * d + 8.f * A) * d - 4.f * A;
  return 0.f;
}

// `slope` receives d(result)/dv, as the CPU reference's reflect gives it.
__device__ __forceinline__ float reflect(float v, float lo, float hi, float* slope) {
  const float span = hi - lo;
  *slope = 1.f;
  if (!(span > 0.f)) {
    *slope = 0.f;
    return lo;
  }
  if (v >= lo && v <= hi) return v;
  const float d = v < lo ? lo - v : v - hi;
  const float q = floorf(d / span);
  const float r = d - q * span;
  const bool even = fmodf(q, 2.f) == 0.f;
  *slope = even ? -1.f : 1.f;
  if (v < lo) return even ? lo + r : hi - r;
  return even ? hi - r : lo + r;
}

__device__ __forceinline__ float reflect(float v, float lo, float hi) {
  float slope;
  return reflect(v, lo, hi, &slope);
}

// Clamps u to [lo, hi]; the slope becomes 0 where it clamps (at the bounds too, as PyTorch's backward).
__device__ __forceinline__ float clamp_with_slope(float u, float lo, float hi, float* slope) {
  if (u <= lo || u >= hi) *slope = 0.f;
  return fminf(fmaxf(u, lo), hi);
}

__device__ __forceinline__ float keys_cubic_slope(float d) {
  const float A = -0.75f, m = fabsf(d), sign = d < 0.f ? -1.f : 1.f;
  if (m <= 1.f) return sign * (3.f * (A + 2.f) * m - 2.f * (A + 3.f)) * m;
  if (m < 2.f) return sign * ((3.f * A * m - 10.f * A) * m + 8.f * A);
  return 0.f;
}

struct Taps {
  int n;
  int64_t idx[4];
  float w[4];
  float dw[4];  // each weight's derivative with respect to the normalized coordinate (the backward's)
};

__device__ __forceinline__ int64_t tap_index(float t, int64_t size, float lo, float hi, int pad) {
  const float last = float(size - 1);
  if (pad == 0) return (t >= 0.f && t <= last) ? int64_t(t) : -1;
  if (pad == 1) return int64_t(fminf(fmaxf(t, 0.f), last));
  return int64_t(fminf(fmaxf(truncf(reflect(t, lo, hi)), 0.f), last));
}

// One axis: the taps for normalized coordinate g (false when g is not finite).
__device__ bool axis_taps(float g, int64_t size, const GridSampleArgs& a, bool half_even, Taps& t) {
  const float s = float(size);
  const float lo = a.align_corners ? 0.f : -0.5f, hi = a.align_corners ? s - 1.f : s - 0.5f;
  float v = a.align_corners ? (g + 1.f) * 0.5f * (s - 1.f) : ((g + 1.f) * s - 1.f) * 0.5f;
  if (!isfinite(v)) return false;
  float slope = a.align_corners ? (s - 1.f) * 0.5f : s * 0.5f;  // dv/dg, times the padding's slope
  auto pad_coord = [&](float u) {
    if (a.padding == 1) return clamp_with_slope(u, 0.f, s - 1.f, &slope);
    if (a.padding == 2) {
      float mirror;
      u = reflect(u, lo, hi, &mirror);
      slope *= mirror;
      return a.torch_order ? clamp_with_slope(u, 0.f, s - 1.f, &slope) : u;
    }
    return u;
  };
  const float margin = 4.f;
  if (a.mode == 1) {  // nearest
    float u;
    if (a.torch_order) {
      u = pad_coord(v);
      u = half_even ? nearbyintf(u) : roundf(u);
    } else {
      u = half_even ? nearbyintf(v) : roundf(v);
      if (u < lo || u > hi) u = pad_coord(u);
    }
    t.n = 1;
    t.w[0] = 1.f;
    t.dw[0] = 0.f;
    t.idx[0] = tap_index(u, size, lo, hi, a.padding);
    return true;
  }
  if ((a.mode == 0 || !a.torch_order) && (v < lo || v > hi)) v = pad_coord(v);
  if (a.padding == 0 && (v < -margin || v > s + margin)) {
    t.n = 0;
    return true;
  }
  const float f = floorf(v), fr = v - f;
  if (a.mode == 0) {
    t.n = 2;
    t.idx[0] = tap_index(f, size, lo, hi, a.padding);
    t.idx[1] = tap_index(f + 1.f, size, lo, hi, a.padding);
    t.w[0] = 1.f - fr;
    t.w[1] = fr;
    t.dw[0] = -slope;
    t.dw[1] = slope;
  } else {
    t.n = 4;
    for (int q = 0; q < 4; ++q) {
      t.idx[q] = tap_index(f - 1.f + float(q), size, lo, hi, a.padding);
      t.w[q] = keys_cubic(fr - float(q - 1));
      t.dw[q] = keys_cubic_slope(fr - float(q - 1)) * slope;
    }
  }
  return true;
}

template <typename T>
__global__ void grid_sample_kernel(const T* __restrict__ x, const T* __restrict__ grid, T* __restrict__ y,
                                   GridSampleArgs a, int64_t total) {
  using E = Elem<T>;
  const int nd = a.nd;
  int64_t out_plane = 1, in_plane = 1;
  for (int d = 0; d < nd; ++d) {
    out_plane *= a.out[d];
    in_plane *= a.in[d];
  }
  GRAFT_GRID_STRIDE(i, total) {
    const int64_t o = i % out_plane, ch = (i / out_plane) % a.c, b = i / (out_plane * a.c);
    Taps taps[3];
    bool valid = in_plane > 0;
    for (int j = 0; j < nd && valid; ++j) {
      const int axis = nd - 1 - j;
      const float g = float(E::ld(grid[(b * out_plane + o) * nd + j]));
      valid = axis_taps(g, a.in[axis], a, nd == 2, taps[axis]);
    }
    float acc = 0.f;
    if (valid) {
      const T* plane = x + (b * a.c + ch) * in_plane;
      if (nd == 2) {
        for (int p = 0; p < taps[0].n; ++p) {
          if (taps[0].idx[p] < 0) continue;
          for (int q = 0; q < taps[1].n; ++q) {
            if (taps[1].idx[q] < 0) continue;
            acc += taps[0].w[p] * taps[1].w[q] * float(E::ld(plane[taps[0].idx[p] * a.in[1] + taps[1].idx[q]]));
          }
        }
      } else {
        for (int r = 0; r < taps[0].n; ++r) {
          if (taps[0].idx[r] < 0) continue;
          for (int p = 0; p < taps[1].n; ++p) {
            if (taps[1].idx[p] < 0) continue;
            for (int q = 0; q < taps[2].n; ++q) {
              if (taps[2].idx[q] < 0) continue;
              const int64_t at = (taps[0].idx[r] * a.in[1] + taps[1].idx[p]) * a.in[2] + taps[2].idx[q];
              acc += taps[0].w[r] * taps[1].w[p] * taps[2].w[q] * float(E::ld(plane[at]));
            }
          }
        }
      }
    }
    y[i] = E::st(typename E::C(acc));
  }
}

// The 2-D backward: one thread per output location walks the channels, adds each tap's share of
// the output's gradient into dx, a float accumulator zeroed before (atomically: samples share
// pixels), and sums the grid's gradient itself, so dgrid needs no atomics.
template <typename T>
__global__ void grid_sample_backward_kernel(const T* __restrict__ x, const T* __restrict__ grid,
                                            const T* __restrict__ dy, float* __restrict__ dx, T* __restrict__ dgrid,
                                            GridSampleArgs a, int64_t total) {
  using E = Elem<T>;
  const int64_t out_plane = a.out[0] * a.out[1], in_plane = a.in[0] * a.in[1];
  GRAFT_GRID_STRIDE(i, total) {
    const int64_t o = i % out_plane, b = i / out_plane;
    Taps taps[2];
    bool valid = in_plane > 0;
    for (int j = 0; j < 2 && valid; ++j) valid = axis_taps(float(E::ld(grid[i * 2 + j])), a.in[1 - j], a, true, taps[1 - j]);
    float gx = 0.f, gy = 0.f;  // d loss / d (grid x, grid y)
    if (valid) {
      for (int64_t ch = 0; ch < a.c; ++ch) {
        const float g = float(E::ld(dy[(b * a.c + ch) * out_plane + o]));
        const int64_t base = (b * a.c + ch) * in_plane;
        for (int p = 0; p < taps[0].n; ++p) {
          if (taps[0].idx[p] < 0) continue;
          for (int q = 0; q < taps[1].n; ++q) {
            if (taps[1].idx[q] < 0) continue;
            const int64_t at = base + taps[0].idx[p] * a.in[1] + taps[1].idx[q];
            atomicAdd(dx + at, taps[0].w[p] * taps[1].w[q] * g);
            const float xv = float(E::ld(x[at])) * g;
            gx += taps[0].w[p] * taps[1].dw[q] * xv;
            gy += taps[0].dw[p] * taps[1].w[q] * xv;
          }
        }
      }
    }
    dgrid[i * 2] = E::st(typename E::C(gx));
    dgrid[i * 2 + 1] = E::st(typename E::C(gy));
  }
}

}  // namespace

namespace {

__global__ void float_to_half_kernel(const float* __restrict__ in, __half* __restrict__ out, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) out[i] = __float2half_rn(in[i]);
}

// A backward's dx as the kernels add into it: float, zeroed. For float32 dx itself; for float16 a
// stream-ordered float scratch, rounded into dx once at the end (finish): FP16 atomic adds would
// round at every one of a pixel's many shares (a roi's adaptive sampling gives dozens). The
// backward runs in training, outside engines and their graph captures, so it may allocate.
class FloatGradient {
 public:
  FloatGradient(KType t, void* dx, int64_t count, cudaStream_t s) : t_(t), dx_(dx), count_(count), s_(s) {
    if (t != KType::kF32 && t != KType::kF16) {
      err_ = cudaErrorInvalidValue;
      return;
    }
    if (count <= 0) return;
    const size_t bytes = static_cast<size_t>(count) * sizeof(float);
    if (t == KType::kF32) acc_ = static_cast<float*>(dx);
    else err_ = cudaMallocAsync(reinterpret_cast<void**>(&acc_), bytes, s);
    if (err_ == cudaSuccess) err_ = cudaMemsetAsync(acc_, 0, bytes, s);
  }
  ~FloatGradient() {
    if (t_ == KType::kF16 && acc_) (void)cudaFreeAsync(acc_, s_);
  }
  cudaError_t error() const { return err_; }
  float* data() const { return acc_; }
  // After the kernel: float16 dx from the float sums.
  cudaError_t finish() {
    if (err_ != cudaSuccess || t_ != KType::kF16 || count_ <= 0) return err_;
    float_to_half_kernel<<<grid_for(count_), kThreads, 0, s_>>>(acc_, static_cast<__half*>(dx_), count_);
    return cudaGetLastError();
  }

 private:
  KType t_;
  void* dx_;
  int64_t count_;
  cudaStream_t s_;
  float* acc_ = nullptr;
  cudaError_t err_ = cudaSuccess;
};

}  // namespace

cudaError_t launch_grid_sample_backward(KType t, const void* x, const void* grid, const void* dy, void* dx,
                                        void* dgrid, const GridSampleArgs& a, cudaStream_t s) {
  if (a.nd != 2) return cudaErrorInvalidValue;
  FloatGradient gx(t, dx, a.n * a.c * a.in[0] * a.in[1], s);
  if (gx.error() != cudaSuccess) return gx.error();
  const int64_t total = a.n * a.out[0] * a.out[1];
  if (total == 0) return gx.finish();
  if (t == KType::kF32)
    grid_sample_backward_kernel<float><<<grid_for(total), kThreads, 0, s>>>(
        static_cast<const float*>(x), static_cast<const float*>(grid), static_cast<const float*>(dy), gx.data(),
        static_cast<float*>(dgrid), a, total);
  else
    grid_sample_backward_kernel<__half><<<grid_for(total), kThreads, 0, s>>>(
        static_cast<const __half*>(x), static_cast<const __half*>(grid), static_cast<const __half*>(dy), gx.data(),
        static_cast<__half*>(dgrid), a, total);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  return gx.finish();
}

cudaError_t launch_roi_align_backward(KType t, const void* x, const void* rois, const void* batch_idx, bool idx64,
                                     const void* dy, void* dx, const RoiAlignArgs& a, cudaStream_t s) {
  FloatGradient gx(t, dx, a.n * a.c * a.h * a.w, s);
  if (gx.error() != cudaSuccess) return gx.error();
  const int64_t total = a.k * a.c * a.oh * a.ow;
  if (total == 0) return gx.finish();
  if (t == KType::kF32)
    roi_align_backward_kernel<float><<<grid_for(total), kThreads, 0, s>>>(
        static_cast<const float*>(x), static_cast<const float*>(rois), batch_idx, idx64, static_cast<const float*>(dy),
        gx.data(), a, total);
  else
    roi_align_backward_kernel<__half><<<grid_for(total), kThreads, 0, s>>>(
        static_cast<const __half*>(x), static_cast<const __half*>(rois), batch_idx, idx64,
        static_cast<const __half*>(dy), gx.data(), a, total);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  return gx.finish();
}

cudaError_t launch_roi_align(KType t, const void* x, const void* rois, const void* batch_idx, bool idx64, void* y,
                             const RoiAlignArgs& a, cudaStream_t s) {
  const int64_t total = a.k * a.c * a.oh * a.ow;
  if (total == 0) return cudaSuccess;
  switch (t) {
    case KType::kF32:
      roi_align_kernel<float><<<grid_for(total), kThreads, 0, s>>>(
          static_cast<const float*>(x), static_cast<const float*>(rois), batch_idx, idx64, static_cast<float*>(y), a,
          total);
      break;
    case KType::kF16:
      roi_align_kernel<__half><<<grid_for(total), kThreads, 0, s>>>(
          static_cast<const __half*>(x), static_cast<const __half*>(rois), batch_idx, idx64, static_cast<__half*>(y),
          a, total);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_grid_sample(KType t, const void* x, const void* grid, void* y, const GridSampleArgs& a,
                               cudaStream_t s) {
  if (a.nd != 2 && a.nd != 3) return cudaErrorInvalidValue;
  int64_t total = a.n * a.c;
  for (int d = 0; d < a.nd; ++d) total *= a.out[d];
  if (total == 0) return cudaSuccess;
  switch (t) {
    case KType::kF32:
      grid_sample_kernel<float><<<grid_for(total), kThreads, 0, s>>>(
          static_cast<const float*>(x), static_cast<const float*>(grid), static_cast<float*>(y), a, total);
      break;
    case KType::kF16:
      grid_sample_kernel<__half><<<grid_for(total), kThreads, 0, s>>>(
          static_cast<const __half*>(x), static_cast<const __half*>(grid), static_cast<__half*>(y), a, total);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

GridSampleArgs grid_sample_args(const GridSampleParams& p, const std::vector<int64_t>& x_dims,
                                const std::vector<int64_t>& grid_dims) {
  GridSampleArgs a;
  a.nd = static_cast<int>(x_dims.size()) - 2;
  a.n = x_dims[0], a.c = x_dims[1];
  for (int d = 0; d < a.nd; ++d) {
    a.in[d] = x_dims[2 + d];
    a.out[d] = grid_dims[1 + d];
  }
  a.mode = p.mode == GridSampleParams::Mode::kLinear ? 0 : p.mode == GridSampleParams::Mode::kNearest ? 1 : 2;
  a.padding = p.padding == GridSampleParams::Padding::kZeros ? 0 : p.padding == GridSampleParams::Padding::kBorder ? 1 : 2;
  a.align_corners = p.align_corners;
  a.torch_order = p.torch_order;
  return a;
}

}  // namespace k

// ---- CUDA ops -------------------------------------------------------------------------------------

namespace {

using namespace util;

// float32 only: in float16 a roi corner beyond 1024 pixels loses its fraction and beyond 2048 whole
// pixels, so the fp16 pass keeps RoiAlign in float32 (it asks supports() with float16 inputs).
bool roi_align_supports(const Node& n, std::string* why) {
  if (!require_dtype(n, 0, {DataType::kFloat32}, why)) return false;
  if (in_dtype(n, 1) != in_dtype(n, 0)) return reject(why, "rois must have X's dtype");
  if (!require_dtype(n, 2, {DataType::kInt64, DataType::kInt32}, why)) return false;
  auto p = graft::parse_roi_align_attrs(n.attrs, n.opset);
  if (!p) return reject(why, p.status().message());
  return true;
}

Status roi_align_run(CudaExec& ex) {
  const ExecContext& ctx = *ex.ctx;
  const Tensor &x = *ctx.inputs[0], &rois = *ctx.inputs[1], &bi = *ctx.inputs[2];
  Tensor& y = *ctx.outputs[0];
  auto p = graft::parse_roi_align_attrs(*ctx.attrs, ctx.opset);
  if (!p) return fail(ex, StatusCode::kInvalidModel, p.status().message());
  if (x.rank() != 4 || rois.rank() != 2 || rois.dims()[1] != 4 || bi.rank() != 1 || bi.dims()[0] != rois.dims()[0])
    return fail(ex, StatusCode::kInvalidArgument, "X must be (N, C, H, W), rois (K, 4) and batch_indices (K)");
  k::RoiAlignArgs a;
  a.n = x.dims()[0], a.c = x.dims()[1], a.h = x.dims()[2], a.w = x.dims()[3], a.k = rois.dims()[0];
  a.oh = p->output_height, a.ow = p->output_width, a.sampling_ratio = p->sampling_ratio;
  a.spatial_scale = static_cast<float>(p->spatial_scale);
  a.half_pixel = p->half_pixel;
  a.max_mode = p->pool == graft::RoiAlignParams::Pool::kMax;
  a.max_of_weighted_corners = p->max_of_weighted_corners;
  if (y.dims() != std::vector<int64_t>{a.k, a.c, a.oh, a.ow})
    return fail(ex, StatusCode::kInternal, "output shape differs from (K, C, output_height, output_width)");
  return launch_status(k::launch_roi_align(ktype(x.dtype()), x.data(), rois.data(), bi.data(),
                                           bi.dtype() == DataType::kInt64, y.data(), a, stream_of(ex)),
                       ex);
}

bool grid_sample_supports(const Node& n, std::string* why) {
  if (!require_dtype(n, 0, {DataType::kFloat32, DataType::kFloat16}, why)) return false;
  if (in_dtype(n, 1) != in_dtype(n, 0)) return reject(why, "grid must have X's dtype");
  auto p = graft::parse_grid_sample_attrs(n.attrs, n.opset);
  if (!p) return reject(why, p.status().message());
  return true;
}

Status grid_sample_run(CudaExec& ex) {
  const ExecContext& ctx = *ex.ctx;
  const Tensor &x = *ctx.inputs[0], &grid = *ctx.inputs[1];
  Tensor& y = *ctx.outputs[0];
  auto p = graft::parse_grid_sample_attrs(*ctx.attrs, ctx.opset);
  if (!p) return fail(ex, StatusCode::kInvalidModel, p.status().message());
  const int64_t r = x.rank();
  if ((r != 4 && r != 5) || grid.rank() != r || grid.dims()[0] != x.dims()[0] || grid.dims()[r - 1] != r - 2)
    return fail(ex, StatusCode::kInvalidArgument, "X must be (N, C, spatial...) and grid (N, out..., ", r - 2, ")");
  const k::GridSampleArgs a = k::grid_sample_args(*p, x.dims(), grid.dims());
  return launch_status(k::launch_grid_sample(ktype(x.dtype()), x.data(), grid.data(), y.data(), a, stream_of(ex)),
                       ex);
}

}  // namespace

void append_cuda_sampling_ops(std::vector<CudaOp>& out) {
  out.push_back(CudaOp{"RoiAlign", &roi_align_supports, &roi_align_run, {}, nullptr});
  out.push_back(CudaOp{"GridSample", &grid_sample_supports, &grid_sample_run, {}, nullptr});
}

}  // namespace graft::cuda
