// GraftConv's CUDA op (graft_conv.cpp defines it), and through it the one cuDNN convolution that
// ONNX Conv runs too (cudnn_conv_supports, cudnn_conv_run and cudnn_conv_workspace, declared in
// src/backends/cuda/cuda_ops.h):
//
// GraftConv runs on cuDNN in NCHW or NHWC with its epilogue (bias, residual Z, Relu) either inside
// cuDNN's fused cudnnConvolutionBiasActivationForward or as one elementwise kernel after
// cudnnConvolutionForward, or, for depthwise (NHWC and NCHW), NHWC pointwise and float16 NHWC
// implicit-GEMM problems of up to 1024 reduction terms (conv_mma_kernels.cu), on graft's own kernels
// with the epilogue inside. Which algorithm and which of these is fastest
// depends on the shapes, so the builder times them (tactic timing): the choice is looked up by a
// key naming the problem in the engine's TacticTable (stored in the plan), else in the timing cache
// file, else measured when the builder is tuning, else cuDNN's heuristic first choice is used (graft's
// depthwise kernels for depthwise problems).
#include "backends/cuda/cuda_ops.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ops/fused_conv/conv_mma_kernels.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "ops/fused_conv/depthwise_tile_kernels.cuh"
#include "ops/nn/nn_kernels.cuh"
#include "backends/cuda/shape_kernels.cuh"
#include "ops/layout.h"
#include "ops/window_attrs.h"
#include "plan/tactics.h"

#include "backends/cuda/cudnn_wrap.h"

namespace graft::cuda {

using namespace util;  // NOLINT(build/namespaces)

namespace {

// cuDNN may use up to this much scratch per convolution; algorithms that want more are skipped.
constexpr size_t kGraftConvWorkspace = size_t(64) << 20;

struct ConvGeometry {
  bool nhwc = false;
  bool float16 = false;  // X, W and Y are float16 (graft's tensor-core kernel takes nothing else)
  ConvEpilogueActivation act;
  ConvEpilogueActivation in_act;  // applied to X's elements (NHWC depthwise kernels only)
  int64_t n = 0, c = 0, h = 0, w = 0;  // input
  int64_t m = 0, oh = 0, ow = 0;       // output
  int64_t kh = 1, kw = 1, group = 1;
  int64_t ph = 0, pw = 0, sh = 1, sw = 1, dh = 1, dw = 1;
};

// Geometry from the concrete shapes; errors unless the padding is symmetric (what cuDNN takes).
Status conv_geometry(const CudaExec& ex, const Tensor& X, const Tensor& W, const Tensor& Y, ConvGeometry* g) {
  const AttributeMap& a = *ex.ctx->attrs;
  GRAFT_RETURN_IF_ERROR(read_layout(a, &g->nhwc));
  GRAFT_RETURN_IF_ERROR(read_activation(a, &g->act));
  GRAFT_RETURN_IF_ERROR(read_activation(a, &g->in_act, "input_"));
  if (X.rank() != 4 || W.rank() != 4 || Y.rank() != 4) return fail(ex, StatusCode::kInvalidModel, "X, W and Y must have rank 4");
  const auto& x = X.dims();
  const auto& w = W.dims();
  const auto& y = Y.dims();
  g->n = x[0];
  g->float16 = X.dtype() == DataType::kFloat16 && W.dtype() == DataType::kFloat16 && Y.dtype() == DataType::kFloat16;
  if (g->nhwc) {
    g->h = x[1]; g->w = x[2]; g->c = x[3];
    g->oh = y[1]; g->ow = y[2]; g->m = y[3];
    g->kh = w[1]; g->kw = w[2];
  } else {
    g->c = x[1]; g->h = x[2]; g->w = x[3];
    g->m = y[1]; g->oh = y[2]; g->ow = y[3];
    g->kh = w[2]; g->kw = w[3];
  }
  GRAFT_ASSIGN_OR_RETURN(g->group, a.get_int("group", 1));
  std::vector<int64_t> wk{g->kh, g->kw};
  GRAFT_ASSIGN_OR_RETURN(graft::WindowAttrs wa, graft::parse_window_attrs(a, 2, &wk, false));
  std::vector<int64_t> begins, ends;
  graft::resolve_pads(wa, {g->h, g->w}, &begins, &ends);
  if (begins != ends)
    return fail(ex, StatusCode::kUnsupported, "asymmetric padding is not handled by cuDNN (pads ", begins[0], ",",
                begins[1], " / ", ends[0], ",", ends[1], ")");
  g->ph = begins[0]; g->pw = begins[1];
  g->sh = wa.strides[0]; g->sw = wa.strides[1];
  g->dh = wa.dilations[0]; g->dw = wa.dilations[1];
  // A 1x1 convolution over a 1x1 image (a squeeze-excitation gate the NHWC pass keeps in its region
  // whatever its channel counts) has the same bytes in both layouts, filter included: run it as
  // NCHW, where cuDNN takes any channel count.
  if (g->nhwc && g->h == 1 && g->w == 1 && g->oh == 1 && g->ow == 1 && g->kh == 1 && g->kw == 1) g->nhwc = false;
  return Status::ok();
}

// cuDNN's convolutions take float32 or float16: GraftConv's key (input 0; W, B and Z have its dtype).
constexpr std::initializer_list<DataType> kCudnnConvDtypes = {DataType::kFloat32, DataType::kFloat16};

// All but the key's check (cudnn_conv_supports adds it for Conv, whose own key also has bfloat16).
bool graft_conv_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "GraftConv needs X and W");
  if (!inputs_share_dtype(n, {1, 2, 3}, why)) return false;
  if (n.input(0)->desc.rank() != 4) return reject(why, "only 2-D convolutions are handled (rank 4)");
#ifndef GRAFT_WITH_CUDNN
  return reject(why, "graft was built without cuDNN");
#else
  auto pads = n.attrs.get_ints("pads", {});
  if (pads && pads->size() == 4 && ((*pads)[0] != (*pads)[2] || (*pads)[1] != (*pads)[3]))
    return reject(why, "asymmetric pads are not handled by cuDNN");
  auto ap = n.attrs.get_string("auto_pad", "NOTSET");
  if (ap && (*ap == "SAME_UPPER" || *ap == "SAME_LOWER")) return reject(why, "auto_pad SAME_* may pad asymmetrically");
  return true;
#endif
}

