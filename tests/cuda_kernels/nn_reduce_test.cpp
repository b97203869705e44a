// CUDA nn and reduce/norm ops vs the CPU reference: MatMul/Gemm (cuBLASLt), Conv (cuDNN or direct),
// pools, BatchNormalization, Softmax, LayerNormalization, Reduce*.
#include "ops/fused_conv/depthwise_tile_kernels.cuh"
#include "ops/nn/nn_kernels.cuh"
#include "cuda_kernel_harness.h"

namespace graft::testing {
namespace {

TEST(CudaNn, MatMul) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{7, 13}, {13, 5}},          {{3, 7, 13}, {3, 13, 5}}, {{3, 7, 13}, {13, 5}},   {{13}, {2, 13, 5}},
      {{2, 1, 4, 6}, {1, 3, 6, 5}}, {{4, 6}, {6}},           {{2, 2, 1, 3, 8}, {8, 9}}, {{64, 96}, {96, 33}},
  };
  for (const auto& [a, b] : shapes) {
    KernelCase c{"MatMul", {rnd(rng, a), rnd(rng, b)}};
    c.tol32 = 1e-4;
    run_float_dtypes(c, seed, /*bf16=*/true);
  }
}

TEST(CudaNn, Gemm) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const int64_t M = 9, K = 17, N = 11;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (int cform = 0; cform < 5; ++cform) {
        std::vector<int64_t> ad = ta ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K};
        std::vector<int64_t> bd = tb ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N};
        KernelCase c{"Gemm", {rnd(rng, ad), rnd(rng, bd)}};
        const std::vector<int64_t> cds[] = {{N}, {1, N}, {M, 1}, {M, N}, {}};
        if (cform < 5) c.inputs.push_back(rnd(rng, cds[cform]));
        c.attrs.set("transA", static_cast<int64_t>(ta));
        c.attrs.set("transB", static_cast<int64_t>(tb));
        if (cform % 2) {
          c.attrs.set("alpha", 0.7f);
          c.attrs.set("beta", 1.3f);
        }
        c.tol32 = 1e-4;
        c.label = "transA " + std::to_string(ta) + " transB " + std::to_string(tb) + " C form " + std::to_string(cform);
        run_float_dtypes(c, seed);
      }
  KernelCase c{"Gemm", {rnd(rng, {M, K}), rnd(rng, {K, N})}};
  c.tol32 = 1e-4;
  run_float_dtypes(c, seed);
}

struct ConvSpec {
  std::vector<int64_t> x, w;
  std::vector<int64_t> strides, pads, dilations;
  int64_t group;
  bool bias;
};

