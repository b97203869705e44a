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

#include "graft/status.h"
#include "ops/operator.h"
#include "ops/tfidf_attrs.h"

namespace graft::cpu {

Status tfidf_vectorizer(ExecContext& ctx);

}  // namespace graft::cpu
