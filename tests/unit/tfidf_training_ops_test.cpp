// TfIdfVectorizer (definition and CPU reference: src/ops/tfidf/tfidf.cpp),
// BatchNormalization in training mode and Dropout in training mode at ratio 0 (src/ops/nn/batch_norm.cpp,
// src/ops/random), each against a naive reference written here on fresh random data: the
// n-gram counts found by matching every pool n-gram at every start and skip, the batch statistics
// summed per channel. Then the refusals: string pools, bad pools. Dropout at a nonzero ratio:
// random_ops_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ops/attr_util.h"
#include "op_test_util.h"

namespace graft {
namespace {

using testing::attrs_of;
using testing::run_op;

uint32_t seed() {
  static const uint32_t s = std::random_device{}();
  return s;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// ---- TfIdfVectorizer ----

struct Pool {
  std::vector<std::vector<int64_t>> grams;  // in pool order, by length
  std::vector<int64_t> counts, indexes, flat;
};

// Unique random n-grams of lengths 1..max_len over the values [0, vocab), their output positions a
// random permutation.
Pool random_pool(std::mt19937& rng, int64_t max_len, int64_t vocab) {
  Pool p;
  std::uniform_int_distribution<int64_t> v(0, vocab - 1), how_many(0, 5);
  for (int64_t n = 1; n <= max_len; ++n) {
    p.counts.push_back(static_cast<int64_t>(p.flat.size()));
    std::set<std::vector<int64_t>> seen;
    for (int64_t k = how_many(rng); k > 0; --k) {
      std::vector<int64_t> g;
      for (int64_t j = 0; j < n; ++j) g.push_back(v(rng));
      if (!seen.insert(g).second) continue;
      p.grams.push_back(g);
      p.flat.insert(p.flat.end(), g.begin(), g.end());
    }
  }
  for (size_t k = 0; k < p.grams.size(); ++k) p.indexes.push_back(static_cast<int64_t>(k));
  std::shuffle(p.indexes.begin(), p.indexes.end(), rng);
  return p;
}

// Per row: for each pool n-gram of an allowed length, the starts and skips where it matches (a
// unigram once per start); then TF, IDF or TFIDF with weights by output position.
std::vector<double> naive_tfidf(const std::vector<int64_t>& x, int64_t rows, int64_t cols, const Pool& p,
                                int64_t min_n, int64_t max_n, int64_t max_skip, const std::string& mode,
                                const std::vector<float>& w) {
  const int64_t out = p.grams.empty() ? 0 : *std::max_element(p.indexes.begin(), p.indexes.end()) + 1;
  std::vector<double> y(static_cast<size_t>(rows * out), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> f(static_cast<size_t>(out), 0.0);
    for (size_t k = 0; k < p.grams.size(); ++k) {
      const auto& g = p.grams[k];
      const int64_t n = static_cast<int64_t>(g.size());
      if (n < min_n || n > max_n) continue;
      for (int64_t skip = 0; skip <= (n == 1 ? 0 : max_skip); ++skip)
        for (int64_t s = 0; s < cols; ++s) {
          bool match = true;
          for (int64_t j = 0; j < n && match; ++j) {
            const int64_t at = s + j * (skip + 1);
            match = at < cols && x[static_cast<size_t>(r * cols + at)] == g[static_cast<size_t>(j)];
          }
          if (match) f[static_cast<size_t>(p.indexes[k])] += 1;
        }
    }
    for (int64_t o = 0; o < out; ++o) {
      const double c = f[static_cast<size_t>(o)], wt = w.empty() ? 1.0 : w[static_cast<size_t>(o)];
      y[static_cast<size_t>(r * out + o)] = mode == "TF" ? c : mode == "IDF" ? (c > 0 ? wt : 0.0) : c * wt;
    }
  }
  return y;
}

TEST(TfIdfVectorizer, RandomPoolsAgainstNaiveCounts) {
  SCOPED_TRACE("seed " + std::to_string(seed()));
  std::mt19937 rng(seed());
  const char* modes[] = {"TF", "IDF", "TFIDF"};
  int nonzero = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t max_len = 1 + trial % 3, vocab = 3 + trial % 4;
    Pool p = random_pool(rng, max_len, vocab);
    if (p.grams.empty()) continue;
    std::uniform_int_distribution<int64_t> len_d(1, max_len), skip_d(0, 3), cols_d(1, 12), rows_d(1, 4);
    int64_t min_n = len_d(rng), max_n = len_d(rng);
    if (min_n > max_n) std::swap(min_n, max_n);
    const int64_t skip = skip_d(rng), cols = cols_d(rng);
    const bool batched = trial % 2 == 1;
    const int64_t rows = batched ? rows_d(rng) : 1;
    const std::string mode = modes[trial % 3];
    std::vector<float> w;
    if (trial % 4 != 0) {
      std::uniform_real_distribution<float> wd(0.1f, 3.0f);
      for (size_t k = 0; k < p.grams.size(); ++k) w.push_back(wd(rng));
    }
    const DataType dt = trial % 3 == 2 ? DataType::kInt32 : DataType::kInt64;
    Tensor x = Tensor::empty(dt, batched ? std::vector<int64_t>{rows, cols} : std::vector<int64_t>{cols});
    std::vector<int64_t> xs;
    std::uniform_int_distribution<int64_t> v(0, vocab - 1);
    for (int64_t i = 0; i < rows * cols; ++i) {
      xs.push_back(v(rng));
      x.set(i, static_cast<double>(xs.back()));
    }
    AttributeMap a = attrs_of({{"mode", mode},
                               {"min_gram_length", min_n},
                               {"max_gram_length", max_n},
                               {"max_skip_count", skip},
                               {"ngram_counts", p.counts},
                               {"ngram_indexes", p.indexes},
                               {"pool_int64s", p.flat}});
    if (!w.empty()) a.set("weights", w);
    const std::string what = "trial " + std::to_string(trial) + " " + mode + " n " + std::to_string(min_n) + ".." +
                             std::to_string(max_n) + " skip " + std::to_string(skip) + " X " +
                             std::to_string(rows) + "x" + std::to_string(cols);
    auto r = run_op("TfIdfVectorizer", {x}, a, 9);
    ASSERT_TRUE(r.is_ok()) << what << ": " << r.status().to_string();
    const Tensor& y = r.value()[0];
    EXPECT_EQ(y.dtype(), DataType::kFloat32);
    const int64_t out = static_cast<int64_t>(p.grams.size());
    EXPECT_EQ(y.dims(), batched ? std::vector<int64_t>({rows, out}) : std::vector<int64_t>({out})) << what;
    const auto want = naive_tfidf(xs, rows, cols, p, min_n, max_n, skip, mode, w);
    testing::expect_values_close(y, want, 1e-6, what);
    for (double d : want) nonzero += d != 0;
  }
  EXPECT_GT(nonzero, 20) << "the random pools should match often";
}

// The ONNX suite's example: bigrams with skips, the unigram counted once per start.
TEST(TfIdfVectorizer, SuiteExampleUniAndBigramsSkip5) {
  Tensor x = Tensor::from_doubles(DataType::kInt32, {12}, {1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8});
  auto a = attrs_of({{"mode", std::string("TF")},
                     {"min_gram_length", int64_t{1}},
                     {"max_gram_length", int64_t{2}},
                     {"max_skip_count", int64_t{5}},
                     {"ngram_counts", std::vector<int64_t>{0, 4}},
                     {"ngram_indexes", std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}},
                     {"pool_int64s", std::vector<int64_t>{2, 3, 5, 4, 5, 6, 7, 8, 6, 7}}});
  auto r = run_op("TfIdfVectorizer", {x}, a, 9);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  testing::expect_values_close(r.value()[0], {0, 3, 1, 0, 1, 3, 1}, 0, "uniandbigrams_skip5");
}

TEST(TfIdfVectorizer, RefusalsNameTheAttribute) {
  Tensor x = Tensor::from_doubles(DataType::kInt64, {4}, {1, 2, 3, 4});
  auto base = [] {
    return attrs_of({{"mode", std::string("TF")},
                     {"min_gram_length", int64_t{1}},
                     {"max_gram_length", int64_t{2}},
                     {"max_skip_count", int64_t{0}},
                     {"ngram_counts", std::vector<int64_t>{0, 2}},
                     {"ngram_indexes", std::vector<int64_t>{0, 1, 2}},
                     {"pool_int64s", std::vector<int64_t>{1, 2, 3, 4}}});
  };
  struct Bad {
    const char* attr;
    AttrValue value;
    const char* says;
  };
  const std::vector<Bad> bad = {
      {"pool_strings", std::vector<std::string>{"a", "b"}, "no string dtype"},
      {"mode", std::string("BM25"), "TF, IDF or TFIDF"},
      {"min_gram_length", int64_t{0}, ">= 1"},
      {"max_gram_length", int64_t{0}, ">= min_gram_length"},
      {"max_skip_count", int64_t{-1}, ">= 0"},
      {"ngram_counts", std::vector<int64_t>{0, 3}, "multiple of 2"},
      {"ngram_counts", std::vector<int64_t>{0, 9}, "offsets into pool_int64s"},
      {"ngram_indexes", std::vector<int64_t>{0, 1}, "pool holds"},
      {"ngram_indexes", std::vector<int64_t>{0, -1, 2}, "negative"},
      {"pool_int64s", std::vector<int64_t>{1, 1, 3, 4}, "twice"},
      {"weights", std::vector<float>{1.0f}, "per output position"},
  };
  for (const Bad& b : bad) {
    AttributeMap a = base();
    a.set(b.attr, b.value);
    auto r = run_op("TfIdfVectorizer", {x}, a, 9);
    ASSERT_FALSE(r.is_ok()) << b.attr;
    EXPECT_EQ(r.status().attribute(), b.attr) << r.status().to_string();
    EXPECT_TRUE(contains(r.status().message(), b.says)) << r.status().to_string();
  }
  AttributeMap no_pool = base();
  no_pool.erase("pool_int64s");
  auto r = run_op("TfIdfVectorizer", {x}, no_pool, 9);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "pool_int64s");
  // Float and rank-3 inputs are refused.
  auto f = run_op("TfIdfVectorizer", {Tensor::from_doubles(DataType::kFloat32, {2}, {1, 2})}, base(), 9);
  EXPECT_FALSE(f.is_ok());
  auto r3 = run_op("TfIdfVectorizer", {Tensor::from_doubles(DataType::kInt64, {1, 1, 2}, {1, 2})}, base(), 9);
  ASSERT_FALSE(r3.is_ok());
  EXPECT_TRUE(contains(r3.status().message(), "[C] or [N, C]")) << r3.status().to_string();
}

