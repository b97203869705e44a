// Diagnostic for the GPU suite (not a test): how fast INT8 convolution runs next to FP16 on this
// GPU, for the convolutions of torchvision's ResNet-50 (v1.5) at batch 32 on 224x224 images,
// through cuDNN's legacy convolution API, for the 1x1 stride-1 convolutions (plain GEMMs in
// NHWC) through cuBLASLt, and through graft's own INT8 kernel with its per-channel requantizing
// epilogue (src/ops/fused_conv/conv_int8_kernels.cu, linked from the build's libgraft). How graft should run explicitly quantized (Q/DQ) models rests on the
// answer: whether INT8 pays at all, which library to route it to, and what a per-output-channel
// requantizing epilogue (cuBLASLt's alpha vector + bias + ReLU) costs. Every timed result is also
// checked against a CPU reference on sampled outputs, so a layout mistake cannot pass as a speedup.
// Build: the int8probe step of scripts/gpu/run_gpu_suite.sh (g++ ... -lgraft -lcudnn -lcudart -lcublasLt),
// after a step that built libgraft.
// Run: int8_probe [parts of shape names, e.g. "stem" "s3 3x3": only the shapes matching one].
// What it shares with cudnn_graph_int8_probe.cpp (shapes, timing, data) is in int8_probe_common.h.
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "int8_probe_common.h"
#include "ops/fused_conv/conv_int8_kernels.cuh"

