// Fused attention (flash-attention style) for GraftAttention.
//
// One thread block per (batch, tile of 16 * warps query rows); each warp owns 16 query rows and
// walks the keys in tiles of 64:
//   S = Q . Kt_tile            (mma.sync m16n8k16, float32 accumulators, kept in registers)
//   online softmax             (running row max m and row sum l, in the log2 domain)
//   O = O * exp2(m_old - m_new) + P . V_tile   (P rounded to the input dtype, reused straight from
//                                               the S accumulators as the A operand)
// and writes Y = O / l once. The [S, S2] scores never touch memory, which is the point: the
// unfused path writes them, reads them for the softmax, writes them again and reads them for PV.
//
// Shared memory holds one K tile and one V tile (the Q tile borrows the V buffer before the key
// loop, the output staging borrows it after). Loads are cp.async 16-byte copies where the operand
// is aligned for them, overlapped with compute: V(t) is fetched while S(t) and its softmax are
// computed, K(t+1) while the softmax and P.V(t) are. Rows are padded by 16 bytes so that the
// eight 16-byte row reads of an ldmatrix fall in distinct banks.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "backends/cuda/cuda_kernel_device.cuh"
#include "ops/transformer/flash_attention.cuh"

namespace graft::cuda::k {

namespace {

constexpr int kKeyTile = 64;  // keys per shared-memory tile
constexpr int kPad = 8;       // elements of padding per shared-memory row (16 bytes)
constexpr int kMaxWarps = 4;  // 64 query rows per block at most (the Q tile lives in the V buffer)

// Everything the kernel needs, by value. Element pointers as raw 16-bit words (float16 or
// bfloat16 bits): the kernel moves them around untouched and only the MMA interprets them.
struct FlashParams {
  const uint16_t* q = nullptr;
  const uint16_t* kt = nullptr;
  const uint16_t* v = nullptr;
  uint16_t* y = nullptr;
  int64_t q_bs = 0, q_rs = 0;
  int64_t k_bs = 0;
  int64_t k_rs =
      0;  // stride between the rows of the shared-memory K tile (d rows, or key rows when key-major)
  int64_t k_js = 0;  // stride between keys
  int64_t v_bs = 0, v_rs = 0;
  int64_t y_bs = 0, y_rs = 0;
  int64_t q_os = 0, k_os = 0, v_os = 0, y_os = 0;  // outer batch strides (two-level batch)
  int64_t inner = 1;                               // batch entries per outer index
  int S = 0, S2 = 0, D = 0, Dv = 0;
  int q_tiles = 0;         // query tiles per batch entry
  float scale_log2 = 0.f;  // scale * log2(e): the softmax runs on exp2
  const uint16_t* bias = nullptr;  // [bias_period, S, S2] added to the scores: batch entry b reads bias[b % period]
  int64_t bias_period = 1;
  bool q_vec = false, k_vec = false, v_vec = false, y_vec = false;  // 16-byte accesses allowed
};

// ---- PTX wrappers --------------------------------------------------------------------------------

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// The "memory" clobbers keep the compiler from moving shared-memory traffic across them and
// across __syncthreads().
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Four 8x8 16-bit matrices; lanes 8i..8i+7 give the row addresses of matrix i, register i of
// every lane receives its (row lane/4, columns 2*(lane%4) + {0,1}) pair, or with .trans the
// (rows 2*(lane%4) + {0,1}, column lane/4) pair.
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const uint16_t* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p))
               : "memory");
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const uint16_t* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p))
               : "memory");
}

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));  // exp2(-inf) = +0
  return y;
}

// m16n8k16 MMA with float32 accumulators, per 16-bit input type; pack() rounds two floats into
// one A-operand register (lower column in the low half).
template <typename T>
struct Mma;
template <>
struct Mma<__half> {
  static __device__ __forceinline__ void run(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    const __half2 h = __floats2half2_rn(lo, hi);
    uint32_t r;
    memcpy(&r, &h, sizeof r);
    return r;
  }
};
template <>
struct Mma<__nv_bfloat16> {
  static __device__ __forceinline__ void run(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    uint32_t r;
    memcpy(&r, &h, sizeof r);
    return r;
  }
};