// ---- BatchNormalization, training mode ----

TEST(BatchNormalizationTraining, RandomBatchesAgainstNaiveStatistics) {
  SCOPED_TRACE("seed " + std::to_string(seed()));
  std::mt19937 rng(seed());
  std::uniform_int_distribution<int64_t> d(1, 5);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<int64_t> dims = {d(rng), d(rng)};
    for (int extra = trial % 3; extra > 0; --extra) dims.push_back(d(rng));
    dims[0] = std::max<int64_t>(dims[0], 2);  // at least two values per channel: a variance to see
    int64_t inner = 1;
    for (size_t i = 2; i < dims.size(); ++i) inner *= dims[i];
    const int64_t N = dims[0], C = dims[1];
    // Data away from 0 (mean 3) so a one-pass variance would show its error.
    Tensor x = testing::random_tensor(DataType::kFloat32, dims, rng, 1.0, 5.0);
    Tensor scale = testing::random_tensor(DataType::kFloat32, {C}, rng, 0.5, 2.0);
    Tensor bias = testing::random_tensor(DataType::kFloat32, {C}, rng);
    Tensor mean = testing::random_tensor(DataType::kFloat32, {C}, rng);
    Tensor var = testing::random_tensor(DataType::kFloat32, {C}, rng, 0.5, 2.0);
    const double eps = trial % 2 ? 1e-2 : 1e-5;
    const double momentum = 0.5 + 0.5 * u(rng);
    AttributeMap a = attrs_of({{"training_mode", int64_t{1}},
                               {"epsilon", static_cast<float>(eps)},
                               {"momentum", static_cast<float>(momentum)}});
    const std::string what = "trial " + std::to_string(trial) + " X " + ints_to_string(dims);
    auto r = run_op("BatchNormalization", {x, scale, bias, mean, var}, a, 15, 3);
    ASSERT_TRUE(r.is_ok()) << what << ": " << r.status().to_string();
    const auto xv = testing::values(x);
    std::vector<double> want_y(xv.size()), want_rm(C), want_rv(C);
    for (int64_t c = 0; c < C; ++c) {
      std::vector<double> vals;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < inner; ++i) vals.push_back(xv[static_cast<size_t>((n * C + c) * inner + i)]);
      double m = 0, v = 0;
      for (double e : vals) m += e;
      m /= static_cast<double>(vals.size());
      for (double e : vals) v += (e - m) * (e - m);
      v /= static_cast<double>(vals.size());
      const double sc = scale.get(c), b = bias.get(c);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < inner; ++i) {
          const size_t k = static_cast<size_t>((n * C + c) * inner + i);
          want_y[k] = (xv[k] - m) / std::sqrt(v + static_cast<double>(static_cast<float>(eps))) * sc + b;
        }
      const double mo = static_cast<float>(momentum);
      want_rm[static_cast<size_t>(c)] = mean.get(c) * mo + m * (1 - mo);
      want_rv[static_cast<size_t>(c)] = var.get(c) * mo + v * (1 - mo);
    }
    testing::expect_values_close(r.value()[0], want_y, 1e-5, what + " Y");
    ASSERT_EQ(r.value()[1].dims(), std::vector<int64_t>{C});
    testing::expect_values_close(r.value()[1], want_rm, 1e-6, what + " running_mean");
    testing::expect_values_close(r.value()[2], want_rv, 1e-6, what + " running_var");
    // Only Y asked for: the same Y.
    auto y_only = run_op("BatchNormalization", {x, scale, bias, mean, var}, a, 15, 1);
    ASSERT_TRUE(y_only.is_ok()) << y_only.status().to_string();
    testing::expect_values_close(y_only.value()[0], want_y, 1e-5, what + " Y alone");
  }
}

