// CUDA kernels of modulated deformable convolution (im2col + GEMM).
//
// Forward, a chunk of images at a time (as many as the workspace holds; the declared workspace
// bounds a chunk's columns to kColumnsCapBytes), in one of two layouts. Channels-last, when each
// conv group and deform group is a whole number of 16-byte channel vectors (every DCN-ResNet stage):
// x is transposed to (N, H, W, C), `columns_channels_last_kernel` writes position-major columns with
// one 16-byte load per corner and one store per vector of channels, and one transposed-A matmul per
// conv group against weights packed to match (`pack_weights_kernel`, the bias as one more reduction
// row) gives the output. Otherwise, NCHW: `columns_kernel` writes the modulated bilinear
// samples of every image of the chunk in the input dtype, image after image, each a C*kh*kw by Ho*Wo
// matrix (row c*K + k: channel c, kernel tap k). Then cuBLASLt multiplies each conv group's weights
// (Co/groups x C/groups*K) by its rows of every image's matrix in one strided-batched matmul (the
// weights broadcast with batch stride 0), writing straight into the (N, Co, Ho, Wo) output; with a
// bias the output is filled with it first and the matmul adds onto it (beta = 1). FP16 runs half
// operands with float accumulation (CUBLAS_COMPUTE_32F), FP32 runs float without TF32, so both stay
// within the op-test tolerances of the float64 CPU reference.
//
// Backward, per image: the column gradient is W^T * grad_out (one GEMM per group); grad_weight
// accumulates grad_out * columns^T over the images; `col2im_kernel` scatters the column gradient
// times mask times the bilinear corner weights into grad_x (float atomics: for __half into a float
// buffer converted afterwards); `offset_mask_kernel` gives each (deform group, tap, position) its
// offset and mask gradients by summing over the group's channels, so those are written once,
// without atomics. grad_bias is a per-channel reduction of grad_out. The backward's GEMMs are a plain
// 16x16 shared-memory tiled kernel over strided operands and its columns are float.
#include "ops/modulated_deform_conv2d/modulated_deform_conv2d_kernels.cuh"

#include <cublasLt.h>

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

#include "backends/cuda/owned_handle.h"

namespace graft::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kTile = 16;

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }

// Where one kernel tap samples: grid position plus offset, mmcv's validity rule (-1 < y < H and
// -1 < x < W, which also rejects NaN) and the bilinear cell. I is the index type: int64_t, or int
// where every index within one image fits (32-bit division takes far fewer instructions and registers).
template <typename I>
struct Tap {
  I y0, x0;
  float ly, lx, m;
  bool inside;
};

// Tap of (channel group g, kernel tap kk, output position pos) of one image; `off` and `mask` point at
// the image's offset and mask.
template <typename I, typename T>
__device__ __forceinline__ Tap<I> locate(const T* __restrict__ off, const T* __restrict__ mask, const MdcnSizes& z, I g,
                                         I kk, I pos) {
  const I k = static_cast<I>(z.kh * z.kw), p = static_cast<I>(z.ho * z.wo), wo = static_cast<I>(z.wo),
          kw = static_cast<I>(z.kw);
  const I oy = pos / wo, ox = pos - oy * wo, i = kk / kw, j = kk - i * kw;
  const I oi = (g * 2 * k + 2 * kk) * p + pos;
  const float y = static_cast<float>(oy * z.sh - z.ph + i * z.dh) + to_float(off[oi]);
  const float x = static_cast<float>(ox * z.sw - z.pw + j * z.dw) + to_float(off[oi + p]);
  Tap<I> t;
  t.m = to_float(mask[(g * k + kk) * p + pos]);
  t.inside = y > -1.0f && x > -1.0f && y < static_cast<float>(z.h) && x < static_cast<float>(z.w);
  const float yf = t.inside ? floorf(y) : 0.0f, xf = t.inside ? floorf(x) : 0.0f;
  t.y0 = static_cast<I>(yf);
  t.x0 = static_cast<I>(xf);
  t.ly = t.inside ? y - yf : 0.0f;
  t.lx = t.inside ? x - xf : 0.0f;
  return t;
}

// The four corners (y0,x0), (y0,x0+1), (y0+1,x0), (y0+1,x0+1) of a tap in one plane; zero outside.
template <typename T>
__device__ __forceinline__ void corners(const T* __restrict__ plane, const Tap<int64_t>& t, int64_t h, int64_t w,
                                        float (&v)[4]) {
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int64_t yy = t.y0 + (q >> 1), xx = t.x0 + (q & 1);
    v[q] = (yy >= 0 && xx >= 0 && yy < h && xx < w) ? to_float(plane[yy * w + xx]) : 0.0f;
  }
}

// The bilinear weights of a tap's four corners, in corners()'s order, and each corner's index in
// a plane, or -1 where it reads zero (outside the image, or no sample at all).
template <typename I>
__device__ __forceinline__ void corner_taps(const Tap<I>& t, I h, I w, I (&at)[4], float (&cw)[4]) {
  const float hy = 1.0f - t.ly, hx = 1.0f - t.lx;
  cw[0] = hy * hx, cw[1] = hy * t.lx, cw[2] = t.ly * hx, cw[3] = t.ly * t.lx;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const I yy = t.y0 + (q >> 1), xx = t.x0 + (q & 1);
    at[q] = (t.inside && yy >= 0 && xx >= 0 && yy < h && xx < w) ? yy * w + xx : I{-1};
  }
}

// col[(c*K + kk)*images*P + n*P + pos] = mask * bilinear(x[n, c]) for `images` images: each row of the
// columns holds the images' positions side by side, so one matmul per conv group multiplies the
// whole chunk (one image: the plain (C*K, P) matrix).
// A thread takes one (tap, output position) and CPT consecutive channels of one deform group:
// they share the offsets and mask, so the sample position, its corners and their weights are
// computed once and reused for each channel. Grid: x over positions (consecutive threads write
// consecutive columns), y over (channel block, tap), z over images; each loops past the grid's
// limits. TC is T for the forward (half columns for FP16) and float for the backward; I indexes
// within one image (see Tap).
//
// Every corner is loaded, a corner outside the image from the plane's first element, and its value
// then dropped by a select: a load under a branch cannot be issued before the stores of the
// channels before it, so each channel waited for its four loads in turn; unconditional loads of a
// compile-time number of channels all issue before the first store (4 * CPT loads in flight per
// thread). The select, not a zero weight, drops the value, so a NaN or infinity there stays out.
template <int CPT, typename I, typename T, typename TC>
__global__ void __launch_bounds__(kThreads)
columns_kernel(const T* __restrict__ x, const T* __restrict__ off, const T* __restrict__ mask, TC* __restrict__ col,
               MdcnSizes z, int64_t images) {
  const I k = static_cast<I>(z.kh * z.kw), p = static_cast<I>(z.ho * z.wo), hw = static_cast<I>(z.h * z.w);
  const I cpd = static_cast<I>(z.c / z.deform_groups), h = static_cast<I>(z.h), w = static_cast<I>(z.w);
  const int64_t rows = z.c / CPT * z.kh * z.kw;
  const I pitch = static_cast<I>(images * z.ho * z.wo);  // one row of the columns
  for (int64_t n = blockIdx.z; n < images; n += gridDim.z) {
    const T* x_n = x + n * z.c * z.h * z.w;
    const T* off_n = off + n * 2 * z.deform_groups * k * p;
    const T* mask_n = mask + n * z.deform_groups * k * p;
    TC* col_n = col + n * z.ho * z.wo;
    for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
      const I kk = static_cast<I>(r) % k, c0 = static_cast<I>(r) / k * CPT;
      for (int64_t q = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; q < p;
           q += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const I pos = static_cast<I>(q);
        const Tap<I> t = locate<I>(off_n, mask_n, z, c0 / cpd, kk, pos);
        I at[4];
        float cw[4];
        corner_taps(t, h, w, at, cw);
        I from[4];
        bool use[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) use[e] = at[e] >= 0, from[e] = use[e] ? at[e] : I{0};
        const T* plane = x_n + c0 * hw;
        float corner[CPT][4] = {};
        // An empty plane (H or W 0, the output made by padding alone) has no first element to read:
        // every tap is outside it then (the branch is the same for the whole grid).
        if (hw != 0) {
#pragma unroll
          for (int c = 0; c < CPT; ++c)
#pragma unroll
            for (int e = 0; e < 4; ++e) corner[c][e] = to_float(plane[c * hw + from[e]]);
        }
        TC* dst = col_n + (c0 * k + kk) * pitch + pos;
#pragma unroll
        for (int c = 0; c < CPT; ++c) {
          float v = 0.0f;
#pragma unroll
          for (int e = 0; e < 4; ++e) v = fmaf(cw[e], use[e] ? corner[c][e] : 0.0f, v);
          // The mask multiplies the sum, as in the CPU reference (a NaN mask stays NaN).
          dst[c * k * pitch] = from_float<TC>(t.m * v);
        }
      }
    }
  }
}

