// CUDA data-movement ops vs the CPU reference: Reshape-like copies, Transpose, Expand.
#include "cuda_kernel_harness.h"

namespace graft::testing {
namespace {

TEST(CudaShape, CopiesTransposeExpand) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  run_float_dtypes(KernelCase{"Reshape", {rnd(rng, {3, 4, 5}), Tensor::vector_int64({5, -1})}}, seed);
  run_float_dtypes(KernelCase{"Unsqueeze", {rnd(rng, {3, 5}), Tensor::vector_int64({0, 2})}}, seed);
  run_float_dtypes(KernelCase{"Squeeze", {rnd(rng, {3, 1, 5}), Tensor::vector_int64({1})}}, seed);
  run_float_dtypes(KernelCase{"Flatten", {rnd(rng, {3, 4, 5})}}, seed);
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> perms = {
      {{3, 4, 5}, {2, 0, 1}}, {{2, 3, 4, 5, 6}, {4, 2, 0, 3, 1}}, {{7}, {0}}, {{2, 1, 3, 1}, {3, 2, 1, 0}}, {{5, 6}, {}}};
  for (const auto& [d, p] : perms) {
    KernelCase c{"Transpose", {rnd(rng, d)}};
    if (!p.empty()) c.attrs.set("perm", p);
    run_float_dtypes(c, seed);
  }
  run_kernel_case(KernelCase{"Transpose", {rnd(rng, {3, 4, 5}, -9, 9, DataType::kInt64)}}, DataType::kFloat32, seed);
  run_float_dtypes(KernelCase{"Expand", {rnd(rng, {3, 1}), Tensor::vector_int64({2, 3, 4})}}, seed);
  run_float_dtypes(KernelCase{"Expand", {rnd(rng, {1, 5, 1, 1, 2}), Tensor::vector_int64({5, 3, 4, 1})}}, seed);
}

}  // namespace
}  // namespace graft::testing
