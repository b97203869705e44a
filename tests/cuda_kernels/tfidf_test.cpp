// CUDA kernel of TfIdfVectorizer (src/ops/tfidf/tfidf.cu) against the CPU reference
// (src/ops/tfidf/tfidf.cpp), exactly: random pools over a small vocabulary (so n-grams recur in
// the input and across skips), 1-D and 2-D int32/int64 input, TF/IDF/TFIDF with and without
// weights, every min/max_gram_length window (also past the pool's longest n-gram), skips from 0 to
// past the row length, lengths without n-grams, unused pool items before the first segment, pool
// values outside int32 and output positions shared by two n-grams. Fresh random data each run.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "cuda_kernel_harness.h"

namespace graft::testing {
namespace {

struct PoolSpec {
  int64_t lengths = 2;          // ngram_counts has this many segments
  int64_t per_length = 4;       // n-grams per length (at most; a length may be left empty)
  bool empty_length = false;    // the middle length gets no n-grams
  bool lead_items = false;      // items before ngram_counts[0] that belong to no n-gram
  bool shared_position = false; // two n-grams write the same output position
  bool extra_positions = false; // output positions no n-gram writes (stay 0)
};

// Random distinct n-grams over [1, vocab] (a few with a value beyond int32, which int32 input never
// matches), their offsets and output positions, set as the node's attributes.
void set_pool(std::mt19937& rng, const PoolSpec& s, int64_t vocab, AttributeMap& attrs, int64_t* out_size) {
  std::vector<int64_t> pool, counts, indexes;
  if (s.lead_items) pool = {static_cast<int64_t>(1 + rng() % vocab), 77};
  int64_t k = 0;
  for (int64_t n = 1; n <= s.lengths; ++n) {
    counts.push_back(static_cast<int64_t>(pool.size()));
    if (s.empty_length && n == 2 && s.lengths > 2) continue;
    std::set<std::vector<int64_t>> seen;
    for (int64_t g = 0; g < s.per_length; ++g) {
      std::vector<int64_t> gram;
      for (int64_t j = 0; j < n; ++j)
        gram.push_back(rng() % 11 == 0 ? int64_t{5000000000} : static_cast<int64_t>(1 + rng() % vocab));
      if (!seen.insert(gram).second) continue;  // the pool holds each n-gram once
      pool.insert(pool.end(), gram.begin(), gram.end());
      ++k;
    }
  }
  int64_t size = k + (s.extra_positions ? 3 : 0);
  std::vector<int64_t> perm(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) perm[static_cast<size_t>(i)] = i;
  std::shuffle(perm.begin(), perm.end(), rng);
  indexes.assign(perm.begin(), perm.begin() + k);
  if (s.shared_position && k >= 2) indexes[1] = indexes[0];
  int64_t m = 0;
  for (int64_t v : indexes) m = std::max(m, v + 1);
  *out_size = m;
  attrs.set("pool_int64s", pool);
  attrs.set("ngram_counts", counts);
  attrs.set("ngram_indexes", indexes);
}

Tensor random_ids(std::mt19937& rng, DataType dt, const std::vector<int64_t>& dims, int64_t vocab) {
  Tensor t = Tensor::empty(dt, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, static_cast<double>(1 + rng() % vocab));
  return t;
}

struct Window {
  int64_t min_gram, max_gram, max_skip;
};

TEST(CudaTfIdf, MatchesReferenceForEveryModeAndWindow) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const std::vector<PoolSpec> pools = {
      {.lengths = 1, .per_length = 5},
      {.lengths = 2, .per_length = 6, .shared_position = true},
      {.lengths = 3, .per_length = 8, .empty_length = true, .lead_items = true, .extra_positions = true},
      {.lengths = 3, .per_length = 12},
  };
  const std::vector<Window> windows = {{1, 1, 0}, {1, 2, 0}, {1, 2, 2}, {2, 3, 1}, {1, 3, 3}, {3, 3, 0},
                                       {2, 4, 100}, {1, 5, 1}};
  const std::vector<std::vector<int64_t>> shapes = {{17}, {1, 9}, {4, 23}, {3, 2}, {2, 1}};
  int case_no = 0;
  for (const PoolSpec& ps : pools)
    for (const Window& w : windows)
      for (const char* mode : {"TF", "IDF", "TFIDF"}) {
        ++case_no;
        const int64_t vocab = 3 + static_cast<int64_t>(rng() % 4);
        KernelCase k;
        k.op = "TfIdfVectorizer";
        k.opset = 9;
        int64_t out_size = 0;
        set_pool(rng, ps, vocab, k.attrs, &out_size);
        k.attrs.set("mode", std::string(mode));
        k.attrs.set("min_gram_length", w.min_gram);
        k.attrs.set("max_gram_length", w.max_gram);
        k.attrs.set("max_skip_count", w.max_skip);
        const bool weighted = case_no % 2 == 0;
        if (weighted) {
          std::vector<float> weights;
          for (int64_t o = 0; o < out_size + (case_no % 4 == 0 ? 2 : 0); ++o)
            weights.push_back(0.1f + static_cast<float>(rng() % 1000) / 97.0f);
          k.attrs.set("weights", weights);
        }
        const auto& dims = shapes[static_cast<size_t>(case_no) % shapes.size()];
        const DataType dt = case_no % 3 == 0 ? DataType::kInt32 : DataType::kInt64;
        k.inputs = {random_ids(rng, dt, dims, vocab)};
        k.tol32 = 1e-12;  // counts and one rounding of count * weight: equal
        k.label = std::string("mode ") + mode + " grams " + std::to_string(w.min_gram) + ".." +
                  std::to_string(w.max_gram) + " skip " + std::to_string(w.max_skip) + " pool lengths " +
                  std::to_string(ps.lengths) + (weighted ? " weighted" : "") + " X " +
                  TensorDesc(dt, shape_from_values(dims)).to_string();
        run_kernel_case(k, DataType::kFloat32, seed);
      }
}

// A long batch (many threads, many hits per output position) and a pool of thousands of n-grams
// (a table written by several upload launches).
TEST(CudaTfIdf, LargePoolAndBatch) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (const char* mode : {"TF", "TFIDF"}) {
    KernelCase k;
    k.op = "TfIdfVectorizer";
    k.opset = 9;
    int64_t out_size = 0;
    set_pool(rng, {.lengths = 3, .per_length = 1500}, 40, k.attrs, &out_size);
    k.attrs.set("mode", std::string(mode));
    k.attrs.set("min_gram_length", int64_t{1});
    k.attrs.set("max_gram_length", int64_t{3});
    k.attrs.set("max_skip_count", int64_t{4});
    std::vector<float> weights;
    for (int64_t o = 0; o < out_size; ++o) weights.push_back(0.5f + static_cast<float>(rng() % 100) / 13.0f);
    k.attrs.set("weights", weights);
    k.inputs = {random_ids(rng, DataType::kInt64, {64, 300}, 40)};
    k.tol32 = 1e-12;
    k.label = std::string("mode ") + mode + " pool of " + std::to_string(out_size) + " positions";
    run_kernel_case(k, DataType::kFloat32, seed);
  }
}