TEST(BatchNormalizationTraining, Refusals) {
  std::mt19937 rng(seed());
  std::vector<Tensor> in = {testing::random_tensor(DataType::kFloat32, {2, 3, 4}, rng)};
  for (int i = 0; i < 4; ++i) in.push_back(testing::random_tensor(DataType::kFloat32, {3}, rng, 0.5, 1.0));
  auto bad_mode = run_op("BatchNormalization", in, attrs_of({{"training_mode", int64_t{2}}}), 15);
  ASSERT_FALSE(bad_mode.is_ok());
  EXPECT_EQ(bad_mode.status().attribute(), "training_mode");
  // The attribute exists from opset 14.
  auto old = run_op("BatchNormalization", in, attrs_of({{"training_mode", int64_t{1}}}), 13);
  ASSERT_FALSE(old.is_ok());
  EXPECT_EQ(old.status().attribute(), "training_mode");
  // Inference mode still refuses the running statistics.
  auto extra = run_op("BatchNormalization", in, {}, 15, 3);
  ASSERT_FALSE(extra.is_ok());
  EXPECT_TRUE(contains(extra.status().message(), "training mode")) << extra.status().to_string();
}

// ---- Dropout, training mode ----

Tensor flag(bool v) { return Tensor::from_doubles(DataType::kBool, {}, {v ? 1.0 : 0.0}); }
Tensor ratio(double r) { return Tensor::from_doubles(DataType::kFloat32, {}, {r}); }

