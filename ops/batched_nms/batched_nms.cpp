// BatchedNMSDynamic_TRT and TRTBatchedNMS: definitions and the CPU reference kernel (README.md has
// the algorithm and what differs between the two names).
#include "ops/batched_nms/batched_nms.h"
#include "ops/op_folder.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "graft/kernel_dtype.h"

#ifdef GRAFT_WITH_CUDA
#include "ops/batched_nms/batched_nms_kernels.cuh"
#endif

namespace graft {
namespace {

constexpr const char* kTrtName = "BatchedNMSDynamic_TRT";
constexpr const char* kMmdeployName = "TRTBatchedNMS";
constexpr int kBoxes = 0, kScores = 1;

enum class Flavor { kTensorRt, kMmdeploy };

const char* name_of(Flavor f) { return f == Flavor::kTensorRt ? kTrtName : kMmdeployName; }

// The attribute names of each form, for what both have.
struct AttrNames {
  const char *background, *classes, *top_k, *keep, *score, *iou, *normalized, *clip;
  int64_t top_k_default, normalized_default;
};
constexpr AttrNames kTrtNames = {"backgroundLabelId", "numClasses", "topK", "keepTopK", "scoreThreshold",
                                 "iouThreshold", "isNormalized", "clipBoxes", 1, 1};
constexpr AttrNames kMmdeployNames = {"background_label_id", "num_classes", "topk", "keep_topk", "score_threshold",
                                      "iou_threshold", "is_normalized", "clip_boxes", -1, 0};

// The attributes of either name, in one form.
struct Params {
  Flavor flavor = Flavor::kTensorRt;
  AttrNames names = kTrtNames;         // for messages
  std::optional<bool> share_location;  // TensorRT's attribute; mmdeploy takes it from the boxes' shape
  int64_t background = -1, num_classes = 1, top_k = 1, keep_top_k = 1;
  double score_threshold = 0.0, iou_threshold = 0.5;
  bool normalized = true, clip = true, caffe = true, return_index = false;
};

Result<Params> params_of(Flavor flavor, const AttributeMap& a) {
  Params p;
  p.flavor = flavor;
  p.names = flavor == Flavor::kTensorRt ? kTrtNames : kMmdeployNames;
  const AttrNames& n = p.names;
  GRAFT_ASSIGN_OR_RETURN(p.background, a.get_int(n.background, -1));
  GRAFT_ASSIGN_OR_RETURN(p.num_classes, a.get_int(n.classes, 1));
  GRAFT_ASSIGN_OR_RETURN(p.top_k, a.get_int(n.top_k, n.top_k_default));
  GRAFT_ASSIGN_OR_RETURN(p.keep_top_k, a.get_int(n.keep, 1));
  GRAFT_ASSIGN_OR_RETURN(float score, a.get_float(n.score, 0.0f));
  GRAFT_ASSIGN_OR_RETURN(float iou, a.get_float(n.iou, 0.5f));
  GRAFT_ASSIGN_OR_RETURN(int64_t normalized, a.get_int(n.normalized, n.normalized_default));
  GRAFT_ASSIGN_OR_RETURN(int64_t clip, a.get_int(n.clip, 1));
  p.score_threshold = score;
  p.iou_threshold = iou;
  p.normalized = normalized != 0;
  p.clip = clip != 0;
  if (flavor == Flavor::kTensorRt) {
    GRAFT_ASSIGN_OR_RETURN(int64_t share, a.get_int("shareLocation", 1));
    GRAFT_ASSIGN_OR_RETURN(int64_t caffe, a.get_int("caffeSemantics", 1));
    p.share_location = share != 0;
    p.caffe = caffe != 0;
    // TensorRT's gather kernel writes nothing when keepTopK > topK; graft refuses the node instead.
    if (p.keep_top_k > p.top_k)
      return Status(error(StatusCode::kInvalidArgument, kTrtName, ": keepTopK (", p.keep_top_k,
                          ") must not exceed topK (", p.top_k, "), as TensorRT's plugin requires"))
          .with_attribute("keepTopK");
  } else {
    GRAFT_ASSIGN_OR_RETURN(int64_t ret, a.get_int("return_index", 0));
    p.return_index = ret != 0;
  }
  return p;
}

// Candidates per class that enter the suppression, for `n` boxes.
int64_t effective_top_k(const Params& p, int64_t n) {
  if (p.flavor == Flavor::kTensorRt) return std::min(p.top_k, n);
  return p.top_k > 0 && p.top_k <= n ? p.top_k : n;  // mmdeploy: topk <= 0 or above n means all
}

// ---- shapes -----------------------------------------------------------------------------------

Status shape_fn(Flavor flavor, ShapeContext& ctx) {
  const char* name = name_of(flavor);
  auto bad = [name](const char* input, auto&&... parts) {
    return error(StatusCode::kInvalidModel, name, ": input '", input, "' ", parts...);
  };
  GRAFT_ASSIGN_OR_RETURN(Params p, params_of(flavor, ctx.attrs()));
  const int box_rank = ctx.input_rank(kBoxes), score_rank = ctx.input_rank(kScores);
  if (box_rank != 3 && box_rank != 4)
    return bad("boxes", "must have shape (batch, boxes, 1 or classes, 4) or (batch, boxes, 4), got rank ", box_rank);
  auto known = [](const SymDim& d) { return d.constant_value(); };
  if (auto four = known(ctx.input_dim(kBoxes, -1)); four && *four != 4)
    return bad("boxes", "must have 4 coordinates in its last dimension, got ", *four);
  const bool scores_ok = score_rank == 3 || (flavor == Flavor::kTensorRt && score_rank == 4 &&
                                             known(ctx.input_dim(kScores, 3)).value_or(1) == 1);
  if (!scores_ok)
    return bad("scores", flavor == Flavor::kTensorRt ? "must have shape (batch, boxes, classes) or (batch, boxes, "
                                                       "classes, 1)"
                                                     : "must have shape (batch, boxes, classes)",
               ", got rank ", score_rank);
  auto disagree = [&](const SymDim& a, const SymDim& b) { return known(a) && known(b) && *known(a) != *known(b); };
  if (disagree(ctx.input_dim(kBoxes, 0), ctx.input_dim(kScores, 0)))
    return bad("scores", "has batch size ", *known(ctx.input_dim(kScores, 0)), " but 'boxes' has ",
               *known(ctx.input_dim(kBoxes, 0)));
  if (disagree(ctx.input_dim(kBoxes, 1), ctx.input_dim(kScores, 1)))
    return bad("scores", "has ", *known(ctx.input_dim(kScores, 1)), " boxes (dimension 1) but 'boxes' has ",
               *known(ctx.input_dim(kBoxes, 1)));
  if (auto c = known(ctx.input_dim(kScores, 2)); c && *c != p.num_classes)
    return Status(error(StatusCode::kInvalidModel, name, ": input 'scores' has ", *c, " classes but attribute ",
                        p.names.classes, " is ", p.num_classes))
        .with_attribute(p.names.classes);
  if (box_rank == 4) {
    if (auto q = known(ctx.input_dim(kBoxes, 2))) {
      const bool share = p.share_location.value_or(*q == 1);
      if (*q != (share ? 1 : p.num_classes))
        return bad("boxes", "has ", *q, " boxes per position (dimension 2); ",
                   share ? "with shared locations it must be 1" : "it must be 1 or the number of classes, ",
                   share ? "" : std::to_string(p.num_classes));
    }
  } else if (p.share_location == false) {
    return Status(error(StatusCode::kInvalidModel, name,
                        ": shareLocation is 0, so 'boxes' must have shape (batch, boxes, classes, 4)"))
        .with_attribute("shareLocation");
  }
  const SymDim batch = ctx.input_dim(kBoxes, 0);
  const SymDim k = ctx.constant(p.keep_top_k);
  if (flavor == Flavor::kTensorRt) {
    ctx.set_output(0, {batch, ctx.constant(1)});
    ctx.set_output(1, {batch, k, ctx.constant(4)});
    ctx.set_output(2, {batch, k});
    ctx.set_output(3, {batch, k});
  } else {
    if (p.return_index && ctx.outputs().size() < 3)
      return Status(error(StatusCode::kInvalidModel, name,
                          ": return_index is 1 but the node has no third output for the indices"))
          .with_attribute("return_index");
    ctx.set_output(0, {batch, k, ctx.constant(5)});
    ctx.set_output(1, {batch, k});
    ctx.set_output(2, {batch, k});
  }
  return Status::ok();
}

Result<std::vector<DataType>> dtype_fn(Flavor flavor, const std::vector<DataType>& in) {
  const DataType t = in.empty() ? DataType::kUndefined : in[0];
  if (flavor == Flavor::kTensorRt) return std::vector<DataType>{DataType::kInt32, t, t, t};
  return std::vector<DataType>{t, DataType::kInt32, DataType::kInt32};
}

// ---- kernel -----------------------------------------------------------------------------------

struct Box {
  double v[4];
};

Box ordered(const Box& c) {
  return {{std::min(c.v[0], c.v[2]), std::min(c.v[1], c.v[3]), std::max(c.v[0], c.v[2]), std::max(c.v[1], c.v[3])}};
}

// How the IoU is computed: TensorRT orders each box's corners and, for boxes not normalized, adds
// 1 to widths and heights (Caffe's pixel convention); mmdeploy's kernel takes the boxes as given.
struct IouRule {
  bool order_corners = true;
  double size_offset = 0.0, intersection_offset = 0.0;
};

IouRule iou_rule(const Params& p) {
  if (p.flavor == Flavor::kMmdeploy) return {false, 0.0, 0.0};
  return {true, p.normalized ? 0.0 : 1.0, !p.normalized && p.caffe ? 1.0 : 0.0};
}

double area(const Box& b, double offset) {
  if (b.v[2] < b.v[0] || b.v[3] < b.v[1]) return 0.0;
  return ((b.v[2] - b.v[0]) + offset) * ((b.v[3] - b.v[1]) + offset);
}

// IoU of kept box `p` and candidate `q` (the CUDA kernel repeats this operation order).
double iou(const IouRule& r, Box p, Box q) {
  if (r.order_corners) {
    p = ordered(p);
    q = ordered(q);
  }
  double w, h;
  if (q.v[0] > p.v[2] || q.v[2] < p.v[0] || q.v[1] > p.v[3] || q.v[3] < p.v[1]) {
    w = h = 0.0 + r.intersection_offset;  // disjoint: TensorRT still adds the offset
  } else {
    w = (std::min(p.v[2], q.v[2]) - std::max(p.v[0], q.v[0])) + r.intersection_offset;
    h = (std::min(p.v[3], q.v[3]) - std::max(p.v[1], q.v[1])) + r.intersection_offset;
  }
  if (!(w > 0.0) || !(h > 0.0)) return 0.0;
  const double inter = w * h;
  return inter / ((area(p, r.size_offset) + area(q, r.size_offset)) - inter);
}

double clip01(double x) { return x < 0.0 ? 0.0 : (x > 1.0 ? 1.0 : x); }

// The sizes of one call, after check_views.
struct Dims {
  int64_t batch = 0, n = 0, classes = 0;
  bool share = true;
  DataType ft = DataType::kUndefined;
};

Result<Dims> check_views(const KernelContext& ctx, const Params& p, std::optional<DeviceType> device) {
  const char* name = name_of(p.flavor);
  const bool trt = p.flavor == Flavor::kTensorRt;
  auto bad = [name](auto&&... parts) { return error(StatusCode::kInvalidArgument, name, ": ", parts...); };
  if (ctx.inputs.size() != 2 || (trt ? ctx.outputs.size() != 4 : ctx.outputs.size() < 2 || ctx.outputs.size() > 3))
    return bad("kernel expects 2 inputs and ", trt ? "4" : "2 or 3", " outputs, got ", ctx.inputs.size(), " and ",
               ctx.outputs.size());
  const TensorView &boxes = ctx.inputs[kBoxes], &scores = ctx.inputs[kScores];
  const bool scores_ok = scores.rank() == 3 || (trt && scores.rank() == 4 && scores.dims[3] == 1);
  if (!scores_ok) return bad("input 'scores' must have shape (batch, boxes, classes)");
  Dims d;
  d.batch = scores.dims[0];
  d.n = scores.dims[1];
  d.classes = scores.dims[2];
  if (d.classes != p.num_classes)
    return bad("input 'scores' has ", d.classes, " classes but ", p.names.classes, " is ", p.num_classes);
  const int64_t q = boxes.rank() == 4 ? boxes.dims[2] : 1;
  d.share = p.share_location.value_or(q == 1);
  const bool boxes_ok = (boxes.rank() == 3 && d.share && boxes.dims == std::vector<int64_t>{d.batch, d.n, 4}) ||
                        (boxes.rank() == 4 && boxes.dims == std::vector<int64_t>{d.batch, d.n, d.share ? 1 : d.classes, 4});
  if (!boxes_ok) return bad("input 'boxes' must have shape (batch, boxes, 1 or classes, 4) matching 'scores'");
  d.ft = scores.dtype;
  if (boxes.dtype != d.ft) return bad("inputs 'boxes' and 'scores' must share one dtype");
  const int64_t k = p.keep_top_k;
  std::vector<std::vector<int64_t>> out_dims;
  std::vector<DataType> out_types;
  if (trt) {
    out_dims = {{d.batch, 1}, {d.batch, k, 4}, {d.batch, k}, {d.batch, k}};
    out_types = {DataType::kInt32, d.ft, d.ft, d.ft};
  } else {
    out_dims = {{d.batch, k, 5}, {d.batch, k}, {d.batch, k}};
    out_types = {d.ft, DataType::kInt32, DataType::kInt32};
  }
  for (size_t o = 0; o < ctx.outputs.size(); ++o)
    if (ctx.outputs[o].dims != out_dims[o] || ctx.outputs[o].dtype != out_types[o] || !ctx.outputs[o].data)
      return bad("output ", o, " must be ", dtype_name(out_types[o]), " of shape (batch, ",
                 o == 0 && trt ? "1)" : "keep_topk, ...)");
  if (p.return_index && ctx.outputs.size() < 3) return bad("return_index is 1 but there is no index output");
  if (device) {
    for (const TensorView* t : {&boxes, &scores})
      if (t->device != *device) return bad("input in ", device_name(t->device), " memory, the kernel needs ",
                                           device_name(*device));
    for (const TensorView& t : ctx.outputs)
      if (t.device != *device) return bad("output in ", device_name(t.device), " memory, the kernel needs ",
                                          device_name(*device));
  }
  return d;
}

Status forward_cpu(Flavor flavor, const KernelContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Params p, params_of(flavor, *ctx.attrs));
  GRAFT_ASSIGN_OR_RETURN(Dims d, check_views(ctx, p, std::nullopt));
  const bool trt = flavor == Flavor::kTensorRt;
  const TensorView &boxes = ctx.inputs[kBoxes], &scores = ctx.inputs[kScores];
  const int64_t n = d.n, classes = d.classes, k = p.keep_top_k, top_k = effective_top_k(p, n);
  const IouRule rule = iou_rule(p);
  const bool with_index = !trt && ctx.outputs.size() == 3;
  return kernel::visit_float_dtype(name_of(flavor), d.ft, [&](auto tr) -> Status {
    using T = decltype(tr);
    auto box_at = [&](int64_t b, int64_t i, int64_t c) {
      const int64_t at = d.share ? (b * n + i) * 4 : ((b * n + i) * classes + c) * 4;
      return Box{{static_cast<double>(T::load(boxes.data, at)), static_cast<double>(T::load(boxes.data, at + 1)),
                  static_cast<double>(T::load(boxes.data, at + 2)), static_cast<double>(T::load(boxes.data, at + 3))}};
    };
    auto score_at = [&](int64_t b, int64_t i, int64_t c) {
      return static_cast<double>(T::load(scores.data, (b * n + i) * classes + c));
    };
    struct Kept {
      double score;
      int64_t cls, box;
    };
    std::vector<std::pair<double, int64_t>> cands;  // (score, box) of one class
    std::vector<int64_t> class_kept;
    std::vector<Kept> kept;
    for (int64_t b = 0; b < d.batch; ++b) {
      kept.clear();
      for (int64_t c = 0; c < classes; ++c) {
        if (c == p.background) continue;
        cands.clear();
        for (int64_t i = 0; i < n; ++i)
          if (const double s = score_at(b, i, c); s > p.score_threshold) cands.push_back({s, i});  // NaN fails
        // Best first; equal scores in box order. The best top_k enter the suppression.
        std::stable_sort(cands.begin(), cands.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
        if (static_cast<int64_t>(cands.size()) > top_k) cands.resize(static_cast<size_t>(top_k));
        class_kept.clear();
        for (const auto& [s, i] : cands) {
          const Box q = box_at(b, i, c);
          bool suppressed = false;
          for (size_t j = 0; j < class_kept.size() && !suppressed; ++j)
            suppressed = iou(rule, box_at(b, class_kept[j], c), q) > p.iou_threshold;
          if (suppressed) continue;
          class_kept.push_back(i);
          kept.push_back({s, c, i});
        }
      }
      // Across classes: best first; equal scores in (class, box) order.
      std::stable_sort(kept.begin(), kept.end(), [](const Kept& x, const Kept& y) { return x.score > y.score; });
      const int64_t found = std::min<int64_t>(k, static_cast<int64_t>(kept.size()));
      if (trt) static_cast<int32_t*>(ctx.outputs[0].data)[b] = static_cast<int32_t>(found);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t slot = b * k + j;
        Box v{{0.0, 0.0, 0.0, 0.0}};
        double s = 0.0;
        int64_t cls = -1, index = -1;
        if (j < found) {
          const Kept& e = kept[static_cast<size_t>(j)];
          v = box_at(b, e.box, e.cls);
          if (p.clip)
            for (double& x : v.v) x = clip01(x);
          s = e.score;
          cls = e.cls;
          index = d.share ? e.box : e.cls * n + e.box;  // mmdeploy's index into its (class, box) layout
        }
        if (trt) {
          for (int e = 0; e < 4; ++e) T::store(ctx.outputs[1].data, slot * 4 + e, v.v[e]);
          T::store(ctx.outputs[2].data, slot, s);
          T::store(ctx.outputs[3].data, slot, static_cast<double>(cls));
        } else {
          for (int e = 0; e < 4; ++e) T::store(ctx.outputs[0].data, slot * 5 + e, v.v[e]);
          T::store(ctx.outputs[0].data, slot * 5 + 4, s);
          static_cast<int32_t*>(ctx.outputs[1].data)[slot] = static_cast<int32_t>(cls);
          if (with_index) static_cast<int32_t*>(ctx.outputs[2].data)[slot] = static_cast<int32_t>(index);
        }
      }
    }
    return Status::ok();
  });
}

#ifdef GRAFT_WITH_CUDA
// The CUDA kernel's scratch, from the shapes of 'scores' (batch, boxes, classes[, 1]) and top_k.
size_t workspace_bytes(Flavor flavor, const std::vector<ConcreteDesc>& inputs, const AttributeMap& attrs) {
  if (inputs.size() <= kScores || inputs[kScores].dims.size() < 3) return 0;
  auto p = params_of(flavor, attrs);
  if (!p.is_ok()) return 0;
  const auto& d = inputs[kScores].dims;
  return cuda::batched_nms_workspace_bytes(d[0], d[1], d[2], std::max<int64_t>(1, effective_top_k(*p, d[1])));
}

Status forward_cuda(Flavor flavor, const KernelContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Params p, params_of(flavor, *ctx.attrs));
  GRAFT_ASSIGN_OR_RETURN(Dims d, check_views(ctx, p, DeviceType::kCUDA));
  const char* name = name_of(flavor);
  constexpr int64_t kMaxIndex = std::numeric_limits<int32_t>::max();
  if (d.n > kMaxIndex / d.classes || d.batch > kMaxIndex / d.classes)
    return error(StatusCode::kUnsupported, name, ": the CUDA kernel handles at most 2^31 - 1 (box, class) pairs and "
                 "(image, class) pairs, got ", d.batch, " images of ", d.n, " boxes x ", d.classes, " classes");
  cuda::BatchedNmsArgs a;
  a.batch = d.batch;
  a.boxes = d.n;
  a.classes = d.classes;
  a.share_location = d.share;
  a.background_class = p.background;
  a.top_k = std::max<int64_t>(1, effective_top_k(p, d.n));
  a.keep_top_k = p.keep_top_k;
  a.score_threshold = p.score_threshold;
  a.iou_threshold = p.iou_threshold;
  const IouRule rule = iou_rule(p);
  a.order_corners = rule.order_corners;
  a.size_offset = rule.size_offset;
  a.intersection_offset = rule.intersection_offset;
  a.clip_boxes = p.clip;
  const bool trt = flavor == Flavor::kTensorRt;
  a.layout = trt ? cuda::BatchedNmsLayout::kTensorRt : cuda::BatchedNmsLayout::kMmdeploy;
  const size_t need = cuda::batched_nms_workspace_bytes(d.batch, d.n, d.classes, a.top_k);
  if (ctx.workspace_size < need || (need > 0 && ctx.workspace == nullptr))
    return error(StatusCode::kInvalidArgument, name, ": the CUDA kernel needs ", static_cast<uint64_t>(need),
                 " bytes of workspace (the op's workspace_fn), got ", static_cast<uint64_t>(ctx.workspace_size));
  auto stream = static_cast<cudaStream_t>(ctx.stream);
  auto run = [&](auto* tag) -> cudaError_t {
    using T = std::remove_pointer_t<decltype(tag)>;
    cuda::BatchedNmsOutputs<T> out;
    if (trt) {
      out.num_detections = ctx.outputs[0].as<int32_t>();
      out.boxes = ctx.outputs[1].as<T>();
      out.scores = ctx.outputs[2].as<T>();
      out.classes = ctx.outputs[3].as<T>();
    } else {
      out.dets = ctx.outputs[0].as<T>();
      out.labels = ctx.outputs[1].as<int32_t>();
      out.index = ctx.outputs.size() == 3 ? ctx.outputs[2].as<int32_t>() : nullptr;
    }
    const T* boxes = ctx.inputs[kBoxes].as<T>();
    const T* scores = ctx.inputs[kScores].as<T>();
    if constexpr (std::is_same_v<T, float>)
      return cuda::batched_nms_f32(a, boxes, scores, out, ctx.workspace, ctx.workspace_size, stream);
    else if constexpr (std::is_same_v<T, double>)
      return cuda::batched_nms_f64(a, boxes, scores, out, ctx.workspace, ctx.workspace_size, stream);
    else
      return cuda::batched_nms_f16(a, boxes, scores, out, ctx.workspace, ctx.workspace_size, stream);
  };
  cudaError_t e = cudaSuccess;
  switch (d.ft) {
    case DataType::kFloat32: e = run(static_cast<float*>(nullptr)); break;
    case DataType::kFloat16: e = run(static_cast<__half*>(nullptr)); break;
    case DataType::kFloat64: e = run(static_cast<double*>(nullptr)); break;
    default: return error(StatusCode::kUnsupported, name, ": no CUDA kernel for dtype ", dtype_name(d.ft));
  }
  if (e != cudaSuccess)
    return error(StatusCode::kRuntimeError, name, ": kernel launch failed: ", cudaGetErrorString(e));
  return Status::ok();
}
#endif  // GRAFT_WITH_CUDA

