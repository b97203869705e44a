// Cases for MultiScaleDeformableAttention and its TensorRT OSS layout
// (MultiscaleDeformableAttnPlugin_TRT): value (N,S,M,D), spatial_shapes (L,2), level_start_index (L),
// sampling_locations (N,Lq,M,L,P,2), attention_weights (N,Lq,M,L,P).
//
// The independent reference below follows grid_sample's definition (normalized grid 2*loc-1,
// unnormalized with align_corners=False, bilinear with zero padding), not the kernel's pixel
// arithmetic; the extra tests check the alias, the shape function's errors and the runtime checks.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>
#include <utility>

#include "graft/registry.h"
#include "harness.h"

namespace graft::optest {

namespace {

using Levels = std::vector<std::pair<int64_t, int64_t>>;  // (H, W) per level

struct MsdaShape {
  int64_t n, m, d, lq, p;
  Levels levels;
  double loc_lo = -0.1, loc_hi = 1.1;  // slightly outside [0, 1]: exercises the zero padding
};

int64_t rows_of(const Levels& lv) {
  int64_t s = 0;
  for (auto& [h, w] : lv) s += h * w;
  return s;
}

OpCase msda_case(std::string label, const MsdaShape& z, bool trt_output) {
  const int64_t l = static_cast<int64_t>(z.levels.size()), s = rows_of(z.levels);
  std::vector<double> shapes, starts;
  int64_t start = 0;
  for (auto& [h, w] : z.levels) {
    shapes.push_back(static_cast<double>(h));
    shapes.push_back(static_cast<double>(w));
    starts.push_back(static_cast<double>(start));
    start += h * w;
  }
  OpCase k;
  k.label = std::move(label);
  k.inputs = {{{z.n, s, z.m, z.d}, -2.0, 2.0},
              {{l, 2}, 0, 0, false, shapes},
              {{l}, 0, 0, false, starts},
              {{z.n, z.lq, z.m, l, z.p, 2}, z.loc_lo, z.loc_hi},
              {{z.n, z.lq, z.m, l, z.p}, 0.0, 1.0}};
  k.output_dims = {trt_output ? std::vector<int64_t>{z.n, z.lq, z.m, z.d} : std::vector<int64_t>{z.n, z.lq, z.m * z.d}};
  // Bilinear sampling has kinks at pixel centres (and the zero border): a step of 1e-5 straddles
  // one for ~1e-4 of the location elements, enough to make a run fail now and then. 1e-7 makes that
  // ~100x rarer; the loss (a few hundred O(1) terms) still leaves differences ~1e-7 accurate.
  k.fd_step = 1e-7;
  k.fd_tolerance = 1e-5;
  // A location whose pixel coordinate x*W - 0.5 lies within float32 rounding of an integer sits on
  // a kink: the float32 kernel and the float64 reference may then pick neighbouring cells and their
  // location gradients differ by O(1) (a run in twenty failed this way on the GPU). Such draws are
  // moved 1e-2 px off the line; the values stay random everywhere else.
  k.adjust_inputs = [levels = z.levels, points = z.p](std::vector<Tensor>& ins) {
    Tensor& loc = ins[3];
    const int64_t nl = static_cast<int64_t>(levels.size());
    for (int64_t i = 0; i < loc.numel(); ++i) {
      const int64_t level = (i / 2 / points) % nl;
      const double extent = static_cast<double>(i % 2 == 0 ? levels[level].second : levels[level].first);
      for (int attempt = 0; attempt < 8; ++attempt) {
        const double px = loc.get(i) * extent - 0.5;
        if (std::fabs(px - std::round(px)) >= 1e-3) break;
        loc.set(i, loc.get(i) + 1e-2 / extent * (attempt + 1));
      }
    }
  };
  return k;
}

std::vector<std::pair<std::string, MsdaShape>> shared_shapes() {
  return {
      {"basic", {2, 2, 4, 5, 3, {{3, 4}, {2, 2}}}},
      {"odd_channels_three_levels", {1, 3, 5, 7, 2, {{5, 3}, {2, 7}, {1, 1}}}},
      {"one_channel", {2, 4, 1, 6, 4, {{4, 4}, {2, 3}}}},
      {"two_channels", {2, 3, 2, 4, 2, {{3, 3}, {2, 1}}}},
      {"many_levels_and_points", {1, 2, 3, 4, 8, {{6, 5}, {3, 3}, {2, 2}, {1, 2}, {1, 1}}}},
      {"large_d96", {1, 1, 96, 3, 2, {{4, 6}, {2, 3}}}},
      // Odd D > 32 channels: the CUDA backward's one-channel chunks, each of 32 lanes looping over 9 or 8.
      {"odd_d257", {1, 2, 257, 3, 2, {{4, 5}, {2, 2}}}},
      {"inside_unit_square_d8", {1, 2, 8, 16, 4, {{8, 8}, {4, 4}}, 0.0, 1.0}},
      {"far_outside", {1, 2, 4, 6, 3, {{4, 5}, {2, 2}}, -1.0, 2.0}},
      {"detr_like_small", {2, 8, 32, 50, 4, {{10, 15}, {5, 8}, {3, 4}, {2, 2}}}},
  };
}

// grid_sample(input (H, W) of one channel, grid 2*loc-1, bilinear, zeros, align_corners=False).
double grid_sample_one(const std::vector<double>& value, int64_t n, int64_t s, int64_t m, int64_t heads, int64_t d,
                       int64_t c, int64_t start, int64_t h, int64_t w, double loc_x, double loc_y) {
  const double gx = 2.0 * loc_x - 1.0, gy = 2.0 * loc_y - 1.0;
  const double ix = ((gx + 1.0) * static_cast<double>(w) - 1.0) / 2.0;
  const double iy = ((gy + 1.0) * static_cast<double>(h) - 1.0) / 2.0;
  auto pixel = [&](int64_t y, int64_t x) -> double {
    if (y < 0 || x < 0 || y >= h || x >= w) return 0.0;
    return value[(((n * s) + start + y * w + x) * heads + m) * d + c];
  };
  const int64_t x0 = static_cast<int64_t>(std::floor(ix)), y0 = static_cast<int64_t>(std::floor(iy));
  const double tx = ix - std::floor(ix), ty = iy - std::floor(iy);
  return pixel(y0, x0) * (1 - tx) * (1 - ty) + pixel(y0, x0 + 1) * tx * (1 - ty) + pixel(y0 + 1, x0) * (1 - tx) * ty +
         pixel(y0 + 1, x0 + 1) * tx * ty;
}

ReferenceFn grid_sample_reference() {
  return [](const std::vector<std::vector<double>>& in, const std::vector<std::vector<int64_t>>& dims,
            const AttributeMap&) {
    const auto& vd = dims[0];
    const int64_t n = vd[0], s = vd[1], heads = vd[2], d = vd[3];
    const int64_t lq = dims[3][1], levels = dims[3][3], points = dims[3][4];
    std::vector<double> out(static_cast<size_t>(n * lq * heads * d), 0.0);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t q = 0; q < lq; ++q)
        for (int64_t m = 0; m < heads; ++m)
          for (int64_t c = 0; c < d; ++c) {
            double sum = 0.0;
            for (int64_t l = 0; l < levels; ++l) {
              const int64_t h = static_cast<int64_t>(in[1][2 * l]), w = static_cast<int64_t>(in[1][2 * l + 1]);
              const int64_t start = static_cast<int64_t>(in[2][l]);
              for (int64_t p = 0; p < points; ++p) {
                const int64_t si = (((b * lq + q) * heads + m) * levels + l) * points + p;
                sum += in[4][si] * grid_sample_one(in[0], b, s, m, heads, d, c, start, h, w, in[3][2 * si],
                                                   in[3][2 * si + 1]);
              }
            }
            out[((b * lq + q) * heads + m) * d + c] = sum;
          }
    return std::vector<std::vector<double>>{out};
  };
}

}  // namespace

