// Value::quantized: constant folding records the integers and scales a DequantizeLinear of 8-bit
// constants made its float constant from (what an INT8 kernel runs on), fold_batchnorm carries the
// record over to the filter it scales, and nothing is recorded where the integers could not stand
// in for the floats (a nonzero zero point, blocked quantization, scales over input channels once a
// BatchNormalization scales the output channels). Fresh random data.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "graph/passes.h"
#include "tests/unit/graph_pass_test_util.h"

namespace graft {
namespace {

using testing::OnnxModelBuilder;

constexpr int64_t kM = 6, kC = 4;

using testing::random_int8;

Tensor random_positive(int64_t n, std::mt19937& rng, double lo, double hi) {
  return testing::random_tensor(DataType::kFloat32, {n}, rng, lo, hi);
}

// x -> Conv(DequantizeLinear(q, scale, zp?)) [-> BatchNormalization] -> y. The filter's scale is
// per tensor (`per_axis` < 0) or along axis `per_axis`.
OnnxModelBuilder quantized_conv(const Tensor& q, const Tensor& scale, int per_axis, const Tensor* zp, bool bn,
                                std::mt19937& rng) {
  OnnxModelBuilder b(13);
  b.input("x", DataType::kFloat32, {1, kC, 5, 5});
  b.initializer("q", q);
  b.initializer("s", scale);
  std::vector<std::string> dq_in = {"q", "s"};
  if (zp) {
    b.initializer("zp", *zp);
    dq_in.push_back("zp");
  }
  auto& dq = b.node("DequantizeLinear", dq_in, {"w"}, "dq");
  if (per_axis >= 0) OnnxModelBuilder::attr(dq, "axis", per_axis);
  auto& conv = b.node("Conv", {"x", "w"}, {bn ? "c" : "y"}, "conv");
  OnnxModelBuilder::attr(conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
  if (bn) {
    // gamma in [-2, 2]: some channels' scales usually turn negative, which the record keeps.
    b.initializer("gamma", testing::random_tensor(DataType::kFloat32, {kM}, rng, -2.0, 2.0));
    b.initializer("beta", testing::random_tensor(DataType::kFloat32, {kM}, rng, -1.0, 1.0));
    b.initializer("mean", testing::random_tensor(DataType::kFloat32, {kM}, rng, -1.0, 1.0));
    b.initializer("var", random_positive(kM, rng, 0.5, 2.0));
    b.node("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"y"}, "bn");
  }
  b.output("y", DataType::kFloat32);
  return b;
}

const Value* conv_filter(const Graph& g) {
  for (const auto& n : g.nodes())
    if (n->op_type == "Conv") return n->input(1);
  return nullptr;
}

// q * scale as DequantizeLinear computes it, element i of a [kM, kC, 3, 3] filter.
float dequantized(const QuantizedOrigin& o, int64_t i) {
  const int64_t per_m = kC * 9;
  const int64_t s = o.per_tensor() ? 0 : (o.axis == 0 ? i / per_m : i / 9 % kC);
  return static_cast<float>(o.q.get(i)) * static_cast<float>(o.scale.get(s));
}

TEST(QuantizedOrigin, FoldedDequantizeLinearKeepsItsIntegers) {
  std::mt19937 rng(std::random_device{}());
  const Tensor q = random_int8({kM, kC, 3, 3}, rng);
  const Tensor per_channel = random_positive(kM, rng, 1e-3, 1e-2);
  Tensor one = Tensor::empty(DataType::kFloat32, {});
  one.set(0, 0.0078125 * 1.37);
  Tensor zeros = Tensor::empty(DataType::kInt8, {kM});
  std::memset(zeros.data(), 0, zeros.nbytes());
  struct Case {
    const char* what;
    const Tensor* scale;
    int axis;
    const Tensor* zp;
  };
  for (const Case& c : {Case{"per output channel, zero points 0", &per_channel, 0, &zeros},
                        Case{"per tensor, no zero point", &one, -1, nullptr}}) {
    SCOPED_TRACE(c.what);
    auto g = testing::load(quantized_conv(q, *c.scale, c.axis, c.zp, false, rng));
    ASSERT_TRUE(g);
    const Value* w = conv_filter(*g);
    ASSERT_TRUE(w && w->constant && w->quantized);
    const QuantizedOrigin& o = *w->quantized;
    ASSERT_EQ(o.q.dtype(), DataType::kInt8);
    ASSERT_EQ(o.q.dims(), q.dims());
    EXPECT_EQ(std::memcmp(o.q.data(), q.data(), q.nbytes()), 0);
    EXPECT_EQ(o.per_tensor(), c.axis < 0);
    for (int64_t i = 0; i < w->constant->numel(); ++i)
      ASSERT_EQ(static_cast<float>(w->constant->get(i)), dequantized(o, i)) << "element " << i;
  }
}

TEST(QuantizedOrigin, BatchNormalizationScalesTheRecordWithTheFilter) {
  std::mt19937 rng(std::random_device{}());
  const Tensor q = random_int8({kM, kC, 3, 3}, rng);
  const Tensor scale = random_positive(kM, rng, 1e-3, 1e-2);
  auto g = testing::load(quantized_conv(q, scale, 0, nullptr, true, rng));
  ASSERT_TRUE(g);
  auto folded = fold_batchnorm(*g);
  ASSERT_TRUE(folded.is_ok()) << folded.status().to_string();
  ASSERT_EQ(*folded, 1);
  const Value* w = conv_filter(*g);
  ASSERT_TRUE(w && w->constant && w->quantized);
  const QuantizedOrigin& o = *w->quantized;
  EXPECT_EQ(std::memcmp(o.q.data(), q.data(), q.nbytes()), 0);
  ASSERT_FALSE(o.per_tensor());
  EXPECT_EQ(o.axis, 0);
  for (int64_t i = 0; i < w->constant->numel(); ++i) {
    const double have = w->constant->get(i), want = dequantized(o, i);
    // Two float roundings apart at most (W * k and scale * k, each rounded once).
    ASSERT_LE(std::fabs(have - want), 2 * std::ldexp(1.0, -23) * std::fabs(want) + 1e-30) << "element " << i;
  }
}

TEST(QuantizedOrigin, NothingRecordedWhereTheIntegersCannotStandIn) {
  std::mt19937 rng(std::random_device{}());
  const Tensor q = random_int8({kM, kC, 3, 3}, rng);
  {
    SCOPED_TRACE("a nonzero zero point");
    Tensor zp = Tensor::empty(DataType::kInt8, {kM});
    for (int64_t i = 0; i < kM; ++i) zp.set(i, i == 2 ? 5 : 0);
    auto g = testing::load(quantized_conv(q, random_positive(kM, rng, 1e-3, 1e-2), 0, &zp, false, rng));
    ASSERT_TRUE(g);
    const Value* w = conv_filter(*g);
    ASSERT_TRUE(w && w->constant);
    EXPECT_FALSE(w->quantized);
  }
  {
    SCOPED_TRACE("scales over input channels, then a BatchNormalization over output channels");
    auto g = testing::load(quantized_conv(q, random_positive(kC, rng, 1e-3, 1e-2), 1, nullptr, true, rng));
    ASSERT_TRUE(g);
    const Value* w = conv_filter(*g);
    ASSERT_TRUE(w && w->quantized);  // before the fold: recorded, along axis 1
    EXPECT_EQ(w->quantized->axis, 1);
    for (int64_t i = 0; i < w->constant->numel(); ++i)
      ASSERT_EQ(static_cast<float>(w->constant->get(i)), dequantized(*w->quantized, i)) << "element " << i;
    ASSERT_TRUE(fold_batchnorm(*g).is_ok());
    w = conv_filter(*g);
    ASSERT_TRUE(w && w->constant);
    EXPECT_FALSE(w->quantized);
  }
}

}  // namespace
}  // namespace graft
