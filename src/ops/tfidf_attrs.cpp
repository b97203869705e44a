#include "ops/tfidf_attrs.h"

#include <algorithm>
#include <string>
#include <utility>

#include "ops/attr_util.h"

namespace graft {

Result<TfIdfAttrs> tfidf_attrs(const AttributeMap& attrs) {
  TfIdfAttrs a;
  // graft has no string dtype, so a pool of strings could never match an input.
  if (attrs.has("pool_strings"))
    return Status(error(StatusCode::kUnsupported,
                        "string pools are not supported (graft has no string dtype); use pool_int64s"))
        .with_attribute("pool_strings");
  auto mode = attrs.get_string("mode", "");
  if (!mode) return Status(mode.status()).with_attribute("mode");
  if (mode.value() == "TF") a.mode = TfIdfMode::kTF;
  else if (mode.value() == "IDF") a.mode = TfIdfMode::kIDF;
  else if (mode.value() == "TFIDF") a.mode = TfIdfMode::kTFIDF;
  else return attr_error("mode", "must be TF, IDF or TFIDF, got '", mode.value(), "'");
  for (auto [name, dst] : {std::pair{"min_gram_length", &a.min_gram}, std::pair{"max_gram_length", &a.max_gram},
                           std::pair{"max_skip_count", &a.max_skip}}) {
    auto v = attrs.get_int(name, -1);
    if (!v) return Status(v.status()).with_attribute(name);
    if (!attrs.has(name)) return attr_error(name, "is required");
    *dst = v.value();
  }
  if (a.min_gram < 1) return attr_error("min_gram_length", "must be >= 1, got ", a.min_gram);
  if (a.max_gram < a.min_gram)
    return attr_error("max_gram_length", "must be >= min_gram_length (", a.min_gram, "), got ", a.max_gram);
  if (a.max_skip < 0) return attr_error("max_skip_count", "must be >= 0, got ", a.max_skip);
  auto counts = attrs.get_ints("ngram_counts", {});
  if (!counts) return Status(counts.status()).with_attribute("ngram_counts");
  auto indexes = attrs.get_ints("ngram_indexes", {});
  if (!indexes) return Status(indexes.status()).with_attribute("ngram_indexes");
  auto pool = attrs.get_ints("pool_int64s", {});
  if (!pool) return Status(pool.status()).with_attribute("pool_int64s");
  if (!attrs.has("pool_int64s")) return attr_error("pool_int64s", "is required (or pool_strings, which graft refuses)");
  auto weights = attrs.get_floats("weights", {});
  if (!weights) return Status(weights.status()).with_attribute("weights");
  const std::vector<int64_t>& c = counts.value();
  const std::vector<int64_t>& p = pool.value();
  const std::vector<int64_t>& ix = indexes.value();
  if (c.empty()) return attr_error("ngram_counts", "must not be empty");
  // Segment i holds the (i + 1)-grams: it runs from c[i] to c[i + 1] (the pool's end for the last).
  size_t k = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    const int64_t begin = c[i], end = i + 1 < c.size() ? c[i + 1] : static_cast<int64_t>(p.size());
    const int64_t n = static_cast<int64_t>(i) + 1;
    if (begin < 0 || begin > end || end > static_cast<int64_t>(p.size()))
      return attr_error("ngram_counts", "must be non-decreasing offsets into pool_int64s (",
                        static_cast<int64_t>(p.size()), " items), got ", ints_to_string(c));
    if ((end - begin) % n != 0)
      return attr_error("ngram_counts", "the ", n, "-grams span pool_int64s[", begin, ":", end,
                        "], which is not a multiple of ", n, " items");
    for (int64_t s = begin; s < end; s += n, ++k) {
      if (k >= ix.size())
        return attr_error("ngram_indexes", "has ", static_cast<int64_t>(ix.size()),
                          " entries but the pool holds more n-grams");
      if (ix[k] < 0) return attr_error("ngram_indexes", "entry ", static_cast<int64_t>(k), " is negative: ", ix[k]);
      std::vector<int64_t> gram(p.begin() + s, p.begin() + s + n);
      if (!a.grams.emplace(std::move(gram), ix[k]).second)
        return attr_error("pool_int64s", "n-gram ", static_cast<int64_t>(k), " appears twice in the pool");
    }
  }
  if (k != ix.size())
    return attr_error("ngram_indexes", "has ", static_cast<int64_t>(ix.size()), " entries but the pool holds ",
                      static_cast<int64_t>(k), " n-grams");
  for (int64_t v : ix) a.output_size = std::max(a.output_size, v + 1);
  a.weights = weights.value();
  if (!a.weights.empty() && static_cast<int64_t>(a.weights.size()) < a.output_size)
    return attr_error("weights", "has ", static_cast<int64_t>(a.weights.size()),
                      " entries; one per output position (", a.output_size, ") is needed");
  return a;
}

}  // namespace graft
