// CPU reference kernel of TfIdfVectorizer (opset 9; schema: src/ops/tfidf_ops.cpp): counts, per row
// of an integer input [C] or [N, C], how often each n-gram of a pool occurs, and writes the counts
// (TF), their presence times a weight (IDF) or the counts times a weight (TFIDF) into a float
// vector [max(ngram_indexes) + 1] (or [N, ...]).
//
// The pool holds the n-grams of each length one after another: ngram_counts[i] is where the
// (i + 1)-grams start in pool_int64s, and the k-th n-gram of the pool (counting across lengths)
// goes to output position ngram_indexes[k]. An n-gram is read from a start position with a skip of
// 0..max_skip_count elements between its items; unigrams are counted once (at skip 0), as ONNX's
// reference and ONNX Runtime count them, not once per skip. Weights are indexed by output position,
// again as both implementations index them.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "graft/status.h"
#include "ops/operator.h"

namespace graft::cpu {

enum class TfIdfMode { kTF, kIDF, kTFIDF };

// The node's attributes, checked once: errors name the attribute at fault.
struct TfIdfAttrs {
  TfIdfMode mode = TfIdfMode::kTF;
  int64_t min_gram = 1, max_gram = 1, max_skip = 0;
  int64_t output_size = 0;  // max(ngram_indexes) + 1
  std::vector<float> weights;  // empty, or one per output position
  std::map<std::vector<int64_t>, int64_t> grams;  // n-gram -> output position
};
Result<TfIdfAttrs> tfidf_attrs(const AttributeMap& attrs);

Status tfidf_vectorizer(ExecContext& ctx);

}  // namespace graft::cpu