OpCaseTable ms_deform_attn_cases() {
  OpCaseTable t;
  t.name = "MultiScaleDeformableAttention";
  for (auto& [label, z] : shared_shapes()) t.cases.push_back(msda_case(label, z, false));
  {
    OpCase k = msda_case("im2col_step_ignored", {2, 2, 4, 5, 2, {{3, 4}, {2, 2}}}, false);
    k.attrs.set("im2col_step", int64_t{1});
    t.cases.push_back(k);
  }
  AttributeMap zero_step;
  zero_step.set("im2col_step", int64_t{0});
  t.bad_attributes.push_back({"im2col_step_zero", zero_step, {}, "im2col_step"});
  t.reference = grid_sample_reference();
  return t;
}

OpCaseTable ms_deform_attn_trt_cases() {
  OpCaseTable t;
  t.name = "MultiscaleDeformableAttnPlugin_TRT";
  for (auto& [label, z] : shared_shapes()) t.cases.push_back(msda_case(label, z, true));
  t.reference = grid_sample_reference();
  return t;
}

// ---- op-specific checks ---------------------------------------------------------------------
namespace {

std::vector<std::optional<std::vector<int64_t>>> dims_of(std::vector<std::vector<int64_t>> d) {
  return {d.begin(), d.end()};
}

// A small consistent call: levels 3x4 and 2x2 (S = 16), N=2, M=2, D=3, Lq=5, P=2.
const std::vector<std::vector<int64_t>> kGood = {{2, 16, 2, 3}, {2, 2}, {2}, {2, 5, 2, 2, 2, 2}, {2, 5, 2, 2, 2}};

}  // namespace