TEST(CudaNn, Conv) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const ConvSpec specs[] = {
      {{2, 3, 11, 9}, {8, 3, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, true},
      {{1, 4, 13, 13}, {6, 2, 3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 2, false},   // grouped, strided
      {{1, 4, 15, 12}, {4, 1, 3, 3}, {1, 1}, {2, 2, 2, 2}, {2, 2}, 4, true},    // depthwise, dilated
      {{1, 3, 10, 10}, {5, 3, 3, 2}, {1, 2}, {1, 0, 2, 1}, {1, 1}, 1, true},    // asymmetric pads
      {{2, 3, 17}, {4, 3, 5}, {2}, {2, 2}, {1}, 1, true},                       // 1-D
  };
  for (const auto& s : specs) {
    KernelCase c{"Conv", {rnd(rng, s.x), rnd(rng, s.w)}};
    if (s.bias) c.inputs.push_back(rnd(rng, {s.w[0]}));
    c.attrs.set("strides", s.strides);
    c.attrs.set("pads", s.pads);
    c.attrs.set("dilations", s.dilations);
    c.attrs.set("group", s.group);
    c.tol32 = 1e-4;
    run_float_dtypes(c, seed);
  }
}

// GraftConv in NHWC with one filter per channel runs graft's depthwise kernel (the untuned choice
// for that problem; the builder times it against cuDNN). Channel counts pick every vector width
// (16-byte lanes: 8/4/2/1 halves, 4/1 floats) and every chunking of the channels whose filter taps
// the kernel stages in shared memory, up to a filter too large for it; the epilogue's bias,
// residual and activations are inside.
TEST(CudaNn, GraftConvDepthwiseNhwc) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Spec {
    int64_t n, h, w, c, k, stride, pad, dilation;
    bool bias, residual;
    const char* act;
  };
  const Spec specs[] = {
      {2, 10, 9, 24, 3, 1, 1, 1, true, false, "Relu"},       // mobilenet block, 8 halves per thread
      {3, 9, 11, 20, 5, 2, 2, 1, true, true, "HardSwish"},   // strided 5x5 with a residual, 4 lanes
      {1, 12, 12, 6, 3, 1, 2, 2, false, false, ""},          // dilated, no bias, 2 lanes
      {2, 8, 7, 7, 7, 1, 3, 1, true, false, ""},             // convnext 7x7, odd channels: 1 lane
      {1, 5, 5, 16, 3, 2, 0, 1, true, true, "Relu"},         // no padding, stride 2
      {2, 9, 9, 32, 3, 1, 1, 1, true, false, "Clip"},        // ReLU6-style clamp (bounds below)
      {2, 8, 8, 12, 3, 2, 1, 1, true, true, "Silu"},         // EfficientNet's SiLU
      {2, 9, 8, 96, 7, 1, 3, 1, true, false, ""},            // convnext: 12 vectors of 8 -> 2 chunks of 6
      {1, 7, 7, 768, 7, 1, 3, 1, true, true, ""},            // convnext's last stage: 12 chunks of 8 vectors
      {2, 11, 10, 40, 5, 2, 2, 1, true, false, "Silu"},      // 5 vectors: one chunk of 5
      {2, 210, 210, 96, 3, 1, 1, 1, true, false, "Relu"},    // enough pixels that each thread loops over several
      {1, 45, 44, 8, 41, 1, 20, 1, true, false, ""},         // 41x41 taps beyond shared memory: the per-tap path
      {3, 13, 17, 40, 3, 2, 1, 1, true, true, "HardSwish"},  // 3x3 stride 2: odd output width, 5 vectors
      {2, 7, 6, 72, 3, 1, 0, 1, false, true, "Relu"},        // 3x3 unpadded: 4-wide tiles, one partial
      // The row-tiled kernel (K 3/5/7, stride 1/2, 16-byte lanes): tiles of 4 outputs that end past the row,
      // rows narrower than a tile, windows reaching past both ends of a row.
      {2, 14, 13, 48, 5, 1, 2, 1, true, true, "Silu"},       // efficientnet's 5x5, ow 13: last tile 1 wide
      {3, 5, 3, 16, 7, 1, 3, 1, true, false, ""},            // 7x7 over a row of 3 pixels: one partial tile
      {2, 15, 17, 32, 7, 2, 3, 1, true, true, "Relu"},       // 7x7 stride 2: 11 input vectors per tile row
      {1, 18, 22, 24, 5, 2, 1, 1, false, false, "Clip"},     // 5x5 stride 2, pads smaller than the halo
      {2, 6, 9, 8, 3, 1, 1, 1, true, true, "HardSwish"},     // one vector of channels per pixel
      // The shared-tile kernel (variant 8: float16, K 3/5 at stride 1/2 and K 7 at stride 1, 16 or 8 channels
      // per block; the
      // cases above with multiples of 8 channels too): 16 x 16 tiles (ow >= 16) and 8 x 8 ones, tiles
      // that end past the image on both axes, no padding.
      {2, 33, 35, 32, 5, 2, 2, 1, true, true, "Silu"},       // 5x5 stride 2, 17 x 18 outputs: 2 x 2 big tiles
      {2, 20, 37, 16, 3, 2, 1, 1, true, true, "HardSwish"},  // 3x3 stride 2, ow 19
      {1, 17, 16, 64, 3, 1, 1, 1, false, true, "Clip"},      // 4 channel chunks, oh 17: a second row of tiles
      {2, 19, 18, 16, 3, 1, 0, 1, true, false, "Relu"},      // unpadded: 17 x 16 outputs
      {2, 21, 20, 40, 5, 1, 2, 1, true, true, "HardSwish"},  // 5 chunks of 8 channels, 16 x 16 tiles
      {2, 20, 18, 32, 7, 1, 3, 1, true, true, "HardSwish"},  // ConvNeXt's 7x7 in 16 x 16 tiles, both partial
      {1, 9, 10, 24, 7, 1, 3, 1, false, false, ""},          // 7x7, 8 x 8 tiles, 3 chunks of 8 channels
  };
  int tiled = 0, shared_tile = 0;
  for (const Spec& s : specs) {
    const int64_t oh = (s.h + 2 * s.pad - s.dilation * (s.k - 1) - 1) / s.stride + 1;
    const int64_t ow = (s.w + 2 * s.pad - s.dilation * (s.k - 1) - 1) / s.stride + 1;
    KernelCase c{"GraftConv", {rnd(rng, {s.n, s.h, s.w, s.c}), rnd(rng, {s.c, s.k, s.k, 1})}};
    c.inputs.push_back(s.bias ? rnd(rng, {s.c}) : Tensor());
    if (s.residual) c.inputs.push_back(rnd(rng, {s.n, oh, ow, s.c}));
    set_graft_conv_attrs(c, "NHWC", s.act, s.c, s.k, s.stride, s.pad, s.dilation);
    if (std::string(s.act) == "Clip") {  // tight bounds, so both clamps bind on random data
      c.attrs.set("clip_min", -0.25f);
      c.attrs.set("clip_max", 0.5f);
    }
    c.tol32 = 1e-5;
    c.label = "c " + std::to_string(s.c) + " k " + std::to_string(s.k) + " stride " + std::to_string(s.stride) +
              " act '" + s.act + "'";
    run_kernel_case(c, DataType::kFloat32, seed);
    run_kernel_case(c, DataType::kFloat16, seed);
    // The row-tiled kernel (variant 6) where it applies, forced: the untuned choice takes it only
    // for problems far larger than these.
    cuda::k::Window2d g;
    g.n = s.n; g.c = s.c; g.h = s.h; g.w = s.w; g.oh = oh; g.ow = ow;
    g.kh = g.kw = s.k; g.sh = g.sw = s.stride; g.dh = g.dw = s.dilation;
    g.ph = g.pw = g.peh = g.pew = s.pad;
    if (cuda::k::depthwise_nhwc_row_tiled_supported(g)) {
      ++tiled;
      for (DataType dt : {DataType::kFloat32, DataType::kFloat16}) run_timed_then_forced(c, dt, seed, 0, 6);
    }
    // The shared-tile kernel (variant 8) where it applies, forced, in float16 (all it takes).
    if (cuda::k::depthwise_nhwc_tile_supported(cuda::k::KType::kF16, g)) {
      ++shared_tile;
      run_timed_then_forced(c, DataType::kFloat16, seed, 0, 8);
    }
  }
  EXPECT_GE(tiled, 8) << "the row-tiled kernel's cases";
  EXPECT_GE(shared_tile, 17) << "the shared-tile kernel's cases";
}

