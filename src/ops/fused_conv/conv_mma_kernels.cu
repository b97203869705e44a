#include "ops/fused_conv/conv_mma_kernels.cuh"

#include <mma.h>

#include <algorithm>
#include <climits>
#include <type_traits>

#include "ops/nn/conv_epilogue.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"

namespace graft::cuda::k {
namespace {

namespace wmma = nvcuda::wmma;

// The default dynamic shared-memory limit: no opt-in attribute to set (a call that CUDA graph
// capture and the first launch would have to order).
constexpr int64_t kMmaShared = 48 * 1024;
constexpr int kFrag = 16;        // WMMA's 16x16x16 float16 shape
constexpr int kScratchLd = 20;   // floats per row of a warp's accumulator staging (a multiple of 4)
constexpr int kMaxColumns = 256; // filters per block: 16 accumulator fragments walked one at a time

// How one problem is cut into blocks; everything the kernel needs besides the pointers.
struct MmaPlan {
  Window2d g;
  int m = 0;
  int reduction = 0;  // kh * kw * c: the GEMM's K
  int kpad = 0;       // K rounded up to 16 (the columns past K are staged as zeros)
  int ld = 0;         // halves per staged row: kpad + 8, so consecutive rows start in different banks
  int warps = 0;      // a warp per 16 output pixels
  int columns = 0;    // filters per block (a multiple of 16)
  int column_blocks = 0;
  int pixels = 0;     // n * oh * ow: the GEMM's rows
  int64_t smem = 0;
  Epilogue e;
  bool vec_in = false, vec_out = false;
};

int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

// What both kernels' plans check: positive extents, c a multiple of 8, kh, kw, c and the reduction
// kh * kw * c each at most max_reduction (the factors bounded first, so the product cannot overflow),
// and every index within 32 bits. Returns the reduction, or 0 when a check fails.
int64_t checked_reduction(const Window2d& g, int64_t m, int64_t max_reduction) {
  if (g.n < 1 || g.c < 8 || g.c % 8 || m < 1 || g.kh < 1 || g.kw < 1 || g.oh < 1 || g.ow < 1 || g.h < 1 || g.w < 1 ||
      g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1)
    return 0;
  if (g.kh > max_reduction || g.kw > max_reduction || g.c > max_reduction) return 0;
  const int64_t reduction = g.kh * g.kw * g.c;
  if (reduction > max_reduction) return 0;
  // Strides, dilations and pads small enough that the kernels' 32-bit input coordinates cannot overflow.
  for (int64_t v : {g.sh, g.sw, g.dh, g.dw, g.ph, g.pw})
    if (v < 0 || v > 65535) return 0;
  // 32-bit indexing: x, y and the pixel count (each product checked before it can overflow).
  auto fits = [](int64_t a, int64_t b) { return a <= INT_MAX / b; };
  if (!fits(g.n, g.h) || !fits(g.n * g.h, g.w) || !fits(g.n * g.h * g.w, g.c)) return 0;
  if (!fits(g.n, g.oh) || !fits(g.n * g.oh, g.ow) || !fits(g.n * g.oh * g.ow, m)) return 0;
  return reduction;
}

bool plan_mma(const Window2d& g, int64_t m, MmaPlan* p) {
  const int64_t reduction = checked_reduction(g, m, kConvMmaMaxReduction);
  if (!reduction) return false;
  p->g = g;
  p->m = static_cast<int>(m);
  p->reduction = static_cast<int>(reduction);
  p->kpad = static_cast<int>(round_up(reduction, kFrag));
  p->ld = p->kpad + 8;
  // 8 warps (128 pixels) while the staged rows are short, 4 when they would crowd the filters out.
  p->warps = p->kpad <= 64 ? 8 : 4;
  const int64_t rows_bytes = int64_t{16} * p->warps * p->ld * 2;
  const int64_t scratch_bytes = int64_t{p->warps} * kFrag * kScratchLd * 4;
  int64_t max_columns = (kMmaShared - rows_bytes - scratch_bytes) / (int64_t{p->ld} * 2) / kFrag * kFrag;
  if (max_columns > kMaxColumns) max_columns = kMaxColumns;
  if (max_columns < kFrag) return false;
  const int64_t mpad = round_up(m, kFrag);
  int64_t chunks = (mpad + max_columns - 1) / max_columns;
  // Split the filters further while the grid is short of a few blocks per multiprocessor: a warp
  // walks its block's columns one fragment at a time, so MobileNetV2's 32 -> 192 expansion over
  // 28x28 at batch 32 (196 blocks of 192 columns) ran at a tenth of the memory's bandwidth. Each
  // extra chunk re-stages the block's input rows, which these short reductions make cheap.
  const int64_t row_blocks = (g.n * g.oh * g.ow + 16 * p->warps - 1) / (16 * p->warps);
  const int64_t wanted = 4 * static_cast<int64_t>(multiprocessors_or_default());
  if (row_blocks * chunks < wanted)
    chunks = std::min(mpad / kFrag, std::max(chunks, (wanted + row_blocks - 1) / row_blocks));
  if (chunks > 65535) return false;
  p->columns = static_cast<int>(round_up((mpad + chunks - 1) / chunks, kFrag));
  p->column_blocks = static_cast<int>((mpad + p->columns - 1) / p->columns);  // rounding may leave fewer
  p->pixels = static_cast<int>(g.n * g.oh * g.ow);
  p->smem = rows_bytes + int64_t{p->columns} * p->ld * 2 + scratch_bytes;
  return p->smem <= kMmaShared;
}

// Eight consecutive halves at p as one 16-byte value, with one vector load when `vec`.
__device__ __forceinline__ uint4 load8(const __half* p, bool vec) {
  if (vec) return *reinterpret_cast<const uint4*>(p);
  union {
    uint4 u;
    __half h[8];
  } v;
#pragma unroll
  for (int j = 0; j < 8; ++j) v.h[j] = p[j];
  return v.u;
}

// Up to eight outputs of one pixel, filters co.. (at most m - co of them), from float accumulators
// sv: y[o + j] = act(sv[j] + bias[co + j] + z[o + j]), as 16-byte vectors where p.vec_out allows and
// all eight are filters. e.act is ACT.
template <int ACT>
__device__ __forceinline__ void store_row8(__half* __restrict__ y, const __half* __restrict__ bias,
                                           const __half* __restrict__ z, const MmaPlan& p, const Epilogue& e,
                                           const float* sv, int o, int co) {
  if (p.vec_out && co + 8 <= p.m) {
    union {
      uint4 u;
      __half h[8];
    } zv, yv, bv;
    if (z) zv.u = *reinterpret_cast<const uint4*>(z + o);
    if (bias) bv.u = *reinterpret_cast<const uint4*>(bias + co);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      float s = sv[j];
      if (bias) s += __half2float(bv.h[j]);
      if (z) s += __half2float(zv.h[j]);
      yv.h[j] = __float2half_rn(apply_epilogue(e, s));
    }
    *reinterpret_cast<uint4*>(y + o) = yv.u;
    return;
  }
  for (int j = 0; j < 8 && co + j < p.m; ++j) {
    float s = sv[j];
    if (bias) s += __half2float(bias[co + j]);
    if (z) s += __half2float(z[o + j]);
    y[o + j] = __float2half_rn(apply_epilogue(e, s));
  }
}

// One block: 16 * warps output pixels (GEMM rows) by `columns` filters (GEMM columns). Shared
// memory: the rows' receptive fields [16 * warps][ld], the filters [columns][ld] (column-major B),
// then each warp's 16x16 float staging for the epilogue. ACT is the epilogue's activation code, a
// constant so that apply_epilogue's switch folds away: ncu found this kernel issue-bound, at 1.5
// instructions per output on MobileNetV2's 16 -> 96 expansion, with that switch run per element.
template <int KSTEPS, int ACT>
__global__ void __launch_bounds__(256) conv_nhwc_mma_kernel(const __half* __restrict__ x, const __half* __restrict__ w,
                                                           const __half* __restrict__ bias, const __half* __restrict__ z,
                                                           __half* __restrict__ y, MmaPlan p) {
  extern __shared__ __align__(128) unsigned char mma_smem[];
  const int rows = 16 * p.warps, chunks = p.kpad / 8, c = static_cast<int>(p.g.c);
  __half* a_s = reinterpret_cast<__half*>(mma_smem);
  __half* b_s = a_s + rows * p.ld;
  float* scratch = reinterpret_cast<float*>(b_s + p.columns * p.ld);
  const int p0 = blockIdx.x * rows, n0 = blockIdx.y * p.columns;
  const int ohw = static_cast<int>(p.g.oh * p.g.ow), ow = static_cast<int>(p.g.ow), kw = static_cast<int>(p.g.kw);
  const int h = static_cast<int>(p.g.h), wd = static_cast<int>(p.g.w);

  // The rows: 8 channels of one tap of one output pixel per step (c % 8 == 0, so a step never
  // straddles two taps); taps in the padding and columns past K are zeros.
  for (int i = threadIdx.x; i < rows * chunks; i += blockDim.x) {
    const int r = i / chunks, k0 = (i - r * chunks) * 8, pix = p0 + r;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (pix < p.pixels && k0 < p.reduction) {
      const int tap = k0 / c, ci = k0 - tap * c, ti = tap / kw, tj = tap - ti * kw;
      const int img = pix / ohw, rem = pix - img * ohw, oy = rem / ow, ox = rem - oy * ow;
      const int iy = oy * static_cast<int>(p.g.sh) - static_cast<int>(p.g.ph) + ti * static_cast<int>(p.g.dh);
      const int ix = ox * static_cast<int>(p.g.sw) - static_cast<int>(p.g.pw) + tj * static_cast<int>(p.g.dw);
      if (iy >= 0 && iy < h && ix >= 0 && ix < wd) v = load8(x + ((img * h + iy) * wd + ix) * c + ci, p.vec_in);
    }
    *reinterpret_cast<uint4*>(a_s + r * p.ld + k0) = v;
  }
  // The filters of this block's columns, [columns][kpad]; filters past m are zeros.
  for (int i = threadIdx.x; i < p.columns * chunks; i += blockDim.x) {
    const int r = i / chunks, k0 = (i - r * chunks) * 8, co = n0 + r;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (co < p.m && k0 < p.reduction) v = load8(w + co * p.reduction + k0, p.vec_in);
    *reinterpret_cast<uint4*>(b_s + r * p.ld + k0) = v;
  }
  __syncthreads();

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row0 = p0 + warp * 16;
  Epilogue e = p.e;
  e.act = ACT;
  if (row0 >= p.pixels) return;  // no block-wide barrier below
  wmma::fragment<wmma::matrix_a, kFrag, kFrag, kFrag, __half, wmma::row_major> a[KSTEPS];
#pragma unroll
  for (int kk = 0; kk < KSTEPS; ++kk) wmma::load_matrix_sync(a[kk], a_s + warp * 16 * p.ld + kk * kFrag, p.ld);
  float* st = scratch + warp * kFrag * kScratchLd;
  // Each lane writes 8 consecutive channels of one pixel: row lane / 2, columns (lane % 2) * 8.
  const int r = lane / 2, cofs = (lane % 2) * 8, pix = row0 + r;
  for (int f = 0; f * kFrag < p.columns && n0 + f * kFrag < p.m; ++f) {
    wmma::fragment<wmma::accumulator, kFrag, kFrag, kFrag, float> acc;
    wmma::fill_fragment(acc, 0.f);
#pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk) {
      wmma::fragment<wmma::matrix_b, kFrag, kFrag, kFrag, __half, wmma::col_major> b;
      wmma::load_matrix_sync(b, b_s + f * kFrag * p.ld + kk * kFrag, p.ld);
      wmma::mma_sync(acc, a[kk], b, acc);
    }
    wmma::store_matrix_sync(st, acc, kScratchLd, wmma::mem_row_major);
    __syncwarp();
    const int co = n0 + f * kFrag + cofs;
    if (pix < p.pixels && co < p.m) store_row8<ACT>(y, bias, z, p, e, st + r * kScratchLd + cofs, pix * p.m + co, co);
    __syncwarp();  // the staging is rewritten by the next fragment
  }
}