TEST(MsDeformAttn, MmdeployAliasFindsTheOp) {
  auto found = OpRegistry::global().find("mmdeploy", "MMCVMultiScaleDeformableAttention", "1", "");
  ASSERT_TRUE(found.is_ok()) << found.status().to_string();
  EXPECT_EQ((*found)->name(), "MultiScaleDeformableAttention");
  auto trt = OpRegistry::global().find("", "MultiscaleDeformableAttnPlugin_TRT", "1", "");
  ASSERT_TRUE(trt.is_ok()) << trt.status().to_string();
  EXPECT_EQ((*trt)->inputs()[1].dtypes, std::vector<DataType>{DataType::kInt32});
}

TEST(MsDeformAttn, ShapeFunctionNamesTheBadInput) {
  auto def = OpRegistry::global().find("ai.onnx.contrib", "MultiScaleDeformableAttention", "1", "");
  ASSERT_TRUE(def.is_ok());
  AttributeMap attrs;
  ASSERT_TRUE((*def)->validate_attributes(attrs).is_ok());
  auto ok = infer_concrete_shapes(**def, dims_of(kGood), attrs);
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  EXPECT_EQ((*ok)[0], (std::vector<int64_t>{2, 5, 6}));

  struct Bad {
    int input;
    std::vector<int64_t> dims;
    std::string names;
  };
  const std::vector<Bad> bad = {
      {0, {2, 16, 6}, "'value'"},                          // rank 3
      {1, {2, 3}, "'spatial_shapes'"},                     // not (L, 2)
      {2, {3}, "'level_start_index'"},                     // L disagrees
      {3, {2, 5, 2, 3, 2, 2}, "'sampling_locations'"},     // L disagrees
      {3, {2, 5, 4, 2, 2, 2}, "'sampling_locations'"},     // M disagrees with value
      {3, {3, 5, 2, 2, 2, 2}, "'sampling_locations'"},     // N disagrees with value
      {3, {2, 5, 2, 2, 2, 3}, "'sampling_locations'"},     // not (x, y)
      {4, {2, 5, 2, 2, 3}, "'attention_weights'"},         // P disagrees
      {4, {2, 6, 2, 2, 2}, "'attention_weights'"},         // Lq disagrees
  };
  for (const Bad& b : bad) {
    auto dims = kGood;
    dims[b.input] = b.dims;
    auto r = infer_concrete_shapes(**def, dims_of(dims), attrs);
    ASSERT_FALSE(r.is_ok()) << "accepted input " << b.input << " with a bad shape";
    EXPECT_NE(r.status().to_string().find(b.names), std::string::npos) << r.status().to_string();
  }
}

TEST(MsDeformAttn, TrtLayoutHasFourDimensionalOutput) {
  auto def = OpRegistry::global().find("ai.onnx.contrib", "MultiscaleDeformableAttnPlugin_TRT", "1", "");
  ASSERT_TRUE(def.is_ok());
  auto r = infer_concrete_shapes(**def, dims_of(kGood), AttributeMap());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0], (std::vector<int64_t>{2, 5, 2, 3}));
}

// Levels that do not fit in value's S rows must be an error naming the input, never a read past
// the buffer.
TEST(MsDeformAttn, CpuKernelRefusesLevelsBeyondValue) {
  auto def = OpRegistry::global().find("ai.onnx.contrib", "MultiScaleDeformableAttention", "1", "");
  ASSERT_TRUE(def.is_ok());
  AttributeMap attrs;
  ASSERT_TRUE((*def)->validate_attributes(attrs).is_ok());
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  auto rnd = [&](std::vector<int64_t> d) {
    Tensor t = Tensor::empty(DataType::kFloat32, d);
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, u(rng));
    return t;
  };
  Tensor value = rnd(kGood[0]), locs = rnd(kGood[3]), weights = rnd(kGood[4]);
  Tensor out = Tensor::empty(DataType::kFloat32, {2, 5, 6});
  for (auto [shapes, starts, names] :
       {std::tuple{std::vector<int64_t>{3, 4, 3, 3}, std::vector<int64_t>{0, 12}, "'level_start_index'"},
        std::tuple{std::vector<int64_t>{3, 4, 2, 2}, std::vector<int64_t>{0, 13}, "'level_start_index'"},
        std::tuple{std::vector<int64_t>{3, -4, 2, 2}, std::vector<int64_t>{0, 12}, "'spatial_shapes'"}}) {
    Tensor sh = Tensor::vector_int64(shapes).reshaped({2, 2}), st = Tensor::vector_int64(starts);
    KernelContext ctx;
    ctx.attrs = &attrs;
    ctx.inputs = {value.view(), sh.view(), st.view(), locs.view(), weights.view()};
    ctx.outputs = {out.view()};
    Status s = (*def)->run(Backend::kCPU, ctx);
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.to_string().find(names), std::string::npos) << s.to_string();
  }
}

std::vector<OpCaseTable> ms_deform_attn_case_tables() { return {ms_deform_attn_cases(), ms_deform_attn_trt_cases()}; }

}  // namespace graft::optest
