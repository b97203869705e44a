// Launcher for the CUDA kernel of TfIdfVectorizer (CPU reference: src/backends/cpu/tfidf.cpp; op:
// tfidf_ops.cpp). Plain pointers; returns the first failing launch's cudaError_t
// (cudaErrorInvalidValue for a problem it does not handle). Nothing here allocates or synchronizes.
//
// The pool travels as a table of int64 words built once on the host (tfidf_ops.cpp). The launcher
// writes it into the workspace with kernels that carry it in their launch parameters, so the host
// table may be freed as soon as the launcher returns and a CUDA graph capture records it by value
// (no host-to-device copy whose host buffer must outlive a graph).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cuda/cuda_kernel_common.cuh"

namespace graft::cuda::k {

// Table layout, in int64 words: for n = 1..lengths, words 3(n-1), 3(n-1)+1 and 3(n-1)+2 hold where
// the n-grams' items start, where their output positions start and how many there are; the
// n-grams of one length are sorted lexicographically (binary search), items row-major. When
// weights_at >= 0, output position o's weight is the double whose bits are word weights_at + o.
struct TfIdfProblem {
  int64_t rows = 0, cols = 0;      // X is [rows, cols] ([cols] is one row)
  int64_t output_size = 0;         // Y is [rows, output_size] float32
  int64_t min_gram = 1, max_gram = 1, max_skip = 0;
  int64_t lengths = 0;             // the longest n-gram in the pool
  int64_t weights_at = -1;
  int mode = 0;                    // 0 TF, 1 IDF, 2 TFIDF
  int64_t table_words = 0;
};

// Scratch: the table, then a uint32 count per output element.
size_t tfidf_workspace_bytes(int64_t table_words, int64_t rows, int64_t output_size);

// x of type xt (kI32, kI64); `table` is host memory of p.table_words words, read before this returns.
// Counts every n-gram of each row exactly as the CPU reference does (n-grams of length 2 and up
// once per skip 0..max_skip, unigrams at skip 0 only) and writes y = count (TF), weight if count > 0
// (IDF) or count * weight (TFIDF), computed in double and rounded once to float32.
cudaError_t launch_tfidf(KType xt, const void* x, const TfIdfProblem& p, const int64_t* table, void* workspace,
                         size_t workspace_bytes, float* y, cudaStream_t s);

}  // namespace graft::cuda::k