// ---- the channels-last forward ------------------------------------------------------------------
// When every conv group and every deform group spans whole 16-byte channel vectors (8 half or 4
// float channels), the forward samples a channels-last copy of x: the V channels a thread computes
// for one corner are one 16-byte load, and the warp's lanes, over consecutive vectors of one position,
// read and write whole contiguous lines. From x in its own layout each channel is a separate 2- or
// 4-byte gather, and the column pass is bound by the load instructions rather than by memory.
template <typename T>
constexpr int kVec = 16 / static_cast<int>(sizeof(T));

// Whether every conv group and every deform group holds a whole number of runs of `channels`.
bool groups_hold(const MdcnSizes& z, int64_t channels) {
  return (z.c / z.groups) % channels == 0 && (z.c / z.deform_groups) % channels == 0;
}

// The channels a channels-last thread reads per access: a 16-byte vector where every conv group and
// deform group holds whole ones, else one.
template <typename T>
int run_width(const MdcnSizes& z) {
  return groups_hold(z, kVec<T>) ? kVec<T> : 1;
}

// V consecutive channels of T: one 16-byte access (V = kVec<T>), or one value (V = 1, where the
// groups do not hold whole vectors and x comes channels-last anyway: channels_last_io).
template <typename T, int V>
struct alignas(V * sizeof(T)) Run {
  T v[V];
};

// The run at p, or zeros where !use (the select drops the value, so a NaN there stays out); the
// load itself is unconditional (p is always in bounds).
template <typename T, int V>
__device__ __forceinline__ Run<T, V> load_run(const T* p, bool use) {
  Run<T, V> r;
  if constexpr (V == kVec<T>) {
    uint4 raw = __ldg(reinterpret_cast<const uint4*>(p));
    if (!use) raw = make_uint4(0, 0, 0, 0);  // four 32-bit selects rather than one per channel
    memcpy(&r, &raw, sizeof(raw));
  } else {
    static_assert(V == 1, "a run is one value or one 16-byte vector");
    r.v[0] = use ? p[0] : from_float<T>(0.0f);
  }
  return r;
}

// Stores V floats as one 16-byte vector of T. __stwb is an ordinary (write-back) store: nvcc split
// an assignment through a float4 or uint4 pointer into four stores here.
__device__ __forceinline__ void store_vec(float* dst, const float (&v)[4]) {
  __stwb(reinterpret_cast<float4*>(dst), make_float4(v[0], v[1], v[2], v[3]));
}
__device__ __forceinline__ uint32_t half_pair(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);  // one conversion instruction for both
  return *reinterpret_cast<const uint32_t*>(&h);
}
__device__ __forceinline__ void store_vec(__half* dst, const float (&v)[8]) {
  __stwb(reinterpret_cast<uint4*>(dst),
         make_uint4(half_pair(v[0], v[1]), half_pair(v[2], v[3]), half_pair(v[4], v[5]), half_pair(v[6], v[7])));
}
template <typename T>
__device__ __forceinline__ void store_vec(T* dst, const float (&v)[1]) {
  dst[0] = from_float<T>(v[0]);
}

// xt[n][s][c] = x[n][c][s] over images of C channels of S = H*W values, through 32x32 tiles in
// shared memory (float holds a __half exactly). Grid: x over S tiles, y over C tiles, z over images.
template <typename T>
__global__ void __launch_bounds__(kThreads)
channels_last_kernel(const T* __restrict__ x, T* __restrict__ xt, int c, int s, int64_t images) {
  __shared__ float tile[32][33];
  const int s0 = static_cast<int>(blockIdx.x) * 32, c0 = static_cast<int>(blockIdx.y) * 32;
  const int tx = static_cast<int>(threadIdx.x) % 32, ty = static_cast<int>(threadIdx.x) / 32;
  for (int64_t n = blockIdx.z; n < images; n += gridDim.z) {
    const T* src = x + n * c * s;
    T* dst = xt + n * c * s;
    for (int i = ty; i < 32; i += kThreads / 32)
      if (c0 + i < c && s0 + tx < s) tile[i][tx] = to_float(src[(c0 + i) * s + s0 + tx]);
    __syncthreads();
    for (int i = ty; i < 32; i += kThreads / 32)
      if (s0 + i < s && c0 + tx < c) dst[(s0 + i) * c + c0 + tx] = from_float<T>(tile[tx][i]);
    __syncthreads();
  }
}

// The weights as the channels-last columns want them: row co of kr values, per conv group the
// group's K*cg weights tap-major (wt[co][kk*cg + ci] = w[co][ci][kk]), then the bias (0 without)
// where the columns hold 1, and zeros to the end of the row. Folding the bias into the matmul
// saves the pass that filled the output with it.
//
// A block takes one output channel and a chunk of `chunk` input channels, whose weights are
// contiguous in w (chunk*K values): it reads them into shared memory coalesced and writes each tap's
// run of the chunk's channels. Gathering from w directly (a stride of K between neighbouring
// threads) took 5.3 us at DCN-ResNet-50 stage 3 in FP16 on an H100. Grid: x over output channels, y
// over chunks; the block of chunk 0 also writes the bias and the padding.
template <typename T>
__global__ void __launch_bounds__(kThreads)
pack_weights_kernel(const T* __restrict__ w, const T* __restrict__ bias, T* __restrict__ wt, int cg, int k, int kr,
                    int chunk) {
  extern __shared__ float staged[];  // chunk * k weights (float holds a __half exactly)
  const int o = static_cast<int>(blockIdx.x);
  const int chunks = (cg + chunk - 1) / chunk;
  T* dst = wt + static_cast<int64_t>(o) * kr;
  for (int q = static_cast<int>(blockIdx.y); q < chunks; q += static_cast<int>(gridDim.y)) {
    const int c0 = q * chunk, n = min(chunk, cg - c0);
    const T* src = w + (static_cast<int64_t>(o) * cg + c0) * k;
    for (int i = static_cast<int>(threadIdx.x); i < n * k; i += kThreads) staged[i] = to_float(src[i]);
    __syncthreads();
    for (int i = static_cast<int>(threadIdx.x); i < n * k; i += kThreads) {
      const int kk = i / n, ci = i - kk * n;
      dst[kk * cg + c0 + ci] = from_float<T>(staged[ci * k + kk]);
    }
    __syncthreads();
  }
  if (blockIdx.y == 0)
    for (int r = k * cg + static_cast<int>(threadIdx.x); r < kr; r += kThreads)
      dst[r] = (r == k * cg && bias != nullptr) ? bias[o] : from_float<T>(0.0f);
}

