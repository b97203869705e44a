// RoiAlign's CUDA kernels (launchers declared in sampling.h, where ops/roi_align reaches them too) and
// its CUDA op. The kernels follow the CPU reference of roi_align.cpp step by step; the op reads the
// attributes with the same parser, so both backends interpret a node alike.
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

}  // namespace

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

}  // namespace k

// ---- CUDA op ---------------------------------------------------------------------------------------

namespace {

using namespace util;

// The keys: X float32, batch_indices int32/int64; rois have X's dtype. float32 only: in float16 a roi
// corner beyond 1024 pixels loses its fraction and beyond 2048 whole pixels, so the fp16 pass keeps
// RoiAlign in float32 (the key refuses the float16 node it asks about).
bool roi_align_supports(const Node& n, std::string* why) {
  if (!input0_given(n, why)) return false;
  if (in_dtype(n, 1) != in_dtype(n, 0)) return reject(why, "rois must have X's dtype");
  if (!has_input(n, 2)) return reject(why, "input 2 (batch_indices) is missing");
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

}  // namespace

void append_cuda_roi_align_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, {DataType::kFloat32}), input_dtypes(2, kGpuInts)},
                              CudaOp{"RoiAlign", &roi_align_supports, &roi_align_run, {}, nullptr}));
}

}  // namespace graft::cuda