// Variant 5 (below) stages NCHW copies of X, Y and W in the workspace ahead of cuDNN's scratch.
constexpr size_t kStageAlign = 256;
size_t stage_bytes(int64_t elements, DataType t) {
  const size_t b = static_cast<size_t>(elements) * dtype_size(t);
  return (b + kStageAlign - 1) / kStageAlign * kStageAlign;
}

// A grouped NHWC convolution's three staged copies (0 for any other convolution).
size_t grouped_nhwc_stage_bytes(const Node& n, const Tensor* X, const Tensor* W) {
  bool nhwc = false;
  if (!X || !W || X->rank() != 4 || W->rank() != 4 || !read_layout(n.attrs, &nhwc).is_ok() || !nhwc) return 0;
  auto group = n.attrs.get_int("group", 1);
  const auto& x = X->dims();
  const auto& w = W->dims();
  if (!group || *group <= 1 || (*group == x[3] && w[0] == x[3])) return 0;  // not grouped, or depthwise
  std::vector<int64_t> wk{w[1], w[2]};
  auto wa = graft::parse_window_attrs(n.attrs, 2, &wk, false);
  if (!wa) return 0;
  int64_t out_hw = 1;
  for (size_t i = 0; i < 2; ++i) {  // the output extents as Conv's shape inference gives them
    const Dim d = graft::window_output_dim(*wa, i, Dim(x[1 + i]));
    if (!d.is_const() || d.value() < 1) return 0;
    out_hw *= d.value();
  }
  return stage_bytes(X->numel(), X->dtype()) + stage_bytes(x[0] * w[0] * out_hw, X->dtype()) +
         stage_bytes(W->numel(), W->dtype());
}

size_t graft_conv_workspace(const Node& n, const std::vector<const Tensor*>& ins, const std::vector<Tensor>& /*outputs*/) {
  return kGraftConvWorkspace +
         grouped_nhwc_stage_bytes(n, ins.size() > 0 ? ins[0] : nullptr, ins.size() > 1 ? ins[1] : nullptr);
}

#ifdef GRAFT_WITH_CUDNN

// Descriptors of one GraftConv call, destroyed with it.
struct ConvDescs {
  DnnTensor x, y, b;
  DnnFilter w;
  DnnConvolution conv;
  DnnActivation act;
};

Status make_descs(const CudaExec& ex, const ConvGeometry& g, DataType dt, ConvDescs* d) {
  const cudnnDataType_t t = dnn_data_type(dt);
  const cudnnTensorFormat_t f = g.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  GRAFT_RETURN_IF_ERROR(dnn_create(&d->x, ex));
  GRAFT_RETURN_IF_ERROR(dnn_create(&d->y, ex));
  GRAFT_RETURN_IF_ERROR(dnn_create(&d->b, ex));
  GRAFT_RETURN_IF_ERROR(dnn_create(&d->w, ex));
  GRAFT_RETURN_IF_ERROR(dnn_create(&d->conv, ex));
  GRAFT_RETURN_IF_ERROR(dnn_create(&d->act, ex));
  GRAFT_RETURN_IF_ERROR(dnn_set_tensor_4d(d->x, f, t, g.n, g.c, g.h, g.w, ex, "x descriptor"));
  GRAFT_RETURN_IF_ERROR(dnn_set_tensor_4d(d->y, f, t, g.n, g.m, g.oh, g.ow, ex, "y descriptor"));
  GRAFT_RETURN_IF_ERROR(dnn_set_tensor_4d(d->b, f, t, 1, g.m, 1, 1, ex, "bias descriptor"));
  GRAFT_RETURN_IF_ERROR(dnn_set_filter_4d(d->w, t, f, g.m, g.c / g.group, g.kh, g.kw, ex, "w descriptor"));
  GRAFT_RETURN_IF_ERROR(dnn_set_convolution_2d(d->conv, g.ph, g.pw, g.sh, g.sw, g.dh, g.dw, g.group, dt, ex,
                                               "convolution descriptor"));
  GRAFT_RETURN_IF_ERROR(dnn_status(cudnnSetActivationDescriptor(d->act.get(), g.act.kind == ConvActivation::kRelu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                                                                CUDNN_NOT_PROPAGATE_NAN, 0.0),
                                   ex, "activation descriptor"));
  return Status::ok();
}

// The activation's part of a tactic key; Clip's bounds are part of the problem (they change nothing
// about speed, but keys name problems exactly).
std::string activation_key(const ConvEpilogueActivation& a) {
  switch (a.kind) {
    case ConvActivation::kRelu: return ";relu";
    case ConvActivation::kHardSwish: return ";hardswish";
    case ConvActivation::kClip: return ";clip" + std::to_string(a.lo) + "," + std::to_string(a.hi);
    case ConvActivation::kSilu: return ";silu";
    case ConvActivation::kSigmoid: return ";sigmoid";
    case ConvActivation::kHardSigmoid: return ";hardsigmoid" + std::to_string(a.lo) + "," + std::to_string(a.hi);
    case ConvActivation::kNone: break;
  }
  return "";
}

std::string tactic_key(const ConvGeometry& g, DataType dt, bool bias, bool z) {
  static const std::string device = device_arch_tag() + ";cudnn" + std::to_string(cudnnGetVersion());
  auto s = [](int64_t v) { return std::to_string(v); };
  return "conv2d;" + device + ";" + dtype_name(dt) + ";" + (g.nhwc ? "nhwc" : "nchw") + ";x" + s(g.n) + "x" + s(g.c) +
         "x" + s(g.h) + "x" + s(g.w) + ";w" + s(g.m) + "x" + s(g.kh) + "x" + s(g.kw) + ";g" + s(g.group) + ";p" +
         s(g.ph) + "," + s(g.pw) + ";s" + s(g.sh) + "," + s(g.sw) + ";d" + s(g.dh) + "," + s(g.dw) +
         (bias ? ";bias" : "") + (z ? ";res" : "") + activation_key(g.act) +
         (g.in_act.kind != ConvActivation::kNone ? ";in" + activation_key(g.in_act) : "");
}

struct ConvCall {
  const CudaExec* ex;
  const ConvGeometry* g;
  const ConvDescs* d;
  const Tensor *X, *W, *B, *Z;
  Tensor* Y;
  const ConvDescs* d_nchw = nullptr;  // variant 5's NCHW descriptors (grouped NHWC problems only)
  const DnnConvPlan* graph = nullptr;  // variants 10 and 11: the execution plan
  int fallback_algo = -1;  // variants 10 and 11: cuDNN's legacy algorithm for pointers off the plan's alignment
};

