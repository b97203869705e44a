// RoiAlign and GridSample (builtin ONNX ops; kernels in src/ops/sampling/roi_align.cpp and grid_sample.cpp): values worked
// out by hand, every mode/padding/alignment combination on random data (never zeros) against a
// naive formula written here, poisoned outputs, out-of-range rois and grids, float16, opset rules,
// and bad attributes and inputs through the engine (errors name the node and the attribute).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "graft/engine.h"
#include "onnx_model_builder.h"
#include "op_test_util.h"

namespace graft {
namespace {

using testing::OneNode;
using testing::OnnxModelBuilder;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Fresh per run; GRAFT_TEST_SEED=N replays the run a failure printed.
uint32_t test_seed() {
  static const uint32_t seed = [] {
    const char* given = std::getenv("GRAFT_TEST_SEED");
    return given && *given ? static_cast<uint32_t>(std::strtoul(given, nullptr, 10)) : std::random_device{}();
  }();
  return seed;
}

Tensor f32(std::vector<int64_t> dims, std::vector<double> v) { return Tensor::from_doubles(DataType::kFloat32, dims, v); }
Tensor i64(std::vector<int64_t> v) {
  return Tensor::from_doubles(DataType::kInt64, {static_cast<int64_t>(v.size())},
                              std::vector<double>(v.begin(), v.end()));
}

std::vector<double> values(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) out[static_cast<size_t>(i)] = t.get(i);
  return out;
}

// Max |got - want| relative to max(1, |want|).
double max_rel_error(const std::vector<double>& got, const std::vector<double>& want) {
  double e = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i])) return INFINITY;
    e = std::max(e, std::fabs(got[i] - want[i]) / std::max(1.0, std::fabs(want[i])));
  }
  return e;
}

// =================================================================================================
// RoiAlign reference, from the definition: bins of (roi extent / output extent), a grid of samples
// per bin, each sample bilinear with coordinates clamped at the map's edge and nothing read for a
// point more than one pixel outside. ONNX's max takes the largest weighted corner term.
// =================================================================================================
struct RoiRef {
  std::string mode = "avg";
  bool half_pixel = true;
  int64_t oh = 1, ow = 1, ratio = 0;
  double scale = 1.0;
  bool mmcv_max = false;
};

std::vector<double> roi_align_ref(const std::vector<double>& x, const std::vector<int64_t>& xd,
                                  const std::vector<double>& rois, const std::vector<int64_t>& batch, const RoiRef& r) {
  const int64_t C = xd[1], H = xd[2], W = xd[3], K = static_cast<int64_t>(batch.size());
  std::vector<double> y(static_cast<size_t>(K * C * r.oh * r.ow));
  for (int64_t k = 0; k < K; ++k) {
    const double shift = r.half_pixel ? -0.5 : 0.0;
    const double sx = rois[k * 4] * r.scale + shift, sy = rois[k * 4 + 1] * r.scale + shift;
    double rw = rois[k * 4 + 2] * r.scale + shift - sx, rh = rois[k * 4 + 3] * r.scale + shift - sy;
    if (!r.half_pixel) rw = std::max(1.0, rw), rh = std::max(1.0, rh);
    const double bh = rh / r.oh, bw = rw / r.ow;
    const int64_t gy = r.ratio > 0 ? r.ratio : static_cast<int64_t>(std::max(0.0, std::ceil(bh)));
    const int64_t gx = r.ratio > 0 ? r.ratio : static_cast<int64_t>(std::max(0.0, std::ceil(bw)));
    for (int64_t c = 0; c < C; ++c) {
      auto px = [&](int64_t yy, int64_t xx) { return x[static_cast<size_t>(((batch[k] * C + c) * H + yy) * W + xx)]; };
      for (int64_t i = 0; i < r.oh; ++i)
        for (int64_t j = 0; j < r.ow; ++j) {
          double sum = 0, best = 0;
          int n = 0;
          for (int64_t a = 0; a < gy; ++a)
            for (int64_t b = 0; b < gx; ++b) {
              // In the order of ONNX's reference implementation (start + bin * size + (a + 0.5) *
              // size / grid): a sample can fall exactly on the map's edge (y == H is inside), and
              // another order rounds it past (float16 rois of seed 883087770 put one at 7.0).
              double py = sy + i * bh + (a + 0.5) * bh / gy, pxx = sx + j * bw + (b + 0.5) * bw / gx;
              double terms[4] = {0, 0, 0, 0};
              if (py >= -1.0 && py <= H && pxx >= -1.0 && pxx <= W) {
                py = std::min(std::max(py, 0.0), static_cast<double>(H - 1));
                pxx = std::min(std::max(pxx, 0.0), static_cast<double>(W - 1));
                const int64_t y0 = static_cast<int64_t>(std::floor(py)), x0 = static_cast<int64_t>(std::floor(pxx));
                const int64_t y1 = std::min(y0 + 1, H - 1), x1 = std::min(x0 + 1, W - 1);
                const double fy = py - y0, fx = pxx - x0;
                terms[0] = (1 - fy) * (1 - fx) * px(y0, x0);
                terms[1] = (1 - fy) * fx * px(y0, x1);
                terms[2] = fy * (1 - fx) * px(y1, x0);
                terms[3] = fy * fx * px(y1, x1);
              }
              const double interp = terms[0] + terms[1] + terms[2] + terms[3];
              sum += interp;
              const double v = r.mmcv_max ? interp : *std::max_element(terms, terms + 4);
              best = n == 0 ? v : std::max(best, v);
              ++n;
            }
          y[static_cast<size_t>(((k * C + c) * r.oh + i) * r.ow + j)] =
              r.mode == "avg" ? sum / std::max<int64_t>(1, gy * gx) : best;
        }
    }
  }
  return y;
}

