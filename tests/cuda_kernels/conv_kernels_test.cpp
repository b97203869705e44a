// graft's own convolution kernels that GraftConv times against cuDNN (graft_conv_cuda.cpp variants 3, 4, 7),
// and cuDNN's graph-API variants (10, 11):
//   - the NCHW depthwise kernel, the untuned choice for NCHW depthwise problems, so it is tested
//     through the op against the CPU reference like the NHWC one (nn_reduce_test.cpp);
//   - the NHWC pointwise (1x1) kernel, which runs only where timing picked it, so its launcher is
//     tested directly against a double-precision computation here;
//   - the float16 tensor-core NHWC kernels for short reductions and, K-chunked, for longer ones
//     (conv_mma_kernels.cu), likewise picked only by timing: their launchers tested directly, and
//     GraftConv forced onto each;
//   - the epilogue pass that follows a cuDNN convolution (variant 0), through its launcher.
// All have limits (shared memory, reduction length); problems past them must be refused, never half-run.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "ops/fused_conv/conv_mma_kernels.cuh"
#include "ops/nn/nn_kernels.cuh"
#include "cuda_kernel_harness.h"

namespace graft::testing {
namespace {

using cuda::k::Epilogue;
using cuda::k::KType;

// Every activation of the fused epilogue; Clip with bounds tight enough that both bind on random data.
const char* const kActivations[] = {"", "Relu", "HardSwish", "Clip", "Silu", "Sigmoid", "HardSigmoid"};

// GraftConv over NCHW with one filter per channel runs graft's NCHW depthwise kernel. The shapes
// reach every path: the register-blocked square 3/5/7 filters (row stride and dilation 1) with each
// tile shape (8x8, 16x16, 32x32 by the output plane), the generic path (row stride or dilation > 1,
// non-square filters), planes spanning several tiles in both directions, and sizes that are not
// multiples of the tile.
TEST(CudaNn, GraftConvDepthwiseNchw) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Spec {
    int64_t n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw;
    bool bias, residual;
    const char* act;
  };
  const Spec specs[] = {
      {2, 8, 56, 56, 7, 7, 1, 1, 3, 3, 1, 1, true, false, ""},            // convnext 7x7: 2x2 tiles of 32x32
      {3, 3, 7, 7, 7, 7, 1, 1, 3, 3, 1, 1, true, true, "Silu"},           // convnext's last stage: one 8x8 tile
      {2, 6, 17, 19, 3, 3, 2, 2, 1, 1, 1, 1, true, false, "Relu"},        // 3x3 stride 2 (generic path)
      {1, 5, 13, 11, 5, 5, 1, 1, 2, 2, 1, 1, true, true, "HardSwish"},    // 5x5 with a residual, 16x16 tile
      {2, 4, 15, 12, 3, 3, 1, 1, 2, 2, 2, 2, false, false, ""},           // dilated, no bias
      {2, 16, 9, 9, 3, 3, 1, 1, 1, 1, 1, 1, true, false, "Clip"},         // ReLU6-style clamp
      {1, 4, 40, 37, 3, 3, 1, 1, 1, 1, 1, 1, true, true, "Relu"},         // odd sizes over several tiles
      {1, 3, 70, 45, 5, 5, 2, 2, 2, 2, 1, 1, false, true, "Clip"},        // strided, 2x1 tiles, no bias
      {2, 5, 21, 23, 3, 5, 1, 1, 1, 2, 1, 1, true, false, "Silu"},        // non-square filter (generic)
      {1, 6, 19, 41, 3, 3, 1, 2, 0, 1, 1, 1, true, true, "HardSwish"},    // column stride only: fast path
      {1, 2, 12, 12, 5, 5, 1, 1, 0, 0, 1, 1, true, false, "Relu"},        // unpadded
      {2, 3, 33, 8, 3, 3, 1, 1, 1, 1, 1, 3, false, true, ""},             // column dilation only, tall plane
  };
  for (const Spec& s : specs) {
    const int64_t oh = (s.h + 2 * s.ph - s.dh * (s.kh - 1) - 1) / s.sh + 1;
    const int64_t ow = (s.w + 2 * s.pw - s.dw * (s.kw - 1) - 1) / s.sw + 1;
    KernelCase c{"GraftConv", {rnd(rng, {s.n, s.c, s.h, s.w}), rnd(rng, {s.c, 1, s.kh, s.kw})}};
    c.inputs.push_back(s.bias ? rnd(rng, {s.c}) : Tensor());
    if (s.residual) c.inputs.push_back(rnd(rng, {s.n, s.c, oh, ow}));
    c.attrs.set("activation", std::string(s.act));
    if (std::string(s.act) == "Clip") {
      c.attrs.set("clip_min", -0.25f);
      c.attrs.set("clip_max", 0.5f);
    }
    c.attrs.set("group", s.c);
    c.attrs.set("kernel_shape", std::vector<int64_t>{s.kh, s.kw});
    c.attrs.set("strides", std::vector<int64_t>{s.sh, s.sw});
    c.attrs.set("pads", std::vector<int64_t>{s.ph, s.pw, s.ph, s.pw});
    c.attrs.set("dilations", std::vector<int64_t>{s.dh, s.dw});
    c.tol32 = 1e-5;
    c.label = "x " + std::to_string(s.h) + "x" + std::to_string(s.w) + " k " + std::to_string(s.kh) + "x" +
              std::to_string(s.kw) + " stride " + std::to_string(s.sh) + "," + std::to_string(s.sw) + " act '" +
              s.act + "'";
    run_kernel_case(c, DataType::kFloat32, seed);
    run_kernel_case(c, DataType::kFloat16, seed);
  }
}

// A filter too large for the kernel's shared-memory tile: the launcher refuses it (launching
// nothing), and GraftConv, whose eligibility mirrors the launcher's limits, runs it on cuDNN instead.
// A squeeze-excitation gate's 1x1 convolution over a 1x1 image in NHWC with channel counts that
// are not multiples of 8 (EfficientNet-B0: 96 -> 4): graft_conv_cuda.cpp runs it as NCHW (the same bytes).
// GraftChannelsLast, the padded channels-last input of an NHWC stem: float32 and float16 in the
// input's own type, float32 -> float16 (the model's image straight to the stem), the 16-byte store
// path (8 half channels) and the scalar one (5 channels), a channel count already at the padded
// width, and images whose size is a multiple of 4 (16 x 12, 28 x 28: the four-pixel path, float16
// output only).
TEST(CudaNn, GraftChannelsLastPadsAndConverts) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Shape4 {
    int64_t n, c, h, w, channels;
  };
  for (const Shape4& s : {Shape4{2, 3, 17, 13, 8}, Shape4{3, 3, 9, 10, 5}, Shape4{1, 8, 7, 6, 8}, Shape4{2, 1, 33, 31, 8},
                          Shape4{2, 3, 16, 12, 8}, Shape4{3, 3, 28, 28, 8}, Shape4{1, 8, 4, 5, 8}}) {
    KernelCase c{"GraftChannelsLast", {rnd(rng, {s.n, s.c, s.h, s.w})}};
    c.attrs.set("channels", s.channels);
    c.tol32 = 0;  // a copy: exact
    c.tol16 = 0;
    c.label = std::to_string(s.c) + " -> " + std::to_string(s.channels) + " channels";
    run_kernel_case(c, DataType::kFloat32, seed);
    run_kernel_case(c, DataType::kFloat16, seed);
    KernelCase to16 = c;
    to16.attrs.set("to", static_cast<int64_t>(DataType::kFloat16));
    to16.label += ", float32 -> float16";
    run_kernel_case(to16, DataType::kFloat32, seed);  // float32 input, float16 output: one rounding, as the CPU's
  }
}

