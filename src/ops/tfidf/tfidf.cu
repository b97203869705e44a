// The TfIdfVectorizer family's CUDA kernel and CUDA op (definition and CPU reference: tfidf.cpp).
// The attributes are read by tfidf_attrs (tfidf.h), as the reference reads them, so a bad pool
// fails with the same words; the pool becomes a table of sorted n-grams built once per node (kept
// in the context's PreparedCache) and written into the workspace by the launcher on every run. Only
// integer inputs: graft has no string dtype, and string tensors would live on the host anyway.
#include "ops/tfidf/tfidf.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/attr_util.h"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------

namespace k {

// The launcher takes plain pointers and returns the first failing launch's cudaError_t
// (cudaErrorInvalidValue for a problem it does not handle). Nothing here allocates or synchronizes.
//
// The pool travels as a table of int64 words built once on the host (the CUDA op below). The launcher
// writes it into the workspace with kernels that carry it in their launch parameters, so the host
// table may be freed as soon as the launcher returns and a CUDA graph capture records it by value
// (no host-to-device copy whose host buffer must outlive a graph).

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

namespace {

constexpr size_t kAlign = 256;
size_t align_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

// Words per upload launch: with the offset and the count the parameters stay under the 4 KiB every
// architecture accepts.
constexpr int kUploadWords = 480;
struct UploadChunk {
  int64_t at = 0;
  int n = 0;
  int64_t w[kUploadWords];
};

__global__ void upload_kernel(UploadChunk c, int64_t* dst) {
  for (int i = static_cast<int>(threadIdx.x); i < c.n; i += static_cast<int>(blockDim.x)) dst[c.at + i] = c.w[i];
}

// Pool n-gram `item` against the row's n-gram at `start` with `step` between items: <0, 0, >0.
template <typename X>
__device__ __forceinline__ int gram_compare(const int64_t* item, const X* row, int64_t start, int64_t step,
                                            int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    const int64_t v = static_cast<int64_t>(row[start + j * step]);
    const int64_t t = item[j];
    if (t != v) return t < v ? -1 : 1;
  }
  return 0;
}

// One thread per (row, skip, start): the reference's innermost loop over n, each n-gram looked up
// in its length's sorted segment of the table.
template <typename X>
__global__ void tfidf_count_kernel(const X* x, TfIdfProblem p, int64_t skips, int64_t max_n, const int64_t* table,
                                   unsigned long long* counts, int64_t total) {
  GRAFT_GRID_STRIDE(t, total) {
    const int64_t start = t % p.cols;
    const int64_t rs = t / p.cols;
    const int64_t skip = rs % skips, row = rs / skips;
    const X* xr = x + row * p.cols;
    const int64_t step = skip + 1;
    // Unigrams have no gaps: only skip 0 counts them.
    for (int64_t n = p.min_gram > (skip ? 2 : 1) ? p.min_gram : (skip ? 2 : 1); n <= max_n; ++n) {
      if (start + (n - 1) * step >= p.cols) break;
      const int64_t* h = table + 3 * (n - 1);
      const int64_t* items = table + h[0];
      const int64_t cnt = h[2];
      int64_t lo = 0, hi = cnt;
      while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (gram_compare(items + mid * n, xr, start, step, n) < 0)
          lo = mid + 1;
        else
          hi = mid;
      }
      if (lo < cnt && gram_compare(items + lo * n, xr, start, step, n) == 0)
        atomicAdd(counts + row * p.output_size + table[h[1] + lo], 1ull);
    }
  }
}

__global__ void tfidf_finish_kernel(TfIdfProblem p, const int64_t* table, const unsigned long long* counts, float* y,
                                    int64_t total) {
  GRAFT_GRID_STRIDE(i, total) {
    const int64_t o = i % p.output_size;
    const double f = static_cast<double>(counts[i]);
    const double w = p.weights_at >= 0 ? __longlong_as_double(static_cast<long long>(table[p.weights_at + o])) : 1.0;
    double v = f;
    if (p.mode == 1)
      v = f > 0 ? w : 0.0;
    else if (p.mode == 2)
      v = __dmul_rn(f, w);
    y[i] = __double2float_rn(v);
  }
}

}  // namespace

size_t tfidf_workspace_bytes(int64_t table_words, int64_t rows, int64_t output_size) {
  return align_up(static_cast<size_t>(table_words) * sizeof(int64_t)) +
         static_cast<size_t>(rows) * static_cast<size_t>(output_size) * sizeof(unsigned long long);
}

