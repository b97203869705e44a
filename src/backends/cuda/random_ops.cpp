// CUDA ops of the random ops (schemas: src/ops/random_ops.cpp; attributes and seeds:
// src/ops/random_attrs.h): RandomUniform, RandomNormal, RandomUniformLike, RandomNormalLike,
// Bernoulli, Multinomial, and Dropout (inference is a copy; training mode draws the mask). Kernels
// live in random_kernels.cu, which says what they do where the CPU reference fails a run.
//
// Seeds follow the CPU engine's contract: a node with a seed draws the same values on every run; a
// node without one draws fresh values on every run, CUDA graph replays included. A captured graph
// bakes kernel arguments, so an unseeded node's kernel reads a per-node run counter from device
// memory and a one-thread kernel right after it increments the counter: both are captured, and
// each replay draws from the next seed. In an engine the context makes its random layers' counters
// when it is created (CudaExec::random_counter); a caller running the op directly keeps one in its
// PreparedCache, made on the first (eager) run, as cudaMalloc is not allowed while capturing.
#include <atomic>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/random_kernels.cuh"
#include "ops/random_attrs.h"

namespace graft::cuda {
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

template <bool kLike>
bool generator_supports(const Node& n, std::string* why) {
  if (kLike && !has_input(n, 0)) return reject(why, "input 0 is missing");
  auto a = random_attrs(n.op_type, n.attrs, kLike ? in_dtype(n, 0) : DataType::kUndefined);
  if (!a) return reject(why, a.status().to_string());
  if (!is_random_float(out_dtype(n, 0)))
    return reject(why, std::string("output dtype ") + dtype_name(out_dtype(n, 0)) + " is not a float type");
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

bool bernoulli_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input 0 is missing");
  if (!require_dtype(n, 0, kRandomFloats, why)) return false;
  auto a = random_attrs(n.op_type, n.attrs, in_dtype(n, 0));
  if (!a) return reject(why, a.status().to_string());
  const size_t es = dtype_size(out_dtype(n, 0));
  if (es != 1 && es != 2 && es != 4 && es != 8) return reject(why, "unsupported output element size");
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

bool multinomial_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input 0 is missing");
  if (!require_dtype(n, 0, kRandomFloats, why)) return false;
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

bool dropout_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input 0 is missing");
  const size_t es = dtype_size(in_dtype(n, 0));
  if (es != 1 && es != 2 && es != 4 && es != 8) return reject(why, "unsupported element size");
  if (n.outputs.size() > 1 && n.outputs[1] && n.outputs[1]->desc.dtype != DataType::kBool)
    return reject(why, "the mask output must be bool");
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
  out.push_back(CudaOp{"RandomUniform", &generator_supports<false>, &generator_run<false>, {}, nullptr});
  out.push_back(CudaOp{"RandomNormal", &generator_supports<false>, &generator_run<true>, {}, nullptr});
  out.push_back(CudaOp{"RandomUniformLike", &generator_supports<true>, &generator_run<false>, {}, nullptr});
  out.push_back(CudaOp{"RandomNormalLike", &generator_supports<true>, &generator_run<true>, {}, nullptr});
  out.push_back(CudaOp{"Bernoulli", &bernoulli_supports, &bernoulli_run, {}, nullptr});
  out.push_back(CudaOp{"Multinomial", &multinomial_supports, &multinomial_run, {}, nullptr});
  out.push_back(CudaOp{"Dropout", &dropout_supports, &dropout_run, {1, 2}, nullptr});
}

}  // namespace graft::cuda