// col[n][pos][g*kr + kk*cg + ci] = mask * bilinear(xt[n, :, c]) for conv group g, tap kk, channel
// ci of the group, and col[n][pos][g*kr + K*cg] = 1 followed by zeros to g*kr + kr (the bias
// multiplier and the row's padding: pack_weights_kernel's layout). A thread takes one position and
// VPT consecutive vectors of V channels (consecutive lanes, consecutive runs) of one conv group and
// deform group, and walks the taps from blockIdx.y in steps of gridDim.y (the grid splits the taps
// when the positions alone would not fill the GPU). Under Nsight Compute the pass is bound by
// instruction issue (76% of issue slots, DRAM 13%, one vector a thread), and the tap's geometry (its
// offsets, mask, corners and their addresses) is over half a tap's instructions: VPT = 2 computes it
// once for twice the channels. Loads are unconditional, as in columns_kernel; every index within one
// image fits an int.
template <typename T, int V, int VPT>
__global__ void __launch_bounds__(kThreads, VPT == 1 ? 5 : 4)  // 48 / 64 registers (VPT 2: a few bytes spill)
columns_channels_last_kernel(const T* __restrict__ xt, const T* __restrict__ off, const T* __restrict__ mask,
                             T* __restrict__ col, MdcnSizes z, int kr, int64_t images) {
  const int k = static_cast<int>(z.kh * z.kw), p = static_cast<int>(z.ho * z.wo), c = static_cast<int>(z.c);
  const int h = static_cast<int>(z.h), w = static_cast<int>(z.w), nv = c / (V * VPT);
  const int cg = static_cast<int>(z.c / z.groups), cpd = static_cast<int>(z.c / z.deform_groups);
  const int row = static_cast<int>(z.groups) * kr;
  const bool planes = z.h * z.w != 0;  // the same for the whole grid (see columns_kernel)
  for (int64_t n = blockIdx.z; n < images; n += gridDim.z) {
    const T* xt_n = xt + n * z.c * z.h * z.w;
    const T* off_n = off + n * 2 * z.deform_groups * k * p;
    const T* mask_n = mask + n * z.deform_groups * k * p;
    T* col_n = col + n * p * row;
    for (int64_t q = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; q < static_cast<int64_t>(p) * nv;
         q += static_cast<int64_t>(gridDim.x) * blockDim.x) {
      const int qi = static_cast<int>(q), pos = qi / nv, c0 = (qi - pos * nv) * V * VPT;
      const int g = c0 / cg, ci0 = c0 - g * cg;
      T* dst = col_n + pos * row + g * kr + ci0;
      if (ci0 == 0 && blockIdx.y == 0) {
        float one[V];
#pragma unroll
        for (int e = 0; e < V; ++e) one[e] = e == 0 ? 1.0f : 0.0f;
        store_vec(dst + k * cg, one);
      }
      for (int kk = static_cast<int>(blockIdx.y); kk < k; kk += static_cast<int>(gridDim.y)) {
        const Tap<int> t = locate<int>(off_n, mask_n, z, c0 / cpd, kk, pos);
        int at[4];
        float cw[4];
        corner_taps(t, h, w, at, cw);
        // A corner outside the image reads the plane's first run and is then zeroed whole. An empty
        // plane has no first run: every tap is outside it (the branch is the same for the whole grid).
        Run<T, V> corner[VPT][4];
#pragma unroll
        for (int j = 0; j < VPT; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            corner[j][e] = planes ? load_run<T, V>(xt_n + (at[e] >= 0 ? at[e] : 0) * c + c0 + j * V, at[e] >= 0)
                                  : Run<T, V>{};
#pragma unroll
        for (int j = 0; j < VPT; ++j) {
          float out[V];
#pragma unroll
          for (int v = 0; v < V; ++v) {
            float s = 0.0f;
#pragma unroll
            for (int e = 0; e < 4; ++e) s = fmaf(cw[e], to_float(corner[j][e].v[v]), s);
            out[v] = t.m * s;  // the mask multiplies the sum, as in columns_kernel
          }
          store_vec(dst + kk * cg + j * V, out);
        }
      }
    }
  }
}

// out[n, co, :] = bias[co] (0 without bias) over rows = N*Co rows of p values: the forward's
// matmuls then add onto it (beta = 1), or it is the whole result when the reduction is empty.
template <typename T>
__global__ void __launch_bounds__(kThreads)
fill_rows_kernel(T* __restrict__ out, const T* __restrict__ bias, int64_t co, int64_t p, int64_t rows) {
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const T v = bias != nullptr ? bias[r % co] : from_float<T>(0.0f);
    T* row = out + r * p;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x)
      row[i] = v;
  }
}

// out[i, co, :] = d[co, i*p : (i+1)*p] + bias[co] (no bias: 0) for `images` images: the NCHW forward's
// product of a chunk (D, rows over output channels, the images' positions side by side) laid out as
// the output. Grid: x over positions, y over (image, channel) rows.
template <typename T>
__global__ void __launch_bounds__(kThreads)
unpack_rows_kernel(const T* __restrict__ d, const T* __restrict__ bias, T* __restrict__ out, int64_t co, int64_t images,
                   int64_t p) {
  for (int64_t r = blockIdx.y; r < images * co; r += gridDim.y) {
    const int64_t m = r % co;
    const float b = bias != nullptr ? to_float(bias[m]) : 0.0f;
    const T* src = d + (m * images + r / co) * p;
    T* row = out + r * p;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x)
      row[i] = from_float<T>(to_float(src[i]) + b);
  }
}

// out[i] = bias[i % co] (0 without bias) over an (N, Ho, Wo, Co) output: a channels-last output
// when the reduction is empty.
template <typename T>
__global__ void __launch_bounds__(kThreads)
fill_channels_last_kernel(T* __restrict__ out, const T* __restrict__ bias, int64_t co, int64_t total) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = bias != nullptr ? bias[i % co] : from_float<T>(0.0f);
}

// C[b](m, n) (+)= sum_k A[b](m, k) * B[b](k, n) over strided operands; b = blockIdx.z (the backward's GEMMs).
template <typename TA, typename TB, typename TC>
struct GemmArgs {
  int64_t m = 0, n = 0, k = 0;
  const TA* a = nullptr;
  int64_t a_sm = 0, a_sk = 0, a_sb = 0;
  const TB* b = nullptr;
  int64_t b_sk = 0, b_sn = 0, b_sb = 0;
  TC* c = nullptr;
  int64_t c_sm = 0, c_sn = 0, c_sb = 0;
  bool accumulate = false;
};

template <typename TA, typename TB, typename TC>
__global__ void __launch_bounds__(kTile * kTile) gemm_kernel(GemmArgs<TA, TB, TC> g) {
  __shared__ float as[kTile][kTile + 1];
  __shared__ float bs[kTile][kTile + 1];
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int64_t batch = blockIdx.z;
  const int64_t row = static_cast<int64_t>(blockIdx.y) * kTile + ty;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kTile + tx;
  const TA* a = g.a + batch * g.a_sb;
  const TB* b = g.b + batch * g.b_sb;
  float acc = 0.0f;
  for (int64_t k0 = 0; k0 < g.k; k0 += kTile) {
    const int64_t ka = k0 + tx, kb = k0 + ty;
    as[ty][tx] = (row < g.m && ka < g.k) ? to_float(a[row * g.a_sm + ka * g.a_sk]) : 0.0f;
    bs[ty][tx] = (kb < g.k && col < g.n) ? to_float(b[kb * g.b_sk + col * g.b_sn]) : 0.0f;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTile; ++kk) acc = fmaf(as[ty][kk], bs[kk][tx], acc);
    __syncthreads();
  }
  if (row < g.m && col < g.n) {
    TC* out = g.c + batch * g.c_sb + row * g.c_sm + col * g.c_sn;
    if (g.accumulate) acc += to_float(*out);
    *out = from_float<TC>(acc);
  }
}

// grad_x[c] += gcol * mask * corner weight at each corner inside the image, for one image.
template <typename T>
__global__ void __launch_bounds__(kThreads)
col2im_kernel(const T* __restrict__ off, const T* __restrict__ mask, const float* __restrict__ gcol,
              float* __restrict__ gx, MdcnSizes z, int64_t total) {
  const int64_t k = z.kh * z.kw, p = z.ho * z.wo, cpd = z.c / z.deform_groups, hw = z.h * z.w;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t pos = idx % p, kk = (idx / p) % k, c = idx / p / k;
    const Tap<int64_t> t = locate(off, mask, z, c / cpd, kk, pos);
    if (!t.inside) continue;
    const float g = gcol[idx] * t.m;
    int64_t at[4];
    float cw[4];
    corner_taps(t, z.h, z.w, at, cw);
#pragma unroll
    for (int q = 0; q < 4; ++q)
      if (at[q] >= 0) atomicAdd(gx + c * hw + at[q], g * cw[q]);
  }
}

// One thread per (deform group, tap, position) of one image: with the column gradient gc of each
// channel of the group, d/d(mask) = sum gc * value and d/d(dy, dx) = mask * sum gc * d value/d(y, x).
template <typename T>
__global__ void __launch_bounds__(kThreads)
offset_mask_kernel(const T* __restrict__ x, const T* __restrict__ off, const T* __restrict__ mask,
                   const float* __restrict__ gcol, T* __restrict__ goff, T* __restrict__ gmask, MdcnSizes z,
                   int64_t total) {
  const int64_t k = z.kh * z.kw, p = z.ho * z.wo, cpd = z.c / z.deform_groups, hw = z.h * z.w;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t pos = idx % p, kk = (idx / p) % k, g = idx / p / k;
    const Tap<int64_t> t = locate(off, mask, z, g, kk, pos);
    float s_m = 0.0f, s_y = 0.0f, s_x = 0.0f;
    if (t.inside) {
      const float hy = 1.0f - t.ly, hx = 1.0f - t.lx;
      for (int64_t c = g * cpd; c < (g + 1) * cpd; ++c) {
        float v[4];
        corners(x + c * hw, t, z.h, z.w, v);
        const float gc = gcol[(c * k + kk) * p + pos];
        const float val = hy * hx * v[0] + hy * t.lx * v[1] + t.ly * hx * v[2] + t.ly * t.lx * v[3];
        s_m = fmaf(gc, val, s_m);
        s_y = fmaf(gc, hx * (v[2] - v[0]) + t.lx * (v[3] - v[1]), s_y);
        s_x = fmaf(gc, hy * (v[1] - v[0]) + t.ly * (v[3] - v[2]), s_x);
      }
    }
    const int64_t oi = (g * 2 * k + 2 * kk) * p + pos;
    goff[oi] = from_float<T>(s_y * t.m);
    goff[oi + p] = from_float<T>(s_x * t.m);
    gmask[(g * k + kk) * p + pos] = from_float<T>(s_m);
  }
}