namespace {

constexpr int kSamples = 512;                         // output elements checked per result
constexpr size_t kDnnMaxWorkspace = size_t(1) << 30;  // cuDNN algorithms wanting more are skipped
constexpr size_t kLtWorkspace = size_t(64) << 20;
constexpr double kBudgetSeconds = 200;  // the suite kills the probe at 240 s: leave time for the table

// The methods, one table column each. i8 = INT8 out (scalar scale), i8f/i8h = float/half out,
// i32 = raw accumulator, i8v = INT8 out through a per-channel alpha vector, bias and ReLU.
enum Col { kDnnF16, kDnnI8, kDnnI8F, kLtF16, kLtI32, kLtI8, kLtI8V, kLtI8F, kLtI8H, kGraftI8V, kCols };
const char* const kColName[kCols] = {"dnn.f16", "dnn.i8", "dnn.i8f", "lt.f16", "lt.i32",
                                     "lt.i8",   "lt.i8v", "lt.i8f",  "lt.i8h", "graft.i8v"};

struct Cell {
  enum State { kNotApplicable, kRefused, kSkipped, kTimed } state = kNotApplicable;
  double us = 0;
  bool graph = true;  // timed as a replayed CUDA graph (else eagerly, host overhead included)
  bool check_ok = true;
};

struct Candidate {
  std::string label;
  Launch launch;
};

// A short timing of every candidate (FFT-like cuDNN algorithms take milliseconds on these shapes,
// too long to measure them all properly), then the full measurement of the fastest. Returns the
// winner's index, or -1; `log` gets each candidate's time or refusal.
int pick_best(cudaStream_t st, const std::vector<Candidate>& cands, void* out, size_t out_len, Timing* best,
              std::string* log) {
  int win = -1;
  double win_us = 0;
  for (size_t i = 0; i < cands.size(); ++i) {
    const Timing t = time_launch(st, cands[i].launch, 1, 3, 3, out, out_len);
    char buf[160];
    if (t.us < 0)
      std::snprintf(buf, sizeof buf, " %s=%s", cands[i].label.c_str(), t.why.c_str());
    else
      std::snprintf(buf, sizeof buf, " %s=%.1f", cands[i].label.c_str(), t.us);
    *log += buf;
    if (t.us >= 0 && (win < 0 || t.us < win_us)) win = int(i), win_us = t.us;
  }
  if (win >= 0) {
    *best = time_launch(st, cands[win].launch, 5, 20, 10, out, out_len);
    if (best->us < 0) win = -1;
  }
  return win;
}

SplitMix64 g_rng(0x9E3779B97F4A7C15ull);

// One shape's data (int8_probe_common.h's ConvData) and this probe's epilogue parameters.
struct Problem : ConvData {
  std::vector<__half> x16, w16;        // the same values as x and w, s->c channels
  float alpha = 0;                     // INT8-out scale: keeps most outputs in range, some saturated
  std::vector<float> alpha_vec, bias;  // per-output-channel requantization
};

Problem make_problem(const Shape& s) {
  Problem pr;
  make_inputs(&pr, s, g_rng);
  pr.x16.reserve(pr.x.size());
  for (size_t i = 0; i < pr.x.size(); ++i)
    if (int(i % pr.cp) < s.c) pr.x16.push_back(__float2half(float(pr.x[i])));
  for (size_t i = 0; i < pr.w.size(); ++i)
    if (int(i % pr.cp) < s.c) pr.w16.push_back(__float2half(float(pr.w[i])));
  pr.alpha = float(40.0 / pr.spread);
  for (int k = 0; k < s.k; ++k) {
    pr.alpha_vec.push_back(float(pr.alpha * (0.5 + g_rng.next_unit())));
    pr.bias.push_back(float((g_rng.next_unit() - 0.5) * 40.0));
  }
  sample_outputs(&pr, kSamples, g_rng);
  return pr;
}

// What the output should hold for one method: the sum scaled by `alpha` (or, per channel, by
// alpha_vec plus bias through a ReLU), converted to the output type.
struct Expect {
  OutType type;
  float alpha;
  bool per_channel;
};

// Compares the device output with the reference on the sampled elements; prints and returns it.
bool check_output(const Problem& pr, const void* dy, const Expect& e) {
  std::vector<unsigned char> host(pr.outputs() * out_bytes(e.type));
  if (!cuda_ok(cudaMemcpy(host.data(), dy, host.size(), cudaMemcpyDeviceToHost), "copy back")) return false;
  double worst = 0;
  int bad = 0;
  for (const auto& sm : pr.samples) {
    double want = e.per_channel ? std::max(0.0, double(pr.alpha_vec[sm.k]) * sm.acc + pr.bias[sm.k])
                                : double(e.alpha) * sm.acc;
    if (e.type == OutType::I8) want = std::clamp(std::nearbyint(want), -128.0, 127.0);
    // INT8: the library may round a scaled value at .5 the other way. FP16: one rounding to half,
    // plus what a Winograd or FFT algorithm loses in its transforms, far below a wrong layout's
    // error (the size of the sums themselves).
    const double tol = e.type == OutType::I8    ? 1.0
                       : e.type == OutType::F16 ? std::fabs(want) / 1024 + 0.01 * pr.spread
                       : e.type == OutType::F32 ? std::fabs(want) * 1e-6
                                                : 0.0;
    const double err = std::fabs(read_output(host.data() + sm.index * out_bytes(e.type), e.type) - want);
    worst = std::max(worst, err);
    bad += err > tol;
  }
  std::printf(" | check: max|err| %g, %d/%d off%s\n", worst, bad, kSamples, bad ? "  WRONG RESULTS" : "");
  return bad == 0;
}

struct Gpu {
  cudaStream_t st = nullptr;
  cudnnHandle_t dnn = nullptr;
  cublasLtHandle_t lt = nullptr;
  DevBuf ws, lt_ws, x8, w8, x16, w16, y, alpha_vec, bias;
};

// Fills in the cell of a timed method, or marks it refused; prints the detail line either way.
Cell finish(Gpu& g, const Problem& pr, const char* name, const std::vector<Candidate>& cands,
            const Expect& expect, const std::string& refusal) {
  Cell cell;
  cell.state = Cell::kRefused;
  std::printf("  %-8s", name);
  if (!refusal.empty() || cands.empty()) {
    std::printf("unsupported: %s\n", refusal.empty() ? "no candidate algorithm" : refusal.c_str());
    return cell;
  }
  Timing best;
  std::string log;
  const int win = pick_best(g.st, cands, g.y.p, pr.outputs() * out_bytes(expect.type), &best, &log);
  if (win < 0) {
    std::printf("unsupported: every candidate refused:%s\n", log.c_str());
    return cell;
  }
  cell.state = Cell::kTimed;
  cell.us = best.us;
  cell.graph = best.graph;
  std::printf("%8.1f us  %s (%s) | tried:%s", best.us, cands[win].label.c_str(),
              best.graph ? "graph" : "eager: capture refused", log.c_str());
  cell.check_ok = check_output(pr, g.y.p, expect);
  return cell;
}

struct DnnMethod {
  Col col;
  cudnnDataType_t in, out;
  OutType out_type;
};

// cuDNN legacy API, NHWC: FP16 (float compute, tensor ops with conversion allowed) or INT8 (int32
// compute), trying every forward algorithm the library accepts for the configuration.
Cell run_cudnn(Gpu& g, const Problem& pr, const DnnMethod& m,
               cudnnMathType_t int8_math = CUDNN_TENSOR_OP_MATH) {
  const Shape& s = *pr.s;
  const bool half = m.in == CUDNN_DATA_HALF;
  const int c = half ? s.c : pr.cp;
  cudnnTensorDescriptor_t xd = nullptr, yd = nullptr;
  cudnnFilterDescriptor_t wd = nullptr;
  cudnnConvolutionDescriptor_t cd = nullptr;
  std::string refusal;
  auto step = [&](cudnnStatus_t st, const char* what) {
    if (st != CUDNN_STATUS_SUCCESS && refusal.empty()) {
      char detail[256] = "";
      cudnnGetLastErrorString(detail, sizeof detail);
      refusal =
          std::string(what) + ": " + short_status(st) + (*detail ? std::string(" (") + detail + ")" : "");
    }
  };
  step(cudnnCreateTensorDescriptor(&xd), "create");
  step(cudnnCreateTensorDescriptor(&yd), "create");
  step(cudnnCreateFilterDescriptor(&wd), "create");
  step(cudnnCreateConvolutionDescriptor(&cd), "create");
  if (refusal.empty()) {
    step(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, m.in, kBatch, c, s.h, s.h), "x descriptor");
    step(cudnnSetFilter4dDescriptor(wd, m.in, CUDNN_TENSOR_NHWC, s.k, c, s.r, s.r), "w descriptor");
    step(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, m.out, kBatch, s.k, pr.p, pr.p), "y descriptor");
    step(cudnnSetConvolution2dDescriptor(cd, s.pad, s.pad, s.stride, s.stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                         half ? CUDNN_DATA_FLOAT : CUDNN_DATA_INT32),
         "conv descriptor");
    step(cudnnSetConvolutionMathType(cd, half ? CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION : int8_math),
         "math type");
  }
  const float alpha = m.out == CUDNN_DATA_INT8 ? pr.alpha : 1.f, beta = 0.f;
  const void* x = half ? g.x16.p : g.x8.p;
  const void* w = half ? g.w16.p : g.w8.p;
  std::vector<Candidate> cands;
  std::string ws_refusals;
  for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT && refusal.empty(); ++a) {
    const auto algo = cudnnConvolutionFwdAlgo_t(a);
    size_t need = 0;
    const cudnnStatus_t st = cudnnGetConvolutionForwardWorkspaceSize(g.dnn, xd, wd, cd, yd, algo, &need);
    char label[48];
    std::snprintf(label, sizeof label, "algo%d", a);
    if (st != CUDNN_STATUS_SUCCESS || need > kDnnMaxWorkspace || !g.ws.reserve(need)) {
      ws_refusals +=
          std::string(" ") + label + "=" + (st != CUDNN_STATUS_SUCCESS ? short_status(st) : "WORKSPACE");
      continue;
    }
    std::snprintf(label, sizeof label, "algo%d/ws%zuMiB", a, need >> 20);
    cands.push_back({label, [&g, xd, wd, cd, yd, algo, need, x, w, alpha, beta]() -> const char* {
                       const cudnnStatus_t r = cudnnConvolutionForward(g.dnn, &alpha, xd, x, wd, w, cd, algo,
                                                                       g.ws.p, need, &beta, yd, g.y.p);
                       return r == CUDNN_STATUS_SUCCESS ? nullptr : short_status(r);
                     }});
  }
  if (refusal.empty() && cands.empty()) refusal = "no algorithm has a workspace size:" + ws_refusals;
  const Cell cell = finish(g, pr, kColName[m.col], cands, {m.out_type, alpha, false}, refusal);
  if (cell.state == Cell::kTimed && !ws_refusals.empty())
    std::printf("           refused:%s\n", ws_refusals.c_str());
  if (cd) cudnnDestroyConvolutionDescriptor(cd);
  if (wd) cudnnDestroyFilterDescriptor(wd);
  if (yd) cudnnDestroyTensorDescriptor(yd);
  if (xd) cudnnDestroyTensorDescriptor(xd);
  return cell;
}

