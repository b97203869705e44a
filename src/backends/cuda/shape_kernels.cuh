// Launchers for the data-movement CUDA kernels, by element size where they only move bytes:
// a strided gather out[i] = in[offset(p, i)] (Transpose, Slice), a pitched row copy (Concat, Split),
// Gather along an axis with device indices and Tile (Pad's kernels, which share Tile's AxisMap, are
// in src/ops/resize_pad/pad.cu).
#pragma once

#include <cstdlib>
#include <vector>

#include "backends/cuda/cuda_kernel_common.cuh"

namespace graft::cuda::k {

// ---- host-side planning of strided copies (pure functions, unit-tested on the CPU) ----

// The same gather with unit axes dropped and adjacent output axes merged where the input walks
// them as one axis (stride[d-1] == stride[d] * dims[d]); most permutes become rank 2 or 3. An
// empty result (rank 0) means a single element.
inline Strided coalesce_strided(const Strided& p) {
  Strided c;
  for (int d = 0; d < p.rank; ++d) {
    if (p.dims[d] == 1) continue;
    if (c.rank > 0 && c.strides[c.rank - 1] == p.strides[d] * p.dims[d]) {
      c.dims[c.rank - 1] *= p.dims[d];
      c.strides[c.rank - 1] = p.strides[d];
    } else {
      c.dims[c.rank] = p.dims[d];
      c.strides[c.rank] = p.strides[d];
      ++c.rank;
    }
  }
  return c;
}

// Appends an output axis to a gather view, merged into the previous one when the input walks both
// as one (as coalesce_strided does), so views of more than kMaxRank axes still fit when they
// merge. Returns true when the view is full.
inline bool append_axis(Strided* p, int64_t dim, int64_t stride) {
  if (p->rank > 0 && p->strides[p->rank - 1] == stride * dim) {
    p->dims[p->rank - 1] *= dim;
    p->strides[p->rank - 1] = stride;
    return false;
  }
  if (p->rank == kMaxRank) return true;
  p->dims[p->rank] = dim;
  p->strides[p->rank] = stride;
  ++p->rank;
  return false;
}

// The gather view of a permute of a contiguous tensor of `dims`: output axis d walks input axis
// perm[d] (Transpose; perm entries must be in range). Unit axes are dropped and axes the input
// walks as one merged, so ranks up to kMaxRank after merging fit; false when they do not.
inline bool permute_view(const std::vector<int64_t>& dims, const std::vector<int64_t>& perm, Strided* p) {
  std::vector<int64_t> stride(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) stride[i - 1] = stride[i] * dims[i];
  *p = Strided{};
  for (int64_t a : perm) {
    const size_t ax = static_cast<size_t>(a);
    if (dims[ax] == 1) continue;
    if (append_axis(p, dims[ax], stride[ax])) return false;
  }
  return true;
}

// The widest access (16, 8, 4, 2 or 1 bytes, at least elem_size) that divides every byte count
// in `counts` (element counts times elem_size) and every address: moving that many bytes at a
// time is then the same copy.
inline int widest_access(int elem_size, const int64_t* counts, int ncounts, const uintptr_t* addrs, int naddrs) {
  for (int v = 16; v > elem_size; v /= 2) {
    bool ok = true;
    for (int i = 0; i < ncounts && ok; ++i) ok = (counts[i] * elem_size) % v == 0;
    for (int i = 0; i < naddrs && ok; ++i) ok = addrs[i] % static_cast<uintptr_t>(v) == 0;
    if (ok) return v;
  }
  return elem_size;
}

inline int64_t strided_numel(const Strided& p) {
  int64_t n = 1;
  for (int d = 0; d < p.rank; ++d) n *= p.dims[d];
  return n;
}

inline int64_t strided_max_abs_offset(const Strided& p) {
  int64_t m = 0;
  for (int d = 0; d < p.rank; ++d) m += (p.dims[d] - 1) * std::llabs(p.strides[d]);
  return m;
}

// How launch_strided_gather moves the bytes: one memcpy (the view is contiguous), a 32x32 tiled
// transpose through shared memory (the input's contiguous axis is not the output's last axis), or
// the per-element gather (32-bit index math when it fits). `p` is the coalesced view in units of
// `elem_size` bytes, widened to up to 16 bytes when the output's last axis is contiguous in the
// input (a permute that keeps the innermost axis copies whole rows).
enum class GatherKind : int { kCopy, kTile, kGeneric };
struct GatherPlan {
  GatherKind kind = GatherKind::kGeneric;
  Strided p;
  int elem_size = 1;
  int64_t n = 0;        // elements of elem_size
  int tile_axis = -1;   // kTile: the axis with input stride 1 (never the last)
  bool index32 = false; // kGeneric: offsets and indices fit 32 bits (with headroom for the grid stride)
};

constexpr int64_t kIndex32Limit = int64_t(1) << 30;
constexpr int kTileMinExtent = 8;  // below this a 32x32 tile is mostly idle threads

inline GatherPlan plan_strided_gather(const Strided& in, int elem_size, uintptr_t src, uintptr_t dst) {
  GatherPlan g;
  g.p = coalesce_strided(in);
  g.elem_size = elem_size;
  Strided& p = g.p;
  const int last = p.rank - 1;
  if (p.rank > 0 && p.strides[last] == 1) {
    int64_t counts[kMaxRank];
    int nc = 0;
    counts[nc++] = p.dims[last];
    for (int d = 0; d < last; ++d) counts[nc++] = p.strides[d];
    const uintptr_t addrs[2] = {src, dst};
    const int v = widest_access(elem_size, counts, nc, addrs, 2);
    const int f = v / elem_size;
    p.dims[last] /= f;
    for (int d = 0; d < last; ++d) p.strides[d] /= f;
    g.elem_size = v;
  }
  g.n = strided_numel(p);
  if (p.rank == 0 || (p.rank == 1 && p.strides[0] == 1)) {
    g.kind = GatherKind::kCopy;
    return g;
  }
  if (p.strides[last] != 1) {
    for (int d = 0; d < last; ++d)
      if (p.strides[d] == 1 && p.dims[d] >= kTileMinExtent && p.dims[last] >= kTileMinExtent &&
          (p.dims[d] + 31) / 32 <= 65535)
        g.tile_axis = d;
    if (g.tile_axis >= 0) {
      g.kind = GatherKind::kTile;
      return g;
    }
  }
  g.kind = GatherKind::kGeneric;
  g.index32 = g.n < kIndex32Limit && strided_max_abs_offset(p) < kIndex32Limit;
  return g;
}

// The kTile launch: the tiled axes a (input stride 1) and L (the output's last axis, input stride
// sL), and every other axis as a "batch" axis with its input and output strides.
struct TileParams {
  int nb = 0;  // batch axes
  int64_t bdims[kMaxRank] = {};
  int64_t bin[kMaxRank] = {};   // input stride per batch axis
  int64_t bout[kMaxRank] = {};  // output stride per batch axis
  int64_t batches = 1;
  int64_t A = 0, L = 0;  // extents of the tiled axes
  int64_t sL = 0;        // input stride of the output's last axis
  int64_t oA = 0;        // output stride of axis a
};

// out[bout . b + a * oA + l] = in[bin . b + a + l * sL] for every batch index b, a < A, l < L.
inline TileParams make_tile_params(const GatherPlan& g) {
  const Strided& q = g.p;
  const int last = q.rank - 1, a = g.tile_axis;
  int64_t ost[kMaxRank];  // strides of the (contiguous, row-major) output
  int64_t acc = 1;
  for (int d = q.rank - 1; d >= 0; --d) {
    ost[d] = acc;
    acc *= q.dims[d];
  }
  TileParams t;
  for (int d = 0; d < last; ++d) {
    if (d == a) continue;
    t.bdims[t.nb] = q.dims[d];
    t.bin[t.nb] = q.strides[d];
    t.bout[t.nb] = ost[d];
    t.batches *= q.dims[d];
    ++t.nb;
  }
  t.A = q.dims[a];
  t.L = q.dims[last];
  t.sL = q.strides[last];
  t.oA = ost[a];
  return t;
}

cudaError_t launch_strided_gather(const void* in, void* out, int elem_size, const Strided& p, int64_t n, cudaStream_t s);

// Pitched copies over the same number of rows, in one launch: Concat's inputs into their columns
// of one output, Split's outputs out of one input (dst[r * dst_pitch + j] = src[r * src_pitch + j]
// for r < rows, j < row; pitches and rows in elements). A launch per part had made DenseNet-121's
// concatenations (up to 32 inputs each, one new part per layer) cost about 1.8 us per input at
// batch 1 on an H200, whatever their size. Copy i moves rows x row[i] elements from src[i] (pitch
// src_pitch[i]) to dst[i] (pitch dst_pitch[i]); more than kMaxBatchedCopies copies are launched in
// groups of that many.
constexpr int kMaxBatchedCopies = 32;
struct PitchedCopy {
  const void* src = nullptr;
  void* dst = nullptr;
  int64_t row = 0, src_pitch = 0, dst_pitch = 0;
};
cudaError_t launch_pitched_copies(const PitchedCopy* copies, int count, int elem_size, int64_t rows, cudaStream_t s);

// out[o, j, k] = data[o, idx[j], k] with data viewed as [outer, n, inner] and m indices (int32 or
// int64); a negative index counts from the end; an index outside [-n, n) writes zero bytes (it must
// not read out of bounds) and is reported through `fault`.
cudaError_t launch_gather_axis(const void* data, const void* idx, bool idx_int64, void* out, int elem_size,
                               int64_t outer, int64_t n, int64_t m, int64_t inner, cudaStream_t s,
                               const DataFault& fault = {});

// Per output axis: extent, input extent, input stride and the begin pad (Pad) — shared by Tile and
// Pad (src/ops/resize_pad).
struct AxisMap {
  int rank = 0;
  int64_t out_dims[kMaxRank] = {};
  int64_t in_dims[kMaxRank] = {};
  int64_t in_strides[kMaxRank] = {};
  int64_t begin[kMaxRank] = {};
};

// out[i] = in[sum((i_a % in_dims[a]) * in_strides[a])].
cudaError_t launch_tile(const void* in, void* out, int elem_size, const AxisMap& p, int64_t n, cudaStream_t s);

}  // namespace graft::cuda::k
