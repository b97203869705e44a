// Resize's CUDA kernels and op. Nearest is a byte copy of any dtype; linear and cubic repeat the CPU
// reference's double-precision coordinate arithmetic operation by operation, so the indices and
// weights match it exactly. Antialiased linear/cubic and tf_crop_and_resize (float types) take a
// general kernel that works out every axis' taps per output element (resize_taps_kernel).
#include "ops/resize_pad/resize_pad.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/fast_divide.h"
#include "ops/attr_util.h"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------------

namespace k {

// Resize parameters per axis, computed on the host the way the CPU reference does; the device
// repeats the reference's double-precision coordinate arithmetic operation by operation (no FMA
// contraction) so nearest indices and linear weights match it exactly.
enum class ResizeCoord : int { kHalfPixel, kHalfPixelSymmetric, kPytorchHalfPixel, kAlignCorners, kAsymmetric,
                               kTfHalfPixelForNn, kTfCropAndResize };
enum class ResizeNearest : int { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
struct ResizeParams {
  int rank = 0;
  bool linear = false;
  bool cubic = false;            // Keys' cubic convolution, 4 taps per resized axis
  double cubic_a = -0.75;        // cubic_coeff_a
  bool exclude_outside = false;  // cubic: taps outside the input weigh 0, the rest renormalized
  ResizeCoord coord = ResizeCoord::kHalfPixel;
  ResizeNearest nearest = ResizeNearest::kRoundPreferFloor;
  int64_t in_dims[kMaxRank] = {};
  int64_t out_dims[kMaxRank] = {};
  int64_t in_strides[kMaxRank] = {};
  double scale[kMaxRank] = {};
  double resized[kMaxRank] = {};  // real-valued resized length (see the CPU reference)
  bool identity[kMaxRank] = {};   // axis maps each coordinate to itself
  // Opset 18's antialias: linear and cubic axes with scale < 1 read every input under the filter
  // stretched by 1 / scale (the CPU reference's antialias_taps).
  bool antialias = false;
  // tf_crop_and_resize: the region of interest per axis (fractions of the input extent minus one),
  // and the value of an output whose sample falls outside the input on any axis.
  double roi_start[kMaxRank] = {};
  double roi_end[kMaxRank] = {};
  double extrapolation = 0.0;
};

// Nearest: any element size (a byte copy). Linear and cubic: `t` in {f32, f16, bf16}; `elem_size` is
// ignored.
cudaError_t launch_resize(KType t, int elem_size, const void* in, void* out, const ResizeParams& p, int64_t n,
                          cudaStream_t s);

namespace {

// Input coordinate for output coordinate x along axis d: the CPU reference's formulas, each
// operation rounded on its own (the _rn intrinsics are never contracted into an FMA).
__device__ __forceinline__ double resize_source(const ResizeParams& p, int d, double x) {
  const double scale = p.scale[d], din = static_cast<double>(p.in_dims[d]), dout = p.resized[d];
  switch (p.coord) {
    case ResizeCoord::kHalfPixel:
      return __dsub_rn(__ddiv_rn(__dadd_rn(x, 0.5), scale), 0.5);
    case ResizeCoord::kHalfPixelSymmetric: {
      const double adjustment = __ddiv_rn(static_cast<double>(p.out_dims[d]), __dmul_rn(scale, din));
      const double offset = __dmul_rn(__ddiv_rn(din, 2.0), __dsub_rn(1.0, adjustment));
      return __dsub_rn(__dadd_rn(offset, __ddiv_rn(__dadd_rn(x, 0.5), scale)), 0.5);
    }
    case ResizeCoord::kPytorchHalfPixel:
      return dout > 1.0 ? __dsub_rn(__ddiv_rn(__dadd_rn(x, 0.5), scale), 0.5) : 0.0;
    case ResizeCoord::kAlignCorners:
      return dout == 1.0 ? 0.0 : __ddiv_rn(__dmul_rn(x, __dsub_rn(din, 1.0)), __dsub_rn(dout, 1.0));
    case ResizeCoord::kAsymmetric:
      return __ddiv_rn(x, scale);
    case ResizeCoord::kTfHalfPixelForNn:
      return __ddiv_rn(__dadd_rn(x, 0.5), scale);
    case ResizeCoord::kTfCropAndResize: {
      const double rs = p.roi_start[d], re = p.roi_end[d], in1 = __dsub_rn(din, 1.0);
      return dout > 1.0 ? __dadd_rn(__dmul_rn(rs, in1),
                                    __ddiv_rn(__dmul_rn(__dmul_rn(x, __dsub_rn(re, rs)), in1), __dsub_rn(dout, 1.0)))
                        : __dmul_rn(__dmul_rn(0.5, __dadd_rn(rs, re)), in1);
    }
  }
  return 0.0;
}

__device__ __forceinline__ int64_t clamp_index(int64_t i, int64_t n) { return i < 0 ? 0 : (i > n - 1 ? n - 1 : i); }

__device__ __forceinline__ int64_t nearest_of(ResizeNearest m, double x) {
  switch (m) {
    case ResizeNearest::kRoundPreferFloor: return static_cast<int64_t>(ceil(__dsub_rn(x, 0.5)));
    case ResizeNearest::kRoundPreferCeil: return static_cast<int64_t>(floor(__dadd_rn(x, 0.5)));
    case ResizeNearest::kFloor: return static_cast<int64_t>(floor(x));
    case ResizeNearest::kCeil: return static_cast<int64_t>(ceil(x));
  }
  return 0;
}

template <typename E>
__global__ void resize_nearest_kernel(const E* __restrict__ in, E* __restrict__ out, ResizeParams p, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    int64_t rem = i, off = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t o = rem % p.out_dims[d];
      rem /= p.out_dims[d];
      const int64_t src =
          p.identity[d] ? o : clamp_index(nearest_of(p.nearest, resize_source(p, d, static_cast<double>(o))), p.in_dims[d]);
      off += src * p.in_strides[d];
    }
    out[i] = in[off];
  }
}

// Linear: the sum over the corners of the per-axis two-tap stencils, in the reference's order (the
// last resized axis varies fastest), weights multiplied in axis order, accumulated in double.
template <typename T>
__global__ void resize_linear_kernel(const T* __restrict__ in, T* __restrict__ out, ResizeParams p, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    int64_t base = 0;  // offset contributed by identity axes
    int64_t i0[kMaxRank], i1[kMaxRank];
    double w0[kMaxRank], w1[kMaxRank];
    int axes[kMaxRank];
    int nl = 0;
    int64_t rem = i;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t o = rem % p.out_dims[d];
      rem /= p.out_dims[d];
      if (p.identity[d]) {
        base += o * p.in_strides[d];
        continue;
      }
      const double x = resize_source(p, d, static_cast<double>(o));
      const double f = floor(x), frac = __dsub_rn(x, f);
      const int64_t lo = static_cast<int64_t>(f);
      i0[d] = clamp_index(lo, p.in_dims[d]) * p.in_strides[d];
      i1[d] = clamp_index(lo + 1, p.in_dims[d]) * p.in_strides[d];
      w0[d] = __dsub_rn(1.0, frac);
      w1[d] = frac;
    }
    for (int d = 0; d < p.rank; ++d)
      if (!p.identity[d]) axes[nl++] = d;
    double acc = 0.0;
    for (int c = 0; c < (1 << nl); ++c) {
      double w = 1.0;
      int64_t off = base;
      for (int k = 0; k < nl; ++k) {
        const int d = axes[k];
        const bool hi = (c >> (nl - 1 - k)) & 1;
        w = __dmul_rn(w, hi ? w1[d] : w0[d]);
        off += hi ? i1[d] : i0[d];
      }
      if (w != 0.0) acc = __dadd_rn(acc, __dmul_rn(w, static_cast<double>(Elem<T>::ld(in[off]))));
    }
    out[i] = Elem<T>::st(static_cast<typename Elem<T>::C>(static_cast<float>(acc)));
  }
}