// What both definitions share: dtypes, kernels, shape and dtype functions.
void finish(OpDef& def, Flavor flavor, std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> examples,
            const AttributeMap& example_attrs) {
  using DT = DataType;
  for (DT t : {DT::kFloat32, DT::kFloat16, DT::kFloat64}) {
    if (flavor == Flavor::kTensorRt)
      def.type_combination({t, t, DT::kInt32, t, t, t});
    else
      def.type_combination({t, t, t, DT::kInt32, DT::kInt32});
  }
  def.shape_fn([flavor](ShapeContext& ctx) { return shape_fn(flavor, ctx); })
      .dtype_fn([flavor](const std::vector<DT>& in, const AttributeMap&) { return dtype_fn(flavor, in); })
      .kernel(Backend::kCPU, [flavor](const KernelContext& ctx) { return forward_cpu(flavor, ctx); });
#ifdef GRAFT_WITH_CUDA
  // Every dtype: the CUDA kernel decides in double like the CPU reference.
  def.workspace_fn([flavor](const std::vector<ConcreteDesc>& in, const std::vector<ConcreteDesc>&,
                            const AttributeMap& attrs) { return workspace_bytes(flavor, in, attrs); })
      .kernel(Backend::kCUDA, [flavor](const KernelContext& ctx) { return forward_cuda(flavor, ctx); });
#endif
  // Scores in [0, 1); boxes normalized in TensorRT's form, in pixels (up to 10) in mmdeploy's, whose
  // export writes clip_boxes 0.
  for (auto& [boxes, scores] : examples)
    def.example({boxes, scores}, example_attrs)
        .example_range(0, 0.0, flavor == Flavor::kTensorRt ? 1.0 : 10.0)
        .example_range(1, 0.0, 1.0);
}

