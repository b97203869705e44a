#include "backends/cuda/shape_kernels.cuh"

#include <algorithm>
#include <type_traits>

#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/fast_divide.h"

namespace graft::cuda::k {
namespace {

// Calls LAUNCH(E) with E the unsigned type of `elem_size` bytes, up to 16 (uint4): the byte movers
// below are widened on the host (widest_access) to move up to 16 bytes per access.
#define GRAFT_BY_ACCESS_SIZE(elem_size, LAUNCH) \
  switch (elem_size) {                          \
    case 1: LAUNCH(uint8_t); break;             \
    case 2: LAUNCH(uint16_t); break;            \
    case 4: LAUNCH(uint32_t); break;            \
    case 8: LAUNCH(uint64_t); break;            \
    case 16: LAUNCH(uint4); break;              \
    default: return cudaErrorInvalidValue;      \
  }

// Grid-stride loop with index type I (int32_t when the host checked that n plus one grid's width
// stays below 2^31).
#define GRAFT_GRID_STRIDE_I(I, i, n)                                                                         \
  for (I i = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x); i < (n); \
       i += static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x))

// A Strided view with index type I: 32-bit div/mod is several times cheaper than 64-bit, and the
// host picks it whenever every index and offset fits.
// Axes innermost first (the reverse of Strided), so strided_offset's unrolled loop indexes them
// with constants: the parameters are read in place, nothing goes to local memory.
template <typename I>
struct StridedI {
  int rank = 0;
  I dims[kMaxRank] = {};
  I strides[kMaxRank] = {};
  FastDivide fast_dims[kMaxRank];  // the dims as divisors (used with 32-bit indices)
};
template <typename I>
StridedI<I> narrow(const Strided& p) {
  StridedI<I> q;
  q.rank = p.rank;
  for (int d = 0; d < p.rank; ++d) {
    const int from = p.rank - 1 - d;
    q.dims[d] = static_cast<I>(p.dims[from]);
    q.strides[d] = static_cast<I>(p.strides[from]);
    if constexpr (std::is_same_v<I, int32_t>) q.fast_dims[d] = FastDivide(static_cast<uint32_t>(p.dims[from]));
  }
  return q;
}

template <typename I>
__device__ __forceinline__ I strided_offset(const StridedI<I>& p, I i) {
  I off = 0;
#pragma unroll
  for (int d = 0; d < kMaxRank; ++d) {
    if (d >= p.rank) break;
    off += pop_axis(i, p.dims[d], p.fast_dims[d]) * p.strides[d];
  }
  return off;
}

// kGatherUnroll elements per thread, every load issued before the first store (one element per
// thread waited on memory latency).
constexpr int kGatherUnroll = 4;

template <typename E, typename I>
__global__ void strided_gather_kernel(const E* __restrict__ in, E* __restrict__ out, StridedI<I> p, I n) {
  const I step = static_cast<I>(blockDim.x);
  for (I base = static_cast<I>(blockIdx.x) * step * kGatherUnroll + static_cast<I>(threadIdx.x); base < n;
       base += static_cast<I>(gridDim.x) * step * kGatherUnroll) {
    E v[kGatherUnroll];
#pragma unroll
    for (int u = 0; u < kGatherUnroll; ++u) {
      const I i = base + static_cast<I>(u) * step;
      if (i >= n) break;
      v[u] = in[strided_offset(p, i)];
    }
#pragma unroll
    for (int u = 0; u < kGatherUnroll; ++u) {
      const I i = base + static_cast<I>(u) * step;
      if (i >= n) break;
      out[i] = v[u];
    }
  }
}

// Tiled transpose (TileParams, built on the host by make_tile_params): reading along axis a and
// writing along the output's last axis L are both contiguous. A 32x32 tile goes through shared
// memory (33 columns: no bank conflicts on the transposed read); the other axes ("batch") give
// per-block base offsets for input and output.
constexpr int kTile = 32, kTileRows = 8;