struct LtMethod {
  Col col;
  cudaDataType_t ab, d, scale;
  cublasComputeType_t compute;
  OutType out_type;
  bool per_channel;  // alpha vector (one per output channel), bias and ReLU in the epilogue
};

// A 1x1 stride-1 convolution as one GEMM: Y[M = N*H*W, K] = X[M, C] * W[K, C]^T, all row-major.
// cuBLASLt is column-major, so it computes Y^T (K x M) = op(A) * B with A = the weights seen as a
// C x K column-major matrix (ld C) taken transposed, and B = the activations seen as C x M (ld C)
// taken as is: both operands contiguous along the reduction ("TN"), the one layout cuBLASLt's
// INT8 tensor-core kernels accept without reordering, and Y^T's rows are the output channels, so
// the alpha vector and the bias run per channel.
Cell run_lt(Gpu& g, const Problem& pr, const LtMethod& m) {
  const Shape& s = *pr.s;
  const uint64_t rows_m = uint64_t(kBatch) * s.h * s.h;
  const bool half = m.ab == CUDA_R_16F;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t ad = nullptr, bd = nullptr, dd = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  std::string refusal;
  auto step = [&](cublasStatus_t st, const char* what) {
    if (st != CUBLAS_STATUS_SUCCESS && refusal.empty())
      refusal = std::string(what) + ": " + cublasLtGetStatusString(st);
  };
  // cuBLASLt reads each attribute by value, as the int32/uint32/pointer its documentation names.
  auto set = [&](cublasLtMatmulDescAttributes_t attr, const auto& v, const char* what) {
    if (refusal.empty()) step(cublasLtMatmulDescSetAttribute(op, attr, &v, sizeof v), what);
  };
  step(cublasLtMatmulDescCreate(&op, m.compute, m.scale), "matmul desc");
  set(CUBLASLT_MATMUL_DESC_TRANSA, int32_t(CUBLAS_OP_T), "transa");
  set(CUBLASLT_MATMUL_DESC_TRANSB, int32_t(CUBLAS_OP_N), "transb");
  if (m.per_channel) {
    set(CUBLASLT_MATMUL_DESC_POINTER_MODE, int32_t(CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO),
        "mode");
    set(CUBLASLT_MATMUL_DESC_EPILOGUE, uint32_t(CUBLASLT_EPILOGUE_RELU_BIAS), "epilogue");
    set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(g.bias.p), "bias");
    set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, int32_t(CUDA_R_32F), "bias type");
  }
  step(cublasLtMatrixLayoutCreate(&ad, m.ab, s.c, s.k, s.c), "A layout");
  step(cublasLtMatrixLayoutCreate(&bd, m.ab, s.c, rows_m, s.c), "B layout");
  step(cublasLtMatrixLayoutCreate(&dd, m.d, s.k, rows_m, s.k), "D layout");
  step(cublasLtMatmulPreferenceCreate(&pref), "preference");
  const uint64_t ws_cap = kLtWorkspace;
  if (refusal.empty())
    step(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_cap,
                                              sizeof ws_cap),
         "preference");
  cublasLtMatmulHeuristicResult_t heur[8] = {};
  int found = 0;
  auto ask = [&] {
    found = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(g.lt, op, ad, bd, dd, dd, pref, 8, heur, &found);
    if (st != CUBLAS_STATUS_SUCCESS) found = 0;
    return st;
  };
  std::string note;
  if (refusal.empty()) {
    cublasStatus_t st = ask();
    // The IMMA kernels are documented for the vector-alpha mode with a host beta; try that too.
    if (found == 0 && m.per_channel) {
      set(CUBLASLT_MATMUL_DESC_POINTER_MODE, int32_t(CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST),
          "mode");
      st = ask();
      note = " (BETA_ZERO refused; BETA_HOST)";
    }
    if (found == 0) step(st == CUBLAS_STATUS_SUCCESS ? CUBLAS_STATUS_NOT_SUPPORTED : st, "heuristic");
  }
  // alpha and beta in the scale type; by pointer, read when each launch (or graph node) is made.
  const int32_t one_i = 1, zero_i = 0;
  const float one_f = 1.f, zero_f = 0.f, alpha_i8 = pr.alpha;
  const void* alpha = m.scale == CUDA_R_32I ? static_cast<const void*>(&one_i)
                      : m.per_channel       ? g.alpha_vec.p
                      : m.d == CUDA_R_8I    ? static_cast<const void*>(&alpha_i8)
                                            : static_cast<const void*>(&one_f);
  const void* beta =
      m.scale == CUDA_R_32I ? static_cast<const void*>(&zero_i) : static_cast<const void*>(&zero_f);
  const void* wts = half ? g.w16.p : g.w8.p;
  const void* acts = half ? g.x16.p : g.x8.p;
  std::vector<Candidate> cands;
  if (found > 0 && !g.lt_ws.reserve(kLtWorkspace)) refusal = "no workspace";
  for (int i = 0; i < found && refusal.empty(); ++i) {
    if (heur[i].state != CUBLAS_STATUS_SUCCESS) continue;
    char label[48];
    std::snprintf(label, sizeof label, "heur%d/ws%zuKiB", i, heur[i].workspaceSize >> 10);
    const cublasLtMatmulAlgo_t algo = heur[i].algo;
    cands.push_back({label, [&g, op, ad, bd, dd, algo, alpha, beta, wts, acts]() -> const char* {
                       const cublasStatus_t st =
                           cublasLtMatmul(g.lt, op, alpha, wts, ad, acts, bd, beta, g.y.p, dd, g.y.p, dd,
                                          &algo, g.lt_ws.p, kLtWorkspace, g.st);
                       return st == CUBLAS_STATUS_SUCCESS ? nullptr : cublasLtGetStatusString(st);
                     }});
  }
  const std::string name = kColName[m.col] + note;
  const Expect expect{m.out_type, m.d == CUDA_R_8I ? pr.alpha : 1.f, m.per_channel};
  const Cell cell = finish(g, pr, name.c_str(), cands, expect, refusal);
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  if (dd) cublasLtMatrixLayoutDestroy(dd);
  if (bd) cublasLtMatrixLayoutDestroy(bd);
  if (ad) cublasLtMatrixLayoutDestroy(ad);
  if (op) cublasLtMatmulDescDestroy(op);
  return cell;
}

