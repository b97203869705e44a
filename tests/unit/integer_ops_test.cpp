// MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv (definition and CPU
// reference: src/ops/integer/integer.cpp) against loops written here on fresh random int8/uint8
// data: non-zero zero points per tensor, per row/column and per output channel, broadcast batches
// and 1-D operands, padding, strides, dilations and groups; requantization ties (half to even) and
// saturation at both ends; then bad zero points, scales and shapes (errors name the input, and
// through the engine the node).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "graft/engine.h"
#include "onnx_model_builder.h"
#include "op_test_util.h"

namespace graft {
namespace {

using testing::attrs_of;
using testing::DimSpec;
using testing::OnnxModelBuilder;
using testing::run_op;

constexpr DataType kU8 = DataType::kUInt8, kI8 = DataType::kInt8, kI32 = DataType::kInt32,
                   kF32 = DataType::kFloat32;

uint32_t seed() {
  static const uint32_t s = std::random_device{}();
  return s;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }


// A zero point that is never 0, so forgetting to subtract it shows.
Tensor rand_zp(DataType dt, std::vector<int64_t> dims, std::mt19937& rng) {
  Tensor t = testing::random_int8(dt, std::move(dims), rng);
  for (int64_t i = 0; i < t.numel(); ++i)
    if (t.get(i) == 0) t.set(i, dt == kU8 ? 3 : -3);
  return t;
}

Tensor scalar_of(DataType dt, double v) { return Tensor::from_doubles(dt, {}, {v}); }

// t at multi-index idx, numpy broadcasting: idx right-aligned against t's dims, size-1 axes read 0.
double at(const Tensor& t, const std::vector<int64_t>& idx) {
  const size_t lead = idx.size() - t.dims().size();
  int64_t f = 0;
  for (size_t a = 0; a < t.dims().size(); ++a) f = f * t.dims()[a] + (t.dims()[a] == 1 ? 0 : idx[a + lead]);
  return t.get(f);
}

// (A - azp) @ (B - bzp) as numpy computes it, every operand already shaped to broadcast (a 1-D
// operand promoted by the caller); returns the sums and the broadcast output dims.
std::vector<int64_t> naive_matmul(const Tensor& A, const Tensor& azp, const Tensor& B, const Tensor& bzp,
                                  std::vector<int64_t>* out_dims) {
  const auto& ad = A.dims();
  const auto& bd = B.dims();
  const size_t r = std::max(ad.size(), bd.size());
  std::vector<int64_t> batch(r - 2, 1);
  for (size_t i = 0; i + 2 < r; ++i) {
    const int64_t da = i + ad.size() >= r ? ad[i + ad.size() - r] : 1;
    const int64_t db = i + bd.size() >= r ? bd[i + bd.size() - r] : 1;
    batch[i] = std::max(da, db);
  }
  const int64_t M = ad[ad.size() - 2], K = ad.back(), N = bd.back();
  int64_t nb = 1;
  for (int64_t d : batch) nb *= d;
  std::vector<int64_t> out;
  std::vector<int64_t> bi(batch.size(), 0);
  for (int64_t f = 0; f < nb; ++f) {
    int64_t rem = f;
    for (size_t a = batch.size(); a-- > 0;) {
      bi[a] = rem % batch[a];
      rem /= batch[a];
    }
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        int64_t acc = 0;
        for (int64_t k = 0; k < K; ++k) {
          std::vector<int64_t> ia = bi, ib = bi;
          ia.insert(ia.end(), {m, k});
          ib.insert(ib.end(), {k, n});
          acc +=
              static_cast<int64_t>(at(A, ia) - at(azp, ia)) * static_cast<int64_t>(at(B, ib) - at(bzp, ib));
        }
        out.push_back(acc);
      }
  }
  *out_dims = batch;
  out_dims->push_back(M);
  out_dims->push_back(N);
  return out;
}

// A plain 2-D NCHW convolution of (x - xzp) by (w - wzp[m]) with zero padding of the shifted values.
struct Conv2d {
  int64_t group = 1;
  std::vector<int64_t> strides{1, 1}, dilations{1, 1}, pads{0, 0, 0, 0};
};
std::vector<int64_t> naive_conv(const Tensor& x, double xzp, const Tensor& w,
                                const std::function<double(int64_t)>& wzp, const Conv2d& c,
                                std::vector<int64_t>* out_dims) {
  const int64_t N = x.dims()[0], C = x.dims()[1], H = x.dims()[2], W = x.dims()[3];
  const int64_t M = w.dims()[0], Cg = w.dims()[1], KH = w.dims()[2], KW = w.dims()[3];
  const int64_t OH = (H + c.pads[0] + c.pads[2] - c.dilations[0] * (KH - 1) - 1) / c.strides[0] + 1;
  const int64_t OW = (W + c.pads[1] + c.pads[3] - c.dilations[1] * (KW - 1) - 1) / c.strides[1] + 1;
  std::vector<int64_t> y;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t g = m / (M / c.group);
          int64_t acc = 0;
          for (int64_t ci = 0; ci < Cg; ++ci)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = oh * c.strides[0] - c.pads[0] + kh * c.dilations[0];
                const int64_t iw = ow * c.strides[1] - c.pads[1] + kw * c.dilations[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                const double xv = x.get(((n * C + g * Cg + ci) * H + ih) * W + iw) - xzp;
                const double wv = w.get(((m * Cg + ci) * KH + kh) * KW + kw) - wzp(m);
                acc += static_cast<int64_t>(xv) * static_cast<int64_t>(wv);
              }
          y.push_back(acc);
        }
  *out_dims = {N, M, OH, OW};
  return y;
}

