// What the data-dependent family's CUDA files share (non_max_suppression.cu, non_zero.cu, unique.cu):
// the block scans and the exclusive scan that compact each op's output, the workspace alignment, and
// the checks of a counted output (cuda_ops.h's CountedOutput): the engine gives output 0 the most
// elements the input shapes allow, the kernel writes the real output as a prefix of it and its count
// to CudaExec::output_count, and the engine reads back that count alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"

namespace graft::cuda {

namespace k {

constexpr int kScanThreads = 1024;
constexpr size_t kAlign = 256;

inline size_t align_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

#define GRAFT_LAUNCH_CHECK()                          \
  do {                                                \
    const cudaError_t e_ = cudaGetLastError();        \
    if (e_ != cudaSuccess) return e_;                 \
  } while (0)

// Every thread of the block passes `flag`; each learns how many flagged threads come before it
// (`pos`, in thread order) and how many there are in all. blockDim.x is a multiple of 32;
// `warp_totals` is 32 ints of shared memory, free again when this returns.
__device__ __forceinline__ void block_flag_scan(bool flag, int* warp_totals, int* pos, int* total) {
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const unsigned bits = __ballot_sync(0xffffffffu, flag);
  if (lane == 0) warp_totals[warp] = __popc(bits);
  __syncthreads();
  int before = 0, all = 0;
  for (unsigned w = 0; w < warps; ++w) {
    const int c = warp_totals[w];
    before += w < warp ? c : 0;
    all += c;
  }
  __syncthreads();
  *pos = before + __popc(bits & ((1u << lane) - 1u));
  *total = all;
}

// Block-wide inclusive sum (blockDim.x a multiple of 32); `sh` is 32 int64 of shared memory.
__device__ __forceinline__ int64_t block_inclusive_sum(int64_t v, int64_t* sh, int64_t* total) {
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int o = 1; o < 32; o <<= 1) {
    const int64_t t = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= static_cast<unsigned>(o)) v += t;
  }
  if (lane == 31) sh[warp] = v;
  __syncthreads();
  if (warp == 0) {
    int64_t w = lane < warps ? sh[lane] : 0;
    for (int o = 1; o < 32; o <<= 1) {
      const int64_t t = __shfl_up_sync(0xffffffffu, w, o);
      if (lane >= static_cast<unsigned>(o)) w += t;
    }
    sh[lane] = w;
  }
  __syncthreads();
  const int64_t add = warp ? sh[warp - 1] : 0;
  *total = sh[warps - 1];
  __syncthreads();
  return v + add;
}

// offsets[i] = in[0] + ... + in[i-1] and *total = the sum of all n, in one block (n is a count of
// blocks or of (batch, class) pairs: thousands, not millions).
template <typename C>
__global__ void exclusive_scan_kernel(const C* in, int64_t n, int64_t* offsets, int64_t* total) {
  __shared__ int64_t sh[32];
  int64_t base = 0;
  for (int64_t t0 = 0; t0 < n; t0 += blockDim.x) {
    const int64_t i = t0 + threadIdx.x;
    const int64_t v = i < n ? static_cast<int64_t>(in[i]) : 0;
    int64_t tile = 0;
    const int64_t incl = block_inclusive_sum(v, sh, &tile);
    if (i < n) offsets[i] = base + incl - v;
    base += tile;
  }
  if (threadIdx.x == 0) *total = base;
}

}  // namespace k

// A counted op writes output 0 only, as int64 (what both schemas give it; the rows' key on output 0).
inline bool counted_output_supported(const Node& n, std::string* why) {
  using namespace util;
  if (n.outputs.size() != 1 || !n.output(0)) return reject(why, "needs exactly one output");
  return true;
}

inline Status check_counted_output(const CudaExec& ex, const std::vector<int64_t>& bound) {
  using namespace util;
  if (ex.ctx->outputs.empty() || !ex.ctx->outputs[0] || !ex.output_count)
    return fail(ex, StatusCode::kInternal, "called without its output or its device count");
  const Tensor& y = *ex.ctx->outputs[0];
  if (y.dtype() != DataType::kInt64 || y.dims() != bound)
    return fail(ex, StatusCode::kInternal, "output 0 was not allocated with the bound the op computes");
  return Status::ok();
}

}  // namespace graft::cuda