// graft's INT8 kernel, the same epilogue as lt.i8v (per-channel scale, bias, ReLU, INT8 out) on
// every shape whose channels it takes (a multiple of 16: not the stem's 3, padded to 4 here).
Cell run_graft(Gpu& g, const Problem& pr) {
  namespace gk = graft::cuda::k;
  const Shape& s = *pr.s;
  gk::Window2d win;
  win.n = kBatch;
  win.c = pr.cp;
  win.h = win.w = s.h;
  win.kh = win.kw = s.r;
  win.sh = win.sw = s.stride;
  win.ph = win.pw = win.peh = win.pew = s.pad;
  win.oh = win.ow = pr.p;
  gk::Int8ConvEpilogue e;
  e.scale = static_cast<const float*>(g.alpha_vec.p);
  e.bias = static_cast<const float*>(g.bias.p);
  e.act = gk::Epilogue{1, 0.f, 0.f};
  e.out_scale = 1.f;
  std::string refusal;
  std::vector<Candidate> cands;
  if (!gk::conv_nhwc_int8_supported(win, s.k, e.act))
    refusal = "outside conv_nhwc_int8_supported (" + std::to_string(pr.cp) + " channels: not a multiple of 16)";
  else
    cands.push_back({"mma.s8", [&g, win, e, k = s.k]() -> const char* {
                       const cudaError_t r = gk::launch_conv_nhwc_int8(static_cast<const int8_t*>(g.x8.p),
                                                                       static_cast<const int8_t*>(g.w8.p), e, g.y.p,
                                                                       win, k, g.st);
                       return r == cudaSuccess ? nullptr : cudaGetErrorName(r);
                     }});
  return finish(g, pr, kColName[kGraftI8V], cands, {OutType::I8, 1.f, true}, refusal);
}