// A depthwise GraftConv with an input activation (the expansion's ReLU6, HardSwish or SiLU deferred
// to it) on the NHWC depthwise kernels that apply one: the untuned choice (variant 2 or 6), then
// each of variants 2, 6 and 8 forced after timing, against the CPU reference. Padded windows, so
// that the padding staying zero is checked (HardSwish and SiLU map 0 to 0, but Clip from 0.1 does
// not), with an output activation and a residual too.
TEST(CudaNn, GraftConvDepthwiseInputActivation) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Spec {
    int64_t n, h, w, c, k, stride;
    const char* in_act;
    float lo, hi;
  };
  for (const Spec& s : {Spec{2, 17, 18, 32, 3, 1, "Clip", 0.f, 0.5f}, Spec{2, 20, 19, 16, 3, 2, "HardSwish", 0, 0},
                        Spec{1, 15, 16, 48, 5, 1, "Silu", 0, 0}, Spec{2, 9, 10, 32, 3, 1, "Clip", 0.1f, 0.4f}}) {
    const int64_t pad = s.k / 2;
    const int64_t oh = (s.h + 2 * pad - s.k) / s.stride + 1, ow = (s.w + 2 * pad - s.k) / s.stride + 1;
    KernelCase c{"GraftConv", {rnd(rng, {s.n, s.h, s.w, s.c}), rnd(rng, {s.c, s.k, s.k, 1}), rnd(rng, {s.c}),
                               rnd(rng, {s.n, oh, ow, s.c})}};
    set_graft_conv_attrs(c, "NHWC", "Relu", s.c, s.k, s.stride, pad);
    c.attrs.set("input_activation", std::string(s.in_act));
    c.attrs.set("input_clip_min", s.lo);
    c.attrs.set("input_clip_max", s.hi);
    c.tol32 = 1e-5;
    c.label = std::string("input ") + s.in_act + " k " + std::to_string(s.k) + " stride " + std::to_string(s.stride);
    run_kernel_case(c, DataType::kFloat32, seed);
    run_kernel_case(c, DataType::kFloat16, seed);
    for (DataType dt : {DataType::kFloat32, DataType::kFloat16}) {
      run_timed_then_forced(c, dt, seed, 0, 2);
      run_timed_then_forced(c, dt, seed, 0, 6);
    }
    run_timed_then_forced(c, DataType::kFloat16, seed, 0, 8);
  }
}