// grad_bias[co] = sum over images and positions of grad_out[n, co]; one block per channel.
template <typename T>
__global__ void __launch_bounds__(kThreads)
bias_grad_kernel(const T* __restrict__ gout, T* __restrict__ gbias, int64_t n, int64_t co, int64_t p) {
  __shared__ float partial[kThreads];
  const int64_t ch = blockIdx.x;
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < n * p; i += blockDim.x) s += to_float(gout[((i / p) * co + ch) * p + i % p]);
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride >>= 1) {
    if (static_cast<int>(threadIdx.x) < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) gbias[ch] = from_float<T>(partial[0]);
}

template <typename T>
__global__ void float_to_kernel(const float* __restrict__ in, T* __restrict__ out, int64_t count) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = from_float<T>(in[i]);
}

// ---- launch helpers -----------------------------------------------------------------------------
// Every region of scratch starts on a 256-byte boundary (cuBLASLt's workspace needs it, and its
// fastest kernels want operands aligned that far).
constexpr size_t kAlign = 256;
// The forward's declared workspace holds the columns of as many images as fit in this many bytes
// (at least one image, at most N): all of a DCN-ResNet-50 batch of 8 at 512x512 even in FP32,
// six images of its stage 2 at 800x1333 in FP16.
constexpr size_t kColumnsCapBytes = size_t{256} << 20;
// cuBLASLt's workspace (split-K partial sums): room for four float partials per output element of
// one image, within [1, 32] MiB (32 MiB is NVIDIA's suggestion for cuBLAS on Hopper).
constexpr size_t kLtWorkspaceMin = size_t{1} << 20, kLtWorkspaceMax = size_t{32} << 20;
// Most images per column pass: a matmul's batch count is an int32, a grid's z at most 65535 (the
// column kernel loops past it).
constexpr int64_t kMaxChunk = int64_t{1} << 20;

size_t align_up(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

unsigned grid_for(int64_t work, int threads) {
  const int64_t blocks = (work + threads - 1) / threads;
  return static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(blocks, 1), 1 << 30));
}

unsigned grid_dim_yz(int64_t work) { return static_cast<unsigned>(std::clamp<int64_t>(work, 1, 65535)); }

bool bad_sizes(const MdcnSizes& z) {
  const int64_t all[] = {z.n, z.c, z.h, z.w, z.co, z.kh, z.kw, z.ho, z.wo, z.ph, z.pw};
  for (int64_t v : all)
    if (v < 0) return true;
  if (z.sh < 1 || z.sw < 1 || z.dh < 1 || z.dw < 1 || z.groups < 1 || z.deform_groups < 1) return true;
  if (z.c % z.groups != 0 || z.co % z.groups != 0 || z.c % z.deform_groups != 0) return true;
  // Sample coordinates are floats: grid positions must be exact in float (below 2^24).
  return z.h > (1 << 24) || z.w > (1 << 24) || z.ho * z.sh + z.kh * z.dh > (1 << 24) ||
         z.wo * z.sw + z.kw * z.dw > (1 << 24);
}

template <typename TA, typename TB, typename TC>
cudaError_t launch_gemm(const GemmArgs<TA, TB, TC>& g, int64_t batches, cudaStream_t stream) {
  if (g.m == 0 || g.n == 0 || batches == 0) return cudaSuccess;
  const int64_t gx = (g.n + kTile - 1) / kTile, gy = (g.m + kTile - 1) / kTile;
  if (gx > 0x7fffffff || gy > 65535 || batches > 65535) return cudaErrorInvalidConfiguration;
  gemm_kernel<TA, TB, TC><<<dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy), static_cast<unsigned>(batches)),
                            dim3(kTile, kTile), 0, stream>>>(g);
  return cudaGetLastError();
}

// The columns of `images` consecutive images (their x, offset and mask start at the pointers given), as
// one (C*K, images*P) matrix (columns_kernel).
template <typename T, typename TC>
cudaError_t launch_columns(const T* x, const T* off, const T* mask, TC* col, const MdcnSizes& z, int64_t images,
                           cudaStream_t stream) {
  const int64_t k = z.kh * z.kw, p = z.ho * z.wo, cpd = z.c / z.deform_groups;
  if (images == 0 || z.c * k * p == 0) return cudaSuccess;
  // Channels per thread: up to 8 of one deform group, fewer while the grid would have fewer than
  // 2^18 threads (an H200 holds about 270k resident), so small batches still fill the GPU.
  int64_t cpt = 8;
  while (cpt > 1 && (cpd % cpt != 0 || images * (z.c / cpt) * k * p < (int64_t{1} << 18))) cpt /= 2;
  const dim3 grid(grid_for(p, kThreads), grid_dim_yz(z.c / cpt * k), grid_dim_yz(images));
  // 32-bit indexing within an image when its x and offsets, and the pass's columns, all have fewer than
  // 2^31 elements.
  constexpr int64_t kInt = int64_t{1} << 31;
  const bool narrow = z.c * z.h * z.w < kInt && 2 * z.deform_groups * k * p < kInt && z.c * k * p * images < kInt;
  auto launch = [&](auto cpt_constant) {
    constexpr int kCpt = decltype(cpt_constant)::value;
    if (narrow)
      columns_kernel<kCpt, int, T, TC><<<grid, kThreads, 0, stream>>>(x, off, mask, col, z, images);
    else
      columns_kernel<kCpt, int64_t, T, TC><<<grid, kThreads, 0, stream>>>(x, off, mask, col, z, images);
  };
  switch (cpt) {
    case 8: launch(std::integral_constant<int, 8>{}); break;
    case 4: launch(std::integral_constant<int, 4>{}); break;
    case 2: launch(std::integral_constant<int, 2>{}); break;
    default: launch(std::integral_constant<int, 1>{}); break;
  }
  return cudaGetLastError();
}