// The graph spec of a problem: variant 11 fuses what the layer has of bias, residual and Relu.
DnnConvGraphSpec graph_spec(const ConvGeometry& g, bool fused, bool bias, bool residual) {
  DnnConvGraphSpec s;
  s.io = CUDNN_DATA_HALF;
  s.nhwc = g.nhwc;
  s.n = g.n; s.c = g.c; s.h = g.h; s.w = g.w; s.m = g.m; s.oh = g.oh; s.ow = g.ow;
  s.kh = g.kh; s.kw = g.kw; s.group = g.group;
  s.ph = g.ph; s.pw = g.pw; s.sh = g.sh; s.sw = g.sw; s.dh = g.dh; s.dw = g.dw;
  if (fused) {
    s.bias = bias;
    s.residual = residual;
    s.relu = g.act.kind == ConvActivation::kRelu;
  }
  return s;
}

bool graph_aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kDnnGraphAlignment == 0; }

// Variant 2: graft's own depthwise kernel, for NHWC convolutions with one filter per channel.
// cuDNN's legacy depthwise kernels are slow in NHWC float16 (mobilenet and efficientnet at batch 32
// ran at half torch.compile's speed on an H200); a depthwise convolution is memory-bound, and a
// direct kernel that reads each input once per filter tap from cache reaches bandwidth. Timed
// against cuDNN like any other tactic.
constexpr int kDepthwiseVariant = 2;

bool depthwise_eligible(const ConvGeometry& g) { return g.nhwc && g.group == g.c && g.m == g.c && g.group > 1; }

k::Epilogue epilogue_of(const ConvEpilogueActivation& a) {
  return k::Epilogue{static_cast<int>(a.kind), a.lo, a.hi};
}

k::Window2d window_of(const ConvGeometry& g) {
  k::Window2d w;
  w.n = g.n; w.c = g.c; w.h = g.h; w.w = g.w;
  w.oh = g.oh; w.ow = g.ow;
  w.kh = g.kh; w.kw = g.kw; w.sh = g.sh; w.sw = g.sw; w.dh = g.dh; w.dw = g.dw;
  w.ph = g.ph; w.pw = g.pw; w.peh = g.ph; w.pew = g.pw;
  w.in_act = static_cast<int>(g.in_act.kind); w.in_lo = g.in_act.lo; w.in_hi = g.in_act.hi;
  return w;
}

// Variant 3: graft's depthwise kernel over NCHW (input tile and halo staged in shared memory).
// cuDNN's legacy NCHW depthwise path ran ConvNeXt's 7x7 (96 channels, 56x56, batch 32, float16)
// at ~96 GB/s on an H200. Eligibility includes the kernel's own limits (shared memory, grid), so
// a plan can never name a problem the kernel would refuse.
constexpr int kDepthwiseNchwVariant = 3;

bool depthwise_nchw_eligible(const ConvGeometry& g) {
  return !g.nhwc && g.group == g.c && g.m == g.c && g.group > 1 && k::depthwise_conv_nchw_supported(window_of(g));
}

// Variant 4: graft's pointwise kernel over NHWC (1x1, stride 1, unpadded, one group), whose whole
// weight matrix sits in shared memory. cuDNN wrote MobileNetV2's 16 -> 96 expansion (112x112,
// batch 32, float16) at ~390 GB/s; the problem is a GEMM with a tiny K that only has to stream x
// in and y out. Never an untuned default: cuDNN is the better choice once c * m grows, so it only
// runs where timing picked it.
constexpr int kPointwiseVariant = 4;

bool pointwise_eligible(const ConvGeometry& g) {
  return g.nhwc && g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 && g.group == 1 &&
         g.oh == g.h && g.ow == g.w && k::pointwise_conv_nhwc_supported(g.c, g.m);
}

// Variant 5: a grouped (not depthwise) NHWC convolution run by cuDNN in NCHW between transposes
// into the workspace. cuDNN's NHWC float16 kernels for groups of a few dozen channels are slow:
// RegNetX-1.6GF's 72-channel, 3-group stride-2 convolution took 0.64 ms at batch 32 on an H200,
// a sixth of the model, while the NCHW engine ran its grouped convolutions well and lost elsewhere.
// Timed against the NHWC algorithms like any tactic, so it runs only where the transposes pay.
constexpr int kGroupedNchwVariant = 5;

bool grouped_nchw_eligible(const ConvGeometry& g) { return g.nhwc && g.group > 1 && !(g.group == g.c && g.m == g.c); }

// Variant 6: graft's NHWC depthwise kernel with each thread computing four outputs of a row (the
// filter row's inputs read once into registers: 2.5 loads per output and row instead of 7 for a
// 7x7 filter). It halved ConvNeXt-T's 7x7 convolutions at batch 32 on an H200 but has a quarter of
// the threads, which loses on small problems, so it is a tactic of its own, timed against variant 2.
constexpr int kDepthwiseTiledVariant = 6;

bool depthwise_tiled_eligible(const ConvGeometry& g) {
  return depthwise_eligible(g) && k::depthwise_nhwc_row_tiled_supported(window_of(g));
}

// Variant 7: graft's float16 tensor-core implicit GEMM over NHWC for a short reduction (kh * kw * c
// <= 128, c a multiple of 8, one group): pointwise expansions (16 -> 96 at 112x112 took cuDNN 0.16 ms
// at batch 32 on an H200, 7x its memory traffic's time) and 8-channel stems. Timed like any tactic.
constexpr int kSmallReductionMmaVariant = 7;

bool small_reduction_mma_eligible(const ConvGeometry& g) {
  return g.nhwc && g.float16 && g.group == 1 && k::conv_nhwc_mma_supported(window_of(g), g.m);
}

// Variant 8: graft's float16 NHWC depthwise kernel that stages a block's whole input tile (16 x 16
// or 8 x 8 outputs with their halo, 16 or 8 channels) in shared memory once, 16 bytes per load, and
// computes columns of outputs from it (depthwise_tile_kernels.cuh). Variants 2 and 6 read each
// input vector from global memory once per tap or filter row through the caches and ran
// MobileNetV2's stride-1 3x3 layers at batch 32 at about 0.8 TB/s. Timed like any tactic.
constexpr int kDepthwiseSharedTileVariant = 8;