AttributeMap conv_attrs(const Conv2d& c) {
  return attrs_of({{"group", c.group}, {"strides", c.strides}, {"dilations", c.dilations}, {"pads", c.pads}});
}

// The documented requantization: float32 multiplier and product, nearest-even, zero point, saturate.
double requant(int64_t sum, float sa, float sb, float sy, double zp, DataType out) {
  const float mult = sa * sb / sy;
  const float v = static_cast<float>(sum) * mult;
  const double lo = out == kU8 ? 0 : -128, hi = out == kU8 ? 255 : 127;
  return std::min(hi, std::max(lo, static_cast<double>(std::nearbyint(v)) + zp));
}

void expect_exact(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  int bad = 0;
  for (int64_t i = 0; i < got.numel() && bad < 5; ++i)
    if (got.get(i) != want[static_cast<size_t>(i)]) {
      ADD_FAILURE() << what << " [" << i << "]: got " << got.get(i) << ", want "
                    << want[static_cast<size_t>(i)];
      ++bad;
    }
}

std::vector<double> as_doubles(const std::vector<int64_t>& v) {
  return std::vector<double>(v.begin(), v.end());
}

// ---- MatMulInteger --------------------------------------------------------------------------------

TEST(MatMulInteger, ZeroPointLayoutsAndBroadcastAgainstLoops) {
  SCOPED_TRACE("seed " + std::to_string(seed()));
  std::mt19937 rng(seed());
  for (DataType ta : {kU8, kI8})
    for (DataType tb : {kU8, kI8}) {
      const std::string combo = std::string(dtype_name(ta)) + " x " + dtype_name(tb);
      // Per-tensor zero points.
      {
        Tensor A = testing::random_int8(ta, {4, 7}, rng), B = testing::random_int8(tb, {7, 5}, rng);
        Tensor az = rand_zp(ta, {}, rng), bz = rand_zp(tb, {}, rng);
        std::vector<int64_t> od;
        auto want = naive_matmul(A, az, B, bz, &od);
        auto r = run_op("MatMulInteger", {A, B, az, bz}, {}, 10);
        ASSERT_TRUE(r.is_ok()) << r.status().to_string();
        EXPECT_EQ(r.value()[0].dtype(), kI32);
        EXPECT_EQ(r.value()[0].dims(), od);
        expect_exact(r.value()[0], as_doubles(want), "per tensor " + combo);
      }
      // Per row of A ([M]) and per column of B ([N]).
      {
        Tensor A = testing::random_int8(ta, {3, 6}, rng), B = testing::random_int8(tb, {6, 4}, rng);
        Tensor az = rand_zp(ta, {3}, rng), bz = rand_zp(tb, {4}, rng);
        std::vector<int64_t> od;
        auto want = naive_matmul(A, az.reshaped({3, 1}), B, bz, &od);
        auto r = run_op("MatMulInteger", {A, B, az, bz}, {}, 10);
        ASSERT_TRUE(r.is_ok()) << r.status().to_string();
        expect_exact(r.value()[0], as_doubles(want), "per row/column " + combo);
      }
      // Broadcast batches with N-D zero points [.., M, 1] and [.., 1, N].
      {
        Tensor A = testing::random_int8(ta, {2, 1, 3, 4}, rng), B = testing::random_int8(tb, {3, 4, 5}, rng);
        Tensor az = rand_zp(ta, {2, 1, 3, 1}, rng), bz = rand_zp(tb, {3, 1, 5}, rng);
        std::vector<int64_t> od;
        auto want = naive_matmul(A, az, B, bz, &od);
        auto r = run_op("MatMulInteger", {A, B, az, bz}, {}, 10);
        ASSERT_TRUE(r.is_ok()) << r.status().to_string();
        EXPECT_EQ(r.value()[0].dims(), (std::vector<int64_t>{2, 3, 3, 5}));
        expect_exact(r.value()[0], as_doubles(want), "broadcast " + combo);
      }
    }
}