// A square depthwise window over an hw x hw image of c channels, padded by k / 2.
cuda::k::Window2d dw(int64_t n, int64_t hw, int64_t c, int64_t k, int64_t stride) {
  cuda::k::Window2d g;
  g.n = n; g.c = c; g.h = g.w = hw; g.kh = g.kw = k; g.sh = g.sw = stride;
  g.ph = g.pw = g.peh = g.pew = k / 2;
  g.oh = g.ow = (hw + 2 * (k / 2) - k) / stride + 1;
  return g;
}

// What the shared-tile depthwise kernel (variant 8) takes, host side (no GPU needed): the engine
// only times or runs it where this says yes, and a plan naming it for anything else is refused.
TEST(CudaNn, SharedTileDepthwiseLimits) {
  using cuda::k::depthwise_nhwc_tile_supported;
  EXPECT_TRUE(depthwise_nhwc_tile_supported(cuda::k::KType::kF16, dw(32, 56, 144, 3, 1)));   // MobileNetV2 features.3
  EXPECT_TRUE(depthwise_nhwc_tile_supported(cuda::k::KType::kF16, dw(32, 112, 96, 3, 2)));   // features.2, stride 2
  EXPECT_TRUE(depthwise_nhwc_tile_supported(cuda::k::KType::kBF16, dw(32, 14, 672, 5, 1)));  // EfficientNet-B0's 5x5
  EXPECT_FALSE(depthwise_nhwc_tile_supported(cuda::k::KType::kF32, dw(32, 56, 144, 3, 1)));  // 16-bit types only
  EXPECT_TRUE(depthwise_nhwc_tile_supported(cuda::k::KType::kF16, dw(32, 56, 96, 7, 1)));    // ConvNeXt's 7x7
  EXPECT_FALSE(depthwise_nhwc_tile_supported(cuda::k::KType::kF16, dw(32, 56, 96, 7, 2)));   // 7x7 at stride 2
  EXPECT_TRUE(depthwise_nhwc_tile_supported(cuda::k::KType::kF16, dw(32, 28, 72, 3, 1)));    // MobileNetV3: chunks of 8
  EXPECT_FALSE(depthwise_nhwc_tile_supported(cuda::k::KType::kF16, dw(32, 56, 20, 3, 1)));   // not a multiple of 8
  EXPECT_FALSE(depthwise_nhwc_tile_supported(cuda::k::KType::kF16, dw(32, 56, 144, 3, 3)));  // stride 3
  cuda::k::Window2d dilated = dw(2, 20, 32, 3, 1);
  dilated.dh = dilated.dw = 2;
  EXPECT_FALSE(depthwise_nhwc_tile_supported(cuda::k::KType::kF16, dilated));
  cuda::k::Window2d rect = dw(2, 20, 32, 3, 1);
  rect.kw = 5;  // not square
  EXPECT_FALSE(depthwise_nhwc_tile_supported(cuda::k::KType::kF16, rect));
  EXPECT_FALSE(depthwise_nhwc_tile_supported(cuda::k::KType::kF16, dw(int64_t{1} << 12, 256, 512, 3, 1)));  // 2^37 elements
  EXPECT_FALSE(depthwise_nhwc_tile_supported(cuda::k::KType::kF16, dw(1, 8, int64_t{16} * 65536, 3, 1)));    // 65536 chunks
}