// The common case of both kernels above: only the last two axes resized, every leading one an
// identity (NCHW upsampling: a segmentation head's 8x bilinear resize to the input size, an FPN's
// nearest x2), with fewer than 2^31 output elements. The general kernels decompose every index
// over every axis with 64-bit divisions, keep per-axis taps in local arrays and redo the double
// coordinate arithmetic (two divisions per axis) for every element. Here a thread takes one output
// position (oh, ow), works out its taps once, and applies them to every plane of its share: the
// leading axes are one plane index (an identity axis's coordinate is its input coordinate, and the
// input is contiguous), and every plane has the same taps. The arithmetic for the two axes is the
// general kernels', term by term and in the same order (a weight of 1 times w is w exactly), so
// the results are bit-identical to theirs.
struct Resize2d {
  FastDivide out_w;
  int32_t in_h = 0, in_w = 0;
  int32_t hw = 0;      // output positions per plane, out_h * out_w
  int64_t planes = 0;  // product of the leading axes
};

// kLinear false: nearest, T any element type of the right size (a byte copy); true: linear, T in
// {float, __half, __nv_bfloat16}.
template <bool kLinear, typename T>
__global__ void resize_2d_kernel(const T* __restrict__ in, T* __restrict__ out, ResizeParams p, Resize2d q) {
  const int dh = p.rank - 2, dw = p.rank - 1;
  const int64_t in_plane = int64_t{q.in_h} * q.in_w;
  const int64_t stride = int64_t{blockDim.x} * gridDim.x;
  for (int64_t pos = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; pos < q.hw; pos += stride) {
    uint32_t oh, ow;
    q.out_w.divmod(static_cast<uint32_t>(pos), &oh, &ow);
    const double y = resize_source(p, dh, static_cast<double>(oh));
    const double x = resize_source(p, dw, static_cast<double>(ow));
    if constexpr (!kLinear) {
      const int64_t src =
          clamp_index(nearest_of(p.nearest, y), q.in_h) * q.in_w + clamp_index(nearest_of(p.nearest, x), q.in_w);
      for (int64_t pl = blockIdx.y; pl < q.planes; pl += gridDim.y) out[pl * q.hw + pos] = in[pl * in_plane + src];
    } else {
      const double fy = floor(y), fry = __dsub_rn(y, fy), fx = floor(x), frx = __dsub_rn(x, fx);
      const int64_t ly = static_cast<int64_t>(fy), lx = static_cast<int64_t>(fx);
      const int64_t rows[2] = {clamp_index(ly, q.in_h) * q.in_w, clamp_index(ly + 1, q.in_h) * q.in_w};
      const int64_t cols[2] = {clamp_index(lx, q.in_w), clamp_index(lx + 1, q.in_w)};
      const double wy[2] = {__dsub_rn(1.0, fry), fry}, wx[2] = {__dsub_rn(1.0, frx), frx};
      // The general kernel's corners in its order (the last axis fastest) and their weights.
      int64_t off[4];
      double w[4];
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        off[c] = rows[c >> 1] + cols[c & 1];
        w[c] = __dmul_rn(wy[c >> 1], wx[c & 1]);
      }
      for (int64_t pl = blockIdx.y; pl < q.planes; pl += gridDim.y) {
        const T* src = in + pl * in_plane;
        double acc = 0.0;
#pragma unroll
        for (int c = 0; c < 4; ++c)
          if (w[c] != 0.0) acc = __dadd_rn(acc, __dmul_rn(w[c], static_cast<double>(Elem<T>::ld(src[off[c]]))));
        out[pl * q.hw + pos] = Elem<T>::st(static_cast<typename Elem<T>::C>(static_cast<float>(acc)));
      }
    }
  }
}

