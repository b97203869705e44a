#include "ops/fused_conv/depthwise_tile_kernels.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>
#include <cstdint>
#include <type_traits>

#include "ops/nn/conv_epilogue.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"

namespace graft::cuda::k {
namespace {

// A block covers CH channels of its pixels (16: two 16-byte vectors of a pixel; 8 where the channel
// count is not a multiple of 16, as MobileNetV3's 72 and 120), CH / 2 threads across them, two
// channels each.
constexpr int kTileThreads = 256;

// Two neighbouring channels as float, loaded and stored as one 4-byte word.
template <typename T>
struct ChannelPair;
template <>
struct ChannelPair<__half> {
  static __device__ __forceinline__ float2 ld(const __half* p) {
    return __half22float2(*reinterpret_cast<const __half2*>(p));
  }
  static __device__ __forceinline__ void st(__half* p, float a, float b) {
    *reinterpret_cast<__half2*>(p) = __floats2half2_rn(a, b);
  }
};
template <>
struct ChannelPair<__nv_bfloat16> {
  static __device__ __forceinline__ float2 ld(const __nv_bfloat16* p) {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));
  }
  static __device__ __forceinline__ void st(__nv_bfloat16* p, float a, float b) {
    *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(a, b);
  }
};

// One block: a tile of TH output rows by TC output columns for CH channels (blockIdx.y picks the
// chunk; blockIdx.x the image and the tile). Threads are (pair, column, row group), G row groups
// of R rows: a warp is CH / 2 channel pairs of 64 / CH neighbouring columns, so its shared reads
// of one tap are 128 contiguous bytes at stride 1, and its stores whole 32-byte sectors (16 bytes
// for CH = 8).
// Each thread computes R outputs down one column: it walks the (R - 1) * S + K input rows under
// them once, reading each row's K taps' inputs into registers and adding them to every output
// whose window holds that row (at stride 1, 3.75 shared reads per output for a 3x3 filter with
// R = 8 instead of 9). Accumulation is in float, as in the other depthwise kernels.
template <typename T, int K, int S, int CH, int TC, int TH>
__global__ void __launch_bounds__(kTileThreads) depthwise_nhwc_tile_kernel(const T* __restrict__ x,
                                                                           const T* __restrict__ w,
                                                                           const T* __restrict__ bias,
                                                                           const T* __restrict__ z, T* __restrict__ y,
                                                                           Window2d g, Epilogue e, int32_t tiles_w,
                                                                           int32_t tiles_h) {
  constexpr int kPairs = CH / 2, kParts = CH / 8;  // kParts: 16-byte vectors per pixel
  constexpr int G = kTileThreads / (kPairs * TC), R = TH / G;
  static_assert(G * R == TH && kPairs * TC * G == kTileThreads, "the threads cover the tile exactly");
  constexpr int IR = (TH - 1) * S + K, IC = (TC - 1) * S + K;  // the input tile with its halo
  __shared__ __align__(16) T tile[IR * IC * CH];
  __shared__ T taps[CH * K * K];  // the block's filters, w[cbase .. cbase + CH) as [CH][K][K]

  const int32_t c = static_cast<int32_t>(g.c), hi = static_cast<int32_t>(g.h), wi = static_cast<int32_t>(g.w);
  const int32_t oh = static_cast<int32_t>(g.oh), ow = static_cast<int32_t>(g.ow);
  int32_t b = static_cast<int32_t>(blockIdx.x);
  const int32_t tx = b % tiles_w;
  b /= tiles_w;
  const int32_t ty = b % tiles_h, n = b / tiles_h;
  const int32_t cbase = static_cast<int32_t>(blockIdx.y) * CH;
  const int32_t oy0 = ty * TH, ox0 = tx * TC;
  const int32_t iy0 = oy0 * S - static_cast<int32_t>(g.ph), ix0 = ox0 * S - static_cast<int32_t>(g.pw);

  // The tile: kParts 16-byte vectors per pixel, zeros where the window reaches into the padding.
  for (int i = static_cast<int>(threadIdx.x); i < IR * IC * kParts; i += kTileThreads) {
    const int part = i % kParts, pix = i / kParts;
    const int r = pix / IC, col = pix - r * IC;
    const int32_t iy = iy0 + r, ix = ix0 + col;
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (iy >= 0 && iy < hi && ix >= 0 && ix < wi) {
      v = *reinterpret_cast<const uint4*>(x + ((n * hi + iy) * wi + ix) * c + cbase + part * 8);
      // The deferred activation, once per staged element (never on the padding).
      if (g.in_act) v = input_activated16<T>(v, g.in_act, g.in_lo, g.in_hi);
    }
    *reinterpret_cast<uint4*>(tile + pix * CH + part * 8) = v;
  }

  // The block's CH filters are one contiguous run of w ([c, K, K]): staged with neighbouring threads
  // reading neighbouring elements. (Each thread read its own two channels' 9 to 49 taps from global
  // memory at a stride of K * K elements; ncu counted half of the kernel's L2 sectors as excess from
  // uncoalesced accesses on MobileNetV2's first stride-1 3x3 layer at 67d87e7, likely these.)
  for (int i = static_cast<int>(threadIdx.x); i < CH * K * K; i += kTileThreads) taps[i] = w[cbase * (K * K) + i];

  const int pair = static_cast<int>(threadIdx.x) % kPairs;
  const int col = (static_cast<int>(threadIdx.x) / kPairs) % TC;
  const int grp = static_cast<int>(threadIdx.x) / (kPairs * TC);
  const int32_t ch = cbase + pair * 2;
  __syncthreads();
  // The two channels' taps, in registers for the whole tile.
  float2 wk[K * K];
#pragma unroll
  for (int t = 0; t < K * K; ++t)
    wk[t] = make_float2(Elem<T>::ld(taps[(pair * 2) * (K * K) + t]), Elem<T>::ld(taps[(pair * 2 + 1) * (K * K) + t]));

  float2 acc[R];
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = make_float2(0.f, 0.f);
  const T* base = tile + ((grp * R * S) * IC + col * S) * CH + pair * 2;
#pragma unroll
  for (int i = 0; i < (R - 1) * S + K; ++i) {
    float2 xv[K];
#pragma unroll
    for (int kx = 0; kx < K; ++kx) xv[kx] = ChannelPair<T>::ld(base + (i * IC + kx) * CH);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int ky = i - r * S;  // known at compile time once unrolled
      if (ky >= 0 && ky < K) {
#pragma unroll
        for (int kx = 0; kx < K; ++kx) {
          acc[r].x += xv[kx].x * wk[ky * K + kx].x;
          acc[r].y += xv[kx].y * wk[ky * K + kx].y;
        }
      }
    }
  }

  const int32_t ox = ox0 + col;
  if (ox >= ow) return;
  const float2 bv = bias ? ChannelPair<T>::ld(bias + ch) : make_float2(0.f, 0.f);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int32_t oy = oy0 + grp * R + r;
    if (oy >= oh) break;
    const int32_t out = ((n * oh + oy) * ow + ox) * c + ch;
    float a = acc[r].x + bv.x, bb = acc[r].y + bv.y;
    if (z) {
      const float2 zv = ChannelPair<T>::ld(z + out);
      a += zv.x;
      bb += zv.y;
    }
    ChannelPair<T>::st(y + out, apply_epilogue(e, a), apply_epilogue(e, bb));
  }
}

