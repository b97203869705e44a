// fuse_l2_normalize (src/graph/fuse_l2_normalize.cpp): F.normalize over the last axis as the
// exporters write it becomes one GraftL2Normalize with the same outputs on the CPU, zero rows
// included; other shapes of the pattern stay as they are.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>

#include "graph/passes.h"
#include "tests/unit/graph_pass_test_util.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/op_test_util.h"

namespace graft {
namespace {

using testing::OnnxModelBuilder;
using testing::random_tensor;
using namespace testing;  // NOLINT(build/namespaces): the graph-pass test helpers

constexpr DataType kF32 = DataType::kFloat32;

struct NormSpec {
  int opset = 18;           // 18: ReduceL2's axes as an input; 17: as an attribute
  bool expand = true;       // Expand(Clip, Shape(x)) before the Div, as TorchScript exports it
  int64_t axis = -1;
  bool clip_max = false;    // a Clip with a max is not F.normalize
  bool norm_output = false; // the norm also a graph output
};

OnnxModelBuilder normalize_model(const NormSpec& s) {
  OnnxModelBuilder b(s.opset);
  b.input("x", kF32, {2, 3, 5, 8});
  b.initializer("eps", Tensor::from_doubles(kF32, {}, {1e-12}));
  b.initializer("big", Tensor::from_doubles(kF32, {}, {1e3}));
  onnx::NodeProto* r = nullptr;
  if (s.opset >= 18) {
    b.initializer("axes", Tensor::vector_int64({s.axis}));
    r = &b.node("ReduceL2", {"x", "axes"}, {"n"});
  } else {
    r = &b.node("ReduceL2", {"x"}, {"n"});
    OnnxModelBuilder::attr(*r, "axes", std::vector<int64_t>{s.axis});
  }
  OnnxModelBuilder::attr(*r, "keepdims", int64_t{1});
  if (s.clip_max) b.node("Clip", {"n", "eps", "big"}, {"c"});
  else b.node("Clip", {"n", "eps"}, {"c"});
  if (s.expand) {
    b.node("Shape", {"x"}, {"shape"});
    b.node("Expand", {"c", "shape"}, {"e"});
    b.node("Div", {"x", "e"}, {"y"});
  } else {
    b.node("Div", {"x", "c"}, {"y"});
  }
  b.output("y", kF32);
  if (s.norm_output) b.output("n", kF32);
  return b;
}

Result<int> l2_pass(Graph& g) { return fuse_l2_normalize(g); }

TEST(FuseL2Normalize, ExportedFormsBecomeOneLayer) {
  const uint32_t seed = std::random_device{}();
  for (int c = 0; c < 3; ++c) {
    SCOPED_TRACE("case " + std::to_string(c));
    NormSpec s;
    if (c == 1) s.opset = 17;
    if (c == 2) s.expand = false;
    auto g = load(normalize_model(s));
    ASSERT_TRUE(g);
    check_pass(*g, l2_pass, 1, seed);
    EXPECT_EQ(g->nodes().size(), 1u) << "ReduceL2, Clip, Shape and Expand are gone";
    const Node* n = find_op(*g, "GraftL2Normalize");
    ASSERT_TRUE(n);
    EXPECT_NEAR(n->attrs.get_float("eps", 0).value(), 1e-12f, 1e-18);
  }
}

TEST(FuseL2Normalize, ZeroRowsStayZero) {
  auto g = load(normalize_model({}));
  ASSERT_TRUE(g);
  std::mt19937 rng(std::random_device{}());
  Tensor x = random_tensor(kF32, {2, 3, 5, 8}, rng);
  for (int64_t i = 8; i < 16; ++i) x.set(i, 0.0);  // row 1
  const std::map<std::string, Tensor> feeds{{"x", x}};
  const auto want = run_graph(*g, feeds);
  auto n = fuse_l2_normalize(*g);
  ASSERT_TRUE(n.is_ok() && *n == 1);
  ASSERT_TRUE(infer_shapes(*g).is_ok());
  const auto got = run_graph(*g, feeds);
  for (int64_t i = 8; i < 16; ++i) EXPECT_EQ(got.at("y").get(i), 0.0);
  expect_close(got.at("y"), want.at("y"), 1e-6, 1e-7);
}

TEST(FuseL2Normalize, OtherFormsStay) {
  const uint32_t seed = std::random_device{}();
  for (int c = 0; c < 3; ++c) {
    SCOPED_TRACE("case " + std::to_string(c));
    NormSpec s;
    if (c == 0) s.axis = 1;            // not the last axis
    if (c == 1) s.clip_max = true;     // a bounded clip
    if (c == 2) s.norm_output = true;  // the norm read elsewhere
    auto g = load(normalize_model(s));
    ASSERT_TRUE(g);
    check_pass(*g, l2_pass, 0, seed);
    EXPECT_EQ(count_op(*g, "ReduceL2"), 1);
  }
}

}  // namespace
}  // namespace graft
