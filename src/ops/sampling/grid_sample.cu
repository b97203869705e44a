// GridSample's CUDA kernels (launchers declared in sampling.h, where ops/grid_sample reaches them too)
// and its CUDA op. The kernels follow the CPU reference of grid_sample.cpp step by step; the op reads
// the attributes with the same parser, so both backends interpret a node alike.
#include "ops/sampling/sampling.h"

#include <cstdint>
#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "ops/sampling/sampling_cuda.cuh"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------------

namespace k {

namespace {

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

// ---- CUDA op ---------------------------------------------------------------------------------------

namespace {

using namespace util;

// The key: X float32/float16; the grid has X's dtype.
bool grid_sample_supports(const Node& n, std::string* why) {
  if (!input0_given(n, why)) return false;
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

void append_cuda_grid_sample_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, {DataType::kFloat32, DataType::kFloat16})},
                              CudaOp{"GridSample", &grid_sample_supports, &grid_sample_run, {}, nullptr}));
}

}  // namespace graft::cuda