TEST(DropoutTraining, RatioZeroIsIdentityWithFullMask) {
  std::mt19937 rng(seed());
  Tensor x = testing::random_tensor(DataType::kFloat32, {3, 4, 5}, rng);
  auto r = run_op("Dropout", {x, ratio(0.0), flag(true)}, {}, 13, 2);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  testing::expect_values_close(r.value()[0], testing::values(x), 0, "Y");
  EXPECT_EQ(r.value()[1].dtype(), DataType::kBool);
  testing::expect_values_close(r.value()[1], std::vector<double>(60, 1.0), 0, "mask");
}

// Nonzero ratios draw a random mask (statistics: random_ops_test.cpp); the kernel alone, called
// without a node, keeps or zeroes each element and scales the kept ones.
TEST(DropoutTraining, KernelAloneDrawsAScaledMask) {
  std::mt19937 rng(seed());
  Tensor x = testing::random_tensor(DataType::kFloat32, {2, 3}, rng, 0.5, 1.0);
  Tensor y = Tensor::empty(DataType::kFloat32, {2, 3});
  Tensor r = ratio(0.25), t = flag(true);
  ExecContext ctx;
  AttributeMap none;
  ctx.attrs = &none;
  ctx.opset = 13;
  ctx.inputs = {&x, &r, &t};
  ctx.outputs = {&y};
  // The table's kernel (src/ops/random), without a node.
  const OpEntry* entry = find_onnx_op("Dropout");
  ASSERT_TRUE(entry && entry->cpu);
  ASSERT_TRUE(entry->cpu(ctx).is_ok());
  for (int64_t i = 0; i < x.numel(); ++i)
    EXPECT_TRUE(y.get(i) == 0 || std::fabs(y.get(i) - x.get(i) / 0.75) < 1e-6) << i << ": " << y.get(i);
  Tensor zero = ratio(0.0);
  ctx.inputs = {&x, &zero, &t};
  ASSERT_TRUE(entry->cpu(ctx).is_ok());
  testing::expect_values_close(y, testing::values(x), 0, "kernel Y");
  // Inference mode keeps its identity at any ratio.
  auto inference = run_op("Dropout", {x, ratio(0.9), flag(false)}, {}, 13);
  ASSERT_TRUE(inference.is_ok()) << inference.status().to_string();
}

}  // namespace
}  // namespace graft
