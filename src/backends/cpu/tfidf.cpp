// CPU reference kernel of TfIdfVectorizer. See tfidf.h.
#include "backends/cpu/tfidf.h"

#include <algorithm>
#include <string>

#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"

namespace graft::cpu {

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

}  // namespace graft::cpu