// The channels-last column pass of `images` consecutive images: their channels-last copy xt (made
// here from x; unless x is stored channels-last already, then it is read itself and xt is unused),
// then the columns (row length kr per conv group, see columns_channels_last_kernel).
template <typename T>
cudaError_t launch_columns_channels_last(const T* x, const T* off, const T* mask, T* xt, T* col, const MdcnSizes& z,
                                         int64_t kr, int64_t images, cudaStream_t stream) {
  const int64_t hw = z.h * z.w, p = z.ho * z.wo, k = z.kh * z.kw;
  // Two runs a thread where both conv groups and deform groups hold them, else one (a small
  // problem still fills the GPU: the taps split over more of the grid below).
  const int width = run_width<T>(z);
  const int vpt = groups_hold(z, 2 * width) ? 2 : 1;
  const int64_t nv = z.c / (width * vpt);
  if (images == 0 || p == 0 || z.c == 0) return cudaSuccess;
  const T* src = z.channels_last_io ? x : xt;
  if (!z.channels_last_io && hw > 0) {
    const dim3 tiles(grid_for(hw, 32), static_cast<unsigned>((z.c + 31) / 32), grid_dim_yz(images));
    channels_last_kernel<T><<<tiles, kThreads, 0, stream>>>(x, xt, static_cast<int>(z.c), static_cast<int>(hw), images);
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  // The taps split over the grid's y (by the smallest divisor of K, so each y takes as many) until
  // there are 2^19 threads: about three waves of resident threads on an H100 or H200, so neither a
  // small batch leaves SMs idle nor a last partial wave of long threads stretches the pass.
  const int64_t threads = images * p * nv;
  int64_t split = 1;
  while (split < std::min<int64_t>(k, 65535) && (k % split != 0 || threads * split < (int64_t{1} << 19))) ++split;
  const dim3 grid(grid_for(p * nv, kThreads), static_cast<unsigned>(split), grid_dim_yz(images));
  auto launch = [&](auto width_constant, auto vpt_constant) {
    constexpr int kWidth = decltype(width_constant)::value, kVpt = decltype(vpt_constant)::value;
    columns_channels_last_kernel<T, kWidth, kVpt>
        <<<grid, kThreads, 0, stream>>>(src, off, mask, col, z, static_cast<int>(kr), images);
  };
  using Vector = std::integral_constant<int, kVec<T>>;
  using One = std::integral_constant<int, 1>;
  using Two = std::integral_constant<int, 2>;
  if (width == kVec<T>)
    vpt == 2 ? launch(Vector{}, Two{}) : launch(Vector{}, One{});
  else
    vpt == 2 ? launch(One{}, Two{}) : launch(One{}, One{});
  return cudaGetLastError();
}

size_t region_bytes(int64_t floats) { return align_up(static_cast<size_t>(floats) * sizeof(float)); }

// Scratch given by the caller (used from its first 256-byte boundary), or taken stream-ordered
// when it is too small.
class Scratch {
 public:
  Scratch(void* ws, size_t have, size_t need, cudaStream_t stream) : stream_(stream) {
    if (need == 0) return;
    if (ws != nullptr) {
      const size_t at = static_cast<size_t>(reinterpret_cast<uintptr_t>(ws));
      const size_t skip = align_up(at) - at;
      if (have >= skip + need) base_ = static_cast<char*>(ws) + skip;
    }
    if (base_ == nullptr) {
      err_ = cudaMallocAsync(reinterpret_cast<void**>(&owned_), need + kAlign, stream);
      if (err_ != cudaSuccess) {
        owned_ = nullptr;
      } else {
        const size_t at = static_cast<size_t>(reinterpret_cast<uintptr_t>(owned_));
        base_ = owned_ + (align_up(at) - at);
      }
    }
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  cudaError_t error() const { return err_; }
  // The next region of `bytes` bytes (256-byte aligned).
  void* take_bytes(size_t bytes) {
    char* p = base_ + used_;
    used_ += align_up(bytes);
    return p;
  }
  float* take(int64_t floats) { return static_cast<float*>(take_bytes(static_cast<size_t>(floats) * sizeof(float))); }
  cudaError_t release() {
    cudaError_t e = cudaSuccess;
    if (owned_ != nullptr) e = cudaFreeAsync(owned_, stream_);
    owned_ = nullptr;
    return e;
  }
  ~Scratch() { (void)release(); }

 private:
  cudaStream_t stream_;
  char* base_ = nullptr;
  char* owned_ = nullptr;  // what cudaMallocAsync returned, when the caller's scratch was too small
  size_t used_ = 0;
  cudaError_t err_ = cudaSuccess;
};

// ---- cuBLASLt -----------------------------------------------------------------------------------
using LtDescOwner = OwnedHandle<cublasLtMatmulDesc_t, &cublasLtMatmulDescDestroy>;
using LtLayoutOwner = OwnedHandle<cublasLtMatrixLayout_t, &cublasLtMatrixLayoutDestroy>;
using LtPrefOwner = OwnedHandle<cublasLtMatmulPreference_t, &cublasLtMatmulPreferenceDestroy>;

// A failed cuBLASLt call as a cudaError_t; `f` gets the call and cuBLAS's status name.
cudaError_t lt_error(cublasStatus_t s, const char* call, MdcnFailure* f) {
  f->call = call;
  f->detail = cublasLtGetStatusName(s);
  if (s == CUBLAS_STATUS_ALLOC_FAILED) return cudaErrorMemoryAllocation;
  if (s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_ARCH_MISMATCH) return cudaErrorNotSupported;
  return cudaErrorUnknown;
}

// The current device's cuBLASLt handle, created on first use and kept for the process's life (a
// static destructor could run after the CUDA runtime has shut down). A handle holds no per-call
// state (the stream is an argument of each matmul), so all threads share it. graft's engine and
// PyTorch run an op eagerly before they capture it into a CUDA graph, so the handle exists by then;
// should a first call come inside a capture anyway, this thread's capture mode is relaxed around
// the creation, which may allocate.
cudaError_t lt_handle(cublasLtHandle_t* out, MdcnFailure* f) {
  int dev = 0;
  if (const cudaError_t e = cudaGetDevice(&dev); e != cudaSuccess) {
    f->call = "cudaGetDevice";
    return e;
  }
  static std::mutex mu;
  static auto* const handles = new std::vector<cublasLtHandle_t>();
  std::lock_guard<std::mutex> lock(mu);
  if (static_cast<size_t>(dev) >= handles->size()) handles->resize(static_cast<size_t>(dev) + 1, nullptr);
  cublasLtHandle_t& h = (*handles)[static_cast<size_t>(dev)];
  if (h == nullptr) {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
    const cublasStatus_t s = cublasLtCreate(&h);
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
    if (s != CUBLAS_STATUS_SUCCESS) {
      h = nullptr;
      return lt_error(s, "cublasLtCreate", f);
    }
  }
  *out = h;
  return cudaSuccess;
}

// Column-major D (m x n, ld m) = A (m x k, ld m) * B (k x n, ld k), plus D itself when
// `accumulate`; `batch` times, with element strides between the matrices (stride_b 0: one B for all).
// With `trans_a`, A is stored transposed (k x m, ld lda) and op(A) is its transpose. ldb and ldd
// (0: k and m) let B and D be column blocks of wider matrices.
struct LtMatmul {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  const void* a = nullptr;
  bool trans_a = false;
  int64_t lda = 0;
  int64_t stride_a = 0;
  const void* b = nullptr;
  int64_t ldb = 0;
  int64_t stride_b = 0;
  void* d = nullptr;
  int64_t ldd = 0;
  int64_t stride_d = 0;
  bool accumulate = false;
};

// The largest power of two up to 256 dividing the address of every matrix of a batch. cuBLASLt
// assumes 256 unless told otherwise; telling it lets it refuse kernels whose wide loads would fault.
uint32_t alignment_of(const void* p, int64_t stride, size_t elem, int64_t batch) {
  uint64_t v = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
  if (batch > 1) v |= static_cast<uint64_t>(stride) * elem;
  uint32_t a = kAlign;
  while (a > 1 && v % a != 0) a >>= 1;
  return a;
}

// A matmul's descriptors and the algorithm cuBLASLt's heuristic chose for it. These are host
// objects that cublasLtMatmul only reads, so one plan serves every thread; plans are cached by
// handle (device), dtype, shape, strides, alignments and workspace so that a call costs a map
// lookup rather than descriptor creation and a heuristic query.
struct LtPlan {
  LtDescOwner op;
  LtLayoutOwner a, b, d;
  cublasLtMatmulAlgo_t algo{};
};
using LtKey = std::array<int64_t, 18>;
constexpr size_t kMaxPlans = 256;  // dynamic shapes could otherwise grow the cache without bound

cudaError_t lt_layout(LtLayoutOwner* owner, cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                      int64_t stride, MdcnFailure* f) {
  cublasLtMatrixLayout_t l = nullptr;
  cublasStatus_t s = cublasLtMatrixLayoutCreate(&l, type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld);
  if (s != CUBLAS_STATUS_SUCCESS) return lt_error(s, "cublasLtMatrixLayoutCreate", f);
  owner->reset(l);
  if (batch <= 1) return cudaSuccess;
  const int32_t count = static_cast<int32_t>(batch);
  s = cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count));
  if (s == CUBLAS_STATUS_SUCCESS)
    s = cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride));
  return s == CUBLAS_STATUS_SUCCESS ? cudaSuccess : lt_error(s, "cublasLtMatrixLayoutSetAttribute (batch)", f);
}

cudaError_t lt_make_plan(cublasLtHandle_t h, cudaDataType_t type, const LtMatmul& g, const uint32_t (&align)[3],
                         size_t ws_bytes, LtPlan* plan, MdcnFailure* f) {
  cublasLtMatmulDesc_t op = nullptr;
  // Float accumulation and scaling for both dtypes; CUBLAS_COMPUTE_32F also keeps FP32 off TF32.
  cublasStatus_t s = cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  if (s != CUBLAS_STATUS_SUCCESS) return lt_error(s, "cublasLtMatmulDescCreate", f);
  plan->op.reset(op);  // B as stored (the descriptor's default CUBLAS_OP_N); A too unless trans_a
  if (g.trans_a) {
    const cublasOperation_t t = CUBLAS_OP_T;
    s = cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t));
    if (s != CUBLAS_STATUS_SUCCESS) return lt_error(s, "cublasLtMatmulDescSetAttribute (transa)", f);
  }
  cudaError_t e = g.trans_a ? lt_layout(&plan->a, type, g.k, g.m, g.lda, g.batch, g.stride_a, f)
                            : lt_layout(&plan->a, type, g.m, g.k, g.m, g.batch, g.stride_a, f);
  if (e == cudaSuccess) e = lt_layout(&plan->b, type, g.k, g.n, g.ldb ? g.ldb : g.k, g.batch, g.stride_b, f);
  if (e == cudaSuccess) e = lt_layout(&plan->d, type, g.m, g.n, g.ldd ? g.ldd : g.m, g.batch, g.stride_d, f);
  if (e != cudaSuccess) return e;
  cublasLtMatmulPreference_t pref_raw = nullptr;
  s = cublasLtMatmulPreferenceCreate(&pref_raw);
  if (s != CUBLAS_STATUS_SUCCESS) return lt_error(s, "cublasLtMatmulPreferenceCreate", f);
  const LtPrefOwner pref(pref_raw);
  const uint64_t ws = ws_bytes;
  s = cublasLtMatmulPreferenceSetAttribute(pref_raw, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  const struct {
    cublasLtMatmulPreferenceAttributes_t attr;
    uint32_t bytes;
  } aligns[] = {{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align[0]},
                {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align[1]},
                {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align[2]},
                {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align[2]}};
  for (const auto& al : aligns)
    if (s == CUBLAS_STATUS_SUCCESS) s = cublasLtMatmulPreferenceSetAttribute(pref_raw, al.attr, &al.bytes, sizeof(al.bytes));
  if (s != CUBLAS_STATUS_SUCCESS) return lt_error(s, "cublasLtMatmulPreferenceSetAttribute", f);
  cublasLtMatmulHeuristicResult_t heur{};
  int found = 0;
  // C is D (accumulating in place).
  s = cublasLtMatmulAlgoGetHeuristic(h, op, plan->a.get(), plan->b.get(), plan->d.get(), plan->d.get(), pref_raw, 1,
                                     &heur, &found);
  if (s != CUBLAS_STATUS_SUCCESS) return lt_error(s, "cublasLtMatmulAlgoGetHeuristic", f);
  if (found == 0 || heur.state != CUBLAS_STATUS_SUCCESS) {
    f->call = "cublasLtMatmulAlgoGetHeuristic";
    f->detail = "no algorithm for this matmul";
    return cudaErrorNotSupported;
  }
  plan->algo = heur.algo;
  return cudaSuccess;
}

