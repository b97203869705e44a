// ONNX's DeformConv (opset 19) read as graft's ModulatedDeformConv2d (src/onnx/deform_conv_rewrite.h):
// a DeformConv model must give exactly what the ModulatedDeformConv2d model written by hand with the
// same geometry gives (the same kernel runs both, so the outputs are bit-identical; the op itself is
// checked against its formula and torchvision in the op harness), with a dynamic batch, with and
// without the optional mask and bias; the refusals name the node and attribute.
#include <gtest/gtest.h>

#include <cmath>
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

// ONNX's DeformConv written out (its reference's definition: each tap samples X bilinearly at
// (-top + stride * i + dilation * ki + dy, -left + stride * j + dilation * kj + dx), corners outside
// the image reading zero), without a mask or bias.
std::vector<double> naive_deform_conv(const Tensor& x, const Tensor& w, const Tensor& offset, std::vector<int64_t> strides,
                                      std::vector<int64_t> pads, std::vector<int64_t> dilations, int64_t group,
                                      int64_t offset_group, int64_t oh, int64_t ow) {
  const int64_t n = x.dims()[0], c = x.dims()[1], h = x.dims()[2], wd = x.dims()[3];
  const int64_t oc = w.dims()[0], cg = w.dims()[1], kh = w.dims()[2], kw = w.dims()[3];
  auto at = [&](int64_t b, int64_t ch, double y, double xx) {
    const auto y0 = static_cast<int64_t>(std::floor(y)), x0 = static_cast<int64_t>(std::floor(xx));
    double v = 0;
    for (int64_t yy : {y0, y0 + 1})
      for (int64_t xq : {x0, x0 + 1})
        if (yy >= 0 && yy < h && xq >= 0 && xq < wd)
          v += x.get(((b * c + ch) * h + yy) * wd + xq) * (1 - std::fabs(y - static_cast<double>(yy))) *
               (1 - std::fabs(xx - static_cast<double>(xq)));
    return v;
  };
  std::vector<double> y(static_cast<size_t>(n * oc * oh * ow), 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < oc; ++o)
      for (int64_t ci = 0; ci < cg; ++ci) {
        const int64_t ch = (o / (oc / group)) * cg + ci, og = ch / (c / offset_group);
        for (int64_t i = 0; i < oh; ++i)
          for (int64_t j = 0; j < ow; ++j)
            for (int64_t ki = 0; ki < kh; ++ki)
              for (int64_t kj = 0; kj < kw; ++kj) {
                const int64_t tap = (og * kh + ki) * kw + kj;
                const double dy = offset.get(((b * offset.dims()[1] + 2 * tap) * oh + i) * ow + j);
                const double dx = offset.get(((b * offset.dims()[1] + 2 * tap + 1) * oh + i) * ow + j);
                const double sy = static_cast<double>(-pads[0] + strides[0] * i + dilations[0] * ki) + dy;
                const double sx = static_cast<double>(-pads[1] + strides[1] * j + dilations[1] * kj) + dx;
                y[static_cast<size_t>(((b * oc + o) * oh + i) * ow + j)] +=
                    at(b, ch, sy, sx) * w.get(((o * cg + ci) * kh + ki) * kw + kj);
              }
      }
  return y;
}

