// Diagnostic for the GPU suite (not a test): int8_probe.cpp's question -- does INT8 convolution
// beat FP16 for ResNet-50 (v1.5) at batch 32, NHWC? -- asked through cuDNN's graph (backend) API.
// That API can fuse a per-output-channel requantizing epilogue (scale, bias, ReLU, INT8 cast) into
// the convolution, the epilogue an explicitly quantized model with per-channel weight scales needs
// and the one that made the legacy API's INT8 path 20-40x slower and halved cuBLASLt's. Per shape:
//   fp16   : conv (half in, float compute) -> + bias[k] -> ReLU -> half out (the baseline)
//   i8>f16 : conv (int8 in, int32 compute) -> * scale[k] -> + bias[k] -> ReLU -> half out
//   i8>i8  : the same -> * 1/y_scale -> int8 out (if refused: 1/y_scale folded into scale and bias)
//   i8>i32 : conv (int8 in) -> identity -> int32 out: the bare INT8 convolution, for reference
// Plans come from the engine heuristics (mode A, then B, then FALLBACK, then every engine the graph
// reports); each refusal is printed with cuDNN's status and message and the probe goes on. The
// fastest plan is timed as CUDA-graph replays and its output checked on sampled elements against
// exact integer sums followed by the float epilogue. Only the C backend API (cudnn_graph.h).
// Build: the int8graphprobe step of scripts/gpu/run_gpu_suite.sh (g++ ... -lcudnn -lcudart).
// Run: cudnn_graph_int8_probe [parts of shape names, e.g. "stem" "s3 3x3": only the shapes matching one].
// What it shares with int8_probe.cpp (shapes, timing, data) is in int8_probe_common.h.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "int8_probe_common.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kSamples = 384;                        // output elements checked per result
constexpr int64_t kMaxWorkspace = int64_t(1) << 30;  // plans wanting more are dropped
constexpr double kBudgetSeconds = 150;  // no new work after this: the suite kills the probe at 200 s
// Runtime-compiled engines spend up to seconds in plan finalization, so plans are rationed.
constexpr int kMaxPlans = 2;          // plans built and timed per graph
constexpr int kMaxPlanTries = 4;      // plan finalizations per heuristic mode, refused ones included
constexpr double kPlanSeconds = 6;    // no further plan once a graph has one and spent this long
constexpr float kOutInvScale = 1.5f;  // 1/y_scale of the INT8 output: a few outputs saturate

Clock::time_point g_start;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
bool out_of_time() { return seconds_since(g_start) > kBudgetSeconds; }

enum Col { kF16, kI8F16, kI8I8, kI8I32, kCols };
const char* const kColName[kCols] = {"fp16", "i8>f16", "i8>i8", "i8>i32"};

struct Cell {
  enum State { kRefused, kSkipped, kTimed } state = kSkipped;
  double us = 0;
  bool graph = true;  // timed as a replayed CUDA graph (else eagerly, host overhead included)
  bool check_ok = true;
  std::string variant;  // the graph variant timed
};

// ---- data ----
SplitMix64 g_rng(0x2545F4914F6CDD1Dull);  // not int8_probe's seed: fresh data

// One shape's data (int8_probe_common.h's ConvData: every graph computes the same exact sum before
// its epilogue) and the epilogue's parameters.
struct Problem : ConvData {
  std::vector<float> scale, bias;  // per-output-channel requantization: keeps outputs around +-40
  std::vector<float> scale_folded, bias_folded;  // the same times 1/y_scale (ReLU commutes with it)
};

// `v` (cp channels per pixel) with c channels per pixel, truncated or zero-padded, converted.
template <class T, class Conv>
std::vector<T> repack(const std::vector<int8_t>& v, int cp, int c, Conv conv) {
  std::vector<T> out(v.size() / cp * c, conv(0));
  for (size_t i = 0; i < v.size() / cp; ++i)
    for (int j = 0; j < std::min(c, cp); ++j) out[i * c + j] = conv(v[i * cp + j]);
  return out;
}
__half to_half(int8_t v) { return __float2half(float(v)); }
int8_t as_int8(int8_t v) { return v; }

Problem make_problem(const Shape& s) {
  Problem pr;
  make_inputs(&pr, s, g_rng);
  const double alpha = 40.0 / pr.spread;
  for (int k = 0; k < s.k; ++k) {
    pr.scale.push_back(float(alpha * (0.5 + g_rng.next_unit())));
    pr.bias.push_back(float((g_rng.next_unit() - 0.5) * 40.0));
    pr.scale_folded.push_back(pr.scale.back() * kOutInvScale);
    pr.bias_folded.push_back(pr.bias.back() * kOutInvScale);
  }
  sample_outputs(&pr, kSamples, g_rng);
  return pr;
}