constexpr double kInt32Max = std::numeric_limits<int32_t>::max();

}  // namespace

OpDef define_batched_nms_dynamic_trt() {
  using DT = DataType;
  const std::vector<DT> dtypes = {DT::kFloat32, DT::kFloat16, DT::kFloat64};
  OpDef def(kTrtName);
  def.domain("ai.onnx.contrib")
      .version("1")
      .plugin_namespace("")
      .doc(
          "Batched multi-class NMS with TensorRT's BatchedNMSDynamic_TRT conventions: per class the topK best "
          "candidates above the score threshold, greedy IoU suppression per class, then the keepTopK best of "
          "all classes per image, zero padded (classes -1), as floats.")
      .attr_int("shareLocation", std::nullopt, "1: one box per position for every class; 0: one per class")
      .allowed(std::vector<int64_t>{0, 1})
      .attr_int("backgroundLabelId", std::nullopt, "class never output; -1 for none")
      .range(-1, kInt32Max)
      .attr_int("numClasses", std::nullopt, "classes in 'scores' (its dimension 2)")
      .range(1, kInt32Max)
      .attr_int("topK", std::nullopt, "candidates per class that enter the suppression")
      .range(1, static_cast<double>(kBatchedNmsMaxTopK))
      .attr_int("keepTopK", std::nullopt, "detections per image (the outputs' second dimension), <= topK")
      .range(1, static_cast<double>(kBatchedNmsMaxTopK))
      .attr_float("scoreThreshold", std::nullopt, "candidates have a score > this")
      .range(-3.4e38, 3.4e38)
      .attr_float("iouThreshold", std::nullopt, "a candidate overlapping a kept box of its class with IoU > this is dropped")
      .range(0.0, 1.0)
      .attr_int("isNormalized", 1, "0: pixel coordinates, areas count the end pixel (width + 1)")
      .allowed(std::vector<int64_t>{0, 1})
      .attr_int("clipBoxes", 1, "1: output boxes are clamped to [0, 1]")
      .allowed(std::vector<int64_t>{0, 1})
      .attr_int("scoreBits", 16, "accepted for TensorRT's float16 radix sort; graft always sorts exact scores")
      .attr_int("caffeSemantics", 1, "with isNormalized 0: the intersection also counts the end pixel")
      .allowed(std::vector<int64_t>{0, 1})
      .input("boxes", dtypes, "(B, N, 1 or numClasses, 4) corners")
      .input("scores", dtypes, "(B, N, numClasses) or (B, N, numClasses, 1)")
      .output("num_detections", {DT::kInt32}, "(B, 1)")
      .output("nmsed_boxes", dtypes, "(B, keepTopK, 4)")
      .output("nmsed_scores", dtypes, "(B, keepTopK)")
      .output("nmsed_classes", dtypes, "(B, keepTopK), class index as a float; -1 in the padding");
  AttributeMap ex;
  ex.set("shareLocation", int64_t{1});
  ex.set("backgroundLabelId", int64_t{-1});
  ex.set("numClasses", int64_t{3});
  ex.set("topK", int64_t{20});
  ex.set("keepTopK", int64_t{10});
  ex.set("scoreThreshold", 0.3f);
  ex.set("iouThreshold", 0.5f);
  finish(def, Flavor::kTensorRt, {{{2, 30, 1, 4}, {2, 30, 3}}}, ex);
  return def;
}

