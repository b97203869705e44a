// lower_einsum_matmuls: Einsums that are batched matrix products become MatMul (with Transposes of
// the last two axes where an operand or the output is the other way round) and compute the same
// values; other equations stay Einsums. Fresh random data, CPU references.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "graph/passes.h"
#include "tests/unit/graph_pass_test_util.h"

namespace graft {
namespace {

using testing::OnnxModelBuilder;

struct EinsumCase {
  std::string equation;
  std::vector<int64_t> a, b;
  bool lowered;
  int transposes;  // Transposes the lowering adds
};

OnnxModelBuilder einsum_model(const EinsumCase& c) {
  OnnxModelBuilder m(13);
  std::vector<testing::DimSpec> ad(c.a.begin(), c.a.end()), bd(c.b.begin(), c.b.end());
  m.input("a", DataType::kFloat32, ad);
  m.input("b", DataType::kFloat32, bd);
  auto& n = m.node("Einsum", {"a", "b"}, {"y"}, "einsum");
  OnnxModelBuilder::attr(n, "equation", c.equation);
  m.output("y", DataType::kFloat32);
  return m;
}

TEST(LowerEinsum, BatchedMatrixProductsBecomeMatMul) {
  std::mt19937 rng(std::random_device{}());
  const std::vector<EinsumCase> cases = {
      // MaxViT's attention scores and weighted sum.
      {"BGHID,BGHJD->BGHIJ", {2, 3, 2, 5, 4}, {2, 3, 2, 6, 4}, true, 1},
      {"BGHIJ,BGHJD->BGHID", {2, 3, 2, 5, 6}, {2, 3, 2, 6, 4}, true, 0},
      {"bij,bjk->bik", {3, 4, 5}, {3, 5, 2}, true, 0},
      {"bji,bjk->bik", {3, 5, 4}, {3, 5, 2}, true, 1},
      {"bij,bjk->bki", {3, 4, 5}, {3, 5, 2}, true, 1},
      {"bji,bkj->bki", {3, 5, 4}, {3, 2, 5}, true, 3},
      {"...ij,...jk->...ik", {2, 3, 4, 5}, {2, 3, 5, 6}, true, 0},
      {"ij,jk->ik", {4, 5}, {5, 3}, true, 0},
      // Not a batched matrix product: a label summed from one operand, a diagonal, batch labels in
      // another order, an outer product, a batch label that only trails.
      {"bij,bjk->bk", {3, 4, 5}, {3, 5, 2}, false, 0},
      {"bii,bij->bj", {3, 4, 4}, {3, 4, 2}, false, 0},
      {"bij,jbk->bik", {3, 4, 5}, {5, 3, 2}, false, 0},
      {"bi,bj->bij", {3, 4}, {3, 5}, false, 0},
      {"ijb,jkb->ikb", {4, 5, 3}, {5, 2, 3}, false, 0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.equation);
    auto model = einsum_model(c);
    auto want_graph = testing::load(model);
    auto g = testing::load(model);
    ASSERT_TRUE(g && want_graph);
    auto lowered = lower_einsum_matmuls(*g);
    ASSERT_TRUE(lowered.is_ok()) << lowered.status().to_string();
    EXPECT_EQ(*lowered, c.lowered ? 1 : 0);
    ASSERT_TRUE(infer_shapes(*g).is_ok());
    EXPECT_EQ(testing::count_op(*g, "Einsum"), c.lowered ? 0 : 1);
    EXPECT_EQ(testing::count_op(*g, "MatMul"), c.lowered ? 1 : 0);
    EXPECT_EQ(testing::count_op(*g, "Transpose"), c.transposes);
    std::map<std::string, Tensor> feeds{{"a", testing::random_tensor(DataType::kFloat32, c.a, rng)},
                                        {"b", testing::random_tensor(DataType::kFloat32, c.b, rng)}};
    auto want = testing::run_graph(*want_graph, feeds);
    auto got = testing::run_graph(*g, feeds);
    ASSERT_TRUE(want.count("y") && got.count("y"));
    const Tensor& w = want.at("y");
    const Tensor& o = got.at("y");
    ASSERT_EQ(o.dims(), w.dims());
    double largest = 0;
    for (int64_t i = 0; i < w.numel(); ++i) largest = std::max(largest, std::fabs(w.get(i)));
    ASSERT_GT(largest, 0.0);
    // Both references sum in double and round once to float32: equal up to that last rounding.
    for (int64_t i = 0; i < w.numel(); ++i) ASSERT_NEAR(o.get(i), w.get(i), 1e-6 * (1 + largest)) << i;
  }
}

// A dynamic batch keeps the lowering: the shapes are inferred per run.
TEST(LowerEinsum, DynamicBatch) {
  std::mt19937 rng(std::random_device{}());
  OnnxModelBuilder m(13);
  m.input("q", DataType::kFloat32, {"batch", 4, 7, 8});
  m.input("k", DataType::kFloat32, {"batch", 4, 7, 8});
  auto& n = m.node("Einsum", {"q", "k"}, {"s"}, "scores");
  OnnxModelBuilder::attr(n, "equation", "bhid,bhjd->bhij");
  m.output("s", DataType::kFloat32);
  auto g = testing::load(m);
  auto want_graph = testing::load(m);
  ASSERT_TRUE(g && want_graph);
  auto lowered = lower_einsum_matmuls(*g);
  ASSERT_TRUE(lowered.is_ok());
  EXPECT_EQ(*lowered, 1);
  ASSERT_TRUE(infer_shapes(*g).is_ok());
  for (int64_t batch : {1, 3}) {
    std::map<std::string, Tensor> feeds{{"q", testing::random_tensor(DataType::kFloat32, {batch, 4, 7, 8}, rng)},
                                        {"k", testing::random_tensor(DataType::kFloat32, {batch, 4, 7, 8}, rng)}};
    auto want = testing::run_graph(*want_graph, feeds);
    auto got = testing::run_graph(*g, feeds);
    ASSERT_EQ(got.at("s").dims(), (std::vector<int64_t>{batch, 4, 7, 7}));
    for (int64_t i = 0; i < want.at("s").numel(); ++i) ASSERT_NEAR(got.at("s").get(i), want.at("s").get(i), 1e-5) << i;
  }
}

// MaxViT's attention as torchvision writes it: scores by Einsum, a constant relative-position bias,
// Softmax, the weighted sum by Einsum. Lowered and then through the GEMM/attention fusion (which may
// make it one GraftAttention), the outputs must stay the CPU reference's.
TEST(LowerEinsum, MaxVitAttentionThroughTheFusions) {
  std::mt19937 rng(std::random_device{}());
  OnnxModelBuilder m(13);
  const std::vector<testing::DimSpec> qkv = {"batch", 4, 2, 9, 8};  // B, G (windows), H, I (tokens), D
  m.input("q", DataType::kFloat32, qkv);
  m.input("k", DataType::kFloat32, qkv);
  m.input("v", DataType::kFloat32, qkv);
  m.initializer("bias", testing::random_tensor(DataType::kFloat32, {2, 9, 9}, rng));
  auto& s = m.node("Einsum", {"q", "k"}, {"scores"}, "scores");
  OnnxModelBuilder::attr(s, "equation", "BGHID,BGHJD->BGHIJ");
  m.node("Add", {"scores", "bias"}, {"biased"}, "add_bias");
  auto& sm = m.node("Softmax", {"biased"}, {"p"}, "softmax");
  OnnxModelBuilder::attr(sm, "axis", int64_t{-1});
  auto& o = m.node("Einsum", {"p", "v"}, {"y"}, "weighted");
  OnnxModelBuilder::attr(o, "equation", "BGHIJ,BGHJD->BGHID");
  m.output("y", DataType::kFloat32);
  auto g = testing::load(m);
  auto want_graph = testing::load(m);
  ASSERT_TRUE(g && want_graph);
  auto lowered = lower_einsum_matmuls(*g);
  ASSERT_TRUE(lowered.is_ok());
  EXPECT_EQ(*lowered, 2);
  ASSERT_TRUE(infer_shapes(*g).is_ok());
  auto fused = fuse_gemm_epilogues(*g);
  ASSERT_TRUE(fused.is_ok()) << fused.status().to_string();
  ASSERT_TRUE(infer_shapes(*g).is_ok());
  EXPECT_EQ(testing::count_op(*g, "Einsum"), 0);
  for (int64_t batch : {1, 2}) {
    std::map<std::string, Tensor> feeds;
    for (const char* name : {"q", "k", "v"})
      feeds[name] = testing::random_tensor(DataType::kFloat32, {batch, 4, 2, 9, 8}, rng);
    auto want = testing::run_graph(*want_graph, feeds);
    auto got = testing::run_graph(*g, feeds);
    ASSERT_EQ(got.at("y").dims(), want.at("y").dims());
    for (int64_t i = 0; i < want.at("y").numel(); ++i) ASSERT_NEAR(got.at("y").get(i), want.at("y").get(i), 1e-5) << i;
  }
}

}  // namespace
}  // namespace graft
