// The CUDA builder's convolution passes, checked on the CPU: Conv+Add+Relu fusion into GraftConv
// and NHWC regions must leave every output unchanged (the internal ops' CPU references are the
// builtin kernels), on fresh random data.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "graft/engine.h"
#include "graph/passes.h"
#include "onnx/importer.h"
#include "ops/layout.h"
#include "runtime/cpu_engine.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/op_test_util.h"

namespace graft {
namespace {

using testing::OnnxModelBuilder;
using testing::random_tensor;

// A small ResNet/MobileNet mix: conv+relu, max pool, a bottleneck with a residual add, a
// squeeze-excitation branch (global pool, 1x1 conv, HardSigmoid, broadcast Mul), a strided conv
// followed by a per-channel constant add (which must end an NHWC region), and an intermediate
// value that is also a graph output.
std::string mixed_cnn(std::mt19937& rng) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2, 3, 9, 8});
  auto conv = [&](const std::string& x, const std::string& y, int64_t cin, int64_t cout, int64_t k, int64_t stride,
                  bool bias) {
    m.initializer(y + "_w", random_tensor(DataType::kFloat32, {cout, cin, k, k}, rng, -0.5, 0.5));
    std::vector<std::string> ins{x, y + "_w"};
    if (bias) {
      m.initializer(y + "_b", random_tensor(DataType::kFloat32, {cout}, rng));
      ins.push_back(y + "_b");
    }
    auto& n = m.node("Conv", ins, {y}, y + "_conv");
    const int64_t p = k / 2;
    OnnxModelBuilder::attr(n, "pads", std::vector<int64_t>{p, p, p, p});
    OnnxModelBuilder::attr(n, "strides", std::vector<int64_t>{stride, stride});
  };
  conv("x", "c1", 3, 8, 3, 1, true);
  m.node("Relu", {"c1"}, {"r1"}, "relu1");
  auto& mp = m.node("MaxPool", {"r1"}, {"p"}, "pool");
  OnnxModelBuilder::attr(mp, "kernel_shape", std::vector<int64_t>{3, 3});
  OnnxModelBuilder::attr(mp, "strides", std::vector<int64_t>{2, 2});
  OnnxModelBuilder::attr(mp, "pads", std::vector<int64_t>{1, 1, 1, 1});
  conv("p", "c2", 8, 8, 3, 1, true);
  m.node("Relu", {"c2"}, {"r2"}, "relu2");
  conv("r2", "c3", 8, 8, 1, 1, false);
  m.node("Add", {"c3", "p"}, {"a3"}, "residual");
  m.node("Relu", {"a3"}, {"feat"}, "relu3");
  m.node("GlobalAveragePool", {"feat"}, {"g"}, "gap");
  conv("g", "c4", 8, 8, 1, 1, true);
  m.node("HardSigmoid", {"c4"}, {"s"}, "gate");
  m.node("Mul", {"feat", "s"}, {"scaled"}, "excite");
  conv("scaled", "c5", 8, 4, 3, 2, true);
  m.initializer("shift", random_tensor(DataType::kFloat32, {4, 1, 1}, rng));
  m.node("Add", {"c5", "shift"}, {"y"}, "shift_add");
  m.output("y", DataType::kFloat32);
  m.output("feat", DataType::kFloat32);
  return m.bytes();
}


std::unique_ptr<Graph> imported(const std::string& bytes) {
  auto g = import_onnx_bytes(bytes, "mixed.onnx");
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  std::unique_ptr<Graph> out = std::move(g).value();
  Status s = infer_shapes(*out);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return out;
}

std::map<std::string, Tensor> run_on_cpu(std::unique_ptr<Graph> g, const std::map<std::string, Tensor>& inputs) {
  EngineState st;
  st.graph = std::move(g);
  auto eng = make_cpu_engine(std::move(st));
  EXPECT_TRUE(eng.is_ok()) << eng.status().to_string();
  auto ctx = (*eng)->create_context();
  EXPECT_TRUE(ctx.is_ok());
  std::map<std::string, Tensor> outs;
  Status s = (*ctx)->run(inputs, outs);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return outs;
}

int count_ops(const Graph& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.nodes()) n += node->op_type == op;
  return n;
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& name) {
  ASSERT_EQ(got.dims(), want.dims()) << name;
  double scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, std::fabs(want.get(i)));
  ASSERT_GT(scale, 0.0) << name << " is all zeros: the test would prove nothing";
  for (int64_t i = 0; i < want.numel(); ++i)
    ASSERT_NEAR(got.get(i), want.get(i), 1e-5 * (1 + scale)) << name << " element " << i;
}