template <int KSTEPS, int ACT>
cudaError_t launch_act(const __half* x, const __half* w, const __half* bias, const __half* z, __half* y,
                       const MmaPlan& p, cudaStream_t s) {
  const int rows = 16 * p.warps;
  const dim3 grid(static_cast<unsigned>((p.pixels + rows - 1) / rows), static_cast<unsigned>(p.column_blocks));
  conv_nhwc_mma_kernel<KSTEPS, ACT><<<grid, 32 * p.warps, static_cast<size_t>(p.smem), s>>>(x, w, bias, z, y, p);
  return cudaGetLastError();
}

// Calls f(std::integral_constant<int, ACT>) for the epilogue's activation code (apply_epilogue's).
template <typename F>
cudaError_t with_activation(int act, F&& f) {
  switch (act) {
    case 0: return f(std::integral_constant<int, 0>{});
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 5: return f(std::integral_constant<int, 5>{});
    case 6: return f(std::integral_constant<int, 6>{});
    default: return cudaErrorInvalidValue;
  }
}

// The launchers' operands, typed, and the plan's epilogue and alignment flags set from them.
struct MmaOperands {
  const __half *x, *w, *bias, *z;
  __half* y;
};

MmaOperands operands(MmaPlan* p, const void* x, const void* w, const void* bias, const void* z, void* y, int64_t m,
                     Epilogue e) {
  p->e = e;
  auto aligned = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; };
  p->vec_in = aligned(x) && aligned(w);
  p->vec_out = m % 8 == 0 && aligned(y) && aligned(z) && aligned(bias);
  return MmaOperands{static_cast<const __half*>(x), static_cast<const __half*>(w), static_cast<const __half*>(bias),
                     static_cast<const __half*>(z), static_cast<__half*>(y)};
}