TEST(MatMulInteger, OneDimensionalOperandsAndOmittedZeroPoints) {
  SCOPED_TRACE("seed " + std::to_string(seed()));
  std::mt19937 rng(seed());
  Tensor a = testing::random_int8(kU8, {6}, rng), B = testing::random_int8(kI8, {6, 3}, rng), bz = rand_zp(kI8, {3}, rng);
  std::vector<int64_t> od;
  auto want = naive_matmul(a.reshaped({1, 6}), scalar_of(kU8, 0), B, bz, &od);
  // A's zero point omitted (empty name), B's per column.
  auto r = run_op("MatMulInteger", {a, B, Tensor(), bz}, {}, 10);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].dims(), (std::vector<int64_t>{3}));
  expect_exact(r.value()[0], as_doubles(want), "[K] @ [K, N]");
  Tensor A = testing::random_int8(kI8, {4, 6}, rng), b = testing::random_int8(kU8, {6}, rng), az = rand_zp(kI8, {4}, rng);
  want = naive_matmul(A, az.reshaped({4, 1}), b.reshaped({6, 1}), scalar_of(kU8, 0), &od);
  r = run_op("MatMulInteger", {A, b, az}, {}, 10);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].dims(), (std::vector<int64_t>{4}));
  expect_exact(r.value()[0], as_doubles(want), "[M, K] @ [K]");
}

TEST(MatMulInteger, ExtremesAreExact) {
  // 255 - 0 times -128 - 127 over K terms: the largest magnitudes 8-bit operands give.
  const int64_t K = 9;
  Tensor A = Tensor::from_doubles(kU8, {1, K}, std::vector<double>(K, 255));
  Tensor B = Tensor::from_doubles(kI8, {K, 1}, std::vector<double>(K, -128));
  auto r = run_op("MatMulInteger", {A, B, scalar_of(kU8, 0), scalar_of(kI8, 127)}, {}, 10);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].get(0), 255.0 * -255.0 * K);
}

// ---- ConvInteger ----------------------------------------------------------------------------------