// One element of T, stored as its 16 bits, as float.
template <typename T>
__device__ __forceinline__ float bits_to_float(uint16_t b) {
  T v;
  memcpy(&v, &b, sizeof b);
  if constexpr (std::is_same_v<T, __half>) return __half2float(v);
  else return __bfloat162float(v);
}

// Copies a [rows, C] tile whose element (r, c) is g[r * rs + c] into shared memory (row stride SS),
// writing zeros outside the valid [vr, vc) corner: zero head-dim padding adds nothing to a dot
// product and zero V rows past S2 keep 0 * garbage (possibly NaN) out of P.V. Out-of-range
// elements are never read. vec: g and rs allow 16-byte copies (C is a multiple of 8).
template <int C, int SS>
__device__ __forceinline__ void load_tile(uint16_t* s, const uint16_t* g, int64_t rs, int rows, int vr,
                                          int vc, bool vec) {
  const int tid = static_cast<int>(threadIdx.x), nthr = static_cast<int>(blockDim.x);
  if (vec) {
    constexpr int kChunks = C / 8;
    for (int ch = tid; ch < rows * kChunks; ch += nthr) {
      const int r = ch / kChunks, c = (ch % kChunks) * 8;
      uint16_t* dst = s + r * SS + c;
      if (r < vr && c + 8 <= vc) {
        cp_async16(dst, g + r * rs + c);
      } else if (r < vr && c < vc) {  // a chunk straddling the valid edge
        const uint16_t* src = g + r * rs + c;
#pragma unroll
        for (int e = 0; e < 8; ++e) dst[e] = c + e < vc ? src[e] : uint16_t(0);
      } else {
        *reinterpret_cast<uint4*>(dst) = make_uint4(0u, 0u, 0u, 0u);
      }
    }
  } else {
    // Element by element, consecutive threads on consecutive columns (coalesced along a row).
#pragma unroll 4
    for (int i = tid; i < rows * C; i += nthr) {
      const int r = i / C, c = i % C;
      s[r * SS + c] = (r < vr && c < vc) ? g[r * rs + c] : uint16_t(0);
    }
  }
}