template <int KSTEPS>
cudaError_t launch_steps(const MmaOperands& o, const MmaPlan& p, cudaStream_t s) {
  return with_activation(p.e.act, [&](auto act) {
    return launch_act<KSTEPS, decltype(act)::value>(o.x, o.w, o.bias, o.z, o.y, p, s);
  });
}

// ---- the K-chunked kernel (variant 9): reductions past kConvMmaMaxReduction ----
//
// Stems over images padded to 8 channels (ResNet's 7x7: 392 terms; AlexNet's 11x11: 968), whose
// reduction is too long for the kernel above to hold in registers. cuDNN ran ResNet-18's stem at
// batch 32 on an H200 in 0.203 ms, a third of the network (ncu, 357acf0's zoo engine). A block
// computes 64 output pixels by 64 filters (four warps of 16 pixels, four accumulator fragments
// each), walking the reduction 64 terms at a time through shared memory; the pixels' window
// origins are worked out once per block.
constexpr int kChunkRows = 64, kChunkCols = 64, kChunkK = 64, kChunkLd = kChunkK + 8, kChunkWarps = 4;

bool plan_mma_chunked(const Window2d& g, int64_t m, MmaPlan* p) {
  const int64_t reduction = checked_reduction(g, m, kConvMmaChunkedMaxReduction);
  if (reduction <= kConvMmaMaxReduction) return false;  // failed checks (0), or variant 7's
  const int64_t column_blocks = (m + kChunkCols - 1) / kChunkCols;
  if (column_blocks > 65535) return false;
  p->g = g;
  p->m = static_cast<int>(m);
  p->reduction = static_cast<int>(reduction);
  p->kpad = static_cast<int>(round_up(reduction, kChunkK));
  p->ld = kChunkLd;
  p->warps = kChunkWarps;
  p->columns = kChunkCols;
  p->column_blocks = static_cast<int>(column_blocks);
  p->pixels = static_cast<int>(g.n * g.oh * g.ow);
  p->smem = 0;  // static shared memory only
  return true;
}