// ---- graph variants ----
enum class Math { BiasRelu, ScaleBiasRelu, Requant, Sum };  // what the output should hold
enum Uid : int64_t { kUidX = 1, kUidW, kUidY, kUidScale, kUidBias, kUidScaleF, kUidBiasF, kUidYScale };
constexpr int64_t kUidVirtual = 100;  // and up: the graph's intermediate tensors
struct Step {
  cudnnPointwiseMode_t mode;
  int64_t operand;                          // uid of the second input, 0 for a unary step
  cudnnDataType_t prec = CUDNN_DATA_FLOAT;  // the epilogue computes in float, except an int32 copy
};
struct Spec {
  const char* label;
  bool int8;                 // x, w INT8 with INT32 compute; else HALF with FLOAT compute
  cudnnDataType_t conv_out;  // the virtual tensor the convolution writes
  int pad_to;                // input channels rounded up to a multiple of this (the stem's 3 or 4)
  std::vector<Step> steps;   // pointwise ops after the convolution; the last writes y
  cudnnDataType_t out;
  OutType out_type;
  Math math;
};

// Variants per column, tried in order until one is timed (then tried first for later shapes):
// which conv-output type cuDNN accepts for INT8, whether it takes a trailing scalar multiply, and
// (the stem only) whether it wants more input channels than 3 (FP16) or 4 (INT8).
const std::vector<Spec>& variants(int col) {
  const auto F = CUDNN_DATA_FLOAT, H = CUDNN_DATA_HALF, I32 = CUDNN_DATA_INT32, I8 = CUDNN_DATA_INT8;
  const auto ADD = CUDNN_POINTWISE_ADD, MUL = CUDNN_POINTWISE_MUL, RELU = CUDNN_POINTWISE_RELU_FWD;
  const std::vector<Step> bias_relu = {{ADD, kUidBias}, {RELU, 0}};
  const std::vector<Step> scale_bias_relu = {{MUL, kUidScale}, {ADD, kUidBias}, {RELU, 0}};
  const std::vector<Step> requant = {{MUL, kUidScale}, {ADD, kUidBias}, {RELU, 0}, {MUL, kUidYScale}};
  const std::vector<Step> folded = {{MUL, kUidScaleF}, {ADD, kUidBiasF}, {RELU, 0}};
  const std::vector<Step> identity = {{CUDNN_POINTWISE_IDENTITY, 0, I32}};  // as cudnn_frontend's sample
  const std::vector<Step> identity_f = {{CUDNN_POINTWISE_IDENTITY, 0}};
  const auto f16 = OutType::F16, i8 = OutType::I8;
  static const std::vector<Spec> all[kCols] = {
      {{"conv->float", false, F, 1, bias_relu, H, f16, Math::BiasRelu},
       {"conv->half", false, H, 1, bias_relu, H, f16, Math::BiasRelu},
       {"conv->float, C padded to 8", false, F, 8, bias_relu, H, f16, Math::BiasRelu}},
      {{"conv->int32", true, I32, 1, scale_bias_relu, H, f16, Math::ScaleBiasRelu},
       {"conv->float", true, F, 1, scale_bias_relu, H, f16, Math::ScaleBiasRelu},
       {"conv->int32, C padded to 16", true, I32, 16, scale_bias_relu, H, f16, Math::ScaleBiasRelu}},
      {{"conv->int32, *1/ys", true, I32, 1, requant, I8, i8, Math::Requant},
       {"conv->float, *1/ys", true, F, 1, requant, I8, i8, Math::Requant},
       {"conv->int32, 1/ys folded", true, I32, 1, folded, I8, i8, Math::Requant},
       {"conv->float, 1/ys folded", true, F, 1, folded, I8, i8, Math::Requant},
       {"conv->int32, *1/ys, C padded to 16", true, I32, 16, requant, I8, i8, Math::Requant}},
      {{"conv->int32, identity (int32)", true, I32, 1, identity, I32, OutType::I32, Math::Sum},
       {"conv->int32, identity (float)", true, I32, 1, identity_f, I32, OutType::I32, Math::Sum}},
  };
  return all[col];
}

// ---- backend API helpers ----
struct DescFree {
  void operator()(void* d) const {
    if (d) cudnnBackendDestroyDescriptor(d);
  }
};
using Desc = std::unique_ptr<void, DescFree>;

// cuDNN's own reason for the last failure, on one line ("" if none). cudnnGetLastErrorString needs
// no logging enabled and forgets the message once read.
std::string last_message() {
  char last[1024] = "";
  cudnnGetLastErrorString(last, sizeof last);
  std::string d = last;
  std::replace(d.begin(), d.end(), '\n', ' ');
  return d.size() > 400 ? d.substr(0, 400) + "..." : d;
}

std::string why(cudnnStatus_t s) {
  const std::string d = last_message();
  return std::string(short_status(s)) + (d.empty() ? "" : " (" + d + ")");
}