// The tile shape: 16 x 16 outputs where the image is at least 16 wide, else 8 x 8, so a 7x7 or
// 14x14 map does not leave most of a block idle.
template <typename T, int K, int S, int CH>
cudaError_t launch_tile(const T* x, const T* w, const T* bias, const T* z, T* y, const Window2d& g, Epilogue e,
                        cudaStream_t s) {
  auto launch = [&](auto side) {
    constexpr int TC = decltype(side)::value, TH = TC;
    const int64_t tiles_w = (g.ow + TC - 1) / TC, tiles_h = (g.oh + TH - 1) / TH;
    const int64_t blocks = g.n * tiles_h * tiles_w;
    if (blocks > INT_MAX) return cudaErrorInvalidValue;
    const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(g.c / CH));
    depthwise_nhwc_tile_kernel<T, K, S, CH, TC, TH><<<grid, kTileThreads, 0, s>>>(
        x, w, bias, z, y, g, e, static_cast<int32_t>(tiles_w), static_cast<int32_t>(tiles_h));
    return cudaGetLastError();
  };
  if (g.ow >= 16) return launch(std::integral_constant<int, 16>{});
  return launch(std::integral_constant<int, 8>{});
}

template <typename T, int K, int S>
cudaError_t launch_tile_chunked(const T* x, const T* w, const T* bias, const T* z, T* y, const Window2d& g, Epilogue e,
                                cudaStream_t s) {
  if (g.c % 16 == 0) return launch_tile<T, K, S, 16>(x, w, bias, z, y, g, e, s);
  return launch_tile<T, K, S, 8>(x, w, bias, z, y, g, e, s);
}