TEST(ConvInteger, PaddingStridesDilationsGroupsAgainstLoops) {
  SCOPED_TRACE("seed " + std::to_string(seed()));
  std::mt19937 rng(seed());
  struct Case {
    std::vector<int64_t> x, w;
    Conv2d c;
  };
  const std::vector<Case> cases = {
      {{1, 1, 5, 5}, {1, 1, 3, 3}, {}},
      {{2, 3, 7, 6}, {4, 3, 3, 2}, {1, {2, 1}, {1, 1}, {1, 0, 2, 1}}},
      {{1, 4, 8, 8}, {6, 2, 3, 3}, {2, {1, 2}, {2, 1}, {2, 1, 1, 2}}},
      {{2, 6, 5, 7}, {6, 1, 2, 3}, {6, {2, 2}, {1, 2}, {0, 1, 1, 0}}},  // depthwise
  };
  for (const Case& k : cases)
    for (DataType tx : {kU8, kI8})
      for (DataType tw : {kU8, kI8})
        for (bool per_channel : {false, true}) {
          const std::string what = "x channels " + std::to_string(k.x[1]) + " group " +
                                   std::to_string(k.c.group) + " " + dtype_name(tx) + "/" + dtype_name(tw) +
                                   (per_channel ? " per channel" : " per tensor");
          Tensor x = testing::random_int8(tx, k.x, rng), w = testing::random_int8(tw, k.w, rng);
          Tensor xz = rand_zp(tx, {}, rng);
          Tensor wz = rand_zp(tw, per_channel ? std::vector<int64_t>{k.w[0]} : std::vector<int64_t>{}, rng);
          std::vector<int64_t> od;
          auto want = naive_conv(
              x, xz.get(0), w, [&](int64_t m) { return wz.get(per_channel ? m : 0); }, k.c, &od);
          auto r = run_op("ConvInteger", {x, w, xz, wz}, conv_attrs(k.c), 10);
          ASSERT_TRUE(r.is_ok()) << what << ": " << r.status().to_string();
          EXPECT_EQ(r.value()[0].dtype(), kI32);
          EXPECT_EQ(r.value()[0].dims(), od) << what;
          expect_exact(r.value()[0], as_doubles(want), what);
        }
}

TEST(ConvInteger, AutoPadAndOneSpatialAxis) {
  SCOPED_TRACE("seed " + std::to_string(seed()));
  std::mt19937 rng(seed());
  // SAME_UPPER over 6x5 with a 3x2 kernel, stride 2: total pads (2*2+3-6, 2*2+2-5) = (1, 1), the
  // extra one at the end.
  Tensor x = testing::random_int8(kU8, {1, 2, 6, 5}, rng), w = testing::random_int8(kI8, {3, 2, 3, 2}, rng), xz = rand_zp(kU8, {}, rng);
  Conv2d c;
  c.strides = {2, 2};
  c.pads = {0, 0, 1, 1};
  std::vector<int64_t> od;
  auto want = naive_conv(
      x, xz.get(0), w, [](int64_t) { return 0.0; }, c, &od);
  auto r = run_op(
      "ConvInteger", {x, w, xz},
      attrs_of({{"auto_pad", std::string("SAME_UPPER")}, {"strides", std::vector<int64_t>{2, 2}}}), 10);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].dims(), od);
  expect_exact(r.value()[0], as_doubles(want), "SAME_UPPER");
  // A 1-D conv is the 2-D one over a height of 1.
  Tensor x1 = testing::random_int8(kI8, {2, 2, 9}, rng), w1 = testing::random_int8(kI8, {4, 2, 3}, rng), wz1 = rand_zp(kI8, {4}, rng);
  Conv2d c1;
  c1.strides = {1, 2};
  c1.pads = {0, 1, 0, 2};
  auto want1 = naive_conv(
      x1.reshaped({2, 2, 1, 9}), 0, w1.reshaped({4, 2, 1, 3}), [&](int64_t m) { return wz1.get(m); }, c1,
      &od);
  r = run_op("ConvInteger", {x1, w1, Tensor(), wz1},
             attrs_of({{"strides", std::vector<int64_t>{2}}, {"pads", std::vector<int64_t>{1, 2}}}), 10);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].dims(), (std::vector<int64_t>{2, 4, od[3]}));
  expect_exact(r.value()[0], as_doubles(want1), "1-D");
}

// ---- QLinearMatMul --------------------------------------------------------------------------------

