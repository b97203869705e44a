// Launchers for the ops whose output size depends on the data: NonMaxSuppression and NonZero (CPU
// references: src/backends/cpu/detection.cpp) and Unique (src/backends/cpu/selection.cpp). Each writes its output into a buffer sized for the
// most the input shapes allow, laid out as the real (smaller) output would be, and writes the real
// count to a device int64, which is all the engine reads back (cuda_engine.cpp). Plain device
// pointers; each returns the first launch's cudaError_t (cudaErrorInvalidValue for a problem the
// launcher does not handle). Nothing here synchronizes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cuda/cuda_kernel_common.cuh"

namespace graft::cuda::k {

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

}  // namespace graft::cuda::k