template <typename T>
cudaError_t lt_matmul(const LtMatmul& g, void* ws, size_t ws_bytes, cudaStream_t stream, MdcnFailure* f) {
  cublasLtHandle_t h = nullptr;
  if (const cudaError_t e = lt_handle(&h, f); e != cudaSuccess) return e;
  constexpr cudaDataType_t type = std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_16F;
  // Columns that start every ld elements count towards a matrix's alignment.
  auto with_ld = [](uint32_t a, const void* p, int64_t ld) {
    return ld ? std::min(a, alignment_of(p, ld, sizeof(T), 2)) : a;
  };
  const uint32_t align[3] = {with_ld(alignment_of(g.a, g.stride_a, sizeof(T), g.batch), g.a, g.trans_a ? g.lda : 0),
                             with_ld(alignment_of(g.b, g.stride_b, sizeof(T), g.batch), g.b, g.ldb),
                             with_ld(alignment_of(g.d, g.stride_d, sizeof(T), g.batch), g.d, g.ldd)};
  const bool batched = g.batch > 1;
  const LtKey key = {static_cast<int64_t>(reinterpret_cast<uintptr_t>(h)), static_cast<int64_t>(type), g.m, g.n, g.k,
                     g.batch, batched ? g.stride_a : 0, batched ? g.stride_b : 0, batched ? g.stride_d : 0,
                     align[0], align[1], align[2], static_cast<int64_t>(ws_bytes), g.trans_a ? 1 : 0,
                     g.trans_a ? g.lda : 0, g.ldb, g.ldd};
  static std::mutex mu;
  static auto* const plans = new std::map<LtKey, std::shared_ptr<const LtPlan>>();  // kept, like the handles
  std::shared_ptr<const LtPlan> plan;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = plans->find(key); it != plans->end()) plan = it->second;
  }
  if (!plan) {
    auto made = std::make_shared<LtPlan>();
    if (const cudaError_t e = lt_make_plan(h, type, g, align, ws_bytes, made.get(), f); e != cudaSuccess) return e;
    plan = made;
    std::lock_guard<std::mutex> lock(mu);
    if (plans->size() >= kMaxPlans) plans->clear();  // plans in use stay alive through their shared_ptr
    plans->emplace(key, plan);
  }
  const float alpha = 1.0f, beta = g.accumulate ? 1.0f : 0.0f;
  const cublasStatus_t s =
      cublasLtMatmul(h, plan->op.get(), &alpha, g.a, plan->a.get(), g.b, plan->b.get(), &beta, g.d, plan->d.get(), g.d,
                     plan->d.get(), &plan->algo, ws, ws_bytes, stream);
  return s == CUBLAS_STATUS_SUCCESS ? cudaSuccess : lt_error(s, "cublasLtMatmul", f);
}

// ---- workspace ----------------------------------------------------------------------------------
template <typename T>
size_t image_column_bytes(const MdcnSizes& z) {
  return static_cast<size_t>(z.c * z.kh * z.kw * z.ho * z.wo) * sizeof(T);
}

size_t lt_workspace_bytes(const MdcnSizes& z) {
  return std::clamp(align_up(static_cast<size_t>(z.co * z.ho * z.wo) * 4 * sizeof(float)), kLtWorkspaceMin,
                    kLtWorkspaceMax);
}

// pack_weights_kernel's shared memory in floats: 32 KiB, so a chunk of one output channel's
// weights holds at least one input channel's taps for any kernel up to 8192 taps.
constexpr int64_t kPackFloats = 8192;

// The channels-last forward's row length per conv group: K*cg samples, the bias multiplier, zeros to
// a whole vector.
template <typename T>
int64_t channels_last_row(const MdcnSizes& z) {
  return z.kh * z.kw * (z.c / z.groups) + run_width<T>(z);
}

// An FP32 forward from NCHW x over at least this many reduction terms (cg*kh*kw) runs the NCHW path.
// Its matmul reads the columns pixel-major ("nn"), for which cuBLASLt has much faster FP32 kernels
// than for the channels-last path's K-major columns ("tn"): at DCN-ResNet-50's stage 4 (4608 terms)
// on an H100 the NCHW path took 0.075 ms at batch 1 and 0.301 at batch 8 against the channels-last
// path's 0.103 and 0.316 (0.268 at batch 8 since it multiplies a chunk in one matmul), while at
// stages 2 and 3 (1152 and 2304 terms) channels-last was as fast or faster
// (docs/results/dcn/dcn_op_bench.md, the thirty-eighth session). The bound comes from those
// measurements. FP16's tensor-core kernels are fast in both layouts, and channels-last wins there.
constexpr int64_t kFp32NchwMinTerms = 4096;

// Whether the forward runs channels-last (columns_channels_last_kernel): each conv group and deform
// group a whole number of vectors, or x stored channels-last (channels_last_io, then one channel a
// run where they are not); every index within an image an int, C/32 tiles within a grid's y. Not
// for an FP32 forward from NCHW x with a deep reduction (kFp32NchwMinTerms).
template <typename T>
bool channels_last_forward(const MdcnSizes& z) {
  if (run_width<T>(z) != kVec<T> && !z.channels_last_io) return false;
  if (std::is_same_v<T, float> && !z.channels_last_io && (z.c / z.groups) * z.kh * z.kw >= kFp32NchwMinTerms)
    return false;
  const int64_t k = z.kh * z.kw, p = z.ho * z.wo, kr = channels_last_row<T>(z), lim = int64_t{1} << 31;
  return z.c * z.h * z.w < lim && p * z.groups * kr < lim && 2 * z.deform_groups * k * p < lim && p * z.c < lim &&
         z.co * kr < lim && (z.c + 31) / 32 <= 65535 && k <= kPackFloats;
}

// The forward's scratch: `fixed` bytes whatever the chunk (cuBLASLt's workspace; channels-last, the
// packed weights and room to align the regions after them) and `per_image` bytes for each image of a
// column pass (its columns; channels-last, also its channels-last copy of x unless x comes stored so).
struct ForwardScratch {
  size_t fixed = 0, per_image = 0;
};

template <typename T>
ForwardScratch forward_scratch(const MdcnSizes& z) {
  ForwardScratch s;
  s.fixed = lt_workspace_bytes(z);
  if (!channels_last_forward<T>(z)) {
    // The columns, and the product before unpack_rows_kernel lays it out (a pass of one image writes
    // the output directly); kAlign: room to align the second region.
    s.fixed += kAlign;
    s.per_image = image_column_bytes<T>(z) + static_cast<size_t>(z.co * z.ho * z.wo) * sizeof(T);
    return s;
  }
  const int64_t kr = channels_last_row<T>(z);
  s.fixed += align_up(static_cast<size_t>(z.co * kr) * sizeof(T)) + 2 * kAlign;
  const int64_t x_copy = z.channels_last_io ? 0 : z.c * z.h * z.w;
  s.per_image = static_cast<size_t>(z.ho * z.wo * z.groups * kr + x_copy) * sizeof(T);
  return s;
}

// Images per column pass that the declared workspace holds.
template <typename T>
int64_t declared_chunk(const MdcnSizes& z) {
  const int64_t most = std::clamp<int64_t>(z.n, 1, kMaxChunk);
  const size_t per = forward_scratch<T>(z).per_image;
  return per == 0 ? most : std::clamp<int64_t>(static_cast<int64_t>(kColumnsCapBytes / per), 1, most);
}

