// The random family's CUDA kernels and CUDA ops (definitions and CPU references: random.cpp).
#include "ops/random/random.h"

#include <atomic>
#include <cstring>
#include <curand_kernel.h>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------

namespace k {

// Launchers for the kernels of RandomUniform(Like), RandomNormal(Like), Bernoulli, Multinomial and
// Dropout in training mode. Plain device pointers,
// no framework types; each returns the launch's cudaError_t (cudaErrorInvalidValue for a type the
// launcher does not handle).
//
// Generator: cuRAND's Philox4x32-10 (device API), one stream per output element (the element's
// index is the Philox subsequence), so the values do not depend on the launch configuration. An
// element's first 128 bits give two uniforms in [0, 1) of 53 bits each. The streams are graft's own
// and differ from the CPU engine's (std::mt19937_64) for the same seed.
//
// What the kernels do where the CPU reference fails the run (a device error would need a copy back
// and a synchronization per run, which a CUDA graph cannot hold):
// - uniform: a draw that rounds to high (or below low) in the output dtype is drawn again from the
//   element's next Philox bits, up to 64 times; only when no value of the dtype lies in
//   [low, high) at all (an interval narrower than the dtype's spacing, where the CPU reports an
//   error) do all fail, and then the element is low rounded to the dtype.
// - Bernoulli: y = (u < p) for u in [0, 1): p <= 0 or NaN gives 0, p >= 1 gives 1; the CPU engine
//   refuses p outside [0, 1] instead.
// - Multinomial: a row holding NaN or +inf, or only -inf (no class with a positive probability),
//   samples class 0 every time; the CPU engine refuses such a row.

// Where an element's stream is seeded from: `seed` itself when `counter` is null (a seeded node,
// the host already mixed the seed), else splitmix64(seed + golden * *counter), the counter read on
// the device so a replayed CUDA graph sees the value the previous replay left (an unseeded node).
// The draw kernels only read the counter; launch_advance_counter, launched after them, moves it on.
struct RandSeed {
  uint64_t seed = 0;
  uint64_t* counter = nullptr;
};

// SplitMix64's finalizer: the host and device mix seeds the same way.
inline __host__ __device__ uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// *counter += 1: one thread, launched on the stream right after the draw that read it, so an eager
// run and every replay of a captured graph advance it.
cudaError_t launch_advance_counter(uint64_t* counter, cudaStream_t s);

// y[i] uniform in [low, high) (high == low: low), y f16/bf16/f32/f64.
cudaError_t launch_random_uniform(KType t, RandSeed seed, double low, double high, void* y, int64_t n,
                                  cudaStream_t s);
// y[i] = mean + scale * z, z standard normal by Box-Muller over two uniforms; y f16/bf16/f32/f64.
cudaError_t launch_random_normal(KType t, RandSeed seed, double mean, double scale, void* y, int64_t n,
                                 cudaStream_t s);
// y[i] = (u < p[i]) ? one : 0 stored as an `out_size`-byte word (1, 2, 4 or 8), `one_bits` being
// the output dtype's 1 (so any numeric dtype or bool); p f16/bf16/f32/f64.
cudaError_t launch_bernoulli(KType pt, RandSeed seed, const void* p, int out_size, uint64_t one_bits, void* y,
                             int64_t n, cudaStream_t s);
// x [batch, classes] unnormalized log probabilities (f16/bf16/f32/f64) -> y [batch, samples] class
// indices (int64 when `out64`, else int32): per sample the first class whose running sum of
// exp(x - max) exceeds u * total (at most the last class of positive weight), in double.
cudaError_t launch_multinomial(KType xt, RandSeed seed, const void* x, int64_t batch, int64_t classes,
                               int64_t samples, bool out64, void* y, cudaStream_t s);
// Dropout in training mode: keep = u >= ratio; y = keep ? x / (1 - ratio) : 0 (in double, rounded
// once to x's dtype), mask (bool, may be null) = keep. x and y f16/bf16/f32/f64.
cudaError_t launch_dropout_train(KType t, RandSeed seed, double ratio, const void* x, void* y, bool* mask,
                                 int64_t n, cudaStream_t s);

namespace {

// Conversions through double, rounded once to the narrow type (no double rounding via float).
template <typename T> __device__ __forceinline__ T from_double(double v) { return static_cast<T>(v); }
template <> __device__ __forceinline__ __half from_double<__half>(double v) { return __double2half(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_double<__nv_bfloat16>(double v) {
  return __double2bfloat16(v);
}

using Philox = curandStatePhilox4_32_10_t;

__device__ __forceinline__ uint64_t effective_seed(const RandSeed& s) {
  return s.counter ? splitmix64(s.seed + 0x632be59bd9b4e019ULL * *s.counter) : s.seed;
}

// Element i's stream: the Philox subsequence i of the seed, so every element draws the same values
// whatever thread or launch shape computes it.
__device__ __forceinline__ Philox element_stream(uint64_t seed, int64_t i) {
  Philox st;
  curand_init(seed, static_cast<unsigned long long>(i), 0, &st);
  return st;
}

// A uniform in [0, 1) from 53 bits of two 32-bit words (27 high bits of a, 26 of b).
__device__ __forceinline__ double uniform01(uint32_t a, uint32_t b) {
  return (static_cast<double>(a >> 5) * 67108864.0 + static_cast<double>(b >> 6)) * (1.0 / 9007199254740992.0);
}

__global__ void advance_counter_kernel(uint64_t* counter) { *counter += 1; }

template <typename T>
__global__ void uniform_kernel(RandSeed rs, double low, double high, T* y, int64_t n) {
  const uint64_t seed = effective_seed(rs);
  GRAFT_GRID_STRIDE(i, n) {
    T out = from_double<T>(low);
    if (high != low) {
      Philox st = element_stream(seed, i);
      // Two candidates per 128 bits; a candidate that rounds out of [low, high) in T is dropped.
      bool done = false;
      for (int round = 0; round < 32 && !done; ++round) {
        const uint4 r = curand4(&st);
        const double u[2] = {uniform01(r.x, r.y), uniform01(r.z, r.w)};
        for (int k = 0; k < 2 && !done; ++k) {
          const T c = from_double<T>(low + (high - low) * u[k]);
          const double back = as_double(c);
          if (back >= low && back < high) {
            out = c;
            done = true;
          }
        }
      }
    }
    y[i] = out;
  }
}

template <typename T>
__global__ void normal_kernel(RandSeed rs, double mean, double scale, T* y, int64_t n) {
  const uint64_t seed = effective_seed(rs);
  GRAFT_GRID_STRIDE(i, n) {
    Philox st = element_stream(seed, i);
    const uint4 r = curand4(&st);
    const double u1 = 1.0 - uniform01(r.x, r.y);  // (0, 1]: the log is finite
    const double u2 = uniform01(r.z, r.w);
    const double z = sqrt(-2.0 * log(u1)) * cospi(2.0 * u2);
    y[i] = from_double<T>(mean + scale * z);
  }
}

template <typename P, typename E>
__global__ void bernoulli_kernel(RandSeed rs, const P* p, E one, E* y, int64_t n) {
  const uint64_t seed = effective_seed(rs);
  GRAFT_GRID_STRIDE(i, n) {
    Philox st = element_stream(seed, i);
    const uint4 r = curand4(&st);
    y[i] = uniform01(r.x, r.y) < as_double(p[i]) ? one : E(0);
  }
}

// One thread per (row, sample): three passes over the row (max, total, search). The row is read
// again per sample, which costs classes * samples reads per row; rows are short in practice
// (sampling heads), and the passes stay in L2 for long rows.
template <typename T, typename I>
__global__ void multinomial_kernel(RandSeed rs, const T* x, int64_t batch, int64_t classes, int64_t samples, I* y) {
  const uint64_t seed = effective_seed(rs);
  GRAFT_GRID_STRIDE(i, batch * samples) {
    const T* row = x + (i / samples) * classes;
    double mx = -INFINITY;
    bool bad = false;
    for (int64_t c = 0; c < classes; ++c) {
      const double v = as_double(row[c]);
      bad |= isnan(v) || v == INFINITY;
      mx = fmax(mx, v);
    }
    int64_t pick = 0;
    if (!bad && mx != -INFINITY) {
      double total = 0;
      int64_t last = 0;  // the last class with a positive weight
      for (int64_t c = 0; c < classes; ++c) {
        const double w = exp(as_double(row[c]) - mx);
        total += w;
        if (w > 0) last = c;
      }
      Philox st = element_stream(seed, i);
      const uint4 r = curand4(&st);
      const double u = uniform01(r.x, r.y) * total;
      // The first class whose running sum exceeds u; u rounded up to the total takes the last one.
      double run = 0;
      pick = last;
      for (int64_t c = 0; c < classes; ++c) {
        run += exp(as_double(row[c]) - mx);
        if (run > u) {
          pick = c < last ? c : last;
          break;
        }
      }
    }
    y[i] = static_cast<I>(pick);
  }
}

template <typename T>
__global__ void dropout_kernel(RandSeed rs, double ratio, double scale, const T* x, T* y, bool* mask, int64_t n) {
  const uint64_t seed = effective_seed(rs);
  GRAFT_GRID_STRIDE(i, n) {
    Philox st = element_stream(seed, i);
    const uint4 r = curand4(&st);
    const bool keep = uniform01(r.x, r.y) >= ratio;
    y[i] = keep ? from_double<T>(as_double(x[i]) * scale) : from_double<T>(0.0);
    if (mask) mask[i] = keep;
  }
}

}  // namespace

cudaError_t launch_advance_counter(uint64_t* counter, cudaStream_t s) {
  advance_counter_kernel<<<1, 1, 0, s>>>(counter);
  return cudaGetLastError();
}

cudaError_t launch_random_uniform(KType t, RandSeed seed, double low, double high, void* y, int64_t n,
                                  cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  GRAFT_FLOAT64_DISPATCH(t, (uniform_kernel<T><<<grid_for(n), kThreads, 0, s>>>(seed, low, high,
                                                                                     static_cast<T*>(y), n)));
  return cudaGetLastError();
}

cudaError_t launch_random_normal(KType t, RandSeed seed, double mean, double scale, void* y, int64_t n,
                                 cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  GRAFT_FLOAT64_DISPATCH(t, (normal_kernel<T><<<grid_for(n), kThreads, 0, s>>>(seed, mean, scale,
                                                                                    static_cast<T*>(y), n)));
  return cudaGetLastError();
}

cudaError_t launch_bernoulli(KType pt, RandSeed seed, const void* p, int out_size, uint64_t one_bits, void* y,
                             int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  GRAFT_FLOAT64_DISPATCH(pt, GRAFT_SIZE_DISPATCH(out_size, (bernoulli_kernel<T, E><<<grid_for(n), kThreads, 0, s>>>(
                                                                    seed, static_cast<const T*>(p),
                                                                    static_cast<E>(one_bits), static_cast<E*>(y), n))));
  return cudaGetLastError();
}

cudaError_t launch_multinomial(KType xt, RandSeed seed, const void* x, int64_t batch, int64_t classes,
                               int64_t samples, bool out64, void* y, cudaStream_t s) {
  const int64_t n = batch * samples;
  if (n == 0) return cudaSuccess;
  if (out64) {
    GRAFT_FLOAT64_DISPATCH(xt, (multinomial_kernel<T, int64_t><<<grid_for(n), kThreads, 0, s>>>(
                                        seed, static_cast<const T*>(x), batch, classes, samples, static_cast<int64_t*>(y))));
  } else {
    GRAFT_FLOAT64_DISPATCH(xt, (multinomial_kernel<T, int32_t><<<grid_for(n), kThreads, 0, s>>>(
                                        seed, static_cast<const T*>(x), batch, classes, samples, static_cast<int32_t*>(y))));
  }
  return cudaGetLastError();
}

cudaError_t launch_dropout_train(KType t, RandSeed seed, double ratio, const void* x, void* y, bool* mask,
                                 int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const double scale = 1.0 / (1.0 - ratio);
  GRAFT_FLOAT64_DISPATCH(t, (dropout_kernel<T><<<grid_for(n), kThreads, 0, s>>>(
                                     seed, ratio, scale, static_cast<const T*>(x), static_cast<T*>(y), mask, n)));
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA ops -------------------------------------------------------------------------------
// Dropout's inference is a copy; its training mode draws the mask. The kernels' comment above says
// what they do where the CPU reference fails a run.
//
// Seeds follow the CPU engine's contract: a node with a seed draws the same values on every run; a
// node without one draws fresh values on every run, CUDA graph replays included. A captured graph
// bakes kernel arguments, so an unseeded node's kernel reads a per-node run counter from device
// memory and a one-thread kernel right after it increments the counter: both are captured, and
// each replay draws from the next seed. In an engine the context makes its random layers' counters
// when it is created (CudaExec::random_counter); a caller running the op directly keeps one in its
// PreparedCache, made on the first (eager) run, as cudaMalloc is not allowed while capturing.

namespace {

using namespace util;

constexpr std::initializer_list<DataType> kRandomFloats = {DataType::kFloat16, DataType::kBFloat16,
                                                           DataType::kFloat32, DataType::kFloat64};

bool is_random_float(DataType t) {
  for (DataType f : kRandomFloats)
    if (t == f) return true;
  return false;
}

}  // namespace

// A process-wide random value drawn once, plus a counter, so two nodes (or two contexts of one
// engine) never share a stream.
uint64_t fresh_random_base_seed() {
  static const uint64_t base = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  static std::atomic<uint64_t> calls{0};
  return k::splitmix64(base + 0x9e3779b97f4a7c15ULL * calls.fetch_add(1, std::memory_order_relaxed));
}

namespace {

// Outside an engine (a caller running the op directly with a PreparedCache, as the kernel tests
// do): an unseeded node's run counter in device memory (zeroed when made) and its host-drawn base
// seed, freed with the PreparedCache entry. An engine's context owns its layers' counters instead
// (CudaExec::random_counter), made with the context, so a first run that captures finds them.
struct RunCounter {
  uint64_t* device = nullptr;
  uint64_t base = 0;
  RunCounter() = default;
  RunCounter(const RunCounter&) = delete;
  RunCounter& operator=(const RunCounter&) = delete;
  ~RunCounter() {
    if (device) (void)cudaFree(device);
  }
};

// The seed the kernels draw from. A seeded node: the seed mixed on the host, the same every run.
// An unseeded node: its run counter (made on its first, eager, run) and base; the launch is to be
// followed by advance() on the same stream.
struct Draw {
  k::RandSeed seed;
  Status advance(const CudaExec& ex) const {
    return seed.counter ? launch_status(k::launch_advance_counter(seed.counter, stream_of(ex)), ex) : Status::ok();
  }
};

Result<Draw> draw_for(const CudaExec& ex, const std::optional<uint64_t>& seed) {
  Draw d;
  if (seed) {
    d.seed.seed = k::splitmix64(*seed);
    return d;
  }
  // In an engine the context owns the counter, made with the context (before any capture).
  if (ex.random_counter) {
    d.seed.seed = ex.random_base;
    d.seed.counter = ex.random_counter;
    return d;
  }
  // Without a PreparedCache (a caller that prepares on every call) there is nowhere to keep a
  // counter: a fresh host seed per call is fresh values per call.
  if (!ex.prepared) {
    d.seed.seed = fresh_random_base_seed();
    return d;
  }
  const std::string key = PreparedCache::key_of("random_run_counter", {reinterpret_cast<intptr_t>(ex.ctx->node)});
  RunCounter* c = ex.prepared->find<RunCounter>(key);
  if (!c) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    GRAFT_RETURN_IF_ERROR(launch_status(cudaStreamIsCapturing(stream_of(ex), &capture), ex, "cudaStreamIsCapturing"));
    if (capture != cudaStreamCaptureStatusNone)
      return fail(ex, StatusCode::kInternal, "an unseeded random node's run counter is made on its first run, which "
                  "must be eager (device memory cannot be allocated while a CUDA graph is being captured); run the "
                  "engine once before capturing it");
    auto owned = std::make_shared<RunCounter>();
    GRAFT_RETURN_IF_ERROR(launch_status(cudaMalloc(reinterpret_cast<void**>(&owned->device), sizeof(uint64_t)), ex,
                                        "cudaMalloc of the run counter"));
    GRAFT_RETURN_IF_ERROR(launch_status(cudaMemsetAsync(owned->device, 0, sizeof(uint64_t), stream_of(ex)), ex,
                                        "cudaMemsetAsync of the run counter"));
    owned->base = fresh_random_base_seed();
    c = ex.prepared->put(key, std::move(owned));
  }
  d.seed.seed = c->base;
  d.seed.counter = c->device;
  return d;
}

// The node's attributes (random_attrs words the errors), checked against the output's dtype.
Result<RandomAttrs> attrs_checked(const CudaExec& ex, const char* op_type) {
  const Tensor* x = input_or_null(ex, 0);
  auto a = random_attrs(op_type, attrs_of(ex), x ? x->dtype() : DataType::kUndefined);
  if (!a) return with_node(ex, a.status());
  if (a.value().dtype != ex.ctx->outputs[0]->dtype())
    return fail(ex, StatusCode::kInternal, "output has dtype ", dtype_name(ex.ctx->outputs[0]->dtype()),
                " but the attributes give ", dtype_name(a.value().dtype));
  return a;
}

// ---- RandomUniform(Like), RandomNormal(Like) ----------------------------------------------------

// The output's dtype (kRandomFloats) is the rows' key; a *Like op's input 0 may have any dtype when
// the dtype attribute gives the output's (random_attrs refuses a non-float one without it).
template <bool kLike>
bool generator_supports(const Node& n, std::string* why) {
  if (kLike && !has_input(n, 0)) return reject(why, "input 0 is missing");
  if (!n.output(0)) return reject(why, "output 0 is missing");
  auto a = random_attrs(n.op_type, n.attrs, kLike ? in_dtype(n, 0) : DataType::kUndefined);
  if (!a) return reject(why, a.status().to_string());
  return true;
}

template <bool kNormal>
Status generator_run(CudaExec& ex) {
  const char* op = op_name(ex);
  GRAFT_ASSIGN_OR_RETURN(RandomAttrs a, attrs_checked(ex, op));
  Tensor& y = *ex.ctx->outputs[0];
  if (y.numel() == 0) return Status::ok();
  GRAFT_ASSIGN_OR_RETURN(Draw d, draw_for(ex, a.seed));
  const cudaError_t e =
      kNormal ? k::launch_random_normal(ktype(y.dtype()), d.seed, a.mean, a.scale, y.data(), y.numel(), stream_of(ex))
              : k::launch_random_uniform(ktype(y.dtype()), d.seed, a.low, a.high, y.data(), y.numel(), stream_of(ex));
  GRAFT_RETURN_IF_ERROR(launch_status(e, ex));
  return d.advance(ex);
}

// ---- Bernoulli ----------------------------------------------------------------------------------

// The output dtype's 1 as the bytes of one element, little-endian in a 64-bit word.
uint64_t one_bits(DataType t) {
  uint64_t bits = 0;
  store_from_double(t, &bits, 0, 1.0);
  return bits;
}

// The keys: the probabilities kRandomFloats, the output any device dtype (its element size is what
// the kernel writes 1 in).
bool bernoulli_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input 0 is missing");
  auto a = random_attrs(n.op_type, n.attrs, in_dtype(n, 0));
  if (!a) return reject(why, a.status().to_string());
  if (!n.output(0)) return reject(why, "output 0 is missing");
  return true;
}

Status bernoulli_run(CudaExec& ex) {
  GRAFT_ASSIGN_OR_RETURN(RandomAttrs a, attrs_checked(ex, "Bernoulli"));
  const Tensor& p = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  if (y.numel() != p.numel()) return fail(ex, StatusCode::kInternal, "output size differs from input size");
  if (y.numel() == 0) return Status::ok();
  GRAFT_ASSIGN_OR_RETURN(Draw d, draw_for(ex, a.seed));
  GRAFT_RETURN_IF_ERROR(launch_status(
      k::launch_bernoulli(ktype(p.dtype()), d.seed, p.data(), static_cast<int>(dtype_size(y.dtype())),
                          one_bits(y.dtype()), y.data(), y.numel(), stream_of(ex)),
      ex));
  return d.advance(ex);
}

// ---- Multinomial --------------------------------------------------------------------------------

// The key: the log probabilities kRandomFloats.
bool multinomial_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input 0 is missing");
  auto a = random_attrs(n.op_type, n.attrs, in_dtype(n, 0));
  if (!a) return reject(why, a.status().to_string());
  return true;
}

Status multinomial_run(CudaExec& ex) {
  GRAFT_ASSIGN_OR_RETURN(RandomAttrs a, attrs_checked(ex, "Multinomial"));
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  if (x.rank() != 2) return fail(ex, StatusCode::kInvalidModel, "input 0 must be [batch_size, class_size]");
  const int64_t batch = x.dims()[0], classes = x.dims()[1];
  if (y.numel() != batch * a.sample_size)
    return fail(ex, StatusCode::kInternal, "output must be [batch_size, sample_size]");
  if (y.numel() == 0) return Status::ok();
  if (classes == 0)  // as the CPU reference: no class, so every probability is 0
    return fail(ex, StatusCode::kInvalidArgument, "input 0 (log probabilities) has no class");
  GRAFT_ASSIGN_OR_RETURN(Draw d, draw_for(ex, a.seed));
  GRAFT_RETURN_IF_ERROR(launch_status(k::launch_multinomial(ktype(x.dtype()), d.seed, x.data(), batch, classes,
                                                            a.sample_size, y.dtype() == DataType::kInt64, y.data(),
                                                            stream_of(ex)),
                                      ex));
  return d.advance(ex);
}

// ---- Dropout ------------------------------------------------------------------------------------

// The keys: x any device dtype (inference copies its bytes), the mask (if given) bool.
bool dropout_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input 0 is missing");
  // Training mode (decided by a host input at run time) draws a mask over a float x; the seed
  // attribute is checked here so a bad one fails the build.
  if (auto s = seed_attr(n.attrs); !s) return reject(why, s.status().to_string());
  return true;
}

// The ratio when training_mode (a host input, opset 12+) is true, else 0: inference, and training
// at ratio 0, are the identity with an all-true mask.
Result<double> dropout_ratio(const CudaExec& ex) {
  const auto& in = ex.ctx->inputs;
  if (ex.ctx->opset < 12 || in.size() <= 2 || !in[2]) return 0.0;
  if (in[2]->device() != DeviceType::kCPU) return fail(ex, StatusCode::kInternal, "training_mode must be a host input");
  const auto v = in[2]->to_int64_vector();
  if (v.size() != 1) return fail(ex, StatusCode::kInvalidModel, "input 2 (training_mode) must be a scalar bool");
  if (v[0] == 0) return 0.0;
  double ratio = 0.5;  // the input's default
  if (in.size() > 1 && in[1]) {
    if (in[1]->device() != DeviceType::kCPU || in[1]->numel() != 1)
      return fail(ex, StatusCode::kInvalidModel, "input 1 (ratio) must be a scalar host input");
    ratio = in[1]->get(0);
  }
  if (Status st = check_dropout_ratio(ratio); !st) return with_node(ex, st);
  return ratio;
}

Status dropout_run(CudaExec& ex) {
  GRAFT_ASSIGN_OR_RETURN(double ratio, dropout_ratio(ex));
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  if (x.nbytes() != y.nbytes()) return fail(ex, StatusCode::kInternal, "output size differs from input size");
  Tensor* mask = ex.ctx->outputs.size() > 1 ? ex.ctx->outputs[1] : nullptr;
  if (mask && mask->numel() != x.numel()) return fail(ex, StatusCode::kInternal, "mask size differs from input size");
  if (ratio == 0.0) {
    if (x.nbytes() && x.data() != y.data())
      GRAFT_RETURN_IF_ERROR(launch_status(cudaMemcpyAsync(y.data(), x.data(), x.nbytes(), cudaMemcpyDeviceToDevice,
                                                          stream_of(ex)), ex, "cudaMemcpyAsync"));
    if (mask && mask->nbytes())
      GRAFT_RETURN_IF_ERROR(launch_status(cudaMemsetAsync(mask->data(), 1, mask->nbytes(), stream_of(ex)), ex,
                                          "cudaMemsetAsync"));
    return Status::ok();
  }
  if (!is_random_float(x.dtype()))
    return fail(ex, StatusCode::kUnsupported, "training mode needs a float input, got ", dtype_name(x.dtype()));
  if (x.numel() == 0) return Status::ok();
  auto seed = seed_attr(attrs_of(ex));
  if (!seed) return with_node(ex, seed.status());
  GRAFT_ASSIGN_OR_RETURN(Draw d, draw_for(ex, seed.value()));
  GRAFT_RETURN_IF_ERROR(launch_status(k::launch_dropout_train(ktype(x.dtype()), d.seed, ratio, x.data(), y.data(),
                                                              mask ? static_cast<bool*>(mask->data()) : nullptr,
                                                              x.numel(), stream_of(ex)),
                                      ex));
  return d.advance(ex);
}

}  // namespace