// The 2-D kernels' parameters when they apply (see above), else nullopt.
std::optional<Resize2d> resize_2d_of(const ResizeParams& p, int64_t n) {
  if (p.rank < 2 || n <= 0 || n >= (int64_t{1} << 31)) return std::nullopt;
  for (int d = 0; d < p.rank - 2; ++d)
    if (!p.identity[d]) return std::nullopt;
  const int dh = p.rank - 2, dw = p.rank - 1;
  if (p.identity[dh] || p.identity[dw] || p.in_dims[dh] <= 0 || p.in_dims[dw] <= 0) return std::nullopt;
  // The input extents are held as int32 (the output's count is bounded above; a downsample's input
  // is not): a larger one takes the general kernels.
  if (p.in_dims[dh] > INT32_MAX || p.in_dims[dw] > INT32_MAX) return std::nullopt;
  Resize2d q;
  q.out_w = FastDivide(static_cast<uint32_t>(p.out_dims[dw]));
  q.in_h = static_cast<int32_t>(p.in_dims[dh]);
  q.in_w = static_cast<int32_t>(p.in_dims[dw]);
  q.hw = static_cast<int32_t>(p.out_dims[dh] * p.out_dims[dw]);
  q.planes = n / q.hw;
  return q;
}

// Positions along x, planes along y: about 2048 blocks in all (some 15 per multiprocessor of an
// H200), so a thread's taps serve many planes where the planes are many.
dim3 resize_2d_grid(const Resize2d& q) {
  const unsigned gx = grid_for(q.hw);
  const int64_t gy = std::min<int64_t>({(2048 + gx - 1) / gx, q.planes, 65535});
  return dim3(gx, static_cast<unsigned>(std::max<int64_t>(gy, 1)));
}