bool depthwise_shared_tile_eligible(const ConvGeometry& g) {
  return depthwise_eligible(g) && g.float16 && k::depthwise_nhwc_tile_supported(k::KType::kF16, window_of(g));
}

// Variant 9: variant 7's implicit GEMM for reductions past its 128 terms (up to 1024), walking the
// reduction through shared memory 64 terms at a time: stems over images padded to 8 channels
// (ResNet's 7x7, AlexNet's 11x11), which cuDNN ran at a third of ResNet-18's time at batch 32 on an
// H200. Timed like any tactic.
constexpr int kChunkedMmaVariant = 9;

bool chunked_mma_eligible(const ConvGeometry& g) {
  return g.nhwc && g.float16 && g.group == 1 && k::conv_nhwc_mma_chunked_supported(window_of(g), g.m);
}

// Variants 10 and 11: cuDNN through its graph API, one execution plan made per problem when the
// layer is prepared and run with one cudnnBackendExecute (cudnn_wrap.h): the legacy calls of
// variants 0 and 1 cost about 95 us of host time each, which an eager run (the first run of a
// shape set, or any run with CUDA graphs off) pays per layer. The tactic's algo is the engine
// configuration's position in cuDNN's heuristic list. Variant 10 is the convolution alone with
// graft's epilogue after it; variant 11 fuses bias, residual and Relu into the plan. Half types
// only: a float32 graph would need its TF32 engines filtered out, and float32 keeps variants 0/1.
constexpr int kGraphVariant = 10;
constexpr int kGraphFusedVariant = 11;
// The heuristic's first configurations that tactic timing tries per graph variant.
constexpr int kGraphPlansTimed = 4;

// One group only: depthwise problems have graft's kernels, and cuDNN's graph engines for grouped
// ones compiled at run time (configurations that do are left out: cudnn_wrap.cpp).
bool graph_eligible(const ConvGeometry& g) {
  return g.float16 && g.group == 1 && g.in_act.kind == ConvActivation::kNone;
}
bool graph_fused_eligible(const ConvGeometry& g) {
  return graph_eligible(g) && (g.act.kind == ConvActivation::kNone || g.act.kind == ConvActivation::kRelu);
}
bool is_graph_variant(int variant) { return variant == kGraphVariant || variant == kGraphFusedVariant; }

// Whether a graft-kernel variant may run this problem (cuDNN's variants 0 and 1 always may: cuDNN
// itself refuses what it cannot run).
// An input activation (a producer's, deferred by the defer-activations pass) is applied only by the
// NHWC depthwise kernels (variants 2, 6, 8); cuDNN and graft's other kernels cannot run such a layer.
bool takes_input_activation(int variant) {
  return variant == kDepthwiseVariant || variant == kDepthwiseTiledVariant || variant == kDepthwiseSharedTileVariant;
}

bool variant_eligible(const ConvGeometry& g, int variant) {
  if (g.in_act.kind != ConvActivation::kNone && !takes_input_activation(variant)) return false;
  switch (variant) {
    case kDepthwiseVariant: return depthwise_eligible(g);
    case kDepthwiseTiledVariant: return depthwise_tiled_eligible(g);
    case kDepthwiseNchwVariant: return depthwise_nchw_eligible(g);
    case kPointwiseVariant: return pointwise_eligible(g);
    case kGroupedNchwVariant: return grouped_nchw_eligible(g);
    case kSmallReductionMmaVariant: return small_reduction_mma_eligible(g);
    case kDepthwiseSharedTileVariant: return depthwise_shared_tile_eligible(g);
    case kChunkedMmaVariant: return chunked_mma_eligible(g);
    case kGraphVariant: return graph_eligible(g);
    case kGraphFusedVariant: return graph_fused_eligible(g);
    default: return true;
  }
}

// The kernel of a graft-kernel variant, for messages and the profile's tactic column; null for
// cuDNN's variants (0, 1, 5) and unknown numbers.
const char* graft_kernel_name(int variant) {
  switch (variant) {
    case kDepthwiseVariant: return "NHWC depthwise";
    case kDepthwiseTiledVariant: return "row-tiled NHWC depthwise";
    case kDepthwiseNchwVariant: return "NCHW depthwise";
    case kPointwiseVariant: return "NHWC pointwise";
    case kSmallReductionMmaVariant: return "tensor-core NHWC";
    case kDepthwiseSharedTileVariant: return "shared-tile NHWC depthwise";
    case kChunkedMmaVariant: return "K-chunked tensor-core NHWC";
    default: return nullptr;
  }
}

// A tactic in words: "cuDNN algo 1 (fused)", "cuDNN algo 0 + epilogue", "cuDNN algo 1 via NCHW", or
// graft's kernel with its variant number.
std::string conv_tactic_name(const Tactic& t) {
  if (const char* k = graft_kernel_name(t.variant))
    return std::string(k) + " (variant " + std::to_string(t.variant) + ")";
  if (t.variant == kGraphVariant) return "cuDNN graph config " + std::to_string(t.algo) + " + epilogue";
  if (t.variant == kGraphFusedVariant) return "cuDNN graph config " + std::to_string(t.algo) + " (fused)";
  const std::string algo = "cuDNN algo " + std::to_string(t.algo);
  if (t.variant == 1) return algo + " (fused)";
  if (t.variant == kGroupedNchwVariant) return algo + " via NCHW";
  return algo + " + epilogue";
}

// Variant 5's staging: X, Y and W as NCHW copies at the front of the workspace, cuDNN's scratch
// after them. `left` is what remains for cuDNN.
struct NchwStage {
  void *x = nullptr, *y = nullptr, *w = nullptr, *scratch = nullptr;
  size_t left = 0;
};

bool nchw_stage(const ConvCall& c, size_t ws_bytes, NchwStage* s) {
  const size_t bx = stage_bytes(c.X->numel(), c.X->dtype()), by = stage_bytes(c.Y->numel(), c.Y->dtype()),
               bw = stage_bytes(c.W->numel(), c.W->dtype());
  if (!c.ex->workspace || ws_bytes < bx + by + bw) return false;
  char* base = static_cast<char*>(c.ex->workspace);
  *s = NchwStage{base, base + bx, base + bx + by, base + bx + by + bw, ws_bytes - bx - by - bw};
  return true;
}