// Pads that differ between the two sides of an axis (top 2, left 0, bottom 0, right 3): graft pads
// X by the difference and runs its op with the smaller padding; the result is ONNX's definition.
TEST(DeformConv, AsymmetricPadsMatchTheDefinition) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const Tensor w = random_tensor(DataType::kFloat32, {4, 2, 3, 3}, rng);
  const Tensor x = random_tensor(DataType::kFloat32, {1, 4, 6, 5}, rng);
  // rows (6 + 2 + 0 - 3) / 1 + 1 = 6, columns (5 + 0 + 3 - 5) / 2 + 1 = 2 (dilation 2 in columns)
  const Tensor offset = random_tensor(DataType::kFloat32, {1, 36, 6, 2}, rng, -1.5, 1.5);
  OnnxModelBuilder m(19, 9);
  m.input("x", DataType::kFloat32, {1, 4, 6, 5});
  m.input("offset", DataType::kFloat32, {1, 36, 6, 2});
  m.initializer("w", w);
  auto& n = m.node("DeformConv", {"x", "w", "offset"}, {"y"}, "dcn");
  OnnxModelBuilder::attr(n, "pads", std::vector<int64_t>{2, 0, 0, 3});
  OnnxModelBuilder::attr(n, "strides", std::vector<int64_t>{1, 2});
  OnnxModelBuilder::attr(n, "dilations", std::vector<int64_t>{1, 2});
  OnnxModelBuilder::attr(n, "group", int64_t{2});
  OnnxModelBuilder::attr(n, "offset_group", int64_t{2});
  m.output("y", DataType::kFloat32);
  auto eng = Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, "asym.onnx");
  ASSERT_TRUE(eng.is_ok()) << eng.status().to_string();
  auto ctx = (*eng)->create_context();
  std::map<std::string, Tensor> outs;
  Status st = (*ctx)->run({{"x", x}, {"offset", offset}}, outs);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  const Tensor& y = outs.at("y");
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{1, 4, 6, 2}));
  const std::vector<double> want = naive_deform_conv(x, w, offset, {1, 2}, {2, 0, 0, 3}, {1, 2}, 2, 2, 6, 2);
  testing::expect_values_close(y, want, 1e-5, "DeformConv with pads [2, 0, 0, 3]");
}

// A DeformConv inside an If's branches (reading the outer X, offset and weight) is rewritten as one
// at the top is: the then-branch gives the top-level model's output, the else-branch its negation.
TEST(DeformConv, InsideIfBranchesIsReadAsAtTheTop) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const Tensor w = random_tensor(DataType::kFloat32, {6, 2, 3, 3}, rng);
  OnnxModelBuilder m(19, 9);
  declare_inputs(m, false);
  m.input("cond", DataType::kBool, {});
  m.initializer("w", w);
  auto& when = m.node("If", {"cond"}, {"y"}, "branch");
  auto set_geometry = [](onnx::NodeProto& n) {
    OnnxModelBuilder::attr(n, "strides", std::vector<int64_t>{2, 1});
    OnnxModelBuilder::attr(n, "pads", std::vector<int64_t>{1, 2, 1, 2});
    OnnxModelBuilder::attr(n, "dilations", std::vector<int64_t>{1, 2});
    OnnxModelBuilder::attr(n, "group", int64_t{2});
    OnnxModelBuilder::attr(n, "offset_group", int64_t{2});
  };
  testing::SubgraphBuilder then_branch = testing::graph_attr(when, "then_branch");
  then_branch.node("DeformConv", {"x", "w", "offset"}, {"y_then"}).output("y_then");
  set_geometry(*then_branch.g->mutable_node(0));
  testing::SubgraphBuilder else_branch = testing::graph_attr(when, "else_branch");
  else_branch.node("DeformConv", {"x", "w", "offset"}, {"y_conv"}).node("Neg", {"y_conv"}, {"y_else"}).output("y_else");
  set_geometry(*else_branch.g->mutable_node(0));
  m.output("y", DataType::kFloat32);
  const std::map<std::string, Tensor> feeds{{"x", random_tensor(DataType::kFloat32, {2, 4, 7, 6}, rng)},
                                            {"offset", random_tensor(DataType::kFloat32, {2, 36, 4, 6}, rng, -2, 2)}};
  const Tensor want = run(deform_conv_model(w, nullptr, false), feeds);
  ASSERT_TRUE(want.defined());
  for (bool cond : {true, false}) {
    SCOPED_TRACE(cond ? "then" : "else");
    std::map<std::string, Tensor> f = feeds;
    Tensor c = Tensor::empty(DataType::kBool, {});
    c.set(0, cond ? 1.0 : 0.0);
    f["cond"] = c;
    const Tensor got = run(m.bytes(), f);
    ASSERT_TRUE(got.defined());
    ASSERT_EQ(got.dims(), want.dims());
    for (int64_t i = 0; i < got.numel(); ++i) ASSERT_EQ(got.get(i), cond ? want.get(i) : -want.get(i)) << "index " << i;
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
  for (const Bad& bad : {Bad{"pads", [](onnx::NodeProto& n) { OnnxModelBuilder::attr(n, "pads", std::vector<int64_t>{1, -1, 1, 1}); }},
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
