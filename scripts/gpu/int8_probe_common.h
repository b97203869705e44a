// What the GPU suite's two INT8 probes share, scripts/gpu/int8_probe.cpp (cuDNN's legacy API and
// cuBLASLt) and scripts/gpu/cudnn_graph_int8_probe.cpp (cuDNN's graph API); both include it, and
// nothing else does. Header-only: each probe is one translation unit built by its own g++ line in
// scripts/gpu/run_gpu_suite.sh, which finds this file next to the probe. Here: the ResNet-50
// convolutions and the shape filter, the CUDA and cuDNN status helpers, the growing device buffer,
// the CUDA-graph timing (median of replays), the random integer data with its exact reference sums,
// and the pieces of the result tables both print. Each probe seeds its own generator.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

constexpr int kBatch = 32;

// One distinct convolution of the network; square images and kernels, NHWC.
struct Shape {
  const char* role;
  int count;  // how often it occurs in the network
  int c, h, k, r, stride, pad;
  int p() const { return (h + 2 * pad - r) / stride + 1; }
  bool gemm() const { return r == 1 && stride == 1; }
  int cpad() const { return (c + 3) / 4 * 4; }  // cuDNN's INT8 configurations want channels % 4 == 0
};

// torchvision resnet50: stage i has 3/4/6/3 bottlenecks; the first one's 1x1 reduce reads the
// previous stage's width ("reduce1"), the stride sits on its 3x3 (v1.5), and a 1x1 projection
// ("down") matches the shortcut. 53 convolutions in all.
const Shape kShapes[] = {
    {"stem 7x7/2", 1, 3, 224, 64, 7, 2, 3},      {"s1 reduce1", 1, 64, 56, 64, 1, 1, 0},
    {"s1 reduce", 2, 256, 56, 64, 1, 1, 0},      {"s1 3x3", 3, 64, 56, 64, 3, 1, 1},
    {"s1 expand+down", 4, 64, 56, 256, 1, 1, 0},  // stage 1's projection has stride 1: the same GEMM
    {"s2 reduce1", 1, 256, 56, 128, 1, 1, 0},    {"s2 3x3/2", 1, 128, 56, 128, 3, 2, 1},
    {"s2 down/2", 1, 256, 56, 512, 1, 2, 0},     {"s2 reduce", 3, 512, 28, 128, 1, 1, 0},
    {"s2 3x3", 3, 128, 28, 128, 3, 1, 1},        {"s2 expand", 4, 128, 28, 512, 1, 1, 0},
    {"s3 reduce1", 1, 512, 28, 256, 1, 1, 0},    {"s3 3x3/2", 1, 256, 28, 256, 3, 2, 1},
    {"s3 down/2", 1, 512, 28, 1024, 1, 2, 0},    {"s3 reduce", 5, 1024, 14, 256, 1, 1, 0},
    {"s3 3x3", 5, 256, 14, 256, 3, 1, 1},        {"s3 expand", 6, 256, 14, 1024, 1, 1, 0},
    {"s4 reduce1", 1, 1024, 14, 512, 1, 1, 0},   {"s4 3x3/2", 1, 512, 14, 512, 3, 2, 1},
    {"s4 down/2", 1, 1024, 14, 2048, 1, 2, 0},   {"s4 reduce", 2, 2048, 7, 512, 1, 1, 0},
    {"s4 3x3", 2, 512, 7, 512, 3, 1, 1},         {"s4 expand", 3, 512, 7, 2048, 1, 1, 0},
};
constexpr int kNumShapes = sizeof(kShapes) / sizeof(kShapes[0]);

// The probes' arguments are parts of shape names, e.g. "stem" "s3 3x3": with none, every shape.
inline bool shape_wanted(const Shape& s, int argc, char** argv) {
  bool wanted = argc == 1;
  for (int a = 1; a < argc; ++a) wanted = wanted || std::strstr(s.role, argv[a]);
  return wanted;
}

inline bool cuda_ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::printf("  CUDA error in %s: %s\n", what, cudaGetErrorString(e));
  (void)cudaGetLastError();  // clear it if it is not sticky, so later checks see their own
  return false;
}

inline const char* short_status(cudnnStatus_t s) {
  const char* t = cudnnGetErrorString(s);
  return std::strncmp(t, "CUDNN_STATUS_", 13) == 0 ? t + 13 : t;
}