// Records the first failing call; later calls are skipped once one failed. Created per step, so a
// refusal comes with its own message.
struct Api {
  std::string err;
  Api() { (void)last_message(); }  // drop a stale message
  bool ok() const { return err.empty(); }
  bool check(cudnnStatus_t s, const std::string& what) {
    if (s != CUDNN_STATUS_SUCCESS && ok()) err = what + ": " + why(s);
    return s == CUDNN_STATUS_SUCCESS;
  }
  Desc make(cudnnBackendDescriptorType_t type, const std::string& what) {
    cudnnBackendDescriptor_t d = nullptr;
    if (ok() && !check(cudnnBackendCreateDescriptor(type, &d), "create " + what)) d = nullptr;
    return Desc(d);
  }
  void set(void* d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t n,
           const void* v, const char* what) {
    if (ok()) check(cudnnBackendSetAttribute(d, name, type, n, v), what);
  }
  void finalize(void* d, const std::string& what) {
    if (ok()) check(cudnnBackendFinalize(d), "finalize " + what);
  }
};
// Sets an attribute, or one that refers to another descriptor; a failure is named by the attribute.
#define SET(api, d, attr, type, n, v) (api).set((d), (attr), (type), (n), (v), #attr)
#define LINK(api, d, attr, other)                                             \
  do {                                                                        \
    void* other_ = (other);                                                   \
    (api).set((d), (attr), CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &other_, #attr); \
  } while (0)

struct Gpu {
  cudaStream_t st = nullptr;
  cudnnHandle_t dnn = nullptr;
  DevBuf ws, x8, w8, x16, w16, xp, wp, y,  // xp, wp: inputs padded for one variant
      scale, bias, scale_f, bias_f, y_scale;
};

// An operation graph with every descriptor it refers to, kept alive as long as it is.
struct OpGraph {
  std::vector<Desc> keep;
  Desc graph;
  std::vector<int64_t> uids;  // its non-virtual tensors and their device addresses
  std::vector<void*> ptrs;
};

OpGraph build_graph(Api& api, Gpu& g, const Problem& pr, const Spec& sp, int chans, void* x_ptr,
                    void* w_ptr) {
  const Shape& s = *pr.s;
  const int64_t n = kBatch, k = s.k, p = pr.p;
  OpGraph og;
  auto keep = [&](Desc d) {
    og.keep.push_back(std::move(d));
    return og.keep.back().get();
  };
  auto tensor = [&](int64_t uid, cudnnDataType_t type, std::array<int64_t, 4> d, void* dev) -> void* {
    const std::string what = "tensor " + std::to_string(uid);
    void* t = keep(api.make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, what));
    // Dimensions are always N, C, H, W; the layout (NHWC: C fastest, then W, H, N) is in the strides.
    const int64_t strides[4] = {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]};
    const int64_t align = 16, id = uid;
    const bool is_virtual = dev == nullptr;
    SET(api, t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    SET(api, t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, d.data());
    SET(api, t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
    SET(api, t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id);
    SET(api, t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    SET(api, t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
    api.finalize(t, what);
    if (dev) og.uids.push_back(uid), og.ptrs.push_back(dev);
    return t;
  };
  const cudnnDataType_t in = sp.int8 ? CUDNN_DATA_INT8 : CUDNN_DATA_HALF;
  void* x = tensor(kUidX, in, {n, chans, s.h, s.h}, x_ptr);
  void* w = tensor(kUidW, in, {k, chans, s.r, s.r}, w_ptr);
  void* conv_y = tensor(kUidVirtual, sp.conv_out, {n, k, p, p}, nullptr);

  void* cd = keep(api.make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, "convolution"));
  const cudnnDataType_t comp = sp.int8 ? CUDNN_DATA_INT32 : CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t dims = 2, pad[2] = {s.pad, s.pad}, stride[2] = {s.stride, s.stride}, dil[2] = {1, 1};
  SET(api, cd, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
  SET(api, cd, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  SET(api, cd, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims);
  SET(api, cd, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
  SET(api, cd, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
  SET(api, cd, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride);
  SET(api, cd, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil);
  api.finalize(cd, "convolution");
  void* conv = keep(api.make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, "conv op"));
  const float one = 1.f, zero = 0.f;
  LINK(api, conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x);
  LINK(api, conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w);
  LINK(api, conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, conv_y);
  LINK(api, conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, cd);
  SET(api, conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &one);
  SET(api, conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &zero);
  api.finalize(conv, "conv op");

  std::vector<void*> ops = {conv};
  void* cur = conv_y;
  for (size_t i = 0; i < sp.steps.size() && api.ok(); ++i) {
    const Step& step = sp.steps[i];
    const bool last = i + 1 == sp.steps.size();
    // Intermediates stay FLOAT virtual tensors: the epilogue runs in float inside the kernel.
    void* out = last ? tensor(kUidY, sp.out, {n, k, p, p}, g.y.p)
                     : tensor(kUidVirtual + 1 + int64_t(i), CUDNN_DATA_FLOAT, {n, k, p, p}, nullptr);
    void* operand = nullptr;
    if (step.operand) {
      DevBuf& buf = step.operand == kUidScale    ? g.scale
                    : step.operand == kUidBias   ? g.bias
                    : step.operand == kUidScaleF ? g.scale_f
                    : step.operand == kUidBiasF  ? g.bias_f
                                                 : g.y_scale;
      const int64_t kk = step.operand == kUidYScale ? 1 : k;  // per channel, or one scalar
      operand = tensor(step.operand, CUDNN_DATA_FLOAT, {1, kk, 1, 1}, buf.p);
    }
    const std::string what = "pointwise " + std::to_string(i);
    void* pw = keep(api.make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, what));
    SET(api, pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &step.mode);
    SET(api, pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &step.prec);
    api.finalize(pw, what);
    void* op = keep(api.make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, what + " op"));
    LINK(api, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
    LINK(api, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, cur);
    if (operand) LINK(api, op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, operand);
    LINK(api, op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, out);
    api.finalize(op, what + " op");
    ops.push_back(op);
    cur = out;
  }
  og.graph = api.make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph");
  SET(api, og.graph.get(), CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(ops.size()),
      ops.data());
  // Deprecated in cuDNN 9 but still read (cudnn_frontend sets it): the device the graph is for.
  if (api.ok())
    if (cudnnStatus_t st = cudnnBackendSetAttribute(og.graph.get(), CUDNN_ATTR_OPERATIONGRAPH_HANDLE,
                                                    CUDNN_TYPE_HANDLE, 1, &g.dnn);
        st != CUDNN_STATUS_SUCCESS)
      std::printf("\n      (graph handle not set: %s)", why(st).c_str());
  api.finalize(og.graph.get(), "operation graph");
  return og;
}

// An engine's global index and notes: tc tensor cores, rc runtime-compiled, cg native CUDA graph...
struct EngineInfo {
  int64_t id = -1;
  std::string notes;
  bool wants_reorder = false;  // its filter or bias must be INT8x32-reordered: our plain data won't do
  std::string label() const {
    return "eng" + std::to_string(id) + (notes.empty() ? "" : "[" + notes.substr(1) + "]");
  }
};

EngineInfo engine_info(void* engine) {
  static const char* const kNumerical[] = {"tc",       "down-convert", "reduced-prec", "fft",      "nondet",
                                           "winograd", "winograd",     "winograd",     "winograd", ""};
  static const char* const kBehavior[] = {"rc", "int8x32-reorder", "int8x32-reorder", "cg", "cublaslt"};
  EngineInfo info;
  int64_t n = 0;
  cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &info.id);
  cudnnBackendNumericalNote_t num[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  if (cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, num) == CUDNN_STATUS_SUCCESS)
    for (int64_t i = 0; i < std::min<int64_t>(n, CUDNN_NUMERICAL_NOTE_TYPE_COUNT); ++i)
      if (num[i] >= 0 && num[i] < int(std::size(kNumerical)) && *kNumerical[num[i]])
        info.notes += std::string(",") + kNumerical[num[i]];
  cudnnBackendBehaviorNote_t beh[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  if (cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                               CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &n, beh) == CUDNN_STATUS_SUCCESS)
    for (int64_t i = 0; i < std::min<int64_t>(n, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT); ++i) {
      info.wants_reorder = info.wants_reorder ||
                           beh[i] == CUDNN_BEHAVIOR_NOTE_REQUIRES_FILTER_INT8x32_REORDER ||
                           beh[i] == CUDNN_BEHAVIOR_NOTE_REQUIRES_BIAS_INT8x32_REORDER;
      if (beh[i] >= 0 && beh[i] < int(std::size(kBehavior)))
        info.notes += std::string(",") + kBehavior[beh[i]];
    }
  return info;
}

EngineInfo config_engine(void* cfg) {
  EngineInfo info;
  cudnnBackendDescriptor_t e = nullptr;
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &e) != CUDNN_STATUS_SUCCESS) return info;
  int64_t n = 0;  // cuDNN copies the configuration's engine into the descriptor passed
  if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &e) ==
          CUDNN_STATUS_SUCCESS &&
      n == 1)
    info = engine_info(e);
  cudnnBackendDestroyDescriptor(e);
  return info;
}