TEST(QLinearMatMul, RandomAgainstLoops) {
  SCOPED_TRACE("seed " + std::to_string(seed()));
  std::mt19937 rng(seed());
  std::uniform_real_distribution<float> scale(0.002f, 0.05f);
  for (DataType ta : {kU8, kI8})
    for (DataType tb : {kU8, kI8})
      for (DataType ty : {kU8, kI8})
        for (bool per_row : {false, true}) {
          const std::string what = std::string(dtype_name(ta)) + " x " + dtype_name(tb) + " -> " +
                                   dtype_name(ty) + (per_row ? " per row/column" : " per tensor");
          Tensor A = testing::random_int8(ta, {2, 3, 8}, rng), B = testing::random_int8(tb, {8, 4}, rng);
          const std::vector<int64_t> ad = per_row ? std::vector<int64_t>{3} : std::vector<int64_t>{};
          const std::vector<int64_t> bd = per_row ? std::vector<int64_t>{4} : std::vector<int64_t>{};
          Tensor az = rand_zp(ta, ad, rng), bz = rand_zp(tb, bd, rng);
          Tensor as = Tensor::empty(kF32, ad), bs = Tensor::empty(kF32, bd);
          for (int64_t i = 0; i < as.numel(); ++i) as.set(i, scale(rng));
          for (int64_t i = 0; i < bs.numel(); ++i) bs.set(i, scale(rng));
          // y_scale near the typical |sum| * scales / 50, so outputs spread over the range and some saturate.
          Tensor ys = scalar_of(kF32, 0.1), yz = rand_zp(ty, {}, rng);
          std::vector<int64_t> od;
          auto sums = naive_matmul(A, per_row ? az.reshaped({3, 1}) : az, B, bz, &od);
          std::vector<double> want;
          for (size_t i = 0; i < sums.size(); ++i) {
            const int64_t m = static_cast<int64_t>(i) / 4 % 3, n = static_cast<int64_t>(i) % 4;
            want.push_back(requant(sums[i], static_cast<float>(as.get(per_row ? m : 0)),
                                   static_cast<float>(bs.get(per_row ? n : 0)), 0.1f, yz.get(0), ty));
          }
          auto r = run_op("QLinearMatMul", {A, as, az, B, bs, bz, ys, yz}, {}, 10);
          ASSERT_TRUE(r.is_ok()) << what << ": " << r.status().to_string();
          EXPECT_EQ(r.value()[0].dtype(), ty);
          EXPECT_EQ(r.value()[0].dims(), od);
          expect_exact(r.value()[0], want, what);
        }
}

TEST(QLinearMatMul, TiesRoundHalfToEvenAndBothEndsSaturate) {
  // a_scale 0.5, b_scale 1, y_scale 1: y = round(sum / 2) + zp, exact in float32, so odd sums are
  // ties. Sums 1, 3, 5, -1, -3 (A = sum, B = 1) round to 0, 2, 2, -0, -2.
  Tensor A = Tensor::from_doubles(kI8, {5, 1}, {1, 3, 5, -1, -3});
  Tensor B = Tensor::from_doubles(kI8, {1, 1}, {1});
  auto run = [&](const Tensor& a, const Tensor& b, DataType ty, double zp) {
    return run_op("QLinearMatMul",
                  {a, scalar_of(kF32, 0.5), scalar_of(kI8, 0), b, scalar_of(kF32, 1.0), scalar_of(kI8, 0),
                   scalar_of(kF32, 1.0), scalar_of(ty, zp)},
                  {}, 10);
  };
  auto r = run(A, B, kI8, 10);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  expect_exact(r.value()[0], {10, 12, 12, 10, 8}, "ties with zero point 10");
  // Saturation: sums of +-127 * 127 * 4 / 2 are far outside either range.
  Tensor big = Tensor::from_doubles(kI8, {2, 4}, {127, 127, 127, 127, -127, -127, -127, -127});
  Tensor ones = Tensor::from_doubles(kI8, {4, 1}, {127, 127, 127, 127});
  r = run(big, ones, kU8, 128);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  expect_exact(r.value()[0], {255, 0}, "uint8 saturation");
  r = run(big, ones, kI8, 0);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  expect_exact(r.value()[0], {127, -128}, "int8 saturation");
}

// ---- QLinearConv ----------------------------------------------------------------------------------

