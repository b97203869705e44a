// ONNX's DeformConv (opset 19) read as graft's ModulatedDeformConv2d (src/onnx/deform_conv_rewrite.h):
// a DeformConv model must give exactly what the ModulatedDeformConv2d model written by hand with the
// same geometry gives (the same kernel runs both, so the outputs are bit-identical; the op itself is
// checked against its formula and torchvision in the op harness), with a dynamic batch, with and
// without the optional mask and bias; the refusals name the node and attribute.
#include <gtest/gtest.h>

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

using testing::OnnxModelBuilder;
using testing::random_tensor;

// x [batch, 4, 7, 6], 3x3 kernel, stride (2, 1), pads (1, 2) both sides, dilation (1, 2), 2 groups,
// 2 offset groups: output [batch, 6, 4, 6] ((7 + 2 - 3) / 2 + 1 rows, 6 + 4 - 5 + 1 columns).
BuilderConfig batch_profile(bool with_mask) {
  BuilderConfig c;
  c.profile["x"] = ProfileRange{{1, 4, 7, 6}, {2, 4, 7, 6}, {3, 4, 7, 6}};
  c.profile["offset"] = ProfileRange{{1, 36, 4, 6}, {2, 36, 4, 6}, {3, 36, 4, 6}};
  if (with_mask) c.profile["mask"] = ProfileRange{{1, 18, 4, 6}, {2, 18, 4, 6}, {3, 18, 4, 6}};
  return c;
}

void declare_inputs(OnnxModelBuilder& m, bool with_mask) {
  m.input("x", DataType::kFloat32, {"batch", 4, 7, 6});
  m.input("offset", DataType::kFloat32, {"batch", 36, 4, 6});
  if (with_mask) m.input("mask", DataType::kFloat32, {"batch", 18, 4, 6});
}

std::string deform_conv_model(const Tensor& w, const Tensor* b, bool with_mask) {
  OnnxModelBuilder m(19, 9);
  declare_inputs(m, with_mask);
  m.initializer("w", w);
  if (b) m.initializer("b", *b);
  auto& n = m.node("DeformConv", {"x", "w", "offset", b ? "b" : "", with_mask ? "mask" : ""}, {"y"}, "dcn");
  OnnxModelBuilder::attr(n, "strides", std::vector<int64_t>{2, 1});
  OnnxModelBuilder::attr(n, "pads", std::vector<int64_t>{1, 2, 1, 2});
  OnnxModelBuilder::attr(n, "dilations", std::vector<int64_t>{1, 2});
  OnnxModelBuilder::attr(n, "group", int64_t{2});
  OnnxModelBuilder::attr(n, "offset_group", int64_t{2});
  OnnxModelBuilder::attr(n, "kernel_shape", std::vector<int64_t>{3, 3});
  m.output("y", DataType::kFloat32);
  return m.bytes();
}

// The same convolution written as graft's op, the mask a graph input (ones where DeformConv has none).
std::string modulated_model(const Tensor& w, const Tensor* b) {
  OnnxModelBuilder m(19, 9);
  declare_inputs(m, true);
  m.initializer("w", w);
  if (b) m.initializer("b", *b);
  std::vector<std::string> in{"x", "offset", "mask", "w"};
  if (b) in.push_back("b");
  auto& n = m.node("ModulatedDeformConv2d", in, {"y"}, "mdcn", "ai.onnx.contrib");
  OnnxModelBuilder::attr(n, "stride", std::vector<int64_t>{2, 1});
  OnnxModelBuilder::attr(n, "padding", std::vector<int64_t>{1, 2});
  OnnxModelBuilder::attr(n, "dilation", std::vector<int64_t>{1, 2});
  OnnxModelBuilder::attr(n, "groups", int64_t{2});
  OnnxModelBuilder::attr(n, "deform_groups", int64_t{2});
  m.opset("ai.onnx.contrib", 1);
  m.output("y", DataType::kFloat32);
  return m.bytes();
}