// dst = src with rank-4 axes permuted: dst axis i is src axis perm[i] (Transpose's gather view).
cudaError_t permute4(const void* src, void* dst, const std::vector<int64_t>& src_dims, const std::vector<int64_t>& perm,
                     int elem_size, cudaStream_t s) {
  k::Strided p;
  if (!k::permute_view(src_dims, perm, &p)) return cudaErrorInvalidValue;
  int64_t n = 1;
  for (int64_t d : src_dims) n *= d;
  return k::launch_strided_gather(src, dst, elem_size, p, n, s);
}

// Whether the layer has an epilogue (bias, residual or activation) after its convolution.
bool has_epilogue(const ConvCall& c) { return c.B || c.Z || c.g->act.kind != ConvActivation::kNone; }

// Bias, residual and activation over a convolution's output Y, in one pass (none when it has none).
Status run_epilogue(const ConvCall& c) {
  if (!has_epilogue(c)) return Status::ok();
  const int64_t inner = c.g->nhwc ? 1 : c.g->oh * c.g->ow;
  return launch_status(k::launch_conv_epilogue(ktype(c.Y->dtype()), c.Y->data(), c.B ? c.B->data() : nullptr,
                                               c.Z ? c.Z->data() : nullptr, c.g->m, inner, epilogue_of(c.g->act),
                                               c.Y->numel(), stream_of(*c.ex)),
                       *c.ex, "convolution epilogue");
}

Status run_conv_grouped_nchw(const ConvCall& c, int algo, size_t ws_bytes) {
  const CudaExec& ex = *c.ex;
  NchwStage st;
  if (!c.d_nchw || !nchw_stage(c, ws_bytes, &st))
    return fail(ex, StatusCode::kInternal, "grouped NHWC convolution via NCHW: descriptors or workspace missing");
  const int es = static_cast<int>(dtype_size(c.X->dtype()));
  cudaStream_t s = stream_of(ex);
  GRAFT_RETURN_IF_ERROR(launch_status(permute4(c.X->data(), st.x, c.X->dims(), kNhwcToNchw, es, s), ex, "NHWC -> NCHW input copy"));
  GRAFT_RETURN_IF_ERROR(launch_status(permute4(c.W->data(), st.w, c.W->dims(), kNhwcToNchw, es, s), ex, "filter copy"));
  const float one = 1.f, zero = 0.f;
  GRAFT_RETURN_IF_ERROR(dnn_status(cudnnConvolutionForward(dnn_handle(ex), &one, c.d_nchw->x.get(), st.x, c.d_nchw->w.get(), st.w,
                                                           c.d_nchw->conv.get(), static_cast<cudnnConvolutionFwdAlgo_t>(algo),
                                                           st.scratch, st.left, &zero, c.d_nchw->y.get(), st.y),
                                   ex, "cudnnConvolutionForward (grouped, NCHW)"));
  const std::vector<int64_t> y_nchw{c.g->n, c.g->m, c.g->oh, c.g->ow};
  GRAFT_RETURN_IF_ERROR(launch_status(permute4(st.y, c.Y->data(), y_nchw, kNchwToNhwc, es, s), ex, "NCHW -> NHWC output copy"));
  return run_epilogue(c);  // over the NHWC output (variant 5 runs only NHWC problems)
}

// One convolution with its epilogue. variant 1: cuDNN's fused call (needs a bias; IDENTITY
// activation only with IMPLICIT_PRECOMP_GEMM); variant 0: cuDNN convolution + graft's epilogue;
// variants 2, 3, 4, 6, 7, 8, 9: graft's NHWC depthwise, NCHW depthwise, NHWC pointwise, row-tiled NHWC
// depthwise, tensor-core NHWC, shared-tile NHWC depthwise and K-chunked tensor-core NHWC kernels with
// the epilogue inside (algo unused); variant 5: cuDNN's NCHW algorithm `algo` between transposes.
Status run_conv(const ConvCall& c, int algo, int variant, size_t ws_bytes) {
  const CudaExec& ex = *c.ex;
  if (variant == kGroupedNchwVariant) return run_conv_grouped_nchw(c, algo, ws_bytes);
  const void* bias = c.B ? c.B->data() : nullptr;
  const void* z = c.Z ? c.Z->data() : nullptr;
  if (variant == kDepthwiseVariant || variant == kDepthwiseTiledVariant)
    return launch_status(k::launch_depthwise_conv_nhwc(ktype(c.Y->dtype()), c.X->data(), c.W->data(), bias, z,
                                                       c.Y->data(), window_of(*c.g), epilogue_of(c.g->act),
                                                       variant == kDepthwiseTiledVariant, stream_of(ex)),
                         ex, "depthwise convolution");
  if (variant == kDepthwiseNchwVariant)
    return launch_status(k::launch_depthwise_conv_nchw(ktype(c.Y->dtype()), c.X->data(), c.W->data(), bias, z,
                                                       c.Y->data(), window_of(*c.g), epilogue_of(c.g->act),
                                                       stream_of(ex)),
                         ex, "NCHW depthwise convolution");
  if (variant == kPointwiseVariant)
    return launch_status(k::launch_pointwise_conv_nhwc(ktype(c.Y->dtype()), c.X->data(), c.W->data(), bias, z,
                                                       c.Y->data(), c.g->n * c.g->h * c.g->w, c.g->c, c.g->m,
                                                       epilogue_of(c.g->act), stream_of(ex)),
                         ex, "pointwise convolution");
  if (variant == kDepthwiseSharedTileVariant)
    return launch_status(k::launch_depthwise_conv_nhwc_tile(ktype(c.Y->dtype()), c.X->data(), c.W->data(), bias, z,
                                                            c.Y->data(), window_of(*c.g), epilogue_of(c.g->act),
                                                            stream_of(ex)),
                         ex, "shared-tile depthwise convolution");
  if (variant == kSmallReductionMmaVariant)
    return launch_status(k::launch_conv_nhwc_mma(c.X->data(), c.W->data(), bias, z, c.Y->data(), window_of(*c.g), c.g->m,
                                                 epilogue_of(c.g->act), stream_of(ex)),
                         ex, "tensor-core convolution");
  if (variant == kChunkedMmaVariant)
    return launch_status(k::launch_conv_nhwc_mma_chunked(c.X->data(), c.W->data(), bias, z, c.Y->data(),
                                                         window_of(*c.g), c.g->m, epilogue_of(c.g->act), stream_of(ex)),
                         ex, "K-chunked tensor-core convolution");
  if (is_graph_variant(variant)) {
    if (!c.graph) return fail(ex, StatusCode::kInternal, "cuDNN graph variant without an execution plan");
    const bool fused = variant == kGraphFusedVariant;
    const bool aligned = graph_aligned(c.X->data()) && graph_aligned(c.W->data()) && graph_aligned(c.Y->data()) &&
                         (!c.B || graph_aligned(c.B->data())) && (!c.Z || graph_aligned(c.Z->data())) &&
                         (c.graph->workspace == 0 || graph_aligned(ex.workspace));
    if (!aligned) {
      // A caller's tensor that starts off the 16-byte alignment the plan was made for (a view at
      // an odd element offset) runs this call on the legacy API instead.
      if (c.fallback_algo < 0) return fail(ex, StatusCode::kInternal, "no legacy cuDNN algorithm for an unaligned call");
      return run_conv(c, c.fallback_algo, 0, ws_bytes);
    }
    GRAFT_RETURN_IF_ERROR(dnn_conv_graph_execute(ex, *c.graph, c.X->data(), c.W->data(), c.Y->data(),
                                                 fused && c.B ? c.B->data() : nullptr,
                                                 fused && c.Z ? c.Z->data() : nullptr, ex.workspace));
    return fused ? Status::ok() : run_epilogue(c);
  }
  auto h = dnn_handle(ex);
  const float one = 1.f, zero = 0.f;
  const auto a = static_cast<cudnnConvolutionFwdAlgo_t>(algo);
  if (variant == 1) {
    const float alpha2 = c.Z ? 1.f : 0.f;
    return dnn_status(cudnnConvolutionBiasActivationForward(h, &one, c.d->x.get(), c.X->data(), c.d->w.get(), c.W->data(),
                                                            c.d->conv.get(), a, ex.workspace, ws_bytes, &alpha2,
                                                            c.d->y.get(), c.Z ? c.Z->data() : c.Y->data(), c.d->b.get(),
                                                            c.B->data(), c.d->act.get(), c.d->y.get(), c.Y->data()),
                      ex, "cudnnConvolutionBiasActivationForward");
  }
  GRAFT_RETURN_IF_ERROR(dnn_status(cudnnConvolutionForward(h, &one, c.d->x.get(), c.X->data(), c.d->w.get(), c.W->data(),
                                                           c.d->conv.get(), a, ex.workspace, ws_bytes, &zero, c.d->y.get(),
                                                           c.Y->data()),
                                   ex, "cudnnConvolutionForward"));
  return run_epilogue(c);
}