// Keys' cubic convolution weight at distance x with parameter a: the CPU reference's cubic_weight,
// each operation rounded on its own.
__device__ __forceinline__ double cubic_weight(double x, double a) {
  x = fabs(x);
  if (x <= 1.0)
    return __dadd_rn(__dmul_rn(__dmul_rn(__dsub_rn(__dmul_rn(__dadd_rn(a, 2.0), x), __dadd_rn(a, 3.0)), x), x), 1.0);
  if (x < 2.0)
    return __dsub_rn(__dmul_rn(__dadd_rn(__dmul_rn(__dsub_rn(__dmul_rn(a, x), __dmul_rn(5.0, a)), x), __dmul_rn(8.0, a)),
                               x),
                     __dmul_rn(4.0, a));
  return 0.0;
}

// The floor of a source coordinate as an index, saturated and clamped as the CPU does (x from
// extreme scales may be huge or NaN).
__device__ __forceinline__ int64_t floor_index(double f, int64_t in) {
  const int64_t lo = saturating_i64(f);
  return lo < -4 ? -4 : (lo > in + 4 ? in + 4 : lo);
}

// The cubic stencil's four weights for taps lo - 1 .. lo + 2 at fractional offset `frac`, as the
// CPU reference makes them: exclude_outside zeroes the taps outside [0, in) and renormalizes.
__device__ __forceinline__ void cubic_taps(const ResizeParams& p, int64_t lo, double frac, int64_t in, double w[4]) {
  double total = 0.0;
  for (int k = 0; k < 4; ++k) {
    const int64_t src = lo + k - 1;
    double wk = cubic_weight(__dsub_rn(static_cast<double>(k - 1), frac), p.cubic_a);
    if (p.exclude_outside && (src < 0 || src >= in)) wk = 0.0;
    w[k] = wk;
    total = __dadd_rn(total, wk);
  }
  if (p.exclude_outside && total != 0.0)
    for (int k = 0; k < 4; ++k) w[k] = __ddiv_rn(w[k], total);
}

// Cubic: the per-axis four-tap stencils of the CPU reference (taps at floor(x) - 1 .. floor(x) + 2,
// clamped to the edge; exclude_outside zeroes the taps outside and renormalizes), summed over their
// tensor product in the linear kernel's order (the last resized axis fastest), accumulated in
// double. The CPU applies the same weights one axis at a time, so the two differ only in the order
// of double additions.
template <typename T>
__global__ void resize_cubic_kernel(const T* __restrict__ in, T* __restrict__ out, ResizeParams p, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    int64_t base = 0;  // offset contributed by identity axes
    int64_t at[kMaxRank][4];
    double w[kMaxRank][4];
    int axes[kMaxRank];
    int nl = 0;
    int64_t rem = i;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t o = rem % p.out_dims[d];
      rem /= p.out_dims[d];
      if (p.identity[d]) {
        base += o * p.in_strides[d];
        continue;
      }
      const double x = resize_source(p, d, static_cast<double>(o));
      const double f = floor(x), frac = __dsub_rn(x, f);
      const int64_t lo = floor_index(f, p.in_dims[d]);
      cubic_taps(p, lo, frac, p.in_dims[d], w[d]);
      for (int k = 0; k < 4; ++k) at[d][k] = clamp_index(lo + k - 1, p.in_dims[d]) * p.in_strides[d];
    }
    for (int d = 0; d < p.rank; ++d)
      if (!p.identity[d]) axes[nl++] = d;
    double acc = 0.0;
    const int64_t combos = int64_t{1} << (2 * nl);
    for (int64_t c = 0; c < combos; ++c) {
      double wc = 1.0;
      int64_t off = base;
      for (int k = 0; k < nl; ++k) {
        const int d = axes[k];
        const int t = static_cast<int>((c >> (2 * (nl - 1 - k))) & 3);
        wc = __dmul_rn(wc, w[d][t]);
        off += at[d][t];
      }
      if (wc != 0.0) acc = __dadd_rn(acc, __dmul_rn(wc, static_cast<double>(Elem<T>::ld(in[off]))));
    }
    out[i] = Elem<T>::st(static_cast<typename Elem<T>::C>(static_cast<float>(acc)));
  }
}

