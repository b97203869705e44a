// The float16 pass's constant conversion (graph/precision.h, float16_constant): nonzero values that
// float16 would round to 0 become its smallest subnormal, finite values beyond its range become
// +-65504, and F.normalize's x / clamp_min(||x||, 1e-12) stays finite over an all-zero row (swin_v2_t
// padding windows gave 0/0 = NaN once 1e-12 was 0 in float16). An upsampling Resize whose output
// leaves the float16 region stays float32, so the Cast converts its smaller input.
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


// x -> Relu -> Resize -> y, with a dynamic batch: `scale` the last two axes' factor, `relu_after`
// puts a Relu between the Resize and y.
std::unique_ptr<Graph> relu_resize(double scale, bool relu_after) {
  OnnxModelBuilder b;
  b.opset("", 19);
  b.input("x", kF32, {"N", 2, 6, 8});
  b.initializer("scales", Tensor::from_doubles(kF32, {4}, {1, 1, scale, scale}));
  b.node("Relu", {"x"}, {"r"});
  auto& rs = b.node("Resize", {"r", "", "scales"}, {relu_after ? "u" : "y"});
  b.attr(rs, "mode", std::string("linear"));
  if (relu_after) b.node("Relu", {"u"}, {"y"});
  b.output("y", kF32);
  return load(b);
}

PrecisionPolicy every_op_in_float16() {
  PrecisionPolicy policy;
  policy.supports_fp16 = [](const Node&) { return true; };
  return policy;
}

TEST(Float16Pass, UpsamplingResizeIntoAGraphOutputStaysFloat32) {
  auto g = relu_resize(4, false);
  ASSERT_TRUE(g);
  std::mt19937 rng(std::random_device{}());
  const std::map<std::string, Tensor> feeds{{"x", random_tensor(kF32, {3, 2, 6, 8}, rng, -2, 2)}};
  const auto want = run_graph(*g, feeds);
  auto half = convert_to_fp16(*g, every_op_in_float16());
  ASSERT_TRUE(half.is_ok()) << half.status().to_string();
  const Node* resize = find_op(*g, "Resize");
  const Node* relu = find_op(*g, "Relu");
  ASSERT_TRUE(resize && relu);
  EXPECT_EQ(relu->outputs[0]->desc.dtype, DataType::kFloat16);
  EXPECT_EQ(resize->inputs[0]->desc.dtype, kF32);
  EXPECT_EQ(resize->outputs[0]->desc.dtype, kF32);
  ASSERT_NE(resize->inputs[0]->producer, nullptr);
  EXPECT_EQ(resize->inputs[0]->producer->op_type, "Cast") << "the cast converts the 6x8 input, not the 24x32 output";
  EXPECT_EQ(count_op(*g, "Cast"), 2);  // x to float16, Relu's output back to float32
  const auto got = run_graph(*g, feeds);
  expect_close(got.at("y"), want.at("y"), 2e-3, 2e-3);
}

TEST(Float16Pass, DownsamplingResizeOrOneReadInFloat16StaysFloat16) {
  for (const bool relu_after : {false, true}) {
    auto g = relu_resize(relu_after ? 4 : 0.5, relu_after);
    ASSERT_TRUE(g);
    auto half = convert_to_fp16(*g, every_op_in_float16());
    ASSERT_TRUE(half.is_ok()) << half.status().to_string();
    const Node* resize = find_op(*g, "Resize");
    ASSERT_NE(resize, nullptr);
    EXPECT_EQ(resize->outputs[0]->desc.dtype, DataType::kFloat16) << (relu_after ? "read by a float16 Relu" : "0.5x");
  }
}

}  // namespace
}  // namespace graft
