// NonMaxSuppression's CUDA kernels and op (definition and CPU reference: non_max_suppression.cpp), so a
// CUDA engine keeps a detection model's post-processing on the GPU. It declares a CountedOutput
// (data_dependent_cuda.cuh). Errors the CPU reference raises from shapes or constant inputs are
// raised here with the same words; an invalid value the host cannot see (a computed iou_threshold)
// comes back as a negative count.
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

namespace {

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

}  // namespace k

// ---- CUDA op --------------------------------------------------------------------------------

namespace {

using namespace util;

// The keys: boxes float32/float16, max_output_boxes_per_class (if given) int64, iou_threshold and
// score_threshold (if given) float32, the selected indices int64; the scores have the boxes' dtype.
bool nms_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "needs boxes and scores");
  if (in_dtype(n, 1) != in_dtype(n, 0)) return reject(why, "boxes and scores have different dtypes");
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

}  // namespace

void append_cuda_non_max_suppression_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes(
      {input_dtypes(0, {DataType::kFloat32, DataType::kFloat16}), input_dtypes(2, {DataType::kInt64}),
       input_dtypes(3, {DataType::kFloat32}), input_dtypes(4, {DataType::kFloat32}),
       output_dtypes(0, {DataType::kInt64})},
      CudaOp{"NonMaxSuppression", &nms_supports, &nms_run, {}, &nms_workspace,
             CountedOutput{&nms_bound, 0,
                           "input 3 (iou_threshold) must lie in [0, 1] (a computed value was outside)"}}));
}

}  // namespace graft::cuda
