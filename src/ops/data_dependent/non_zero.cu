// NonZero's CUDA kernels and op (definition and CPU reference: non_zero.cpp). It declares a
// CountedOutput (data_dependent_cuda.cuh).
#include "ops/data_dependent/data_dependent.h"

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/attr_util.h"
#include "ops/data_dependent/data_dependent_cuda.cuh"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------

namespace k {

// Each launcher writes its output into a buffer sized for the most the input shapes allow, laid out as the real (smaller) output would be, and writes the real
// count to a device int64, which is all the engine reads back (cuda_engine.cpp). Plain device
// pointers; each returns the first launch's cudaError_t (cudaErrorInvalidValue for a problem the
// launcher does not handle). Nothing here synchronizes.

// Bytes of scratch launch_non_zero needs for n elements.
size_t non_zero_workspace_bytes(int64_t n);

// x: n elements of elem_size bytes (1, 2, 4 or 8) with dims[0..rank) (rank <= kMaxRank; rank 0 is
// one element read as a vector). An element is nonzero when any bit is set, ignoring the sign bit
// when is_float (so -0.0 is zero and NaN nonzero, as on the CPU). Writes out[max(rank, 1), count]
// int64, the coordinates of the nonzero elements in row-major order, and *count.
cudaError_t launch_non_zero(int elem_size, bool is_float, const void* x, int64_t n, const int64_t* dims, int rank,
                            void* workspace, size_t workspace_bytes, int64_t* out, int64_t* count, cudaStream_t s);

namespace {

constexpr int kNonZeroRounds = 16;  // each block covers kThreads * kNonZeroRounds elements
constexpr int64_t kNonZeroTile = int64_t(kThreads) * kNonZeroRounds;

struct RankDims {
  int64_t d[kMaxRank];
};

template <typename E>
__global__ void non_zero_count_kernel(const E* x, int64_t n, E value_bits, int64_t* block_counts) {
  const int64_t tile = static_cast<int64_t>(blockIdx.x) * kNonZeroTile;
  int64_t total = 0;
  for (int r = 0; r < kNonZeroRounds; ++r) {
    const int64_t i = tile + static_cast<int64_t>(r) * blockDim.x + threadIdx.x;
    total += __syncthreads_count(i < n && (x[i] & value_bits) != 0);
  }
  if (threadIdx.x == 0) block_counts[blockIdx.x] = total;
}

// The same tiles as the count: element i's column is its block's offset plus the nonzero elements
// before it in the block, so columns follow row-major order. out is [rows, count], count read
// from the device (the scan wrote it).
template <typename E>
__global__ void non_zero_write_kernel(const E* x, int64_t n, E value_bits, RankDims dims, int rank,
                                      const int64_t* block_offsets, const int64_t* count, int64_t* out) {
  __shared__ int warp_totals[32];
  const int64_t cols = *count;
  const int64_t tile = static_cast<int64_t>(blockIdx.x) * kNonZeroTile;
  int64_t base = block_offsets[blockIdx.x];
  for (int r = 0; r < kNonZeroRounds; ++r) {
    const int64_t i = tile + static_cast<int64_t>(r) * blockDim.x + threadIdx.x;
    const bool hit = i < n && (x[i] & value_bits) != 0;
    int pos = 0, total = 0;
    block_flag_scan(hit, warp_totals, &pos, &total);
    if (hit) {
      const int64_t col = base + pos;
      if (rank == 0) {
        out[col] = 0;  // a scalar reads as a one-element vector
      } else {
        int64_t rest = i;
        for (int a = rank - 1; a >= 0; --a) {
          out[a * cols + col] = rest % dims.d[a];
          rest /= dims.d[a];
        }
      }
    }
    base += total;
  }
}

// E: an unsigned word of the element's size. Count per block, scan the counts (writing *count),
// then write each nonzero element's coordinates at its column.
template <typename E>
cudaError_t non_zero_typed(const void* x, int64_t n, int64_t blocks, bool is_float, const RankDims& dims, int rank,
                           int64_t* block_counts, int64_t* block_offsets, int64_t* out, int64_t* count,
                           cudaStream_t s) {
  // The bits that make an element nonzero: all of them, or all but the sign of a float.
  const E all = static_cast<E>(~E(0));
  const E value_bits = is_float ? static_cast<E>(all >> 1) : all;
  const E* xe = static_cast<const E*>(x);
  if (blocks) {
    non_zero_count_kernel<E><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(xe, n, value_bits, block_counts);
    GRAFT_LAUNCH_CHECK();
  }
  exclusive_scan_kernel<int64_t><<<1, kScanThreads, 0, s>>>(block_counts, blocks, block_offsets, count);
  GRAFT_LAUNCH_CHECK();
  if (blocks)
    non_zero_write_kernel<E><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(xe, n, value_bits, dims, rank,
                                                                              block_offsets, count, out);
  return cudaGetLastError();
}

}  // namespace

size_t non_zero_workspace_bytes(int64_t n) {
  const size_t blocks = static_cast<size_t>((n + kNonZeroTile - 1) / kNonZeroTile);
  return 2 * align_up(blocks * sizeof(int64_t));
}

cudaError_t launch_non_zero(int elem_size, bool is_float, const void* x, int64_t n, const int64_t* dims, int rank,
                            void* workspace, size_t workspace_bytes, int64_t* out, int64_t* count, cudaStream_t s) {
  if (n < 0 || rank < 0 || rank > kMaxRank || (is_float && elem_size == 1)) return cudaErrorInvalidValue;
  const int64_t blocks = (n + kNonZeroTile - 1) / kNonZeroTile;
  if (blocks > INT32_MAX || workspace_bytes < non_zero_workspace_bytes(n) || (blocks && !workspace))
    return cudaErrorInvalidValue;
  auto* block_counts = static_cast<int64_t*>(workspace);
  auto* block_offsets = reinterpret_cast<int64_t*>(static_cast<char*>(workspace) +
                                                   align_up(static_cast<size_t>(blocks) * sizeof(int64_t)));
  RankDims rd{};
  for (int a = 0; a < rank; ++a) rd.d[a] = dims[a];
  switch (elem_size) {
    case 1: return non_zero_typed<uint8_t>(x, n, blocks, is_float, rd, rank, block_counts, block_offsets, out, count, s);
    case 2: return non_zero_typed<uint16_t>(x, n, blocks, is_float, rd, rank, block_counts, block_offsets, out, count, s);
    case 4: return non_zero_typed<uint32_t>(x, n, blocks, is_float, rd, rank, block_counts, block_offsets, out, count, s);
    case 8: return non_zero_typed<uint64_t>(x, n, blocks, is_float, rd, rank, block_counts, block_offsets, out, count, s);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace k

// ---- CUDA op --------------------------------------------------------------------------------

namespace {

using namespace util;

// The key: input 0 any device dtype (the kernel tests bits, by element size).
bool non_zero_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "needs an input");
  const TensorDesc& x = n.input(0)->desc;
  if (x.shape && x.rank() > k::kMaxRank)
    return reject(why, "rank " + std::to_string(x.rank()) + " exceeds the kernel's " + std::to_string(k::kMaxRank));
  return counted_output_supported(n, why);
}

Result<std::vector<int64_t>> non_zero_bound(const Node&, const std::vector<const Tensor*>& ins) {
  const Tensor* x = ins.empty() ? nullptr : ins[0];
  if (!x) return error(StatusCode::kInvalidModel, "NonZero needs an input");
  return std::vector<int64_t>{std::max<int64_t>(x->rank(), 1), x->numel()};
}

size_t non_zero_workspace(const Node&, const std::vector<const Tensor*>& ins, const std::vector<Tensor>& /*outputs*/) {
  return ins.empty() || !ins[0] ? 0 : k::non_zero_workspace_bytes(ins[0]->numel());
}

Status non_zero_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  if (!x) return fail(ex, StatusCode::kInvalidModel, "needs an input");
  if (x->rank() > k::kMaxRank)
    return fail(ex, StatusCode::kUnsupported, "rank ", x->rank(), " exceeds the kernel's ",
                static_cast<int64_t>(k::kMaxRank));
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> bound, non_zero_bound(*ex.ctx->node, ex.ctx->inputs));
  GRAFT_RETURN_IF_ERROR(check_counted_output(ex, bound));
  return launch_status(
      k::launch_non_zero(static_cast<int>(dtype_size(x->dtype())), dtype_is_float(x->dtype()), x->data(), x->numel(),
                         x->dims().data(), static_cast<int>(x->rank()), ex.workspace, ex.workspace_size,
                         ex.ctx->outputs[0]->data_as<int64_t>(), ex.output_count, stream_of(ex)),
      ex);
}

}  // namespace

void append_cuda_non_zero_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuEveryDtype), output_dtypes(0, {DataType::kInt64})},
                              CudaOp{"NonZero", &non_zero_supports, &non_zero_run, {}, &non_zero_workspace,
                                     CountedOutput{&non_zero_bound, 1, nullptr}}));
}

}  // namespace graft::cuda