// The host-side choices behind the kernels above (no GPU needed): where an untuned depthwise
// problem takes the row-tiled kernel, and which global pools split their plane across blocks. The
// shapes are the H200 profiles' (float16, NHWC) that set the thresholds.
TEST(CudaNn, DepthwiseAndGlobalPoolLaunchChoices) {
  // ConvNeXt-T's 7x7 over 96 channels at 56x56: tiled at batch 32 and 8, per pixel at batch 1.
  EXPECT_TRUE(cuda::k::depthwise_nhwc_row_tiled_preferred(dw(32, 56, 96, 7, 1)));
  EXPECT_TRUE(cuda::k::depthwise_nhwc_row_tiled_preferred(dw(8, 56, 96, 7, 1)));
  EXPECT_FALSE(cuda::k::depthwise_nhwc_row_tiled_preferred(dw(1, 56, 96, 7, 1)));
  // EfficientNet-B0's 3x3 over 144 channels at 56x56 (batch 32: tiled) and 480 at 14x14 (slower tiled).
  EXPECT_TRUE(cuda::k::depthwise_nhwc_row_tiled_preferred(dw(32, 56, 144, 3, 1)));
  EXPECT_FALSE(cuda::k::depthwise_nhwc_row_tiled_preferred(dw(32, 14, 480, 3, 1)));
  EXPECT_FALSE(cuda::k::depthwise_nhwc_row_tiled_preferred(dw(1, 112, 32, 3, 1)));
  // What the kernel cannot take is never preferred: dilation, 4x4 filters, channels not a multiple of 8.
  cuda::k::Window2d dilated = dw(32, 56, 96, 3, 1);
  dilated.dh = dilated.dw = 2;
  EXPECT_FALSE(cuda::k::depthwise_nhwc_row_tiled_supported(dilated));
  EXPECT_FALSE(cuda::k::depthwise_nhwc_row_tiled_supported(dw(32, 56, 96, 4, 1)));
  EXPECT_FALSE(cuda::k::depthwise_nhwc_row_tiled_supported(dw(32, 56, 20, 3, 1)));
  EXPECT_FALSE(cuda::k::depthwise_nhwc_row_tiled_preferred(dw(32, 56, 20, 3, 1)));
  // Global pools: EfficientNet's first SE pool (32 channels over 112x112) splits at batch 32 and 1;
  // its 56x56 pool over 96 channels (96 blocks) and any small plane do not.
  EXPECT_GT(cuda::k::global_pool_nhwc_workspace(32, 112 * 112, 32), 0u);
  EXPECT_GT(cuda::k::global_pool_nhwc_workspace(1, 112 * 112, 32), 0u);
  EXPECT_EQ(cuda::k::global_pool_nhwc_workspace(32, 56 * 56, 96), 0u);
  EXPECT_EQ(cuda::k::global_pool_nhwc_workspace(1, 7 * 7, 1280), 0u);
}