// One axis' taps for one output coordinate in the general kernel: `count` taps reading inputs
// first, first + 1, ... (each clamped to the edge). Explicit weights for the plain modes; an
// antialiased axis works its weights out per tap instead (they may be many), from the CPU
// reference's formula: raw weight f(scale * (start + k - ratio)) / total, then, with
// exclude_outside, 0 outside the input and the rest divided by `kept`.
struct AxisTaps {
  int64_t first = 0;
  int64_t count = 1;
  bool antialiased = false;
  double w[4] = {1.0, 0.0, 0.0, 0.0};
  int64_t start = 0;  // antialiased: the filter's first tap relative to the sample's floor
  double ratio = 0.0, scale = 1.0, total = 0.0, kept = 0.0;
};

__device__ __forceinline__ double antialias_raw(const ResizeParams& p, const AxisTaps& a, int64_t k) {
  const double arg = __dmul_rn(a.scale, __dsub_rn(static_cast<double>(a.start + k), a.ratio));
  return p.cubic ? cubic_weight(arg, p.cubic_a) : fmin(fmax(__dsub_rn(1.0, fabs(arg)), 0.0), 1.0);
}

__device__ __forceinline__ double tap_weight(const ResizeParams& p, const AxisTaps& a, int64_t k, int64_t in) {
  if (!a.antialiased) return a.w[k];
  double w = antialias_raw(p, a, k);
  if (a.total != 0.0) w = __ddiv_rn(w, a.total);
  if (p.exclude_outside) {
    const int64_t i = a.first + k;
    if (i < 0 || i >= in) return 0.0;
    if (a.kept != 0.0) w = __ddiv_rn(w, a.kept);
  }
  return w;
}

// The taps of output coordinate o along axis d; false when tf_crop_and_resize samples outside the
// input there (the element is the extrapolation value).
__device__ bool axis_taps(const ResizeParams& p, int d, int64_t o, AxisTaps* t) {
  const int64_t in = p.in_dims[d];
  const double x = resize_source(p, d, static_cast<double>(o));
  if (p.coord == ResizeCoord::kTfCropAndResize && (x < 0.0 || x > static_cast<double>(in - 1))) return false;
  if (p.antialias && p.scale[d] < 1.0 && (p.linear || p.cubic)) {
    double f = floor(x), ratio = __dsub_rn(x, f);
    if (ratio == 0.0) {  // an integral x counts as r = 1 from the sample below it
      ratio = 1.0;
      f = __dsub_rn(f, 1.0);
    }
    t->antialiased = true;
    t->ratio = ratio;
    t->scale = p.scale[d];
    t->start = saturating_i64(floor(__ddiv_rn(p.cubic ? -2.0 : -1.0, p.scale[d]))) + 1;
    t->count = 2 - 2 * t->start;  // symmetric about the sample: start .. 1 - start
    int64_t base = saturating_i64(f);
    base = base < -in - 4 ? -in - 4 : (base > 2 * in + 4 ? 2 * in + 4 : base);
    t->first = base + t->start;
    double total = 0.0;
    for (int64_t k = 0; k < t->count; ++k) total = __dadd_rn(total, antialias_raw(p, *t, k));
    t->total = total;
    if (p.exclude_outside) {
      double kept = 0.0;
      for (int64_t k = 0; k < t->count; ++k) {
        const int64_t i = t->first + k;
        if (i < 0 || i >= in) continue;
        const double w = antialias_raw(p, *t, k);
        kept = __dadd_rn(kept, total != 0.0 ? __ddiv_rn(w, total) : w);
      }
      t->kept = kept;
    }
    return true;
  }
  if (!p.linear && !p.cubic) {
    t->first = clamp_index(nearest_of(p.nearest, x), in);
    return true;
  }
  const double f = floor(x), frac = __dsub_rn(x, f);
  const int64_t lo = floor_index(f, in);
  if (p.linear) {
    t->first = lo;
    t->count = 2;
    t->w[0] = __dsub_rn(1.0, frac);
    t->w[1] = frac;
    return true;
  }
  t->first = lo - 1;
  t->count = 4;
  cubic_taps(p, lo, frac, in, t->w);
  return true;
}