template <int ACT>
__global__ void __launch_bounds__(kChunkWarps * 32) conv_nhwc_mma_chunked_kernel(
    const __half* __restrict__ x, const __half* __restrict__ w, const __half* __restrict__ bias,
    const __half* __restrict__ z, __half* __restrict__ y, MmaPlan p) {
  __shared__ __align__(128) __half a_s[kChunkRows * kChunkLd];
  __shared__ __align__(128) __half b_s[kChunkCols * kChunkLd];
  __shared__ __align__(128) float scratch[kChunkWarps * kFrag * kScratchLd];
  __shared__ int row_pixel[kChunkRows], row_iy[kChunkRows], row_ix[kChunkRows];  // image's first pixel, window origin
  const int p0 = blockIdx.x * kChunkRows, n0 = blockIdx.y * kChunkCols;
  const int c = static_cast<int>(p.g.c), kw = static_cast<int>(p.g.kw);
  const int h = static_cast<int>(p.g.h), wd = static_cast<int>(p.g.w);
  const int dh = static_cast<int>(p.g.dh), dw = static_cast<int>(p.g.dw);
  if (threadIdx.x < kChunkRows) {
    const int pix = p0 + static_cast<int>(threadIdx.x), ohw = static_cast<int>(p.g.oh * p.g.ow);
    const int ow = static_cast<int>(p.g.ow);
    int img = 0, oy = 0, ox = 0;
    if (pix < p.pixels) {
      img = pix / ohw;
      const int rem = pix - img * ohw;
      oy = rem / ow;
      ox = rem - oy * ow;
    }
    row_pixel[threadIdx.x] = pix < p.pixels ? img * h * wd : -1;  // -1: past the last pixel, staged as zeros
    row_iy[threadIdx.x] = oy * static_cast<int>(p.g.sh) - static_cast<int>(p.g.ph);
    row_ix[threadIdx.x] = ox * static_cast<int>(p.g.sw) - static_cast<int>(p.g.pw);
  }
  const int warp = static_cast<int>(threadIdx.x) / 32;
  wmma::fragment<wmma::accumulator, kFrag, kFrag, kFrag, float> acc[kChunkCols / kFrag];
#pragma unroll
  for (int f = 0; f < kChunkCols / kFrag; ++f) wmma::fill_fragment(acc[f], 0.f);
  __syncthreads();

  constexpr int kVecs = kChunkK / 8;  // 16-byte vectors per staged row
  for (int k0 = 0; k0 < p.reduction; k0 += kChunkK) {
    // This chunk of every row's receptive field: 8 channels of one tap per vector (c % 8 == 0).
    for (int i = static_cast<int>(threadIdx.x); i < kChunkRows * kVecs; i += kChunkWarps * 32) {
      const int r = i / kVecs, k = k0 + (i % kVecs) * 8;
      uint4 v = make_uint4(0, 0, 0, 0);
      const int base = row_pixel[r];
      if (base >= 0 && k < p.reduction) {
        const int tap = k / c, ci = k - tap * c, ti = tap / kw, tj = tap - ti * kw;
        const int iy = row_iy[r] + ti * dh, ix = row_ix[r] + tj * dw;
        if (iy >= 0 && iy < h && ix >= 0 && ix < wd) v = load8(x + (base + iy * wd + ix) * c + ci, p.vec_in);
      }
      *reinterpret_cast<uint4*>(a_s + r * kChunkLd + (i % kVecs) * 8) = v;
    }
    // The same chunk of the block's filters ([m, kh, kw, c]: the reduction is contiguous).
    for (int i = static_cast<int>(threadIdx.x); i < kChunkCols * kVecs; i += kChunkWarps * 32) {
      const int r = i / kVecs, k = k0 + (i % kVecs) * 8, co = n0 + r;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (co < p.m && k < p.reduction) v = load8(w + co * p.reduction + k, p.vec_in);
      *reinterpret_cast<uint4*>(b_s + r * kChunkLd + (i % kVecs) * 8) = v;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kChunkK / kFrag; ++kk) {
      wmma::fragment<wmma::matrix_a, kFrag, kFrag, kFrag, __half, wmma::row_major> a;
      wmma::load_matrix_sync(a, a_s + warp * kFrag * kChunkLd + kk * kFrag, kChunkLd);
#pragma unroll
      for (int f = 0; f < kChunkCols / kFrag; ++f) {
        wmma::fragment<wmma::matrix_b, kFrag, kFrag, kFrag, __half, wmma::col_major> b;
        wmma::load_matrix_sync(b, b_s + f * kFrag * kChunkLd + kk * kFrag, kChunkLd);
        wmma::mma_sync(acc[f], a, b, acc[f]);
      }
    }
    __syncthreads();  // the next chunk overwrites a_s and b_s
  }

  const int lane = static_cast<int>(threadIdx.x) % 32, row0 = p0 + warp * kFrag;
  if (row0 >= p.pixels) return;
  Epilogue e = p.e;
  e.act = ACT;
  float* st = scratch + warp * kFrag * kScratchLd;
  const int r = lane / 2, cofs = (lane % 2) * 8, pix = row0 + r;
#pragma unroll
  for (int f = 0; f < kChunkCols / kFrag; ++f) {
    if (n0 + f * kFrag >= p.m) break;
    wmma::store_matrix_sync(st, acc[f], kScratchLd, wmma::mem_row_major);
    __syncwarp();
    const int co = n0 + f * kFrag + cofs;
    if (pix < p.pixels && co < p.m) store_row8<ACT>(y, bias, z, p, e, st + r * kScratchLd + cofs, pix * p.m + co, co);
    __syncwarp();  // the staging is rewritten by the next fragment
  }
}

