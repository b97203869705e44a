// fold_quantize_dequantize_pairs: QuantizeLinear -> DequantizeLinear pairs over one scalar scale
// and zero point become GraftQuantizeDequantize, whose CPU reference must equal the pair to the bit
// (ties, saturation and NaN included), and which an NHWC region flows through. Fresh random data.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "graph/passes.h"
#include "tests/unit/graph_pass_test_util.h"

namespace graft {
namespace {

using testing::OnnxModelBuilder;

Tensor scalar(DataType dt, double v) {
  Tensor t = Tensor::empty(dt, {});
  t.set(0, v);
  return t;
}

// x with values that land on every kind of rounding case for scale 2^-3: exact ties (k + 0.5
// steps), values past either end of the 8-bit range, NaN and infinities, and random values.
Tensor awkward_input(std::vector<int64_t> dims, std::mt19937& rng) {
  Tensor x = testing::random_tensor(DataType::kFloat32, std::move(dims), rng, -20.0, 20.0);
  std::uniform_int_distribution<int> k(-140, 140);
  for (int64_t i = 0; i < x.numel(); i += 3) x.set(i, (k(rng) + 0.5) * 0.125);
  x.set(1, std::numeric_limits<double>::quiet_NaN());
  x.set(4, std::numeric_limits<double>::infinity());
  x.set(7, -std::numeric_limits<double>::infinity());
  x.set(10, 1000.0);
  x.set(13, -1000.0);
  return x;
}

// Random small integers as floats: every convolution sum is exact in any order.
Tensor integers(std::vector<int64_t> dims, std::mt19937& rng) {
  Tensor t = Tensor::empty(DataType::kFloat32, std::move(dims));
  std::uniform_int_distribution<int> d(-3, 3);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, d(rng));
  return t;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.dims() == b.dims() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

// x -> Q -> DQ -> Relu -> y (int8, zero point -3) and x -> Q2 -> DQ2 -> z (uint8, no zero point),
// and the uint8 integers of Q2 also a graph output (`z_q`), so Q2 must stay.
OnnxModelBuilder pair_model() {
  OnnxModelBuilder b(13);
  b.input("x", DataType::kFloat32, {2, 3, 4, 5});
  b.initializer("s", scalar(DataType::kFloat32, 0.125));
  b.initializer("zp", scalar(DataType::kInt8, -3));
  b.node("QuantizeLinear", {"x", "s", "zp"}, {"xq"}, "q");
  b.node("DequantizeLinear", {"xq", "s", "zp"}, {"xd"}, "dq");
  b.node("Relu", {"xd"}, {"y"}, "relu");
  b.initializer("s2", scalar(DataType::kFloat32, 0.0625));
  b.node("QuantizeLinear", {"x", "s2"}, {"z_q"}, "q2");
  b.node("DequantizeLinear", {"z_q", "s2"}, {"z"}, "dq2");
  b.output("y", DataType::kFloat32);
  b.output("z", DataType::kFloat32);
  b.output("z_q", DataType::kUInt8);
  return b;
}

TEST(FoldQuantizeDequantize, EqualsThePairToTheBit) {
  std::mt19937 rng(std::random_device{}());
  auto b = pair_model();
  auto want_graph = testing::load(b);
  auto g = testing::load(b);
  ASSERT_TRUE(g && want_graph);
  auto folded = fold_quantize_dequantize_pairs(*g);
  ASSERT_TRUE(folded.is_ok()) << folded.status().to_string();
  EXPECT_EQ(*folded, 2);
  ASSERT_TRUE(infer_shapes(*g).is_ok());
  EXPECT_EQ(testing::count_op(*g, "GraftQuantizeDequantize"), 2);
  EXPECT_EQ(testing::count_op(*g, "DequantizeLinear"), 0);
  EXPECT_EQ(testing::count_op(*g, "QuantizeLinear"), 1) << "q2's integers are a graph output: it stays";
  for (int round = 0; round < 3; ++round) {
    std::map<std::string, Tensor> feeds{{"x", awkward_input({2, 3, 4, 5}, rng)}};
    auto want = testing::run_graph(*want_graph, feeds);
    auto got = testing::run_graph(*g, feeds);
    for (const char* o : {"y", "z", "z_q"}) {
      ASSERT_TRUE(got.count(o) && want.count(o)) << o;
      EXPECT_TRUE(same_bits(got.at(o), want.at(o))) << o;
    }
    // The checks above would pass on a constant output: the pair must not be one.
    double lo = 0, hi = 0;
    for (int64_t i = 0; i < want.at("z").numel(); ++i) {
      lo = std::min(lo, want.at("z").get(i));
      hi = std::max(hi, want.at("z").get(i));
    }
    EXPECT_EQ(lo, 0.0);
    EXPECT_EQ(hi, 255 * 0.0625) << "uint8 saturates at 255 steps";
  }
}

// One value quantized the same way for two readers (two initializers of one scale value, as two
// fake quantizers calibrated on one tensor export them) becomes one folded pair; a third pair with
// another scale, and one whose output is a graph output, stay their own.
TEST(FoldQuantizeDequantize, EqualPairsOverOneValueMerge) {
  std::mt19937 rng(std::random_device{}());
  OnnxModelBuilder b(13);
  b.input("x", DataType::kFloat32, {2, 3, 4, 5});
  b.initializer("s_a", scalar(DataType::kFloat32, 0.125));
  b.initializer("s_b", scalar(DataType::kFloat32, 0.125));
  b.initializer("s_c", scalar(DataType::kFloat32, 0.25));
  b.initializer("zp", scalar(DataType::kInt8, 0));
  b.node("QuantizeLinear", {"x", "s_a", "zp"}, {"a_q"}, "a_q");
  b.node("DequantizeLinear", {"a_q", "s_a", "zp"}, {"a"}, "a_dq");
  b.node("QuantizeLinear", {"x", "s_b", "zp"}, {"b_q"}, "b_q");
  b.node("DequantizeLinear", {"b_q", "s_b", "zp"}, {"b"}, "b_dq");
  b.node("QuantizeLinear", {"x", "s_c", "zp"}, {"c_q"}, "c_q");
  b.node("DequantizeLinear", {"c_q", "s_c", "zp"}, {"c"}, "c_dq");
  b.node("QuantizeLinear", {"x", "s_b", "zp"}, {"d_q"}, "d_q");
  b.node("DequantizeLinear", {"d_q", "s_b", "zp"}, {"d"}, "d_dq");
  b.node("Relu", {"a"}, {"ra"}, "relu");
  b.node("Neg", {"b"}, {"nb"}, "neg");
  b.node("Add", {"c", "nb"}, {"y"}, "add");
  b.output("ra", DataType::kFloat32);
  b.output("y", DataType::kFloat32);
  b.output("d", DataType::kFloat32);
  auto want_graph = testing::load(b);
  auto g = testing::load(b);
  ASSERT_TRUE(g && want_graph);
  auto folded = fold_quantize_dequantize_pairs(*g);
  ASSERT_TRUE(folded.is_ok()) << folded.status().to_string();
  EXPECT_EQ(*folded, 4);
  ASSERT_TRUE(infer_shapes(*g).is_ok());
  EXPECT_EQ(testing::count_op(*g, "GraftQuantizeDequantize"), 3) << "a and b merge; c (another scale) and d (a graph output) stay";
  for (int round = 0; round < 2; ++round) {
    std::map<std::string, Tensor> feeds{{"x", awkward_input({2, 3, 4, 5}, rng)}};
    auto want = testing::run_graph(*want_graph, feeds);
    auto got = testing::run_graph(*g, feeds);
    for (const char* o : {"ra", "y", "d"}) {
      ASSERT_TRUE(got.count(o) && want.count(o)) << o;
      EXPECT_TRUE(same_bits(got.at(o), want.at(o))) << o;
    }
  }
}

// Pairs that are not one quantization stay as they are: different scales, different zero points, a
// per-axis scale, a scale that is not a constant.
TEST(FoldQuantizeDequantize, LeavesOtherPairsAlone) {
  OnnxModelBuilder b(13);
  b.input("x", DataType::kFloat32, {2, 3});
  b.input("s_in", DataType::kFloat32, {});
  b.initializer("s", scalar(DataType::kFloat32, 0.125));
  b.initializer("s_other", scalar(DataType::kFloat32, 0.25));
  b.initializer("zp", scalar(DataType::kUInt8, 3));
  b.initializer("zp_other", scalar(DataType::kUInt8, 4));
  Tensor per_axis = Tensor::empty(DataType::kFloat32, {3});
  for (int i = 0; i < 3; ++i) per_axis.set(i, 0.125 * (i + 1));
  b.initializer("s_axis", per_axis);
  b.node("QuantizeLinear", {"x", "s"}, {"a_q"}, "a_q");
  b.node("DequantizeLinear", {"a_q", "s_other"}, {"a"}, "a_dq");
  b.node("QuantizeLinear", {"x", "s", "zp"}, {"b_q"}, "b_q");
  b.node("DequantizeLinear", {"b_q", "s", "zp_other"}, {"bb"}, "b_dq");
  auto& cq = b.node("QuantizeLinear", {"x", "s_axis"}, {"c_q"}, "c_q");
  OnnxModelBuilder::attr(cq, "axis", int64_t{1});
  auto& cdq = b.node("DequantizeLinear", {"c_q", "s_axis"}, {"c"}, "c_dq");
  OnnxModelBuilder::attr(cdq, "axis", int64_t{1});
  b.node("QuantizeLinear", {"x", "s_in"}, {"d_q"}, "d_q");
  b.node("DequantizeLinear", {"d_q", "s_in"}, {"d"}, "d_dq");
  for (const char* o : {"a", "bb", "c", "d"}) b.output(o, DataType::kFloat32);
  auto g = testing::load(b);
  ASSERT_TRUE(g);
  auto folded = fold_quantize_dequantize_pairs(*g);
  ASSERT_TRUE(folded.is_ok()) << folded.status().to_string();
  EXPECT_EQ(*folded, 0);
  EXPECT_EQ(testing::count_op(*g, "QuantizeLinear"), 4);
  EXPECT_EQ(testing::count_op(*g, "DequantizeLinear"), 4);
}

// Conv -> Relu -> (Q -> DQ) -> Conv, all NHWC: the folded pair stays inside the region (no
// Transpose between the convolutions), where the unfolded pair left it.
TEST(FoldQuantizeDequantize, NhwcRegionFlowsThroughTheFoldedPair) {
  std::mt19937 rng(std::random_device{}());
  OnnxModelBuilder b(13);
  b.input("x", DataType::kFloat32, {1, 8, 6, 6});
  b.initializer("w1", integers({8, 8, 3, 3}, rng));
  b.initializer("w2", integers({8, 8, 1, 1}, rng));
  b.initializer("s", scalar(DataType::kFloat32, 2.0));  // odd sums are exact ties
  b.initializer("zp", scalar(DataType::kInt8, 0));
  auto& c1 = b.node("Conv", {"x", "w1"}, {"c1"}, "conv1");
  OnnxModelBuilder::attr(c1, "pads", std::vector<int64_t>{1, 1, 1, 1});
  b.node("Relu", {"c1"}, {"r1"}, "relu1");
  b.node("QuantizeLinear", {"r1", "s", "zp"}, {"r1_q"}, "q");
  b.node("DequantizeLinear", {"r1_q", "s", "zp"}, {"r1_dq"}, "dq");
  b.node("Conv", {"r1_dq", "w2"}, {"y"}, "conv2");
  b.output("y", DataType::kFloat32);
  auto every_conv = [](const Node&) { return true; };

  auto unfolded = testing::load(b);
  ASSERT_TRUE(unfolded && fuse_conv_epilogues(*unfolded).is_ok());
  ASSERT_TRUE(convert_conv_regions_to_nhwc(*unfolded, every_conv).is_ok());
  const int transposes_unfolded = testing::count_op(*unfolded, "Transpose");

  auto want_graph = testing::load(b);
  auto g = testing::load(b);
  ASSERT_TRUE(g && want_graph);
  ASSERT_TRUE(fold_quantize_dequantize_pairs(*g).is_ok());
  ASSERT_TRUE(fuse_conv_epilogues(*g).is_ok());
  auto moved = convert_conv_regions_to_nhwc(*g, every_conv);
  ASSERT_TRUE(moved.is_ok()) << moved.status().to_string();
  ASSERT_TRUE(infer_shapes(*g).is_ok());
  // The input's and the output's transposes only; the unfolded pair added two more.
  EXPECT_EQ(testing::count_op(*g, "Transpose"), 2);
  EXPECT_EQ(transposes_unfolded, 4);
  // Integer data: the convolutions' sums are exact in NCHW and NHWC alike, so the quantized values
  // between them, and the outputs, must agree exactly.
  std::map<std::string, Tensor> feeds{{"x", integers({1, 8, 6, 6}, rng)}};
  auto want = testing::run_graph(*want_graph, feeds);
  auto got = testing::run_graph(*g, feeds);
  ASSERT_TRUE(got.count("y") && want.count("y"));
  double largest = 0;
  for (int64_t i = 0; i < want.at("y").numel(); ++i) largest = std::max(largest, std::fabs(want.at("y").get(i)));
  ASSERT_GT(largest, 0.0);
  EXPECT_TRUE(same_bits(got.at("y"), want.at("y")));
}

}  // namespace
}  // namespace graft