TEST(FusionConv, EpilogueFusionAndNhwcKeepOutputs) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::string model = mixed_cnn(rng);
  std::map<std::string, Tensor> in{{"x", random_tensor(DataType::kFloat32, {2, 3, 9, 8}, rng)}};
  auto want = run_on_cpu(imported(model), in);

  auto fused = imported(model);
  auto n = fuse_conv_epilogues(*fused);
  ASSERT_TRUE(n.is_ok()) << n.status().to_string();
  EXPECT_EQ(*n, 5);
  ASSERT_TRUE(infer_shapes(*fused).is_ok());
  EXPECT_EQ(count_ops(*fused, "Conv"), 0);
  EXPECT_EQ(count_ops(*fused, "Relu"), 0) << "every Relu follows a conv or a residual add";
  EXPECT_EQ(count_ops(*fused, "Add"), 1) << "the residual add is fused, the per-channel shift is not";
  for (const auto& node : fused->nodes())
    if (node->name == "c3_conv") {
      EXPECT_EQ(node->inputs.size(), 4u) << "X, W, no bias, residual";
      EXPECT_EQ(node->inputs[2], nullptr);
      EXPECT_EQ(*node->attrs.get_string("activation", ""), "Relu");
    }
  auto got = run_on_cpu(std::move(fused), in);
  for (const char* o : {"y", "feat"}) expect_close(got.at(o), want.at(o), std::string("fused ") + o);

  auto nhwc = imported(model);
  ASSERT_TRUE(fuse_conv_epilogues(*nhwc).is_ok());
  auto moved = convert_conv_regions_to_nhwc(*nhwc, [](const Node&) { return true; });
  ASSERT_TRUE(moved.is_ok()) << moved.status().to_string();
  Status inferred = infer_shapes(*nhwc);
  ASSERT_TRUE(inferred.is_ok()) << inferred.to_string();
  EXPECT_EQ(count_ops(*nhwc, "GraftPool"), 2) << "MaxPool and GlobalAveragePool run channels-last";
  // Transposes: the input, the region's exit before the per-channel add, and the `feat` output.
  EXPECT_EQ(count_ops(*nhwc, "Transpose"), 3);
  for (const Value* out : nhwc->outputs()) EXPECT_EQ(out->desc.shape->at(1).value(), out->name == "y" ? 4 : 8);
  got = run_on_cpu(std::move(nhwc), in);
  for (const char* o : {"y", "feat"}) expect_close(got.at(o), want.at(o), std::string("nhwc ") + o);
}

TEST(FusionConv, SharedConvOutputIsNotFused) {
  std::mt19937 rng(7);
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {1, 2, 5, 5});
  m.initializer("w", random_tensor(DataType::kFloat32, {2, 2, 1, 1}, rng));
  m.node("Conv", {"x", "w"}, {"c"}, "conv");
  m.node("Relu", {"c"}, {"r"}, "relu");
  m.node("Add", {"c", "r"}, {"y"}, "add");  // c is read twice: the Relu cannot be absorbed
  m.output("y", DataType::kFloat32);
  auto g = imported(m.bytes());
  ASSERT_TRUE(fuse_conv_epilogues(*g).is_ok());
  EXPECT_EQ(count_ops(*g, "GraftConv"), 1);
  EXPECT_EQ(count_ops(*g, "Relu"), 1);
  EXPECT_EQ(count_ops(*g, "Add"), 1);
}

TEST(FusionConv, BadInternalAttributesAreNamed) {
  std::mt19937 rng(3);
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {1, 2, 5, 5});
  m.initializer("w", random_tensor(DataType::kFloat32, {2, 2, 1, 1}, rng));
  OnnxModelBuilder::attr(m.node("GraftConv", {"x", "w"}, {"y"}, "fused"), "activation", "Gelu");
  m.output("y", DataType::kFloat32);
  auto eng = Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, "bad.onnx");
  ASSERT_FALSE(eng.is_ok());
  const std::string msg = eng.status().to_string();
  EXPECT_NE(msg.find("activation"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fused"), std::string::npos) << msg;
}

TEST(FusionConv, PermuteRank4RoundTrips) {
  std::mt19937 rng(11);
  Tensor t = random_tensor(DataType::kFloat32, {2, 3, 4, 5}, rng);
  Tensor nhwc = permute_rank4(t, kNchwToNhwc);
  ASSERT_EQ(nhwc.dims(), (std::vector<int64_t>{2, 4, 5, 3}));
  EXPECT_EQ(nhwc.get(((1 * 4 + 2) * 5 + 3) * 3 + 1), t.get(((1 * 3 + 1) * 4 + 2) * 5 + 3));
  Tensor back = permute_rank4(nhwc, kNhwcToNchw);
  for (int64_t i = 0; i < t.numel(); ++i) ASSERT_EQ(back.get(i), t.get(i));
}

}  // namespace
}  // namespace graft
