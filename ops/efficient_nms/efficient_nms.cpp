// EfficientNMS_TRT definition and CPU reference kernel (README.md has the algorithm).
#include "ops/efficient_nms/efficient_nms.h"
#include "ops/op_folder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "graft/kernel_dtype.h"

#ifdef GRAFT_WITH_CUDA
#include "ops/efficient_nms/efficient_nms_kernels.cuh"
#endif

namespace graft {
namespace {

constexpr const char* kOpName = "EfficientNMS_TRT";
constexpr int kBoxes = 0, kScores = 1, kAnchors = 2;
constexpr int kNumDetections = 0, kDetBoxes = 1, kDetScores = 2, kDetClasses = 3;

struct Params {
  double score_threshold = 0.5, iou_threshold = 0.5;
  int64_t max_output_boxes = 100, background_class = -1, box_coding = 0;
  bool score_activation = false, class_agnostic = false;
};

Result<Params> params_of(const AttributeMap& a) {
  Params p;
  GRAFT_ASSIGN_OR_RETURN(float score, a.get_float("score_threshold", 0.5f));
  GRAFT_ASSIGN_OR_RETURN(float iou, a.get_float("iou_threshold", 0.5f));
  p.score_threshold = score;
  p.iou_threshold = iou;
  GRAFT_ASSIGN_OR_RETURN(p.max_output_boxes, a.get_int("max_output_boxes", 100));
  GRAFT_ASSIGN_OR_RETURN(p.background_class, a.get_int("background_class", -1));
  GRAFT_ASSIGN_OR_RETURN(p.box_coding, a.get_int("box_coding", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t act, a.get_int("score_activation", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t agnostic, a.get_int("class_agnostic", 0));
  p.score_activation = act != 0;
  p.class_agnostic = agnostic != 0;
  if (p.max_output_boxes < 1 || p.max_output_boxes > kEfficientNmsMaxOutputBoxes)
    return Status(error(StatusCode::kInvalidArgument, kOpName, ": max_output_boxes must lie in [1, ",
                        kEfficientNmsMaxOutputBoxes, "], got ", p.max_output_boxes))
        .with_attribute("max_output_boxes");
  return p;
}

// ---- shapes -----------------------------------------------------------------------------------

Status shape_fn(ShapeContext& ctx) {
  auto bad = [](const char* input, auto&&... parts) {
    return error(StatusCode::kInvalidModel, kOpName, ": input '", input, "' ", parts...);
  };
  const int box_rank = ctx.input_rank(kBoxes);
  if (box_rank != 3 && box_rank != 4)
    return bad("boxes", "must have shape (batch, boxes, 4) or (batch, boxes, classes, 4), got rank ",
               box_rank);
  if (ctx.input_rank(kScores) != 3)
    return bad("scores", "must have shape (batch, boxes, classes), got rank ", ctx.input_rank(kScores));
  auto known = [](const SymDim& d) { return d.constant_value(); };
  auto disagree = [&](const SymDim& a, const SymDim& b) {
    return known(a) && known(b) && *known(a) != *known(b);
  };
  if (auto four = known(ctx.input_dim(kBoxes, -1)); four && *four != 4)
    return bad("boxes", "must have 4 coordinates in its last dimension, got ", *four);
  if (disagree(ctx.input_dim(kBoxes, 0), ctx.input_dim(kScores, 0)))
    return bad("scores", "has batch size ", *known(ctx.input_dim(kScores, 0)), " but 'boxes' has ",
               *known(ctx.input_dim(kBoxes, 0)));
  if (disagree(ctx.input_dim(kBoxes, 1), ctx.input_dim(kScores, 1)))
    return bad("scores", "has ", *known(ctx.input_dim(kScores, 1)), " boxes (dimension 1) but 'boxes' has ",
               *known(ctx.input_dim(kBoxes, 1)));
  if (box_rank == 4 && disagree(ctx.input_dim(kBoxes, 2), ctx.input_dim(kScores, 2)))
    return bad("boxes", "has ", *known(ctx.input_dim(kBoxes, 2)),
               " per-class boxes (dimension 2) but 'scores' has ", *known(ctx.input_dim(kScores, 2)),
               " classes");
  if (ctx.has_input(kAnchors)) {
    if (ctx.input_rank(kAnchors) != 3)
      return bad("anchors", "must have shape (1 or batch, boxes, 4), got rank ", ctx.input_rank(kAnchors));
    if (disagree(ctx.input_dim(kAnchors, 1), ctx.input_dim(kBoxes, 1)) ||
        disagree(ctx.input_dim(kAnchors, 2), ctx.constant(4)))
      return bad("anchors", "must have shape (1 or batch, boxes, 4) with the box count of 'boxes'");
    const auto a0 = known(ctx.input_dim(kAnchors, 0));
    if (a0 && *a0 != 1 && disagree(ctx.input_dim(kAnchors, 0), ctx.input_dim(kBoxes, 0)))
      return bad("anchors", "has ", *a0, " rows in dimension 0, which must be 1 or the batch size");
  }
  GRAFT_ASSIGN_OR_RETURN(Params p, params_of(ctx.attrs()));
  const SymDim batch = ctx.input_dim(kBoxes, 0);
  const SymDim k = ctx.constant(p.max_output_boxes);
  ctx.set_output(kNumDetections, {batch, ctx.constant(1)});
  ctx.set_output(kDetBoxes, {batch, k, ctx.constant(4)});
  ctx.set_output(kDetScores, {batch, k});
  ctx.set_output(kDetClasses, {batch, k});
  return Status::ok();
}

Result<std::vector<DataType>> dtype_fn(const std::vector<DataType>& in, const AttributeMap&) {
  const DataType t = in.empty() ? DataType::kUndefined : in[0];
  return std::vector<DataType>{DataType::kInt32, t, t, DataType::kInt32};
}

// ---- kernel -----------------------------------------------------------------------------------

// A box as two corners (lo, hi per axis once ordered). The two axes play the same part, so
// [y1, x1, y2, x2] and [x1, y1, x2, y2] give the same result.
struct Corners {
  double v[4];  // axis-0 first corner, axis-1 first corner, axis-0 second corner, axis-1 second corner
};

Corners ordered(const Corners& c) {
  return {{std::min(c.v[0], c.v[2]), std::min(c.v[1], c.v[3]), std::max(c.v[0], c.v[2]),
           std::max(c.v[1], c.v[3])}};
}

// Intersection over union of two boxes (each put in order first); 0 when they do not overlap or
// either has no area.
double iou(const Corners& a_in, const Corners& b_in) {
  const Corners a = ordered(a_in), b = ordered(b_in);
  const double w0 = std::min(a.v[2], b.v[2]) - std::max(a.v[0], b.v[0]);
  const double w1 = std::min(a.v[3], b.v[3]) - std::max(a.v[1], b.v[1]);
  if (!(w0 > 0.0) || !(w1 > 0.0)) return 0.0;
  const double inter = w0 * w1;
  auto area = [](const Corners& c) {
    const double e0 = c.v[2] - c.v[0], e1 = c.v[3] - c.v[1];
    return e0 > 0.0 && e1 > 0.0 ? e0 * e1 : 0.0;
  };
  const double uni = area(a) + area(b) - inter;
  if (!(uni > 0.0)) return 0.0;
  return inter / uni;
}

struct Candidate {
  double score;  // raw (before the optional sigmoid)
  int64_t box, cls;
};

// The sizes of one call, after check_views.
struct Dims {
  int64_t batch = 0, n = 0, classes = 0;
  bool per_class_boxes = false, decode = false;
  DataType ft = DataType::kUndefined;
};

// Every view's shape and dtype against the others and the attributes; `device` as well when set.
Result<Dims> check_views(const KernelContext& ctx, const Params& p, std::optional<DeviceType> device) {
  GRAFT_RETURN_IF_ERROR(check_kernel_io(ctx, kOpName, 3, 4, "kernel (anchors may be absent)"));
  const TensorView &boxes = ctx.inputs[kBoxes], &scores = ctx.inputs[kScores],
                   &anchors = ctx.inputs[kAnchors];
  const bool decode = anchors.data != nullptr;
  auto bad = [](const char* what, auto&&... parts) {
    return error(StatusCode::kInvalidArgument, kOpName, ": ", what, " ", parts...);
  };
  if (scores.rank() != 3) return bad("input 'scores'", "must have shape (batch, boxes, classes)");
  const int64_t batch = scores.dims[0], n = scores.dims[1], classes = scores.dims[2];
  const bool per_class_boxes = boxes.rank() == 4;
  const std::vector<int64_t> want_boxes =
      per_class_boxes ? std::vector<int64_t>{batch, n, classes, 4} : std::vector<int64_t>{batch, n, 4};
  if (boxes.dims != want_boxes)
    return bad("input 'boxes'",
               "must have shape (batch, boxes, 4) or (batch, boxes, classes, 4) matching 'scores'");
  if (decode && (anchors.rank() != 3 || (anchors.dims[0] != 1 && anchors.dims[0] != batch) ||
                 anchors.dims[1] != n || anchors.dims[2] != 4))
    return bad("input 'anchors'", "must have shape (1 or batch, boxes, 4)");
  const DataType ft = scores.dtype;
  if (boxes.dtype != ft || (decode && anchors.dtype != ft))
    return bad("inputs", "'boxes', 'scores' and 'anchors' must share one dtype");
  const int64_t k = p.max_output_boxes;
  const std::vector<std::vector<int64_t>> out_dims = {{batch, 1}, {batch, k, 4}, {batch, k}, {batch, k}};
  const DataType out_types[] = {DataType::kInt32, ft, ft, DataType::kInt32};
  for (int o = 0; o < 4; ++o)
    if (ctx.outputs[o].dims != out_dims[o] || ctx.outputs[o].dtype != out_types[o] || !ctx.outputs[o].data)
      return bad("output", o, " must be ", dtype_name(out_types[o]), " of shape (batch",
                 o == 0   ? ", 1)"
                 : o == 1 ? ", max_output_boxes, 4)"
                          : ", max_output_boxes)");
  if (device) {
    for (const TensorView* t : {&boxes, &scores, &anchors, &ctx.outputs[0], &ctx.outputs[1], &ctx.outputs[2],
                                &ctx.outputs[3]})
      if (t->data && t->device != *device)
        return bad("tensor", "in ", device_name(t->device), " memory, the kernel needs ", device_name(*device));
  }
  return Dims{batch, n, classes, per_class_boxes, decode, ft};
}

// With the sigmoid, a raw score s passes when sigmoid(s) >= threshold, i.e. s >= logit(threshold).
// Computed once on the host for both kernels, so the CPU and CUDA threshold tests agree exactly.
double raw_threshold_of(const Params& p) {
  if (!p.score_activation) return p.score_threshold;
  return p.score_threshold <= 0.0   ? -std::numeric_limits<double>::infinity()
         : p.score_threshold >= 1.0 ? std::numeric_limits<double>::infinity()
                                    : std::log(p.score_threshold / (1.0 - p.score_threshold));
}

Status forward_cpu(const KernelContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Params p, params_of(*ctx.attrs));
  GRAFT_ASSIGN_OR_RETURN(Dims d, check_views(ctx, p, std::nullopt));
  const TensorView &boxes = ctx.inputs[kBoxes], &scores = ctx.inputs[kScores],
                   &anchors = ctx.inputs[kAnchors];
  const int64_t batch = d.batch, n = d.n, classes = d.classes, k = p.max_output_boxes;
  const bool per_class_boxes = d.per_class_boxes, decode = d.decode;
  const DataType ft = d.ft;
  // Padding after the detections is zero, as in TensorRT.
  for (const TensorView& t : ctx.outputs)
    if (t.nbytes()) std::memset(t.data, 0, t.nbytes());
  const double raw_threshold = raw_threshold_of(p);

  return kernel::visit_float_dtype(kOpName, ft, [&](auto tr) -> Status {
    using T = decltype(tr);
    auto load4 = [](const void* base, int64_t at) {
      return Corners{{static_cast<double>(T::load(base, at)), static_cast<double>(T::load(base, at + 1)),
                      static_cast<double>(T::load(base, at + 2)),
                      static_cast<double>(T::load(base, at + 3))}};
    };
    // The box of (image b, box i, class c) as corners, decoded against its anchor when given.
    auto box_of = [&](int64_t b, int64_t i, int64_t c) {
      Corners v = load4(boxes.data, per_class_boxes ? ((b * n + i) * classes + c) * 4 : (b * n + i) * 4);
      if (decode) {
        Corners a = load4(anchors.data, ((anchors.dims[0] == 1 ? 0 : b) * n + i) * 4);
        if (p.box_coding == 0) {
          v = ordered(v);
          a = ordered(a);
          for (int j = 0; j < 4; ++j) v.v[j] += a.v[j];
        } else {
          // Centre offsets scale with the anchor's size; sizes scale exponentially.
          v = Corners{{v.v[0] * a.v[2] + a.v[0], v.v[1] * a.v[3] + a.v[1], a.v[2] * std::exp(v.v[2]),
                       a.v[3] * std::exp(v.v[3])}};
        }
      }
      if (p.box_coding == 1)  // (centre, size) -> corners
        v = Corners{
            {v.v[0] - v.v[2] / 2.0, v.v[1] - v.v[3] / 2.0, v.v[0] + v.v[2] / 2.0, v.v[1] + v.v[3] / 2.0}};
      return v;
    };
    std::vector<Candidate> cands;
    std::vector<Candidate> kept;
    std::vector<Corners> kept_boxes;
    for (int64_t b = 0; b < batch; ++b) {
      cands.clear();
      for (int64_t i = 0; i < n; ++i)
        for (int64_t c = 0; c < classes; ++c) {
          if (c == p.background_class) continue;
          const double s = static_cast<double>(T::load(scores.data, (b * n + i) * classes + c));
          if (s >= raw_threshold) cands.push_back({s, i, c});  // NaN never passes
        }
      // Best first; equal scores in (box, class) order.
      std::sort(cands.begin(), cands.end(), [](const Candidate& x, const Candidate& y) {
        if (x.score != y.score) return x.score > y.score;
        return x.box != y.box ? x.box < y.box : x.cls < y.cls;
      });
      if (static_cast<int64_t>(cands.size()) > kEfficientNmsMaxCandidates)
        cands.resize(kEfficientNmsMaxCandidates);
      kept.clear();
      kept_boxes.clear();
      for (const Candidate& cand : cands) {
        const Corners box = box_of(b, cand.box, cand.cls);
        bool suppressed = false;
        for (size_t j = 0; j < kept.size() && !suppressed; ++j)
          suppressed =
              (p.class_agnostic || kept[j].cls == cand.cls) && iou(kept_boxes[j], box) >= p.iou_threshold;
        if (suppressed) continue;
        if (static_cast<int64_t>(kept.size()) >= k) break;
        kept.push_back(cand);
        kept_boxes.push_back(box);
      }
      static_cast<int32_t*>(ctx.outputs[kNumDetections].data)[b] = static_cast<int32_t>(kept.size());
      for (size_t j = 0; j < kept.size(); ++j) {
        const int64_t slot = b * k + static_cast<int64_t>(j);
        for (int e = 0; e < 4; ++e) T::store(ctx.outputs[kDetBoxes].data, slot * 4 + e, kept_boxes[j].v[e]);
        const double s = kept[j].score;
        T::store(ctx.outputs[kDetScores].data, slot, p.score_activation ? 1.0 / (1.0 + std::exp(-s)) : s);
        static_cast<int32_t*>(ctx.outputs[kDetClasses].data)[slot] = static_cast<int32_t>(kept[j].cls);
      }
    }
    return Status::ok();
  });
}

#ifdef GRAFT_WITH_CUDA
static_assert(cuda::kEfficientNmsCudaMaxCandidates == kEfficientNmsMaxCandidates,
              "the CUDA kernel must examine as many candidates as the CPU reference");

// The CUDA kernel's scratch (candidate keys, indices and decoded boxes per image), from the shapes
// of 'scores' (batch, boxes, classes).
size_t workspace_bytes(const std::vector<ConcreteDesc>& inputs, const std::vector<ConcreteDesc>&,
                       const AttributeMap&) {
  if (inputs.size() <= kScores || inputs[kScores].dims.size() != 3) return 0;
  const auto& d = inputs[kScores].dims;
  return cuda::efficient_nms_workspace_bytes(d[0], d[1], d[2], kEfficientNmsMaxCandidates);
}

Status forward_cuda(const KernelContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Params p, params_of(*ctx.attrs));
  GRAFT_ASSIGN_OR_RETURN(Dims d, check_views(ctx, p, DeviceType::kCUDA));
  if (d.n * d.classes > std::numeric_limits<int32_t>::max() || d.batch > std::numeric_limits<int32_t>::max())
    return error(StatusCode::kUnsupported, kOpName, ": the CUDA kernel handles at most 2^31 - 1 images and 2^31 - 1 "
                 "(box, class) pairs per image, got ", d.batch, " images of ", d.n, " x ", d.classes);
  const size_t need = cuda::efficient_nms_workspace_bytes(d.batch, d.n, d.classes, kEfficientNmsMaxCandidates);
  if (ctx.workspace_size < need || (need > 0 && ctx.workspace == nullptr))
    return error(StatusCode::kInvalidArgument, kOpName, ": the CUDA kernel needs ", static_cast<uint64_t>(need),
                 " bytes of workspace (the op's workspace_fn), got ", static_cast<uint64_t>(ctx.workspace_size));
  cuda::EfficientNmsArgs a;
  a.batch = d.batch;
  a.boxes = d.n;
  a.classes = d.classes;
  a.per_class_boxes = d.per_class_boxes;
  a.anchor_rows = d.decode ? ctx.inputs[kAnchors].dims[0] : 0;
  a.background_class = p.background_class;
  a.box_coding = static_cast<int>(p.box_coding);
  a.score_activation = p.score_activation;
  a.class_agnostic = p.class_agnostic;
  a.raw_score_threshold = raw_threshold_of(p);
  a.iou_threshold = p.iou_threshold;
  a.max_output_boxes = p.max_output_boxes;
  a.max_candidates = kEfficientNmsMaxCandidates;
  const TensorView &boxes = ctx.inputs[kBoxes], &scores = ctx.inputs[kScores], &anchors = ctx.inputs[kAnchors];
  const TensorView& num = ctx.outputs[kNumDetections];
  const TensorView &det_boxes = ctx.outputs[kDetBoxes], &det_scores = ctx.outputs[kDetScores],
                   &det_classes = ctx.outputs[kDetClasses];
  auto stream = static_cast<cudaStream_t>(ctx.stream);
  cudaError_t e = cudaSuccess;
  switch (d.ft) {
    case DataType::kFloat32:
      e = cuda::efficient_nms_f32(a, boxes.as<float>(), scores.as<float>(), anchors.as<float>(), num.as<int32_t>(),
                                  det_boxes.as<float>(), det_scores.as<float>(), det_classes.as<int32_t>(),
                                  ctx.workspace, ctx.workspace_size, stream);
      break;
    case DataType::kFloat16:
      e = cuda::efficient_nms_f16(a, boxes.as<__half>(), scores.as<__half>(), anchors.as<__half>(),
                                  num.as<int32_t>(), det_boxes.as<__half>(), det_scores.as<__half>(),
                                  det_classes.as<int32_t>(), ctx.workspace, ctx.workspace_size, stream);
      break;
    case DataType::kFloat64:
      e = cuda::efficient_nms_f64(a, boxes.as<double>(), scores.as<double>(), anchors.as<double>(),
                                  num.as<int32_t>(), det_boxes.as<double>(), det_scores.as<double>(),
                                  det_classes.as<int32_t>(), ctx.workspace, ctx.workspace_size, stream);
      break;
    default:
      return error(StatusCode::kUnsupported, kOpName, ": no CUDA kernel for dtype ", dtype_name(d.ft));
  }
  if (e != cudaSuccess)
    return error(StatusCode::kRuntimeError, kOpName, ": kernel launch failed: ", cudaGetErrorString(e));
  return Status::ok();
}
#endif  // GRAFT_WITH_CUDA

}  // namespace

OpDef define_efficient_nms() {
  using DT = DataType;
  const std::vector<DT> dtypes = {DT::kFloat32, DT::kFloat16, DT::kFloat64};
  OpDef def(kOpName);
  def.domain("ai.onnx.contrib")
      .version("1")
      .plugin_namespace("")
      .doc(
          "Batched multi-class non-maximum suppression with fixed-size, zero-padded outputs (TensorRT's "
          "EfficientNMS plugin conventions): candidates above the score threshold, best first, greedy IoU "
          "suppression per class (or across classes), at most max_output_boxes per image.")
      .attr_float("score_threshold", 0.5f,
                  "candidates need a score >= this (after the sigmoid, when score_activation)")
      .range(-3.4e38, 3.4e38)
      .attr_float("iou_threshold", 0.5f,
                  "a box overlapping a kept box of its class with IoU >= this is dropped")
      .range(0.0, 1.0)
      .attr_int("max_output_boxes", 100, "detections per image (the outputs' second dimension)")
      .range(1, static_cast<double>(kEfficientNmsMaxOutputBoxes))
      .attr_int("background_class", -1, "class index never output; -1 for none")
      .range(-1, std::numeric_limits<int32_t>::max())
      .attr_int("box_coding", 0, "0: corners (x1, y1, x2, y2); 1: centre and size (x, y, w, h)")
      .allowed(std::vector<int64_t>{0, 1})
      .attr_int("score_activation", 0, "1: scores are logits; the sigmoid is applied to the output scores")
      .allowed(std::vector<int64_t>{0, 1})
      .attr_int("class_agnostic", 0, "1: one suppression across all classes")
      .allowed(std::vector<int64_t>{0, 1})
      .input("boxes", dtypes, "(B, N, 4) or per class (B, N, C, 4)")
      .input("scores", dtypes, "(B, N, C), dtype of boxes")
      .optional_input("anchors", dtypes,
                      "(1 or B, N, 4): boxes are decoded against these (fused box decoder)")
      .output("num_detections", {DT::kInt32}, "(B, 1)")
      .output("detection_boxes", dtypes, "(B, max_output_boxes, 4) corners")
      .output("detection_scores", dtypes, "(B, max_output_boxes)")
      .output("detection_classes", {DT::kInt32}, "(B, max_output_boxes)");
  for (DT t : dtypes) def.type_combination({t, t, t, DT::kInt32, t, t, DT::kInt32});
  def.shape_fn(shape_fn).dtype_fn(dtype_fn).kernel(Backend::kCPU, forward_cpu);
#ifdef GRAFT_WITH_CUDA
  // Every dtype: the CUDA kernel decides in double like the CPU reference.
  def.workspace_fn(workspace_bytes).kernel(Backend::kCUDA, forward_cuda);
#endif
  {
    AttributeMap ex;
    ex.set("score_threshold", 0.3f);
    ex.set("iou_threshold", 0.5f);
    ex.set("max_output_boxes", int64_t{10});
    def.example({std::vector<int64_t>{2, 30, 4}, std::vector<int64_t>{2, 30, 3}, std::nullopt}, ex)
        .example_range(0, 0.0, 1.0)
        .example_range(1, 0.0, 1.0);
  }
  return def;
}

// This folder's ops for register_graft_ops (ops/op_folder.h).
void append_efficient_nms_ops(FolderOps& out) {
  out.defs.push_back(define_efficient_nms());
}

}  // namespace graft