Result<std::vector<Tensor>> run_roi(const Tensor& x, const Tensor& rois, const Tensor& bi, const RoiRef& r, int opset,
                                    bool set_ctm = true) {
  OneNode n("RoiAlign", {x, rois, bi});
  n.node->attrs.set("mode", r.mode);
  n.node->attrs.set("output_height", r.oh);
  n.node->attrs.set("output_width", r.ow);
  n.node->attrs.set("sampling_ratio", r.ratio);
  n.node->attrs.set("spatial_scale", static_cast<float>(r.scale));
  if (set_ctm) n.node->attrs.set("coordinate_transformation_mode", std::string(r.half_pixel ? "half_pixel" : "output_half_pixel"));
  return n.run(opset);
}

TEST(RoiAlign, HandValues) {
  // X = [[1, 2], [3, 4]]; roi (0, 0, 1, 1) with one sample per bin.
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor rois = f32({1, 4}, {0, 0, 1, 1});
  RoiRef r;
  r.ratio = 1;
  // half_pixel: the roi spans [-0.5, 0.5]; its one sample sits on pixel (0, 0).
  auto y = run_roi(x, rois, i64({0}), r, 16);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_FLOAT_EQ(y.value()[0].get(0), 1.0f);
  // output_half_pixel: [0, 1], the sample at (0.5, 0.5) averages the four pixels.
  r.half_pixel = false;
  y = run_roi(x, rois, i64({0}), r, 16);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_FLOAT_EQ(y.value()[0].get(0), 2.5f);
  // Opset 10 has no coordinate_transformation_mode and behaves as output_half_pixel.
  y = run_roi(x, rois, i64({0}), r, 10, /*set_ctm=*/false);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_FLOAT_EQ(y.value()[0].get(0), 2.5f);
  // Opset 16 without the attribute: half_pixel.
  y = run_roi(x, rois, i64({0}), r, 16, /*set_ctm=*/false);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_FLOAT_EQ(y.value()[0].get(0), 1.0f);
  // max (ONNX): the largest weighted corner term of the sample at (0.5, 0.5): 0.25 * 4.
  r.mode = "max";
  y = run_roi(x, rois, i64({0}), r, 16);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_FLOAT_EQ(y.value()[0].get(0), 1.0f);
  // A roi entirely outside the map samples nothing: 0.
  r.mode = "avg";
  y = run_roi(x, f32({1, 4}, {10, 10, 12, 12}), i64({0}), r, 16);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_FLOAT_EQ(y.value()[0].get(0), 0.0f);
}

