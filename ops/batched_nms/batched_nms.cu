// CUDA kernel of the batched NMS ops, in two launches.
//  1. One block per (image, class): the class's candidates (score > threshold; NaN never passes),
//     the best top_k of them (ties by box index, as the CPU's stable sort), sorted best first, then
//     greedy suppression by one warp; the kept ones are compacted, in order, to the front of the
//     class's segment of the workspace.
//  2. One block per image: every class's kept candidates, sorted by (score desc, class, box), and
//     the first keep_top_k written out in the op's layout, padded after them.
// The arithmetic is double with explicitly rounded intrinsics (no fused multiply-add), in the CPU
// reference's operation order, so both make the same decisions on the same inputs.
#include "ops/batched_nms/batched_nms_kernels.cuh"

#include "ops/common/nms_device.cuh"

namespace graft::cuda {
namespace {

using namespace nms;  // NOLINT: the shared NMS device helpers

constexpr int kClassThreads = 256;  // multiples of 32 (the selection's tie compaction works in warps)
constexpr int kImageThreads = 512;
// Kept boxes each lane of the suppression warp holds in registers (kept box j at lane j % 32, slot
// j / 32): the first 32 * kCachedPerLane of a class are loaded and ordered once, not once per later
// candidate; any further ones are loaded as they are needed.
constexpr int kCachedPerLane = 4;

template <typename T>
__device__ __forceinline__ Box4 box_at(const BatchedNmsArgs& a, const T* boxes, int64_t b, int64_t i, int64_t c) {
  return load4(boxes + (a.share_location ? (b * a.boxes + i) * 4 : ((b * a.boxes + i) * a.classes + c) * 4));
}

// Area of a box for the IoU: 0 when its corners are the wrong way round.
__device__ __forceinline__ double area(const Box4& p, double offset) {
  if (p.v[2] < p.v[0] || p.v[3] < p.v[1]) return 0.0;
  return __dmul_rn(__dadd_rn(__dsub_rn(p.v[2], p.v[0]), offset), __dadd_rn(__dsub_rn(p.v[3], p.v[1]), offset));
}

// A box as the IoU reads it: corners ordered when the op says so (the CPU reference orders each
// box before its IoU; ordering once gives the same corners).
__device__ __forceinline__ Box4 prepared(const BatchedNmsArgs& a, const Box4& p) { return a.order_corners ? ordered(p) : p; }

// IoU of kept box p and candidate q, both prepared(), the CPU reference's formula and operation order.
__device__ double iou(const BatchedNmsArgs& a, const Box4& p, const Box4& q) {
  double w, h;
  if (q.v[0] > p.v[2] || q.v[2] < p.v[0] || q.v[1] > p.v[3] || q.v[3] < p.v[1]) {
    w = __dadd_rn(0.0, a.intersection_offset);
    h = w;
  } else {
    w = __dadd_rn(__dsub_rn(std_min(p.v[2], q.v[2]), std_max(p.v[0], q.v[0])), a.intersection_offset);
    h = __dadd_rn(__dsub_rn(std_min(p.v[3], q.v[3]), std_max(p.v[1], q.v[1])), a.intersection_offset);
  }
  if (!(w > 0.0) || !(h > 0.0)) return 0.0;
  const double inter = __dmul_rn(w, h);
  return __ddiv_rn(inter, __dsub_rn(__dadd_rn(area(p, a.size_offset), area(q, a.size_offset)), inter));
}

template <typename T>
__global__ void __launch_bounds__(kClassThreads)
class_nms_kernel(BatchedNmsArgs a, const T* __restrict__ boxes, const T* __restrict__ scores, uint64_t* ws_keys,
                 uint32_t* ws_index, int32_t* ws_kept, int64_t seg) {
  __shared__ int s_kept;
  const int64_t bc = blockIdx.x;
  const int64_t b = bc / a.classes, c = bc % a.classes;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  if (c == a.background_class) {  // the whole block leaves together
    if (tid == 0) ws_kept[bc] = 0;
    return;
  }
  uint64_t* keys = ws_keys + bc * seg;
  uint32_t* index = ws_index + bc * seg;
  auto is_candidate = [&](int64_t i, uint64_t* key) {
    const T s = scores[(b * a.boxes + i) * a.classes + c];
    if (!(to_double(s) > a.score_threshold)) return false;
    *key = score_key(s);
    return true;
  };
  const unsigned int m =
      block_select_best<KeyBits<T>::value>(is_candidate, a.boxes, static_cast<unsigned int>(a.top_k), keys, index);
  int kept = 0;
  if (m > 0) {
    block_sort_best_first(keys, index, m);
    // Greedy suppression; every lane of warp 0 runs the same loop (`kept` is the same in every
    // lane). A kept candidate moves to slot `kept` <= r, which no lane reads again except as a kept
    // box. The cache's slots are indexed by loop counters the compiler unrolls, so it stays in
    // registers.
    if (warp == 0) {
      Box4 cache[kCachedPerLane];
      for (unsigned int r = 0; r < m; ++r) {
        const uint64_t key = keys[r];
        const uint32_t i = index[r];
        const Box4 q = prepared(a, box_at(a, boxes, b, i, c));
        bool suppressed = false;
#pragma unroll
        for (int slot = 0; slot < kCachedPerLane; ++slot) {
          if (suppressed || slot * 32 >= kept) break;
          const bool hit = slot * 32 + lane < kept && iou(a, cache[slot], q) > a.iou_threshold;
          suppressed = __any_sync(0xffffffffu, hit);
        }
        for (int j0 = kCachedPerLane * 32; j0 < kept && !suppressed; j0 += 32) {
          const int j = j0 + lane;
          const bool hit = j < kept && iou(a, prepared(a, box_at(a, boxes, b, index[j], c)), q) > a.iou_threshold;
          suppressed = __any_sync(0xffffffffu, hit);
        }
        if (suppressed) continue;
        if (lane == 0) {
          keys[kept] = key;
          index[kept] = i;
        }
#pragma unroll
        for (int slot = 0; slot < kCachedPerLane; ++slot)
          if (kept == slot * 32 + lane) cache[slot] = q;
        __syncwarp();
        ++kept;
      }
      if (lane == 0) s_kept = kept;
    }
    __syncthreads();
    kept = s_kept;
  }
  if (tid == 0) ws_kept[bc] = kept;
}

__device__ __forceinline__ double clip01(double x) { return x < 0.0 ? 0.0 : (x > 1.0 ? 1.0 : x); }

template <typename T>
__global__ void __launch_bounds__(kImageThreads)
merge_kernel(BatchedNmsArgs a, const T* __restrict__ boxes, const T* __restrict__ scores, BatchedNmsOutputs<T> out,
             const uint64_t* ws_keys, const uint32_t* ws_index, const int32_t* ws_kept, int64_t seg,
             uint64_t* ws_keys2, uint32_t* ws_index2, int64_t slots2) {
  __shared__ unsigned int s_total;
  const int tid = threadIdx.x;
  const int64_t b = blockIdx.x;
  uint64_t* keys = ws_keys2 + b * slots2;
  uint32_t* index = ws_index2 + b * slots2;
  if (tid == 0) s_total = 0;
  __syncthreads();
  // Any order: the sort below orders them completely.
  for (int64_t t = tid; t < a.classes * seg; t += kImageThreads) {
    const int64_t c = t / seg, j = t % seg;
    const int64_t bc = b * a.classes + c;
    if (j < ws_kept[bc]) {
      const unsigned int slot = atomicAdd(&s_total, 1u);
      keys[slot] = ws_keys[bc * seg + j];
      index[slot] = static_cast<uint32_t>(c * a.boxes + ws_index[bc * seg + j]);  // (class, box) order
    }
  }
  __syncthreads();
  const unsigned int total = s_total;
  if (total > 0) block_sort_best_first(keys, index, total);
  const int64_t k_out = a.keep_top_k;
  const int64_t found = total < k_out ? total : k_out;
  if (tid == 0 && out.num_detections) out.num_detections[b] = static_cast<int32_t>(found);
  for (int64_t j = tid; j < k_out; j += kImageThreads) {
    const int64_t slot = b * k_out + j;
    if (j < found) {
      const int64_t e = index[j], c = e / a.boxes, i = e % a.boxes;
      Box4 v = box_at(a, boxes, b, i, c);
      if (a.clip_boxes)
        for (int d = 0; d < 4; ++d) v.v[d] = clip01(v.v[d]);
      const double s = to_double(scores[(b * a.boxes + i) * a.classes + c]);
      if (a.layout == BatchedNmsLayout::kTensorRt) {
        for (int d = 0; d < 4; ++d) out.boxes[slot * 4 + d] = from_double<T>(v.v[d]);
        out.scores[slot] = from_double<T>(s);
        out.classes[slot] = from_double<T>(static_cast<double>(c));
      } else {
        for (int d = 0; d < 4; ++d) out.dets[slot * 5 + d] = from_double<T>(v.v[d]);
        out.dets[slot * 5 + 4] = from_double<T>(s);
        out.labels[slot] = static_cast<int32_t>(c);
        if (out.index) out.index[slot] = static_cast<int32_t>(a.share_location ? i : e);
      }
    } else if (a.layout == BatchedNmsLayout::kTensorRt) {
      for (int d = 0; d < 4; ++d) out.boxes[slot * 4 + d] = from_double<T>(0.0);
      out.scores[slot] = from_double<T>(0.0);
      out.classes[slot] = from_double<T>(-1.0);
    } else {
      for (int d = 0; d < 5; ++d) out.dets[slot * 5 + d] = from_double<T>(0.0);
      out.labels[slot] = -1;
      if (out.index) out.index[slot] = -1;
    }
  }
}

// Workspace layout: per (image, class) a segment of `seg` (key, index) pairs and a kept count; per
// image `slots2` (key, index) pairs for the merge.
struct Layout {
  int64_t seg = 0, slots2 = 0;
};

Layout layout_of(int64_t boxes, int64_t classes, int64_t top_k) {
  const int64_t per_class = top_k < boxes ? top_k : boxes;
  if (per_class <= 0 || classes <= 0) return {};
  return {pow2_at_least(per_class), pow2_at_least(per_class * classes)};
}

template <typename T>
cudaError_t launch(const BatchedNmsArgs& a, const T* boxes, const T* scores, const BatchedNmsOutputs<T>& out,
                   void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  constexpr int64_t kMaxIndex = 0x7fffffffLL;
  const bool trt = a.layout == BatchedNmsLayout::kTensorRt;
  if (a.batch < 0 || a.boxes < 0 || a.classes < 1 || a.keep_top_k < 1 || a.top_k < 1 ||
      a.boxes > kMaxIndex / a.classes || a.batch > kMaxIndex / a.classes ||
      (trt ? !(out.num_detections && out.boxes && out.scores && out.classes) : !(out.dets && out.labels)))
    return cudaErrorInvalidValue;
  if (a.batch == 0) return cudaSuccess;
  const size_t need = batched_nms_workspace_bytes(a.batch, a.boxes, a.classes, a.top_k);
  if (workspace_bytes < need || (need > 0 && workspace == nullptr)) return cudaErrorInvalidValue;
  const Layout l = layout_of(a.boxes, a.classes, a.top_k);
  const int64_t bc = a.batch * a.classes;
  auto* keys = static_cast<uint64_t*>(workspace);
  auto* keys2 = keys + bc * l.seg;
  auto* index = reinterpret_cast<uint32_t*>(keys2 + a.batch * l.slots2);
  auto* index2 = index + bc * l.seg;
  auto* kept = reinterpret_cast<int32_t*>(index2 + a.batch * l.slots2);
  if (l.seg > 0) {
    class_nms_kernel<T><<<static_cast<unsigned int>(bc), kClassThreads, 0, stream>>>(a, boxes, scores, keys, index,
                                                                                      kept, l.seg);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  // With no boxes every class keeps nothing: the merge only writes the padding (kept is not read).
  merge_kernel<T><<<static_cast<unsigned int>(a.batch), kImageThreads, 0, stream>>>(
      a, boxes, scores, out, keys, index, kept, l.seg, keys2, index2, l.slots2);
  return cudaGetLastError();
}

}  // namespace

size_t batched_nms_workspace_bytes(int64_t batch, int64_t boxes, int64_t classes, int64_t top_k) {
  if (batch <= 0 || classes <= 0) return 0;
  const Layout l = layout_of(boxes, classes, top_k);
  const int64_t pairs = batch * classes * l.seg + batch * l.slots2;
  return static_cast<size_t>(pairs) * (sizeof(uint64_t) + sizeof(uint32_t)) +
         static_cast<size_t>(batch * classes) * sizeof(int32_t);
}

cudaError_t batched_nms_f32(const BatchedNmsArgs& args, const float* boxes, const float* scores,
                            const BatchedNmsOutputs<float>& out, void* workspace, size_t workspace_bytes,
                            cudaStream_t stream) {
  return launch(args, boxes, scores, out, workspace, workspace_bytes, stream);
}
cudaError_t batched_nms_f16(const BatchedNmsArgs& args, const __half* boxes, const __half* scores,
                            const BatchedNmsOutputs<__half>& out, void* workspace, size_t workspace_bytes,
                            cudaStream_t stream) {
  return launch(args, boxes, scores, out, workspace, workspace_bytes, stream);
}
cudaError_t batched_nms_f64(const BatchedNmsArgs& args, const double* boxes, const double* scores,
                            const BatchedNmsOutputs<double>& out, void* workspace, size_t workspace_bytes,
                            cudaStream_t stream) {
  return launch(args, boxes, scores, out, workspace, workspace_bytes, stream);
}

}  // namespace graft::cuda
