// The data-dependent family's CUDA kernels and CUDA ops (definitions and CPU references:
// data_dependent.cpp): NonMaxSuppression, NonZero and Unique on the GPU, so a CUDA engine keeps a
// detection model's post-processing there. Each op declares a CountedOutput (cuda_ops.h): the engine
// gives the output the most elements the input shapes allow, the kernel writes the real output as a
// prefix of it and its count to CudaExec::output_count, and the engine reads back that count alone.
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

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------

namespace k {

// Each launcher writes its output into a buffer sized for the most the input shapes allow, laid out as the real (smaller) output would be, and writes the real
// count to a device int64, which is all the engine reads back (cuda_engine.cpp). Plain device
// pointers; each returns the first launch's cudaError_t (cudaErrorInvalidValue for a problem the
// launcher does not handle). Nothing here synchronizes.

// ---- NonMaxSuppression ---------------------------------------------------------------------------

struct NmsProblem {
  int64_t batches = 0, classes = 0, boxes = 0;
  bool center_point_box = false;  // false: [y1, x1, y2, x2] corners; true: [xc, yc, w, h]
  // The most boxes one (batch, class) may keep, known on the host: min(max_output_boxes_per_class,
  // boxes) when that input is a constant, else `boxes`. The output buffer holds
  // batches * classes * per_class_bound rows; the value read on the device is clamped to it.
  int64_t per_class_bound = 0;
};

// Bytes of scratch launch_nms needs. The suppression bit matrix dominates: boxes^2 / 8 bytes per
// (batch, class) processed at once; (batch, class) pairs are processed in chunks of at most
// kNmsMaskBudget bytes of matrix (at least one pair).
size_t nms_workspace_bytes(const NmsProblem& p);
constexpr size_t kNmsMaskBudget = size_t(256) << 20;

// boxes [batches, boxes, 4] and scores [batches, classes, boxes] of type `t` (kF32 or kF16);
// max_output (int64), iou_threshold and score_threshold (float) each one device value or nullptr
// when the node omits it. Writes out[count, 3] int64 (batch, class, box) in the ONNX order (by
// batch, then class, then descending score, equal scores by lower box index: the CPU reference's
// order) and *count; *count = -1 when iou_threshold lies outside [0, 1] (the CPU reference's error).
// Box arithmetic is float32 with the CPU reference's operations in its order, each rounded once
// (no fused multiply-add), so the same boxes are kept.
cudaError_t launch_nms(KType t, const void* boxes, const void* scores, const int64_t* max_output,
                       const float* iou_threshold, const float* score_threshold, const NmsProblem& p,
                       void* workspace, size_t workspace_bytes, int64_t* out, int64_t* count, cudaStream_t s);

// ---- NonZero -------------------------------------------------------------------------------------

// Bytes of scratch launch_non_zero needs for n elements.
size_t non_zero_workspace_bytes(int64_t n);

// x: n elements of elem_size bytes (1, 2, 4 or 8) with dims[0..rank) (rank <= kMaxRank; rank 0 is
// one element read as a vector). An element is nonzero when any bit is set, ignoring the sign bit
// when is_float (so -0.0 is zero and NaN nonzero, as on the CPU). Writes out[max(rank, 1), count]
// int64, the coordinates of the nonzero elements in row-major order, and *count.
cudaError_t launch_non_zero(int elem_size, bool is_float, const void* x, int64_t n, const int64_t* dims, int rank,
                            void* workspace, size_t workspace_bytes, int64_t* out, int64_t* count, cudaStream_t s);

// ---- Unique --------------------------------------------------------------------------------------

// X viewed as [outer, n, inner]: n slices of outer * inner elements each (axis given), or n
// elements (flattened: outer = inner = 1), compared as the CPU reference compares them: numbers by
// value (-0 == 0), every NaN equal to every other and after every number, slices
// lexicographically in row-major order of the other axes; bool by truth.
struct UniqueProblem {
  int64_t outer = 1, n = 0, inner = 1;
  bool sorted = true;  // false: in order of first occurrence
};

// Each slice is compared with every other (no sort), so the work is bounded: at most
// kUniqueMaxWork element comparisons in all (n * n * slice) and kUniqueMaxThreadWork per thread
// (n * slice). Larger problems are the CPU reference's.
constexpr int64_t kUniqueMaxWork = int64_t{1} << 33;
constexpr int64_t kUniqueMaxThreadWork = int64_t{1} << 27;
bool unique_within_bounds(const UniqueProblem& p);

// Bytes of scratch launch_unique needs (three int64 per slice).
size_t unique_workspace_bytes(const UniqueProblem& p);

// x of type t (kF32, kF16, kBF16, kF64, kI8, kU8, kI32, kI64, kBool). Writes *count = u, the
// number of distinct slices, and: y [outer, u, inner] (each distinct slice's first occurrence,
// bit for bit), indices [u] (that first occurrence), counts [u] (how many slices equal it) and
// inverse [n] (each slice's position in y), positions in ascending order (sorted) or in order of
// first occurrence. indices, inverse and counts may each be null (an omitted output).
cudaError_t launch_unique(KType t, const void* x, const UniqueProblem& p, void* workspace, size_t workspace_bytes,
                          void* y, int64_t* indices, int64_t* inverse, int64_t* counts, int64_t* count,
                          cudaStream_t s);

namespace {

constexpr int kScanThreads = 1024;
constexpr size_t kAlign = 256;

size_t align_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

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

// ---- NonMaxSuppression ---------------------------------------------------------------------------
//
// Per (batch, class) "segment", the CPU reference's greedy loop made parallel without changing its
// result: candidates (score not NaN, above the threshold) are compacted in box order, ranked by
// (score descending, box index ascending) with an exact all-pairs count (no sort to be unstable),
// the suppression relation between every ordered pair is computed as a bit matrix, and one warp
// walks the ranked boxes keeping each one no kept box suppresses, until max_output are kept. That
// is the reference's loop with its inner test precomputed: the same boxes in the same order.

// A box as the extents NonMaxSuppression compares (the CPU reference's Extent).
struct Extent {
  float lo0, lo1, hi0, hi1, area;
};

// The CPU reference's extent_of, operation for operation. std::min(a, b) is (b < a ? b : a) and
// std::max(a, b) is (a < b ? b : a), written out so NaN coordinates pick the same operand; the
// _rn intrinsics round each step once, as the host does (no contraction into an FMA).
__device__ __forceinline__ Extent extent_of(float b0, float b1, float b2, float b3, bool center) {
  Extent e;
  if (center) {
    const float h2 = __fdiv_rn(b2, 2.0f), h3 = __fdiv_rn(b3, 2.0f);
    e.lo0 = __fsub_rn(b0, h2);
    e.hi0 = __fadd_rn(b0, h2);
    e.lo1 = __fsub_rn(b1, h3);
    e.hi1 = __fadd_rn(b1, h3);
  } else {
    e.lo0 = b2 < b0 ? b2 : b0;
    e.hi0 = b0 < b2 ? b2 : b0;
    e.lo1 = b3 < b1 ? b3 : b1;
    e.hi1 = b1 < b3 ? b3 : b1;
  }
  e.area = __fmul_rn(__fsub_rn(e.hi0, e.lo0), __fsub_rn(e.hi1, e.lo1));
  return e;
}

// The CPU reference's suppresses(a = kept, b = candidate), operation for operation.
__device__ __forceinline__ bool suppresses(const Extent& a, const Extent& b, float iou_threshold) {
  const float lo0 = a.lo0 < b.lo0 ? b.lo0 : a.lo0, hi0 = b.hi0 < a.hi0 ? b.hi0 : a.hi0;
  const float lo1 = a.lo1 < b.lo1 ? b.lo1 : a.lo1, hi1 = b.hi1 < a.hi1 ? b.hi1 : a.hi1;
  if (!(hi0 > lo0) || !(hi1 > lo1)) return false;
  if (!(a.area > 0.0f) || !(b.area > 0.0f)) return false;
  const float inter = __fmul_rn(__fsub_rn(hi0, lo0), __fsub_rn(hi1, lo1));
  const float uni = __fsub_rn(__fadd_rn(a.area, b.area), inter);
  if (!(uni > 0.0f)) return false;
  return __fdiv_rn(inter, uni) > iou_threshold;
}

template <typename T>
__global__ void nms_extents_kernel(const T* boxes, int64_t n, bool center, Extent* ext) {
  GRAFT_GRID_STRIDE(i, n) {
    const T* b = boxes + i * 4;
    ext[i] = extent_of(Elem<T>::ld(b[0]), Elem<T>::ld(b[1]), Elem<T>::ld(b[2]), Elem<T>::ld(b[3]), center);
  }
}

// One block per segment of the chunk: the candidate box indices, in box order, and their count.
template <typename T>
__global__ void nms_candidates_kernel(const T* scores, const float* score_threshold, int64_t boxes, int64_t seg_base,
                                      int32_t* cand, int32_t* cand_count) {
  __shared__ int warp_totals[32];
  const T* s = scores + (seg_base + blockIdx.x) * boxes;  // scores [B, C, N]: segment b * C + c
  int32_t* out = cand + blockIdx.x * boxes;
  int32_t base = 0;
  for (int64_t t0 = 0; t0 < boxes; t0 += blockDim.x) {
    const int64_t i = t0 + threadIdx.x;
    bool is_candidate = false;
    if (i < boxes) {
      const float v = Elem<T>::ld(s[i]);
      // Strictly above the threshold, as the reference; a NaN score is never a candidate.
      is_candidate = !isnan(v) && (!score_threshold || v > *score_threshold);
    }
    int pos = 0, total = 0;
    block_flag_scan(is_candidate, warp_totals, &pos, &total);
    if (is_candidate) out[base + pos] = static_cast<int32_t>(i);
    base += total;
  }
  if (threadIdx.x == 0) cand_count[blockIdx.x] = base;
}

// Grid (ceil(boxes / blockDim), chunk): candidate i's rank is the number of candidates before it in
// the reference's order (higher score, or an equal score at a lower box index; -0.0 == 0.0 there
// as here). Candidates are in box order, so "lower box index" is "earlier candidate". The ranks are
// a permutation: order[rank] = box.
template <typename T>
__global__ void nms_rank_kernel(const T* scores, int64_t boxes, int64_t seg_base, const int32_t* cand,
                                const int32_t* cand_count, int32_t* order) {
  __shared__ float keys[kThreads];
  const int64_t local = blockIdx.y;
  const int m = cand_count[local];
  if (static_cast<int64_t>(blockIdx.x) * blockDim.x >= m) return;  // the whole block: uniform
  const T* s = scores + (seg_base + local) * boxes;
  const int32_t* c = cand + local * boxes;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float key = i < m ? Elem<T>::ld(s[c[i]]) : 0.0f;
  int rank = 0;
  for (int j0 = 0; j0 < m; j0 += blockDim.x) {
    __syncthreads();
    const int j = j0 + static_cast<int>(threadIdx.x);
    keys[threadIdx.x] = j < m ? Elem<T>::ld(s[c[j]]) : 0.0f;
    __syncthreads();
    const int n = ::min(static_cast<int>(blockDim.x), m - j0);
    if (i < m)
      for (int q = 0; q < n; ++q) rank += keys[q] > key || (keys[q] == key && j0 + q < i);
  }
  if (i < m) order[local * boxes + rank] = c[i];
}

// Grid (column words, row words, chunk) of 64 threads: bit q of mask[i][w] says ranked box i
// suppresses ranked box 64 w + q, for i < 64 w + q < m only (the walk reads nothing else).
__global__ void nms_mask_kernel(const Extent* extents, int64_t classes, int64_t boxes, int64_t words,
                                int64_t seg_base, const int32_t* order, const int32_t* cand_count,
                                const float* iou_threshold, uint64_t* mask) {
  __shared__ Extent cols[64];
  const int64_t local = blockIdx.z;
  const int m = cand_count[local];
  const int rb = blockIdx.y, cb = blockIdx.x;
  if (cb < rb || rb * 64 >= m || cb * 64 >= m) return;  // the whole block: uniform
  const Extent* e = extents + (seg_base + local) / classes * boxes;
  const int32_t* ord = order + local * boxes;
  const int j = cb * 64 + static_cast<int>(threadIdx.x);
  if (j < m) cols[threadIdx.x] = e[ord[j]];
  __syncthreads();
  const int i = rb * 64 + static_cast<int>(threadIdx.x);
  if (i >= m) return;
  const Extent a = e[ord[i]];
  const float iou = iou_threshold ? *iou_threshold : 0.0f;
  const int n = ::min(64, m - cb * 64);
  uint64_t bits = 0;
  for (int q = cb == rb ? static_cast<int>(threadIdx.x) + 1 : 0; q < n; ++q)
    if (suppresses(a, cols[q], iou)) bits |= uint64_t(1) << q;
  mask[(local * boxes + i) * words + cb] = bits;
}

// One warp per segment: the reference's greedy walk over the ranked candidates, with "is it
// suppressed by a kept box" read from the bits the kept boxes set. `removed` lives in dynamic
// shared memory when removed_global is null, else in removed_global (words per segment).
__global__ void nms_select_kernel(int64_t boxes, int64_t words, int64_t seg_base, const int32_t* order,
                                  const int32_t* cand_count, const uint64_t* mask, uint64_t* removed_global,
                                  const int64_t* max_output, int64_t per_class_bound, int32_t* kept_count,
                                  int32_t* kept) {
  extern __shared__ uint64_t removed_shared[];
  const int64_t local = blockIdx.x, seg = seg_base + local;
  const int lane = static_cast<int>(threadIdx.x);
  const int m = cand_count[local];
  const int mw = (m + 63) / 64;
  uint64_t* removed = removed_global ? removed_global + local * words : removed_shared;
  // Absent or <= 0 keeps nothing; the host sized the output for per_class_bound (<= boxes).
  int64_t limit = max_output ? *max_output : 0;
  limit = limit < 0 ? 0 : (limit > per_class_bound ? per_class_bound : limit);
  for (int w = lane; w < mw; w += 32) removed[w] = 0;
  __syncwarp();
  const uint64_t* rows = mask + local * boxes * words;
  const int32_t* ord = order + local * boxes;
  int32_t* out = kept + seg * per_class_bound;
  int64_t n = 0;
  for (int i = 0; i < m && n < limit; ++i) {
    const bool gone = (removed[i >> 6] >> (i & 63)) & 1u;  // every lane reads the same word
    __syncwarp();  // ... before any lane updates it below
    if (gone) continue;
    if (lane == 0) out[n] = ord[i];
    ++n;
    const uint64_t* row = rows + static_cast<int64_t>(i) * words;
    for (int w = (i >> 6) + lane; w < mw; w += 32) removed[w] |= row[w];
    __syncwarp();
  }
  if (lane == 0) kept_count[seg] = static_cast<int32_t>(n);
}

// Row offsets[seg] + k of the output is segment seg's k-th kept box. An iou_threshold outside
// [0, 1] (the CPU reference refuses it) writes no row and a count of -1, which the engine reports.
__global__ void nms_write_kernel(const int32_t* kept_count, const int32_t* kept, const int64_t* offsets,
                                 int64_t segments, int64_t classes, int64_t per_class_bound,
                                 const float* iou_threshold, int64_t* out, int64_t* count) {
  if (iou_threshold && !(*iou_threshold >= 0.0f && *iou_threshold <= 1.0f)) {
    if (blockIdx.x == 0 && threadIdx.x == 0) *count = -1;
    return;
  }
  GRAFT_GRID_STRIDE(r, segments * per_class_bound) {
    const int64_t seg = r / per_class_bound, k = r % per_class_bound;
    if (k >= kept_count[seg]) continue;
    int64_t* row = out + (offsets[seg] + k) * 3;
    row[0] = seg / classes;
    row[1] = seg % classes;
    row[2] = kept[r];
  }
}

struct NmsLayout {
  int64_t segments = 0, words = 0, chunk = 1;
  size_t extents = 0, cand = 0, order = 0, cand_count = 0, mask = 0, removed = 0, kept_count = 0, kept = 0,
         offsets = 0, total = 0;
};

// Scratch offsets: per batch the box extents; per segment of one chunk the candidates, their
// order, the bit matrix and the walk's removed bits; per segment of all chunks the kept boxes.
NmsLayout nms_layout(const NmsProblem& p) {
  NmsLayout L;
  L.segments = p.batches * p.classes;
  L.words = (p.boxes + 63) / 64;
  const size_t mask_per_segment = static_cast<size_t>(p.boxes) * static_cast<size_t>(L.words) * 8;
  int64_t chunk = mask_per_segment ? static_cast<int64_t>(kNmsMaskBudget / mask_per_segment) : L.segments;
  chunk = chunk < L.segments ? chunk : L.segments;
  chunk = chunk < 65535 ? chunk : 65535;  // gridDim.y / gridDim.z
  L.chunk = chunk < 1 ? 1 : chunk;
  // Nothing can be kept (no pairs, no boxes, or max_output 0): the walk is skipped, and so is its scratch.
  const bool walk = L.segments && p.boxes && p.per_class_bound;
  const size_t c = walk ? static_cast<size_t>(L.chunk) : 0, n = static_cast<size_t>(p.boxes);
  const size_t w = static_cast<size_t>(L.words), s = static_cast<size_t>(L.segments);
  size_t at = 0;
  auto take = [&at](size_t bytes) {
    const size_t o = at;
    at += align_up(bytes);
    return o;
  };
  L.extents = take(walk ? sizeof(Extent) * static_cast<size_t>(p.batches) * n : 0);
  L.cand = take(sizeof(int32_t) * c * n);
  L.order = take(sizeof(int32_t) * c * n);
  L.cand_count = take(sizeof(int32_t) * c);
  L.mask = take(sizeof(uint64_t) * c * n * w);
  L.removed = take(sizeof(uint64_t) * c * w);
  L.kept_count = take(sizeof(int32_t) * s);
  L.kept = take(sizeof(int32_t) * s * static_cast<size_t>(p.per_class_bound));
  L.offsets = take(sizeof(int64_t) * s);
  L.total = at;
  return L;
}

// The walk's removed bits fit the default 48 KiB of dynamic shared memory up to 393216 boxes.
constexpr size_t kSharedRemovedBytes = 48 * 1024;

template <typename T>
cudaError_t nms_typed(const T* boxes, const T* scores, const int64_t* max_output, const float* iou_threshold,
                      const float* score_threshold, const NmsProblem& p, const NmsLayout& L, char* ws, int64_t* out,
                      int64_t* count, cudaStream_t s) {
  auto* extents = reinterpret_cast<Extent*>(ws + L.extents);
  auto* cand = reinterpret_cast<int32_t*>(ws + L.cand);
  auto* order = reinterpret_cast<int32_t*>(ws + L.order);
  auto* cand_count = reinterpret_cast<int32_t*>(ws + L.cand_count);
  auto* mask = reinterpret_cast<uint64_t*>(ws + L.mask);
  auto* removed = reinterpret_cast<uint64_t*>(ws + L.removed);
  auto* kept_count = reinterpret_cast<int32_t*>(ws + L.kept_count);
  auto* kept = reinterpret_cast<int32_t*>(ws + L.kept);
  auto* offsets = reinterpret_cast<int64_t*>(ws + L.offsets);
  if (L.segments) {
    // A segment the walk never reaches (no boxes, or nothing may be kept) keeps 0.
    const cudaError_t e = cudaMemsetAsync(kept_count, 0, sizeof(int32_t) * static_cast<size_t>(L.segments), s);
    if (e != cudaSuccess) return e;
  }
  if (L.segments && p.boxes && p.per_class_bound) {
    nms_extents_kernel<T><<<grid_for(p.batches * p.boxes), kThreads, 0, s>>>(boxes, p.batches * p.boxes,
                                                                              p.center_point_box, extents);
    GRAFT_LAUNCH_CHECK();
    const size_t removed_bytes = static_cast<size_t>(L.words) * sizeof(uint64_t);
    const bool shared_removed = removed_bytes <= kSharedRemovedBytes;
    for (int64_t c0 = 0; c0 < L.segments; c0 += L.chunk) {
      const unsigned sc = static_cast<unsigned>(L.segments - c0 < L.chunk ? L.segments - c0 : L.chunk);
      nms_candidates_kernel<T><<<sc, kThreads, 0, s>>>(scores, score_threshold, p.boxes, c0, cand, cand_count);
      GRAFT_LAUNCH_CHECK();
      const unsigned rank_blocks = static_cast<unsigned>((p.boxes + kThreads - 1) / kThreads);
      nms_rank_kernel<T><<<dim3(rank_blocks, sc), kThreads, 0, s>>>(scores, p.boxes, c0, cand, cand_count, order);
      GRAFT_LAUNCH_CHECK();
      const unsigned w = static_cast<unsigned>(L.words);
      nms_mask_kernel<<<dim3(w, w, sc), 64, 0, s>>>(extents, p.classes, p.boxes, L.words, c0, order, cand_count,
                                                    iou_threshold, mask);
      GRAFT_LAUNCH_CHECK();
      nms_select_kernel<<<sc, 32, shared_removed ? removed_bytes : 0, s>>>(
          p.boxes, L.words, c0, order, cand_count, mask, shared_removed ? nullptr : removed, max_output,
          p.per_class_bound, kept_count, kept);
      GRAFT_LAUNCH_CHECK();
    }
  }
  exclusive_scan_kernel<int32_t><<<1, kScanThreads, 0, s>>>(kept_count, L.segments, offsets, count);
  GRAFT_LAUNCH_CHECK();
  nms_write_kernel<<<grid_for(L.segments * p.per_class_bound), kThreads, 0, s>>>(
      kept_count, kept, offsets, L.segments, p.classes, p.per_class_bound, iou_threshold, out, count);
  return cudaGetLastError();
}

// ---- NonZero -------------------------------------------------------------------------------------

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

// ---- Unique --------------------------------------------------------------------------------------
//
// Without a sort: each slice finds its group's first occurrence and size by comparing itself with
// every slice, each first occurrence its output position by counting the groups before it (smaller
// ones when sorted, earlier ones otherwise), and every slice then knows where its group landed. The
// comparisons are the CPU reference's compare_values, so groups and order are its own.

// bool compares by truth, as the reference loads it.
struct BoolByte {
  uint8_t b;
};

__device__ __forceinline__ float ukey(__half v) { return __half2float(v); }
__device__ __forceinline__ float ukey(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ukey(float v) { return v; }
__device__ __forceinline__ double ukey(double v) { return v; }
__device__ __forceinline__ int64_t ukey(int8_t v) { return v; }
__device__ __forceinline__ int64_t ukey(uint8_t v) { return v; }
__device__ __forceinline__ int64_t ukey(int32_t v) { return v; }
__device__ __forceinline__ int64_t ukey(int64_t v) { return v; }
__device__ __forceinline__ int64_t ukey(BoolByte v) { return v.b != 0; }

template <typename C>
__device__ __forceinline__ int unique_cmp3(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    const bool na = isnan(a), nb = isnan(b);
    if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
  }
  return a < b ? -1 : (b < a ? 1 : 0);
}

// Slices a and b, lexicographically over [outer, inner] in row-major order.
template <typename T>
__device__ __forceinline__ int unique_slice_cmp(const T* x, const UniqueProblem& p, int64_t a, int64_t b) {
  if (a == b) return 0;
  for (int64_t o = 0; o < p.outer; ++o) {
    const T* ra = x + (o * p.n + a) * p.inner;
    const T* rb = x + (o * p.n + b) * p.inner;
    for (int64_t i = 0; i < p.inner; ++i) {
      const int c = unique_cmp3(ukey(ra[i]), ukey(rb[i]));
      if (c != 0) return c;
    }
  }
  return 0;
}

template <typename T>
__global__ void unique_group_kernel(const T* x, UniqueProblem p, int64_t* first, int64_t* size) {
  GRAFT_GRID_STRIDE(i, p.n) {
    int64_t f = -1, c = 0;
    for (int64_t j = 0; j < p.n; ++j)
      if (unique_slice_cmp(x, p, j, i) == 0) {
        if (f < 0) f = j;
        ++c;
      }
    first[i] = f;
    size[i] = c;
  }
}

template <typename T>
__global__ void unique_position_kernel(const T* x, UniqueProblem p, const int64_t* first, int64_t* pos,
                                       int64_t* count) {
  GRAFT_GRID_STRIDE(i, p.n) {
    if (first[i] != i) continue;
    int64_t r = 0;
    if (p.sorted) {
      for (int64_t j = 0; j < p.n; ++j) r += first[j] == j && unique_slice_cmp(x, p, j, i) < 0;
    } else {
      for (int64_t j = 0; j < i; ++j) r += first[j] == j;
    }
    pos[i] = r;
    atomicAdd(reinterpret_cast<unsigned long long*>(count), 1ull);
  }
}

__global__ void unique_index_kernel(int64_t n, const int64_t* first, const int64_t* size, const int64_t* pos,
                                    int64_t* indices, int64_t* inverse, int64_t* counts) {
  GRAFT_GRID_STRIDE(i, n) {
    const int64_t g = first[i], at = pos[g];
    if (inverse) inverse[i] = at;
    if (g == i) {
      if (indices) indices[at] = i;
      if (counts) counts[at] = size[i];
    }
  }
}

// Element e of X (slice s) goes to y[o, pos[s], :] when s is its group's first occurrence; y is
// [outer, u, inner] with u read on the device (the position kernel counted it).
template <typename E>
__global__ void unique_y_kernel(const E* x, UniqueProblem p, const int64_t* first, const int64_t* pos,
                                const int64_t* count, E* y, int64_t total) {
  const int64_t u = *count;
  GRAFT_GRID_STRIDE(e, total) {
    const int64_t in = e % p.inner, r = e / p.inner;
    const int64_t s = r % p.n, o = r / p.n;
    if (first[s] != s) continue;
    y[(o * u + pos[s]) * p.inner + in] = x[e];
  }
}

template <typename T>
cudaError_t unique_typed(const void* xv, const UniqueProblem& p, int64_t* first, int64_t* size, int64_t* pos,
                         int64_t* count, cudaStream_t s) {
  const T* x = static_cast<const T*>(xv);
  unique_group_kernel<T><<<grid_for(p.n), kThreads, 0, s>>>(x, p, first, size);
  GRAFT_LAUNCH_CHECK();
  unique_position_kernel<T><<<grid_for(p.n), kThreads, 0, s>>>(x, p, first, pos, count);
  return cudaGetLastError();
}

}  // namespace

size_t nms_workspace_bytes(const NmsProblem& p) { return nms_layout(p).total; }

cudaError_t launch_nms(KType t, const void* boxes, const void* scores, const int64_t* max_output,
                       const float* iou_threshold, const float* score_threshold, const NmsProblem& p,
                       void* workspace, size_t workspace_bytes, int64_t* out, int64_t* count, cudaStream_t s) {
  if (p.batches < 0 || p.classes < 0 || p.boxes < 0 || p.per_class_bound < 0 || p.per_class_bound > p.boxes)
    return cudaErrorInvalidValue;
  // Box indices are int32 in the scratch; the bit matrix's row-word grid dimension is at most 65535.
  if (p.boxes > INT32_MAX - 64 || (p.boxes + 63) / 64 > 65535) return cudaErrorInvalidValue;
  const NmsLayout L = nms_layout(p);
  if (workspace_bytes < L.total || (L.total && !workspace)) return cudaErrorInvalidValue;
  char* ws = static_cast<char*>(workspace);
  switch (t) {
    case KType::kF32:
      return nms_typed(static_cast<const float*>(boxes), static_cast<const float*>(scores), max_output,
                       iou_threshold, score_threshold, p, L, ws, out, count, s);
    case KType::kF16:
      return nms_typed(static_cast<const __half*>(boxes), static_cast<const __half*>(scores), max_output,
                       iou_threshold, score_threshold, p, L, ws, out, count, s);
    default:
      return cudaErrorInvalidValue;
  }
}

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

bool unique_within_bounds(const UniqueProblem& p) {
  if (p.outer < 0 || p.n < 0 || p.inner < 0) return false;
  const int64_t slice = p.outer * p.inner;
  const int64_t per_thread = p.n * (slice > 1 ? slice : 1);  // at most numel(X), or n
  return per_thread <= kUniqueMaxThreadWork && p.n * per_thread <= kUniqueMaxWork;
}

size_t unique_workspace_bytes(const UniqueProblem& p) {
  return p.n > 0 ? 3 * align_up(static_cast<size_t>(p.n) * sizeof(int64_t)) : 0;
}

cudaError_t launch_unique(KType t, const void* x, const UniqueProblem& p, void* workspace, size_t workspace_bytes,
                          void* y, int64_t* indices, int64_t* inverse, int64_t* counts, int64_t* count,
                          cudaStream_t s) {
  if (!count || !unique_within_bounds(p)) return cudaErrorInvalidValue;
  const size_t need = unique_workspace_bytes(p);
  if (workspace_bytes < need || (need && !workspace)) return cudaErrorInvalidValue;
  int elem = 0;
  switch (t) {
    case KType::kI8: case KType::kU8: case KType::kBool: elem = 1; break;
    case KType::kF16: case KType::kBF16: elem = 2; break;
    case KType::kF32: case KType::kI32: elem = 4; break;
    case KType::kF64: case KType::kI64: elem = 8; break;
    default: return cudaErrorInvalidValue;
  }
  cudaError_t e = cudaMemsetAsync(count, 0, sizeof(int64_t), s);
  if (e != cudaSuccess || p.n == 0) return e;
  const size_t stride = align_up(static_cast<size_t>(p.n) * sizeof(int64_t));
  auto* first = static_cast<int64_t*>(workspace);
  auto* size = reinterpret_cast<int64_t*>(static_cast<char*>(workspace) + stride);
  auto* pos = reinterpret_cast<int64_t*>(static_cast<char*>(workspace) + 2 * stride);
  switch (t) {
    case KType::kF32: e = unique_typed<float>(x, p, first, size, pos, count, s); break;
    case KType::kF16: e = unique_typed<__half>(x, p, first, size, pos, count, s); break;
    case KType::kBF16: e = unique_typed<__nv_bfloat16>(x, p, first, size, pos, count, s); break;
    case KType::kF64: e = unique_typed<double>(x, p, first, size, pos, count, s); break;
    case KType::kI8: e = unique_typed<int8_t>(x, p, first, size, pos, count, s); break;
    case KType::kU8: e = unique_typed<uint8_t>(x, p, first, size, pos, count, s); break;
    case KType::kI32: e = unique_typed<int32_t>(x, p, first, size, pos, count, s); break;
    case KType::kI64: e = unique_typed<int64_t>(x, p, first, size, pos, count, s); break;
    case KType::kBool: e = unique_typed<BoolByte>(x, p, first, size, pos, count, s); break;
    default: return cudaErrorInvalidValue;
  }
  if (e != cudaSuccess) return e;
  if (indices || inverse || counts) {
    unique_index_kernel<<<grid_for(p.n), kThreads, 0, s>>>(p.n, first, size, pos, indices, inverse, counts);
    GRAFT_LAUNCH_CHECK();
  }
  const int64_t total = p.outer * p.n * p.inner;
  if (total == 0) return cudaSuccess;
  if (!y) return cudaErrorInvalidValue;
  GRAFT_SIZE_DISPATCH(elem, (unique_y_kernel<E><<<grid_for(total), kThreads, 0, s>>>(
                                static_cast<const E*>(x), p, first, pos, count, static_cast<E*>(y), total)));
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA ops -------------------------------------------------------------------------------
// Unique sizes all four of its outputs from one count, one of them final. Errors the CPU reference raises from shapes or constant
// inputs are raised here with the same words; an invalid value the host cannot see (a computed
// iou_threshold) comes back as a negative count.

namespace {

using namespace util;

// A counted op writes output 0 only, as int64 (what both schemas give it).
bool counted_output_supported(const Node& n, std::string* why) {
  if (n.outputs.size() != 1 || !n.output(0)) return reject(why, "needs exactly one output");
  if (out_dtype(n, 0) != DataType::kInt64) return reject(why, "output 0 must be int64");
  return true;
}

Status check_counted_output(const CudaExec& ex, const std::vector<int64_t>& bound) {
  if (ex.ctx->outputs.empty() || !ex.ctx->outputs[0] || !ex.output_count)
    return fail(ex, StatusCode::kInternal, "called without its output or its device count");
  const Tensor& y = *ex.ctx->outputs[0];
  if (y.dtype() != DataType::kInt64 || y.dims() != bound)
    return fail(ex, StatusCode::kInternal, "output 0 was not allocated with the bound the op computes");
  return Status::ok();
}

// ---- NonMaxSuppression ---------------------------------------------------------------------------

bool nms_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "needs boxes and scores");
  if (!require_dtype(n, 0, {DataType::kFloat32, DataType::kFloat16}, why)) return false;
  if (in_dtype(n, 1) != in_dtype(n, 0)) return reject(why, "boxes and scores have different dtypes");
  if (has_input(n, 2) && !require_dtype(n, 2, {DataType::kInt64}, why)) return false;
  if (has_input(n, 3) && !require_dtype(n, 3, {DataType::kFloat32}, why)) return false;
  if (has_input(n, 4) && !require_dtype(n, 4, {DataType::kFloat32}, why)) return false;
  if (auto cpb = nms_center_point_box(n.attrs); !cpb) return reject(why, cpb.status().message());
  return counted_output_supported(n, why);
}

// The problem the inputs' shapes describe (the CPU reference's checks and words), and the most
// boxes a class may keep as the host knows it: the constant max_output_boxes_per_class when the
// model gives one (an initializer or a folded Constant: the usual case), else every box.
Result<k::NmsProblem> nms_problem(const Node& n, const std::vector<const Tensor*>& ins) {
  const Tensor* boxes = ins.size() > 0 ? ins[0] : nullptr;
  const Tensor* scores = ins.size() > 1 ? ins[1] : nullptr;
  if (!boxes || !scores) return error(StatusCode::kInvalidModel, "NonMaxSuppression needs boxes and scores");
  GRAFT_ASSIGN_OR_RETURN(NmsDims dims, nms_dims(*boxes, *scores));
  GRAFT_RETURN_IF_ERROR(nms_check_scalar_inputs(&n, ins));
  k::NmsProblem p;
  p.batches = dims.batches;
  p.boxes = dims.boxes;
  p.classes = dims.classes;
  GRAFT_ASSIGN_OR_RETURN(p.center_point_box, nms_center_point_box(n.attrs));
  const bool has_max = ins.size() > 2 && ins[2];
  const Value* mv = n.input(2);
  if (!has_max) {
    p.per_class_bound = 0;  // absent: nothing is selected
  } else if (mv && mv->constant) {
    p.per_class_bound = std::clamp<int64_t>(mv->constant->data_as<int64_t>()[0], 0, p.boxes);
  } else {
    p.per_class_bound = p.boxes;
  }
  return p;
}

Result<std::vector<int64_t>> nms_bound(const Node& n, const std::vector<const Tensor*>& ins) {
  GRAFT_ASSIGN_OR_RETURN(k::NmsProblem p, nms_problem(n, ins));
  return std::vector<int64_t>{p.batches * p.classes * p.per_class_bound, 3};
}

size_t nms_workspace(const Node& n, const std::vector<const Tensor*>& ins, const std::vector<Tensor>& /*outputs*/) {
  auto p = nms_problem(n, ins);
  return p ? k::nms_workspace_bytes(*p) : 0;  // run() reports the error
}

Status nms_run(CudaExec& ex) {
  const Node& n = *ex.ctx->node;
  auto p = nms_problem(n, ex.ctx->inputs);
  if (!p) return with_node(ex, p.status());
  GRAFT_RETURN_IF_ERROR(check_counted_output(ex, {p->batches * p->classes * p->per_class_bound, 3}));
  const Tensor* boxes = ex.ctx->inputs[0];
  const Tensor* scores = ex.ctx->inputs[1];
  if (boxes->dtype() != scores->dtype() ||
      (boxes->dtype() != DataType::kFloat32 && boxes->dtype() != DataType::kFloat16))
    return fail(ex, StatusCode::kUnsupported, "boxes and scores must both be float32 or both float16");
  // A constant iou_threshold is checked here, as the CPU reference checks it; a computed one is
  // checked by the kernel, which then reports a count of -1.
  const Value* iv = n.input(3);
  if (iv && iv->constant) {
    GRAFT_RETURN_IF_ERROR(with_node(ex, nms_check_iou_threshold(&n, iv->constant->data_as<float>()[0])));
  }
  auto dev = [&](size_t i) -> const void* {
    const Tensor* t = input_or_null(ex, i);
    return t ? t->data() : nullptr;
  };
  return launch_status(
      k::launch_nms(ktype(boxes->dtype()), boxes->data(), scores->data(), static_cast<const int64_t*>(dev(2)),
                    static_cast<const float*>(dev(3)), static_cast<const float*>(dev(4)), *p, ex.workspace,
                    ex.workspace_size, ex.ctx->outputs[0]->data_as<int64_t>(), ex.output_count, stream_of(ex)),
      ex);
}

// ---- NonZero -------------------------------------------------------------------------------------

bool non_zero_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "needs an input");
  // Any dtype: the kernel tests bits, by element size.
  if (dtype_size(in_dtype(n, 0)) == 0) return reject(why, "input 0 has no element size");
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