TEST(RoiAlign, EveryModeOnRandomDataMatchesTheDefinition) {
  std::mt19937 rng(test_seed());
  SCOPED_TRACE("seed " + std::to_string(test_seed()));
  const std::vector<int64_t> xd = {2, 3, 7, 9};
  for (DataType dt : {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16})
    for (const char* mode : {"avg", "max"})
      for (bool half_pixel : {true, false})
        for (int64_t ratio : {0, 1, 3})
          for (double scale : {1.0, 0.5}) {
            SCOPED_TRACE(std::string(dtype_name(dt)) + " " + mode + (half_pixel ? " half_pixel" : " output_half_pixel") +
                         " ratio " + std::to_string(ratio) + " scale " + std::to_string(scale));
            Tensor x = testing::random_tensor(dt, xd, rng, 0.25, 2.0);
            // Rois: inside, partly outside on every side, beyond the map, inverted (x2 < x1),
            // tiny (under a pixel), and large (adaptive sampling takes many samples).
            std::vector<double> rv = {1.0, 1.5, 6.0, 5.0,   -3.0, -2.0, 4.0, 3.0,  5.0, 3.0, 14.0, 11.0,
                                      20.0, 20.0, 30.0, 25.0, 6.0, 5.0, 2.0, 1.0,  3.2, 2.1, 3.6, 2.3,
                                      0.0, 0.0, 17.0, 13.0};
            std::uniform_real_distribution<double> jitter(-0.3, 0.3);
            for (double& v : rv) v += jitter(rng);
            const int64_t K = static_cast<int64_t>(rv.size() / 4);
            Tensor rois = Tensor::from_doubles(dt, {K, 4}, rv);
            std::vector<int64_t> batch;
            for (int64_t k = 0; k < K; ++k) batch.push_back((k * 5 + 1) % 2);
            RoiRef r;
            r.mode = mode;
            r.half_pixel = half_pixel;
            r.oh = 3;
            r.ow = 2;
            r.ratio = ratio;
            r.scale = scale;
            auto y = run_roi(x, rois, i64(batch), r, 16);
            ASSERT_TRUE(y.is_ok()) << y.status().to_string();
            ASSERT_EQ(y.value()[0].dims(), (std::vector<int64_t>{K, 3, 3, 2}));
            ASSERT_EQ(y.value()[0].dtype(), dt);
            // The reference reads the same (rounded) inputs.
            const auto want = roi_align_ref(values(x), xd, values(rois), batch, r);
            const double tol = dt == DataType::kFloat16 ? 2e-3 : dt == DataType::kFloat32 ? 1e-6 : 1e-12;
            EXPECT_LE(max_rel_error(values(y.value()[0]), want), tol);
          }
}

TEST(RoiAlign, BatchIndicesMayBeInt32AndRoisEmpty) {
  std::mt19937 rng(test_seed());
  Tensor x = testing::random_tensor(DataType::kFloat32, {2, 2, 4, 4}, rng, 0.5, 1.5);
  Tensor bi32 = Tensor::from_doubles(DataType::kInt32, {2}, {1, 0});
  Tensor rois = f32({2, 4}, {0.5, 0.5, 3.0, 2.5, 1.0, 0.0, 2.0, 3.5});
  RoiRef r;
  r.oh = r.ow = 2;
  auto y = run_roi(x, rois, bi32, r, 16);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_LE(max_rel_error(values(y.value()[0]), roi_align_ref(values(x), {2, 2, 4, 4}, values(rois), {1, 0}, r)), 1e-6);
  // No rois at all: an empty output.
  auto e = run_roi(x, Tensor::empty(DataType::kFloat32, {0, 4}), Tensor::empty(DataType::kInt64, {0}), r, 16);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ(e.value()[0].dims(), (std::vector<int64_t>{0, 2, 2, 2}));
}