// The engine configurations one heuristic mode proposes, best first; *err on refusal.
std::vector<Desc> heuristic_configs(void* graph, cudnnBackendHeurMode_t mode, std::string* err) {
  Api api;
  Desc heur = api.make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "heuristics");
  LINK(api, heur.get(), CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
  SET(api, heur.get(), CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  api.finalize(heur.get(), "heuristics");
  int64_t count = 0, got = 0;
  if (api.ok())
    api.check(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
              "heuristics result count");
  std::vector<Desc> cfgs;
  std::vector<void*> raw;
  for (int64_t i = 0; i < count && api.ok(); ++i) {
    cfgs.push_back(api.make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine config"));
    raw.push_back(cfgs.back().get());
  }
  if (api.ok() && count > 0)
    api.check(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data()),
              "heuristics results");
  if (!api.ok()) {
    *err = api.err;
    return {};
  }
  cfgs.resize(size_t(std::clamp<int64_t>(got, 0, count)));
  if (cfgs.empty()) *err = last_message();  // cuDNN's reason, if it gave one
  return cfgs;
}

// Every engine of the graph that finalizes, as a configuration with default knobs; the engines go
// to *engines (the configurations refer to them), a summary of the refusals to *log.
std::vector<Desc> enumerate_configs(void* graph, std::vector<Desc>* engines, std::string* log) {
  int64_t total = 0, n = 0;
  if (cudnnStatus_t st = cudnnBackendGetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT,
                                                  CUDNN_TYPE_INT64, 1, &n, &total);
      st != CUDNN_STATUS_SUCCESS) {
    *log = "engine count: " + why(st);
    return {};
  }
  std::vector<Desc> cfgs;
  std::map<std::string, std::pair<std::string, std::string>> refused;  // status: engine ids, a reason
  std::string accepted;
  for (int64_t i = 0; i < std::min<int64_t>(total, 256); ++i) {
    Api api;
    Desc e = api.make(CUDNN_BACKEND_ENGINE_DESCRIPTOR, "engine");
    LINK(api, e.get(), CUDNN_ATTR_ENGINE_OPERATION_GRAPH, graph);
    SET(api, e.get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &i);
    api.finalize(e.get(), "engine");
    Desc cfg = api.make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine config");
    LINK(api, cfg.get(), CUDNN_ATTR_ENGINECFG_ENGINE, e.get());
    api.finalize(cfg.get(), "engine config");
    if (!api.ok()) {
      const size_t cut = api.err.find(" (");
      auto& [ids, reason] = refused[api.err.substr(0, cut)];
      ids += " " + std::to_string(i);
      if (reason.empty() && cut != std::string::npos) reason = api.err.substr(cut + 1);
      continue;
    }
    accepted += " " + engine_info(e.get()).label();
    engines->push_back(std::move(e));
    cfgs.push_back(std::move(cfg));
  }
  *log =
      std::to_string(total) + " engines; accepted:" + (accepted.empty() ? " none" : accepted) + "; refused:";
  for (const auto& [status, what] : refused)
    *log += "\n      " + status + ": engines" + what.first + " " + what.second;
  return cfgs;
}

