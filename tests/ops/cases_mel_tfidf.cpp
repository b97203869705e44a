// Cases for the ONNX ops MelWeightMatrix (opset 17: the triangular mel filter bank over the bins of a
// one-sided spectrum) and TfIdfVectorizer (opset 9: counts of pooled n-grams, with skips, weighted as
// TF, IDF or TFIDF). Each has an independent float64 formula, written from the ONNX specification and
// its reference implementation (onnx/reference/ops/op_mel_weight_matrix.py, op_tfidf_vectorizer.py).
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "case_util.h"
#include "harness.h"

namespace graft::optest {

namespace {

// ---- MelWeightMatrix --------------------------------------------------------------------------
// Inputs num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz. The band edges
// are num_mel_bins + 2 points evenly spaced in mel (mel = 2595 log10(1 + hz / 700)) from the lower
// edge in steps of (mel(upper) - mel(lower)) / (num_mel_bins + 2) (so the last point stays below the
// upper edge, as the specification's reference has it), each mapped to spectrogram bin
// floor((dft_length + 1) * hz / sample_rate). Filter i rises linearly from 0 at edge i to 1 at edge
// i + 1 (a single 1 there when the two coincide) and falls back towards 0 before edge i + 2. Output
// [dft_length / 2 + 1, num_mel_bins] in output_datatype (integers truncate, as Cast does).
Values mel_formula(const Values& in, const DimsList&, const AttributeMap& a) {
  const int64_t mels = static_cast<int64_t>(in[0][0]), dft_length = static_cast<int64_t>(in[1][0]);
  const double rate = in[2][0], lower = in[3][0], upper = in[4][0];
  const int64_t bins = dft_length / 2 + 1;
  auto mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  const double low_mel = mel(lower), step = (mel(upper) - low_mel) / static_cast<double>(mels + 2);
  std::vector<int64_t> edge;
  for (int64_t i = 0; i < mels + 2; ++i) {
    const double hz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * step + low_mel) / 2595.0) - 1.0);
    edge.push_back(static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz / rate)));
  }
  std::vector<double> y(static_cast<size_t>(bins * mels), 0.0);
  auto at = [&](int64_t bin, int64_t filter) -> double& { return y[static_cast<size_t>(bin * mels + filter)]; };
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t left = edge[i], centre = edge[i + 1], right = edge[i + 2];
    if (centre == left) at(centre, i) = 1.0;
    for (int64_t j = left; centre > left && j <= centre; ++j)
      at(j, i) = static_cast<double>(j - left) / static_cast<double>(centre - left);
    for (int64_t j = centre; j < right; ++j) at(j, i) = static_cast<double>(right - j) / static_cast<double>(right - centre);
  }
  const int64_t out = a.get_int("output_datatype", 1).value();
  const bool integer = out == 2 || out == 3 || out == 5 || out == 6 || out == 7;  // uint8, int8, int16, int32, int64
  if (integer)
    for (double& v : y) v = std::trunc(v);
  return {y};
}

OpCaseTable mel_weight_matrix_cases() {
  OpCaseTable t = builtin_table("MelWeightMatrix", mel_formula, 17);
  // Every input has a dtype of its own (the output's is output_datatype's): one run per backend.
  t.cpu_dtypes = {DataType::kFloat32};
  t.cuda_dtypes = {DataType::kFloat32};
  const DataType i64 = DataType::kInt64, i32 = DataType::kInt32;
  auto scalar = [](DataType dt, double v) { return fixed({}, dt, {v}); };
  auto output = [](int64_t onnx_type) { return attr("output_datatype", onnx_type); };
  // Random band edges within Nyquist: 40 filters over 65 bins, the low ones narrower than a bin (two
  // edges in one bin: the single-1 filter), the high ones several bins wide.
  t.cases.push_back(make_case("float32_random_edges",
                              {scalar(i64, 40), scalar(i64, 128), scalar(i64, 16000),
                               typed({}, DataType::kFloat32, 0, 300), typed({}, DataType::kFloat32, 3000, 8000)},
                              {{65, 40}}));
  t.cases.push_back(make_case("float16_int32_scalars_float16_edges",
                              {scalar(i32, 24), scalar(i32, 400), scalar(i32, 22050),
                               typed({}, DataType::kFloat16, 20, 100), typed({}, DataType::kFloat16, 5000, 11000)},
                              {{201, 24}}, output(10)));
  // An odd dft_length (bins = floor(31 / 2) + 1) and [1]-shaped edges up to Nyquist.
  t.cases.push_back(make_case("float64_odd_dft_length",
                              {scalar(i64, 4), scalar(i64, 31), scalar(i64, 8000), typed({1}, DataType::kFloat64, 0, 50),
                               typed({1}, DataType::kFloat64, 3500, 4000)},
                              {{16, 4}}, output(11)));
  // int32 weights: every ramp value below 1 truncates to 0, leaving the 1s at the centres.
  t.cases.push_back(make_case("int32_weights",
                              {scalar(i64, 6), scalar(i64, 64), scalar(i64, 16000), typed({}, DataType::kFloat32, 0, 200),
                               typed({}, DataType::kFloat32, 4000, 8000)},
                              {{33, 6}}, output(6)));
  // Lower edge == upper edge: every edge is one bin, every filter a single 1 there.
  t.cases.push_back(make_case("all_edges_in_one_bin",
                              {scalar(i64, 3), scalar(i64, 64), scalar(i64, 16000), scalar(DataType::kFloat32, 1000),
                               scalar(DataType::kFloat32, 1000)},
                              {{33, 3}}));
  t.bad_attributes.push_back({"bool_output", output(9), {}, "output_datatype"});
  t.bad_attributes.push_back({"string_output", output(8), {}, "output_datatype"});
  t.bad_attributes.push_back({"undefined_output", output(0), {}, "output_datatype"});
  return t;
}