TEST(RoiAlign, BadRoisAreErrorsNamingTheRoi) {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  RoiRef r;
  auto y = run_roi(x, f32({2, 4}, {0, 0, 1, 1, 0, 0, 1, 1}), i64({0, 1}), r, 16);
  ASSERT_FALSE(y.is_ok());
  EXPECT_TRUE(contains(y.status().to_string(), "roi 1 has batch index 1")) << y.status().to_string();
  y = run_roi(x, f32({1, 4}, {0, 0, 1, 1}), i64({-1}), r, 16);
  ASSERT_FALSE(y.is_ok());
  EXPECT_TRUE(contains(y.status().to_string(), "batch index -1")) << y.status().to_string();
  y = run_roi(x, f32({1, 4}, {0, NAN, 1, 1}), i64({0}), r, 16);
  ASSERT_FALSE(y.is_ok());
  EXPECT_TRUE(contains(y.status().to_string(), "non-finite")) << y.status().to_string();
  // Adaptive sampling of an absurd roi would take ~1e26 samples per bin: refused, not run.
  y = run_roi(x, f32({1, 4}, {0, 0, 1e13f, 1e13f}), i64({0}), r, 16);
  ASSERT_FALSE(y.is_ok());
  EXPECT_TRUE(contains(y.status().to_string(), "sampling_ratio")) << y.status().to_string();
  // Shapes: rois must be (K, 4), batch_indices (K).
  y = run_roi(x, f32({1, 5}, {0, 0, 0, 1, 1}), i64({0}), r, 16);
  ASSERT_FALSE(y.is_ok());
  EXPECT_TRUE(contains(y.status().to_string(), "rois")) << y.status().to_string();
  y = run_roi(x, f32({1, 4}, {0, 0, 1, 1}), i64({0, 0}), r, 16);
  ASSERT_FALSE(y.is_ok());
  EXPECT_TRUE(contains(y.status().to_string(), "num_rois")) << y.status().to_string();
}

// =================================================================================================
// GridSample reference, written per output point from the definition (ONNX's reference and
// PyTorch): unnormalize, then per axis the taps of the interpolation, each tap's index through the
// padding rule (reflection as a periodic fold of the integer index).
// =================================================================================================
struct GridRef {
  std::string mode = "linear";  // linear | nearest | cubic
  std::string padding = "zeros";
  bool align = false;
  bool torch_order = false;
};

int64_t floor_mod(int64_t a, int64_t m) { return ((a % m) + m) % m; }

// Index of integer position i on an axis of `size` after padding, or -1 for a zero.
int64_t padded_index(int64_t i, int64_t size, const GridRef& r) {
  if (r.padding == "zeros") return (i >= 0 && i < size) ? i : -1;
  if (r.padding == "border") return std::min(std::max<int64_t>(i, 0), size - 1);
  if (r.align) {  // mirror at the centres of the end pixels: period 2(size-1)
    if (size == 1) return 0;
    const int64_t m = floor_mod(i, 2 * (size - 1));
    return m <= size - 1 ? m : 2 * (size - 1) - m;
  }
  const int64_t m = floor_mod(i, 2 * size);  // mirror at the outer edges: period 2 size
  return m < size ? m : 2 * size - 1 - m;
}

// A continuous coordinate folded back into range (border clamps; reflection mirrors).
double padded_coordinate(double v, int64_t size, const GridRef& r) {
  const double s = static_cast<double>(size);
  if (r.padding == "border") return std::min(std::max(v, 0.0), s - 1);
  if (r.padding != "reflection") return v;
  if (r.align) {
    if (size == 1) return 0;
    const double period = 2 * (s - 1);
    double m = std::fmod(v, period);
    if (m < 0) m += period;
    return m <= s - 1 ? m : period - m;
  }
  const double period = 2 * s;
  double m = std::fmod(v + 0.5, period);
  if (m < 0) m += period;
  return (m <= s ? m : period - m) - 0.5;
}

double keys(double d) {
  const double a = -0.75;
  d = std::fabs(d);
  if (d <= 1) return (a + 2) * d * d * d - (a + 3) * d * d + 1;
  if (d < 2) return a * d * d * d - 5 * a * d * d + 8 * a * d - 4 * a;
  return 0;
}