template <typename T>
cudaError_t dispatch_tile(const void* x, const void* w, const void* bias, const void* z, void* y, const Window2d& g,
                          Epilogue e, cudaStream_t s) {
  const T *xt = static_cast<const T*>(x), *wt = static_cast<const T*>(w), *bt = static_cast<const T*>(bias),
          *zt = static_cast<const T*>(z);
  T* yt = static_cast<T*>(y);
  const int64_t k = g.kh, st = g.sh;
  if (k == 3 && st == 1) return launch_tile_chunked<T, 3, 1>(xt, wt, bt, zt, yt, g, e, s);
  if (k == 3 && st == 2) return launch_tile_chunked<T, 3, 2>(xt, wt, bt, zt, yt, g, e, s);
  if (k == 5 && st == 1) return launch_tile_chunked<T, 5, 1>(xt, wt, bt, zt, yt, g, e, s);
  if (k == 5 && st == 2) return launch_tile_chunked<T, 5, 2>(xt, wt, bt, zt, yt, g, e, s);
  if (k == 7 && st == 1) return launch_tile_chunked<T, 7, 1>(xt, wt, bt, zt, yt, g, e, s);
  return cudaErrorInvalidValue;
}

}  // namespace

bool depthwise_nhwc_tile_supported(KType t, const Window2d& g) {
  if (t != KType::kF16 && t != KType::kBF16) return false;
  // 3x3 and 5x5 at stride 1 or 2 (MobileNet, EfficientNet); 7x7 at stride 1 (ConvNeXt's blocks).
  if (g.kh != g.kw || g.sh != g.sw) return false;
  if (!((g.kh == 3 || g.kh == 5) && (g.sh == 1 || g.sh == 2)) && !(g.kh == 7 && g.sh == 1)) return false;
  if (g.dh != 1 || g.dw != 1 || g.c % 8 != 0 || g.c / (g.c % 16 == 0 ? 16 : 8) > 65535) return false;
  if (g.n < 1 || g.h < 1 || g.w < 1 || g.oh < 1 || g.ow < 1 || g.ph < 0 || g.pw < 0 || g.ph > 65535 || g.pw > 65535)
    return false;
  const int64_t limit = INT_MAX;
  if (g.n * g.h * g.w > limit / g.c || g.n * g.oh * g.ow > limit / g.c) return false;
  // Every tile origin's input row and column (oy0 * S - ph and the like) in int32 as well.
  if (g.oh * g.sh + g.kh > limit || g.ow * g.sw + g.kw > limit) return false;
  return g.n * ((g.oh + 7) / 8) * ((g.ow + 7) / 8) <= limit;  // the 8 x 8 tiles' count bounds both shapes'
}

cudaError_t launch_depthwise_conv_nhwc_tile(KType t, const void* x, const void* w, const void* bias, const void* z,
                                            void* y, const Window2d& g, Epilogue e, cudaStream_t s) {
  if (!depthwise_nhwc_tile_supported(t, g)) return cudaErrorInvalidValue;
  const auto addr4 =
      reinterpret_cast<uintptr_t>(y) | reinterpret_cast<uintptr_t>(z) | reinterpret_cast<uintptr_t>(bias);
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0 || addr4 % 4 != 0)
    return launch_depthwise_conv_nhwc(t, x, w, bias, z, y, g, e, false, s);
  if (t == KType::kF16) return dispatch_tile<__half>(x, w, bias, z, y, g, e, s);
  return dispatch_tile<__nv_bfloat16>(x, w, bias, z, y, g, e, s);
}

}  // namespace graft::cuda::k