// With a block, GraftChannelsLast rearranges space to depth for a strided stem: the 3-channel
// blocks of 2 and 4 take the compile-time kernel (16 and 48 channels), the rest the generic one;
// pads on every side, negative ones (cropping) and extents that do not divide by the block.
TEST(CudaNn, GraftChannelsLastSpaceToDepth) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Case {
    int64_t n, c, h, w, block, channels;
    std::vector<int64_t> pads;
  };
  for (const Case& s : {Case{2, 3, 23, 21, 2, 16, {3, 3, 4, 2}}, Case{3, 3, 19, 22, 4, 48, {2, 2, 1, 3}},
                        Case{2, 3, 12, 12, 2, 16, {0, 0, 0, 0}}, Case{1, 3, 17, 15, 2, 24, {1, 1, 1, 1}},
                        Case{2, 1, 13, 11, 3, 16, {1, 2, -1, 0}}, Case{1, 2, 9, 10, 2, 8, {1, 0, 1, 0}}}) {
    KernelCase c{"GraftChannelsLast", {rnd(rng, {s.n, s.c, s.h, s.w})}};
    c.attrs.set("channels", s.channels);
    c.attrs.set("block", s.block);
    c.attrs.set("pads", s.pads);
    c.tol32 = 0;  // a copy: exact
    c.tol16 = 0;
    c.label = std::to_string(s.c) + " channels, block " + std::to_string(s.block) + " -> " + std::to_string(s.channels);
    run_kernel_case(c, DataType::kFloat32, seed);
    run_kernel_case(c, DataType::kFloat16, seed);
    KernelCase to16 = c;
    to16.attrs.set("to", static_cast<int64_t>(DataType::kFloat16));
    to16.label += ", float32 -> float16";
    run_kernel_case(to16, DataType::kFloat32, seed);
  }
}

// A grouped NHWC convolution (RegNetX: 3 groups of 24 channels, stride 2) may run on cuDNN in NCHW
// between transposes into the workspace (variant 5). First timed with every tactic (whichever wins
// must be right), then forced to variant 5 through the tactic table, with each epilogue part.
TEST(CudaNn, GraftConvGroupedNhwcViaNchw) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Spec {
    int64_t n, h, w, c, m, group, k, stride;
    bool residual;
    const char* act;
  };
  for (const Spec& s : {Spec{2, 12, 11, 72, 72, 3, 3, 2, false, "Relu"}, Spec{3, 7, 8, 32, 48, 4, 3, 1, true, "Silu"},
                        Spec{1, 9, 9, 16, 16, 2, 1, 1, false, ""}}) {
    const int64_t pad = s.k / 2;
    const int64_t oh = (s.h + 2 * pad - s.k) / s.stride + 1, ow = (s.w + 2 * pad - s.k) / s.stride + 1;
    KernelCase c{"GraftConv", {rnd(rng, {s.n, s.h, s.w, s.c}), rnd(rng, {s.m, s.k, s.k, s.c / s.group}), rnd(rng, {s.m})}};
    if (s.residual) c.inputs.push_back(rnd(rng, {s.n, oh, ow, s.m}));
    set_graft_conv_attrs(c, "NHWC", s.act, s.group, s.k, s.stride, pad);
    c.label = std::to_string(s.group) + " groups of " + std::to_string(s.c / s.group);
    for (DataType dt : {DataType::kFloat32, DataType::kFloat16})
      run_timed_then_forced(c, dt, seed, 0, 5);  // IMPLICIT_GEMM (no scratch) via NCHW
  }
}