std::vector<std::pair<int64_t, double>> taps_ref(double g, int64_t size, const GridRef& r, bool half_even) {
  const double s = static_cast<double>(size);
  double v = r.align ? (g + 1) * (s - 1) / 2 : ((g + 1) * s - 1) / 2;
  const double lo = r.align ? 0 : -0.5, hi = r.align ? s - 1 : s - 0.5;
  auto rnd = [&](double u) { return half_even ? std::nearbyint(u) : std::round(u); };
  std::vector<std::pair<int64_t, double>> t;
  if (r.mode == "nearest") {
    double u;
    if (r.torch_order) {
      u = padded_coordinate(v, size, r);
      if (r.padding == "reflection") u = std::min(std::max(u, 0.0), s - 1);
      u = rnd(u);
    } else {
      u = rnd(v);
      if (u < lo || u > hi) u = padded_coordinate(u, size, r);
    }
    t.push_back({padded_index(static_cast<int64_t>(u), size, r), 1.0});
    return t;
  }
  const bool pad_first = r.mode == "linear" || !r.torch_order;
  if (pad_first && (v < lo || v > hi)) v = padded_coordinate(v, size, r);
  const double f = std::floor(v), frac = v - f;
  if (r.mode == "linear") {
    t.push_back({padded_index(static_cast<int64_t>(f), size, r), 1 - frac});
    t.push_back({padded_index(static_cast<int64_t>(f) + 1, size, r), frac});
  } else {
    for (int k = -1; k <= 2; ++k) t.push_back({padded_index(static_cast<int64_t>(f) + k, size, r), keys(frac - k)});
  }
  return t;
}

// x (N, C, spatial...) with 2 or 3 spatial axes; grid (N, out..., k).
std::vector<double> grid_sample_ref(const std::vector<double>& x, const std::vector<int64_t>& xd,
                                    const std::vector<double>& grid, const std::vector<int64_t>& gd, const GridRef& r) {
  const int64_t N = xd[0], C = xd[1], k = static_cast<int64_t>(xd.size()) - 2;
  int64_t in_plane = 1, out_plane = 1;
  for (int64_t a = 0; a < k; ++a) in_plane *= xd[2 + a], out_plane *= gd[1 + a];
  std::vector<double> y(static_cast<size_t>(N * C * out_plane));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < out_plane; ++o) {
      std::vector<std::vector<std::pair<int64_t, double>>> axes(static_cast<size_t>(k));
      for (int64_t a = 0; a < k; ++a)  // the grid lists x (the last axis) first
        axes[static_cast<size_t>(a)] = taps_ref(grid[static_cast<size_t>((n * out_plane + o) * k + (k - 1 - a))],
                                                xd[2 + a], r, k == 2);
      for (int64_t c = 0; c < C; ++c) {
        double acc = 0;
        if (k == 2) {
          for (auto [iy, wy] : axes[0])
            for (auto [ix, wx] : axes[1])
              if (iy >= 0 && ix >= 0) acc += wy * wx * x[static_cast<size_t>((n * C + c) * in_plane + iy * xd[3] + ix)];
        } else {
          for (auto [iz, wz] : axes[0])
            for (auto [iy, wy] : axes[1])
              for (auto [ix, wx] : axes[2])
                if (iz >= 0 && iy >= 0 && ix >= 0)
                  acc += wz * wy * wx *
                         x[static_cast<size_t>((n * C + c) * in_plane + (iz * xd[3] + iy) * xd[4] + ix)];
        }
        y[static_cast<size_t>((n * C + c) * out_plane + o)] = acc;
      }
    }
  return y;
}

Result<std::vector<Tensor>> run_grid(const Tensor& x, const Tensor& grid, const std::string& mode,
                                     const std::string& padding, bool align, int opset) {
  OneNode n("GridSample", {x, grid});
  n.node->attrs.set("mode", mode);
  n.node->attrs.set("padding_mode", padding);
  n.node->attrs.set("align_corners", int64_t{align ? 1 : 0});
  return n.run(opset);
}