TEST(QLinearConv, RandomWithBiasAgainstLoops) {
  SCOPED_TRACE("seed " + std::to_string(seed()));
  std::mt19937 rng(seed());
  std::uniform_real_distribution<float> scale(0.005f, 0.03f);
  std::uniform_int_distribution<int> bias_d(-3000, 3000);
  Conv2d c;
  c.group = 2;
  c.strides = {2, 1};
  c.dilations = {1, 2};
  c.pads = {1, 2, 0, 1};
  for (DataType tx : {kU8, kI8})
    for (DataType ty : {kU8, kI8})
      for (bool per_channel : {false, true}) {
        const std::string what = std::string(dtype_name(tx)) + " -> " + dtype_name(ty) +
                                 (per_channel ? " per channel" : " per tensor");
        Tensor x = testing::random_int8(tx, {2, 4, 7, 6}, rng), w = testing::random_int8(kI8, {6, 2, 3, 2}, rng);
        const std::vector<int64_t> wd = per_channel ? std::vector<int64_t>{6} : std::vector<int64_t>{};
        Tensor xz = rand_zp(tx, {}, rng), wz = rand_zp(kI8, wd, rng), yz = rand_zp(ty, {}, rng);
        Tensor ws = Tensor::empty(kF32, wd);
        for (int64_t i = 0; i < ws.numel(); ++i) ws.set(i, scale(rng));
        const float xs = scale(rng), ysv = 0.5f;
        Tensor bias = Tensor::empty(kI32, {6});
        for (int64_t i = 0; i < 6; ++i) bias.set(i, bias_d(rng));
        std::vector<int64_t> od;
        auto sums = naive_conv(
            x, xz.get(0), w, [&](int64_t m) { return wz.get(per_channel ? m : 0); }, c, &od);
        const int64_t area = od[2] * od[3];
        std::vector<double> want;
        for (size_t i = 0; i < sums.size(); ++i) {
          const int64_t m = static_cast<int64_t>(i) / area % 6;
          want.push_back(requant(sums[i] + static_cast<int64_t>(bias.get(m)), xs,
                                 static_cast<float>(ws.get(per_channel ? m : 0)), ysv, yz.get(0), ty));
        }
        auto r =
            run_op("QLinearConv", {x, scalar_of(kF32, xs), xz, w, ws, wz, scalar_of(kF32, ysv), yz, bias},
                   conv_attrs(c), 10);
        ASSERT_TRUE(r.is_ok()) << what << ": " << r.status().to_string();
        EXPECT_EQ(r.value()[0].dtype(), ty);
        EXPECT_EQ(r.value()[0].dims(), od);
        expect_exact(r.value()[0], want, what);
      }
}

TEST(QLinearConv, TiesAndSaturation) {
  // A 1x1 kernel of weight 1 over x - 0, x_scale 0.5, w_scale 1, y_scale 1: y = round(x / 2) + zp.
  Tensor x = Tensor::from_doubles(kU8, {1, 1, 1, 6}, {1, 3, 5, 7, 250, 0});
  Tensor w = Tensor::from_doubles(kU8, {1, 1, 1, 1}, {1});
  auto r = run_op("QLinearConv",
                  {x, scalar_of(kF32, 0.5), scalar_of(kU8, 0), w, scalar_of(kF32, 1.0), scalar_of(kU8, 0),
                   scalar_of(kF32, 1.0), scalar_of(kU8, 200)},
                  {}, 10);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  // 0.5, 1.5, 2.5, 3.5 round to 0, 2, 2, 4; 125 + 200 saturates at 255; 0 gives the zero point.
  expect_exact(r.value()[0], {200, 202, 202, 204, 255, 200}, "ties");
  // A negative bias pulls everything below int8's range.
  r = run_op("QLinearConv",
             {x, scalar_of(kF32, 0.5), scalar_of(kU8, 0), w, scalar_of(kF32, 1.0), scalar_of(kU8, 0),
              scalar_of(kF32, 1.0), scalar_of(kI8, -100), Tensor::from_doubles(kI32, {1}, {-400})},
             {}, 10);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  expect_exact(r.value()[0], {-128, -128, -128, -128, -128, -128}, "low saturation");
}

// ---- errors ---------------------------------------------------------------------------------------

