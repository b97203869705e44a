// CUDA op for TfIdfVectorizer (CPU reference: src/backends/cpu/tfidf.cpp; kernel: tfidf_kernels.cu).
// The attributes are read by tfidf_attrs (src/ops/tfidf_attrs.h), as the reference reads them, so a bad pool fails with the same
// words; the pool becomes a table of sorted n-grams built once per node (kept in the context's
// PreparedCache) and written into the workspace by the launcher on every run. Only integer inputs:
// graft has no string dtype, and string tensors would live on the host anyway.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ops/tfidf_attrs.h"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/tfidf_kernels.cuh"
#include "ops/attr_util.h"

namespace graft::cuda {
namespace {

using namespace util;

constexpr const char* kNoStrings =
    "string tensors live on the host (graft has no string dtype, so the CUDA kernel matches int32/int64 "
    "n-grams only)";

bool tfidf_supports(const Node& n, std::string* why) {
  if (n.attrs.has("pool_strings")) return reject(why, std::string(kNoStrings) + ": pool_strings is not handled");
  if (!has_input(n, 0)) return reject(why, "input 0 is missing");
  const DataType t = in_dtype(n, 0);
  if (t != DataType::kInt32 && t != DataType::kInt64)
    return reject(why, std::string("input 0 has dtype ") + dtype_name(t) + "; " + kNoStrings);
  auto a = tfidf_attrs(n.attrs);
  if (!a) return reject(why, a.status().message());
  if (out_dtype(n, 0) != DataType::kFloat32) return reject(why, "output 0 must be float32");
  const TensorDesc& x = n.input(0)->desc;
  if (x.shape && x.rank() != 1 && x.rank() != 2) return reject(why, "input X must be [C] or [N, C]");
  return true;
}

// The node's pool as the kernel reads it (tfidf_kernels.cuh): the problem without the input's
// dims, and the table.
struct PreparedTfIdf {
  k::TfIdfProblem problem;
  std::vector<int64_t> table;
};

Result<std::shared_ptr<PreparedTfIdf>> prepare_tfidf(const AttributeMap& attrs) {
  GRAFT_ASSIGN_OR_RETURN(TfIdfAttrs a, tfidf_attrs(attrs));
  auto out = std::make_shared<PreparedTfIdf>();
  k::TfIdfProblem& p = out->problem;
  p.output_size = a.output_size;
  p.min_gram = a.min_gram;
  p.max_gram = a.max_gram;
  p.max_skip = a.max_skip;
  p.mode = a.mode == TfIdfMode::kTF ? 0 : a.mode == TfIdfMode::kIDF ? 1 : 2;
  int64_t lengths = 0;
  for (const auto& [gram, pos] : a.grams) lengths = std::max(lengths, static_cast<int64_t>(gram.size()));
  p.lengths = lengths;
  // The map is ordered lexicographically, so each length's n-grams come out sorted.
  std::vector<std::vector<int64_t>> items(static_cast<size_t>(lengths)), positions(static_cast<size_t>(lengths));
  for (const auto& [gram, pos] : a.grams) {
    if (gram.empty()) continue;  // tfidf_attrs makes none; a 0-gram would have no header
    auto& it = items[gram.size() - 1];
    it.insert(it.end(), gram.begin(), gram.end());
    positions[gram.size() - 1].push_back(pos);
  }
  std::vector<int64_t>& t = out->table;
  t.assign(static_cast<size_t>(3 * lengths), 0);
  if (!a.weights.empty()) {
    p.weights_at = static_cast<int64_t>(t.size());
    for (int64_t o = 0; o < a.output_size; ++o) {
      const double w = static_cast<double>(a.weights[static_cast<size_t>(o)]);
      int64_t bits = 0;
      std::memcpy(&bits, &w, sizeof bits);
      t.push_back(bits);
    }
  }
  for (int64_t n = 1; n <= lengths; ++n) {
    const size_t i = static_cast<size_t>(n - 1);
    t[3 * i] = static_cast<int64_t>(t.size());
    t.insert(t.end(), items[i].begin(), items[i].end());
    t[3 * i + 1] = static_cast<int64_t>(t.size());
    t.insert(t.end(), positions[i].begin(), positions[i].end());
    t[3 * i + 2] = static_cast<int64_t>(positions[i].size());
  }
  p.table_words = static_cast<int64_t>(t.size());
  return out;
}

// An upper bound of the table from the raw attributes (no n-gram map per run): every header, every
// weight slot, every pool item and every output position.
int64_t table_words_bound(const AttributeMap& attrs) {
  auto counts = attrs.get_ints("ngram_counts", {});
  auto pool = attrs.get_ints("pool_int64s", {});
  auto indexes = attrs.get_ints("ngram_indexes", {});
  auto weights = attrs.get_floats("weights", {});
  if (!counts || !pool || !indexes || !weights) return 0;  // run() reports the attribute
  int64_t out_size = 0;
  for (int64_t v : indexes.value()) out_size = std::max(out_size, v + 1);
  return 3 * static_cast<int64_t>(counts->size()) + (weights->empty() ? 0 : out_size) +
         static_cast<int64_t>(pool->size()) + static_cast<int64_t>(indexes->size());
}

int64_t rows_of(const Tensor& x) { return x.rank() == 2 ? x.dims()[0] : 1; }

size_t tfidf_workspace(const Node& node, const std::vector<const Tensor*>& inputs, const std::vector<Tensor>& /*outputs*/) {
  if (inputs.empty() || !inputs[0]) return 0;
  auto indexes = node.attrs.get_ints("ngram_indexes", {});
  if (!indexes) return 0;
  int64_t out_size = 0;
  for (int64_t v : indexes.value()) out_size = std::max(out_size, v + 1);
  return k::tfidf_workspace_bytes(table_words_bound(node.attrs), rows_of(*inputs[0]), out_size);
}

Status tfidf_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  if (!x) return fail(ex, StatusCode::kInvalidModel, "input X is missing");
  if (x->dtype() != DataType::kInt32 && x->dtype() != DataType::kInt64)
    return with_node(ex, error(StatusCode::kInvalidModel, "TfIdfVectorizer: input X must be int32 or int64, got ",
                               dtype_name(x->dtype())));
  if (x->rank() != 1 && x->rank() != 2)
    return with_node(ex, error(StatusCode::kInvalidModel, "TfIdfVectorizer: input X must be [C] or [N, C], got ",
                               graft::ints_to_string(x->dims())));
  std::shared_ptr<PreparedTfIdf> owned;
  PreparedTfIdf* prep = nullptr;
  const std::string key = PreparedCache::key_of("tfidf_table", {reinterpret_cast<intptr_t>(ex.ctx->node)});
  if (ex.prepared) prep = ex.prepared->find<PreparedTfIdf>(key);
  if (!prep) {
    auto made = prepare_tfidf(attrs_of(ex));
    if (!made) return with_node(ex, made.status());
    owned = std::move(made).value();
    prep = ex.prepared ? ex.prepared->put(key, owned) : owned.get();
  }
  k::TfIdfProblem p = prep->problem;
  p.rows = rows_of(*x);
  p.cols = x->dims().back();
  if (ex.ctx->outputs.empty() || !ex.ctx->outputs[0]) return fail(ex, StatusCode::kInternal, "called without its output");
  Tensor& y = *ex.ctx->outputs[0];
  if (y.numel() != p.rows * p.output_size || y.dtype() != DataType::kFloat32)
    return with_node(ex, error(StatusCode::kInternal, "TfIdfVectorizer: output ", graft::ints_to_string(y.dims()),
                               " does not hold ", p.rows, " x ", p.output_size, " values"));
  if (ex.workspace_size < k::tfidf_workspace_bytes(p.table_words, p.rows, p.output_size) &&
      p.rows * p.output_size > 0)
    return fail(ex, StatusCode::kInternal, "workspace of ", static_cast<uint64_t>(ex.workspace_size),
                " bytes is smaller than the pool table and the counts need");
  return launch_status(k::launch_tfidf(ktype(x->dtype()), x->data(), p, prep->table.data(), ex.workspace,
                                       ex.workspace_size, y.data_as<float>(), stream_of(ex)),
                       ex);
}

}  // namespace

void append_cuda_tfidf_ops(std::vector<CudaOp>& out) {
  out.push_back(CudaOp{"TfIdfVectorizer", &tfidf_supports, &tfidf_run, {}, &tfidf_workspace});
}

}  // namespace graft::cuda