// Rows without columns: every count is 0.
TEST(CudaTfIdf, EmptyRows) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  KernelCase k;
  k.op = "TfIdfVectorizer";
  k.opset = 9;
  int64_t out_size = 0;
  set_pool(rng, {.lengths = 2, .per_length = 3}, 5, k.attrs, &out_size);
  k.attrs.set("mode", std::string("TFIDF"));
  k.attrs.set("min_gram_length", int64_t{1});
  k.attrs.set("max_gram_length", int64_t{2});
  k.attrs.set("max_skip_count", int64_t{1});
  k.attrs.set("weights", std::vector<float>(static_cast<size_t>(out_size), 1.5f));
  k.inputs = {Tensor::empty(DataType::kInt64, {3, 0})};
  run_kernel_case(k, DataType::kFloat32, seed);
}

// String pools cannot reach the GPU: supports() refuses them and says why.
TEST(CudaTfIdf, RefusesStringPools) {
  const cuda::CudaOp* op = cuda::find_cuda_op("TfIdfVectorizer");
  ASSERT_NE(op, nullptr);
  OneNode n("TfIdfVectorizer", {Tensor::empty(DataType::kInt64, {4})});
  n.node->attrs.set("pool_strings", std::vector<std::string>{"a", "b"});
  n.node->outputs[0]->desc = TensorDesc(DataType::kFloat32, shape_from_values({2}));
  std::string why;
  EXPECT_FALSE(op->supports(*n.node, &why));
  EXPECT_NE(why.find("string tensors live on the host"), std::string::npos) << why;
}

}  // namespace
}  // namespace graft::testing