bool applies(int col, const Shape& s) { return col < kLtF16 || col == kGraftI8V || s.gemm(); }

// The fastest timed result among `cols`, or -1.
double fastest(const std::array<Cell, kCols>& row, std::initializer_list<Col> cols) {
  double best = -1;
  for (Col c : cols)
    if (row[c].state == Cell::kTimed && (best < 0 || row[c].us < best)) best = row[c].us;
  return best;
}

constexpr int kRatioWidth = 7;  // the table's ratio columns

// A count-weighted sum over the rows `pick` selects of the time `get` gives (negative: none);
// *incomplete is set when some selected row has no time.
template <class Pick, class Get>
double weighted(const std::vector<std::array<Cell, kCols>>& rows, Pick pick, Get get, bool* incomplete) {
  double sum = 0;
  for (int i = 0; i < kNumShapes; ++i) {
    if (!pick(kShapes[i])) continue;
    const double us = get(kShapes[i], rows[i]);
    if (us < 0)
      *incomplete = true;
    else
      sum += kShapes[i].count * us;
  }
  return sum;
}

void print_table(const std::vector<std::array<Cell, kCols>>& rows, const char* versions) {
  std::printf("\n== INT8 vs FP16, ResNet-50 convolutions, batch %d, NHWC: %s\n", kBatch, versions);
  std::printf(
      "us per convolution (median of 20 x 10 launches, replayed as a CUDA graph). dnn = cuDNN legacy API;\n"
      "lt = cuBLASLt GEMM (1x1 stride-1 only). f16: FP16 in/out, fp32 accumulate. i8: INT8 in/out, int32\n"
      "accumulate, scalar scale. i8f/i8h: INT8 in, float/half out. i32: INT8 in, int32 out. i8v: INT8 out\n"
      "with a per-channel alpha vector + bias + ReLU epilogue. unsup: refused (reason above); e: timed\n"
      "eagerly (capture refused, host overhead included); !: WRONG RESULTS. f16/i8 = dnn.f16/dnn.i8,\n"
      "f16/i8v = lt.f16/lt.i8v. graft.i8v: graft's own INT8 kernel, lt.i8v's epilogue, every shape;\n"
      "f16/g = the faster of dnn.f16 and lt.f16 over graft.i8v.\n");
  print_shape_heading();
  for (const char* name : kColName) std::printf(" %7s", name);
  std::printf(" %7s %7s %7s\n", "f16/i8", "f16/i8v", "f16/g");
  for (int i = 0; i < kNumShapes; ++i) {
    const Shape& s = kShapes[i];
    print_shape_columns(s);
    for (const Cell& c : rows[i]) print_cell(c);
    print_ratio(fastest(rows[i], {kDnnF16}), fastest(rows[i], {kDnnI8}), kRatioWidth);
    print_ratio(fastest(rows[i], {kLtF16}), fastest(rows[i], {kLtI8V}), kRatioWidth);
    print_ratio(fastest(rows[i], {kDnnF16, kLtF16}), fastest(rows[i], {kGraftI8V}), kRatioWidth);
    std::printf("\n");
  }
  // Totals per column, over every convolution and over the ones cuBLASLt can take.
  for (const bool gemm_only : {false, true}) {
    auto pick = [gemm_only](const Shape& s) { return !gemm_only || s.gemm(); };
    int convs = 0;
    for (const Shape& s : kShapes) convs += pick(s) ? s.count : 0;
    std::printf("%-29s %2d", gemm_only ? "total, 1x1 stride-1 convs" : "total, all convs", convs);
    double col_total[kCols] = {};
    bool col_missing[kCols] = {};
    for (int c = 0; c < kCols; ++c) {
      auto get = [c](const Shape& s, const std::array<Cell, kCols>& row) {
        return !applies(c, s) ? 0.0 : row[c].state == Cell::kTimed ? row[c].us : -1.0;
      };
      bool applicable = false;
      for (const Shape& s : kShapes) applicable = applicable || (pick(s) && applies(c, s));
      col_total[c] = weighted(rows, pick, get, &col_missing[c]);
      if (!applicable)
        std::printf(" %7s", "-");
      else
        std::printf(" %6.0f%c", col_total[c], col_missing[c] ? '*' : ' ');
    }
    print_ratio(col_missing[kDnnF16] || col_missing[kDnnI8] ? -1 : col_total[kDnnF16], col_total[kDnnI8],
                kRatioWidth);
    print_ratio(col_missing[kLtF16] || col_missing[kLtI8V] || !gemm_only ? -1 : col_total[kLtF16],
                col_total[kLtI8V], kRatioWidth);
    std::printf("\n");
  }
  // What graft could reach, taking the faster library per shape.
  auto all = [](const Shape&) { return true; };
  bool miss16 = false, miss_v = false, miss_s = false;
  auto best_f16 = [](const Shape&, const auto& r) { return fastest(r, {kDnnF16, kLtF16}); };
  auto per_channel = [](const Shape& s, const auto& r) {
    return s.gemm() && fastest(r, {kLtI8V}) >= 0 ? fastest(r, {kLtI8V}) : fastest(r, {kDnnI8F});
  };
  auto scalar = [](const Shape&, const auto& r) { return fastest(r, {kDnnI8, kLtI8, kLtI8V}); };
  const double f16 = weighted(rows, all, best_f16, &miss16);
  const double i8v = weighted(rows, all, per_channel, &miss_v);
  const double i8s = weighted(rows, all, scalar, &miss_s);
  std::printf("best per shape, all convs (* = some shape missing):\n");
  std::printf("  %-60s %7.0f us%s\n", "fp16, faster of dnn.f16 / lt.f16", f16, miss16 ? " *" : "");
  std::printf("  %-60s %7.0f us%s", "int8 per-channel: lt.i8v on 1x1/1, else dnn.i8f (+ requant pass)", i8v,
              miss_v ? " *" : "");
  print_ratio(f16, i8v, kRatioWidth);
  std::printf("\n  %-60s %7.0f us%s", "int8 scalar scale: fastest of dnn.i8 / lt.i8 / lt.i8v", i8s,
              miss_s ? " *" : "");
  print_ratio(f16, i8s, kRatioWidth);
  // graft's kernel where it runs (all but the stem), the faster FP16 library call where it does not.
  bool miss_g = false;
  auto graft_or_f16 = [](const Shape&, const auto& r) {
    return fastest(r, {kGraftI8V}) >= 0 ? fastest(r, {kGraftI8V}) : fastest(r, {kDnnF16, kLtF16});
  };
  auto graft_or_best = [](const Shape&, const auto& r) {
    const double gi = fastest(r, {kGraftI8V}), f = fastest(r, {kDnnF16, kLtF16});
    return gi >= 0 && (f < 0 || gi < f) ? gi : f;
  };
  const double gv = weighted(rows, all, graft_or_f16, &miss_g);
  const double gb = weighted(rows, all, graft_or_best, &miss_g);
  std::printf("\n  %-60s %7.0f us%s", "graft.i8v where it runs, else fp16", gv, miss_g ? " *" : "");
  print_ratio(f16, gv, kRatioWidth);
  std::printf("\n  %-60s %7.0f us%s", "per shape the faster of graft.i8v and fp16", gb, miss_g ? " *" : "");
  print_ratio(f16, gb, kRatioWidth);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // the suite may kill the probe: keep what it printed
  const auto start = std::chrono::steady_clock::now();
  auto out_of_time = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > kBudgetSeconds;
  };
  std::string versions;
  if (!describe_gpu(&versions)) return 1;
  versions += ", cuBLASLt " + std::to_string(cublasLtGetVersion());
  std::printf("INT8 vs FP16 convolution probe: %s\n", versions.c_str());

  Gpu g;
  if (!cuda_ok(cudaStreamCreateWithFlags(&g.st, cudaStreamNonBlocking), "cudaStreamCreate")) return 1;
  // The stream is set once, before any capture: cuDNN refuses cudnnSetStream inside one.
  if (cudnnStatus_t st = cudnnCreate(&g.dnn); st != CUDNN_STATUS_SUCCESS) {
    std::printf("cudnnCreate: %s: no cuDNN results\n", cudnnGetErrorString(st));
    g.dnn = nullptr;
  } else if ((st = cudnnSetStream(g.dnn, g.st)) != CUDNN_STATUS_SUCCESS) {
    std::printf("cudnnSetStream: %s: no cuDNN results\n", cudnnGetErrorString(st));
    cudnnDestroy(g.dnn);
    g.dnn = nullptr;
  }
  if (cublasStatus_t st = cublasLtCreate(&g.lt); st != CUBLAS_STATUS_SUCCESS) {
    std::printf("cublasLtCreate: %s: no cuBLASLt results\n", cublasLtGetStatusString(st));
    g.lt = nullptr;
  }

  const DnnMethod dnn_methods[] = {
      {kDnnF16, CUDNN_DATA_HALF, CUDNN_DATA_HALF, OutType::F16},    // FP16
      {kDnnI8, CUDNN_DATA_INT8, CUDNN_DATA_INT8, OutType::I8},      // INT8_CONFIG
      {kDnnI8F, CUDNN_DATA_INT8, CUDNN_DATA_FLOAT, OutType::F32}};  // INT8_EXT_CONFIG
  const LtMethod lt_methods[] = {
      {kLtF16, CUDA_R_16F, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, OutType::F16, false},
      {kLtI32, CUDA_R_8I, CUDA_R_32I, CUDA_R_32I, CUBLAS_COMPUTE_32I, OutType::I32, false},
      {kLtI8, CUDA_R_8I, CUDA_R_8I, CUDA_R_32F, CUBLAS_COMPUTE_32I, OutType::I8, false},
      {kLtI8V, CUDA_R_8I, CUDA_R_8I, CUDA_R_32F, CUBLAS_COMPUTE_32I, OutType::I8, true},
      {kLtI8F, CUDA_R_8I, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32I, OutType::F32, false},
      {kLtI8H, CUDA_R_8I, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32I, OutType::F16, false},
  };
  std::vector<std::array<Cell, kCols>> rows(kNumShapes);
  for (int i = 0; i < kNumShapes; ++i) {
    const Shape& s = kShapes[i];
    auto& row = rows[i];
    for (int c = 0; c < kCols; ++c)
      if (applies(c, s)) row[c].state = Cell::kSkipped;
    if (out_of_time() || !shape_wanted(s, argc, argv)) continue;
    const Problem pr = make_problem(s);
    print_shape_intro(pr);
    std::printf("\n");
    if (!(g.x8.upload(pr.x) && g.w8.upload(pr.w) && g.x16.upload(pr.x16) && g.w16.upload(pr.w16) &&
          g.alpha_vec.upload(pr.alpha_vec) && g.bias.upload(pr.bias) && g.y.reserve(pr.outputs() * 4)))
      continue;
    for (const DnnMethod& m : dnn_methods) {
      if (!g.dnn)
        row[m.col].state = Cell::kRefused;
      else if (!out_of_time())
        row[m.col] = run_cudnn(g, pr, m);
      // Should this cuDNN tie INT8 to the default math type rather than the tensor-op one, say so.
      if (m.in == CUDNN_DATA_INT8 && row[m.col].state == Cell::kRefused && g.dnn && !out_of_time()) {
        std::printf("  again with CUDNN_DEFAULT_MATH:\n");
        row[m.col] = run_cudnn(g, pr, m, CUDNN_DEFAULT_MATH);
      }
    }
    for (const LtMethod& m : lt_methods) {
      if (!s.gemm()) continue;
      if (!g.lt)
        row[m.col].state = Cell::kRefused;
      else if (!out_of_time())
        row[m.col] = run_lt(g, pr, m);
    }
    if (!out_of_time()) row[kGraftI8V] = run_graft(g, pr);
  }
  print_table(rows, versions.c_str());
  if (g.lt) cublasLtDestroy(g.lt);
  if (g.dnn) cudnnDestroy(g.dnn);
  cudaStreamDestroy(g.st);
  return 0;
}