// kHd: the head dims D and Dv rounded up to 64 or 128 (register arrays and tiles are sized by
// it; 16-wide chunks past D / Dv are skipped). kKeyMajor: Kt's row stride is 1 (the tile is stored
// [key][d]); otherwise its column stride is 1 (stored [d][key]).
template <typename T, int kHd, bool kKeyMajor>
__global__ void __launch_bounds__(kMaxWarps * 32) flash_attention_kernel(const FlashParams p) {
  constexpr int kS = kHd + kPad;         // row stride of the Q, V, output and key-major K tiles
  constexpr int kKtS = kKeyTile + kPad;  // row stride of the [d][key] K tile
  constexpr int kVElems = kKeyTile * kS;
  constexpr int kKElems = kKeyMajor ? kKeyTile * kS : kHd * kKtS;
  __shared__ __align__(16) uint16_t smem[kVElems + kKElems];
  uint16_t* const sV = smem;  // V tile; the Q tile before the key loop, the output staging after it
  uint16_t* const sK = smem + kVElems;

  const int nw = static_cast<int>(blockDim.x) >> 5;
  const int warp = static_cast<int>(threadIdx.x) >> 5, lane = static_cast<int>(threadIdx.x) & 31;
  const int g = lane >> 2, tig = lane & 3;  // MMA fragment coordinates: row group, thread in group
  const int64_t b = blockIdx.x / p.q_tiles;
  const int64_t b_out = b / p.inner, b_in = b % p.inner;
  const uint16_t* const q_b = p.q + b_out * p.q_os + b_in * p.q_bs;
  const uint16_t* const k_b = p.kt + b_out * p.k_os + b_in * p.k_bs;
  const uint16_t* const v_b = p.v + b_out * p.v_os + b_in * p.v_bs;
  const uint16_t* const bias_b = p.bias ? p.bias + (b % p.bias_period) * p.S * static_cast<int64_t>(p.S2) : nullptr;
  const int q0 = static_cast<int>(blockIdx.x % p.q_tiles) * nw * 16;
  const int qw = q0 + warp * 16;  // this warp's first query row
  // Warps whose rows are all past S still load tiles and hit every barrier, but compute nothing.
  const bool active = qw < p.S;
  const int S2 = p.S2;

  auto load_k = [&](int j0) {
    const uint16_t* src = k_b + j0 * p.k_js;
    const int vk = min(kKeyTile, S2 - j0);
    if constexpr (kKeyMajor)
      load_tile<kHd, kS>(sK, src, p.k_rs, kKeyTile, vk, p.D, p.k_vec);
    else
      load_tile<kKeyTile, kKtS>(sK, src, p.k_rs, kHd, p.D, vk, p.k_vec);
  };

  // Q tile (into the V buffer) and K tile 0.
  load_tile<kHd, kS>(sV, q_b + q0 * p.q_rs, p.q_rs, nw * 16, min(nw * 16, p.S - q0), p.D,
                     p.q_vec);
  load_k(0);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();

  // This warp's Q rows as A fragments, kept in registers for the whole key loop.
  const int nkd = (p.D + 15) >> 4;   // 16-wide head-dim chunks holding Q/K data
  const int nvd = (p.Dv + 15) >> 4;  // 16-wide chunks of Dv
  uint32_t qf[kHd / 16][4];
#pragma unroll
  for (int kc = 0; kc < kHd / 16; ++kc) {
    if (kc < nkd) {
      ldsm_x4(qf[kc], sV + (warp * 16 + (lane & 15)) * kS + kc * 16 + (lane >> 4) * 8);
    } else {
      qf[kc][0] = qf[kc][1] = qf[kc][2] = qf[kc][3] = 0u;
    }
  }

  // Accumulator fragments: element e of o[nt] is row g + 8 * (e / 2), column nt * 8 + 2 * tig + e % 2;
  // m and l are per row (g and g + 8); l holds this thread's partial sum (its columns only) until
  // the end, since every rescale multiplies the four partials of a row by the same factor.
  float o[kHd / 8][4];
#pragma unroll
  for (int nt = 0; nt < kHd / 8; ++nt) o[nt][0] = o[nt][1] = o[nt][2] = o[nt][3] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};

  const int ntiles = (S2 + kKeyTile - 1) / kKeyTile;
  for (int t = 0; t < ntiles; ++t) {
    const int j0 = t * kKeyTile;
    const int nkey16 = min(kKeyTile / 16, (S2 - j0 + 15) >> 4);  // 16-key chunks holding keys
    cp_async_wait<0>();                                          // K(t) landed (this thread's copies)
    __syncthreads();  // ... everybody's; and every warp is done reading sV (Q fragments / last P.V)
    load_tile<kHd, kS>(sV, v_b + j0 * p.v_rs, p.v_rs, kKeyTile, min(kKeyTile, S2 - j0), p.Dv,
                       p.v_vec);
    cp_async_commit();

    // S = Q . Kt for 16 rows x 64 keys: s[nt] covers keys j0 + nt * 8 .. + 7.
    float s[kKeyTile / 8][4];
#pragma unroll
    for (int nt = 0; nt < kKeyTile / 8; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
    if (active) {
#pragma unroll
      for (int kc = 0; kc < kHd / 16; ++kc) {
        if (kc >= nkd) continue;
#pragma unroll
        for (int np = 0; np < kKeyTile / 16; ++np) {
          if (np >= nkey16) continue;
          // B fragments of key groups 2np and 2np+1 for d chunk kc: matrices (keys +0..7, d +0..7),
          // (keys +0..7, d +8..15), (keys +8..15, d +0..7), (keys +8..15, d +8..15).
          uint32_t r[4];
          if constexpr (kKeyMajor) {
            ldsm_x4(r, sK + (np * 16 + (lane >> 4) * 8 + (lane & 7)) * kS + kc * 16 + ((lane >> 3) & 1) * 8);
          } else {
            ldsm_x4_trans(
                r, sK + (kc * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * kKtS + np * 16 + (lane >> 4) * 8);
          }
          Mma<T>::run(s[2 * np], qf[kc], r[0], r[1]);
          Mma<T>::run(s[2 * np + 1], qf[kc], r[2], r[3]);
        }
      }
    }
    __syncthreads();  // every warp is done reading sK
    if (t + 1 < ntiles) load_k(j0 + kKeyTile);
    cp_async_commit();  // possibly empty: keeps the group count the waits below rely on

    if (active) {
      // Scale into the log2 domain, mask keys past S2, row max over the quad holding a row.
      float mx[2] = {m[0], m[1]};
#pragma unroll
      for (int nt = 0; nt < kKeyTile / 8; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int j = j0 + nt * 8 + 2 * tig + (e & 1);
          float x = j < S2 ? s[nt][e] * p.scale_log2 : -INFINITY;
          if (bias_b && j < S2) {
            const int row = qw + g + 8 * (e >> 1);  // rows past S compute, but are never stored
            if (row < p.S) x += bits_to_float<T>(bias_b[static_cast<int64_t>(row) * S2 + j]) * 1.4426950408889634f;
          }
          s[nt][e] = x;
          mx[e >> 1] = fmaxf(mx[e >> 1], x);
        }
      }
      float mu[2], alpha[2], rsum[2] = {0.f, 0.f};
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
        // A row with no finite score yet (cannot happen with finite inputs: every tile holds a
        // key) subtracts 0 instead of -inf, so exp2 sees -inf, not NaN.
        mu[r] = mx[r] == -INFINITY ? 0.f : mx[r];
        alpha[r] = fast_exp2(m[r] - mu[r]);  // 0 on the first tile (m = -inf)
        m[r] = mx[r];
      }
#pragma unroll
      for (int nt = 0; nt < kKeyTile / 8; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[nt][e] = fast_exp2(s[nt][e] - mu[e >> 1]);
          rsum[e >> 1] += s[nt][e];
        }
      }
      l[0] = l[0] * alpha[0] + rsum[0];
      l[1] = l[1] * alpha[1] + rsum[1];
#pragma unroll
      for (int nt = 0; nt < kHd / 8; ++nt) {
        o[nt][0] *= alpha[0];
        o[nt][1] *= alpha[0];
        o[nt][2] *= alpha[1];
        o[nt][3] *= alpha[1];
      }
    }

    cp_async_wait<1>();  // V(t) landed (K(t+1) may still be in flight)
    __syncthreads();
    if (active) {
      // O += P . V: the S accumulators of key groups 2kc and 2kc+1 are exactly the A fragment of
      // key chunk kc (rows g / g+8, keys 2tig.. and 8+2tig..).
#pragma unroll
      for (int kc = 0; kc < kKeyTile / 16; ++kc) {
        if (kc >= nkey16) continue;
        uint32_t a[4];
        a[0] = Mma<T>::pack(s[2 * kc][0], s[2 * kc][1]);
        a[1] = Mma<T>::pack(s[2 * kc][2], s[2 * kc][3]);
        a[2] = Mma<T>::pack(s[2 * kc + 1][0], s[2 * kc + 1][1]);
        a[3] = Mma<T>::pack(s[2 * kc + 1][2], s[2 * kc + 1][3]);
#pragma unroll
        for (int np = 0; np < kHd / 16; ++np) {
          if (np >= nvd) continue;
          // B fragments of output column groups 2np and 2np+1 from the [key][dv] tile, transposed:
          // matrices (keys +0..7, dv +0..7), (keys +8..15, dv +0..7), (keys +0..7, dv +8..15),
          // (keys +8..15, dv +8..15).
          uint32_t r[4];
          ldsm_x4_trans(r,
                        sV + (kc * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * kS + np * 16 + (lane >> 4) * 8);
          Mma<T>::run(o[2 * np], a, r[0], r[1]);
          Mma<T>::run(o[2 * np + 1], a, r[2], r[3]);
        }
      }
    }
  }

  cp_async_wait<0>();  // only the last (empty) group can be pending
  __syncthreads();     // every warp is done reading sV: it becomes the output staging area
  if (!active) return;
  float inv[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    inv[r] = 1.f / l[r];
  }
  // Round O / l into this warp's 16 staging rows, then write whole 16-byte row chunks.
  uint16_t* const sy = sV + warp * 16 * kS;
