// CUDA kernel of EfficientNMS_TRT: one block per image.
//  1. Count the candidates (class != background, score >= threshold; NaN never passes).
//  2. Keep the best max_candidates of them: when more pass, a radix select over an order-preserving
//     integer key of the score finds the key of the last one kept; the candidates above it are all
//     kept, those equal to it in (box, class) order, i.e. in flat score index order, as the CPU's
//     sort keeps them.
//  3. Bitonic sort of the kept ones by (score desc, flat index asc) in the workspace.
//  4. Decode each sorted candidate's box once (ordered corners and area, for the IoU).
//  5. Greedy suppression by one warp walking the sorted list, the lanes testing the kept boxes.
//  6. Outputs, zero padded.
// The arithmetic is double throughout and uses explicitly rounded intrinsics where nvcc could
// otherwise contract a multiply and an add into an fma, so each value is bit-identical to the CPU
// reference's (only exp, in the centre-size decoder and the sigmoid, may differ by one ulp).
#include "ops/efficient_nms/efficient_nms_kernels.cuh"

#include "ops/common/nms_device.cuh"

namespace graft::cuda {
namespace {

using namespace nms;  // NOLINT: the shared NMS device helpers

constexpr int kThreads = 512;  // a multiple of 32 (the tie compaction works in whole warps)
constexpr int kMaxCandidates = static_cast<int>(kEfficientNmsCudaMaxCandidates);
constexpr int kBoxDoubles = 5;  // ordered corners, then area

// The box of (image b, box i, class c) as corners, as the CPU's box_of computes it.
template <typename T>
__device__ Box4 box_of(const EfficientNmsArgs& a, const T* boxes, const T* anchors, int64_t b, int64_t i, int64_t c) {
  Box4 v = load4(boxes + (a.per_class_boxes ? ((b * a.boxes + i) * a.classes + c) * 4 : (b * a.boxes + i) * 4));
  if (a.anchor_rows > 0) {
    Box4 an = load4(anchors + ((a.anchor_rows == 1 ? 0 : b) * a.boxes + i) * 4);
    if (a.box_coding == 0) {
      v = ordered(v);
      an = ordered(an);
      for (int j = 0; j < 4; ++j) v.v[j] = __dadd_rn(v.v[j], an.v[j]);
    } else {
      v = Box4{{__dadd_rn(__dmul_rn(v.v[0], an.v[2]), an.v[0]), __dadd_rn(__dmul_rn(v.v[1], an.v[3]), an.v[1]),
                __dmul_rn(an.v[2], exp(v.v[2])), __dmul_rn(an.v[3], exp(v.v[3]))}};
    }
  }
  if (a.box_coding == 1) {
    // x / 2.0 is rounded like x * 0.5; the subtraction is rounded separately, as on the CPU.
    const double h0 = __dmul_rn(v.v[2], 0.5), h1 = __dmul_rn(v.v[3], 0.5);
    v = Box4{{__dsub_rn(v.v[0], h0), __dsub_rn(v.v[1], h1), __dadd_rn(v.v[0], h0), __dadd_rn(v.v[1], h1)}};
  }
  return v;
}

// IoU of kept box k and candidate box q, each given as ordered corners and area (both computed
// from the ordered corners as the CPU's iou() does); the CPU's formula and operation order.
__device__ __forceinline__ double iou(const double* k, const double* q) {
  const double w0 = __dsub_rn(std_min(k[2], q[2]), std_max(k[0], q[0]));
  const double w1 = __dsub_rn(std_min(k[3], q[3]), std_max(k[1], q[1]));
  if (!(w0 > 0.0) || !(w1 > 0.0)) return 0.0;
  const double inter = __dmul_rn(w0, w1);
  const double uni = __dsub_rn(__dadd_rn(k[4], q[4]), inter);
  if (!(uni > 0.0)) return 0.0;
  return __ddiv_rn(inter, uni);
}

// Whether flat score index e of an image is a candidate; its key when it is.
template <typename T>
__device__ __forceinline__ bool candidate(const EfficientNmsArgs& a, const T* sc, int64_t e, uint64_t* key) {
  if (e % a.classes == a.background_class) return false;
  const T s = sc[e];
  if (!(to_double(s) >= a.raw_score_threshold)) return false;
  *key = score_key(s);
  return true;
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
nms_kernel(EfficientNmsArgs a, const T* __restrict__ boxes, const T* __restrict__ scores,
           const T* __restrict__ anchors, int32_t* __restrict__ num_detections, T* __restrict__ det_boxes,
           T* __restrict__ det_scores, int32_t* __restrict__ det_classes, uint64_t* ws_keys, double* ws_boxes,
           uint32_t* ws_index, int64_t slots) {
  __shared__ int kept_list[kMaxCandidates];
  __shared__ int kept_class[kMaxCandidates];
  __shared__ int s_kept;

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int64_t b = blockIdx.x;
  const int64_t total = a.boxes * a.classes;
  const T* sc = scores + b * total;
  uint64_t* keys = ws_keys + b * slots;
  uint32_t* index = ws_index + b * slots;
  double* obox = ws_boxes + b * slots * kBoxDoubles;

  // 1-2. the best max_candidates candidates into keys/index[0, m), in any order
  auto is_candidate = [&](int64_t e, uint64_t* key) { return candidate(a, sc, e, key); };
  const unsigned int m =
      block_select_best<KeyBits<T>::value>(is_candidate, total, static_cast<unsigned int>(a.max_candidates), keys, index);

  int kept = 0;
  if (m > 0) {
    // 3. best first: score key descending, then flat index ascending (the CPU's (box, class) order)
    block_sort_best_first(keys, index, m);

    // 4. ordered corners and area of every sorted candidate
    for (unsigned int r = tid; r < m; r += kThreads) {
      const int64_t e = index[r];
      const Box4 o = ordered(box_of(a, boxes, anchors, b, e / a.classes, e % a.classes));
      const double e0 = __dsub_rn(o.v[2], o.v[0]), e1 = __dsub_rn(o.v[3], o.v[1]);
      double* dst = obox + static_cast<int64_t>(r) * kBoxDoubles;
      for (int j = 0; j < 4; ++j) dst[j] = o.v[j];
      dst[4] = e0 > 0.0 && e1 > 0.0 ? __dmul_rn(e0, e1) : 0.0;
    }
    __syncthreads();

    // 5. greedy suppression; every lane of warp 0 runs the same loop (uniform control flow).
    if (warp == 0) {
      for (unsigned int r = 0; r < m; ++r) {
        const double* q = obox + static_cast<int64_t>(r) * kBoxDoubles;
        const int cls = static_cast<int>(static_cast<int64_t>(index[r]) % a.classes);
        bool suppressed = false;
        for (int j0 = 0; j0 < kept && !suppressed; j0 += 32) {
          const int j = j0 + lane;
          bool hit = false;
          if (j < kept && (a.class_agnostic || kept_class[j] == cls))
            hit = iou(obox + static_cast<int64_t>(kept_list[j]) * kBoxDoubles, q) >= a.iou_threshold;
          suppressed = __any_sync(0xffffffffu, hit);
        }
        if (suppressed) continue;
        if (kept >= a.max_output_boxes) break;
        if (lane == 0) {
          kept_list[kept] = static_cast<int>(r);
          kept_class[kept] = cls;
        }
        __syncwarp();
        ++kept;
      }
      if (lane == 0) s_kept = kept;
    }
    __syncthreads();
    kept = s_kept;
  }

  // 6. outputs: the kept detections in order, then zeros
  if (tid == 0) num_detections[b] = kept;
  const int64_t k_out = a.max_output_boxes;
  for (int64_t j = tid; j < k_out; j += kThreads) {
    const int64_t slot = b * k_out + j;
    if (j < kept) {
      const int64_t e = index[kept_list[j]];
      const int64_t cls = e % a.classes;
      const Box4 v = box_of(a, boxes, anchors, b, e / a.classes, cls);
      for (int c = 0; c < 4; ++c) det_boxes[slot * 4 + c] = from_double<T>(v.v[c]);
      const double s = to_double(sc[e]);
      det_scores[slot] = from_double<T>(a.score_activation ? __ddiv_rn(1.0, __dadd_rn(1.0, exp(-s))) : s);
      det_classes[slot] = static_cast<int32_t>(cls);
    } else {
      for (int c = 0; c < 4; ++c) det_boxes[slot * 4 + c] = from_double<T>(0.0);
      det_scores[slot] = from_double<T>(0.0);
      det_classes[slot] = 0;
    }
  }
}

// Candidate slots per image: the bitonic sort's power of two over min(boxes * classes, cap).
int64_t slots_per_image(int64_t boxes, int64_t classes, int64_t max_candidates) {
  const int64_t total = boxes * classes;
  const int64_t m = total < max_candidates ? total : max_candidates;
  return m <= 0 ? 0 : pow2_at_least(m);
}

template <typename T>
cudaError_t launch(const EfficientNmsArgs& a, const T* boxes, const T* scores, const T* anchors, int32_t* num_det,
                   T* det_boxes, T* det_scores, int32_t* det_classes, void* workspace, size_t workspace_bytes,
                   cudaStream_t stream) {
  constexpr int64_t kMaxIndex = 0x7fffffffLL;
  if (a.batch < 0 || a.boxes < 0 || a.classes < 0 || a.batch > kMaxIndex || a.max_output_boxes < 1 ||
      a.max_candidates < 1 || a.max_candidates > kEfficientNmsCudaMaxCandidates ||
      (a.classes > 0 && a.boxes > kMaxIndex / a.classes) || (a.box_coding != 0 && a.box_coding != 1) ||
      a.anchor_rows < 0)
    return cudaErrorInvalidValue;
  if (a.batch == 0) return cudaSuccess;
  const int64_t slots = slots_per_image(a.boxes, a.classes, a.max_candidates);
  const size_t need = efficient_nms_workspace_bytes(a.batch, a.boxes, a.classes, a.max_candidates);
  if (workspace_bytes < need || (need > 0 && workspace == nullptr)) return cudaErrorInvalidValue;
  // With no (box, class) pair there is nothing to sort; the kernel only writes the padding.
  EfficientNmsArgs args = a;
  if (a.boxes == 0 || a.classes == 0) {
    args.boxes = 0;
    args.classes = 1;  // keeps e % classes defined; the loops over total = 0 run no iteration
  }
  auto* keys = static_cast<uint64_t*>(workspace);
  auto* box_ws = reinterpret_cast<double*>(keys + a.batch * slots);
  auto* index = reinterpret_cast<uint32_t*>(box_ws + a.batch * slots * kBoxDoubles);
  nms_kernel<T><<<static_cast<unsigned int>(a.batch), kThreads, 0, stream>>>(
      args, boxes, scores, anchors, num_det, det_boxes, det_scores, det_classes, keys, box_ws, index, slots);
  return cudaGetLastError();
}

}  // namespace

size_t efficient_nms_workspace_bytes(int64_t batch, int64_t boxes, int64_t classes, int64_t max_candidates) {
  if (batch <= 0 || boxes <= 0 || classes <= 0 || max_candidates <= 0) return 0;
  const int64_t slots = slots_per_image(boxes, classes, max_candidates);
  return static_cast<size_t>(batch * slots) * (sizeof(uint64_t) + kBoxDoubles * sizeof(double) + sizeof(uint32_t));
}

cudaError_t efficient_nms_f32(const EfficientNmsArgs& args, const float* boxes, const float* scores,
                              const float* anchors, int32_t* num_detections, float* detection_boxes,
                              float* detection_scores, int32_t* detection_classes, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream) {
  return launch(args, boxes, scores, anchors, num_detections, detection_boxes, detection_scores, detection_classes,
                workspace, workspace_bytes, stream);
}
cudaError_t efficient_nms_f16(const EfficientNmsArgs& args, const __half* boxes, const __half* scores,
                              const __half* anchors, int32_t* num_detections, __half* detection_boxes,
                              __half* detection_scores, int32_t* detection_classes, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream) {
  return launch(args, boxes, scores, anchors, num_detections, detection_boxes, detection_scores, detection_classes,
                workspace, workspace_bytes, stream);
}
cudaError_t efficient_nms_f64(const EfficientNmsArgs& args, const double* boxes, const double* scores,
                              const double* anchors, int32_t* num_detections, double* detection_boxes,
                              double* detection_scores, int32_t* detection_classes, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream) {
  return launch(args, boxes, scores, anchors, num_detections, detection_boxes, detection_scores, detection_classes,
                workspace, workspace_bytes, stream);
}

}  // namespace graft::cuda
