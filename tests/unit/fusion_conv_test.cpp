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
#include "tests/cuda/test_models.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/op_test_util.h"

namespace graft {
namespace {

using testing::OnnxModelBuilder;
using testing::random_tensor;

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
  const std::string model = graft_cuda_test::residual_se_cnn_model(rng).bytes();
  std::map<std::string, Tensor> in{{"x", random_tensor(DataType::kFloat32, {2, 3, 9, 8}, rng)}};
  auto want = run_on_cpu(imported(model), in);

  auto fused = imported(model);
  auto n = fuse_conv_epilogues(*fused);
  ASSERT_TRUE(n.is_ok()) << n.status().to_string();
  EXPECT_EQ(*n, 6);
  ASSERT_TRUE(infer_shapes(*fused).is_ok());
  EXPECT_EQ(count_ops(*fused, "Conv"), 0);
  EXPECT_EQ(count_ops(*fused, "Relu"), 0) << "every Relu follows a conv or a residual add";
  EXPECT_EQ(count_ops(*fused, "HardSwish"), 0) << "the HardSwish after c2 joins its epilogue";
  EXPECT_EQ(count_ops(*fused, "Add"), 1) << "the residual add is fused, the per-channel shift is not";
  int with_residual = 0;
  for (const auto& node : fused->nodes())
    if (node->op_type == "GraftConv" && node->inputs.size() == 4) {
      ++with_residual;
      EXPECT_TRUE(node->name == "c3_conv" || node->name == "d3_conv") << node->name;
      EXPECT_EQ(*node->attrs.get_string("activation", ""), "Relu");
    }
  EXPECT_EQ(with_residual, 1) << "exactly one convolution absorbs the residual add";
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

TEST(FusionConv, BadPoolAndLayoutAttributesAreNamed) {
  std::mt19937 rng(5);
  struct Case {
    const char* op;
    const char* attr;
    const char* value;
  };
  for (const Case& c : {Case{"GraftPool", "pool", "MedianPool"}, Case{"GraftPool", "layout", "NCHW"},
                        Case{"GraftConv", "layout", "CHWN"}}) {
    OnnxModelBuilder m;
    m.input("x", DataType::kFloat32, {1, 4, 4, 2});
    std::vector<std::string> ins{"x"};
    if (std::string(c.op) == "GraftConv") {
      m.initializer("w", random_tensor(DataType::kFloat32, {2, 1, 1, 2}, rng));
      ins.push_back("w");
    }
    auto& n = m.node(c.op, ins, {"y"}, "internal");
    if (std::string(c.op) == "GraftPool" && std::string(c.attr) != "pool") OnnxModelBuilder::attr(n, "pool", "MaxPool");
    OnnxModelBuilder::attr(n, c.attr, c.value);
    m.output("y", DataType::kFloat32);
    auto eng = Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, "bad.onnx");
    ASSERT_FALSE(eng.is_ok()) << c.op << " " << c.attr << "=" << c.value;
    const std::string msg = eng.status().to_string();
    EXPECT_NE(msg.find("internal"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::string(c.attr) == "layout" && std::string(c.op) == "GraftPool" ? "NHWC" : c.attr),
              std::string::npos)
        << msg;
  }
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