#pragma unroll
  for (int nt = 0; nt < kHd / 8; ++nt) {
    if (nt >= 2 * nvd) continue;
    const int c = nt * 8 + 2 * tig;
    *reinterpret_cast<uint32_t*>(sy + g * kS + c) = Mma<T>::pack(o[nt][0] * inv[0], o[nt][1] * inv[0]);
    *reinterpret_cast<uint32_t*>(sy + (g + 8) * kS + c) = Mma<T>::pack(o[nt][2] * inv[1], o[nt][3] * inv[1]);
  }
  __syncwarp();
  const int rows = min(16, p.S - qw);
  const int chunks = p.Dv >> 3;
  uint16_t* const yw = p.y + b_out * p.y_os + b_in * p.y_bs + qw * p.y_rs;
  for (int ch = lane; ch < rows * chunks; ch += 32) {
    const int r = ch / chunks, c = (ch % chunks) * 8;
    const uint16_t* src = sy + r * kS + c;
    uint16_t* dst = yw + r * p.y_rs + c;
    if (p.y_vec) {
      *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) dst[e] = src[e];
    }
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <typename T, int kHd>
cudaError_t launch_typed(const FlashParams& p, bool key_major, unsigned blocks, int warps,
                         cudaStream_t stream) {
  const dim3 block(static_cast<unsigned>(warps * 32));
  if (key_major)
    flash_attention_kernel<T, kHd, true><<<blocks, block, 0, stream>>>(p);
  else
    flash_attention_kernel<T, kHd, false><<<blocks, block, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace

bool flash_attention_supported(KType dt, int64_t D, int64_t Dv, const AttnOperand& q, const AttnOperand& kt,
                               const AttnOperand& v, const AttnOutput& y) {
  if (dt != KType::kF16 && dt != KType::kBF16) return false;
  if (D < 8 || D > 128 || D % 8 != 0 || Dv < 8 || Dv > 128 || Dv % 8 != 0) return false;
  if (!q.data || !kt.data || !v.data || !y.data) return false;
  if (q.col_stride != 1 || v.col_stride != 1 || y.col_stride != 1) return false;
  if (kt.col_stride != 1 && kt.row_stride != 1) return false;
  for (int64_t st : {q.batch_stride, q.row_stride, kt.batch_stride, kt.row_stride, kt.col_stride,
                     v.batch_stride, v.row_stride, y.batch_stride, y.row_stride, q.outer_stride, kt.outer_stride,
                     v.outer_stride, y.outer_stride})
    if (st < 0) return false;
  return true;
}

cudaError_t launch_flash_attention(KType dt, AttnOperand q, AttnOperand kt, AttnOperand v, AttnOutput y,
                                   int64_t batch, int64_t S, int64_t D, int64_t S2, int64_t Dv, float scale,
                                   cudaStream_t stream, int warps, int64_t batch_inner, const void* bias,
                                   int64_t bias_period) {
  if (!flash_attention_supported(dt, D, Dv, q, kt, v, y)) return cudaErrorInvalidValue;
  if (bias && bias_period < 1) return cudaErrorInvalidValue;
  if (batch < 0 || S < 0 || S2 < 1 || S > INT32_MAX - 64 || S2 > INT32_MAX - 64) return cudaErrorInvalidValue;
  if (warps != 0 && warps != 1 && warps != 2 && warps != 4) return cudaErrorInvalidValue;
  if (batch_inner == 0) batch_inner = batch;
  if (batch_inner < 0 || (batch > 0 && (batch_inner == 0 || batch % batch_inner != 0))) return cudaErrorInvalidValue;
  // A batch level of extent 1 is never stepped over: its stride must not decide the 16-byte paths
  // (a view of a batch-1 tensor may carry any stride there, e.g. 1).
  if (batch > 0 && batch / batch_inner == 1) q.outer_stride = kt.outer_stride = v.outer_stride = y.outer_stride = 0;
  if (batch_inner == 1) q.batch_stride = kt.batch_stride = v.batch_stride = y.batch_stride = 0;
  if (batch == 0 || S == 0) return cudaSuccess;
  if (warps == 0) {
    // 64 query rows per block, fewer only when the rows fit in fewer warps. Splitting the rows
    // over more blocks to fill the SMs measured slower on an H200 (vit at batch 1, 12 x 197 x 64:
    // 4 warps 24.9 us, 2 warps 34.7 us, 1 warp 56.5 us): a 16-row block reloads every K/V tile
    // for a quarter of the work.
    warps = kMaxWarps;
    while (warps > 1 && 16 * (warps / 2) >= S) warps /= 2;
  }
  const int64_t q_tiles = (S + 16 * warps - 1) / (16 * warps);
  if (batch * q_tiles > INT32_MAX) return cudaErrorInvalidValue;

  FlashParams p;
  p.q = static_cast<const uint16_t*>(q.data);
  p.kt = static_cast<const uint16_t*>(kt.data);
  p.v = static_cast<const uint16_t*>(v.data);
  p.y = static_cast<uint16_t*>(y.data);
  p.q_bs = q.batch_stride;
  p.q_rs = q.row_stride;
  // Kt with a unit column stride is copied as [d][key] tiles, else (unit row stride) as [key][d].
  const bool key_major = kt.col_stride != 1;
  p.k_bs = kt.batch_stride;
  p.k_rs = key_major ? kt.col_stride : kt.row_stride;
  p.k_js = key_major ? kt.col_stride : 1;
  p.v_bs = v.batch_stride;
  p.v_rs = v.row_stride;
  p.y_bs = y.batch_stride;
  p.y_rs = y.row_stride;
  p.q_os = q.outer_stride;
  p.k_os = kt.outer_stride;
  p.v_os = v.outer_stride;
  p.y_os = y.outer_stride;
  p.inner = batch_inner;
  p.S = static_cast<int>(S);
  p.S2 = static_cast<int>(S2);
  p.D = static_cast<int>(D);
  p.Dv = static_cast<int>(Dv);
  p.q_tiles = static_cast<int>(q_tiles);
  p.scale_log2 = scale * 1.4426950408889634f;
  p.bias = static_cast<const uint16_t*>(bias);
  p.bias_period = bias ? bias_period : 1;
  // 16-byte copies need 16-byte aligned rows: the base and every stride stepped over in the
  // non-contiguous directions a multiple of 8 elements (tile origins are multiples of 8 / 64).
  p.q_vec = aligned16(q.data) && q.batch_stride % 8 == 0 && q.row_stride % 8 == 0 && q.outer_stride % 8 == 0;
  p.k_vec = aligned16(kt.data) && kt.batch_stride % 8 == 0 && p.k_rs % 8 == 0 && kt.outer_stride % 8 == 0;
  p.v_vec = aligned16(v.data) && v.batch_stride % 8 == 0 && v.row_stride % 8 == 0 && v.outer_stride % 8 == 0;
  p.y_vec = aligned16(y.data) && y.batch_stride % 8 == 0 && y.row_stride % 8 == 0 && y.outer_stride % 8 == 0;

  const unsigned blocks = static_cast<unsigned>(batch * q_tiles);
  const bool wide = D > 64 || Dv > 64;
  if (dt == KType::kF16)
    return wide ? launch_typed<__half, 128>(p, key_major, blocks, warps, stream)
                : launch_typed<__half, 64>(p, key_major, blocks, warps, stream);
  return wide ? launch_typed<__nv_bfloat16, 128>(p, key_major, blocks, warps, stream)
              : launch_typed<__nv_bfloat16, 64>(p, key_major, blocks, warps, stream);
}

}  // namespace graft::cuda::k