// Nothing to multiply: an empty output, or an empty reduction (the output is the bias, or zero).
bool forward_has_no_matmul(const MdcnSizes& z) {
  return z.n == 0 || z.co == 0 || z.ho * z.wo == 0 || z.c * z.kh * z.kw == 0;
}

}  // namespace

template <typename T>
size_t modulated_deform_conv2d_forward_workspace_bytes(const MdcnSizes& z, int64_t images) {
  if (bad_sizes(z) || forward_has_no_matmul(z)) return 0;
  // kAlign: room to start on a 256-byte boundary inside a caller's unaligned workspace. The chunk's
  // regions follow cuBLASLt's workspace (a multiple of 256 bytes), image after image.
  const ForwardScratch s = forward_scratch<T>(z);
  return kAlign + s.fixed + static_cast<size_t>(std::clamp<int64_t>(images, 1, kMaxChunk)) * s.per_image;
}

template <typename T>
size_t modulated_deform_conv2d_workspace_bytes(const MdcnSizes& z, bool backward) {
  if (!backward) return modulated_deform_conv2d_forward_workspace_bytes<T>(z, declared_chunk<T>(z));
  const int64_t cols = z.c * z.kh * z.kw * z.ho * z.wo;
  size_t bytes = kAlign + 2 * region_bytes(cols);
  if constexpr (!std::is_same_v<T, float>)
    bytes += region_bytes(z.c * z.h * z.w) + region_bytes(z.co * (z.c / std::max<int64_t>(z.groups, 1)) * z.kh * z.kw);
  return bytes;
}

template <typename T>
cudaError_t modulated_deform_conv2d_forward(const T* x, const T* offset, const T* mask, const T* weight, const T* bias,
                                            T* output, const MdcnSizes& z, void* workspace, size_t workspace_bytes,
                                            cudaStream_t stream, MdcnFailure* failure) {
  MdcnFailure unused;
  MdcnFailure* f = failure != nullptr ? failure : &unused;
  auto failed = [f](cudaError_t e, const char* call) {
    f->call = call;
    return e;
  };
  if (bad_sizes(z)) return failed(cudaErrorInvalidValue, "size check");
  const int64_t k = z.kh * z.kw, p = z.ho * z.wo, cg = z.c / z.groups, cog = z.co / z.groups, hw = z.h * z.w;
  const int64_t dg = z.deform_groups;
  if (z.n == 0 || z.co == 0 || p == 0) return cudaSuccess;
  const bool no_matmul = forward_has_no_matmul(z);
  const bool channels_last = !no_matmul && channels_last_forward<T>(z);
  if (z.channels_last_io && no_matmul) {  // the output (N, Ho, Wo, Co) is the bias, or zeros
    const int64_t total = z.n * p * z.co;
    fill_channels_last_kernel<T><<<grid_for(total, kThreads), kThreads, 0, stream>>>(output, bias, z.co, total);
    const cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? e : failed(e, "bias kernel launch");
  }
  if (z.channels_last_io && !channels_last)
    return failed(cudaErrorNotSupported, "channels-last x (an image past the channels-last kernel's 32-bit indexing)");
  // As many images per pass as the caller's workspace holds; when it holds none, the declared
  // number, in stream-ordered memory.
  const ForwardScratch need = forward_scratch<T>(z);
  const size_t lt_ws = lt_workspace_bytes(z);
  int64_t chunk = 0;
  if (!no_matmul && workspace != nullptr && workspace_bytes > kAlign + need.fixed)
    chunk = std::min<int64_t>(
        {z.n, kMaxChunk, static_cast<int64_t>((workspace_bytes - kAlign - need.fixed) / need.per_image)});
  if (chunk < 1) chunk = declared_chunk<T>(z);
  // The NCHW path with several images a pass multiplies them into scratch, and unpack_rows_kernel
  // adds the bias as it lays the product out.
  const bool unpack = !channels_last && chunk > 1;
  // The bias first (the matmuls add onto it), or zeros when the reduction is empty (C = 0); the
  // channels-last matmuls add the bias themselves.
  if ((bias != nullptr && !channels_last && !unpack) || no_matmul) {
    const int64_t rows = z.n * z.co;
    fill_rows_kernel<T><<<dim3(grid_for(p, kThreads), grid_dim_yz(rows)), kThreads, 0, stream>>>(output, bias, z.co, p,
                                                                                                   rows);
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return failed(e, "bias kernel launch");
    if (no_matmul) return cudaSuccess;
  }
  Scratch scratch(workspace, workspace_bytes, need.fixed + static_cast<size_t>(chunk) * need.per_image, stream);
  if (scratch.error() != cudaSuccess) return failed(scratch.error(), "cudaMallocAsync (workspace)");
  void* lt_space = scratch.take_bytes(lt_ws);
  cudaError_t err = cudaSuccess;
  if (channels_last) {
    // out[n, g*cog + m, pos] = sum_r wt[g*cog + m][g's r] * cols[n][pos][g*kr + r] over r < kr (the bias
    // included); column-major that is D (P x cog, ld P) = A^T with A (kr x P, ld groups*kr: the image's
    // columns of group g) times B (kr x cog, ld kr: group g's packed weights), one matmul per group
    // batched over the chunk's images.
    const int64_t kr = channels_last_row<T>(z), row = z.groups * kr;
    T* wt = static_cast<T*>(scratch.take_bytes(static_cast<size_t>(z.co * kr) * sizeof(T)));
    T* xt = z.channels_last_io ? nullptr  // x is read in place
                               : static_cast<T*>(scratch.take_bytes(static_cast<size_t>(chunk * z.c * hw) * sizeof(T)));
    T* cols = static_cast<T*>(scratch.take_bytes(static_cast<size_t>(chunk * p * row) * sizeof(T)));
    const int64_t pack_chunk = std::min<int64_t>(cg, kPackFloats / k);  // input channels a block packs
    pack_weights_kernel<T><<<dim3(static_cast<unsigned>(z.co), grid_dim_yz((cg + pack_chunk - 1) / pack_chunk)),
                             kThreads, static_cast<size_t>(pack_chunk * k) * sizeof(float), stream>>>(
        weight, bias, wt, static_cast<int>(cg), static_cast<int>(k), static_cast<int>(kr),
        static_cast<int>(pack_chunk));
    err = cudaGetLastError();
    if (err != cudaSuccess) failed(err, "weight packing kernel launch");
    for (int64_t n0 = 0; n0 < z.n && err == cudaSuccess; n0 += chunk) {
      const int64_t nc = std::min(chunk, z.n - n0);
      err = launch_columns_channels_last<T>(x + n0 * z.c * hw, offset + n0 * 2 * dg * k * p, mask + n0 * dg * k * p,
                                            xt, cols, z, kr, nc, stream);
      if (err != cudaSuccess) {
        failed(err, "columns kernel launch");
        break;
      }
      LtMatmul g;
      if (z.channels_last_io) {
        // The output channels-last: out[(n0 + i)*P + pos][g*cog + m] is D (cog x nc*P, ld Co) = A^T with A
        // (kr x cog, ld kr: group g's packed weights) times B (kr x nc*P, ld groups*kr: every image's
        // columns of group g), one matmul per group over the whole chunk.
        g.m = cog, g.n = nc * p, g.k = kr, g.trans_a = true, g.lda = kr, g.ldb = row, g.ldd = z.co;
        for (int64_t i = 0; i < z.groups && err == cudaSuccess; ++i) {
          g.a = wt + i * cog * kr, g.b = cols + i * kr, g.d = output + n0 * p * z.co + i * cog;
          err = lt_matmul<T>(g, lt_space, lt_ws, stream, f);
        }
        continue;
      }
      g.m = p, g.n = cog, g.k = kr, g.batch = nc, g.trans_a = true, g.lda = row;
      for (int64_t i = 0; i < z.groups && err == cudaSuccess; ++i) {
        g.a = cols + i * kr, g.stride_a = p * row;
        g.b = wt + i * cog * kr, g.stride_b = 0;
        g.d = output + n0 * z.co * p + i * cog * p, g.stride_d = z.co * p;
        err = lt_matmul<T>(g, lt_space, lt_ws, stream, f);
      }
    }
  } else {
    T* cols = static_cast<T*>(scratch.take_bytes(static_cast<size_t>(chunk) * image_column_bytes<T>(z)));
    T* product = unpack ? static_cast<T*>(scratch.take_bytes(static_cast<size_t>(chunk * z.co * p) * sizeof(T))) : nullptr;
    for (int64_t n0 = 0; n0 < z.n && err == cudaSuccess; n0 += chunk) {
      const int64_t nc = std::min(chunk, z.n - n0);
      err = launch_columns<T, T>(x + n0 * z.c * hw, offset + n0 * 2 * dg * k * p, mask + n0 * dg * k * p, cols, z, nc,
                                 stream);
      if (err != cudaSuccess) {
        failed(err, "columns kernel launch");
        break;
      }
      // D[g*cog + m][i*P + pos] = sum_r weight[g*cog + m, r] * cols[g*cg*K + r][i*P + pos]: column-major, per
      // conv group g, D (nc*P x cog, ld nc*P) = A (nc*P x cg*K, ld nc*P: the chunk's columns of group g) *
      // B (cg*K x cog, ld cg*K: group g's weights), batched over the groups. One matmul over the whole
      // chunk: the batch of images becomes rows, as in one image's matmul of nc times its positions, for
      // which cuBLASLt has faster kernels than for nc small matmuls. With one image D is the output
      // itself (onto the bias); with more, scratch that unpack_rows_kernel lays out.
      LtMatmul g;
      g.m = nc * p, g.n = cog, g.k = cg * k, g.batch = z.groups;
      g.a = cols, g.stride_a = cg * k * nc * p;
      g.b = weight, g.stride_b = cog * cg * k;
      if (unpack)
        g.d = product, g.stride_d = cog * nc * p;
      else
        g.d = output + n0 * z.co * p, g.stride_d = cog * p, g.accumulate = bias != nullptr;
      err = lt_matmul<T>(g, lt_space, lt_ws, stream, f);
      if (err != cudaSuccess || !unpack) continue;
      const int64_t rows = nc * z.co;
      unpack_rows_kernel<T><<<dim3(grid_for(p, kThreads), grid_dim_yz(rows)), kThreads, 0, stream>>>(
          product, bias, output + n0 * z.co * p, z.co, nc, p);
      err = cudaGetLastError();
      if (err != cudaSuccess) failed(err, "unpack kernel launch");
    }
  }
  const cudaError_t freed = scratch.release();
  if (err == cudaSuccess && freed != cudaSuccess) return failed(freed, "cudaFreeAsync (workspace)");
  return err;
}

