// quantized_convs_to_int8 (the CUDA builder's "int8 convs" pass, src/graph/int8_convs.cpp): after the
// fusion, float16 and layout passes, a convolution over a folded int8 Q/DQ pair with a filter folded
// from int8 DequantizeLinear becomes GraftConvInt8 over the integers, its input quantized once per
// pair. The converted graph must compute what the float16 graph before it did (up to float16's
// rounding of the dequantized operands, which the integers avoid), and convolutions the INT8 kernel
// cannot run must stay as they were. Run through the passes on the CPU reference; fresh random data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "graph/passes.h"
#include "graph/precision.h"
#include "ops/internal_ops.h"
#include "tests/unit/graph_pass_test_util.h"

namespace graft {
namespace {

using testing::OnnxModelBuilder;

Tensor scalar(DataType dt, double v) { return Tensor::from_doubles(dt, {}, {v}); }
using testing::random_int8;

struct Spec {
  int64_t c = 16, m = 32;
  int zero_point = 0;        // the activations' (a nonzero one cannot use the kernel)
  bool quantized_filter = true;
  bool second_reader = false;  // a 1x1 convolution reading the same pair (ResNet's downsample)
  bool float_reader = false;   // a Relu reading the pair's output too: the pair must stay for it
  int64_t k = 3;               // the quantized convolution's kernel, k x k, padded to keep 7x7
};

// x -> Conv 1x1 -> Relu -> Q -> DQ -> Conv(DQ(q_w), B, pads 1) -> Relu -> y [, -> Conv 1x1 -> y2]
// [, -> Relu -> y3]. The first convolution puts the pair inside an NHWC region, as a quantized
// network's pairs are (each reads the layer before).
OnnxModelBuilder model(const Spec& s, std::mt19937& rng) {
  OnnxModelBuilder b(13);
  b.input("x", DataType::kFloat32, {2, s.c, 7, 7});
  b.initializer("w0", testing::random_tensor(DataType::kFloat32, {s.c, s.c, 1, 1}, rng, -0.5, 0.5));
  b.node("Conv", {"x", "w0"}, {"c0"}, "conv0");
  b.node("Relu", {"c0"}, {"r0"}, "relu0");
  b.initializer("sx", scalar(DataType::kFloat32, 0.0213));
  b.initializer("zx", scalar(DataType::kInt8, s.zero_point));
  b.node("QuantizeLinear", {"r0", "sx", "zx"}, {"xq"}, "q");
  b.node("DequantizeLinear", {"xq", "sx", "zx"}, {"xd"}, "dq");
  if (s.quantized_filter) {
    b.initializer("wq", random_int8({s.m, s.c, s.k, s.k}, rng));
    b.initializer("sw", testing::random_tensor(DataType::kFloat32, {s.m}, rng, 1e-3, 4e-3));
    auto& dw = b.node("DequantizeLinear", {"wq", "sw"}, {"w"}, "dq_w");
    OnnxModelBuilder::attr(dw, "axis", 0);
  } else {
    b.initializer("w", testing::random_tensor(DataType::kFloat32, {s.m, s.c, s.k, s.k}, rng, -0.3, 0.3));
  }
  b.initializer("bias", testing::random_tensor(DataType::kFloat32, {s.m}, rng, -0.5, 0.5));
  auto& conv = b.node("Conv", {"xd", "w", "bias"}, {"c"}, "conv");
  OnnxModelBuilder::attr(conv, "pads", std::vector<int64_t>{s.k / 2, s.k / 2, s.k / 2, s.k / 2});
  b.node("Relu", {"c"}, {"y"}, "relu");
  b.output("y", DataType::kFloat32);
  if (s.second_reader) {
    b.initializer("wq2", random_int8({8, s.c, 1, 1}, rng));
    b.initializer("sw2", scalar(DataType::kFloat32, 0.0031));
    b.node("DequantizeLinear", {"wq2", "sw2"}, {"w2"}, "dq_w2");
    b.node("Conv", {"xd", "w2"}, {"y2"}, "down");
    b.output("y2", DataType::kFloat32);
  }
  if (s.float_reader) {
    b.node("Relu", {"xd"}, {"y3"}, "relu_of_pair");
    b.output("y3", DataType::kFloat32);
  }
  return b;
}

// The CUDA builder's passes up to the layout pass, as its list runs them: the pair folded, the
// epilogues fused, float16 (the pair's scale and zero point kept, as the engine keeps host inputs),
// every convolution in NHWC.
void passes_before_int8(Graph& g) {
  ASSERT_TRUE(fold_quantize_dequantize_pairs(g).is_ok());
  ASSERT_TRUE(fuse_conv_epilogues(g).is_ok());
  PrecisionPolicy policy;
  policy.supports_fp16 = [](const Node&) { return true; };
  policy.keep_inputs = [](const Node& n) {
    return is_internal(n, "GraftQuantizeDequantize") ? std::vector<int>{1, 2} : std::vector<int>{};
  };
  auto half = convert_to_fp16(g, policy);
  ASSERT_TRUE(half.is_ok()) << half.status().to_string();
  auto moved = convert_conv_regions_to_nhwc(g, [](const Node&) { return true; });
  ASSERT_TRUE(moved.is_ok()) << moved.status().to_string();
  ASSERT_TRUE(infer_shapes(g).is_ok());
}

// Largest |got - want| over the largest |want|, per output.
double worst_error(const std::map<std::string, Tensor>& got, const std::map<std::string, Tensor>& want) {
  double worst = 0;
  for (const auto& [name, w] : want) {
    const Tensor& gt = got.at(name);
    double num = 0, den = 0;
    for (int64_t i = 0; i < w.numel(); ++i) {
      num = std::max(num, std::fabs(gt.get(i) - w.get(i)));
      den = std::max(den, std::fabs(w.get(i)));
    }
    worst = std::max(worst, den > 0 ? num / den : num);
  }
  return worst;
}

TEST(Int8Convs, QuantizedConvolutionRunsOnItsIntegers) {
  std::mt19937 rng(std::random_device{}());
  for (const Spec& s : {Spec{}, Spec{16, 32, 0, true, true, false}, Spec{32, 24, 0, true, true, true}}) {
    SCOPED_TRACE("c " + std::to_string(s.c) + " m " + std::to_string(s.m) + (s.second_reader ? " + downsample" : "") +
                 (s.float_reader ? " + a float reader" : ""));
    const OnnxModelBuilder built = model(s, rng);
    auto g = testing::load(built);
    auto original = testing::load(built);
    ASSERT_TRUE(g && original);
    passes_before_int8(*g);
    const std::map<std::string, Tensor> feeds{{"x", testing::random_tensor(DataType::kFloat32, {2, s.c, 7, 7}, rng, -1, 1)}};
    const auto want = testing::run_graph(*g, feeds);
    auto converted = quantized_convs_to_int8(*g);
    ASSERT_TRUE(converted.is_ok()) << converted.status().to_string();
    EXPECT_EQ(*converted, s.second_reader ? 2 : 1);
    // The float32 epilogue adds the model's float32 bias, not the float16 pass's rounding of it.
    const Tensor& bias = *original->find_value("bias")->constant;
    for (const auto& n : g->nodes())
      if (is_internal(*n, "GraftConvInt8") && n->input(3)) {
        ASSERT_EQ(n->input(3)->constant->numel(), bias.numel());
        for (int64_t c = 0; c < bias.numel(); ++c) EXPECT_EQ(n->input(3)->constant->get(c), bias.get(c)) << "filter " << c;
      }
    EXPECT_EQ(testing::count_op(*g, "GraftConvInt8"), *converted);
    EXPECT_EQ(testing::count_op(*g, "GraftConv"), 1);  // conv0's float filter stays
    EXPECT_EQ(testing::count_op(*g, "QuantizeLinear"), 1);  // one per pair, however many convolutions read it
    EXPECT_EQ(testing::count_op(*g, "GraftQuantizeDequantize"), s.float_reader ? 1 : 0);
    const auto got = testing::run_graph(*g, feeds);
    ASSERT_EQ(got.size(), want.size());
    // The float16 graph rounded the dequantized activations and filters to float16 (relative 2^-11
    // each) before summing; the integers are exact. Both outputs are float16.
    EXPECT_LE(worst_error(got, want), 4e-3);
  }
}

// x -> Conv 1x1 -> Relu -> Q/DQ -> Conv 3x3 (int8 filter) -> Relu -> Q/DQ -> Conv 3x3 (int8 filter) -> y:
// the middle convolution's output is only quantized again, so it writes int8 itself.
OnnxModelBuilder chain(std::mt19937& rng) {
  OnnxModelBuilder b(13);
  b.input("x", DataType::kFloat32, {2, 16, 6, 6});
  b.initializer("w0", testing::random_tensor(DataType::kFloat32, {16, 16, 1, 1}, rng, -0.5, 0.5));
  b.node("Conv", {"x", "w0"}, {"c0"}, "conv0");
  b.node("Relu", {"c0"}, {"r0"}, "relu0");
  b.initializer("zp", scalar(DataType::kInt8, 0));
  const char* in = "r0";
  for (int i = 1; i <= 2; ++i) {
    const std::string k = std::to_string(i);
    b.initializer("s" + k, scalar(DataType::kFloat32, i == 1 ? 0.0127 : 0.0391));
    b.node("QuantizeLinear", {in, "s" + k, "zp"}, {"q" + k}, "q" + k);
    b.node("DequantizeLinear", {"q" + k, "s" + k, "zp"}, {"d" + k}, "dq" + k);
    b.initializer("wq" + k, random_int8({16, 16, 3, 3}, rng));
    b.initializer("sw" + k, testing::random_tensor(DataType::kFloat32, {16}, rng, 1e-3, 4e-3));
    auto& dw = b.node("DequantizeLinear", {"wq" + k, "sw" + k}, {"w" + k}, "dq_w" + k);
    OnnxModelBuilder::attr(dw, "axis", 0);
    auto& conv = b.node("Conv", {"d" + k, "w" + k}, {"c" + k}, "conv" + k);
    OnnxModelBuilder::attr(conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
    b.node("Relu", {"c" + k}, {i == 1 ? "r1" : "y"}, "relu" + k);
    in = "r1";
  }
  b.output("y", DataType::kFloat32);
  return b;
}

TEST(Int8Convs, ConvolutionFeedingTheNextQuantizerWritesInt8) {
  std::mt19937 rng(std::random_device{}());
  auto g = testing::load(chain(rng));
  ASSERT_TRUE(g);
  passes_before_int8(*g);
  const std::map<std::string, Tensor> feeds{{"x", testing::random_tensor(DataType::kFloat32, {2, 16, 6, 6}, rng, -1, 1)}};
  const auto want = testing::run_graph(*g, feeds);
  auto converted = quantized_convs_to_int8(*g);
  ASSERT_TRUE(converted.is_ok()) << converted.status().to_string();
  EXPECT_EQ(*converted, 2);
  EXPECT_EQ(testing::count_op(*g, "QuantizeLinear"), 1);  // the first pair's; conv1 quantizes its own output
  int int8_out = 0;
  for (const auto& n : g->nodes())
    if (is_internal(*n, "GraftConvInt8") && n->outputs[0]->desc.dtype == DataType::kInt8) {
      ++int8_out;
      EXPECT_FLOAT_EQ(n->attrs.get_float("out_scale", 0.f).value(), 0.0391f);
    }
  EXPECT_EQ(int8_out, 1);
  const auto got = testing::run_graph(*g, feeds);
  // conv1's output is quantized from float32 here and from float16 before: a value within float16's
  // rounding of a rounding boundary lands one step apart, which moves conv2's outputs by a few
  // thousandths of their range.
  EXPECT_LE(worst_error(got, want), 2e-2);
}

TEST(Int8Convs, LeavesWhatTheKernelCannotRun) {
  std::mt19937 rng(std::random_device{}());
  struct Case {
    const char* what;
    Spec spec;
  };
  for (const Case& c : {Case{"8 channels", Spec{8, 32}}, Case{"a nonzero zero point", Spec{16, 32, 3}},
                        Case{"a float filter", Spec{16, 32, 0, false}},
                        Case{"2^17 reduction terms (91 x 91 x 16: int32 sums could overflow)",
                             Spec{16, 32, 0, true, false, false, 91}}}) {
    SCOPED_TRACE(c.what);
    auto g = testing::load(model(c.spec, rng));
    ASSERT_TRUE(g);
    passes_before_int8(*g);
    auto converted = quantized_convs_to_int8(*g);
    ASSERT_TRUE(converted.is_ok()) << converted.status().to_string();
    EXPECT_EQ(*converted, 0);
    EXPECT_EQ(testing::count_op(*g, "GraftConvInt8"), 0);
    EXPECT_EQ(testing::count_op(*g, "QuantizeLinear"), 0);
  }
}

}  // namespace
}  // namespace graft