// ---- Unique --------------------------------------------------------------------------------------

constexpr std::initializer_list<DataType> kUniqueTypes = {
    DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64, DataType::kInt8,
    DataType::kUInt8,   DataType::kInt32,   DataType::kInt64,    DataType::kBool};

// The CPU reference's reading of `sorted` and `axis` (its words), and the [outer, n, inner] view.
struct UniqueSetup {
  k::UniqueProblem p;
  bool has_axis = false;
  int64_t axis = 0;
};

Result<UniqueSetup> unique_setup(const AttributeMap& attrs, const std::vector<int64_t>& dims) {
  UniqueSetup u;
  GRAFT_ASSIGN_OR_RETURN(int64_t sorted, attrs.get_int("sorted", 1));
  if (sorted != 0 && sorted != 1) return attr_error("sorted", "must be 0 or 1, got ", sorted);
  u.p.sorted = sorted == 1;
  u.has_axis = attrs.has("axis");
  if (u.has_axis) {
    GRAFT_ASSIGN_OR_RETURN(int64_t a, attrs.get_int("axis", 0));
    auto na = normalize_axis(a, static_cast<int64_t>(dims.size()));
    if (!na) return Status(na.status()).with_attribute("axis");
    u.axis = na.value();
    const AxisView v = axis_view(dims, u.axis, false);
    u.p.outer = v.outer;
    u.p.n = v.n;
    u.p.inner = v.inner;
  } else {
    u.p.n = numel_of(dims);
  }
  return u;
}