OpDef define_trt_batched_nms() {
  using DT = DataType;
  const std::vector<DT> dtypes = {DT::kFloat32, DT::kFloat16, DT::kFloat64};
  OpDef def(kMmdeployName);
  def.domain("mmdeploy")
      .version("1")
      .plugin_namespace("")
      .doc(
          "Batched multi-class NMS with mmdeploy's TRTBatchedNMS conventions: per class the topk best candidates "
          "above the score threshold, greedy IoU suppression per class, then the keep_topk best of all classes "
          "per image as (box, score) rows and labels (-1 in the padding), optionally with box indices.")
      .attr_int("num_classes", std::nullopt, "classes in 'scores' (its dimension 2)")
      .range(1, kInt32Max)
      .attr_int("background_label_id", -1, "class never output; -1 for none")
      .range(-1, kInt32Max)
      .attr_int("topk", std::nullopt, "candidates per class that enter the suppression; <= 0 or above N: all")
      .range(-kInt32Max, kInt32Max)
      .attr_int("keep_topk", std::nullopt, "detections per image (the outputs' second dimension)")
      .range(1, static_cast<double>(kBatchedNmsMaxKeepTopK))
      .attr_float("score_threshold", std::nullopt, "candidates have a score > this")
      .range(-3.4e38, 3.4e38)
      .attr_float("iou_threshold", std::nullopt, "a candidate overlapping a kept box of its class with IoU > this is dropped")
      .range(0.0, 1.0)
      .attr_int("is_normalized", 0, "accepted; mmdeploy's kernel computes the IoU the same way either way")
      .allowed(std::vector<int64_t>{0, 1})
      .attr_int("clip_boxes", 1, "1: output boxes are clamped to [0, 1] (mmdeploy's export writes 0)")
      .allowed(std::vector<int64_t>{0, 1})
      .attr_int("return_index", 0, "1: the node's third output gets each detection's box index")
      .allowed(std::vector<int64_t>{0, 1})
      .input("boxes", dtypes, "(B, N, 4) or (B, N, 1 or num_classes, 4) corners")
      .input("scores", dtypes, "(B, N, num_classes)")
      .output("dets", dtypes, "(B, keep_topk, 5): x1, y1, x2, y2, score; zeros in the padding")
      .output("labels", {DT::kInt32}, "(B, keep_topk); -1 in the padding")
      .optional_output("index", {DT::kInt32},
                       "(B, keep_topk): box index (class * N + box with per-class boxes); -1 in the padding");
  AttributeMap ex;
  ex.set("num_classes", int64_t{3});
  ex.set("topk", int64_t{20});
  ex.set("keep_topk", int64_t{10});
  ex.set("score_threshold", 0.3f);
  ex.set("iou_threshold", 0.5f);
  ex.set("clip_boxes", int64_t{0});
  ex.set("return_index", int64_t{1});
  finish(def, Flavor::kMmdeploy, {{{2, 30, 4}, {2, 30, 3}}}, ex);
  return def;
}

// This folder's ops for register_graft_ops (ops/op_folder.h).
void append_batched_nms_ops(FolderOps& out) {
  out.defs.push_back(define_batched_nms_dynamic_trt());
  out.defs.push_back(define_trt_batched_nms());
}

}  // namespace graft
