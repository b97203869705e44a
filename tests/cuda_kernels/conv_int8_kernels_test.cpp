// graft's INT8 NHWC tensor-core convolution (src/ops/fused_conv/conv_int8_kernels.cu) through its
// launcher, against a CPU reference that sums exactly in integers and then takes the epilogue's own
// float32 steps (one fma, one add, the activation, one division and a round to even): the kernel must
// match it to the bit, in int8 and in float16 out. Full-range int8 data (-128..127, never zeros), the
// output poisoned before each launch, and geometries that reach both block tiles, partial tiles in
// every direction (which tile a launch takes depends on the multiprocessor count: the comments give
// an H100's or H200's 132), odd filter counts (the unpaired stores), reductions of one partial step up to 72,
// strides, dilations, uneven padding and a stem-like 7x7/2.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cuda_kernel_harness.h"
#include "ops/fused_conv/conv_int8_kernels.cuh"

namespace graft::testing {
namespace {

using cuda::k::Int8ConvEpilogue;
using cuda::k::Window2d;

struct Int8Case {
  int64_t n, h, w, c, m, kh, kw, sh, sw, ph, pw, dh, dw;
};

struct EpilogueCase {
  bool int8_out, bias, residual;
  int act;  // 0 none, 1 Relu, 3 Clip
};

std::string describe(const Int8Case& t, const EpilogueCase& ec, uint32_t seed) {
  return "n " + std::to_string(t.n) + " " + std::to_string(t.h) + "x" + std::to_string(t.w) + " c " +
         std::to_string(t.c) + " m " + std::to_string(t.m) + " k " + std::to_string(t.kh) + "x" + std::to_string(t.kw) +
         " s " + std::to_string(t.sh) + "," + std::to_string(t.sw) + " p " + std::to_string(t.ph) + "," +
         std::to_string(t.pw) + " d " + std::to_string(t.dh) + "," + std::to_string(t.dw) +
         (ec.int8_out ? " int8 out" : " float16 out") + (ec.bias ? " bias" : "") + (ec.residual ? " residual" : "") +
         " act " + std::to_string(ec.act) + " seed " + std::to_string(seed);
}

template <typename T>
void* to_device(const std::vector<T>& v, std::vector<std::unique_ptr<DevBuf>>& bufs) {
  bufs.push_back(std::make_unique<DevBuf>(v.size() * sizeof(T)));
  void* p = bufs.back()->p;
  if (p && cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice) != cudaSuccess) return nullptr;
  return p;
}

void run_int8_case(const Int8Case& t, const EpilogueCase& ec, std::mt19937& rng, uint32_t seed) {
  const Window2d g = conv_window_of(t);
  SCOPED_TRACE(describe(t, ec, seed));
  const float lo = -0.3f, hi = 0.6f;
  const cuda::k::Epilogue act{ec.act, lo, hi};
  ASSERT_TRUE(cuda::k::conv_nhwc_int8_supported(g, t.m, act));
  const int64_t reduction = t.kh * t.kw * t.c, pixels = g.n * g.oh * g.ow;

  std::uniform_int_distribution<int> byte(-128, 127);
  std::uniform_real_distribution<float> unit(-1.f, 1.f);
  std::vector<int8_t> x(static_cast<size_t>(t.n * t.h * t.w * t.c)), w(static_cast<size_t>(t.m * reduction));
  for (auto& v : x) v = static_cast<int8_t>(byte(rng));
  for (auto& v : w) v = static_cast<int8_t>(byte(rng));
  // Per-filter scales that spread v over about [-1, 1] (the sums' deviation is about sqrt(K) * 74^2),
  // and an output scale that puts it over about +-70 quantization steps: some saturate at each end.
  const float typical = 1.f / (std::sqrt(static_cast<float>(reduction)) * 5500.f);
  std::vector<float> scale(static_cast<size_t>(t.m)), bias(static_cast<size_t>(t.m));
  for (auto& v : scale) v = typical * (1.f + 0.5f * unit(rng));
  for (auto& v : bias) v = 0.5f * unit(rng);
  std::vector<uint16_t> z(static_cast<size_t>(pixels * t.m));
  for (auto& v : z) v = float_to_half(0.5f * unit(rng));
  const float out_scale = ec.int8_out ? 1.f / 70.f : 0.f;

  std::vector<std::unique_ptr<DevBuf>> bufs;
  void* dx = to_device(x, bufs);
  void* dw = to_device(w, bufs);
  void* dscale = to_device(scale, bufs);
  void* dbias = ec.bias ? to_device(bias, bufs) : nullptr;
  void* dz = ec.residual ? to_device(z, bufs) : nullptr;
  ASSERT_TRUE(dx && dw && dscale && (!ec.bias || dbias) && (!ec.residual || dz)) << "device allocation or copy failed";
  const size_t ybytes = static_cast<size_t>(pixels * t.m) * (ec.int8_out ? 1 : 2);
  bufs.push_back(std::make_unique<DevBuf>(ybytes));
  void* dy = bufs.back()->p;
  ASSERT_NE(dy, nullptr);
  ASSERT_EQ(cudaMemset(dy, ec.int8_out ? 0xA5 : 0xFF, ybytes), cudaSuccess);  // poison (float16: NaN)

  Int8ConvEpilogue e;
  e.scale = static_cast<const float*>(dscale);
  e.bias = static_cast<const float*>(dbias);
  e.z = dz;
  e.act = act;
  e.out_scale = out_scale;
  ASSERT_EQ(cuda::k::launch_conv_nhwc_int8(static_cast<const int8_t*>(dx), static_cast<const int8_t*>(dw), e, dy, g,
                                           t.m, nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<unsigned char> got(ybytes);
  ASSERT_EQ(cudaMemcpy(got.data(), dy, ybytes, cudaMemcpyDeviceToHost), cudaSuccess);

  int64_t wrong = 0, saturated = 0;
  std::string first;
  for (int64_t p = 0; p < pixels; ++p) {
    const int64_t img = p / (g.oh * g.ow), oy = p / g.ow % g.oh, ox = p % g.ow;
    for (int64_t co = 0; co < t.m; ++co) {
      int64_t acc = 0;
      for (int64_t i = 0; i < t.kh; ++i)
        for (int64_t j = 0; j < t.kw; ++j) {
          const int64_t iy = oy * t.sh - t.ph + i * t.dh, ix = ox * t.sw - t.pw + j * t.dw;
          if (iy < 0 || iy >= t.h || ix < 0 || ix >= t.w) continue;
          const int8_t* xp = &x[static_cast<size_t>(((img * t.h + iy) * t.w + ix) * t.c)];
          const int8_t* wp = &w[static_cast<size_t>(((co * t.kh + i) * t.kw + j) * t.c)];
          for (int64_t ci = 0; ci < t.c; ++ci) acc += int64_t{xp[ci]} * wp[ci];
        }
      const size_t at = static_cast<size_t>(p * t.m + co);
      float v = std::fma(static_cast<float>(acc), scale[static_cast<size_t>(co)],
                         ec.bias ? bias[static_cast<size_t>(co)] : 0.f);
      if (ec.residual) v = v + half_to_float(z[at]);
      if (ec.act == 1) v = v > 0.f ? v : 0.f;
      if (ec.act == 3) v = v < lo ? lo : (v > hi ? hi : v);
      bool same;
      std::string what;
      if (ec.int8_out) {
        const float q = std::fmin(std::fmax(std::nearbyint(v / out_scale), -128.f), 127.f);
        const int8_t want = static_cast<int8_t>(static_cast<int>(q)), have = static_cast<int8_t>(got[at]);
        saturated += want == 127 || want == -128;
        same = want == have;
        what = std::to_string(have) + ", want " + std::to_string(want);
      } else {
        uint16_t have;
        std::memcpy(&have, &got[at * 2], 2);
        const uint16_t want = float_to_half(v);
        same = want == have;
        what = std::to_string(half_to_float(have)) + ", want " + std::to_string(half_to_float(want));
      }
      if (!same && wrong++ == 0)
        first = "y[" + std::to_string(p) + ", " + std::to_string(co) + "] = " + what + " (sum " + std::to_string(acc) + ")";
    }
  }
  EXPECT_EQ(wrong, 0) << "of " << pixels * t.m << " outputs; the first: " << first;
  // The data must reach both ends of the int8 range (else saturation is untested), but not mostly:
  // about 7% of the outputs saturate, so a problem of 2000 has some but for a chance below e^-140.
  if (ec.int8_out && ec.act == 0 && pixels * t.m >= 2000) {
    EXPECT_GT(saturated, 0);
    EXPECT_LT(saturated, pixels * t.m / 4);
  }
}

// Every geometry with a few epilogues, and the full set of epilogues on two of them.
TEST(CudaConvInt8, MatchesTheExactReferenceToTheBit) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const Int8Case cases[] = {
      {2, 14, 14, 64, 96, 1, 1, 1, 1, 0, 0, 1, 1},     // a 1x1 GEMM, 64 x 64 tiles, one full step
      {4, 48, 48, 16, 200, 3, 3, 1, 1, 1, 1, 1, 1},    // 128 x 128 tiles (144 of them), the last column tile partial
      {4, 48, 48, 16, 100, 3, 3, 1, 1, 1, 1, 1, 1},    // 128 x 64 tiles: 128 x 128 ones would be too few
      {2, 96, 96, 16, 48, 1, 1, 1, 1, 0, 0, 1, 1},     // 128 x 64 tiles for 48 filters (144 of them)
      {3, 15, 17, 48, 70, 3, 3, 2, 2, 1, 1, 1, 1},     // stride 2; 70 filters: a partial 8-wide tile
      {1, 30, 30, 16, 64, 7, 7, 2, 2, 3, 3, 1, 1},     // a stem over channels padded to 16: 784 terms
      {2, 19, 13, 32, 33, 5, 3, 1, 1, 2, 0, 2, 1},     // dilated rows, uneven pads; 33 filters: odd pairs
      {5, 9, 7, 16, 24, 1, 1, 1, 1, 0, 0, 1, 1},       // 16 terms: one partial step
      {2, 11, 11, 80, 40, 1, 1, 1, 1, 0, 0, 1, 1},     // 80 terms: a full step and a partial one
      {1, 7, 7, 512, 40, 3, 3, 1, 1, 1, 1, 1, 1},      // 4608 terms (ResNet's last 3x3): 72 steps
      {3, 6, 5, 32, 1, 3, 3, 1, 1, 1, 1, 1, 1},        // one filter
      {1, 10, 12, 16, 130, 3, 1, 1, 2, 1, 0, 1, 1},    // column stride only, a 130-filter row
  };
  const EpilogueCase some[] = {{true, true, false, 1}, {false, true, true, 0}, {true, false, false, 0}};
  for (const Int8Case& t : cases)
    for (const EpilogueCase& ec : some) run_int8_case(t, ec, rng, seed);
  for (const Int8Case& t : {cases[4], cases[6]})
    for (bool int8_out : {true, false})
      for (bool bias : {false, true})
        for (bool residual : {false, true})
          for (int a : {0, 1, 3}) run_int8_case(t, {int8_out, bias, residual, a}, rng, seed);
}

// Problems past the kernel's limits are refused before anything is launched.
TEST(CudaConvInt8, RefusesWhatItCannotRun) {
  Window2d g = conv_window_of(Int8Case{1, 8, 8, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1});
  const cuda::k::Epilogue relu{1, 0, 0};
  EXPECT_TRUE(cuda::k::conv_nhwc_int8_supported(g, 16, relu));
  EXPECT_TRUE(cuda::k::conv_nhwc_int8_supported(g, 16, cuda::k::Epilogue{3, -1, 1}));
  EXPECT_FALSE(cuda::k::conv_nhwc_int8_supported(g, 16, cuda::k::Epilogue{4, 0, 0}));  // Silu: not exact on both sides
  EXPECT_FALSE(cuda::k::conv_nhwc_int8_supported(g, 0, relu));
  Window2d narrow = g;
  narrow.c = 8;  // a 16-byte load would straddle two pixels
  EXPECT_FALSE(cuda::k::conv_nhwc_int8_supported(narrow, 16, relu));
  narrow.c = 24;
  EXPECT_FALSE(cuda::k::conv_nhwc_int8_supported(narrow, 16, relu));
  Window2d deep = g;
  deep.c = 16384;  // 147456 terms: a sum of (-128)^2 terms could overflow int32
  EXPECT_FALSE(cuda::k::conv_nhwc_int8_supported(deep, 16, relu));
  deep.c = 14560;  // 131040 terms: the most that cannot
  EXPECT_TRUE(cuda::k::conv_nhwc_int8_supported(deep, 16, relu));
  Window2d huge = g;
  huge.n = 1 << 20;
  huge.oh = huge.ow = huge.h = huge.w = 1024;  // 2^40 pixels: past 32-bit indexing
  EXPECT_FALSE(cuda::k::conv_nhwc_int8_supported(huge, 16, relu));

  GRAFT_REQUIRE_GPU();
  DevBuf x(64 * 16 + 16), w(16 * 9 * 16 + 16), s(16 * 4), y(64 * 16);
  ASSERT_TRUE(x.p && w.p && s.p && y.p);
  Int8ConvEpilogue e;
  e.scale = static_cast<const float*>(s.p);
  e.act = relu;
  e.out_scale = 1.f;
  const auto* xp = static_cast<const int8_t*>(x.p);
  const auto* wp = static_cast<const int8_t*>(w.p);
  EXPECT_EQ(cuda::k::launch_conv_nhwc_int8(xp + 1, wp, e, y.p, g, 16, nullptr), cudaErrorInvalidValue);  // unaligned x
  EXPECT_EQ(cuda::k::launch_conv_nhwc_int8(xp, wp + 8, e, y.p, g, 16, nullptr), cudaErrorInvalidValue);  // unaligned w
  Int8ConvEpilogue no_scale = e;
  no_scale.scale = nullptr;
  EXPECT_EQ(cuda::k::launch_conv_nhwc_int8(xp, wp, no_scale, y.p, g, 16, nullptr), cudaErrorInvalidValue);
  Int8ConvEpilogue nan_scale = e;
  nan_scale.out_scale = std::nanf("");
  EXPECT_EQ(cuda::k::launch_conv_nhwc_int8(xp, wp, nan_scale, y.p, g, 16, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // nothing was launched, nothing left pending
}

}  // namespace
}  // namespace graft::testing