Tensor run(const std::string& bytes, const std::map<std::string, Tensor>& feeds) {
  auto eng = Engine::build_from_onnx_bytes(bytes, batch_profile(feeds.count("mask") > 0), "deform.onnx");
  EXPECT_TRUE(eng.is_ok()) << eng.status().to_string();
  if (!eng.is_ok()) return {};
  auto ctx = (*eng)->create_context();
  std::map<std::string, Tensor> outs;
  Status st = (*ctx)->run(feeds, outs);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return st.is_ok() ? outs.at("y") : Tensor{};
}

TEST(DeformConv, RunsAsModulatedDeformConv2dWithAndWithoutMaskAndBias) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const Tensor w = random_tensor(DataType::kFloat32, {6, 2, 3, 3}, rng);
  const Tensor b = random_tensor(DataType::kFloat32, {6}, rng);
  for (bool with_mask : {true, false})
    for (bool with_bias : {true, false})
      for (int64_t batch : {1, 3}) {
        SCOPED_TRACE(std::string(with_mask ? "mask" : "no mask") + (with_bias ? ", bias" : ", no bias") + ", batch " +
                     std::to_string(batch));
        std::map<std::string, Tensor> feeds{{"x", random_tensor(DataType::kFloat32, {batch, 4, 7, 6}, rng)},
                                            {"offset", random_tensor(DataType::kFloat32, {batch, 36, 4, 6}, rng, -2, 2)}};
        Tensor mask = random_tensor(DataType::kFloat32, {batch, 18, 4, 6}, rng, 0, 1);
        if (!with_mask)
          for (int64_t i = 0; i < mask.numel(); ++i) mask.set(i, 1.0);
        std::map<std::string, Tensor> dcn_feeds = feeds;
        if (with_mask) dcn_feeds["mask"] = mask;
        feeds["mask"] = mask;
        const Tensor got = run(deform_conv_model(w, with_bias ? &b : nullptr, with_mask), dcn_feeds);
        const Tensor want = run(modulated_model(w, with_bias ? &b : nullptr), feeds);
        ASSERT_TRUE(got.defined() && want.defined());
        ASSERT_EQ(got.dims(), (std::vector<int64_t>{batch, 6, 4, 6}));
        ASSERT_EQ(got.dims(), want.dims());
        bool any_nonzero = false;
        for (int64_t i = 0; i < got.numel(); ++i) {
          ASSERT_EQ(got.get(i), want.get(i)) << "index " << i;
          any_nonzero = any_nonzero || got.get(i) != 0.0;
        }
        EXPECT_TRUE(any_nonzero);
      }
}

TEST(DeformConv, RefusalsNameTheNodeAndAttribute) {
  std::mt19937 rng(7);
  const Tensor w = random_tensor(DataType::kFloat32, {6, 2, 3, 3}, rng);
  auto build = [&](const std::function<void(onnx::NodeProto&)>& edit) {
    OnnxModelBuilder m(19, 9);
    declare_inputs(m, false);
    m.initializer("w", w);
    auto& n = m.node("DeformConv", {"x", "w", "offset"}, {"y"}, "dcn");
    OnnxModelBuilder::attr(n, "group", int64_t{2});
    OnnxModelBuilder::attr(n, "offset_group", int64_t{2});
    edit(n);
    m.output("y", DataType::kFloat32);
    return Engine::build_from_onnx_bytes(m.bytes(), batch_profile(false), "deform.onnx");
  };
  struct Bad {
    const char* attribute;
    std::function<void(onnx::NodeProto&)> edit;
  };
  for (const Bad& bad : {Bad{"pads", [](onnx::NodeProto& n) { OnnxModelBuilder::attr(n, "pads", std::vector<int64_t>{1, 2, 0, 2}); }},
                         Bad{"strides", [](onnx::NodeProto& n) { OnnxModelBuilder::attr(n, "strides", std::vector<int64_t>{1}); }},
                         Bad{"kernel_shape", [](onnx::NodeProto& n) {
                               OnnxModelBuilder::attr(n, "kernel_shape", std::vector<int64_t>{5, 5});
                             }}}) {
    auto eng = build(bad.edit);
    ASSERT_FALSE(eng.is_ok()) << bad.attribute;
    EXPECT_EQ(eng.status().attribute(), bad.attribute) << eng.status().to_string();
    EXPECT_NE(eng.status().to_string().find("dcn"), std::string::npos) << eng.status().to_string();
  }
}

}  // namespace
}  // namespace graft
