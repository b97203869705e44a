// The float16 pass's constant conversion (graph/precision.h, float16_constant): nonzero values that
// float16 would round to 0 become its smallest subnormal, finite values beyond its range become
// +-65504, and F.normalize's x / clamp_min(||x||, 1e-12) stays finite over an all-zero row (swin_v2_t
// padding windows gave 0/0 = NaN once 1e-12 was 0 in float16).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>

#include "graph/passes.h"
#include "graph/precision.h"
#include "tests/unit/graph_pass_test_util.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/op_test_util.h"

namespace graft {
namespace {

using testing::OnnxModelBuilder;
using namespace testing;  // NOLINT(build/namespaces): the graph-pass test helpers

constexpr DataType kF32 = DataType::kFloat32;

TEST(Float16Constant, RaisesUnderflowAndClampsOverflowOnly) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<double> v = {1e-12, -1e-12, 0.0, -0.0, 1e9, -1e9, inf, -inf, nan, 1.0, 65504.0, 3e-5, 2e-8};
  Float16Clamps clamps;
  auto h = float16_constant(Tensor::from_doubles(kF32, {static_cast<int64_t>(v.size())}, v), &clamps);
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  const uint16_t* b = h.value().data_as<uint16_t>();
  EXPECT_EQ(b[0], 0x0001);  // +2^-24, not 0
  EXPECT_EQ(b[1], 0x8001);  // -2^-24
  EXPECT_EQ(b[2], 0x0000);  // zeros stay zeros, with their sign
  EXPECT_EQ(b[3], 0x8000);
  EXPECT_EQ(b[4], 0x7bff);  // +65504, not inf
  EXPECT_EQ(b[5], 0xfbff);
  EXPECT_EQ(b[6], 0x7c00);  // infinities and NaN are the model's own
  EXPECT_EQ(b[7], 0xfc00);
  EXPECT_TRUE((b[8] & 0x7c00) == 0x7c00 && (b[8] & 0x03ff) != 0);
  EXPECT_EQ(b[9], 0x3c00);  // in-range values as the plain cast gives them
  EXPECT_EQ(b[10], 0x7bff);
  EXPECT_EQ(half_to_float(b[11]), half_to_float(float_to_half(3e-5f)));
  EXPECT_EQ(b[12], 0x0001);  // 2e-8 would round to 0 (below half the smallest subnormal)
  EXPECT_EQ(clamps.raised, 3);
  EXPECT_EQ(clamps.lowered, 2);
}

// y = x / Expand(Clip(ReduceL2(x, axis -1), 1e-12)), as the TorchScript exporter writes F.normalize,
// over rows of random values with every third row zero.
TEST(Float16Constant, NormalizeOfAZeroRowStaysFiniteInFloat16) {
  OnnxModelBuilder b;
  b.input("x", kF32, {6, 16});
  b.initializer("axes", Tensor::vector_int64({-1}));
  b.initializer("eps", Tensor::from_doubles(kF32, {}, {1e-12}));
  b.initializer("shape", Tensor::vector_int64({6, 16}));
  auto& r = b.node("ReduceL2", {"x", "axes"}, {"n"});
  b.attr(r, "keepdims", int64_t{1});
  b.opset("", 18);
  b.node("Clip", {"n", "eps"}, {"c"});
  b.node("Expand", {"c", "shape"}, {"e"});
  b.node("Div", {"x", "e"}, {"y"});
  b.output("y", kF32);
  auto g = load(b);
  ASSERT_TRUE(g);
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<double> u(-3, 3);
  std::vector<double> x(96);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i / 16) % 3 == 1 ? 0.0 : u(rng);
  const std::map<std::string, Tensor> feeds{{"x", Tensor::from_doubles(kF32, {6, 16}, x)}};
  const auto want = run_graph(*g, feeds);

  PrecisionPolicy policy;
  policy.supports_fp16 = [](const Node&) { return true; };
  auto half = convert_to_fp16(*g, policy);
  ASSERT_TRUE(half.is_ok()) << half.status().to_string();
  const Node* clip = find_op(*g, "Clip");
  ASSERT_NE(clip, nullptr);
  ASSERT_EQ(clip->inputs[1]->desc.dtype, DataType::kFloat16);
  ASSERT_TRUE(clip->inputs[1]->constant.has_value());
  EXPECT_EQ(clip->inputs[1]->constant->data_as<uint16_t>()[0], 0x0001) << "1e-12 must not become 0 in float16";

  const auto got = run_graph(*g, feeds);
  const Tensor& y = got.at("y");
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_TRUE(std::isfinite(y.get(i))) << "element " << i;
  for (int64_t i = 16; i < 32; ++i) EXPECT_EQ(y.get(i), 0.0) << "the zero row stays zero";
  expect_close(y, want.at("y"), 2e-3, 2e-3);
}

}  // namespace
}  // namespace graft