// The general kernel (antialias, tf_crop_and_resize): per output element, every resized axis' taps,
// then the sum over their tensor product (the last resized axis fastest), weights multiplied in axis
// order, accumulated in double; a zero weight is skipped, as in the CPU reference, so an infinite
// input that only a zero weight reaches does not make the sum NaN.
template <typename T>
__global__ void resize_taps_kernel(const T* __restrict__ in, T* __restrict__ out, ResizeParams p, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    AxisTaps taps[kMaxRank];
    int axes[kMaxRank];
    int nl = 0;
    int64_t base = 0;  // offset contributed by identity axes
    bool outside = false;
    int64_t rem = i;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t o = rem % p.out_dims[d];
      rem /= p.out_dims[d];
      if (p.identity[d]) {
        base += o * p.in_strides[d];
        continue;
      }
      if (!axis_taps(p, d, o, &taps[d])) outside = true;
    }
    if (outside) {
      out[i] = Elem<T>::st(static_cast<typename Elem<T>::C>(static_cast<float>(p.extrapolation)));
      continue;
    }
    for (int d = 0; d < p.rank; ++d)
      if (!p.identity[d]) axes[nl++] = d;
    int64_t digit[kMaxRank] = {};
    double acc = 0.0;
    for (;;) {
      double w = 1.0;
      int64_t off = base;
      for (int k = 0; k < nl; ++k) {
        const int d = axes[k];
        w = __dmul_rn(w, tap_weight(p, taps[d], digit[k], p.in_dims[d]));
        off += clamp_index(taps[d].first + digit[k], p.in_dims[d]) * p.in_strides[d];
      }
      if (w != 0.0) acc = __dadd_rn(acc, __dmul_rn(w, static_cast<double>(Elem<T>::ld(in[off]))));
      int k = nl - 1;  // the next combination: an odometer over the axes' taps
      while (k >= 0 && ++digit[k] == taps[axes[k]].count) digit[k--] = 0;
      if (k < 0) break;
    }
    out[i] = Elem<T>::st(static_cast<typename Elem<T>::C>(static_cast<float>(acc)));
  }
}

}  // namespace