template <typename T>
cudaError_t modulated_deform_conv2d_backward(const T* x, const T* offset, const T* mask, const T* weight,
                                             const T* grad_output, T* grad_x, T* grad_offset, T* grad_mask,
                                             T* grad_weight, T* grad_bias, const MdcnSizes& z, void* workspace,
                                             size_t workspace_bytes, cudaStream_t stream) {
  if (bad_sizes(z)) return cudaErrorInvalidValue;
  constexpr bool kFloat = std::is_same_v<T, float>;
  const int64_t k = z.kh * z.kw, p = z.ho * z.wo, cg = z.c / z.groups, cog = z.co / z.groups, hw = z.h * z.w;
  const int64_t cols = z.c * k * p, wcount = z.co * cg * k;
  Scratch scratch(workspace, workspace_bytes, modulated_deform_conv2d_workspace_bytes<T>(z, true), stream);
  if (scratch.error() != cudaSuccess) return scratch.error();
  float* col = scratch.take(cols);
  float* gcol = scratch.take(cols);
  float* gx_half = kFloat ? nullptr : scratch.take(z.c * hw);
  float* gw = nullptr;
  if constexpr (kFloat) {
    gw = grad_weight;
  } else {
    gw = scratch.take(wcount);
  }
  cudaError_t err = cudaSuccess;
  auto check = [&]() {
    if (err == cudaSuccess) err = cudaGetLastError();
    return err == cudaSuccess;
  };
  if (wcount > 0) err = cudaMemsetAsync(gw, 0, static_cast<size_t>(wcount) * sizeof(float), stream);
  if constexpr (kFloat) {
    if (err == cudaSuccess && z.n * z.c * hw > 0)
      err = cudaMemsetAsync(grad_x, 0, static_cast<size_t>(z.n * z.c * hw) * sizeof(float), stream);
  }
  for (int64_t n = 0; n < z.n && err == cudaSuccess; ++n) {
    const T* x_n = x + n * z.c * hw;
    const T* off_n = offset + n * 2 * z.deform_groups * k * p;
    const T* mask_n = mask + n * z.deform_groups * k * p;
    const T* go_n = grad_output + n * z.co * p;
    float* gx_n = nullptr;
    if constexpr (kFloat) {
      gx_n = grad_x + n * z.c * hw;
    } else {
      gx_n = gx_half;
      if (z.c * hw > 0) err = cudaMemsetAsync(gx_n, 0, static_cast<size_t>(z.c * hw) * sizeof(float), stream);
      if (err != cudaSuccess) break;
    }
    if (cols > 0) {
      if ((err = launch_columns<T, float>(x_n, off_n, mask_n, col, z, 1, stream)) != cudaSuccess) break;
      // gcol[g*cg*K + r, pos] = sum_m weight[g*cog + m, r] * grad_out[n, g*cog + m, pos]
      GemmArgs<T, T, float> gc;
      gc.m = cg * k, gc.n = p, gc.k = cog;
      gc.a = weight, gc.a_sm = 1, gc.a_sk = cg * k, gc.a_sb = cog * cg * k;
      gc.b = go_n, gc.b_sk = p, gc.b_sn = 1, gc.b_sb = cog * p;
      gc.c = gcol, gc.c_sm = p, gc.c_sn = 1, gc.c_sb = cg * k * p;
      if ((err = launch_gemm(gc, z.groups, stream)) != cudaSuccess) break;
      // gw[g*cog + m, r] += sum_pos grad_out[n, g*cog + m, pos] * col[g*cg*K + r, pos]
      GemmArgs<T, float, float> gwa;
      gwa.m = cog, gwa.n = cg * k, gwa.k = p;
      gwa.a = go_n, gwa.a_sm = p, gwa.a_sk = 1, gwa.a_sb = cog * p;
      gwa.b = col, gwa.b_sk = 1, gwa.b_sn = p, gwa.b_sb = cg * k * p;
      gwa.c = gw, gwa.c_sm = cg * k, gwa.c_sn = 1, gwa.c_sb = cog * cg * k;
      gwa.accumulate = true;
      if ((err = launch_gemm(gwa, z.groups, stream)) != cudaSuccess) break;
      col2im_kernel<T><<<grid_for(cols, kThreads), kThreads, 0, stream>>>(off_n, mask_n, gcol, gx_n, z, cols);
      if (!check()) break;
    }
    const int64_t taps = z.deform_groups * k * p;
    if (taps > 0) {
      offset_mask_kernel<T><<<grid_for(taps, kThreads), kThreads, 0, stream>>>(
          x_n, off_n, mask_n, gcol, grad_offset + n * 2 * z.deform_groups * k * p, grad_mask + n * z.deform_groups * k * p,
          z, taps);
      if (!check()) break;
    }
    if constexpr (!kFloat) {
      if (z.c * hw > 0) {
        float_to_kernel<T><<<grid_for(z.c * hw, kThreads), kThreads, 0, stream>>>(gx_n, grad_x + n * z.c * hw, z.c * hw);
        if (!check()) break;
      }
    }
  }
  if constexpr (!kFloat) {
    if (err == cudaSuccess && wcount > 0) {
      float_to_kernel<T><<<grid_for(wcount, kThreads), kThreads, 0, stream>>>(gw, grad_weight, wcount);
      check();
    }
  }
  if (err == cudaSuccess && grad_bias != nullptr && z.co > 0) {
    if (z.co > 0x7fffffff) {
      err = cudaErrorInvalidConfiguration;
    } else {
      bias_grad_kernel<T><<<static_cast<unsigned>(z.co), kThreads, 0, stream>>>(grad_output, grad_bias, z.n, z.co, p);
      check();
    }
  }
  const cudaError_t f = scratch.release();
  return err != cudaSuccess ? err : f;
}

#define GRAFT_MDCN_INSTANTIATE(T)                                                                                  \
  template size_t modulated_deform_conv2d_forward_workspace_bytes<T>(const MdcnSizes&, int64_t);                   \
  template size_t modulated_deform_conv2d_workspace_bytes<T>(const MdcnSizes&, bool);                              \
  template cudaError_t modulated_deform_conv2d_forward<T>(const T*, const T*, const T*, const T*, const T*, T*,    \
                                                          const MdcnSizes&, void*, size_t, cudaStream_t,           \
                                                          MdcnFailure*);                                           \
  template cudaError_t modulated_deform_conv2d_backward<T>(const T*, const T*, const T*, const T*, const T*, T*,   \
                                                           T*, T*, T*, T*, const MdcnSizes&, void*, size_t,        \
                                                           cudaStream_t);
GRAFT_MDCN_INSTANTIATE(float)
GRAFT_MDCN_INSTANTIATE(__half)
#undef GRAFT_MDCN_INSTANTIATE

}  // namespace graft::cuda