// float16 convolutions through cuDNN's graph API (graft_conv_cuda.cpp variants 10 and 11): timed,
// then forced onto the plain graph (graft's epilogue after it) and, where the epilogue is bias,
// residual and Relu or none, the fused graph, in both layouts (one group: grouped problems keep the
// legacy API); and once with X's device copy 2 bytes past a 16-byte boundary, which the plan was
// not made for (the legacy fallback runs).
TEST(CudaNn, GraftConvGraphApi) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Spec {
    const char* layout;
    int64_t n, h, w, c, m, group, k, stride;
    bool bias, residual;
    const char* act;
  };
  for (const Spec& s : {Spec{"NHWC", 2, 9, 10, 32, 48, 1, 3, 1, true, true, "Relu"},
                        Spec{"NHWC", 3, 8, 8, 64, 32, 1, 1, 1, true, false, ""},
                        Spec{"NCHW", 2, 11, 9, 16, 24, 1, 3, 2, true, false, "Relu"},
                        Spec{"NHWC", 1, 12, 12, 32, 32, 1, 3, 1, true, false, "HardSwish"},
                        Spec{"NCHW", 2, 7, 7, 8, 16, 1, 3, 1, false, false, ""}}) {
    const int64_t pad = s.k / 2;
    const int64_t oh = (s.h + 2 * pad - s.k) / s.stride + 1, ow = (s.w + 2 * pad - s.k) / s.stride + 1;
    const bool nhwc = std::string(s.layout) == "NHWC";
    KernelCase c{"GraftConv", {nhwc ? rnd(rng, {s.n, s.h, s.w, s.c}) : rnd(rng, {s.n, s.c, s.h, s.w}),
                               nhwc ? rnd(rng, {s.m, s.k, s.k, s.c / s.group}) : rnd(rng, {s.m, s.c / s.group, s.k, s.k})}};
    if (s.bias) c.inputs.push_back(rnd(rng, {s.m}));
    if (s.residual) c.inputs.push_back(nhwc ? rnd(rng, {s.n, oh, ow, s.m}) : rnd(rng, {s.n, s.m, oh, ow}));
    set_graft_conv_attrs(c, s.layout, s.act, s.group, s.k, s.stride, pad);
    c.label = std::string(s.layout) + " " + std::to_string(s.c) + " -> " + std::to_string(s.m) + " " + s.act;
    const bool fusable = std::string(s.act).empty() || std::string(s.act) == "Relu";
    run_timed_then_forced(c, DataType::kFloat16, seed, 0, 10);
    if (fusable) run_timed_then_forced(c, DataType::kFloat16, seed, 0, 11);
    KernelCase off = c;
    off.input0_offset = 2;
    off.label += " (X 2 bytes off 16-byte alignment)";
    run_timed_then_forced(off, DataType::kFloat16, seed, 0, fusable ? 11 : 10);
  }
}

TEST(CudaNn, GraftConvGateOverOnePixelNhwc) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (const auto& [cin, cout] : {std::pair<int64_t, int64_t>{12, 4}, {4, 12}, {96, 4}}) {
    KernelCase c{"GraftConv", {rnd(rng, {3, 1, 1, cin}), rnd(rng, {cout, 1, 1, cin}), rnd(rng, {cout}),
                               rnd(rng, {3, 1, 1, cout})}};
    c.attrs.set("layout", std::string("NHWC"));
    c.attrs.set("activation", std::string("Silu"));
    c.attrs.set("kernel_shape", std::vector<int64_t>{1, 1});
    c.tol32 = 1e-5;
    c.label = "gate " + std::to_string(cin) + " -> " + std::to_string(cout);
    run_kernel_case(c, DataType::kFloat32, seed);
    run_kernel_case(c, DataType::kFloat16, seed);
  }
}