cudaError_t launch_resize(KType t, int elem_size, const void* in, void* out, const ResizeParams& p, int64_t n,
                          cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const unsigned g = grid_for(n);
  if (p.antialias || p.coord == ResizeCoord::kTfCropAndResize) {
    GRAFT_FLOAT_DISPATCH(t, (resize_taps_kernel<T><<<g, kThreads, 0, s>>>(static_cast<const T*>(in),
                                                                          static_cast<T*>(out), p, n)));
    return cudaGetLastError();
  }
  const std::optional<Resize2d> q = p.cubic ? std::nullopt : resize_2d_of(p, n);
  const dim3 g2 = q ? resize_2d_grid(*q) : dim3();
  if (!p.linear && !p.cubic && q) {
#define L(E) resize_2d_kernel<false, E><<<g2, kThreads, 0, s>>>(static_cast<const E*>(in), static_cast<E*>(out), p, *q)
    GRAFT_SIZE_DISPATCH(elem_size, L(E))
#undef L
    return cudaGetLastError();
  }
  if (!p.linear && !p.cubic) {
#define L(E) resize_nearest_kernel<E><<<g, kThreads, 0, s>>>(static_cast<const E*>(in), static_cast<E*>(out), p, n)
    GRAFT_SIZE_DISPATCH(elem_size, L(E))
#undef L
    return cudaGetLastError();
  }
  if (p.cubic) {
    switch (t) {
      case KType::kF32:
        resize_cubic_kernel<float><<<g, kThreads, 0, s>>>(static_cast<const float*>(in), static_cast<float*>(out), p, n);
        break;
      case KType::kF16:
        resize_cubic_kernel<__half><<<g, kThreads, 0, s>>>(static_cast<const __half*>(in), static_cast<__half*>(out), p, n);
        break;
      case KType::kBF16:
        resize_cubic_kernel<__nv_bfloat16>
            <<<g, kThreads, 0, s>>>(static_cast<const __nv_bfloat16*>(in), static_cast<__nv_bfloat16*>(out), p, n);
        break;
      default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
  }
  if (q) {
    switch (t) {
      case KType::kF32:
        resize_2d_kernel<true, float><<<g2, kThreads, 0, s>>>(static_cast<const float*>(in), static_cast<float*>(out), p, *q);
        break;
      case KType::kF16:
        resize_2d_kernel<true, __half><<<g2, kThreads, 0, s>>>(static_cast<const __half*>(in), static_cast<__half*>(out), p,
                                                                *q);
        break;
      case KType::kBF16:
        resize_2d_kernel<true, __nv_bfloat16><<<g2, kThreads, 0, s>>>(static_cast<const __nv_bfloat16*>(in),
                                                                       static_cast<__nv_bfloat16*>(out), p, *q);
        break;
      default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
  }
  switch (t) {
    case KType::kF32:
      resize_linear_kernel<float><<<g, kThreads, 0, s>>>(static_cast<const float*>(in), static_cast<float*>(out), p, n);
      break;
    case KType::kF16:
      resize_linear_kernel<__half><<<g, kThreads, 0, s>>>(static_cast<const __half*>(in), static_cast<__half*>(out), p, n);
      break;
    case KType::kBF16:
      resize_linear_kernel<__nv_bfloat16><<<g, kThreads, 0, s>>>(static_cast<const __nv_bfloat16*>(in),
                                                                 static_cast<__nv_bfloat16*>(out), p, n);
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA op ---------------------------------------------------------------------------------------

namespace {

using namespace util;

// ---- Resize: nearest (any dtype, a byte copy) and linear (float types) ----

// Every mode and coordinate transform. Nearest moves any dtype's bytes, except under
// tf_crop_and_resize, whose extrapolation value the general kernel writes in a float type.
bool resize_supports(const Node& n, std::string* why) {
  if (!same_bytes_ok(n, why) || !rank_fits(n, 0, why)) return false;
  auto a = graft::parse_resize_attrs(n.attrs, n.input(0)->desc.rank());
  if (!a.is_ok()) return reject(why, a.status().to_string());
  const graft::ResizeAttrs& ra = a.value();
  if (ra.mode != graft::ResizeAttrs::Mode::kNearest || ra.coordinate_mode == "tf_crop_and_resize") {
    if (!require_dtype(n, 0, {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}, why)) return false;
  }
  if (n.opset != 0 && n.opset < 11) return reject(why, "Resize before opset 11 is not handled");
  return true;
}

Status resize_run(CudaExec& ex) {
  const ExecContext& ctx = *ex.ctx;
  const Tensor* X = ctx.inputs.empty() ? nullptr : ctx.inputs[0];
  if (!X) return fail(ex, StatusCode::kInvalidModel, "input X is missing");
  auto input_at = [&](size_t i) -> const Tensor* { return i < ctx.inputs.size() ? ctx.inputs[i] : nullptr; };
  auto pa = graft::parse_resize_attrs(*ctx.attrs, X->rank());
  if (!pa.is_ok()) return with_node(ex, pa.status());
  const graft::ResizeAttrs& a = pa.value();
  const bool linear = a.mode == graft::ResizeAttrs::Mode::kLinear;
  const bool cubic = a.mode == graft::ResizeAttrs::Mode::kCubic;
  std::vector<int64_t> out_dims;
  std::vector<double> scale;
  GRAFT_RETURN_IF_ERROR(
      with_node(ex, graft::resize_output(a, X->dims(), input_at(1), input_at(2), input_at(3), &out_dims, &scale)));
  GRAFT_RETURN_IF_ERROR(with_node(ex, graft::check_antialias_taps(a, scale, out_dims)));
  Tensor& Y = *ctx.outputs[0];
  GRAFT_RETURN_IF_ERROR(check_same_dtype(ex, *X, Y));
  if (Y.dims() != out_dims)
    return fail(ex, StatusCode::kInternal, "output shape ", dims_str(Y.dims()), " differs from ", dims_str(out_dims));
  const size_t r = out_dims.size();
  if (r > static_cast<size_t>(k::kMaxRank)) return fail(ex, StatusCode::kUnsupported, "rank exceeds ", k::kMaxRank);
  k::ResizeParams p;
  p.rank = static_cast<int>(r);
  p.linear = linear;
  p.cubic = cubic;
  p.cubic_a = a.cubic_coeff_a;
  p.exclude_outside = a.exclude_outside;
  p.extrapolation = a.extrapolation_value;
  const std::string& m = a.coordinate_mode;
  p.coord = m == "half_pixel"             ? k::ResizeCoord::kHalfPixel
            : m == "half_pixel_symmetric" ? k::ResizeCoord::kHalfPixelSymmetric
            : m == "pytorch_half_pixel"   ? k::ResizeCoord::kPytorchHalfPixel
            : m == "align_corners"        ? k::ResizeCoord::kAlignCorners
            : m == "asymmetric"           ? k::ResizeCoord::kAsymmetric
            : m == "tf_half_pixel_for_nn" ? k::ResizeCoord::kTfHalfPixelForNn
                                          : k::ResizeCoord::kTfCropAndResize;
  if (m != "half_pixel" && m != "half_pixel_symmetric" && m != "pytorch_half_pixel" && m != "align_corners" &&
      m != "asymmetric" && m != "tf_half_pixel_for_nn" && m != "tf_crop_and_resize")
    return fail(ex, StatusCode::kUnsupported, "coordinate_transformation_mode '", m, "'");
  if (m == "tf_crop_and_resize") {  // the region of interest, read as the CPU reference reads it
    const Tensor* roi = input_at(1);
    if (roi && roi->defined() && roi->device() != DeviceType::kCPU)
      return fail(ex, StatusCode::kInternal, "roi must be a host input");
    std::vector<double> start, end;
    GRAFT_RETURN_IF_ERROR(with_node(ex, graft::resize_roi(a, roi, r, &start, &end)));
    std::copy(start.begin(), start.end(), p.roi_start);
    std::copy(end.begin(), end.end(), p.roi_end);
  }
  const std::string& nm = a.nearest_mode;
  p.nearest = nm == "round_prefer_floor"  ? k::ResizeNearest::kRoundPreferFloor
              : nm == "round_prefer_ceil" ? k::ResizeNearest::kRoundPreferCeil
              : nm == "floor"             ? k::ResizeNearest::kFloor
                                          : k::ResizeNearest::kCeil;
  const auto is = contiguous_strides(X->dims());
  // As in the reference: sizes with "stretch" fix the resized length exactly; otherwise it is the
  // input extent times the scale. Unlisted axes, and unchanged ones under a non-shifting
  // transform, map each coordinate to itself.
  const bool given_scales = input_at(2) && input_at(2)->defined() && input_at(2)->numel() > 0;
  const bool exact = !given_scales && a.keep_aspect_ratio == "stretch";
  for (size_t ax = 0; ax < r; ++ax) {
    const bool listed = std::find(a.axes.begin(), a.axes.end(), static_cast<int64_t>(ax)) != a.axes.end();
    p.identity[ax] = !listed || (scale[ax] == 1.0 && out_dims[ax] == X->dims()[ax] && m != "tf_half_pixel_for_nn" &&
                                 m != "tf_crop_and_resize");
    if ((linear || cubic) && a.antialias && listed && scale[ax] < 1.0) p.antialias = true;
    p.in_dims[ax] = X->dims()[ax];
    p.out_dims[ax] = out_dims[ax];
    p.in_strides[ax] = is[ax];
    p.scale[ax] = scale[ax];
    p.resized[ax] = exact ? static_cast<double>(out_dims[ax]) : static_cast<double>(X->dims()[ax]) * scale[ax];
  }
  if (Y.numel() == 0) return Status::ok();
  return launch_status(k::launch_resize(ktype(X->dtype()), esize(*X), X->data(), Y.data(), p, Y.numel(), stream_of(ex)),
                       ex);
}

}  // namespace

void append_cuda_resize_ops(std::vector<CudaOp>& out) {
  // Nearest moves any dtype's bytes; linear and cubic take the float types only (resize_supports).
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuEveryDtype)},
                              CudaOp{"Resize", &resize_supports, &resize_run, {1, 2, 3}, nullptr}));
}

}  // namespace graft::cuda