bool fused_variant_allowed(const ConvCall& c, int algo) {
  if (!c.B) return false;
  // cuDNN's fused call applies Relu or nothing; the other activations need graft's epilogue. (Its
  // clipped Relu, ReLU6's form, is refused: CUDNN_STATUS_NOT_SUPPORTED from cuDNN 9.19 on an H200,
  // float32 and float16, NCHW and NHWC, at 91e3eb8.)
  if (c.g->act.kind != ConvActivation::kNone && c.g->act.kind != ConvActivation::kRelu) return false;
  return c.g->act.kind == ConvActivation::kRelu || algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
}

// A graph-API tactic's execution plan as timed, kept so that preparing the winner does not finalize
// it a second time.
struct TimedGraphPlan {
  int variant = -1;
  DnnConvPlan plan;
};

// Times every (algorithm, variant) cuDNN offers for this problem and returns the fastest; a graph
// plan that wins is left in *winner_plan. GRAFT_TACTIC_TRACE=1 prints every timed (problem,
// algorithm, variant) as it is timed. Only algorithms dnn_usable_forward_algo accepts are timed.
Result<Tactic> time_tactics(const ConvCall& c, const DnnForwardAlgos& algos, const std::string& key,
                            TimedGraphPlan* winner_plan) {
  static const bool trace = [] {
    const char* e = std::getenv("GRAFT_TACTIC_TRACE");
    return e && *e && std::string(e) != "0";
  }();
  const CudaExec& ex = *c.ex;
  cudaStream_t s = stream_of(ex);
  TimingEvents events;
  GRAFT_RETURN_IF_ERROR(launch_status(events.create(), ex, "cudaEventCreate"));
  Tactic best;
  best.ms = 1e30;
  Status failure;
  const cudnnConvolutionFwdAlgoPerf_t* perf = algos.perf;
  const bool cudnn_runs_it = c.g->in_act.kind == ConvActivation::kNone;  // cuDNN has no input activation
  for (int i = 0; i < (cudnn_runs_it ? algos.count : 0); ++i) {
    if (!dnn_usable_forward_algo(perf[i], ex.workspace_size)) continue;
    for (int variant : {1, 0}) {
      if (variant == 1 && !fused_variant_allowed(c, perf[i].algo)) continue;
      // A warm-up call also tells whether this combination runs at all (some refuse NHWC or fp16).
      if (!run_conv(c, perf[i].algo, variant, ex.workspace_size)) continue;
      if (cudaStreamSynchronize(s) != cudaSuccess) {
        failure = launch_status(cudaGetLastError(), ex, "tactic warm-up");
        continue;
      }
      if (trace) std::fprintf(stderr, "graft: tactic %s algo %d variant %d ...", key.c_str(), perf[i].algo, variant);
      const float ms = events.ms_per_call(
          s, [&] { return run_conv(c, perf[i].algo, variant, ex.workspace_size).is_ok(); });
      if (trace) std::fprintf(stderr, " %.4f ms\n", ms);
      if (ms >= 0 && ms < best.ms) best = Tactic{static_cast<int>(perf[i].algo), variant, ms};
    }
  }
  // cuDNN in NCHW between transposes, for grouped NHWC problems: its algorithms get the workspace
  // the staged copies leave.
  NchwStage stage;
  DnnForwardAlgos nchw_algos;
  if (cudnn_runs_it && grouped_nchw_eligible(*c.g) && c.d_nchw && nchw_stage(c, ex.workspace_size, &stage) &&
      dnn_forward_algos(ex, c.d_nchw->x, c.d_nchw->w, c.d_nchw->conv, c.d_nchw->y, &nchw_algos).is_ok()) {
    for (int i = 0; i < nchw_algos.count; ++i) {
      const cudnnConvolutionFwdAlgoPerf_t& p = nchw_algos.perf[i];
      if (!dnn_usable_forward_algo(p, stage.left)) continue;
      if (!run_conv(c, p.algo, kGroupedNchwVariant, ex.workspace_size) || cudaStreamSynchronize(s) != cudaSuccess) {
        (void)cudaGetLastError();
        continue;
      }
      const float ms = events.ms_per_call(
          s, [&] { return run_conv(c, p.algo, kGroupedNchwVariant, ex.workspace_size).is_ok(); });
      if (trace) std::fprintf(stderr, "graft: tactic %s algo %d via NCHW (variant 5) %.4f ms\n", key.c_str(), p.algo, ms);
      if (ms >= 0 && ms < best.ms) best = Tactic{static_cast<int>(p.algo), kGroupedNchwVariant, ms};
    }
  }
  // graft's own kernels, where the problem is theirs.
  for (int variant : {kDepthwiseVariant, kDepthwiseTiledVariant, kDepthwiseNchwVariant, kPointwiseVariant,
                      kSmallReductionMmaVariant, kDepthwiseSharedTileVariant, kChunkedMmaVariant}) {
    if (!variant_eligible(*c.g, variant) || !run_conv(c, 0, variant, 0) || cudaStreamSynchronize(s) != cudaSuccess)
      continue;
    const float ms = events.ms_per_call(s, [&] { return run_conv(c, 0, variant, 0).is_ok(); });
    if (trace) std::fprintf(stderr, "graft: tactic %s graft kernel (variant %d) %.4f ms\n", key.c_str(), variant, ms);
    if (ms >= 0 && ms < best.ms) best = Tactic{0, variant, ms};
  }
  // cuDNN's graph API: the heuristic's first configurations, alone and with the epilogue fused.
  // Its engines are largely the legacy algorithms' kernels, so the GPU times tie often; within 1%
  // (inside timing noise) the graph plan is taken, for its lower host cost in eager runs.
  for (int variant : {kGraphVariant, kGraphFusedVariant}) {
    if (!variant_eligible(*c.g, variant)) continue;
    if (variant == kGraphFusedVariant && !has_epilogue(c)) continue;  // the same graph as variant 10
    std::vector<DnnConvPlan> plans;
    const Status ps = dnn_conv_graph_plans(ex, graph_spec(*c.g, variant == kGraphFusedVariant, c.B != nullptr, c.Z != nullptr),
                                           ex.workspace_size, kGraphPlansTimed, -1, &plans);
    if (!ps) {
      if (trace) std::fprintf(stderr, "graft: tactic %s cuDNN graph (variant %d): %s\n", key.c_str(), variant, ps.to_string().c_str());
      continue;
    }
    for (DnnConvPlan& plan : plans) {
      ConvCall gc = c;
      gc.graph = &plan;
      if (!run_conv(gc, plan.index, variant, ex.workspace_size) || cudaStreamSynchronize(s) != cudaSuccess) {
        (void)cudaGetLastError();
        continue;
      }
      const float ms = events.ms_per_call(s, [&] { return run_conv(gc, plan.index, variant, ex.workspace_size).is_ok(); });
      if (trace)
        std::fprintf(stderr, "graft: tactic %s cuDNN graph config %d (variant %d) %.4f ms\n", key.c_str(), plan.index,
                     variant, ms);
      if (ms >= 0 && (ms < best.ms || (!is_graph_variant(best.variant) && ms <= best.ms * 1.01f))) {
        best = Tactic{plan.index, variant, ms};
        winner_plan->variant = variant;
        winner_plan->plan = std::move(plan);  // the loop is done with it
      }
    }
  }
  if (best.algo < 0) {
    if (!failure.is_ok()) return failure;
    return fail(ex, StatusCode::kUnsupported, "no cuDNN algorithm runs this convolution");
  }
  return best;
}

