// The TfIdfVectorizer family: what its definition (tfidf.cpp: schema, inference, CPU reference)
// and its CUDA op (tfidf.cu) share. The attributes (the n-gram pool, its output positions and
// weights) are read one way by all three, so a bad pool fails with the same message on every side.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "graft/attribute.h"
#include "graft/status.h"

namespace graft {

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

}  // namespace graft