// The cuDNN path (not depthwise) with graft's epilogue kernel applying Clip, Silu, Sigmoid and HardSigmoid, both layouts.
TEST(CudaNn, GraftConvClipAndSiluEpilogues) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (const char* layout : {"NCHW", "NHWC"})
    for (const char* act : {"Clip", "Silu", "Sigmoid", "HardSigmoid"}) {
      const bool nhwc = std::string(layout) == "NHWC";
      const std::vector<int64_t> x = nhwc ? std::vector<int64_t>{2, 7, 6, 8} : std::vector<int64_t>{2, 8, 7, 6};
      const std::vector<int64_t> w = nhwc ? std::vector<int64_t>{16, 3, 3, 8} : std::vector<int64_t>{16, 8, 3, 3};
      KernelCase c{"GraftConv", {rnd(rng, x), rnd(rng, w), rnd(rng, {16})}};
      c.attrs.set("layout", std::string(layout));
      c.attrs.set("activation", std::string(act));
      c.attrs.set("clip_min", -0.3f);
      c.attrs.set("clip_max", 0.4f);
      c.attrs.set("hardsigmoid_alpha", 1.f / 6.f);
      c.attrs.set("hardsigmoid_beta", 0.5f);
      c.attrs.set("kernel_shape", std::vector<int64_t>{3, 3});
      c.attrs.set("pads", std::vector<int64_t>{1, 1, 1, 1});
      c.tol32 = 1e-4;
      c.label = std::string(layout) + " " + act;
      run_kernel_case(c, DataType::kFloat32, seed);
      run_kernel_case(c, DataType::kFloat16, seed);
    }
}

// GraftPool over NHWC: 16 and 24 channels take the 16-byte-lane kernel in both float types (8
// halves, 4 floats), 12 channels only in float32, 5 channels the scalar kernel; each with the
// padding, ceil-mode end pads, dilation and count_include_pad variants of the NCHW pools.
TEST(CudaNn, GraftPoolNhwc) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (int64_t channels : {16, 24, 12, 5})
    for (const char* pool : {"MaxPool", "AveragePool"})
      for (int variant = 0; variant < 4; ++variant) {
        KernelCase c{"GraftPool", {rnd(rng, {2, 11, 10, channels})}};
        c.attrs.set("layout", std::string("NHWC"));
        c.attrs.set("pool", std::string(pool));
        c.attrs.set("kernel_shape", std::vector<int64_t>{3, 2});
        c.attrs.set("strides", std::vector<int64_t>{2, 2});
        if (variant >= 1) c.attrs.set("pads", std::vector<int64_t>{1, 0, 1, 1});
        if (variant >= 2) c.attrs.set("ceil_mode", int64_t{1});
        if (variant == 3 && std::string(pool) == "AveragePool") c.attrs.set("count_include_pad", int64_t{1});
        if (variant == 3 && std::string(pool) == "MaxPool") c.attrs.set("dilations", std::vector<int64_t>{2, 1});
        c.label = std::string(pool) + " c " + std::to_string(channels) + " variant " + std::to_string(variant);
        run_float_dtypes(c, seed);
      }
}

// GraftPool's global pools over NHWC: planes large enough that the kernel splits them across blocks
// (float partials in the op's workspace, combined by a second kernel; the harness poisons the
// workspace), odd channel counts that leave a block's lanes idle, and a plane too small to split.
// Channel counts that are multiples of 16 bytes take the vector kernel: one vector per pixel (8
// halves), two (many row groups per block), nine (lanes that do not divide the block), 160 (a
// second block of channels, partly past the end), and a sliced plane through it. MobileNetV3's
// squeeze-excitation shapes at batch 32: 30 vectors in lanes narrowed to 4 (the last block of
// channels partial), and 2 vectors over a 56x56 plane in slices; one image of 576 channels narrowed
// without slicing; three vectors over a plane just past the slicing threshold.
TEST(CudaNn, GraftPoolGlobalNhwc) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const std::vector<std::vector<int64_t>> shapes = {{2, 40, 37, 40}, {3, 64, 64, 8}, {1, 113, 100, 3}, {2, 3, 3, 5},
                                                    {2, 56, 56, 16}, {2, 14, 14, 72}, {3, 7, 7, 1280},
                                                    {1, 70, 70, 24}, {32, 14, 14, 240}, {32, 56, 56, 16},
                                                    {1, 7, 7, 576}, {4, 33, 35, 24}};
  for (const auto& shape : shapes)
    for (const char* pool : {"GlobalAveragePool", "GlobalMaxPool"}) {
      KernelCase c{"GraftPool", {rnd(rng, shape)}};
      c.attrs.set("layout", std::string("NHWC"));
      c.attrs.set("pool", std::string(pool));
      c.label = std::string(pool) + " plane " + std::to_string(shape[1]) + "x" + std::to_string(shape[2]) + " c " +
                std::to_string(shape[3]);
      run_float_dtypes(c, seed);
    }
}

