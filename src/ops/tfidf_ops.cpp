// Schema of TfIdfVectorizer (opset 9): an int32/int64 input [C] or [N, C] becomes a float32
// [max(ngram_indexes) + 1] or [N, max(ngram_indexes) + 1]. The attributes are checked here, so a
// bad pool fails at build time naming the attribute. Kernel: src/backends/cpu/tfidf.cpp.
#include <vector>

#include "backends/cpu/tfidf.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {
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