TEST(GridSample, HandValues) {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  // The centre (0, 0) is the middle of the 2x2 map either way: 2.5.
  for (bool align : {false, true}) {
    auto y = run_grid(x, f32({1, 1, 1, 2}, {0, 0}), "bilinear", "zeros", align, 16);
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    EXPECT_FLOAT_EQ(y.value()[0].get(0), 2.5f);
  }
  // (-1, -1) without align_corners is the outer corner of pixel (0, 0), i.e. (-0.5, -0.5): zeros
  // padding weighs pixel (0, 0) by 1/4; border and reflection read it whole.
  const std::map<std::string, float> corner = {{"zeros", 0.25f}, {"border", 1.0f}, {"reflection", 1.0f}};
  for (const auto& [pad, want] : corner) {
    auto y = run_grid(x, f32({1, 1, 1, 2}, {-1, -1}), "bilinear", pad, false, 16);
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    EXPECT_FLOAT_EQ(y.value()[0].get(0), want) << pad;
  }
  // Nearest at x = 0.5 pixel rounds half to even (0): (x, y) = (-0.25 normalized -> 0.5, row 1).
  auto y = run_grid(x, f32({1, 1, 1, 2}, {0.0, 0.5}), "nearest", "zeros", false, 16);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_FLOAT_EQ(y.value()[0].get(0), 3.0f);
  // Opset 20 spells the modes linear/cubic; opset 16's names are refused there and vice versa.
  y = run_grid(x, f32({1, 1, 1, 2}, {0, 0}), "linear", "zeros", false, 20);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_FLOAT_EQ(y.value()[0].get(0), 2.5f);
  y = run_grid(x, f32({1, 1, 1, 2}, {0, 0}), "linear", "zeros", false, 16);
  ASSERT_FALSE(y.is_ok());
  EXPECT_EQ(y.status().attribute(), "mode") << y.status().to_string();
  y = run_grid(x, f32({1, 1, 1, 2}, {0, 0}), "bicubic", "zeros", false, 20);
  ASSERT_FALSE(y.is_ok());
  EXPECT_EQ(y.status().attribute(), "mode") << y.status().to_string();
}

TEST(GridSample, EveryModePaddingAndAlignmentMatchesTheDefinition) {
  std::mt19937 rng(test_seed());
  SCOPED_TRACE("seed " + std::to_string(test_seed()));
  for (int opset : {16, 20})
    for (bool volumetric : {false, true}) {
      if (volumetric && opset < 20) continue;
      for (DataType dt : {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16})
        for (const char* mode : {"linear", "nearest", "cubic"})
          for (const char* pad : {"zeros", "border", "reflection"})
            for (bool align : {false, true}) {
              std::string m = mode;
              if (opset < 20 && m != "nearest") m = m == "linear" ? "bilinear" : "bicubic";
              SCOPED_TRACE("opset " + std::to_string(opset) + (volumetric ? " 5-D " : " 4-D ") + dtype_name(dt) + " " +
                           m + " " + pad + (align ? " align_corners" : ""));
              const std::vector<int64_t> xd = volumetric ? std::vector<int64_t>{2, 2, 3, 4, 5}
                                                         : std::vector<int64_t>{2, 3, 5, 6};
              const std::vector<int64_t> gd = volumetric ? std::vector<int64_t>{2, 2, 3, 2, 3}
                                                         : std::vector<int64_t>{2, 4, 7, 2};
              Tensor x = testing::random_tensor(dt, xd, rng, 0.25, 2.0);
              // Coordinates well outside [-1, 1] exercise the padding (reflection folds several times).
              Tensor grid = testing::random_tensor(dt, gd, rng, -3.2, 3.2);
              auto y = run_grid(x, grid, m, pad, align, opset);
              ASSERT_TRUE(y.is_ok()) << y.status().to_string();
              std::vector<int64_t> yd = {xd[0], xd[1]};
              for (size_t a = 1; a + 1 < gd.size(); ++a) yd.push_back(gd[a]);
              ASSERT_EQ(y.value()[0].dims(), yd);
              GridRef r;
              r.mode = mode;
              r.padding = pad;
              r.align = align;
              const auto want = grid_sample_ref(values(x), xd, values(grid), gd, r);
              const double tol = dt == DataType::kFloat16 ? 4e-3 : dt == DataType::kFloat32 ? 1e-6 : 1e-12;
              EXPECT_LE(max_rel_error(values(y.value()[0]), want), tol);
            }
    }
}