template <int ACT>
cudaError_t launch_chunked_act(const __half* x, const __half* w, const __half* bias, const __half* z, __half* y,
                               const MmaPlan& p, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>((p.pixels + kChunkRows - 1) / kChunkRows),
                  static_cast<unsigned>(p.column_blocks));
  conv_nhwc_mma_chunked_kernel<ACT><<<grid, kChunkWarps * 32, 0, s>>>(x, w, bias, z, y, p);
  return cudaGetLastError();
}

}  // namespace

bool conv_nhwc_mma_supported(const Window2d& g, int64_t m) {
  MmaPlan p;
  return plan_mma(g, m, &p);
}

cudaError_t launch_conv_nhwc_mma(const void* x, const void* w, const void* bias, const void* z, void* y,
                                 const Window2d& g, int64_t m, Epilogue e, cudaStream_t s) {
  MmaPlan p;
  if (!plan_mma(g, m, &p) || !x || !w || !y) return cudaErrorInvalidValue;
  const MmaOperands o = operands(&p, x, w, bias, z, y, m, e);
  switch (p.kpad / kFrag) {
    case 1: return launch_steps<1>(o, p, s);
    case 2: return launch_steps<2>(o, p, s);
    case 3: return launch_steps<3>(o, p, s);
    case 4: return launch_steps<4>(o, p, s);
    case 5: return launch_steps<5>(o, p, s);
    case 6: return launch_steps<6>(o, p, s);
    case 7: return launch_steps<7>(o, p, s);
    case 8: return launch_steps<8>(o, p, s);
    default: return cudaErrorInvalidValue;
  }
}

bool conv_nhwc_mma_chunked_supported(const Window2d& g, int64_t m) {
  MmaPlan p;
  return plan_mma_chunked(g, m, &p);
}

cudaError_t launch_conv_nhwc_mma_chunked(const void* x, const void* w, const void* bias, const void* z, void* y,
                                         const Window2d& g, int64_t m, Epilogue e, cudaStream_t s) {
  MmaPlan p;
  if (!plan_mma_chunked(g, m, &p) || !x || !w || !y) return cudaErrorInvalidValue;
  const MmaOperands o = operands(&p, x, w, bias, z, y, m, e);
  return with_activation(e.act, [&](auto act) {
    return launch_chunked_act<decltype(act)::value>(o.x, o.w, o.bias, o.z, o.y, p, s);
  });
}

}  // namespace graft::cuda::k