// The device, runtime and cuDNN versions, for the probe's first line and its table's title; false,
// having said so, when there is no device.
inline bool describe_gpu(std::string* versions) {
  int devices = 0;
  if (!cuda_ok(cudaGetDeviceCount(&devices), "cudaGetDeviceCount") || devices == 0) {
    std::printf("no CUDA device\n");
    return false;
  }
  cudaDeviceProp prop{};
  int runtime = 0;
  cuda_ok(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  cuda_ok(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  char buf[400];
  std::snprintf(buf, sizeof buf, "%s (sm_%d%d, %d SMs), CUDA runtime %d, cuDNN %zu (header %d)", prop.name,
                prop.major, prop.minor, prop.multiProcessorCount, runtime, cudnnGetVersion(), CUDNN_VERSION);
  *versions = buf;
  return true;
}

// A device allocation that only grows, so one buffer serves every shape.
struct DevBuf {
  void* p = nullptr;
  size_t bytes = 0;
  DevBuf() = default;
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  ~DevBuf() {
    if (p) cudaFree(p);
  }
  bool reserve(size_t n) {
    if (n <= bytes) return true;
    if (p) cudaFree(p);
    p = nullptr;
    bytes = 0;
    if (!cuda_ok(cudaMalloc(&p, n), "cudaMalloc")) return false;
    bytes = n;
    return true;
  }
  template <class T>
  bool upload(const std::vector<T>& v) {
    return reserve(v.size() * sizeof(T)) &&
           cuda_ok(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "upload");
  }
};

// ---- timing ----

// One launch of the method under test: nullptr when accepted, else the library's reason.
using Launch = std::function<const char*()>;

struct Timing {
  double us = -1;
  bool graph = false;
  std::string why;  // set when it could not be timed
};

// Median over `iters` of the per-launch time of `reps` back-to-back launches. The launches are
// captured into one CUDA graph where the library allows it: timed eagerly, the events would also
// enclose the host work between kernels (cuDNN can spend more per call than its kernel takes on
// these shapes), which graft's engine, replaying a captured graph, never pays.
// The output is overwritten with a pattern before the timed launches: should a library run its
// kernel outside the capture, the graph would time nothing, and the check would see the pattern.
inline Timing time_launch(cudaStream_t st, const Launch& launch, int warm, int iters, int reps, void* out,
                          size_t out_len) {
  Timing t;
  for (int i = 0; i < warm; ++i)
    if (const char* e = launch()) return t.why = e, t;
  if (cudaError_t e = cudaStreamSynchronize(st); e != cudaSuccess) return t.why = cudaGetErrorString(e), t;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  if (cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal) == cudaSuccess) {
    bool ok = true;
    for (int r = 0; r < reps && ok; ++r) ok = launch() == nullptr;
    const bool ended = cudaStreamEndCapture(st, &graph) == cudaSuccess;
    t.graph = ok && ended && graph && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
  }
  if (graph) cudaGraphDestroy(graph);
  (void)cudaGetLastError();  // a refused capture leaves its error behind
  if (t.graph && cudaGraphLaunch(exec, st) != cudaSuccess) t.graph = false;  // the first launch uploads it
  cuda_ok(cudaMemsetAsync(out, 0x5a, out_len, st), "poison output");
  cudaEvent_t a = nullptr, b = nullptr;
  std::vector<double> samples;
  if (cuda_ok(cudaEventCreate(&a), "cudaEventCreate") && cuda_ok(cudaEventCreate(&b), "cudaEventCreate")) {
    for (int i = 0; i < iters && t.why.empty(); ++i) {
      cudaEventRecord(a, st);
      if (t.graph) {
        if (cudaError_t e = cudaGraphLaunch(exec, st); e != cudaSuccess) t.why = cudaGetErrorString(e);
      } else {
        for (int r = 0; r < reps && t.why.empty(); ++r)
          if (const char* e = launch()) t.why = e;
      }
      cudaEventRecord(b, st);
      float ms = 0;
      if (cudaError_t e = cudaEventSynchronize(b); e != cudaSuccess)
        t.why = cudaGetErrorString(e);
      else if (cudaEventElapsedTime(&ms, a, b) == cudaSuccess)
        samples.push_back(ms * 1000.0 / reps);
    }
  } else {
    t.why = "no events";
  }
  if (a) cudaEventDestroy(a);
  if (b) cudaEventDestroy(b);
  if (exec) cudaGraphExecDestroy(exec);
  if (t.why.empty() && int(samples.size()) == iters) {
    std::nth_element(samples.begin(), samples.begin() + iters / 2, samples.end());
    t.us = samples[iters / 2];
  }
  return t;
}

// ---- data ----

// splitmix64: fast enough for tens of millions of values per shape. Each probe picks its seed.
struct SplitMix64 {
  uint64_t state;
  explicit SplitMix64(uint64_t seed) : state(seed) {}
  uint64_t next_u64() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double next_unit() { return double(next_u64() >> 11) * (1.0 / 9007199254740992.0); }
};

// The part of one shape's data both probes make alike: small random integers, the same values
// for the FP16 and INT8 runs, so every method computes the same exact sum, and the reference is
// that sum. Each probe's Problem adds its own per-channel epilogue parameters.
struct ConvData {
  const Shape* s = nullptr;
  int p = 0, cp = 0;         // output extent; channels as INT8 sees them (padded to 4)
  std::vector<int8_t> x, w;  // NHWC and KRSC with cp channels; padded input channels are 0
  double spread = 0;         // standard deviation of the exact sums
  struct Sample {
    size_t index;
    int k;
    int64_t acc;
  };
  std::vector<Sample> samples;
  size_t outputs() const { return size_t(kBatch) * p * p * s->k; }
};

inline int64_t reference_sum(const ConvData& pr, int n, int oy, int ox, int k) {
  const Shape& s = *pr.s;
  int64_t acc = 0;
  for (int r = 0; r < s.r; ++r) {
    const int iy = oy * s.stride - s.pad + r;
    if (iy < 0 || iy >= s.h) continue;
    for (int q = 0; q < s.r; ++q) {
      const int ix = ox * s.stride - s.pad + q;
      if (ix < 0 || ix >= s.h) continue;
      const int8_t* xp = &pr.x[((size_t(n) * s.h + iy) * s.h + ix) * pr.cp];
      const int8_t* wp = &pr.w[((size_t(k) * s.r + r) * s.r + q) * pr.cp];
      for (int c = 0; c < pr.cp; ++c) acc += int(xp[c]) * int(wp[c]);
    }
  }
  return acc;
}

// The shape, its extents, random inputs and weights, and the spread of the sums they make.
inline void make_inputs(ConvData* pr, const Shape& s, SplitMix64& rng) {
  pr->s = &s;
  pr->p = s.p();
  pr->cp = s.cpad();
  auto value = [&rng] { return int8_t(int(rng.next_u64() % 16) - 8); };  // [-8, 7]: sums stay exact in fp32
  pr->x.resize(size_t(kBatch) * s.h * s.h * pr->cp);
  for (size_t i = 0; i < pr->x.size(); ++i) pr->x[i] = int(i % pr->cp) < s.c ? value() : 0;
  pr->w.resize(size_t(s.k) * s.r * s.r * pr->cp);
  for (auto& v : pr->w) v = value();
  pr->spread = 21.5 * std::sqrt(double(s.r * s.r * s.c));  // E[v^2] = 21.5 for v uniform on [-8, 7]
}

// `n` outputs to check, with their exact sums: the first and last always, for the padded
// corners; the rest at random.
inline void sample_outputs(ConvData* pr, int n_samples, SplitMix64& rng) {
  const Shape& s = *pr->s;
  const int p = pr->p;
  for (int i = 0; i < n_samples; ++i) {
    const size_t idx = i == 0 ? 0 : i == 1 ? pr->outputs() - 1 : size_t(rng.next_u64() % pr->outputs());
    const int k = int(idx % s.k), ox = int(idx / s.k % p), oy = int(idx / s.k / p % p);
    const int n = int(idx / s.k / p / p);
    pr->samples.push_back({idx, k, reference_sum(*pr, n, oy, ox, k)});
  }
}

// What one output element is stored as.
enum class OutType { I8, I32, F16, F32 };
inline size_t out_bytes(OutType t) { return t == OutType::I8 ? 1 : t == OutType::F16 ? 2 : 4; }

inline double read_output(const unsigned char* at, OutType t) {
  int32_t i32;
  float f32;
  __half f16;
  switch (t) {
    case OutType::I8:
      return int8_t(*at);
    case OutType::I32:
      return std::memcpy(&i32, at, 4), double(i32);
    case OutType::F32:
      return std::memcpy(&f32, at, 4), double(f32);
    default:
      return std::memcpy(&f16, at, 2), double(__half2float(f16));
  }
}

// ---- output ----

// The line that opens a shape's section of the log, without its line end.
inline void print_shape_intro(const ConvData& pr) {
  const Shape& s = *pr.s;
  std::printf("\n%s: %d -> %d channels, %dx%d/%d on %dx%d -> %dx%d, %d in the network", s.role, s.c, s.k, s.r,
              s.r, s.stride, s.h, s.h, pr.p, pr.p, s.count);
}

// The table's first three columns: the heading, then a shape's name, dimensions and count.
inline void print_shape_heading() { std::printf("%-15s %-13s %2s", "conv", "C>K@HxW", "n"); }
inline void print_shape_columns(const Shape& s) {
  char dims[32];
  std::snprintf(dims, sizeof dims, "%d>%d@%d", s.c, s.k, s.h);
  std::printf("%-15s %-13s %2d", s.role, dims, s.count);
}

// A result cell (either probe's Cell): the time, marked ! for wrong results and e for an eager
// timing, or why there is none.
template <class Cell>
void print_cell(const Cell& c) {
  if (c.state == Cell::kTimed)
    std::printf(" %6.1f%c", c.us, !c.check_ok ? '!' : c.graph ? ' ' : 'e');
  else
    std::printf(" %7s", c.state == Cell::kRefused ? "unsup" : c.state == Cell::kSkipped ? "skip" : "-");
}

// num / den in a column `width` wide, or "-" where either is missing.
inline void print_ratio(double num, double den, int width) {
  if (num > 0 && den > 0)
    std::printf(" %*.2fx", width - 1, num / den);
  else
    std::printf(" %*s", width, "-");
}

}  // namespace
