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

}  // namespace
}  // namespace graft
