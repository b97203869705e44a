#include "ops/fused_conv/conv_int8_kernels.cuh"

#include <cuda_fp16.h>

#include <climits>
#include <cstdint>

#include "backends/cuda/cuda_kernel_device.cuh"
#include "ops/nn/conv_epilogue.cuh"

namespace graft::cuda::k {
namespace {

// The implicit GEMM: rows are output pixels (n, oh, ow), columns filters, the reduction walks
// (kh, kw, c) with c innermost, so each 16-byte piece of a row is 16 channels of one input pixel
// (c is a multiple of 16) or zeros where the window reaches into the padding. A block computes
// kRows x kCols outputs with 8 warps; each k-step stages kStep bytes of every row and column in shared
// memory through cp.async, kStages deep, so the loads of later steps overlap the tensor-core work
// on the current one.
constexpr int kBlockThreads = 256;
constexpr int kStep = 64;    // bytes of the reduction per stage: two m16n8k32 steps
constexpr int kChunks = kStep / 16;
constexpr int kStages = 3;

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes from global to shared memory, or 16 zero bytes when !valid (src is then not read).
__device__ __forceinline__ void copy16_async(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ __forceinline__ void wait_copies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// A staged row is kStep = 64 bytes, four 16-byte pieces. ldmatrix reads one piece from 8
// consecutive rows at once; rows 64 bytes apart would put rows r and r + 2 in the same banks, so
// piece j of row r is stored at position j ^ ((r >> 1) & 3): the 8 rows then cover all 32 banks.
__device__ __forceinline__ int piece_offset(int row, int piece) {
  return row * kStep + ((piece ^ ((row >> 1) & 3)) << 4);
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

__device__ __forceinline__ void mma_s8(int (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Everything the kernel needs besides the pointers, in 32 bits (conv_nhwc_int8_supported checks).
struct Int8Plan {
  int n, h, w, c, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw;
  int m;
  int reduction;  // kh * kw * c
  int pixels;     // n * oh * ow
};

// One output value through the epilogue (the header's formula); the CPU reference in the kernel
// tests computes the same float32 steps.
__device__ __forceinline__ float epilogue_value(int acc, const Int8ConvEpilogue& e, int co, const __half* z,
                                                int64_t zi) {
  float v = __fmaf_rn(static_cast<float>(acc), e.scale[co], e.bias ? e.bias[co] : 0.f);
  if (z) v = __fadd_rn(v, __half2float(z[zi]));
  return apply_epilogue(e.act, v);
}

__device__ __forceinline__ int8_t quantize_out(float v, float out_scale) {
  const float q = fminf(fmaxf(rintf(__fdiv_rn(v, out_scale)), -128.f), 127.f);  // fmaxf(NaN, -128) is -128
  return static_cast<int8_t>(static_cast<int>(q));
}

// kRows x kCols outputs per block; warps laid out kWarpRows x (8 / kWarpRows), each computing
// (kRows / kWarpRows) x (kCols / (8 / kWarpRows)) outputs as 16x8 tensor-core tiles.
template <int kRows, int kCols, int kWarpRows>
__global__ void __launch_bounds__(kBlockThreads) conv_nhwc_int8_kernel(const int8_t* __restrict__ x,
                                                                  const int8_t* __restrict__ w,
                                                                  Int8ConvEpilogue e, void* __restrict__ y,
                                                                  Int8Plan p) {
  constexpr int kWarpCols = 8 / kWarpRows;
  constexpr int kWarpM = kRows / kWarpRows;  // rows per warp
  constexpr int kWarpN = kCols / kWarpCols;  // columns per warp
  constexpr int kTilesM = kWarpM / 16;
  constexpr int kTilesN = kWarpN / 8;
  static_assert(kTilesM >= 1 && kTilesN >= 2 && kTilesN % 2 == 0, "warp tile");
  constexpr int kRowLoads = kRows * kChunks / kBlockThreads;  // 16-byte pieces each thread stages per step
  constexpr int kColLoads = kCols * kChunks / kBlockThreads;
  static_assert(kRowLoads >= 1 && kColLoads >= 1, "block tile");
  __shared__ __align__(128) int8_t stage_a[kStages][kRows * kStep];
  __shared__ __align__(128) int8_t stage_b[kStages][kCols * kStep];

  const int tid = threadIdx.x;
  const int lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp % kWarpRows, warp_n = warp / kWarpRows;
  const int row0 = blockIdx.x * kRows, col0 = blockIdx.y * kCols;
  const int piece = tid & 3;  // the 16-byte piece of the step this thread stages, in every row it loads

  // The rows (output pixels) this thread stages: the first input pixel of the window and the image.
  int in_y[kRowLoads], in_x[kRowLoads];
  const int8_t* image[kRowLoads];
  for (int i = 0; i < kRowLoads; ++i) {
    const int pix = row0 + (tid >> 2) + i * (kBlockThreads / 4);
    if (pix < p.pixels) {
      const int ox = pix % p.ow, t = pix / p.ow;
      const int oy = t % p.oh, img = t / p.oh;
      in_y[i] = oy * p.sh - p.ph;
      in_x[i] = ox * p.sw - p.pw;
      image[i] = x + static_cast<int64_t>(img) * p.h * p.w * p.c;
    } else {
      in_y[i] = INT_MIN / 2;  // every tap out of range: zeros
      in_x[i] = 0;
      image[i] = x;
    }
  }

  auto stage = [&](int buf, int step) {
    const int k = step * kStep + piece * 16;
    const bool in_k = k < p.reduction;
    const int tap = in_k ? k / p.c : 0;
    const int ch = k - tap * p.c;
    const int r = tap / p.kw, s = tap - r * p.kw;
    for (int i = 0; i < kRowLoads; ++i) {
      const int row = (tid >> 2) + i * (kBlockThreads / 4);
      const int iy = in_y[i] + r * p.dh, ix = in_x[i] + s * p.dw;
      const bool ok = in_k && iy >= 0 && iy < p.h && ix >= 0 && ix < p.w;
      const int8_t* src = ok ? image[i] + (static_cast<int64_t>(iy) * p.w + ix) * p.c + ch : x;
      copy16_async(&stage_a[buf][piece_offset(row, piece)], src, ok);
    }
    for (int i = 0; i < kColLoads; ++i) {
      const int row = (tid >> 2) + i * (kBlockThreads / 4);
      const int co = col0 + row;
      const bool ok = in_k && co < p.m;
      const int8_t* src = ok ? w + static_cast<int64_t>(co) * p.reduction + k : w;
      copy16_async(&stage_b[buf][piece_offset(row, piece)], src, ok);
    }
  };

  int acc[kTilesM][kTilesN][4] = {};
  const int steps = (p.reduction + kStep - 1) / kStep;
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < steps) stage(s, s);
    commit_copies();
  }
  // ldmatrix addressing: lane l supplies row (l & 7) of the 8x16-byte matrix l >> 3.
  const int mat = lane >> 3, mrow = lane & 7;
  for (int step = 0; step < steps; ++step) {
    wait_copies<kStages - 2>();
    __syncthreads();  // this step's data is in; every warp is done with the buffer refilled next
    const int next = step + kStages - 1;
    if (next < steps) stage(next % kStages, next);
    commit_copies();
    const int8_t* sa = stage_a[step % kStages];
    const int8_t* sb = stage_b[step % kStages];
#pragma unroll
    for (int half = 0; half < 2; ++half) {  // the two 32-byte halves of the step
      uint32_t a[kTilesM][4];
#pragma unroll
      for (int i = 0; i < kTilesM; ++i) {
        // Matrices: rows 0-7 / 8-15 of the tile, bytes 0-15 / 16-31 of the half: a0..a3 of mma's A.
        const int row = warp_m * kWarpM + i * 16 + mrow + (mat & 1) * 8;
        ldmatrix_x4(a[i], sa + piece_offset(row, half * 2 + (mat >> 1)));
      }
#pragma unroll
      for (int j = 0; j < kTilesN; j += 2) {
        // Matrices: filters of tile j / j + 1, bytes 0-15 / 16-31: b0, b1 of each.
        uint32_t b[4];
        const int col = warp_n * kWarpN + (j + (mat >> 1)) * 8 + mrow;
        ldmatrix_x4(b, sb + piece_offset(col, half * 2 + (mat & 1)));
#pragma unroll
        for (int i = 0; i < kTilesM; ++i) {
          mma_s8(acc[i][j], a[i], b[0], b[1]);
          mma_s8(acc[i][j + 1], a[i], b[2], b[3]);
        }
      }
    }
  }

  // The accumulators: c0, c1 at row (lane >> 2), columns 2 * (lane & 3) and + 1; c2, c3 eight rows down.
  const __half* z = static_cast<const __half*>(e.z);
  const bool int8_out = e.out_scale > 0.f;
#pragma unroll
  for (int i = 0; i < kTilesM; ++i) {
#pragma unroll
    for (int hrow = 0; hrow < 2; ++hrow) {
      const int pix = row0 + warp_m * kWarpM + i * 16 + (lane >> 2) + hrow * 8;
      if (pix >= p.pixels) continue;
      const int64_t base = static_cast<int64_t>(pix) * p.m;
#pragma unroll
      for (int j = 0; j < kTilesN; ++j) {
        const int co = col0 + warp_n * kWarpN + j * 8 + 2 * (lane & 3);
        if (co >= p.m) continue;
        const bool pair = co + 1 < p.m;
        const float v0 = epilogue_value(acc[i][j][hrow * 2], e, co, z, base + co);
        const float v1 = pair ? epilogue_value(acc[i][j][hrow * 2 + 1], e, co + 1, z, base + co + 1) : 0.f;
        if (int8_out) {
          int8_t* out = static_cast<int8_t*>(y) + base + co;
          const int8_t q0 = quantize_out(v0, e.out_scale);
          if (pair && ((base + co) & 1) == 0) {
            const int8_t q1 = quantize_out(v1, e.out_scale);
            *reinterpret_cast<char2*>(out) = make_char2(q0, q1);
          } else {
            out[0] = q0;
            if (pair) out[1] = quantize_out(v1, e.out_scale);
          }
        } else {
          __half* out = static_cast<__half*>(y) + base + co;
          if (pair && ((base + co) & 1) == 0) {
            *reinterpret_cast<__half2*>(out) = __halves2half2(__float2half_rn(v0), __float2half_rn(v1));
          } else {
            out[0] = __float2half_rn(v0);
            if (pair) out[1] = __float2half_rn(v1);
          }
        }
      }
    }
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

bool conv_nhwc_int8_supported(const Window2d& g, int64_t m, const Epilogue& act) {
  if (act.act != 0 && act.act != 1 && act.act != 3) return false;
  if (g.n < 1 || g.c < 16 || g.c % 16 || m < 1 || g.kh < 1 || g.kw < 1 || g.oh < 1 || g.ow < 1 || g.h < 1 ||
      g.w < 1 || g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1 || g.ph < 0 || g.pw < 0)
    return false;
  for (int64_t v : {g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, g.ph, g.pw, g.h, g.w, g.oh, g.ow})
    if (v > 65535) return false;
  // 32-bit indexing: the reduction, x, w, y and the pixel count (each product bounded before the next).
  auto fits = [](int64_t a, int64_t b) { return a <= INT_MAX / b; };
  if (!fits(g.kh, g.kw) || !fits(g.kh * g.kw, g.c)) return false;
  const int64_t reduction = g.kh * g.kw * g.c;
  if (reduction >= kInt8ConvTermLimit) return false;  // an int32 sum could overflow
  if (!fits(m, reduction) || !fits(g.h, g.w) || !fits(g.h * g.w, g.c)) return false;
  if (!fits(g.n, g.oh) || !fits(g.n * g.oh, g.ow) || !fits(g.n * g.oh * g.ow, m)) return false;
  // The window's far corner stays within int range: oy * sh + (kh - 1) * dh.
  return g.oh * g.sh + g.kh * g.dh <= INT_MAX / 2 && g.ow * g.sw + g.kw * g.dw <= INT_MAX / 2;
}

cudaError_t launch_conv_nhwc_int8(const int8_t* x, const int8_t* w, const Int8ConvEpilogue& e, void* y,
                                  const Window2d& g, int64_t m, cudaStream_t s) {
  if (!conv_nhwc_int8_supported(g, m, e.act) || !x || !w || !y || !e.scale || !aligned16(x) || !aligned16(w) ||
      !(e.out_scale >= 0.f))
    return cudaErrorInvalidValue;
  Int8Plan p;
  p.n = static_cast<int>(g.n), p.h = static_cast<int>(g.h), p.w = static_cast<int>(g.w), p.c = static_cast<int>(g.c);
  p.oh = static_cast<int>(g.oh), p.ow = static_cast<int>(g.ow), p.kh = static_cast<int>(g.kh);
  p.kw = static_cast<int>(g.kw), p.sh = static_cast<int>(g.sh), p.sw = static_cast<int>(g.sw);
  p.dh = static_cast<int>(g.dh), p.dw = static_cast<int>(g.dw), p.ph = static_cast<int>(g.ph);
  p.pw = static_cast<int>(g.pw), p.m = static_cast<int>(m);
  p.reduction = static_cast<int>(g.kh * g.kw * g.c);
  p.pixels = static_cast<int>(g.n * g.oh * g.ow);
  // The widest tile that still gives every multiprocessor a block: 128 x 128, or 128 pixels by 64
  // filters (also whenever m <= 64, which would leave half of a 128-wide tile's work empty), or 64 x
  // 64 for small problems (ResNet's last stage at batch 32 makes 13 x 4 large tiles for 132
  // multiprocessors).
  const int64_t sms = multiprocessors_or_default();
  auto tiles = [&](int64_t rows, int64_t cols) { return (p.pixels + rows - 1) / rows * ((m + cols - 1) / cols); };
  auto grid_of = [&](int64_t rows, int64_t cols) {
    return dim3(static_cast<unsigned>((p.pixels + rows - 1) / rows), static_cast<unsigned>((m + cols - 1) / cols));
  };
  dim3 grid;
  if (m > 64 && tiles(128, 128) >= sms) {
    grid = grid_of(128, 128);
    if (grid.y > 65535) return cudaErrorInvalidValue;
    conv_nhwc_int8_kernel<128, 128, 4><<<grid, kBlockThreads, 0, s>>>(x, w, e, y, p);
  } else if (tiles(128, 64) >= sms) {
    grid = grid_of(128, 64);
    if (grid.y > 65535) return cudaErrorInvalidValue;
    conv_nhwc_int8_kernel<128, 64, 4><<<grid, kBlockThreads, 0, s>>>(x, w, e, y, p);
  } else {
    grid = grid_of(64, 64);
    if (grid.y > 65535) return cudaErrorInvalidValue;
    conv_nhwc_int8_kernel<64, 64, 2><<<grid, kBlockThreads, 0, s>>>(x, w, e, y, p);
  }
  return cudaGetLastError();
}

}  // namespace graft::cuda::k