struct Plan {
  Desc cfg, plan;
  std::string label;
  int64_t ws = 0;
};

struct CastStats {  // how the INT8 output matched each guess at cuDNN's float -> int8 conversion
  int n = 0, over = 0, nearest = 0, trunc = 0, nearest_wrap = 0, trunc_wrap = 0;
  void add(const CastStats& o) {
    n += o.n, over += o.over, nearest += o.nearest, trunc += o.trunc;
    nearest_wrap += o.nearest_wrap, trunc_wrap += o.trunc_wrap;
  }
};

// Compares the sampled outputs with the exact sums taken through the graph's epilogue in double.
bool check_output(const Problem& pr, const void* dy, const Spec& sp, CastStats* cast) {
  std::vector<unsigned char> host(pr.outputs() * out_bytes(sp.out_type));
  if (!cuda_ok(cudaMemcpy(host.data(), dy, host.size(), cudaMemcpyDeviceToHost), "copy back")) return false;
  double worst = 0, worst_rel = 0;
  int bad = 0;
  CastStats cs;
  for (const auto& sm : pr.samples) {
    const double acc = double(sm.acc), scaled = pr.scale[sm.k] * acc + pr.bias[sm.k];
    const double v = sp.math == Math::BiasRelu        ? std::max(0.0, acc + pr.bias[sm.k])
                     : sp.math == Math::ScaleBiasRelu ? std::max(0.0, scaled)
                     : sp.math == Math::Requant       ? std::max(0.0, scaled) * kOutInvScale
                                                      : acc;
    const double got = read_output(host.data() + sm.index * out_bytes(sp.out_type), sp.out_type);
    double want = v, tol = 0;
    if (sp.out_type == OutType::I8) {
      auto sat = [](double r) { return std::clamp(r, -128.0, 127.0); };
      auto wrap = [](double r) { return double(int8_t(uint8_t(int64_t(r) & 0xff))); };
      want = sat(std::nearbyint(v));
      tol = 1;  // a value within float rounding of .5 may go either way
      ++cs.n;
      cs.over += v > 127.5;
      cs.nearest += got == want;
      cs.trunc += got == sat(std::trunc(v));
      cs.nearest_wrap += got == wrap(std::nearbyint(v));
      cs.trunc_wrap += got == wrap(std::trunc(v));
    } else if (sp.out_type == OutType::F16) {
      // One rounding to half; in FP16 also what a Winograd-like algorithm loses in its transforms,
      // far below a wrong layout's error (the size of the sums themselves).
      tol = std::fabs(v) / 1024 + (sp.int8 ? 0.01 : 0.01 * pr.spread);
    }
    const double err = std::fabs(got - want);
    worst = std::max(worst, err);
    worst_rel = std::max(worst_rel, err / std::max(std::fabs(want), 1.0));
    bad += err > tol;
  }
  std::printf(" | check: max|err| %g, max rel %.3g, %d/%d off%s\n", worst, worst_rel, bad, kSamples,
              bad ? "  WRONG RESULTS" : "");
  if (sp.out_type == OutType::I8) {
    std::printf(
        "      int8 cast matches of %d (%d above 127.5): nearest+saturate %d, truncate+saturate %d, "
        "nearest+wrap %d, truncate+wrap %d\n",
        cs.n, cs.over, cs.nearest, cs.trunc, cs.nearest_wrap, cs.trunc_wrap);
    cast->add(cs);
  }
  return bad == 0;
}

