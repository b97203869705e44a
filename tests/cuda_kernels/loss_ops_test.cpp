// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss on CUDA against the CPU reference: every
// reduction, with and without class weights and ignore_index, 2-D and 4-D inputs, int32 and int64
// targets, float32 and float16 (and float64 through the same kernel), fresh random data each run.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <random>
#include <string>
#include <vector>

#include "cuda_kernel_harness.h"

namespace graft::testing {
namespace {

// Targets in [0, c), a quarter of them replaced by `ignored` when asked (it may lie outside [0, c)).
Tensor targets(std::mt19937& rng, const std::vector<int64_t>& dims, int64_t c, DataType dt, const int64_t* ignored) {
  Tensor t = Tensor::empty(dt, dims);
  std::uniform_int_distribution<int64_t> cls(0, c - 1);
  std::uniform_int_distribution<int> quarter(0, 3);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, static_cast<double>(ignored && quarter(rng) == 0 ? *ignored : cls(rng)));
  return t;
}

struct LossSpec {
  std::vector<int64_t> x;  // [N, C, d...]
  const char* reduction;
  bool weight;
  const int64_t* ignore_index;
  DataType target_dtype;
};

void run_loss_cases(const char* op, size_t outputs) {
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  static const int64_t kOutside = -100, kInside = 2;
  const std::vector<LossSpec> specs{
      {{5, 7}, "mean", false, nullptr, DataType::kInt64},
      {{5, 7}, "sum", true, nullptr, DataType::kInt32},
      {{4, 6}, "none", true, &kOutside, DataType::kInt64},
      {{3, 5, 4, 6}, "mean", true, &kInside, DataType::kInt64},
      {{3, 5, 4, 6}, "none", false, &kOutside, DataType::kInt32},
      {{2, 9, 33}, "sum", false, &kInside, DataType::kInt64},
      {{64, 10}, "mean", false, &kOutside, DataType::kInt64},
  };
  for (const LossSpec& s : specs) {
    std::vector<int64_t> tdims{s.x[0]};
    for (size_t d = 2; d < s.x.size(); ++d) tdims.push_back(s.x[d]);
    KernelCase c{op, {rnd(rng, s.x, -3, 3), targets(rng, tdims, s.x[1], s.target_dtype, s.ignore_index)}};
    if (s.weight) c.inputs.push_back(rnd(rng, {s.x[1]}, 0.25, 2.0));
    c.attrs.set("reduction", std::string(s.reduction));
    if (s.ignore_index) c.attrs.set("ignore_index", *s.ignore_index);
    c.num_outputs = outputs;
    c.label = std::string(op) + " " + s.reduction + (s.weight ? " weighted" : "") +
              (s.ignore_index ? " ignore_index " + std::to_string(*s.ignore_index) : "") + " seed " +
              std::to_string(seed);
    run_kernel_case(c, DataType::kFloat32, seed);
    run_kernel_case(c, DataType::kFloat16, seed);
  }
}

TEST(CudaLoss, NegativeLogLikelihoodLossMatchesTheReference) {
  GRAFT_REQUIRE_GPU();
  run_loss_cases("NegativeLogLikelihoodLoss", 1);
}

TEST(CudaLoss, SoftmaxCrossEntropyLossAndLogProbMatchTheReference) {
  GRAFT_REQUIRE_GPU();
  run_loss_cases("SoftmaxCrossEntropyLoss", 2);
}

}  // namespace
}  // namespace graft::testing