TEST(GridSample, NonFiniteAndHugeCoordinatesReadNothingOutside) {
  std::mt19937 rng(test_seed());
  Tensor x = testing::random_tensor(DataType::kFloat32, {1, 2, 3, 3}, rng, 0.5, 1.5);
  const std::vector<double> gv = {NAN, 0.0, INFINITY, 0.0, -INFINITY, 0.5, 1e30, -1e30, 3e38, 0.1};
  for (const char* mode : {"bilinear", "nearest", "bicubic"})
    for (const char* pad : {"zeros", "border", "reflection"}) {
      auto y = run_grid(x, f32({1, 1, 5, 2}, gv), mode, pad, false, 16);
      ASSERT_TRUE(y.is_ok()) << y.status().to_string();
      const std::vector<double> out = values(y.value()[0]);
      // Non-finite coordinates give 0; the finite ones a value (never NaN, never poison).
      for (double v : out) EXPECT_TRUE(std::isfinite(v)) << mode << " " << pad;
      EXPECT_EQ(out[0], 0.0);
      EXPECT_EQ(out[1], 0.0);
      EXPECT_EQ(out[2], 0.0);
    }
}

TEST(GridSample, ShapeErrors) {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  auto y = run_grid(x, f32({1, 1, 1, 3}, {0, 0, 0}), "bilinear", "zeros", false, 16);
  ASSERT_FALSE(y.is_ok());
  EXPECT_TRUE(contains(y.status().to_string(), "grid")) << y.status().to_string();
  y = run_grid(x, f32({2, 1, 1, 2}, {0, 0, 0, 0}), "bilinear", "zeros", false, 16);
  ASSERT_FALSE(y.is_ok());
  EXPECT_TRUE(contains(y.status().to_string(), "grid")) << y.status().to_string();
  // 5-D needs opset 20.
  y = run_grid(f32({1, 1, 1, 2, 2}, {1, 2, 3, 4}), f32({1, 1, 1, 1, 3}, {0, 0, 0}), "bilinear", "zeros", false, 16);
  ASSERT_FALSE(y.is_ok());
  EXPECT_TRUE(contains(y.status().to_string(), "opset 20")) << y.status().to_string();
}

// =================================================================================================
// Through the engine: the importer, inference and the runtime name the node and the attribute.
// =================================================================================================
std::string bad_roi_align_model(const std::string& attr, const std::string& sval, int64_t ival, float fval, int which) {
  OnnxModelBuilder b(16);
  b.input("x", DataType::kFloat32, {1, 2, 4, 4});
  b.input("rois", DataType::kFloat32, {3, 4});
  b.input("bi", DataType::kInt64, {3});
  auto& n = b.node("RoiAlign", {"x", "rois", "bi"}, {"y"}, "pool_rois");
  if (which == 0) OnnxModelBuilder::attr(n, attr, sval);
  if (which == 1) OnnxModelBuilder::attr(n, attr, ival);
  if (which == 2) OnnxModelBuilder::attr(n, attr, fval);
  b.output("y", DataType::kFloat32);
  return b.bytes();
}

TEST(RoiAlign, BadAttributesNameNodeAndAttribute) {
  struct Bad {
    std::string attr, s;
    int64_t i;
    float f;
    int which;
  };
  const std::vector<Bad> bad = {
      {"mode", "min", 0, 0, 0},           {"coordinate_transformation_mode", "corner", 0, 0, 0},
      {"output_height", "", 0, 0, 1},     {"output_width", "", -2, 0, 1},
      {"sampling_ratio", "", -1, 0, 1},   {"spatial_scale", "", 0, 0.0f, 2},
      {"spatial_scale", "", 0, NAN, 2},   {"mode", "", 3, 0, 1},  // wrong type
  };
  for (const Bad& b : bad) {
    auto e = Engine::build_from_onnx_bytes(bad_roi_align_model(b.attr, b.s, b.i, b.f, b.which), BuilderConfig{},
                                           "roi.onnx");
    ASSERT_FALSE(e.is_ok()) << b.attr;
    EXPECT_EQ(e.status().node_name(), "pool_rois") << e.status().to_string();
    EXPECT_EQ(e.status().attribute(), b.attr) << e.status().to_string();
  }
}