cudaError_t launch_tfidf(KType xt, const void* x, const TfIdfProblem& p, const int64_t* table, void* workspace,
                         size_t workspace_bytes, float* y, cudaStream_t s) {
  if (p.rows < 0 || p.cols < 0 || p.output_size < 0 || p.min_gram < 1 || p.max_gram < p.min_gram ||
      p.max_skip < 0 || p.lengths < 0 || p.mode < 0 || p.mode > 2 || p.table_words < 3 * p.lengths ||
      (p.weights_at >= 0 && p.weights_at + p.output_size > p.table_words) || (p.table_words && !table))
    return cudaErrorInvalidValue;
  if (xt != KType::kI32 && xt != KType::kI64) return cudaErrorInvalidValue;
  const int64_t outputs = p.rows * p.output_size;
  if (outputs == 0) return cudaSuccess;  // nothing to write
  const size_t need = tfidf_workspace_bytes(p.table_words, p.rows, p.output_size);
  if (!workspace || workspace_bytes < need) return cudaErrorInvalidValue;
  auto* dtable = static_cast<int64_t*>(workspace);
  auto* counts = reinterpret_cast<unsigned long long*>(static_cast<char*>(workspace) +
                                                       align_up(static_cast<size_t>(p.table_words) * sizeof(int64_t)));
  for (int64_t at = 0; at < p.table_words; at += kUploadWords) {
    UploadChunk c;
    c.at = at;
    c.n = static_cast<int>(p.table_words - at < kUploadWords ? p.table_words - at : kUploadWords);
    std::memcpy(c.w, table + at, static_cast<size_t>(c.n) * sizeof(int64_t));
    upload_kernel<<<1, kThreads, 0, s>>>(c, dtable);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  cudaError_t e = cudaMemsetAsync(counts, 0, static_cast<size_t>(outputs) * sizeof(unsigned long long), s);
  if (e != cudaSuccess) return e;
  const int64_t max_n = p.max_gram < p.lengths ? p.max_gram : p.lengths;
  if (max_n >= p.min_gram && p.cols > 0) {
    // A gap of `skip` fits only while 2-grams do (start + skip + 1 < cols); unigrams need skip 0 only.
    int64_t skips = 1;
    if (max_n >= 2) {
      const int64_t fit = p.cols >= 2 ? p.cols - 2 : 0;
      skips = (p.max_skip < fit ? p.max_skip : fit) + 1;
    }
    const int64_t total = p.rows * skips * p.cols;
    if (xt == KType::kI32)
      tfidf_count_kernel<int32_t><<<grid_for(total), kThreads, 0, s>>>(static_cast<const int32_t*>(x), p, skips,
                                                                       max_n, dtable, counts, total);
    else
      tfidf_count_kernel<int64_t><<<grid_for(total), kThreads, 0, s>>>(static_cast<const int64_t*>(x), p, skips,
                                                                       max_n, dtable, counts, total);
    e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  tfidf_finish_kernel<<<grid_for(outputs), kThreads, 0, s>>>(p, dtable, counts, y, outputs);
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA ops -------------------------------------------------------------------------------

namespace {

using namespace util;

constexpr const char* kNoStrings =
    "string tensors live on the host (graft has no string dtype, so the CUDA kernel matches int32/int64 "
    "n-grams only)";

// The keys: X int32/int64 (no strings), the output float32.
bool tfidf_supports(const Node& n, std::string* why) {
  if (n.attrs.has("pool_strings")) return reject(why, std::string(kNoStrings) + ": pool_strings is not handled");
  if (!has_input(n, 0)) return reject(why, "input 0 is missing");
  auto a = tfidf_attrs(n.attrs);
  if (!a) return reject(why, a.status().message());
  if (!n.output(0)) return reject(why, "output 0 is missing");
  const TensorDesc& x = n.input(0)->desc;
  if (x.shape && x.rank() != 1 && x.rank() != 2) return reject(why, "input X must be [C] or [N, C]");
  return true;
}

// The node's pool as the kernel reads it (above): the problem without the input's
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
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuInts), output_dtypes(0, {DataType::kFloat32})},
                              CudaOp{"TfIdfVectorizer", &tfidf_supports, &tfidf_run, {}, &tfidf_workspace}));
}

}  // namespace graft::cuda