#endif  // GRAFT_WITH_CUDNN

#ifdef GRAFT_WITH_CUDNN
// One convolution problem made ready to run: its geometry, descriptors and chosen algorithm.
struct PreparedConv {
  ConvGeometry g;
  ConvDescs d;
  ConvDescs d_nchw;  // grouped NHWC problems: the NCHW view variant 5 runs cuDNN on
  bool has_nchw = false;
  Tactic tactic;
  DnnConvPlan graph;  // variants 10 and 11: the tactic's execution plan
  int fallback_algo = -1;  // variants 10 and 11: cuDNN's legacy choice for calls off the plan's alignment
};

Result<std::shared_ptr<PreparedConv>> prepare_conv(CudaExec& ex, const Tensor& X, const Tensor& W, const Tensor* B,
                                                   const Tensor* Z, Tensor& Y) {
  auto p = std::make_shared<PreparedConv>();
  ConvGeometry& g = p->g;
  GRAFT_RETURN_IF_ERROR(conv_geometry(ex, X, W, Y, &g));
  if (B && B->numel() != g.m) return fail(ex, StatusCode::kInvalidModel, "bias has ", B->numel(), " elements, expected ", g.m);
  if (g.in_act.kind != ConvActivation::kNone && !depthwise_eligible(g))
    return fail(ex, StatusCode::kInvalidModel,
                "input_activation is run only by NHWC depthwise convolutions (one filter per channel)");
  GRAFT_RETURN_IF_ERROR(make_descs(ex, g, X.dtype(), &p->d));
  if (grouped_nchw_eligible(g)) {
    ConvGeometry gn = g;
    gn.nhwc = false;
    GRAFT_RETURN_IF_ERROR(make_descs(ex, gn, X.dtype(), &p->d_nchw));
    p->has_nchw = true;
  }
  ConvCall call{&ex, &g, &p->d, &X, &W, B, Z, &Y, p->has_nchw ? &p->d_nchw : nullptr};
  // cuDNN's candidates for this problem, best first by its heuristic.
  DnnForwardAlgos algos;
  auto candidates = [&] { return dnn_forward_algos(ex, p->d.x, p->d.w, p->d.conv, p->d.y, &algos); };
  const std::string key = tactic_key(g, X.dtype(), B != nullptr, Z != nullptr);
  TimedGraphPlan timed;
  GRAFT_ASSIGN_OR_RETURN(std::optional<Tactic> t, find_or_time_tactic(ex, key, [&]() -> Result<Tactic> {
                           GRAFT_RETURN_IF_ERROR(candidates());
                           return time_tactics(call, algos, key, &timed);
                         }));
  // Not tuned for these shapes (met only at run time): a depthwise problem takes graft's direct
  // kernel, which needs no cuDNN query and no workspace; other problems cuDNN's heuristic choice.
  if (!t && depthwise_eligible(g))
    t = Tactic{0, k::depthwise_nhwc_row_tiled_preferred(window_of(g)) ? kDepthwiseTiledVariant : kDepthwiseVariant, 0};
  if (!t && depthwise_nchw_eligible(g)) t = Tactic{0, kDepthwiseNchwVariant, 0};
  // A tactic read from a plan or a timing cache file is input like any other: graft's kernels index
  // by their own geometry (and have limits), so they never run on any other problem.
  if (t && !variant_eligible(g, t->variant)) {
    const char* kernel = graft_kernel_name(t->variant);
    const std::string what = kernel ? "graft's " + std::string(kernel) + " kernel"
                                    : t->variant == kGroupedNchwVariant ? "graft's grouped NCHW staging" : "cuDNN";
    return fail(ex, StatusCode::kInvalidModel, "tactic '", key, "' names ", what, " (variant ", t->variant,
                ") for a convolution it does not take");
  }
  // The legacy heuristic's first choice: the tactic of a problem not tuned for (a shape met only at
  // run time), and a graph tactic's fallback for unaligned calls.
  auto legacy_choice = [&]() -> Result<int> {
    GRAFT_RETURN_IF_ERROR(candidates());
    for (int i = 0; i < algos.count; ++i)
      if (dnn_usable_forward_algo(algos.perf[i], ex.workspace_size)) return static_cast<int>(algos.perf[i].algo);
    return fail(ex, StatusCode::kUnsupported, "cuDNN offers no algorithm for this convolution within ",
                static_cast<uint64_t>(ex.workspace_size), " bytes of workspace");
  };
  // A graph tactic's plan: the tactic's configuration, else (a plan file from another cuDNN, whose
  // list differs) the heuristic's first one, else the legacy choice.
  auto graph_plan = [&](int variant, int index) -> bool {
    if (timed.variant == variant && timed.plan.index == index && timed.plan.plan.get()) {
      p->graph = std::move(timed.plan);
      timed.variant = -1;
      return true;
    }
    const DnnConvGraphSpec spec = graph_spec(g, variant == kGraphFusedVariant, B != nullptr, Z != nullptr);
    std::vector<DnnConvPlan> plans;
    for (int i : {index, 0}) {
      if (dnn_conv_graph_plans(ex, spec, ex.workspace_size, 1, i, &plans).is_ok() && !plans.empty()) {
        p->graph = std::move(plans[0]);
        return true;
      }
    }
    return false;
  };
  if (t && is_graph_variant(t->variant) && !graph_plan(t->variant, t->algo)) t.reset();
  if (!t && graph_fused_eligible(g) && graph_plan(kGraphFusedVariant, 0)) t = Tactic{p->graph.index, kGraphFusedVariant, 0};
  if (!t && graph_eligible(g) && graph_plan(kGraphVariant, 0)) t = Tactic{p->graph.index, kGraphVariant, 0};
  if (t && is_graph_variant(t->variant)) {
    t->algo = p->graph.index;
    GRAFT_ASSIGN_OR_RETURN(p->fallback_algo, legacy_choice());
  }
  if (!t) {
    GRAFT_ASSIGN_OR_RETURN(int algo, legacy_choice());
    t = Tactic{algo, 0, 0};
  }
  p->tactic = *t;
  return p;
}
#endif  // GRAFT_WITH_CUDNN

