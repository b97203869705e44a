// lower_patchify_convs (src/graph/lower_patch_conv.cpp) on the CPU reference.
#include <gtest/gtest.h>

#include <random>

#include "tests/unit/graph_pass_test_util.h"

namespace graft {
namespace {

using testing::OnnxModelBuilder;
using namespace testing;  // NOLINT(build/namespaces)

// lower_patchify_convs (src/graph/lower_patch_conv.cpp): a patch-embedding Conv becomes a patch
// gather + Gemm with the same output (CPU reference, fresh random data); convolutions that are not
// patchify (padding, overlapping windows, groups) stay.
TEST(LowerPatchify, PatchConvBecomesGemm) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2, 3, 8, 12});
  m.initializer("w", random_tensor(DataType::kFloat32, {5, 3, 4, 4}, rng));
  m.initializer("b", random_tensor(DataType::kFloat32, {5}, rng));
  auto& c = m.node("Conv", {"x", "w", "b"}, {"y"}, "patch_embed");
  OnnxModelBuilder::attr(c, "strides", std::vector<int64_t>{4, 4});
  OnnxModelBuilder::attr(c, "kernel_shape", std::vector<int64_t>{4, 4});
  m.initializer("w2", random_tensor(DataType::kFloat32, {4, 3, 3, 3}, rng));
  auto& p = m.node("Conv", {"x", "w2"}, {"z"}, "padded");  // overlapping, padded: not a patchify
  OnnxModelBuilder::attr(p, "pads", std::vector<int64_t>{1, 1, 1, 1});
  m.output("y", DataType::kFloat32).output("z", DataType::kFloat32);
  auto g = load(m);
  ASSERT_TRUE(g);
  check_pass(*g, [](Graph& gr) { return lower_patchify_convs(gr); }, 1, seed, 1e-5);
  EXPECT_EQ(count_op(*g, "Conv"), 1);
  EXPECT_EQ(count_op(*g, "Gemm"), 1);
}

// Under a dynamic batch (an engine with a batch profile) the lowering still applies: the reshape
// targets leave the batch to -1, the output keeps the symbolic batch, and any batch computes the
// same values as the convolution.
TEST(LowerPatchify, DynamicBatch) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {"N", 3, 8, 12});
  m.initializer("w", random_tensor(DataType::kFloat32, {5, 3, 4, 4}, rng));
  m.initializer("b", random_tensor(DataType::kFloat32, {5}, rng));
  auto& c = m.node("Conv", {"x", "w", "b"}, {"y"}, "patch_embed");
  OnnxModelBuilder::attr(c, "strides", std::vector<int64_t>{4, 4});
  OnnxModelBuilder::attr(c, "kernel_shape", std::vector<int64_t>{4, 4});
  m.output("y", DataType::kFloat32);
  auto before = load(m);
  auto g = load(m);
  ASSERT_TRUE(g && before);
  auto n = lower_patchify_convs(*g);
  ASSERT_TRUE(n.is_ok()) << n.status().to_string();
  EXPECT_EQ(*n, 1);
  ASSERT_TRUE(infer_shapes(*g).is_ok());
  EXPECT_EQ(count_op(*g, "Conv"), 0);
  EXPECT_EQ(count_op(*g, "Gemm"), 1);
  EXPECT_EQ(shape_to_string(*g->outputs()[0]->desc.shape), "[N,5,2,3]");
  for (int64_t batch : {1, 3}) {
    std::map<std::string, Tensor> feeds{{"x", random_tensor(DataType::kFloat32, {batch, 3, 8, 12}, rng)}};
    auto want = run_graph(*before, feeds);
    auto got = run_graph(*g, feeds);
    ASSERT_EQ(got.at("y").dims(), (std::vector<int64_t>{batch, 5, 2, 3}));
    expect_close(got.at("y"), want.at("y"), 1e-5, 1e-6);
  }
}

}  // namespace
}  // namespace graft
