// The fused attention kernel (launch_flash_attention) vs a naive double-precision CPU attention
// on fresh random data in [-2, 2], float16 and bfloat16, over four memory layouts:
//   contiguous   Q [B,S,D], Kt [B,D,S2], V [B,S2,Dv], Y [B,S,Dv] (Kt rows unaligned unless S2 % 8 == 0)
//   interleaved  Q, V, Y views of [S,B,*] buffers; Kt the transpose view of a [S2,B,D] K buffer
//   padded       every row padded to a multiple of 8 plus 8 elements (16-byte copies, partial
//                key chunks at the S2 edge)
//   odd strides  rows padded by 3 elements (element-wise loads and stores), Kt key-major
// and every query tile size (1, 2, 4 warps and the launcher's choice). Input padding is NaN, so a
// kernel reading it shows up as NaN; output padding is poisoned and must stay untouched.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "ops/transformer/flash_attention.cuh"
#include "cuda_kernel_harness.h"
#include "graft/dtype.h"

namespace graft::testing {
namespace {

using cuda::k::AttnOperand;
using cuda::k::AttnOutput;
using cuda::k::KType;

constexpr uint16_t kNaNBits = 0xFFFF;  // NaN in float16 and bfloat16 (what a 0xFF memset leaves)

struct Problem {
  int64_t B, S, S2, D, Dv;
  float scale;
  std::string label;
};

enum class Layout { kContiguous, kInterleaved, kPadded, kOddStrides, kPacked };
const char* layout_name(Layout l) {
  switch (l) {
    case Layout::kContiguous:
      return "contiguous";
    case Layout::kInterleaved:
      return "interleaved";
    case Layout::kPadded:
      return "padded";
    case Layout::kOddStrides:
      return "odd strides";
    case Layout::kPacked:
      return "packed two-level batch";
  }
  return "?";
}
constexpr Layout kLayouts[] = {Layout::kContiguous, Layout::kInterleaved, Layout::kPadded,
                               Layout::kOddStrides, Layout::kPacked};

uint16_t to_bits(KType dt, float f) { return dt == KType::kF16 ? float_to_half(f) : float_to_bfloat16(f); }
float from_bits(KType dt, uint16_t b) { return dt == KType::kF16 ? half_to_float(b) : bfloat16_to_float(b); }
const char* dt_name(KType dt) { return dt == KType::kF16 ? "float16" : "bfloat16"; }

// Inputs already rounded to the tested dtype (canonical order Q [B][S][D], Kt [B][D][S2],
// V [B][S2][Dv]) and the double-precision attention of exactly those values, Y [B][S][Dv].
struct Data {
  std::vector<float> q, kt, v;
  std::vector<double> ref;
};

Data make_data(const Problem& p, KType dt, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  Data d;
  auto fill = [&](std::vector<float>& x, int64_t n) {
    x.resize(static_cast<size_t>(n));
    for (auto& e : x) e = from_bits(dt, to_bits(dt, u(rng)));
  };
  fill(d.q, p.B * p.S * p.D);
  fill(d.kt, p.B * p.D * p.S2);
  fill(d.v, p.B * p.S2 * p.Dv);
  d.ref.assign(static_cast<size_t>(p.B * p.S * p.Dv), 0.0);
  std::vector<double> sc(static_cast<size_t>(p.S2));
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t i = 0; i < p.S; ++i) {
      double mx = -INFINITY;
      for (int64_t j = 0; j < p.S2; ++j) {
        double acc = 0;
        for (int64_t c = 0; c < p.D; ++c)
          acc += static_cast<double>(d.q[static_cast<size_t>((b * p.S + i) * p.D + c)]) *
                 d.kt[static_cast<size_t>((b * p.D + c) * p.S2 + j)];
        sc[static_cast<size_t>(j)] = acc * p.scale;
        mx = std::max(mx, sc[static_cast<size_t>(j)]);
      }
      double sum = 0;
      for (auto& s : sc) sum += (s = std::exp(s - mx));
      double* y = &d.ref[static_cast<size_t>((b * p.S + i) * p.Dv)];
      for (int64_t j = 0; j < p.S2; ++j) {
        const double w = sc[static_cast<size_t>(j)] / sum;
        for (int64_t c = 0; c < p.Dv; ++c) y[c] += w * d.v[static_cast<size_t>((b * p.S2 + j) * p.Dv + c)];
      }
    }
  return d;
}

// A strided [batch, rows, cols] view into a buffer of `elems` elements.
// With inner > 0 the batch is two-level: b = outer * inner + h starts at outer * os + h * bs.
struct View {
  int64_t bs = 0, rs = 0, cs = 0, elems = 0, os = 0, inner = 0;
  int64_t at(int64_t b, int64_t r, int64_t c) const {
    const int64_t base = inner > 0 ? (b / inner) * os + (b % inner) * bs : b * bs;
    return base + r * rs + c * cs;
  }
};
struct Views {
  View q, kt, v, y;
  int64_t inner = 0;  // launch_flash_attention's batch_inner (0: one-level)
};

Views make_views(Layout l, const Problem& p) {
  const int64_t B = p.B, S = p.S, S2 = p.S2, D = p.D, Dv = p.Dv;
  Views w;
  switch (l) {
    case Layout::kContiguous:
      w.q = {S * D, D, 1, B * S * D};
      w.kt = {D * S2, S2, 1, B * D * S2};
      w.v = {S2 * Dv, Dv, 1, B * S2 * Dv};
      w.y = {S * Dv, Dv, 1, B * S * Dv};
      break;
    case Layout::kInterleaved:
      // Heads interleaved: X[b, i, c] = buf[i, b, c]; Kt[b, d, j] = K[j, b, d].
      w.q = {D, B * D, 1, S * B * D};
      w.kt = {D, 1, B * D, S2 * B * D};
      w.v = {Dv, B * Dv, 1, S2 * B * Dv};
      w.y = {Dv, B * Dv, 1, S * B * Dv};
      break;
    case Layout::kPadded: {
      auto pad = [&](int64_t rows, int64_t cols) {
        const int64_t rs = (cols + 7) / 8 * 8 + 8, bs = rows * rs + 16;
        return View{bs, rs, 1, B * bs};
      };
      w.q = pad(S, D);
      w.kt = pad(D, S2);
      w.v = pad(S2, Dv);
      w.y = pad(S, Dv);
      break;
    }
    case Layout::kOddStrides: {
      auto odd = [&](int64_t rows, int64_t cols) {
        const int64_t rs = cols + 3, bs = rows * rs + 5;
        return View{bs, rs, 1, B * bs};
      };
      w.q = odd(S, D);
      const int64_t kbs = S2 * (D + 3) + 5;  // K stored [S2][D + 3] per batch entry: Kt key-major
      w.kt = {kbs, 1, D + 3, B * kbs};
      w.v = odd(S2, Dv);
      w.y = odd(S, Dv);
      break;
    }
    case Layout::kPacked: {
      // nn.MultiheadAttention's packed projection [rows, Bo, 2, H, cols] (the 2 stands for the
      // other projections between the heads), batch b = bo * H + h: no single batch stride.
      const int64_t H = B % 3 == 0 ? 3 : B % 2 == 0 ? 2 : 1, Bo = B / H;
      auto packed = [&](int64_t rows, int64_t cols) {
        return View{cols, Bo * 2 * H * cols, 1, rows * Bo * 2 * H * cols, 2 * H * cols, H};
      };
      w.q = packed(S, D);
      w.kt = View{D, 1, Bo * 2 * H * D, S2 * Bo * 2 * H * D, 2 * H * D, H};  // K [S2, Bo, 2, H, D]
      w.v = packed(S2, Dv);
      w.y = View{Dv, Bo * H * Dv, 1, S * Bo * H * Dv, H * Dv, H};  // Y into [S, Bo, H, Dv]
      w.inner = H;
      break;
    }
  }
  return w;
}

// Runs one (dtype, problem, layout, tile size) combination and compares with d.ref.
void run_layout(KType dt, const Problem& p, const Data& d, Layout l, int warps, uint32_t seed) {
  SCOPED_TRACE(std::string(dt_name(dt)) + " " + p.label + " layout " + layout_name(l) + " warps " +
               std::to_string(warps) + " seed " + std::to_string(seed));
  const Views w = make_views(l, p);
  std::vector<uint16_t> hq(static_cast<size_t>(w.q.elems), kNaNBits),
      hk(static_cast<size_t>(w.kt.elems), kNaNBits), hv(static_cast<size_t>(w.v.elems), kNaNBits),
      hy(static_cast<size_t>(w.y.elems), 0);
  for (int64_t b = 0; b < p.B; ++b) {
    for (int64_t i = 0; i < p.S; ++i)
      for (int64_t c = 0; c < p.D; ++c)
        hq[static_cast<size_t>(w.q.at(b, i, c))] =
            to_bits(dt, d.q[static_cast<size_t>((b * p.S + i) * p.D + c)]);
    for (int64_t c = 0; c < p.D; ++c)
      for (int64_t j = 0; j < p.S2; ++j)
        hk[static_cast<size_t>(w.kt.at(b, c, j))] =
            to_bits(dt, d.kt[static_cast<size_t>((b * p.D + c) * p.S2 + j)]);
    for (int64_t j = 0; j < p.S2; ++j)
      for (int64_t c = 0; c < p.Dv; ++c)
        hv[static_cast<size_t>(w.v.at(b, j, c))] =
            to_bits(dt, d.v[static_cast<size_t>((b * p.S2 + j) * p.Dv + c)]);
  }
  DevBuf dq(hq.size() * 2), dk(hk.size() * 2), dv(hv.size() * 2), dy(hy.size() * 2);
  ASSERT_TRUE(dq.p && dk.p && dv.p && dy.p) << "cudaMalloc failed";
  ASSERT_EQ(cudaMemcpy(dq.p, hq.data(), hq.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dk.p, hk.data(), hk.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dv.p, hv.data(), hv.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(dy.p, 0xFF, hy.size() * 2), cudaSuccess);  // poison: NaN everywhere

  const AttnOperand q{dq.p, w.q.bs, w.q.rs, w.q.cs, w.q.os}, kt{dk.p, w.kt.bs, w.kt.rs, w.kt.cs, w.kt.os},
      v{dv.p, w.v.bs, w.v.rs, w.v.cs, w.v.os};
  const AttnOutput y{dy.p, w.y.bs, w.y.rs, w.y.cs, w.y.os};
  ASSERT_TRUE(cuda::k::flash_attention_supported(dt, p.D, p.Dv, q, kt, v, y));
  ASSERT_EQ(cuda::k::launch_flash_attention(dt, q, kt, v, y, p.B, p.S, p.D, p.S2, p.Dv, p.scale, nullptr, warps,
                                            w.inner),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(hy.data(), dy.p, hy.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);

  std::vector<char> logical(hy.size(), 0);
  double num = 0, den = 0;
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t i = 0; i < p.S; ++i)
      for (int64_t c = 0; c < p.Dv; ++c) {
        const size_t at = static_cast<size_t>(w.y.at(b, i, c));
        logical[at] = 1;
        const double g = from_bits(dt, hy[at]), e = d.ref[static_cast<size_t>((b * p.S + i) * p.Dv + c)];
        ASSERT_FALSE(std::isnan(g)) << "Y[" << b << ", " << i << ", " << c
                                    << "] is NaN (unwritten or NaN read)";
        num += (g - e) * (g - e);
        den += e * e;
      }
  for (size_t i = 0; i < hy.size(); ++i)
    if (!logical[i]) ASSERT_EQ(hy[i], kNaNBits) << "output padding element " << i << " was written";
  const double rel = std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
  const double tol = dt == KType::kF16 ? 2e-3 : 1.6e-2;
  EXPECT_LE(rel, tol) << "relative error norm " << rel << " (tolerance " << tol << ")";
}

// Every dtype x layout x tile size for each problem (the reference is computed once per dtype).
void run_problems(const std::vector<Problem>& problems) {
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (const Problem& p : problems)
    for (KType dt : {KType::kF16, KType::kBF16}) {
      const Data d = make_data(p, dt, rng);
      for (Layout l : kLayouts)
        for (int warps : {0, 1, 2, 4}) {
          run_layout(dt, p, d, l, warps, seed);
          if (::testing::Test::HasFatalFailure()) return;
        }
    }
}

TEST(CudaFlashAttention, VitShape) {
  GRAFT_REQUIRE_GPU();
  run_problems({{24, 197, 197, 64, 64, 0.125f, "vit B 24"}});
}

TEST(CudaFlashAttention, EdgeShapes) {
  GRAFT_REQUIRE_GPU();
  run_problems({
      {3, 1, 197, 64, 64, 0.125f, "S 1"},
      {3, 50, 1, 64, 64, 0.125f, "S2 1"},
      {1, 1, 1, 64, 64, 0.125f, "S 1 S2 1"},
      {2, 70, 300, 64, 64, 0.125f, "S 70 S2 300"},
      {2, 65, 129, 64, 64, 0.125f, "S 65 S2 129 (one row / one key past a tile)"},
      {5, 16, 64, 64, 64, 0.125f, "S 16 S2 64 (whole tiles)"},
  });
}

TEST(CudaFlashAttention, HeadDims) {
  GRAFT_REQUIRE_GPU();
  run_problems({
      {4, 100, 100, 32, 32, 0.17f, "D 32"},
      {4, 197, 197, 128, 128, 0.088f, "D Dv 128"},
      {4, 120, 90, 64, 32, 0.125f, "D 64 Dv 32"},
      {3, 33, 77, 40, 24, 0.16f, "D 40 Dv 24 (not multiples of 16)"},
      {2, 65, 129, 128, 72, 0.09f, "D 128 Dv 72"},
      {2, 50, 60, 8, 8, 0.35f, "D Dv 8"},
      {2, 40, 130, 96, 128, 0.1f, "D 96 Dv 128"},
  });
}

TEST(CudaFlashAttention, LargeScale) {
  GRAFT_REQUIRE_GPU();
  // Scores up to hundreds: exp without the max subtraction would overflow float32.
  run_problems({
      {6, 197, 197, 64, 64, 4.0f, "scale 4"},
      {2, 70, 300, 128, 64, 8.0f, "scale 8 D 128"},
      {2, 40, 90, 64, 64, -3.0f, "scale -3"},
  });
}

TEST(CudaFlashAttention, RejectsUnsupported) {
  GRAFT_REQUIRE_GPU();
  // Never dereferenced: every call below is rejected (or has nothing to do) before a launch.
  static uint16_t dummy[8];
  const AttnOperand q{dummy, 64 * 64, 64, 1}, kt{dummy, 64 * 64, 64, 1}, v{dummy, 64 * 64, 64, 1};
  const AttnOutput y{dummy, 64 * 64, 64, 1};
  using cuda::k::flash_attention_supported;
  using cuda::k::launch_flash_attention;
  EXPECT_TRUE(flash_attention_supported(KType::kF16, 64, 64, q, kt, v, y));
  EXPECT_TRUE(flash_attention_supported(KType::kBF16, 128, 8, q, kt, v, y));
  EXPECT_FALSE(flash_attention_supported(KType::kF16, 136, 64, q, kt, v, y));
  EXPECT_FALSE(flash_attention_supported(KType::kF16, 64, 136, q, kt, v, y));
  EXPECT_FALSE(flash_attention_supported(KType::kF32, 64, 64, q, kt, v, y));
  EXPECT_FALSE(flash_attention_supported(KType::kF64, 64, 64, q, kt, v, y));
  EXPECT_FALSE(flash_attention_supported(KType::kF16, 60, 64, q, kt, v, y));
  EXPECT_FALSE(flash_attention_supported(KType::kF16, 64, 12, q, kt, v, y));
  EXPECT_FALSE(flash_attention_supported(KType::kF16, 0, 64, q, kt, v, y));
  EXPECT_FALSE(flash_attention_supported(KType::kF16, 64, 64, AttnOperand{dummy, 0, 128, 2}, kt, v, y));
  EXPECT_FALSE(flash_attention_supported(KType::kF16, 64, 64, q, AttnOperand{dummy, 0, 64, 128}, v, y));
  EXPECT_FALSE(flash_attention_supported(KType::kF16, 64, 64, q, kt, AttnOperand{dummy, 0, 128, 2}, y));
  EXPECT_FALSE(flash_attention_supported(KType::kF16, 64, 64, q, kt, v, AttnOutput{dummy, 0, 128, 2}));
  EXPECT_FALSE(flash_attention_supported(KType::kF16, 64, 64, AttnOperand{dummy, -64, 64, 1}, kt, v, y));
  EXPECT_FALSE(flash_attention_supported(KType::kF16, 64, 64, AttnOperand{nullptr, 0, 64, 1}, kt, v, y));
  EXPECT_EQ(launch_flash_attention(KType::kF16, q, kt, v, y, 2, 64, 136, 64, 64, 1.f, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(launch_flash_attention(KType::kF32, q, kt, v, y, 2, 64, 64, 64, 64, 1.f, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(launch_flash_attention(KType::kF16, q, kt, v, y, 2, 64, 64, 0, 64, 1.f, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(launch_flash_attention(KType::kF16, q, kt, v, y, 2, 64, 64, 64, 64, 1.f, nullptr, 3),
            cudaErrorInvalidValue);
  EXPECT_EQ(launch_flash_attention(KType::kF16, q, kt, v, y, 0, 64, 64, 64, 64, 1.f, nullptr), cudaSuccess);
  EXPECT_EQ(launch_flash_attention(KType::kF16, q, kt, v, y, 2, 0, 64, 64, 64, 1.f, nullptr), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// vit_b_16 attention at batch 32 (384 heads of 197 x 64) and batch 1: microseconds per call.
// Prints only; the numbers are for the integration (the unfused path takes ~140 us at batch 32).
TEST(CudaFlashAttention, VitTiming) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  for (int64_t B : {384, 12}) {
    const int64_t S = 197, D = 64, n = B * S * D;
    std::vector<uint16_t> h(static_cast<size_t>(n));
    DevBuf dq(n * 2), dk(n * 2), dv(n * 2), dy(n * 2);
    ASSERT_TRUE(dq.p && dk.p && dv.p && dy.p);
    for (void* p : {dq.p, dk.p, dv.p}) {
      for (auto& e : h) e = float_to_half(u(rng));
      ASSERT_EQ(cudaMemcpy(p, h.data(), h.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
    }
    cudaEvent_t e0, e1;
    ASSERT_EQ(cudaEventCreate(&e0), cudaSuccess);
    ASSERT_EQ(cudaEventCreate(&e1), cudaSuccess);
    for (Layout l : {Layout::kContiguous, Layout::kInterleaved}) {
      const Views w = make_views(l, Problem{B, S, S, D, D, 0.125f, ""});
      const AttnOperand q{dq.p, w.q.bs, w.q.rs, w.q.cs}, kt{dk.p, w.kt.bs, w.kt.rs, w.kt.cs},
          v{dv.p, w.v.bs, w.v.rs, w.v.cs};
      const AttnOutput y{dy.p, w.y.bs, w.y.rs, w.y.cs};
      for (int warps : {0, 1, 2, 4}) {
        auto launch = [&] {
          return cuda::k::launch_flash_attention(KType::kF16, q, kt, v, y, B, S, D, S, D, 0.125f, nullptr,
                                                 warps);
        };
        for (int i = 0; i < 3; ++i) ASSERT_EQ(launch(), cudaSuccess);
        const int reps = 20;
        ASSERT_EQ(cudaEventRecord(e0), cudaSuccess);
        for (int i = 0; i < reps; ++i) ASSERT_EQ(launch(), cudaSuccess);
        ASSERT_EQ(cudaEventRecord(e1), cudaSuccess);
        ASSERT_EQ(cudaEventSynchronize(e1), cudaSuccess);
        float ms = 0;
        ASSERT_EQ(cudaEventElapsedTime(&ms, e0, e1), cudaSuccess);
        std::printf("[flash attention] B %lld S %lld D %lld fp16 %s warps %s: %.1f us per call\n",
                    static_cast<long long>(B), static_cast<long long>(S), static_cast<long long>(D),
                    layout_name(l), warps ? std::to_string(warps).c_str() : "auto", 1000.0 * ms / reps);
      }
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
  }
}

}  // namespace
}  // namespace graft::testing
