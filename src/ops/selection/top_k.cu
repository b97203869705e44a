// TopK's CUDA kernels and op: one block per line, a bitonic sort in shared memory, or in the
// workspace (or by tournament rounds for a small k) when the line is too long for it.
#include "ops/selection/selection.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/selection/selection_keys.cuh"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------------

namespace k {

// Device scratch launch_topk needs for this problem (0 when a line fits in shared memory).
size_t topk_workspace_bytes(KType t, int64_t lines, int64_t n);
// The k largest (smallest) of each line, sorted, ties in index order (a stable sort, as the CPU
// reference); vals [outer, k, inner] of type t, inds (may be null) int64. One block per line,
// bitonic sort in shared memory or in `workspace`. f32/f16/bf16/i32/i64.
cudaError_t launch_topk(KType t, bool largest, const void* x, void* vals, int64_t* inds, int64_t outer, int64_t n,
                        int64_t inner, int64_t k, void* workspace, size_t workspace_size, cudaStream_t s);

namespace {

template <typename T>
constexpr size_t topk_slot_bytes() {
  return sizeof(KeyOf<T>) + sizeof(int32_t);
}

constexpr size_t kTopkSharedMax = 48 * 1024;

// Whether entry (ka, ia) comes before (kb, ib): padding (index >= n) last; NaN counts as larger
// than every number; then by value; equal values in index order (stable).
template <typename K>
__device__ __forceinline__ bool topk_before(bool largest, K ka, int ia, K kb, int ib, int n) {
  if (ia >= n) return false;
  if (ib >= n) return true;
  const bool na = is_nan_key(ka), nb = is_nan_key(kb);
  if (na || nb) {
    if (na && nb) return ia < ib;
    return largest ? na : nb;
  }
  if (ka != kb) return largest ? ka > kb : ka < kb;
  return ia < ib;
}

// Bitonic sort of P (a power of two) entries in place, best first in topk_before's order; every
// thread of the block takes part.
template <typename K>
__device__ void topk_bitonic_sort(bool largest, K* keys, int* idx, int P, int n) {
  for (int size = 2; size <= P; size <<= 1)
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int t = threadIdx.x; t < P; t += blockDim.x) {
        const int j = t ^ stride;
        if (j <= t) continue;
        const bool t_first = (t & size) == 0;
        const bool swap = t_first ? topk_before(largest, keys[j], idx[j], keys[t], idx[t], n)
                                  : topk_before(largest, keys[t], idx[t], keys[j], idx[j], n);
        if (swap) {
          const K kt = keys[t];
          keys[t] = keys[j];
          keys[j] = kt;
          const int it = idx[t];
          idx[t] = idx[j];
          idx[j] = it;
        }
      }
      __syncthreads();
    }
}

// The output of a line's best k entries (sorted): the element itself (not the key) so the value is
// bit-exact, and its index.
template <typename T>
__device__ __forceinline__ void topk_emit(const T* __restrict__ x, T* __restrict__ vals, int64_t* __restrict__ inds,
                                          const int* idx, int64_t o, int64_t i, int64_t n, int64_t inner, int64_t k) {
  const int64_t base = o * n * inner + i;
  for (int64_t t = threadIdx.x; t < k; t += blockDim.x) {
    const int64_t out = (o * k + t) * inner + i;
    vals[out] = x[base + int64_t(idx[t]) * inner];
    if (inds) inds[out] = idx[t];
  }
}

// One block per line: the whole line sorted in shared memory, or in the workspace (gkeys, gidx)
// when it is too long for shared memory and k too large for the tournament below.
template <typename T>
__global__ void topk_kernel(bool largest, const T* __restrict__ x, T* __restrict__ vals, int64_t* __restrict__ inds,
                            int n, int64_t inner, int64_t k, int P, KeyOf<T>* gkeys, int* gidx) {
  using K = KeyOf<T>;
  extern __shared__ __align__(16) unsigned char topk_smem[];
  K* keys;
  int* idx;
  if (gkeys) {
    keys = gkeys + int64_t(blockIdx.x) * P;
    idx = gidx + int64_t(blockIdx.x) * P;
  } else {
    keys = reinterpret_cast<K*>(topk_smem);
    idx = reinterpret_cast<int*>(keys + P);
  }
  const int64_t line = blockIdx.x, o = line / inner, i = line % inner;
  const int64_t base = o * n * inner + i;
  for (int t = threadIdx.x; t < P; t += blockDim.x) {
    keys[t] = t < n ? key_of(x[base + int64_t(t) * inner]) : K(0);
    idx[t] = t < n ? t : INT_MAX;
  }
  __syncthreads();
  topk_bitonic_sort(largest, keys, idx, P, n);
  topk_emit(x, vals, inds, idx, o, i, n, inner, k);
}