TEST(CudaNn, GraftConvDepthwiseNchwBeyondSharedMemory) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  // 80x80 filter, 8x8 output: even the smallest tile stages 87x87 input floats and 80x80 weights
  // (55 KB).
  const int64_t n = 1, ch = 2, k = 80, h = 87, w = 87, o = h - k + 1;
  cuda::k::Window2d g;
  g.n = n; g.c = ch; g.h = h; g.w = w; g.oh = o; g.ow = o; g.kh = k; g.kw = k;
  EXPECT_FALSE(cuda::k::depthwise_conv_nchw_supported(g));
  {
    cuda::k::Window2d small = g;  // a 60x60 filter over 67x67 (8x8 output): 67x67 + 60x60 floats fit
    small.h = small.w = 67;
    small.kh = small.kw = 60;
    small.oh = small.ow = 8;
    EXPECT_TRUE(cuda::k::depthwise_conv_nchw_supported(small));
  }
  const size_t ybytes = static_cast<size_t>(n * ch * o * o) * sizeof(float);
  void *dx = nullptr, *dw = nullptr, *dy = nullptr;
  ASSERT_EQ(cudaMalloc(&dx, static_cast<size_t>(n * ch * h * w) * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dw, static_cast<size_t>(ch * k * k) * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dy, ybytes), cudaSuccess);
  ASSERT_EQ(cudaMemset(dx, 0, static_cast<size_t>(n * ch * h * w) * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemset(dw, 0, static_cast<size_t>(ch * k * k) * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemset(dy, 0xFF, ybytes), cudaSuccess);
  EXPECT_EQ(cuda::k::launch_depthwise_conv_nchw(KType::kF32, dx, dw, nullptr, nullptr, dy, g, Epilogue{}, nullptr),
            cudaErrorInvalidValue);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<unsigned char> back(ybytes);
  ASSERT_EQ(cudaMemcpy(back.data(), dy, ybytes, cudaMemcpyDeviceToHost), cudaSuccess);
  for (size_t i = 0; i < ybytes; ++i) ASSERT_EQ(back[i], 0xFF) << "byte " << i << " written by a refused launch";
  cudaFree(dx);
  cudaFree(dw);
  cudaFree(dy);

  KernelCase c{"GraftConv", {rnd(rng, {n, ch, h, w}), rnd(rng, {ch, 1, k, k}), rnd(rng, {ch})}};
  c.attrs.set("activation", std::string("Relu"));
  c.attrs.set("group", ch);
  c.attrs.set("kernel_shape", std::vector<int64_t>{k, k});
  c.tol32 = 1e-4;
  c.label = "80x80 depthwise filter (cuDNN)";
  run_kernel_case(c, DataType::kFloat32, seed);
  run_kernel_case(c, DataType::kFloat16, seed);
}

// ---- the NHWC pointwise kernel, through its launcher ----

double activation_ref(const char* act, double v, double lo, double hi) {
  const std::string a(act);
  if (a == "Relu") return v > 0 ? v : 0;
  if (a == "HardSwish") return v * std::min(std::max(v / 6 + 0.5, 0.0), 1.0);
  if (a == "Clip") return v < lo ? lo : (v > hi ? hi : v);
  if (a == "Silu") return v / (1 + std::exp(-v));
  if (a == "Sigmoid") return 1 / (1 + std::exp(-v));
  if (a == "HardSigmoid") return std::min(1.0, std::max(0.0, lo * v + hi));  // lo, hi: alpha, beta
  return v;
}

int activation_code(const char* act) {
  for (int i = 0; i < 7; ++i)
    if (std::string(act) == kActivations[i]) return i;
  return -1;
}

struct PointwiseCase {
  int64_t pixels, c, m;
  bool bias, residual;
  const char* act;
  int64_t offset;  // elements by which y and z start past an aligned address (0: vector path)
};

// Uploads `t` (float32 on the host) as `dt`; `ref` gets the values the device sees, in double.
void* upload(const Tensor& t, DataType dt, int64_t offset, std::deque<DevBuf>& bufs, std::vector<double>* ref) {
  Tensor low = dt == DataType::kFloat32 ? t : t.cast(dt).value();
  if (ref) *ref = to_doubles(low);
  const size_t es = dtype_size(dt);
  bufs.emplace_back(static_cast<size_t>(low.numel() + offset) * es);
  char* p = static_cast<char*>(bufs.back().p);
  if (!p) return nullptr;
  if (cudaMemcpy(p + offset * es, low.data(), low.nbytes(), cudaMemcpyHostToDevice) != cudaSuccess) return nullptr;
  return p + offset * es;
}

void run_pointwise(const PointwiseCase& pc, DataType dt, std::mt19937& rng, uint32_t seed) {
  SCOPED_TRACE("pointwise pixels " + std::to_string(pc.pixels) + " c " + std::to_string(pc.c) + " m " +
               std::to_string(pc.m) + (pc.bias ? " bias" : "") + (pc.residual ? " residual" : "") + " act '" + pc.act +
               "' offset " + std::to_string(pc.offset) + " dtype " + dtype_name(dt) + " seed " + std::to_string(seed));
  ASSERT_TRUE(cuda::k::pointwise_conv_nhwc_supported(pc.c, pc.m));
  const float lo = -0.25f, hi = 0.5f;
  std::deque<DevBuf> bufs;  // deque: DevBufs never move
  std::vector<double> x, w, b, z;
  void* dx = upload(rnd(rng, {pc.pixels, pc.c}), dt, 0, bufs, &x);
  void* dw = upload(rnd(rng, {pc.m, pc.c}), dt, 0, bufs, &w);
  void* db = pc.bias ? upload(rnd(rng, {pc.m}), dt, 0, bufs, &b) : nullptr;
  void* dz = pc.residual ? upload(rnd(rng, {pc.pixels, pc.m}), dt, pc.offset, bufs, &z) : nullptr;
  ASSERT_TRUE(dx && dw && (!pc.bias || db) && (!pc.residual || dz)) << "device allocation or copy failed";
  const size_t es = dtype_size(dt), ybytes = static_cast<size_t>(pc.pixels * pc.m) * es;
  bufs.emplace_back(ybytes + static_cast<size_t>(pc.offset) * es);
  ASSERT_NE(bufs.back().p, nullptr);
  void* dy = static_cast<char*>(bufs.back().p) + pc.offset * es;
  ASSERT_EQ(cudaMemset(dy, 0xFF, ybytes), cudaSuccess);  // poison: NaN everywhere

  const Epilogue e{activation_code(pc.act), lo, hi};
  ASSERT_EQ(cuda::k::launch_pointwise_conv_nhwc(static_cast<KType>(dt), dx, dw, db, dz, dy, pc.pixels, pc.c, pc.m, e,
                                                nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  Tensor got = Tensor::empty(dt, {pc.pixels, pc.m});
  ASSERT_EQ(cudaMemcpy(got.data(), dy, ybytes, cudaMemcpyDeviceToHost), cudaSuccess);
  const std::vector<double> g = to_doubles(got);

  double num = 0, den = 0;
  for (int64_t p = 0; p < pc.pixels; ++p)
    for (int64_t co = 0; co < pc.m; ++co) {
      double acc = pc.bias ? b[static_cast<size_t>(co)] : 0.0;
      for (int64_t ci = 0; ci < pc.c; ++ci)
        acc += x[static_cast<size_t>(p * pc.c + ci)] * w[static_cast<size_t>(co * pc.c + ci)];
      const size_t at = static_cast<size_t>(p * pc.m + co);
      if (pc.residual) acc += z[at];
      const double want = activation_ref(pc.act, acc, lo, hi);
      ASSERT_FALSE(std::isnan(g[at])) << "y[" << p << ", " << co << "] is NaN (unwritten?)";
      num += (g[at] - want) * (g[at] - want);
      den += want * want;
    }
  const double rel = std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
  const double tol = dt == DataType::kFloat32 ? 1e-5 : 1e-2;
  EXPECT_LE(rel, tol) << "relative error norm " << rel;
}

// Input channels of MobileNet/EfficientNet expansions and an RGB-like 3; output channels that are a
// multiple of every vector width (8, 96, 144) and one that is only a multiple of 4 (20); pixel
// counts that leave the last 64-pixel tile partial, and one large enough that blocks walk several
// tiles; y and z one element past alignment (the scalar path).
TEST(CudaConvKernels, PointwiseNhwc) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  std::vector<PointwiseCase> cases;
  int i = 0;
  for (int64_t c : {3, 16, 24, 40})
    for (int64_t m : {8, 96, 144, 20}) {
      const int64_t pixels = i % 3 == 0 ? 2 * 7 * 9 : (i % 3 == 1 ? 64 : 3 * 11 * 13);
      cases.push_back({pixels, c, m, i % 2 == 0, i % 3 != 1, kActivations[i % 5], 0});
      ++i;
    }
  for (const char* act : kActivations) cases.push_back({5 * 17, 16, 96, true, true, act, 0});
  cases.push_back({40000, 16, 96, true, false, "Relu", 0});  // far more tiles than resident blocks
  cases.push_back({129, 24, 144, true, true, "HardSwish", 1});
  cases.push_back({77, 3, 20, false, true, "Silu", 1});
  cases.push_back({1, 40, 8, true, true, "Clip", 0});  // a single pixel
  // Near the shared-memory limit (c * m + a 64-pixel tile of x as float in 48 KB), partial tiles.
  cases.push_back({300, 40, 240, true, true, "Silu", 0});
  cases.push_back({257, 8, 256, true, false, "Relu", 0});
  for (const PointwiseCase& pc : cases) {
    run_pointwise(pc, DataType::kFloat32, rng, seed);
    run_pointwise(pc, DataType::kFloat16, rng, seed);
  }
}

// Past the shared-memory limit (the whole weight matrix plus a 64-pixel tile of x, as float, in
// 48 KB): refused with cudaErrorInvalidValue and nothing written.
TEST(CudaConvKernels, PointwiseNhwcRefusesBeyondSharedMemory) {
  GRAFT_REQUIRE_GPU();
  EXPECT_TRUE(cuda::k::pointwise_conv_nhwc_supported(40, 144));
  EXPECT_TRUE(cuda::k::pointwise_conv_nhwc_supported(96, 24));
  EXPECT_FALSE(cuda::k::pointwise_conv_nhwc_supported(64, 384));
  EXPECT_FALSE(cuda::k::pointwise_conv_nhwc_supported(1, 20000));
  EXPECT_FALSE(cuda::k::pointwise_conv_nhwc_supported(0, 8));
  const int64_t pixels = 100, c = 64, m = 384;
  DevBuf x(static_cast<size_t>(pixels * c) * 2), w(static_cast<size_t>(m * c) * 2), y(static_cast<size_t>(pixels * m) * 2);
  ASSERT_TRUE(x.p && w.p && y.p);
  ASSERT_EQ(cudaMemset(x.p, 0, static_cast<size_t>(pixels * c) * 2), cudaSuccess);
  ASSERT_EQ(cudaMemset(w.p, 0, static_cast<size_t>(m * c) * 2), cudaSuccess);
  ASSERT_EQ(cudaMemset(y.p, 0xFF, static_cast<size_t>(pixels * m) * 2), cudaSuccess);
  EXPECT_EQ(cuda::k::launch_pointwise_conv_nhwc(KType::kF16, x.p, w.p, nullptr, nullptr, y.p, pixels, c, m, Epilogue{},
                                                nullptr),
            cudaErrorInvalidValue);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<unsigned char> back(static_cast<size_t>(pixels * m) * 2);
  ASSERT_EQ(cudaMemcpy(back.data(), y.p, back.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  for (size_t i = 0; i < back.size(); ++i) ASSERT_EQ(back[i], 0xFF) << "byte " << i << " written by a refused launch";
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// ---- the epilogue pass after a cuDNN convolution (variant 0), through its launcher ----

struct EpilogueCase {
  int64_t outer, channels, inner;  // y is [outer, channels, inner]: NCHW planes, or NHWC pixels with inner 1
  bool bias, residual;
  const char* act;
  int64_t offset;  // elements by which y and z start past an aligned address
};

// y = act(y + bias[ch] + z) in place, against double on the values the device saw.
void run_epilogue(const EpilogueCase& ec, DataType dt, std::mt19937& rng, uint32_t seed) {
  SCOPED_TRACE("epilogue [" + std::to_string(ec.outer) + ", " + std::to_string(ec.channels) + ", " +
               std::to_string(ec.inner) + "]" + (ec.bias ? " bias" : "") + (ec.residual ? " residual" : "") +
               " act '" + ec.act + "' offset " + std::to_string(ec.offset) + " dtype " + dtype_name(dt) + " seed " +
               std::to_string(seed));
  const float lo = -0.25f, hi = 0.5f;
  const int64_t total = ec.outer * ec.channels * ec.inner;
  std::deque<DevBuf> bufs;
  std::vector<double> y0, b, z;
  void* dy = upload(rnd(rng, {total}), dt, ec.offset, bufs, &y0);
  void* db = ec.bias ? upload(rnd(rng, {ec.channels}), dt, 0, bufs, &b) : nullptr;
  void* dz = ec.residual ? upload(rnd(rng, {total}), dt, ec.offset, bufs, &z) : nullptr;
  ASSERT_TRUE(dy && (!ec.bias || db) && (!ec.residual || dz)) << "device allocation or copy failed";
  const Epilogue e{activation_code(ec.act), lo, hi};
  ASSERT_EQ(cuda::k::launch_conv_epilogue(static_cast<KType>(dt), dy, db, dz, ec.channels, ec.inner, e, total, nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  Tensor got = Tensor::empty(dt, {total});
  ASSERT_EQ(cudaMemcpy(got.data(), dy, got.nbytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  const std::vector<double> g = to_doubles(got);
  const double tol = dt == DataType::kFloat32 ? 1e-6 : 4e-3;  // one rounding of the result
  for (int64_t i = 0; i < total; ++i) {
    const size_t at = static_cast<size_t>(i);
    double v = y0[at];
    if (ec.bias) v += b[static_cast<size_t>((i / ec.inner) % ec.channels)];
    if (ec.residual) v += z[at];
    const double want = activation_ref(ec.act, v, lo, hi);
    ASSERT_NEAR(g[at], want, tol * (1.0 + std::fabs(want))) << "element " << i;
  }
}

// Each path of the launcher: NHWC with a channel count that is a multiple of the 16-byte vector
// (one bias vector per thread) and one that is not; NCHW planes whose size is a multiple of the
// vector (one channel per vector) and one that is not; y and z one element past alignment; every
// activation; enough elements that threads walk the grid-stride loop's tail.
TEST(CudaConvKernels, EpilogueInPlace) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  std::vector<EpilogueCase> cases = {
      {37, 96, 1, true, true, "Clip", 0},       // NHWC, 12 vectors of 8 halves per pixel
      {29, 20, 1, true, false, "HardSwish", 0}, // NHWC, 20 channels: vectors in float32 only
      {3, 5, 3136, true, true, "Relu", 0},      // NCHW 56x56 planes: a vector never spans two channels
      {2, 7, 49, true, true, "Silu", 0},        // NCHW 7x7 planes: element by element
      {41, 96, 1, true, true, "Sigmoid", 1},    // misaligned y and z
      {5, 64, 1, false, true, "HardSigmoid", 0},// residual only
      {6, 24, 8, true, false, "", 0},           // bias only, NCHW planes of exactly one vector
      {1, 1, 1, true, true, "Relu", 0},         // one element
      {2048, 144, 1, true, true, "Clip", 0},    // 295k elements
  };
  for (const char* act : kActivations) cases.push_back({13, 32, 1, true, true, act, 0});
  for (const EpilogueCase& ec : cases) {
    run_epilogue(ec, DataType::kFloat32, rng, seed);
    run_epilogue(ec, DataType::kFloat16, rng, seed);
  }
}


// ---- the float16 tensor-core NHWC convolution (variant 7), through its launcher and forced ----

struct MmaCase {
  int64_t n, h, w, c, m, kh, kw, sh, sw, ph, pw, dh, dw;
  bool bias, residual;
  const char* act;
  int64_t offset;  // elements by which x, y and z start past an aligned address (0: vector paths)
};

// The launcher against a double-precision convolution of the float16 values it was given.
void run_mma(const MmaCase& mc, std::mt19937& rng, uint32_t seed, bool chunked = false) {
  const cuda::k::Window2d g = conv_window_of(mc);
  SCOPED_TRACE("mma n " + std::to_string(mc.n) + " " + std::to_string(mc.h) + "x" + std::to_string(mc.w) + " c " +
               std::to_string(mc.c) + " m " + std::to_string(mc.m) + " k " + std::to_string(mc.kh) + "x" +
               std::to_string(mc.kw) + " s " + std::to_string(mc.sh) + "," + std::to_string(mc.sw) + " act '" +
               mc.act + "' offset " + std::to_string(mc.offset) + (chunked ? " chunked" : "") + " seed " +
               std::to_string(seed));
  ASSERT_TRUE(chunked ? cuda::k::conv_nhwc_mma_chunked_supported(g, mc.m) : cuda::k::conv_nhwc_mma_supported(g, mc.m));
  const float lo = -0.25f, hi = 0.5f;
  const DataType dt = DataType::kFloat16;
  std::deque<DevBuf> bufs;
  std::vector<double> x, w, b, z;
  const int64_t pixels = g.n * g.oh * g.ow;
  void* dx = upload(rnd(rng, {mc.n, mc.h, mc.w, mc.c}), dt, mc.offset, bufs, &x);
  void* dw = upload(rnd(rng, {mc.m, mc.kh, mc.kw, mc.c}), dt, 0, bufs, &w);
  void* db = mc.bias ? upload(rnd(rng, {mc.m}), dt, 0, bufs, &b) : nullptr;
  void* dz = mc.residual ? upload(rnd(rng, {pixels, mc.m}), dt, mc.offset, bufs, &z) : nullptr;
  ASSERT_TRUE(dx && dw && (!mc.bias || db) && (!mc.residual || dz)) << "device allocation or copy failed";
  const size_t ybytes = static_cast<size_t>(pixels * mc.m) * 2;
  bufs.emplace_back(ybytes + static_cast<size_t>(mc.offset) * 2);
  ASSERT_NE(bufs.back().p, nullptr);
  void* dy = static_cast<char*>(bufs.back().p) + mc.offset * 2;
  ASSERT_EQ(cudaMemset(dy, 0xFF, ybytes), cudaSuccess);  // poison: NaN everywhere

  const Epilogue e{activation_code(mc.act), lo, hi};
  ASSERT_EQ(chunked ? cuda::k::launch_conv_nhwc_mma_chunked(dx, dw, db, dz, dy, g, mc.m, e, nullptr)
                    : cuda::k::launch_conv_nhwc_mma(dx, dw, db, dz, dy, g, mc.m, e, nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  Tensor got = Tensor::empty(dt, {pixels, mc.m});
  ASSERT_EQ(cudaMemcpy(got.data(), dy, ybytes, cudaMemcpyDeviceToHost), cudaSuccess);
  const std::vector<double> out = to_doubles(got);

  double num = 0, den = 0;
  for (int64_t p = 0; p < pixels; ++p) {
    const int64_t img = p / (g.oh * g.ow), oy = p / g.ow % g.oh, ox = p % g.ow;
    for (int64_t co = 0; co < mc.m; ++co) {
      double acc = mc.bias ? b[static_cast<size_t>(co)] : 0.0;
      for (int64_t i = 0; i < mc.kh; ++i)
        for (int64_t j = 0; j < mc.kw; ++j) {
          const int64_t iy = oy * mc.sh - mc.ph + i * mc.dh, ix = ox * mc.sw - mc.pw + j * mc.dw;
          if (iy < 0 || iy >= mc.h || ix < 0 || ix >= mc.w) continue;
          for (int64_t ci = 0; ci < mc.c; ++ci)
            acc += x[static_cast<size_t>(((img * mc.h + iy) * mc.w + ix) * mc.c + ci)] *
                   w[static_cast<size_t>(((co * mc.kh + i) * mc.kw + j) * mc.c + ci)];
        }
      const size_t at = static_cast<size_t>(p * mc.m + co);
      if (mc.residual) acc += z[at];
      const double want = activation_ref(mc.act, acc, lo, hi);
      ASSERT_FALSE(std::isnan(out[at])) << "y[" << p << ", " << co << "] is NaN (unwritten?)";
      num += (out[at] - want) * (out[at] - want);
      den += want * want;
    }
  }
  const double rel = std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
  EXPECT_LE(rel, 1e-2) << "relative error norm " << rel;
}

// Shapes that reach every path: one K step (16 channels) up to eight (128 terms), 8 and 4 warps per
// block, filters split over several column blocks (64 -> 384, and 32 -> 192 split to fill the GPU),
// m past the last full 16 filters, m odd (element stores), partial pixel tiles, padding, strides, dilation, non-square
// filters, and x, y, z one element past alignment (element loads and stores).
TEST(CudaConvKernels, TensorCoreNhwc) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const MmaCase cases[] = {
      {2, 9, 11, 16, 96, 1, 1, 1, 1, 0, 0, 1, 1, true, false, "Clip", 0},        // MobileNetV2's first expansion
      {1, 13, 7, 24, 144, 1, 1, 1, 1, 0, 0, 1, 1, true, true, "HardSwish", 0},   // 2 K steps, 9 fragments
      {2, 15, 17, 8, 32, 3, 3, 2, 2, 1, 1, 1, 1, true, false, "Relu", 0},        // an 8-channel stem: 72 terms, 4 warps
      {1, 10, 12, 64, 384, 1, 1, 1, 1, 0, 0, 1, 1, true, false, "Silu", 0},      // 3 column blocks of 128
      {2, 7, 9, 128, 40, 1, 1, 1, 1, 0, 0, 1, 1, false, true, "", 0},           // 128 terms; m = 40: a partial fragment
      {1, 9, 9, 8, 20, 3, 3, 1, 1, 2, 2, 2, 2, true, true, "Sigmoid", 0},        // dilated; m = 20: element stores
      {3, 5, 6, 32, 24, 2, 2, 2, 2, 0, 0, 1, 1, true, false, "HardSigmoid", 0},  // 2x2 stride 2, unpadded
      {1, 11, 5, 16, 48, 1, 1, 1, 1, 0, 0, 1, 1, true, true, "Clip", 1},         // unaligned x, y, z
      {2, 8, 13, 8, 16, 5, 3, 1, 2, 2, 1, 1, 1, false, false, "Relu", 1},        // 5x3, column stride 2, unaligned
      {4, 56, 56, 24, 144, 1, 1, 1, 1, 0, 0, 1, 1, true, true, "Relu", 0},       // 98 pixel tiles
      {1, 1, 1, 16, 8, 1, 1, 1, 1, 0, 0, 1, 1, true, false, "", 0},              // one pixel
      {2, 6, 7, 16, 13, 1, 1, 1, 1, 0, 0, 1, 1, true, true, "Silu", 0},          // odd m: element stores
      {32, 28, 28, 32, 192, 1, 1, 1, 1, 0, 0, 1, 1, true, false, "Clip", 0},     // MobileNetV2's 28x28 expansion
  };
  for (const MmaCase& mc : cases) run_mma(mc, rng, seed);
}

// The K-chunked kernel (variant 9): reductions of 129 to 1024 terms, 64 at a time. ResNet's and
// AlexNet's 8-channel stems (392 and 968 terms, the last chunk partial), exactly four chunks, the
// 1024-term limit, filters over two column blocks with the second partial (m = 96), m odd, m not a
// multiple of 8 and m below one fragment, residuals and every activation, dilation, non-square
// filters and strides, x, y and z one element past alignment, one pixel, and pixel counts that leave
// the last 64-pixel block partial.
TEST(CudaConvKernels, TensorCoreNhwcChunked) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const MmaCase cases[] = {
      {2, 23, 21, 8, 64, 7, 7, 2, 2, 3, 3, 1, 1, true, false, "Relu", 0},        // ResNet's stem: 392 terms
      {1, 31, 29, 8, 64, 11, 11, 4, 4, 2, 2, 1, 1, true, false, "Relu", 0},      // AlexNet's stem: 968 terms
      {2, 9, 10, 16, 96, 3, 3, 1, 1, 1, 1, 1, 1, true, true, "HardSwish", 0},    // 144 terms; 64 + 32 filters
      {1, 6, 5, 24, 13, 3, 3, 1, 1, 1, 1, 1, 1, true, true, "Silu", 0},          // 216 terms; m odd
      {1, 9, 9, 8, 20, 5, 5, 1, 1, 4, 4, 2, 2, true, true, "Sigmoid", 0},        // dilated 5x5; m = 20
      {3, 5, 6, 64, 8, 2, 2, 2, 2, 0, 0, 1, 1, true, false, "HardSigmoid", 0},   // 256 terms: four whole chunks; m = 8
      {1, 11, 5, 16, 48, 3, 3, 1, 1, 1, 1, 1, 1, true, true, "Clip", 1},         // unaligned x, y, z
      {2, 8, 13, 8, 16, 5, 7, 1, 2, 2, 3, 1, 1, false, false, "", 1},            // 5x7, column stride 2, unaligned
      {1, 1, 1, 512, 16, 1, 1, 1, 1, 0, 0, 1, 1, true, false, "Relu", 0},        // one pixel, 512 terms
      {1, 3, 5, 1024, 24, 1, 1, 1, 1, 0, 0, 1, 1, true, true, "", 0},            // the 1024-term limit
      {4, 19, 17, 8, 64, 7, 7, 2, 2, 3, 3, 1, 1, false, true, "Clip", 0},        // 400 pixels: 7 blocks
  };
  for (const MmaCase& mc : cases) run_mma(mc, rng, seed, /*chunked=*/true);
}

cuda::k::Window2d square_window(int64_t c, int64_t k) {
  return conv_window_of(MmaCase{1, 6, 6, c, 8, k, k, 1, 1, k / 2, k / 2, 1, 1, false, false, "", 0});
}

// The tensor-core kernel's limits, decided on the host (no GPU needed: CI runs this).
TEST(CudaConvKernels, TensorCoreNhwcLimits) {
  EXPECT_TRUE(cuda::k::conv_nhwc_mma_supported(square_window(16, 1), 96));
  EXPECT_TRUE(cuda::k::conv_nhwc_mma_supported(square_window(128, 1), 8));
  EXPECT_TRUE(cuda::k::conv_nhwc_mma_supported(square_window(8, 3), 32));
  EXPECT_TRUE(cuda::k::conv_nhwc_mma_supported(square_window(64, 1), 4096));  // many column blocks
  EXPECT_FALSE(cuda::k::conv_nhwc_mma_supported(square_window(12, 1), 8));   // c not a multiple of 8
  EXPECT_FALSE(cuda::k::conv_nhwc_mma_supported(square_window(136, 1), 8));  // 136 terms
  EXPECT_FALSE(cuda::k::conv_nhwc_mma_supported(square_window(8, 5), 8));    // 200 terms
  EXPECT_FALSE(cuda::k::conv_nhwc_mma_supported(square_window(16, 1), 0));
  cuda::k::Window2d huge = square_window(16, 1);
  huge.n = int64_t{1} << 20;  // x's elements past 32 bits
  huge.h = huge.w = huge.oh = huge.ow = 64;
  EXPECT_FALSE(cuda::k::conv_nhwc_mma_supported(huge, 16));
  cuda::k::Window2d strided = square_window(16, 1);
  strided.sh = int64_t{1} << 20;  // a stride past the kernel's 32-bit coordinates
  EXPECT_FALSE(cuda::k::conv_nhwc_mma_supported(strided, 16));
  // The K-chunked kernel takes what the one above leaves, from 129 to 1024 terms.
  EXPECT_TRUE(cuda::k::conv_nhwc_mma_chunked_supported(square_window(8, 7), 64));    // 392 terms
  EXPECT_TRUE(cuda::k::conv_nhwc_mma_chunked_supported(square_window(8, 11), 64));   // 968 terms
  EXPECT_TRUE(cuda::k::conv_nhwc_mma_chunked_supported(square_window(1024, 1), 8));  // the limit
  EXPECT_TRUE(cuda::k::conv_nhwc_mma_chunked_supported(square_window(136, 1), 4096));
  EXPECT_FALSE(cuda::k::conv_nhwc_mma_chunked_supported(square_window(128, 1), 8));  // variant 7's
  EXPECT_FALSE(cuda::k::conv_nhwc_mma_chunked_supported(square_window(1032, 1), 8)); // past the limit
  EXPECT_FALSE(cuda::k::conv_nhwc_mma_chunked_supported(square_window(12, 7), 8));   // c not a multiple of 8
  EXPECT_FALSE(cuda::k::conv_nhwc_mma_chunked_supported(square_window(8, 7), 0));
  cuda::k::Window2d huge_chunked = square_window(8, 7);
  huge_chunked.n = int64_t{1} << 20;
  huge_chunked.h = huge_chunked.w = huge_chunked.oh = huge_chunked.ow = 64;
  EXPECT_FALSE(cuda::k::conv_nhwc_mma_chunked_supported(huge_chunked, 64));
}

// Outside its limits the launcher refuses (cudaErrorInvalidValue) and writes nothing.
TEST(CudaConvKernels, TensorCoreNhwcRefusals) {
  GRAFT_REQUIRE_GPU();
  const cuda::k::Window2d g = square_window(12, 1);
  DevBuf x(6 * 6 * 12 * 2), w(8 * 12 * 2), y(6 * 6 * 8 * 2);
  ASSERT_TRUE(x.p && w.p && y.p);
  ASSERT_EQ(cudaMemset(x.p, 0, 6 * 6 * 12 * 2), cudaSuccess);
  ASSERT_EQ(cudaMemset(w.p, 0, 8 * 12 * 2), cudaSuccess);
  ASSERT_EQ(cudaMemset(y.p, 0xFF, 6 * 6 * 8 * 2), cudaSuccess);
  EXPECT_EQ(cuda::k::launch_conv_nhwc_mma(x.p, w.p, nullptr, nullptr, y.p, g, 8, Epilogue{}, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::k::launch_conv_nhwc_mma_chunked(x.p, w.p, nullptr, nullptr, y.p, g, 8, Epilogue{}, nullptr),
            cudaErrorInvalidValue);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<unsigned char> back(6 * 6 * 8 * 2);
  ASSERT_EQ(cudaMemcpy(back.data(), y.p, back.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  for (size_t i = 0; i < back.size(); ++i) ASSERT_EQ(back[i], 0xFF) << "byte " << i << " written by a refused launch";
}

// GraftConv in float16 NHWC through the engine: timed first (whichever tactic wins must be right),
// then forced to the tensor-core kernel, so the op's weight layout, bias and residual reach it.
TEST(CudaNn, GraftConvTensorCoreNhwc) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Spec {
    int64_t n, h, w, c, m, k, stride;
    bool residual;
    const char* act;
  };
  for (const Spec& s : {Spec{2, 14, 15, 16, 96, 1, 1, false, "Clip"}, Spec{3, 9, 8, 24, 144, 1, 1, true, ""},
                        Spec{2, 17, 16, 8, 32, 3, 2, false, "Relu"}, Spec{1, 7, 7, 40, 240, 1, 1, true, "Silu"}}) {
    const int64_t pad = s.k / 2;
    const int64_t oh = (s.h + 2 * pad - s.k) / s.stride + 1, ow = (s.w + 2 * pad - s.k) / s.stride + 1;
    KernelCase c{"GraftConv", {rnd(rng, {s.n, s.h, s.w, s.c}), rnd(rng, {s.m, s.k, s.k, s.c}), rnd(rng, {s.m})}};
    if (s.residual) c.inputs.push_back(rnd(rng, {s.n, oh, ow, s.m}));
    set_graft_conv_attrs(c, "NHWC", s.act, 1, s.k, s.stride, pad);
    if (std::string(s.act) == "Clip") {
      c.attrs.set("clip_min", -0.25f);
      c.attrs.set("clip_max", 0.5f);
    }
    c.label = std::to_string(s.c) + " -> " + std::to_string(s.m) + " k " + std::to_string(s.k);
    run_timed_then_forced(c, DataType::kFloat16, seed, 0, 7);
  }
  // Reductions past 128 terms, forced to the K-chunked kernel (variant 9): an 8-channel 7x7 stem and a
  // 3x3 over 16 channels.
  for (const Spec& s : {Spec{2, 23, 21, 8, 64, 7, 2, false, "Relu"}, Spec{1, 12, 13, 16, 40, 3, 1, true, "Silu"}}) {
    const int64_t pad = s.k / 2;
    const int64_t oh = (s.h + 2 * pad - s.k) / s.stride + 1, ow = (s.w + 2 * pad - s.k) / s.stride + 1;
    KernelCase c{"GraftConv", {rnd(rng, {s.n, s.h, s.w, s.c}), rnd(rng, {s.m, s.k, s.k, s.c}), rnd(rng, {s.m})}};
    if (s.residual) c.inputs.push_back(rnd(rng, {s.n, oh, ow, s.m}));
    set_graft_conv_attrs(c, "NHWC", s.act, 1, s.k, s.stride, pad);
    c.label = std::to_string(s.c) + " -> " + std::to_string(s.m) + " k " + std::to_string(s.k) + " (chunked)";
    run_timed_then_forced(c, DataType::kFloat16, seed, 0, 9);
  }
}

}  // namespace
}  // namespace graft::testing