template <typename E>
__global__ void tile_transpose_kernel(const E* __restrict__ in, E* __restrict__ out, TileParams p) {
  __shared__ E tile[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t l0 = int64_t(blockIdx.x) * kTile, a0 = int64_t(blockIdx.y) * kTile;
  for (int64_t b = blockIdx.z; b < p.batches; b += gridDim.z) {
    int64_t rem = b, ib = 0, ob = 0;
    for (int d = p.nb - 1; d >= 0; --d) {
      const int64_t q = rem % p.bdims[d];
      rem /= p.bdims[d];
      ib += q * p.bin[d];
      ob += q * p.bout[d];
    }
    // Read: consecutive threads walk a (input-contiguous); tile[l][a].
    for (int j = ty; j < kTile; j += kTileRows) {
      const int64_t l = l0 + j, a = a0 + tx;
      if (l < p.L && a < p.A) tile[j][tx] = in[ib + a + l * p.sL];
    }
    __syncthreads();
    // Write: consecutive threads walk L (output-contiguous).
    for (int j = ty; j < kTile; j += kTileRows) {
      const int64_t a = a0 + j, l = l0 + tx;
      if (a < p.A && l < p.L) out[ob + a * p.oA + l] = tile[tx][j];
    }
    __syncthreads();
  }
}

// The copies of one launch_pitched_copies group in units of the access width, index type I.
template <typename I>
struct CopiesI {
  const void* src[kMaxBatchedCopies];
  void* dst[kMaxBatchedCopies];
  I row[kMaxBatchedCopies], src_pitch[kMaxBatchedCopies], dst_pitch[kMaxBatchedCopies], n[kMaxBatchedCopies];
};

// blockIdx.y picks the copy; its blocks walk that copy's elements.
template <typename E, typename I>
__global__ void pitched_copies_kernel(CopiesI<I> c) {
  const int k = blockIdx.y;
  const E* __restrict__ src = static_cast<const E*>(c.src[k]);
  E* __restrict__ dst = static_cast<E*>(c.dst[k]);
  const I row = c.row[k], sp = c.src_pitch[k], dp = c.dst_pitch[k];
  GRAFT_GRID_STRIDE_I(I, i, c.n[k]) {
    const I r = i / row, j = i - r * row;
    dst[r * dp + j] = src[r * sp + j];
  }
}

template <typename I>
cudaError_t pitched_copies_group(const PitchedCopy* copies, int count, int v, int64_t f, int64_t rows, cudaStream_t s) {
  CopiesI<I> c{};
  int64_t most = 1;
  for (int i = 0; i < count; ++i) {
    const PitchedCopy& p = copies[i];
    c.src[i] = p.src;
    c.dst[i] = p.dst;
    c.row[i] = static_cast<I>(p.row / f > 0 ? p.row / f : 1);  // a zero-width part copies nothing (n = 0)
    c.src_pitch[i] = static_cast<I>(p.src_pitch / f);
    c.dst_pitch[i] = static_cast<I>(p.dst_pitch / f);
    c.n[i] = static_cast<I>(rows * (p.row / f));
    most = std::max<int64_t>(most, rows * (p.row / f));
  }
  const dim3 grid(grid_for(most), static_cast<unsigned>(count));
#define L(E) pitched_copies_kernel<E, I><<<grid, kThreads, 0, s>>>(c)
  GRAFT_BY_ACCESS_SIZE(v, L)
#undef L
  return cudaGetLastError();
}

template <typename E, typename X, typename I>
__global__ void gather_axis_kernel(const E* __restrict__ data, const X* __restrict__ idx, E* __restrict__ out,
                                   I n_axis, I m, I inner, I n, DataFault fault) {
  GRAFT_GRID_STRIDE_I(I, i, n) {
    const I k = i % inner;
    const I t = i / inner;
    const I j = t % m, o = t / m;
    int64_t q = static_cast<int64_t>(idx[j]);
    if (q < 0) q += n_axis;
    const bool inside = q >= 0 && q < n_axis;
    if (!inside) report_invalid_data(fault);
    out[i] = inside ? data[(o * n_axis + static_cast<I>(q)) * inner + k] : E{};
  }
}

template <typename E>
__global__ void tile_kernel(const E* __restrict__ in, E* __restrict__ out, AxisMap p, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    int64_t rem = i, off = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t q = rem % p.out_dims[d];
      rem /= p.out_dims[d];
      off += (q % p.in_dims[d]) * p.in_strides[d];
    }
    out[i] = in[off];
  }
}

}  // namespace