TEST(CudaNn, Pools) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (const char* op : {"MaxPool", "AveragePool"})
    for (int variant = 0; variant < 4; ++variant) {
      KernelCase c{op, {rnd(rng, {2, 3, 11, 10})}};
      c.attrs.set("kernel_shape", std::vector<int64_t>{3, 2});
      c.attrs.set("strides", std::vector<int64_t>{2, 2});
      if (variant >= 1) c.attrs.set("pads", std::vector<int64_t>{1, 0, 1, 1});
      if (variant >= 2) c.attrs.set("ceil_mode", int64_t{1});
      if (variant == 3 && std::string(op) == "AveragePool") c.attrs.set("count_include_pad", int64_t{1});
      if (variant == 3 && std::string(op) == "MaxPool") c.attrs.set("dilations", std::vector<int64_t>{2, 1});
      c.label = "variant " + std::to_string(variant);
      run_float_dtypes(c, seed);
    }
  run_float_dtypes(KernelCase{"GlobalAveragePool", {rnd(rng, {2, 5, 7, 9})}}, seed);
  run_float_dtypes(KernelCase{"GlobalMaxPool", {rnd(rng, {2, 5, 7, 9})}}, seed);
  KernelCase bn{"BatchNormalization", {rnd(rng, {2, 5, 4, 3}), rnd(rng, {5}), rnd(rng, {5}), rnd(rng, {5}), rnd(rng, {5}, 0.5, 2)}};
  bn.attrs.set("epsilon", 1e-3f);
  run_float_dtypes(bn, seed);
}

TEST(CudaReduceNorm, Softmax) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (const char* op : {"Softmax", "LogSoftmax"})
    for (int opset : {11, 13})
      for (int64_t axis : {-1, 0, 1, 2}) {
        KernelCase c{op, {rnd(rng, {3, 4, 5, 6}, -4, 4)}, {}, opset};
        c.attrs.set("axis", axis);
        c.label = "opset " + std::to_string(opset) + " axis " + std::to_string(axis);
        run_float_dtypes(c, seed);
      }
  run_float_dtypes(KernelCase{"Softmax", {rnd(rng, {1000}, -4, 4)}}, seed);
}

TEST(CudaReduceNorm, LayerNormalization) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  {
    KernelCase c{"LayerNormalization", {rnd(rng, {3, 7, 33}), rnd(rng, {33}), rnd(rng, {33})}};
    run_float_dtypes(c, seed);
  }
  {
    KernelCase c{"LayerNormalization", {rnd(rng, {2, 3, 4, 5}), rnd(rng, {4, 5})}, {}, 17, 3};
    c.attrs.set("axis", int64_t{2});
    c.attrs.set("epsilon", 1e-3f);
    run_kernel_case(c, DataType::kFloat32, seed);
  }
}