TEST(GridSample, BadAttributesNameNodeAndAttribute) {
  for (auto [attr, value] : std::vector<std::pair<std::string, std::string>>{
           {"mode", "trilinear"}, {"padding_mode", "wrap"}, {"align_corners", "2"}}) {
    OnnxModelBuilder b(16);
    b.input("x", DataType::kFloat32, {1, 2, 4, 4});
    b.input("g", DataType::kFloat32, {1, 3, 3, 2});
    auto& n = b.node("GridSample", {"x", "g"}, {"y"}, "warp");
    if (attr == "align_corners") OnnxModelBuilder::attr(n, attr, int64_t{2});
    else OnnxModelBuilder::attr(n, attr, value);
    b.output("y", DataType::kFloat32);
    auto e = Engine::build_from_onnx_bytes(b.bytes(), BuilderConfig{}, "grid.onnx");
    ASSERT_FALSE(e.is_ok()) << attr;
    EXPECT_EQ(e.status().node_name(), "warp") << e.status().to_string();
    EXPECT_EQ(e.status().attribute(), attr) << e.status().to_string();
  }
}

TEST(GridSample, RunsThroughTheEngineAtOpset20With5DInput) {
  OnnxModelBuilder b(20);
  b.input("x", DataType::kFloat32, {1, 1, 2, 2, 2});
  b.input("g", DataType::kFloat32, {1, 1, 1, 1, 3});
  OnnxModelBuilder::attr(b.node("GridSample", {"x", "g"}, {"y"}, "warp3d"), "mode", "linear");
  b.output("y", DataType::kFloat32);
  auto e = Engine::build_from_onnx_bytes(b.bytes(), BuilderConfig{}, "grid3d.onnx");
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  auto ctx = e.value()->create_context();
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
  std::map<std::string, Tensor> in = {{"x", f32({1, 1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})},
                                      {"g", f32({1, 1, 1, 1, 3}, {0, 0, 0})}};
  std::map<std::string, Tensor> out;
  Status st = ctx.value()->run(in, out);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  // The centre of a 2x2x2 cube averages all eight corners.
  EXPECT_FLOAT_EQ(out["y"].get(0), 4.5f);
  EXPECT_EQ(out["y"].dims(), (std::vector<int64_t>{1, 1, 1, 1, 1}));
}

TEST(RoiAlign, RunsThroughTheEngineWithABadBatchIndexNamingTheNode) {
  OnnxModelBuilder b(16);
  b.input("x", DataType::kFloat32, {1, 1, 2, 2});
  b.input("rois", DataType::kFloat32, {1, 4});
  b.input("bi", DataType::kInt64, {1});
  b.node("RoiAlign", {"x", "rois", "bi"}, {"y"}, "pool_rois");
  b.output("y", DataType::kFloat32);
  auto e = Engine::build_from_onnx_bytes(b.bytes(), BuilderConfig{}, "roi.onnx");
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  auto ctx = e.value()->create_context();
  ASSERT_TRUE(ctx.is_ok());
  std::map<std::string, Tensor> in = {{"x", f32({1, 1, 2, 2}, {1, 2, 3, 4})},
                                      {"rois", f32({1, 4}, {0, 0, 1, 1})},
                                      {"bi", i64({3})}};
  std::map<std::string, Tensor> out;
  Status st = ctx.value()->run(in, out);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.node_name(), "pool_rois") << st.to_string();
  EXPECT_TRUE(contains(st.to_string(), "batch index 3")) << st.to_string();
  in["bi"] = i64({0});
  st = ctx.value()->run(in, out);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_FLOAT_EQ(out["y"].get(0), 1.0f);  // half_pixel (opset 16 default), adaptive: one sample at (0, 0)
}

}  // namespace
}  // namespace graft