// Lines too long for shared memory (e.g. a detector's top 1000 of 90,000 scores): a tournament.
// Each round cuts every line into chunks of kTopkChunk entries; one block per (line, chunk) sorts
// its chunk in shared memory and keeps the chunk's best k (key, index) pairs as the next round's
// entries. The order (value, then index) is total, so the line's best k survive every round, and
// the last round (one chunk per line) emits them. Round 0 reads the input (line stride `inner`),
// later rounds the previous round's pairs; padding pairs carry index INT_MAX (>= n: last).
// With 2k <= kTopkChunk each round at least halves the entries, and every round runs
// lines x chunks blocks, where the one-block-per-line sort above leaves most of the GPU idle.
constexpr int kTopkChunk = 4096;
constexpr int kTopkChunkThreads = 512;

template <typename T>
__global__ void __launch_bounds__(kTopkChunkThreads)
    topk_round_kernel(bool largest, const T* __restrict__ x, const KeyOf<T>* __restrict__ in_keys,
                      const int* __restrict__ in_idx, int64_t m, int n, int64_t inner, int64_t k, int64_t chunks,
                      int P, KeyOf<T>* __restrict__ out_keys, int* __restrict__ out_idx, T* __restrict__ vals,
                      int64_t* __restrict__ inds) {
  using K = KeyOf<T>;
  __shared__ K keys[kTopkChunk];
  __shared__ int idx[kTopkChunk];
  const int64_t line = blockIdx.x / chunks, chunk = blockIdx.x % chunks;
  const int64_t o = line / inner, i = line % inner, first = chunk * kTopkChunk;
  for (int t = threadIdx.x; t < P; t += blockDim.x) {
    const int64_t j = first + t;
    K key = K(0);
    int id = INT_MAX;
    if (j < m) {
      if (in_keys) {
        key = in_keys[line * m + j];
        id = in_idx[line * m + j];
      } else {
        key = key_of(x[(o * n + j) * inner + i]);
        id = static_cast<int>(j);
      }
    }
    keys[t] = key;
    idx[t] = id;
  }
  __syncthreads();
  topk_bitonic_sort(largest, keys, idx, P, n);
  if (vals) {  // the last round: one chunk per line
    topk_emit(x, vals, inds, idx, o, i, n, inner, k);
    return;
  }
  const int64_t dst = line * chunks * k + chunk * k;
  for (int64_t t = threadIdx.x; t < k; t += blockDim.x) {
    out_keys[dst + t] = keys[t];
    out_idx[dst + t] = idx[t];
  }
}

}  // namespace

// Whether a line of n entries takes the tournament (too long for shared memory, k small enough
// for each round to shrink the line).
template <typename T>
bool topk_uses_tournament(int64_t n, int64_t k) {
  return static_cast<size_t>(pow2_at_least(n)) * topk_slot_bytes<T>() > kTopkSharedMax && 2 * k <= kTopkChunk;
}

// Workspace of a line too long for shared memory: the global-memory sort's P entries per line. It
// also covers the tournament for every k it takes: two buffers of ceil(n / C) * k pairs per line
// with 2k <= C is at most ceil(n / C) * C <= P pairs (P and C are powers of two, P > C). So the size
// does not depend on K, which is known only at run time.
template <typename T>
size_t topk_workspace_bytes_of(int64_t lines, int64_t n) {
  const size_t line_bytes = static_cast<size_t>(pow2_at_least(n)) * topk_slot_bytes<T>();
  return line_bytes <= kTopkSharedMax ? 0 : line_bytes * static_cast<size_t>(lines);
}

size_t topk_workspace_bytes(KType t, int64_t lines, int64_t n) {
  switch (t) {
    case KType::kF32: return topk_workspace_bytes_of<float>(lines, n);
    case KType::kF16: return topk_workspace_bytes_of<__half>(lines, n);
    case KType::kBF16: return topk_workspace_bytes_of<__nv_bfloat16>(lines, n);
    case KType::kI32: return topk_workspace_bytes_of<int32_t>(lines, n);
    case KType::kI64: return topk_workspace_bytes_of<int64_t>(lines, n);
    default: return 0;
  }
}

