// Einsum (its parser in src/ops/misc/misc.h, the CPU reference in einsum.cpp) against loops written
// out by hand for each equation, on fresh random data; the equation's errors name the attribute.
#include <gtest/gtest.h>

#include <random>

#include "tests/unit/op_test_util.h"

namespace graft {
namespace {

using testing::attrs_of;
using testing::expect_values_close;
using testing::random_tensor;
using testing::run_op;

Tensor einsum(const std::string& eq, std::vector<Tensor> in) {
  auto out = run_op("Einsum", std::move(in), attrs_of({{"equation", eq}}), 12);
  EXPECT_TRUE(out.is_ok()) << eq << ": " << out.status().to_string();
  return out.is_ok() ? (*out)[0] : Tensor();
}

class EinsumTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = std::random_device{}();
    rng_.seed(seed_);
  }
  Tensor rnd(std::vector<int64_t> dims) { return random_tensor(DataType::kFloat32, std::move(dims), rng_); }
  uint32_t seed_ = 0;
  std::mt19937 rng_;
};

TEST_F(EinsumTest, ImplicitOutputSumsRepeatedLabels) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  Tensor a = rnd({2, 3, 4}), b = rnd({2, 4, 5});
  // Implicit output: the labels seen exactly once, alphabetically: i, k. 'b' appears in both terms,
  // so it is summed like 'j' (NumPy's rule).
  Tensor y = einsum("bij,bjk", {a, b});
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{3, 5}));
  std::vector<double> want;
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 5; ++k) {
      double s = 0;
      for (int n = 0; n < 2; ++n)
        for (int j = 0; j < 4; ++j) s += a.get((n * 3 + i) * 4 + j) * b.get((n * 4 + j) * 5 + k);
      want.push_back(s);
    }
  expect_values_close(y, want, 1e-6, "bij,bjk");
  Tensor explicit_batch = einsum("bij,bjk->bik", {a, b});
  ASSERT_EQ(explicit_batch.dims(), (std::vector<int64_t>{2, 3, 5}));
  want.clear();
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 5; ++k) {
        double s = 0;
        for (int j = 0; j < 4; ++j) s += a.get((n * 3 + i) * 4 + j) * b.get((n * 4 + j) * 5 + k);
        want.push_back(s);
      }
  expect_values_close(explicit_batch, want, 1e-6, "bij,bjk->bik");
}

TEST_F(EinsumTest, DiagonalTransposeAndFullSum) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  Tensor x = rnd({3, 4, 4});
  Tensor diag = einsum("bii->bi", {x});
  std::vector<double> want;
  for (int n = 0; n < 3; ++n)
    for (int i = 0; i < 4; ++i) want.push_back(x.get((n * 4 + i) * 4 + i));
  expect_values_close(diag, want, 0, "bii->bi");
  Tensor t = rnd({2, 3});
  Tensor tt = einsum("ij->ji", {t});
  want.clear();
  for (int j = 0; j < 3; ++j)
    for (int i = 0; i < 2; ++i) want.push_back(t.get(i * 3 + j));
  expect_values_close(tt, want, 0, "ij->ji");
  Tensor s = einsum("ij->", {t});
  EXPECT_EQ(s.rank(), 0);
  double total = 0;
  for (int64_t i = 0; i < t.numel(); ++i) total += t.get(i);
  expect_values_close(s, {total}, 1e-6, "ij->");
}

TEST_F(EinsumTest, EllipsisBroadcastsAndThreeOperands) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  // "...ij,...jk->...ik" with batch dims [2, 1] against [3]: broadcast to [2, 3].
  Tensor a = rnd({2, 1, 3, 4}), b = rnd({3, 4, 2});
  Tensor y = einsum("...ij,...jk->...ik", {a, b});
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, 3, 3, 2}));
  std::vector<double> want;
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 3; ++q)
      for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 2; ++k) {
          double s = 0;
          for (int j = 0; j < 4; ++j) s += a.get((p * 3 + i) * 4 + j) * b.get((q * 4 + j) * 2 + k);
          want.push_back(s);
        }
  expect_values_close(y, want, 1e-6, "ellipsis");
  Tensor u = rnd({3}), v = rnd({4}), w = rnd({3, 4});
  Tensor z = einsum("i,j,ij->", {u, v, w});
  double s = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) s += u.get(i) * v.get(j) * w.get(i * 4 + j);
  expect_values_close(z, {s}, 1e-6, "i,j,ij->");
}

TEST_F(EinsumTest, IntegersAreExact) {
  // Products beyond 2^53 would round in double.
  Tensor a = Tensor::vector_int64({int64_t{3037000499}, 7});
  Tensor b = Tensor::vector_int64({int64_t{3037000499}, 11});
  Tensor y = einsum("i,i->", {a, b});
  ASSERT_EQ(y.dtype(), DataType::kInt64);
  EXPECT_EQ(static_cast<const int64_t*>(y.data())[0], int64_t{3037000499} * 3037000499 + 77);
}

// A contraction with more products than the reference computes is refused at once, not run for
// minutes (fuzzed models can ask for one).
TEST_F(EinsumTest, HugeContractionIsRefused) {
  Tensor a = rnd({70000}), b = rnd({70000});
  auto out = run_op("Einsum", {a, b}, attrs_of({{"equation", std::string("i,j->")}}), 12);
  ASSERT_FALSE(out.is_ok());
  EXPECT_EQ(out.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(out.status().to_string().find("products"), std::string::npos) << out.status().to_string();
}

TEST_F(EinsumTest, BadEquationsAreNamed) {
  Tensor a = rnd({2, 3}), b = rnd({3, 4});
  const std::pair<const char*, const char*> cases[] = {
      {"ij,jk,kl->il", "3 operand terms"},
      {"ij,jk->iq", "'q' names no input axis"},
      {"ij,jk->ii", "'i' repeats"},
      {"i1,jk->ik", "unexpected character '1'"},
      {"ijk,jk->ik", "rank 2"},
      {"ij,ik->jk", "extent"},
      {"i.j,jk->ik", "'...'"},
  };
  for (const auto& [eq, what] : cases) {
    auto out = run_op("Einsum", {a, b}, attrs_of({{"equation", std::string(eq)}}), 12);
    ASSERT_FALSE(out.is_ok()) << eq;
    const std::string msg = out.status().to_string();
    EXPECT_NE(msg.find(what), std::string::npos) << eq << ": " << msg;
    EXPECT_NE(msg.find("equation"), std::string::npos) << eq << ": " << msg;
  }
}

}  // namespace
}  // namespace graft