void append_cuda_random_ops(std::vector<CudaOp>& out) {
  // The generators are keyed by their output's dtype (the dtype attribute's, or a *Like op's input's).
  out.push_back(kernel_dtypes({output_dtypes(0, kRandomFloats)},
                              CudaOp{"RandomUniform", &generator_supports<false>, &generator_run<false>, {}, nullptr}));
  out.push_back(kernel_dtypes({output_dtypes(0, kRandomFloats)},
                              CudaOp{"RandomNormal", &generator_supports<false>, &generator_run<true>, {}, nullptr}));
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuEveryDtype), output_dtypes(0, kRandomFloats)},
                              CudaOp{"RandomUniformLike", &generator_supports<true>, &generator_run<false>, {},
                                     nullptr}));
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuEveryDtype), output_dtypes(0, kRandomFloats)},
                              CudaOp{"RandomNormalLike", &generator_supports<true>, &generator_run<true>, {},
                                     nullptr}));
  out.push_back(kernel_dtypes({input_dtypes(0, kRandomFloats), output_dtypes(0, kGpuEveryDtype)},
                              CudaOp{"Bernoulli", &bernoulli_supports, &bernoulli_run, {}, nullptr}));
  out.push_back(kernel_dtypes({input_dtypes(0, kRandomFloats)},
                              CudaOp{"Multinomial", &multinomial_supports, &multinomial_run, {}, nullptr}));
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuEveryDtype), output_dtypes(1, {DataType::kBool})},
                              CudaOp{"Dropout", &dropout_supports, &dropout_run, {1, 2}, nullptr}));
}

}  // namespace graft::cuda