cudaError_t launch_topk(KType t, bool largest, const void* x, void* vals, int64_t* inds, int64_t outer, int64_t n,
                        int64_t inner, int64_t k, void* workspace, size_t workspace_size, cudaStream_t s) {
  const int64_t lines = outer * inner;
  if (lines == 0 || k == 0) return cudaSuccess;
  if (k < 0 || k > n || n > (int64_t(1) << 30) || lines > 0x7fffffffLL) return cudaErrorInvalidValue;
  const int64_t P = pow2_at_least(n);
  const int threads = P >= 512 ? kThreads : static_cast<int>(P / 2 < 32 ? 32 : P / 2);
  auto run = [&](auto tag) -> cudaError_t {
    using T = decltype(tag);
    using K = KeyOf<T>;
    const T* xt = static_cast<const T*>(x);
    T* vt = static_cast<T*>(vals);
    const size_t need = topk_workspace_bytes_of<T>(lines, n);
    if (need > 0 && (!workspace || workspace_size < need)) return cudaErrorInvalidValue;
    if (topk_uses_tournament<T>(n, k)) {
      const int64_t cap = (n + kTopkChunk - 1) / kTopkChunk * k * lines;  // pairs per buffer
      K* keys[2] = {static_cast<K*>(workspace), static_cast<K*>(workspace) + cap};
      int* idx[2] = {reinterpret_cast<int*>(keys[1] + cap), reinterpret_cast<int*>(keys[1] + cap) + cap};
      int64_t m = n;
      int from = -1;  // -1: the input itself
      while (true) {
        const int64_t chunks = (m + kTopkChunk - 1) / kTopkChunk;
        const bool last = chunks == 1;
        if (lines * chunks > 0x7fffffffLL) return cudaErrorInvalidValue;
        const int to = from == 0 ? 1 : 0;
        const int P_round = last ? static_cast<int>(pow2_at_least(m)) : kTopkChunk;
        topk_round_kernel<T><<<static_cast<unsigned>(lines * chunks), kTopkChunkThreads, 0, s>>>(
            largest, xt, from < 0 ? nullptr : keys[from], from < 0 ? nullptr : idx[from], m, static_cast<int>(n),
            inner, k, chunks, P_round, last ? nullptr : keys[to], last ? nullptr : idx[to], last ? vt : nullptr,
            last ? inds : nullptr);
        const cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess || last) return e;
        m = chunks * k;
        from = to;
      }
    }
    const size_t line_bytes = static_cast<size_t>(P) * topk_slot_bytes<T>();
    K* gkeys = nullptr;
    int* gidx = nullptr;
    size_t smem = line_bytes;
    if (line_bytes > kTopkSharedMax) {
      gkeys = static_cast<K*>(workspace);
      gidx = reinterpret_cast<int*>(gkeys + P * lines);
      smem = 0;
    }
    topk_kernel<T><<<static_cast<unsigned>(lines), threads, smem, s>>>(largest, xt, vt, inds, static_cast<int>(n), inner,
                                                                       k, static_cast<int>(P), gkeys, gidx);
    return cudaGetLastError();
  };
  switch (t) {
    case KType::kF32: return run(float{});
    case KType::kF16: return run(__half{});
    case KType::kBF16: return run(__nv_bfloat16{});
    case KType::kI32: return run(int32_t{});
    case KType::kI64: return run(int64_t{});
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace k

// ---- CUDA op ---------------------------------------------------------------------------------------

namespace {

using namespace util;

bool topk_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "needs X and K");
  return true;
}

Result<AxisView> topk_view(const Node& node, const std::vector<int64_t>& dims) {
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, node.attrs.get_int("axis", -1));
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_attr, static_cast<int64_t>(dims.size())));
  return axis_view(dims, axis, false);
}

size_t topk_workspace(const Node& node, const std::vector<const Tensor*>& inputs, const std::vector<Tensor>& /*outputs*/) {
  if (inputs.empty() || !inputs[0]) return 0;
  auto v = topk_view(node, inputs[0]->dims());
  if (!v) return 0;
  return k::topk_workspace_bytes(ktype(inputs[0]->dtype()), v.value().outer * v.value().inner, v.value().n);
}

Status topk_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& vals = *ex.ctx->outputs[0];
  Tensor* inds = ex.ctx->outputs.size() > 1 ? ex.ctx->outputs[1] : nullptr;
  GRAFT_ASSIGN_OR_RETURN(int64_t largest, attrs_of(ex).get_int("largest", 1));
  GRAFT_ASSIGN_OR_RETURN(int64_t kv, host_scalar(ex, 1, "K"));
  GRAFT_ASSIGN_OR_RETURN(AxisView v, topk_view(*ex.ctx->node, x.dims()));
  if (kv < 0 || kv > v.n) return fail(ex, StatusCode::kRuntimeError, "K = ", kv, " is outside [0, ", v.n, "]");
  if (vals.numel() != v.outer * kv * v.inner || vals.dtype() != x.dtype())
    return fail(ex, StatusCode::kInternal, "values output has the wrong size or dtype");
  if (inds && (inds->dtype() != DataType::kInt64 || inds->numel() != vals.numel()))
    return fail(ex, StatusCode::kInternal, "indices output must be int64 of the values' size");
  const size_t need = k::topk_workspace_bytes(ktype(x.dtype()), v.outer * v.inner, v.n);
  if (need > ex.workspace_size)
    return fail(ex, StatusCode::kInternal, "workspace of ", static_cast<int64_t>(ex.workspace_size), " bytes, need ",
                static_cast<int64_t>(need));
  return launch_status(k::launch_topk(ktype(x.dtype()), largest != 0, x.data(), vals.data(),
                                      inds ? static_cast<int64_t*>(inds->data()) : nullptr, v.outer, v.n, v.inner, kv,
                                      ex.workspace, ex.workspace_size, stream_of(ex)), ex);
}

}  // namespace

void append_cuda_top_k_ops(std::vector<CudaOp>& out) {
  // Keys: X (input 0) and the indices output (output 1, int64 when present).
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloatsInts), output_dtypes(1, {DataType::kInt64})},
                              CudaOp{"TopK", &topk_supports, &topk_run, {1}, &topk_workspace}));
}

}  // namespace graft::cuda
