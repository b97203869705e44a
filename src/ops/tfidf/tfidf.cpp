// The TfIdfVectorizer family, defined whole here (opset 9): its attributes, its CPU reference
// kernel, and its schema row with inference. Its CUDA op is in tfidf.cu, what the two share in
// tfidf.h.
#include "ops/tfidf/tfidf.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- attributes and shapes (tfidf.h) --------------------------------------------------------

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

// ---- CPU reference --------------------------------------------------------------------------
// TfIdfVectorizer counts, per row
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

namespace cpu {

Status tfidf_vectorizer(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  GRAFT_ASSIGN_OR_RETURN(TfIdfAttrs a, tfidf_attrs(attrs_of(ctx)));
  const Tensor& x = *ctx.inputs[0];
  if (x.dtype() != DataType::kInt32 && x.dtype() != DataType::kInt64)
    return error(StatusCode::kInvalidModel, "TfIdfVectorizer: input X must be int32 or int64, got ",
                 dtype_name(x.dtype()));
  if (x.rank() != 1 && x.rank() != 2)
    return error(StatusCode::kInvalidModel, "TfIdfVectorizer: input X must be [C] or [N, C], got ",
                 ints_to_string(x.dims()));
  const int64_t rows = x.rank() == 2 ? x.dims()[0] : 1, cols = x.dims().back();
  Tensor& y = *ctx.outputs[0];
  if (y.numel() != rows * a.output_size)
    return error(StatusCode::kInternal, "TfIdfVectorizer: output ", ints_to_string(y.dims()), " does not hold ",
                 rows, " x ", a.output_size, " values");
  std::vector<int64_t> xs = x.to_int64_vector();
  std::vector<double> count(static_cast<size_t>(a.output_size));
  std::vector<int64_t> gram;
  for (int64_t r = 0; r < rows; ++r) {
    std::fill(count.begin(), count.end(), 0.0);
    const int64_t* row = xs.data() + r * cols;
    for (int64_t skip = 0; skip <= a.max_skip; ++skip)
      for (int64_t start = 0; start < cols; ++start)
        // Unigrams have no gaps: only the first skip counts them.
        for (int64_t n = std::max(a.min_gram, skip ? int64_t{2} : int64_t{1}); n <= a.max_gram; ++n) {
          if (start + (n - 1) * (skip + 1) >= cols) break;
          gram.clear();
          for (int64_t j = 0; j < n; ++j) gram.push_back(row[start + j * (skip + 1)]);
          auto hit = a.grams.find(gram);
          if (hit != a.grams.end()) count[static_cast<size_t>(hit->second)] += 1.0;
        }
    for (int64_t o = 0; o < a.output_size; ++o) {
      const double f = count[static_cast<size_t>(o)];
      const double w = a.weights.empty() ? 1.0 : static_cast<double>(a.weights[static_cast<size_t>(o)]);
      double v = f;
      if (a.mode == TfIdfMode::kIDF) v = f > 0 ? w : 0.0;
      else if (a.mode == TfIdfMode::kTFIDF) v = f * w;
      y.set(r * a.output_size + o, v);
    }
  }
  return Status::ok();
}

}  // namespace cpu

// ---- schema: inference and the table rows ---------------------------------------------------
// An int32/int64 input [C] or [N, C] becomes a float32 [max(ngram_indexes) + 1] or
// [N, max(ngram_indexes) + 1]. The attributes are checked here, so a bad pool fails at build time
// naming the attribute.

namespace {

using namespace infer;

Status infer_tfidf_vectorizer(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(TfIdfAttrs a, tfidf_attrs(ctx.attrs()));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, {kI32, kI64}));
  const TensorDesc& x = ctx.input(0);
  if (!x.shape) {
    ctx.set_output(0, desc_of(kF32, std::nullopt));
    return Status::ok();
  }
  if (x.rank() == 1) {
    ctx.set_output(0, desc_of(kF32, Shape{Dim(a.output_size)}));
  } else if (x.rank() == 2) {
    ctx.set_output(0, desc_of(kF32, Shape{(*x.shape)[0], Dim(a.output_size)}));
  } else {
    return ctx.fail("input X must be [C] or [N, C], got ", x.to_string());
  }
  return Status::ok();
}

}  // namespace

void append_tfidf_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"TfIdfVectorizer", 9, infer_tfidf_vectorizer, cpu::tfidf_vectorizer});
}

}  // namespace graft