// ---- TfIdfVectorizer --------------------------------------------------------------------------
// Input X [C] or [N, C] of int32/int64, each row alone. An n-gram is n items at positions s, s + d,
// ..., s + (n - 1) d, with d - 1 = 0 .. max_skip_count items skipped between neighbours (unigrams
// once, with d = 1), for n in [min_gram_length, max_gram_length]. Each one found in the pool (the
// (i + 1)-grams are pool_int64s[ngram_counts[i] : ngram_counts[i + 1]], in order; the k-th n-gram
// of the pool counts at output position ngram_indexes[k]) adds 1 there. TF: the counts; IDF: weights
// at the positions counted at least once (1 without weights), 0 elsewhere; TFIDF: counts times the
// weights. The weights go by output position, as in ONNX's reference implementation and ONNX
// Runtime. Output [max(ngram_indexes) + 1] or [N, max(ngram_indexes) + 1], float32.
Values tfidf_formula(const Values& in, const DimsList& dims, const AttributeMap& a) {
  const std::string mode = a.get_string("mode", "").value();
  const int64_t min_n = a.get_int("min_gram_length", 0).value(), max_n = a.get_int("max_gram_length", 0).value();
  const int64_t max_skip = a.get_int("max_skip_count", 0).value();
  const Ints counts = a.get_ints("ngram_counts", {}).value(), indexes = a.get_ints("ngram_indexes", {}).value();
  const Ints pool = a.get_ints("pool_int64s", {}).value();
  const std::vector<float> weights = a.get_floats("weights", {}).value();
  struct Gram {
    Ints items;
    int64_t position;
  };
  std::vector<Gram> grams;
  for (size_t i = 0; i < counts.size(); ++i) {
    const int64_t n = static_cast<int64_t>(i) + 1;
    const int64_t end = i + 1 < counts.size() ? counts[i + 1] : static_cast<int64_t>(pool.size());
    for (int64_t s = counts[i]; s < end; s += n)
      grams.push_back({Ints(pool.begin() + s, pool.begin() + s + n), indexes[grams.size()]});
  }
  const int64_t outputs = *std::max_element(indexes.begin(), indexes.end()) + 1;
  const int64_t cols = dims[0].back(), rows = static_cast<int64_t>(in[0].size()) / cols;
  std::vector<double> y;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> tf(static_cast<size_t>(outputs), 0.0);
    for (int64_t n = min_n; n <= max_n; ++n)
      for (int64_t d = 1; d <= (n == 1 ? 1 : max_skip + 1); ++d)
        for (int64_t s = 0; s + (n - 1) * d < cols; ++s) {
          Ints items;
          for (int64_t j = 0; j < n; ++j) items.push_back(static_cast<int64_t>(in[0][r * cols + s + j * d]));
          for (const Gram& g : grams)
            if (g.items == items) tf[g.position] += 1.0;
        }
    for (int64_t o = 0; o < outputs; ++o) {
      const double w = weights.empty() ? 1.0 : static_cast<double>(weights[o]);
      if (mode == "TF") y.push_back(tf[o]);
      if (mode == "IDF") y.push_back(tf[o] > 0.0 ? w : 0.0);
      if (mode == "TFIDF") y.push_back(tf[o] * w);
    }
  }
  return {y};
}

AttributeMap tfidf_attrs(const char* mode, int64_t min_n, int64_t max_n, int64_t max_skip, Ints counts, Ints indexes,
                         Ints pool, std::vector<float> weights = {}) {
  AttributeMap a;
  a.set("mode", std::string(mode));
  a.set("min_gram_length", min_n);
  a.set("max_gram_length", max_n);
  a.set("max_skip_count", max_skip);
  a.set("ngram_counts", std::move(counts));
  a.set("ngram_indexes", std::move(indexes));
  a.set("pool_int64s", std::move(pool));
  if (!weights.empty()) a.set("weights", std::move(weights));
  return a;
}