// Builds one graph variant, finds plans for it, times the fastest and checks its output.
Cell run_graph(Gpu& g, const Problem& pr, int col, const Spec& sp, CastStats* cast) {
  const Shape& s = *pr.s;
  Cell cell;
  cell.state = Cell::kRefused;
  cell.variant = sp.label;
  std::printf("  %-7s %-26s", kColName[col], sp.label);
  // Inputs with the channel count the variant wants.
  const int natural = sp.int8 ? pr.cp : s.c, chans = (natural + sp.pad_to - 1) / sp.pad_to * sp.pad_to;
  void* xp = sp.int8 ? g.x8.p : g.x16.p;
  void* wp = sp.int8 ? g.w8.p : g.w16.p;
  if (chans != natural) {
    const bool up = sp.int8 ? g.xp.upload(repack<int8_t>(pr.x, pr.cp, chans, as_int8)) &&
                                  g.wp.upload(repack<int8_t>(pr.w, pr.cp, chans, as_int8))
                            : g.xp.upload(repack<__half>(pr.x, pr.cp, chans, to_half)) &&
                                  g.wp.upload(repack<__half>(pr.w, pr.cp, chans, to_half));
    if (!up) {
      std::printf("no memory for padded inputs\n");
      return cell;
    }
    xp = g.xp.p, wp = g.wp.p;
  }
  Api api;
  OpGraph og = build_graph(api, g, pr, sp, chans, xp, wp);
  if (!api.ok()) {
    std::printf("graph refused: %s\n", api.err.c_str());
    return cell;
  }
  std::printf("graph finalized\n");

  // Plans: the heuristics' configurations in their order; every engine only when no mode gives one.
  std::vector<Desc> engines;
  std::vector<Plan> plans;
  const auto t0 = Clock::now();
  auto try_configs = [&](std::vector<Desc>& cfgs) {
    int tries = 0;
    for (size_t i = 0; i < cfgs.size(); ++i) {
      Desc& cfg = cfgs[i];
      if (int(plans.size()) >= kMaxPlans || tries >= kMaxPlanTries || out_of_time() ||
          (!plans.empty() && seconds_since(t0) > kPlanSeconds)) {
        if (plans.empty()) std::printf("      (%zu more not tried: limits)\n", cfgs.size() - i);
        break;
      }
      const EngineInfo info = config_engine(cfg.get());
      if (info.wants_reorder) {
        std::printf("      %s: skipped, wants INT8x32-reordered data\n", info.label().c_str());
        continue;
      }
      ++tries;
      Api papi;
      const auto tp = Clock::now();
      Desc plan = papi.make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "plan");
      LINK(papi, plan.get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfg.get());
      if (papi.ok())  // deprecated and optional in cuDNN 9; an older library wants it
        (void)cudnnBackendSetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1,
                                       &g.dnn);
      papi.finalize(plan.get(), "plan");
      int64_t ws = 0, n = 0;
      if (papi.ok())
        papi.check(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                            CUDNN_TYPE_INT64, 1, &n, &ws),
                   "plan workspace size");
      const double ms = seconds_since(tp) * 1000;
      if (!papi.ok()) {
        std::printf("      %s: refused after %.0f ms: %s\n", info.label().c_str(), ms, papi.err.c_str());
      } else if (ws > kMaxWorkspace) {
        std::printf("      %s: plan wants %lld MiB of workspace: dropped\n", info.label().c_str(),
                    (long long)(ws >> 20));
      } else {
        std::printf("      %s: plan built in %.0f ms, workspace %lld KiB\n", info.label().c_str(), ms,
                    (long long)(ws >> 10));
        plans.push_back({std::move(cfg), std::move(plan), info.label(), ws});
      }
    }
  };
  const std::pair<cudnnBackendHeurMode_t, const char*> modes[] = {
      {CUDNN_HEUR_MODE_A, "A"}, {CUDNN_HEUR_MODE_B, "B"}, {CUDNN_HEUR_MODE_FALLBACK, "FALLBACK"}};
  for (const auto& [mode, name] : modes) {
    if (!plans.empty() || out_of_time()) break;
    std::string err;
    std::vector<Desc> cfgs = heuristic_configs(og.graph.get(), mode, &err);
    std::string list;
    for (auto& c : cfgs) list += " " + config_engine(c.get()).label();
    std::printf("    heuristics %s: %s\n", name,
                !cfgs.empty() ? (std::to_string(cfgs.size()) + " configurations:" + list).c_str()
                : err.empty() ? "no configurations"
                              : ("none: " + err).c_str());
    try_configs(cfgs);
  }
  if (plans.empty() && !out_of_time()) {
    std::string log;
    std::vector<Desc> cfgs = enumerate_configs(og.graph.get(), &engines, &log);
    std::printf("    all engines: %s\n", log.c_str());
    try_configs(cfgs);
  }
  if (plans.empty()) {
    std::printf("    -> no plan%s\n", out_of_time() ? " (out of time)" : "");
    return cell;
  }

  // Variant packs once the workspace is final: they hold its address.
  int64_t need = 0;
  for (const Plan& p : plans) need = std::max(need, p.ws);
  if (!g.ws.reserve(size_t(need))) {
    std::printf("    -> no memory for %lld bytes of workspace\n", (long long)need);
    return cell;
  }
  // Each plan timed and its output checked (the timing leaves that plan's output behind).
  std::vector<Desc> packs;
  std::string fastest;
  for (const Plan& p : plans) {
    Api vapi;
    Desc vp = vapi.make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack");
    void* ws = g.ws.p;
    const int64_t n = int64_t(og.uids.size());
    SET(vapi, vp.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, og.uids.data());
    SET(vapi, vp.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, og.ptrs.data());
    SET(vapi, vp.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
    vapi.finalize(vp.get(), "variant pack");
    if (!vapi.ok()) {
      std::printf("    %s: %s\n", p.label.c_str(), vapi.err.c_str());
      continue;
    }
    const Launch launch = [h = g.dnn, plan = p.plan.get(), pack = vp.get()]() -> const char* {
      const cudnnStatus_t st = cudnnBackendExecute(h, plan, pack);
      return st == CUDNN_STATUS_SUCCESS ? nullptr : short_status(st);
    };
    packs.push_back(std::move(vp));
    const Timing t = time_launch(g.st, launch, 3, 20, 10, g.y.p, pr.outputs() * out_bytes(sp.out_type));
    if (t.us < 0) {
      std::printf("    %s: failed to run: %s\n", p.label.c_str(), t.why.c_str());
      continue;
    }
    std::printf("    %s: %.1f us (%s)", p.label.c_str(), t.us, t.graph ? "graph" : "eager: capture refused");
    const bool ok = check_output(pr, g.y.p, sp, cast);
    if (cell.state != Cell::kTimed || t.us < cell.us) {
      cell.state = Cell::kTimed, cell.us = t.us, cell.graph = t.graph, cell.check_ok = ok;
      fastest = p.label;
    }
  }
  if (cell.state == Cell::kTimed)
    std::printf("    -> %.1f us, %s\n", cell.us, fastest.c_str());
  else
    std::printf("    -> no plan ran\n");
  return cell;
}