TEST(CudaReduceNorm, Reduce) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const std::vector<std::vector<int64_t>> axes_sets = {{1}, {0, 2}, {-1}, {}, {1, 3, 4}};
  // A float32 sum of up to 360 terms in [-1, 1] is off from the float64 reference by up to about
  // 360 * 2^-24 (2e-5) per output, in whatever order the kernel adds: judged against the outputs'
  // own norm alone, a sum that cancels to near 0 fails by chance (1.3e-5 against 1e-5 once, under
  // compute-sanitizer's synccheck, 2026-12-06). The floor allows an RMS error of tol32 * 1 per
  // output, far below what a wrong reduction gives (order 1).
  const double sum_atol = 1.0;
  for (const char* op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"})
    for (const auto& axes : axes_sets)
      for (int64_t keep : {0, 1}) {
        // opset 18: axes as an input (host); opset 13: attribute.
        KernelCase c{op, {rnd(rng, {2, 3, 4, 5, 3})}, {}, 18};
        c.atol = sum_atol;
        if (!axes.empty()) c.inputs.push_back(Tensor::vector_int64(axes));
        c.attrs.set("keepdims", keep);
        c.label = "axes input, keepdims " + std::to_string(keep);
        run_float_dtypes(c, seed);
        if (std::string(op) == "ReduceSum") continue;  // ReduceSum takes axes as an input since 13
        KernelCase a{op, {rnd(rng, {7, 5, 6})}, {}, 13};
        a.atol = sum_atol;
        std::vector<int64_t> ax;
        for (int64_t v : axes) if (v < 3) ax.push_back(v);
        if (!ax.empty()) a.attrs.set("axes", ax);
        a.attrs.set("keepdims", keep);
        a.label = "axes attribute";
        run_float_dtypes(a, seed);
      }
}


// Warp-per-row Softmax / LayerNormalization: rows of odd length (per-element groups), a multiple
// of the 16-byte group (vector loads), the 1024 limit, and just above it (the block kernel); and
// short rows, several per warp, for both.
TEST(CudaReduceNorm, RowKernels) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const std::vector<std::vector<int64_t>> shapes = {{3, 5, 197}, {2, 3, 64}, {4, 1024}, {2, 1025}, {7, 1}, {5, 40}, {9, 33}};
  // Short rows (several rows per warp): vector groups of 1..16 lanes, per-element lanes, and row
  // counts that leave a warp part-empty.
  const std::vector<std::vector<int64_t>> short_rows = {{1001, 16}, {37, 8}, {13, 3}, {300, 32}, {333, 12}, {5, 2},
                                                        {3, 7, 128}, {65, 5}};
  for (const char* op : {"Softmax", "LogSoftmax"})
    for (const auto& d : short_rows) {
      KernelCase c{op, {rnd(rng, d, -6, 6)}};
      c.attrs.set("axis", int64_t{-1});
      run_float_dtypes(c, seed, /*bf16=*/true);
    }
  for (const char* op : {"Softmax", "LogSoftmax"})
    for (const auto& d : shapes) {
      KernelCase c{op, {rnd(rng, d, -6, 6)}};
      c.attrs.set("axis", int64_t{-1});
      run_float_dtypes(c, seed, /*bf16=*/true);
    }
  // LayerNormalization over short rows too (the sub-warp kernel: Swin's and ConvNeXt's 96 channels
  // in float16 are 12 groups of 8 on 16 lanes, two rows per warp).
  std::vector<std::vector<int64_t>> ln_shapes = shapes;
  ln_shapes.insert(ln_shapes.end(), short_rows.begin(), short_rows.end());
  ln_shapes.push_back({51, 96});
  for (const auto& d : ln_shapes) {
    const int64_t inner = d.back();
    KernelCase c{"LayerNormalization", {rnd(rng, d, -3, 5), rnd(rng, {inner}, 0.5, 2), rnd(rng, {inner})}};
    run_float_dtypes(c, seed, /*bf16=*/true);
    KernelCase nb{"LayerNormalization", {rnd(rng, d, -3, 5), rnd(rng, {inner}, 0.5, 2)}, {}, 17, 3};  // no bias, Mean/InvStdDev
    nb.attrs.set("epsilon", 1e-3f);
    run_kernel_case(nb, DataType::kFloat32, seed);
  }
  {  // normalized block of two axes (inner 8 * 24 = 192)
    KernelCase c{"LayerNormalization", {rnd(rng, {3, 8, 24}), rnd(rng, {8, 24}), rnd(rng, {8, 24})}};
    c.attrs.set("axis", int64_t{1});
    run_float_dtypes(c, seed);
  }
}

}  // namespace
}  // namespace graft::testing