std::string unique_too_big(const k::UniqueProblem& p) {
  return "Unique on the GPU compares every slice with every other: " + std::to_string(p.n) + " slices of " +
         std::to_string(p.outer * p.inner) + " elements exceed its bound (n * n * slice <= 2^33, n * slice <= 2^27); "
         "the CPU reference runs larger inputs";
}

bool unique_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "needs an input");
  if (!require_dtype(n, 0, kUniqueTypes, why)) return false;
  if (n.outputs.empty() || n.outputs.size() > 4 || !n.output(0))
    return reject(why, "needs output Y and at most 3 more outputs");
  if (out_dtype(n, 0) != in_dtype(n, 0)) return reject(why, "output Y's dtype differs from X's");
  for (size_t o = 1; o < n.outputs.size(); ++o)
    if (n.output(o) && out_dtype(n, o) != DataType::kInt64)
      return reject(why, "output " + std::to_string(o) + " must be int64");
  const TensorDesc& x = n.input(0)->desc;
  if (!x.shape) return true;  // the attributes and the bound are checked per run
  std::vector<int64_t> dims;
  bool known = true;
  for (const Dim& d : *x.shape) {
    known = known && d.is_const();
    dims.push_back(d.is_const() ? d.value() : 1);
  }
  auto u = unique_setup(n.attrs, dims);
  if (!u) return reject(why, u.status().message());
  if (known && !k::unique_within_bounds(u->p)) return reject(why, unique_too_big(u->p));
  return true;
}