TEST(IntegerErrors, BadZeroPointsScalesAndShapesNameTheInput) {
  std::mt19937 rng(seed());
  Tensor A = testing::random_int8(kU8, {4, 3}, rng), B = testing::random_int8(kI8, {3, 2}, rng);
  Tensor x = testing::random_int8(kU8, {1, 2, 5, 5}, rng), w = testing::random_int8(kU8, {3, 2, 3, 3}, rng);
  const Tensor f1 = scalar_of(kF32, 0.1), u0 = scalar_of(kU8, 1), i0 = scalar_of(kI8, 1);
  struct Bad {
    std::string op;
    std::vector<Tensor> in;
    std::string text1, text2;
  };
  const std::vector<Bad> bad = {
      {"MatMulInteger", {A, B, i0}, "a_zero_point", "dtype"},
      {"MatMulInteger", {A, B, u0, u0}, "b_zero_point", "dtype"},
      {"MatMulInteger", {A, B, Tensor::from_doubles(kU8, {3}, {1, 2, 3})}, "a_zero_point", "per row"},
      {"MatMulInteger",
       {A, B, Tensor(), Tensor::from_doubles(kI8, {3, 2}, {1, 2, 3, 4, 5, 6})},
       "b_zero_point",
       "does not fit"},
      {"MatMulInteger", {A, testing::random_int8(kI8, {4, 2}, rng)}, "inner dimensions", "K = 3"},
      {"MatMulInteger", {Tensor::from_doubles(kF32, {1, 1}, {1}), B}, "dtype", "float32"},
      {"QLinearMatMul",
       {A, f1, u0, B, f1, i0, Tensor::from_doubles(kF32, {2}, {1, 1}), u0},
       "y_scale",
       "one element"},
      {"QLinearMatMul",
       {A, f1, u0, B, f1, i0, f1, Tensor::from_doubles(kU8, {2}, {1, 1})},
       "y_zero_point",
       "one element"},
      {"QLinearMatMul",
       {A, Tensor::from_doubles(kF32, {3}, {1, 1, 1}), u0, B, f1, i0, f1, u0},
       "a_scale",
       "per row"},
      {"QLinearMatMul",
       {A, f1, u0, B, Tensor::from_doubles(kF32, {3}, {1, 1, 1}), i0, f1, u0},
       "b_scale",
       "per column"},
      {"QLinearMatMul", {A, scalar_of(DataType::kFloat64, 0.1), u0, B, f1, i0, f1, u0}, "a_scale", "float64"},
      {"QLinearMatMul",
       {A, f1, u0, B, scalar_of(DataType::kFloat16, 0.1), i0, f1, u0},
       "b_scale",
       "share one dtype"},
      {"QLinearMatMul", {A, f1, i0, B, f1, i0, f1, u0}, "a_zero_point", "dtype"},
      {"QLinearMatMul", {A, f1, u0, B, f1, i0, f1}, "missing", "7"},
      {"QLinearMatMul", {A, f1, u0, B, f1, i0, f1, scalar_of(kI32, 0)}, "dtype", "int32"},
      {"ConvInteger", {x, w, Tensor::from_doubles(kU8, {2}, {1, 2})}, "x_zero_point", "one element"},
      {"ConvInteger", {x, w, u0, Tensor::from_doubles(kU8, {2}, {1, 2})}, "w_zero_point", "output channel"},
      {"ConvInteger", {x, w, i0}, "x_zero_point", "dtype"},
      {"ConvInteger", {x, testing::random_int8(kU8, {3, 3, 3, 3}, rng)}, "channel mismatch", "expects 3"},
      {"ConvInteger", {x, testing::random_int8(kU8, {3, 2, 6, 6}, rng)}, "too small", "spatial axis"},
      {"QLinearConv",
       {x, f1, u0, w, Tensor::from_doubles(kF32, {4}, {1, 1, 1, 1}), u0, f1, u0},
       "w_scale",
       "output channel"},
      {"QLinearConv",
       {x, Tensor::from_doubles(kF32, {2}, {1, 1}), u0, w, f1, u0, f1, u0},
       "x_scale",
       "one element"},
      {"QLinearConv",
       {x, f1, u0, w, f1, u0, f1, u0, Tensor::from_doubles(kI32, {2}, {1, 1})},
       "input B",
       "output channel"},
      {"QLinearConv",
       {x, f1, u0, w, f1, u0, f1, u0, Tensor::from_doubles(kF32, {3}, {1, 1, 1})},
       "dtype",
       "int32"},
      {"QLinearConv", {x, f1, u0, w, f1, i0, f1, u0}, "w_zero_point", "dtype"},
  };
  for (const Bad& b : bad) {
    auto r = run_op(b.op, b.in, {}, 10);
    ASSERT_FALSE(r.is_ok()) << b.op << " " << b.text1;
    EXPECT_TRUE(contains(r.status().to_string(), b.text1)) << r.status().to_string();
    EXPECT_TRUE(contains(r.status().to_string(), b.text2)) << r.status().to_string();
  }
  // Conv attributes are Conv's: the error names the attribute.
  auto r = run_op("ConvInteger", {x, w}, attrs_of({{"group", int64_t{0}}}), 10);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "group") << r.status().to_string();
  r = run_op("QLinearConv", {x, f1, u0, w, f1, u0, f1, u0}, attrs_of({{"strides", std::vector<int64_t>{1}}}),
             10);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "strides") << r.status().to_string();
}

