#include <cstdint>
#include <cstring>

#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/tfidf_kernels.cuh"

namespace graft::cuda::k {
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

}  // namespace graft::cuda::k