Result<std::vector<CountedDims>> unique_outputs(const Node& n, const std::vector<const Tensor*>& ins) {
  const Tensor* x = ins.empty() ? nullptr : ins[0];
  if (!x) return error(StatusCode::kInvalidModel, "Unique needs an input");
  GRAFT_ASSIGN_OR_RETURN(UniqueSetup u, unique_setup(n.attrs, x->dims()));
  std::vector<CountedDims> out(n.outputs.size());
  if (out.empty()) return out;
  out[0].dims = u.has_axis ? x->dims() : std::vector<int64_t>{u.p.n};
  out[0].count_axis = static_cast<int>(u.has_axis ? u.axis : 0);
  for (size_t o = 1; o < out.size(); ++o) {
    out[o].dims = {u.p.n};
    out[o].count_axis = o == 2 ? -1 : 0;  // inverse_indices has one entry per slice of X
  }
  return out;
}

size_t unique_workspace(const Node& n, const std::vector<const Tensor*>& ins, const std::vector<Tensor>& /*outputs*/) {
  if (ins.empty() || !ins[0]) return 0;
  auto u = unique_setup(n.attrs, ins[0]->dims());
  return u ? k::unique_workspace_bytes(u->p) : 0;  // run() reports the error
}

Status unique_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  if (!x || ex.ctx->outputs.empty() || !ex.ctx->outputs[0])
    return fail(ex, StatusCode::kInternal, "called without X or its output Y");
  if (!ex.output_count) return fail(ex, StatusCode::kInternal, "called without its device count");
  auto u = unique_setup(attrs_of(ex), x->dims());
  if (!u) return with_node(ex, u.status());
  if (!k::unique_within_bounds(u->p)) return fail(ex, StatusCode::kUnsupported, unique_too_big(u->p));
  auto want = unique_outputs(*ex.ctx->node, ex.ctx->inputs);
  if (!want) return with_node(ex, want.status());
  Tensor* outs[4] = {};
  for (size_t o = 0; o < ex.ctx->outputs.size() && o < 4; ++o) {
    Tensor* t = ex.ctx->outputs[o];
    if (!t || !t->defined()) continue;
    const DataType dt = o == 0 ? x->dtype() : DataType::kInt64;
    if (o >= want->size() || t->dtype() != dt || t->dims() != (*want)[o].dims)
      return fail(ex, StatusCode::kInternal, "output ", static_cast<uint64_t>(o),
                  " was not allocated with the bound the op computes");
    outs[o] = t;
  }
  if (!outs[0]) return fail(ex, StatusCode::kInternal, "called without its output Y");
  auto i64 = [&](int o) { return outs[o] ? outs[o]->data_as<int64_t>() : nullptr; };
  return launch_status(k::launch_unique(ktype(x->dtype()), x->data(), u->p, ex.workspace, ex.workspace_size,
                                        outs[0]->data(), i64(1), i64(2), i64(3), ex.output_count, stream_of(ex)),
                       ex);
}

}  // namespace

void append_cuda_data_dependent_ops(std::vector<CudaOp>& out) {
  out.push_back(CudaOp{"NonMaxSuppression", &nms_supports, &nms_run, {}, &nms_workspace,
                       CountedOutput{&nms_bound, 0,
                                     "input 3 (iou_threshold) must lie in [0, 1] (a computed value was outside)"}});
  out.push_back(CudaOp{"NonZero", &non_zero_supports, &non_zero_run, {}, &non_zero_workspace,
                       CountedOutput{&non_zero_bound, 1, nullptr}});
  out.push_back(CudaOp{"Unique", &unique_supports, &unique_run, {}, &unique_workspace,
                       CountedOutput{nullptr, 0, nullptr, &unique_outputs}});
}

}  // namespace graft::cuda