TEST(IntegerErrors, ThroughTheEngineErrorsNameTheNode) {
  SCOPED_TRACE("seed " + std::to_string(seed()));
  std::mt19937 rng(seed());
  {
    // A per-row zero point of the wrong length, known at build time.
    OnnxModelBuilder b(10);
    b.input("a", kU8, {4, 3});
    b.input("b", kU8, {3, 2});
    b.initializer("azp", Tensor::from_doubles(kU8, {3}, {1, 2, 3}));
    b.node("MatMulInteger", {"a", "b", "azp"}, {"y"}, "qgemm");
    b.output("y", kI32);
    auto e = Engine::build_from_onnx_bytes(b.bytes(), BuilderConfig{}, "mmi.onnx");
    ASSERT_FALSE(e.is_ok());
    EXPECT_EQ(e.status().node_name(), "qgemm") << e.status().to_string();
    EXPECT_TRUE(contains(e.status().to_string(), "a_zero_point")) << e.status().to_string();
  }
  // QLinearMatMul with its scale as a graph input: the values arrive per run. A scale whose shape
  // does not fit A is refused at build time naming the node and the input.
  auto model = [](std::vector<DimSpec> scale_dims) {
    OnnxModelBuilder b(10);
    b.input("a", kI8, {2, 3, 5});
    b.input("as", kF32, scale_dims);
    b.input("b", kU8, {5, 2});
    b.initializer("azp", scalar_of(kI8, -2));
    b.initializer("bs", scalar_of(kF32, 0.02));
    b.initializer("bzp", scalar_of(kU8, 120));
    b.initializer("ys", scalar_of(kF32, 0.05));
    b.initializer("yzp", scalar_of(kU8, 128));
    b.node("QLinearMatMul", {"a", "as", "azp", "b", "bs", "bzp", "ys", "yzp"}, {"y"}, "qmm");
    b.output("y", kU8);
    return Engine::build_from_onnx_bytes(b.bytes(), BuilderConfig{}, "qmm.onnx");
  };
  auto e = model({3});
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  auto ctx = e.value()->create_context();
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
  Tensor a = testing::random_int8(kI8, {2, 3, 5}, rng), bt = testing::random_int8(kU8, {5, 2}, rng);
  Tensor as = Tensor::from_doubles(kF32, {3}, {0.01, 0.02, 0.03});
  std::map<std::string, Tensor> in = {{"a", a}, {"as", as}, {"b", bt}};
  std::map<std::string, Tensor> out;
  Status st = ctx.value()->run(in, out);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  std::vector<int64_t> od;
  auto sums = naive_matmul(a, scalar_of(kI8, -2), bt, scalar_of(kU8, 120), &od);
  std::vector<double> want;
  for (size_t i = 0; i < sums.size(); ++i)
    want.push_back(requant(sums[i], static_cast<float>(as.get(static_cast<int64_t>(i) / 2 % 3)), 0.02f, 0.05f,
                           128, kU8));
  EXPECT_EQ(out["y"].dims(), od);
  expect_exact(out["y"], want, "engine QLinearMatMul");
  e = model({2});
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().node_name(), "qmm") << e.status().to_string();
  EXPECT_TRUE(contains(e.status().to_string(), "a_scale")) << e.status().to_string();
}

}  // namespace
}  // namespace graft