constexpr int kRatioWidth = 9;  // the table's ratio columns

double us_of(const Cell& c) { return c.state == Cell::kTimed ? c.us : -1; }

void print_table(const std::vector<std::array<Cell, kCols>>& rows, const CastStats& cast,
                 const char* versions) {
  std::printf("\n== cuDNN graph API, INT8 vs FP16, ResNet-50 convolutions, batch %d, NHWC: %s\n", kBatch,
              versions);
  std::printf("us per graph: median of 20 x 10 launches replayed as a CUDA graph, fastest plan of each.\n");
  std::printf(
      "fp16: half conv + bias + ReLU -> half. i8>f16: int8 conv (int32) * scale[k] + bias[k], ReLU\n");
  std::printf("-> half. i8>i8: the same * 1/y_scale -> int8. i8>i32: the bare int8 conv -> int32.\n");
  std::printf("unsup: no plan ran (reasons above); skip: not run (filter or time); e: timed eagerly\n");
  std::printf("(capture refused); !: WRONG RESULTS. Ratios > 1: INT8 faster.\n");
  print_shape_heading();
  for (const char* name : kColName) std::printf(" %7s", name);
  std::printf(" %9s %9s\n", "f16/i8f16", "f16/i8i8");
  double total[kCols] = {};
  bool missing[kCols] = {};
  for (int i = 0; i < kNumShapes; ++i) {
    const Shape& s = kShapes[i];
    print_shape_columns(s);
    for (int c = 0; c < kCols; ++c) {
      print_cell(rows[i][c]);
      if (us_of(rows[i][c]) < 0)
        missing[c] = true;
      else
        total[c] += s.count * rows[i][c].us;
    }
    print_ratio(us_of(rows[i][kF16]), us_of(rows[i][kI8F16]), kRatioWidth);
    print_ratio(us_of(rows[i][kF16]), us_of(rows[i][kI8I8]), kRatioWidth);
    std::printf("\n");
  }
  int convs = 0;
  for (const Shape& s : kShapes) convs += s.count;
  std::printf("%-29s %2d", "total, all convs (*: some missing)", convs);
  for (int c = 0; c < kCols; ++c) std::printf(" %6.0f%c", total[c], missing[c] ? '*' : ' ');
  print_ratio(missing[kF16] || missing[kI8F16] ? -1 : total[kF16], total[kI8F16], kRatioWidth);
  print_ratio(missing[kF16] || missing[kI8I8] ? -1 : total[kF16], total[kI8I8], kRatioWidth);
  std::printf("\n");
  // Which variant each column ran with, and what the INT8 output conversion turned out to be.
  for (int c = 0; c < kCols; ++c) {
    std::map<std::string, int> used;
    for (const auto& row : rows)
      if (row[c].state == Cell::kTimed) ++used[row[c].variant];
    std::printf("%s variants timed:", kColName[c]);
    for (const auto& [label, n] : used) std::printf(" %s (%d shapes);", label.c_str(), n);
    std::printf("%s\n", used.empty() ? " none" : "");
  }
  std::printf(
      "int8 output cast, %d sampled outputs (%d above 127.5) matched: nearest+saturate %d, "
      "truncate+saturate %d, nearest+wrap %d, truncate+wrap %d\n",
      cast.n, cast.over, cast.nearest, cast.trunc, cast.nearest_wrap, cast.trunc_wrap);
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // the suite may kill the probe: keep what it printed
  g_start = Clock::now();
  std::string versions;
  if (!describe_gpu(&versions)) return 1;
  std::printf("cuDNN graph API INT8 vs FP16 probe: %s\n", versions.c_str());
  // cuDNN's runtime-fusion engines compile their kernels with NVRTC; without it they are refused.
  const char* nvrtc = nullptr;
  for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"})
    if (dlopen(name, RTLD_LAZY | RTLD_LOCAL)) {
      nvrtc = name;
      break;
    }
  std::printf("NVRTC for runtime-compiled engines: %s\n", nvrtc ? nvrtc : "not found by dlopen");

  Gpu g;
  if (!cuda_ok(cudaStreamCreateWithFlags(&g.st, cudaStreamNonBlocking), "cudaStreamCreate")) return 1;
  // The stream is set once, before any capture: cuDNN refuses cudnnSetStream inside one.
  if (cudnnStatus_t st = cudnnCreate(&g.dnn); st != CUDNN_STATUS_SUCCESS) {
    std::printf("cudnnCreate: %s\n", why(st).c_str());
    return 1;
  }
  if (cudnnStatus_t st = cudnnSetStream(g.dnn, g.st); st != CUDNN_STATUS_SUCCESS) {
    std::printf("cudnnSetStream: %s\n", why(st).c_str());
    return 1;
  }
  if (!g.y_scale.upload(std::vector<float>{kOutInvScale})) return 1;

  int preferred[kCols] = {};  // the variant that last worked, tried first
  std::vector<std::array<Cell, kCols>> rows(kNumShapes);
  CastStats cast;
  for (int i = 0; i < kNumShapes; ++i) {
    const Shape& s = kShapes[i];
    auto& row = rows[i];
    if (out_of_time() || !shape_wanted(s, argc, argv)) continue;
    const Problem pr = make_problem(s);
    print_shape_intro(pr);
    std::printf(" (%.0f s in)\n", seconds_since(g_start));
    if (!(g.x8.upload(pr.x) && g.w8.upload(pr.w) && g.x16.upload(repack<__half>(pr.x, pr.cp, s.c, to_half)) &&
          g.w16.upload(repack<__half>(pr.w, pr.cp, s.c, to_half)) && g.scale.upload(pr.scale) &&
          g.bias.upload(pr.bias) && g.scale_f.upload(pr.scale_folded) && g.bias_f.upload(pr.bias_folded) &&
          g.y.reserve(pr.outputs() * 4)))
      continue;
    for (int c = 0; c < kCols; ++c) {
      const auto& vs = variants(c);
      std::vector<int> order = {preferred[c]};
      for (int v = 0; v < int(vs.size()); ++v)
        if (v != preferred[c]) order.push_back(v);
      for (int v : order) {
        const Spec& sp = vs[v];
        if (sp.pad_to > 1 && (sp.int8 ? pr.cp : s.c) % sp.pad_to == 0) continue;  // same as unpadded
        if (out_of_time()) break;
        row[c] = run_graph(g, pr, c, sp, &cast);
        if (row[c].state == Cell::kTimed) {
          preferred[c] = v;
          break;
        }
      }
    }
  }
  print_table(rows, cast, versions.c_str());
  std::printf("finished in %.0f s\n", seconds_since(g_start));
  cudnnDestroy(g.dnn);
  cudaStreamDestroy(g.st);
  return 0;
}