cudaError_t launch_strided_gather(const void* in, void* out, int elem_size, const Strided& p, int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const GatherPlan g = plan_strided_gather(p, elem_size, reinterpret_cast<uintptr_t>(in), reinterpret_cast<uintptr_t>(out));
  if (g.n * g.elem_size != n * elem_size) return cudaErrorInvalidValue;  // the view does not cover the output
  switch (g.kind) {
    case GatherKind::kCopy:
      if (in == out) return cudaSuccess;  // an identity view in place
      return cudaMemcpyAsync(out, in, static_cast<size_t>(n) * elem_size, cudaMemcpyDeviceToDevice, s);
    case GatherKind::kTile: {
      const TileParams t = make_tile_params(g);
      const int64_t gx = (t.L + kTile - 1) / kTile, gy = (t.A + kTile - 1) / kTile;
      const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy),
                      static_cast<unsigned>(t.batches < 65535 ? t.batches : 65535));
      const dim3 block(kTile, kTileRows);
#define L(E) tile_transpose_kernel<E><<<grid, block, 0, s>>>(static_cast<const E*>(in), static_cast<E*>(out), t)
      GRAFT_SIZE_DISPATCH(g.elem_size, L(E))
#undef L
      return cudaGetLastError();
    }
    case GatherKind::kGeneric: {
      const unsigned grid = grid_for(g.n, kGatherUnroll);
      if (g.index32) {
        const StridedI<int32_t> q = narrow<int32_t>(g.p);
        const int32_t nn = static_cast<int32_t>(g.n);
#define L(E) strided_gather_kernel<E, int32_t><<<grid, kThreads, 0, s>>>(static_cast<const E*>(in), static_cast<E*>(out), q, nn)
        GRAFT_BY_ACCESS_SIZE(g.elem_size, L)
#undef L
      } else {
        const StridedI<int64_t> q = narrow<int64_t>(g.p);
#define L(E) strided_gather_kernel<E, int64_t><<<grid, kThreads, 0, s>>>(static_cast<const E*>(in), static_cast<E*>(out), q, g.n)
        GRAFT_BY_ACCESS_SIZE(g.elem_size, L)
#undef L
      }
      return cudaGetLastError();
    }
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_pitched_copies(const PitchedCopy* copies, int count, int elem_size, int64_t rows, cudaStream_t s) {
  if (rows <= 0 || count <= 0) return cudaSuccess;
  for (int first = 0; first < count; first += kMaxBatchedCopies) {
    const int group = std::min(kMaxBatchedCopies, count - first);
    // One access width for the whole group: the widest that every part's row, pitches and addresses allow.
    int v = 16;
    bool fits32 = true;
    for (int i = first; i < first + group; ++i) {
      const PitchedCopy& p = copies[i];
      if (p.row < 0 || p.src_pitch < p.row || p.dst_pitch < p.row) return cudaErrorInvalidValue;
      const int64_t counts[3] = {p.row, p.src_pitch, p.dst_pitch};
      const uintptr_t addrs[2] = {reinterpret_cast<uintptr_t>(p.src), reinterpret_cast<uintptr_t>(p.dst)};
      v = std::min(v, widest_access(elem_size, counts, 3, addrs, 2));
      const int64_t reach = (rows - 1) * std::max(p.src_pitch, p.dst_pitch) + p.row;
      fits32 = fits32 && rows * p.row < kIndex32Limit && reach < kIndex32Limit;
    }
    const int64_t f = v / elem_size;
    const cudaError_t err = fits32 ? pitched_copies_group<int32_t>(copies + first, group, v, f, rows, s)
                                   : pitched_copies_group<int64_t>(copies + first, group, v, f, rows, s);
    if (err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

cudaError_t launch_gather_axis(const void* data, const void* idx, bool idx_int64, void* out, int elem_size,
                               int64_t outer, int64_t n_axis, int64_t m, int64_t inner, cudaStream_t s,
                               const DataFault& fault) {
  if (outer * m * inner == 0) return cudaSuccess;
  // Each index selects a run of `inner` contiguous elements: move it in up to 16-byte pieces.
  const int64_t counts[1] = {inner};
  const uintptr_t addrs[2] = {reinterpret_cast<uintptr_t>(data), reinterpret_cast<uintptr_t>(out)};
  const int v = widest_access(elem_size, counts, 1, addrs, 2);
  const int64_t win = inner / (v / elem_size), n = outer * m * win;
  const unsigned g = grid_for(n);
  const bool i32 = n < kIndex32Limit && outer * n_axis * win < kIndex32Limit;
#define G(E, X, I)                                                                                           \
  gather_axis_kernel<E, X, I><<<g, kThreads, 0, s>>>(static_cast<const E*>(data), static_cast<const X*>(idx), \
                                                     static_cast<E*>(out), static_cast<I>(n_axis),            \
                                                     static_cast<I>(m), static_cast<I>(win), static_cast<I>(n), fault)
  if (idx_int64 && i32) {
#define L(E) G(E, int64_t, int32_t)
    GRAFT_BY_ACCESS_SIZE(v, L)
#undef L
  } else if (idx_int64) {
#define L(E) G(E, int64_t, int64_t)
    GRAFT_BY_ACCESS_SIZE(v, L)
#undef L
  } else if (i32) {
#define L(E) G(E, int32_t, int32_t)
    GRAFT_BY_ACCESS_SIZE(v, L)
#undef L
  } else {
#define L(E) G(E, int32_t, int64_t)
    GRAFT_BY_ACCESS_SIZE(v, L)
#undef L
  }
#undef G
  return cudaGetLastError();
}

cudaError_t launch_tile(const void* in, void* out, int elem_size, const AxisMap& p, int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const unsigned g = grid_for(n);
#define L(E) tile_kernel<E><<<g, kThreads, 0, s>>>(static_cast<const E*>(in), static_cast<E*>(out), p, n)
  GRAFT_SIZE_DISPATCH(elem_size, L(E))
#undef L
  return cudaGetLastError();
}

}  // namespace graft::cuda::k