OpCaseTable tfidf_vectorizer_cases() {
  OpCaseTable t = builtin_table("TfIdfVectorizer", tfidf_formula, 9);
  // X is an integer input: one run per backend.
  t.cpu_dtypes = {DataType::kFloat32};
  t.cuda_dtypes = {DataType::kFloat32};
  const DataType i64 = DataType::kInt64, i32 = DataType::kInt32;
  // Unigrams {1, 3, 4} and bigrams {0 1, 1 1, 2 3, 5 0} over items 0..5, scattered over 8 outputs:
  // positions 3 and 4 get nothing, and the unigram 1 and the bigram 5 0 share position 5.
  const AttributeMap tf_1d =
      tfidf_attrs("TF", 1, 2, 0, {0, 3}, {5, 0, 7, 2, 6, 1, 5}, {1, 3, 4, 0, 1, 1, 1, 2, 3, 5, 0});
  t.cases.push_back(make_case("tf_1d_int64_unigrams_bigrams", {typed({14}, i64, 0, 5)}, {{8}}, tf_1d));
  // No unigrams in the pool (an empty first segment); bigrams and trigrams with up to 2 items skipped.
  t.cases.push_back(make_case("tfidf_2d_int32_skips",
                              {typed({3, 12}, i32, 0, 3)}, {{3, 6}},
                              tfidf_attrs("TFIDF", 2, 3, 2, {0, 0, 8}, {4, 1, 5, 0, 2, 3},
                                          {0, 1, 1, 2, 3, 3, 2, 0, 0, 1, 2, 1, 1, 1}, {0.5f, 1.25f, 2.0f, 0.75f, 3.0f, 1.5f})));
  t.cases.push_back(make_case("idf_weights_2d_int64",
                              {typed({2, 9}, i64, 0, 2)}, {{2, 6}},
                              tfidf_attrs("IDF", 1, 3, 1, {0, 2, 6}, {3, 0, 4, 1, 5, 2},
                                          {0, 2, 0, 0, 1, 2, 2, 2, 2, 0, 1, 0}, {0.25f, 1.5f, 2.5f, 4.0f, 0.125f, 3.0f})));
  t.cases.push_back(make_case("idf_without_weights",
                              {typed({4, 8}, i64, 0, 2)}, {{4, 5}},
                              tfidf_attrs("IDF", 2, 2, 1, {0, 0}, {2, 0, 4, 1, 3}, {0, 1, 1, 0, 2, 2, 1, 1, 2, 0})));
  // Unigrams only, with skips allowed: each item still counts once.
  t.cases.push_back(make_case("tf_unigrams_skips_count_once",
                              {typed({16}, i32, 0, 6)}, {{4}},
                              tfidf_attrs("TF", 1, 1, 3, {0}, {3, 2, 1, 0}, {0, 2, 4, 6})));
  // Pool and length attributes graft refuses, each one change from the first case's valid set.
  auto broken = [&tf_1d](const char* name, AttrValue v) {
    AttributeMap a = tf_1d;
    a.set(name, std::move(v));
    return a;
  };
  t.bad_attributes.push_back({"unknown_mode", broken("mode", std::string("BM25")), {}, "mode"});
  t.bad_attributes.push_back({"zero_min_gram_length", broken("min_gram_length", int64_t{0}), {}, "min_gram_length"});
  t.bad_attributes.push_back({"max_below_min", broken("min_gram_length", int64_t{3}), {}, "max_gram_length"});
  t.bad_attributes.push_back({"negative_skip", broken("max_skip_count", int64_t{-1}), {}, "max_skip_count"});
  t.bad_attributes.push_back({"bigrams_not_whole", broken("ngram_counts", Ints{0, 4}), {}, "ngram_counts"});
  t.bad_attributes.push_back({"counts_past_pool", broken("ngram_counts", Ints{0, 12}), {}, "ngram_counts"});
  t.bad_attributes.push_back({"too_few_indexes", broken("ngram_indexes", Ints{5, 0, 7, 2, 6, 1}), {}, "ngram_indexes"});
  t.bad_attributes.push_back({"too_many_indexes", broken("ngram_indexes", Ints{5, 0, 7, 2, 6, 1, 5, 4}), {}, "ngram_indexes"});
  t.bad_attributes.push_back({"negative_index", broken("ngram_indexes", Ints{5, 0, 7, -2, 6, 1, 5}), {}, "ngram_indexes"});
  t.bad_attributes.push_back({"too_few_weights", broken("weights", std::vector<float>{1, 2, 3}), {}, "weights"});
  t.bad_attributes.push_back({"repeated_ngram", broken("pool_int64s", Ints{1, 3, 1, 0, 1, 1, 1, 2, 3, 5, 0}), {}, "pool_int64s"});
  t.bad_attributes.push_back(
      {"string_pool", broken("pool_strings", std::vector<std::string>{"a", "b", "c"}), {}, "pool_strings"});
  AttributeMap no_pool = tf_1d;
  no_pool.erase("pool_int64s");
  t.bad_attributes.push_back({"no_pool", no_pool, {}, "pool_int64s"});
  return t;
}

}  // namespace

std::vector<OpCaseTable> mel_tfidf_case_tables() { return {mel_weight_matrix_cases(), tfidf_vectorizer_cases()}; }

}  // namespace graft::optest