Status graft_conv_run(CudaExec& ex) {
#ifndef GRAFT_WITH_CUDNN
  return fail(ex, StatusCode::kUnsupported, "graft was built without cuDNN");
#else
  const auto& in = ex.ctx->inputs;
  const Tensor& X = *in[0];
  const Tensor& W = *in[1];
  const Tensor* B = in.size() > 2 ? in[2] : nullptr;
  const Tensor* Z = in.size() > 3 ? in[3] : nullptr;
  Tensor& Y = *ex.ctx->outputs[0];
  if (!ex.cudnn) return fail(ex, StatusCode::kUnsupported, "no cuDNN handle");
  if (Z && Z->dims() != Y.dims()) return fail(ex, StatusCode::kInvalidModel, "residual Z must have the output's shape");
  if (Y.numel() == 0) return Status::ok();
  // The stream is the handle's already: the execution context sets it once per run, outside any
  // capture (cuda_engine.cpp, execute_in_order).
  // Prepared once per (node, input shape, dtype): the node fixes the attributes and W's shape.
  std::string key = PreparedCache::key_of("GraftConv", {reinterpret_cast<intptr_t>(ex.ctx->node),
                                                        static_cast<int64_t>(X.dtype()), B != nullptr, Z != nullptr,
                                                        static_cast<int64_t>(ex.workspace_size)});
  PreparedCache::append_dims(&key, X.dims());
  PreparedConv* p = ex.prepared ? ex.prepared->find<PreparedConv>(key) : nullptr;
  std::shared_ptr<PreparedConv> owned;
  if (!p || ex.tuning) {
    GRAFT_ASSIGN_OR_RETURN(owned, prepare_conv(ex, X, W, B, Z, Y));
    p = ex.prepared ? ex.prepared->put(key, owned) : owned.get();
  }
  if (Y.dims()[0] != p->g.n) return fail(ex, StatusCode::kInternal, "prepared convolution does not match the output");
  ConvCall call{&ex, &p->g, &p->d, &X, &W, B, Z, &Y, p->has_nchw ? &p->d_nchw : nullptr, &p->graph, p->fallback_algo};
  if (ex.ran_tactic) *ex.ran_tactic = conv_tactic_name(p->tactic);
  return run_conv(call, p->tactic.algo, p->tactic.variant, ex.workspace_size);
#endif
}

}  // namespace

bool cudnn_conv_supports(const Node& n, std::string* why) {
  return require_dtype(n, 0, kCudnnConvDtypes, why) && graft_conv_supports(n, why);
}
Status cudnn_conv_run(CudaExec& ex) { return graft_conv_run(ex); }
size_t cudnn_conv_workspace(const Node& n, const std::vector<const Tensor*>& ins, const std::vector<Tensor>& outs) {
  return graft_conv_workspace(n, ins, outs);
}

void append_cuda_graft_conv_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, kCudnnConvDtypes)},
                              CudaOp{"GraftConv", &graft_conv_supports, &graft_conv_run, {}, &graft_conv_workspace}));
}

}  // namespace graft::cuda
