// The CUDA random ops (src/ops/random/random.cu) against statistics, not the CPU reference
// (the two engines' generators differ): shape and dtype, bounds, mean and variance within 6 standard
// errors, Bernoulli and Multinomial frequencies, Dropout's mask and scaling; a seeded node repeats
// itself bit for bit, an unseeded one never does, CUDA graph replays included. Fresh random
// parameters and seeds on every run (printed on failure); outputs poisoned (0xFF) before every run.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "backends/cuda/cuda_ops.h"
#include "cuda_kernel_harness.h"

namespace graft::testing {
namespace {

constexpr double kSe = 6.0;  // tolerance in standard errors

struct OutSpec {
  DataType dtype;
  std::vector<int64_t> dims;
};

// One node run on the GPU as the engine runs it: device copies of the inputs (host ones for the
// op's host_inputs), outputs poisoned, the op on its own stream, outputs copied back. `prepared`
// stands for the execution context's cache (the unseeded ops keep their run counter there).
class NodeRunner {
 public:
  NodeRunner(const std::string& op, std::vector<Tensor> inputs, std::vector<OutSpec> outs, int opset = 17)
      : one_(op, inputs, outs.size()), inputs_(std::move(inputs)), outs_(std::move(outs)), opset_(opset) {
    one_.node->opset = opset;
    for (size_t i = 0; i < outs_.size(); ++i)
      one_.node->outputs[i]->desc = TensorDesc(outs_[i].dtype, shape_from_values(outs_[i].dims));
    EXPECT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
  }
  ~NodeRunner() {
    if (stream_) cudaStreamDestroy(stream_);
  }
  AttributeMap& attrs() { return one_.node->attrs; }
  cudaStream_t stream() const { return stream_; }

  // Runs once; `use_cache` false leaves CudaExec::prepared null (a caller that prepares every call).
  // With `graph`, the run is captured into a CUDA graph and the graph replayed `replays` times,
  // the outputs read after each replay (an unseeded node needs an earlier eager run, which makes
  // its run counter, as the engine runs every shape set eagerly before capturing it).
  Result<std::vector<std::vector<Tensor>>> run(bool use_cache = true, bool graph = false, int replays = 1) {
    const cuda::CudaOp* op = cuda::find_cuda_op(one_.node->op_type);
    if (!op) return error(StatusCode::kUnsupported, "no CUDA op ", one_.node->op_type);
    std::string why;
    if (!op->supports(*one_.node, &why)) return error(StatusCode::kUnsupported, "supports() rejected: ", why);
    const std::set<int> host(op->host_inputs.begin(), op->host_inputs.end());
    std::vector<std::unique_ptr<DevBuf>> bufs;
    std::vector<Tensor> din, dout;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const Tensor& t = inputs_[i];
      if (!t.defined() || host.count(static_cast<int>(i))) {
        din.push_back(t);
        continue;
      }
      bufs.push_back(std::make_unique<DevBuf>(t.nbytes()));
      if (cudaMemcpy(bufs.back()->p, t.data(), t.nbytes(), cudaMemcpyHostToDevice) != cudaSuccess)
        return error(StatusCode::kRuntimeError, "input copy failed");
      din.push_back(Tensor::wrap(bufs.back()->p, t.dtype(), t.dims(), DeviceType::kCUDA));
    }
    for (const OutSpec& o : outs_) {
      int64_t n = 1;
      for (int64_t d : o.dims) n *= d;
      bufs.push_back(std::make_unique<DevBuf>(static_cast<size_t>(n) * dtype_size(o.dtype)));
      dout.push_back(Tensor::wrap(bufs.back()->p, o.dtype, o.dims, DeviceType::kCUDA));
    }
    auto poison = [&] {
      for (Tensor& t : dout)
        if (cudaMemset(t.data(), 0xFF, t.nbytes() ? t.nbytes() : 1) != cudaSuccess) return false;
      return true;
    };
    auto read = [&] {
      std::vector<Tensor> host_out;
      for (const Tensor& t : dout) {
        Tensor h = Tensor::empty(t.dtype(), t.dims());
        EXPECT_EQ(cudaMemcpy(h.data(), t.data(), h.nbytes(), cudaMemcpyDeviceToHost), cudaSuccess);
        host_out.push_back(h);
      }
      return host_out;
    };
    ExecContext ectx = op_exec_context(one_.node, opset_, stream_, din, dout);
    cuda::CudaExec ex;
    ex.ctx = &ectx;
    ex.prepared = use_cache ? &prepared_ : nullptr;
    std::vector<std::vector<Tensor>> results;
    if (!poison()) return error(StatusCode::kRuntimeError, "poisoning failed");
    if (!graph) {
      GRAFT_RETURN_IF_ERROR(op->run(ex));
      if (cudaStreamSynchronize(stream_) != cudaSuccess) return error(StatusCode::kRuntimeError, "kernel failed");
      results.push_back(read());
      return results;
    }
    cudaGraph_t g = nullptr;
    cudaGraphExec_t exec = nullptr;
    if (cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal) != cudaSuccess)
      return error(StatusCode::kRuntimeError, "begin capture failed");
    Status st = op->run(ex);
    const cudaError_t end = cudaStreamEndCapture(stream_, &g);
    if (!st.is_ok() || end != cudaSuccess || cudaGraphInstantiate(&exec, g, 0) != cudaSuccess) {
      if (g) cudaGraphDestroy(g);
      (void)cudaGetLastError();
      if (!st.is_ok()) return st;
      return error(StatusCode::kRuntimeError, "capture failed");
    }
    for (int r = 0; r < replays; ++r) {
      if (!poison() || cudaGraphLaunch(exec, stream_) != cudaSuccess || cudaStreamSynchronize(stream_) != cudaSuccess)
        return error(StatusCode::kRuntimeError, "replay failed");
      results.push_back(read());
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(g);
    return results;
  }

  Result<std::vector<Tensor>> run_once(bool use_cache = true) {
    GRAFT_ASSIGN_OR_RETURN(auto r, run(use_cache));
    return r[0];
  }

 private:
  OneNode one_;
  std::vector<Tensor> inputs_;
  std::vector<OutSpec> outs_;
  int opset_;
  cuda::PreparedCache prepared_;
  cudaStream_t stream_ = nullptr;
};

// The spacing of `dt` relative to a value's magnitude (its unit roundoff times two).
double rel_ulp(DataType dt) {
  switch (dt) {
    case DataType::kFloat16: return std::ldexp(1.0, -10);
    case DataType::kBFloat16: return std::ldexp(1.0, -7);
    case DataType::kFloat32: return std::ldexp(1.0, -23);
    default: return std::ldexp(1.0, -52);
  }
}

int32_t onnx_code(DataType dt) { return static_cast<int32_t>(dt); }  // graft numbers dtypes as ONNX does

Tensor host_scalar(DataType dt, double v) {
  Tensor t = Tensor::empty(dt, {});
  t.set(0, v);
  return t;
}

std::vector<double> values_of(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get(i);
  return v;
}

void mean_var(const std::vector<double>& v, double* mean, double* var) {
  double s = 0;
  for (double x : v) s += x;
  *mean = s / static_cast<double>(v.size());
  double q = 0;
  for (double x : v) q += (x - *mean) * (x - *mean);
  *var = q / static_cast<double>(v.size() - 1);
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

class CudaRandomOps : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = fresh_seed();
    rng_.seed(seed_);
  }
  double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }
  uint32_t seed_ = 0;
  std::mt19937 rng_;
};

const std::vector<DataType> kGenTypes = {DataType::kFloat16, DataType::kFloat32, DataType::kFloat64};
const std::vector<DataType> kAllFloats = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                          DataType::kFloat64};
constexpr int64_t kN = 200000;

// RandomUniform / RandomUniformLike: every value in [low, high), mean (low + high) / 2 and variance
// w^2 / 12 within 6 standard errors (plus the dtype's rounding).
TEST_F(CudaRandomOps, UniformBoundsMeanAndVariance) {
  GRAFT_REQUIRE_GPU();
  for (bool like : {false, true})
    for (DataType dt : kGenTypes)
      for (int c = 0; c < 2; ++c) {
        // Case 0: the default [0, 1), where a draw just below 1 rounds to 1 in float16.
        const double low = c == 0 ? 0.0 : static_cast<float>(uniform(-4, 2));
        const double high = c == 0 ? 1.0 : static_cast<float>(low + uniform(0.5, 5));
        SCOPED_TRACE(std::string(like ? "RandomUniformLike " : "RandomUniform ") + dtype_name(dt) + " [" +
                     std::to_string(low) + ", " + std::to_string(high) + ") seed " + std::to_string(seed_));
        std::vector<Tensor> in;
        if (like) in.push_back(Tensor::empty(DataType::kFloat32, {kN / 400, 400}));
        NodeRunner r(like ? "RandomUniformLike" : "RandomUniform", in, {{dt, {kN / 400, 400}}});
        if (!like) r.attrs().set("shape", std::vector<int64_t>{kN / 400, 400});
        r.attrs().set("dtype", int64_t{onnx_code(dt)});
        if (c) {
          r.attrs().set("low", static_cast<float>(low));
          r.attrs().set("high", static_cast<float>(high));
        }
        auto out = r.run_once();
        ASSERT_TRUE(out.is_ok()) << out.status().to_string();
        const Tensor& y = (*out)[0];
        ASSERT_EQ(y.dtype(), dt);
        ASSERT_EQ(y.dims(), (std::vector<int64_t>{kN / 400, 400}));
        const auto v = values_of(y);
        for (size_t i = 0; i < v.size(); ++i)
          ASSERT_TRUE(v[i] >= low && v[i] < high) << "element " << i << " = " << v[i];
        double mean, var;
        mean_var(v, &mean, &var);
        const double w = high - low, n = static_cast<double>(v.size());
        const double round = rel_ulp(dt) * std::max(std::fabs(low), std::fabs(high));
        EXPECT_NEAR(mean, (low + high) / 2, kSe * w / std::sqrt(12 * n) + round);
        const double se_var = w * w * std::sqrt(1.0 / 80 - 1.0 / 144) / std::sqrt(n);
        EXPECT_NEAR(var, w * w / 12, kSe * se_var + 2 * round * w);
      }
}

// RandomNormal / RandomNormalLike: finite, mean and variance within 6 standard errors.
TEST_F(CudaRandomOps, NormalMeanAndVariance) {
  GRAFT_REQUIRE_GPU();
  for (bool like : {false, true})
    for (DataType dt : kGenTypes) {
      const double mean = static_cast<float>(uniform(-3, 3)), scale = static_cast<float>(uniform(0.5, 2));
      SCOPED_TRACE(std::string(like ? "RandomNormalLike " : "RandomNormal ") + dtype_name(dt) + " mean " +
                   std::to_string(mean) + " scale " + std::to_string(scale) + " seed " + std::to_string(seed_));
      std::vector<Tensor> in;
      if (like) in.push_back(Tensor::empty(DataType::kFloat16, {kN}));
      NodeRunner r(like ? "RandomNormalLike" : "RandomNormal", in, {{dt, {kN}}});
      if (!like) r.attrs().set("shape", std::vector<int64_t>{kN});
      r.attrs().set("dtype", int64_t{onnx_code(dt)});
      r.attrs().set("mean", static_cast<float>(mean));
      r.attrs().set("scale", static_cast<float>(scale));
      auto out = r.run_once();
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      const Tensor& y = (*out)[0];
      ASSERT_EQ(y.dtype(), dt);
      ASSERT_EQ(y.dims(), (std::vector<int64_t>{kN}));
      const auto v = values_of(y);
      for (size_t i = 0; i < v.size(); ++i) ASSERT_TRUE(std::isfinite(v[i])) << "element " << i << " = " << v[i];
      double m, var;
      mean_var(v, &m, &var);
      const double n = static_cast<double>(v.size()), s2 = scale * scale;
      const double round = rel_ulp(dt) * (std::fabs(mean) + 5 * scale);
      EXPECT_NEAR(m, mean, kSe * scale / std::sqrt(n) + round);
      EXPECT_NEAR(var, s2, kSe * s2 * std::sqrt(2.0 / n) + 2 * round * scale);
    }
}

// Bernoulli: p in ten buckets (0 and 1 among them); each bucket's frequency of ones within 6
// standard errors of its p, p = 0 always 0 and p = 1 always 1; every output exactly 0 or 1, in
// output dtypes from bool to float64.
TEST_F(CudaRandomOps, BernoulliFrequencies) {
  GRAFT_REQUIRE_GPU();
  const std::vector<DataType> outs = {DataType::kBool, DataType::kUInt8, DataType::kInt32, DataType::kInt64,
                                      DataType::kFloat64};
  for (DataType pt : kAllFloats)
    for (DataType ot : outs) {
      SCOPED_TRACE(std::string("p ") + dtype_name(pt) + " output " + dtype_name(ot) + " seed " + std::to_string(seed_));
      std::vector<double> buckets = {0.0, 1.0};
      while (buckets.size() < 10) buckets.push_back(uniform(0.02, 0.98));
      Tensor p = Tensor::empty(pt, {kN});
      std::vector<int> bucket_of(kN);
      for (int64_t i = 0; i < kN; ++i) {
        bucket_of[static_cast<size_t>(i)] = static_cast<int>(rng_() % buckets.size());
        p.set(i, buckets[static_cast<size_t>(bucket_of[static_cast<size_t>(i)])]);
      }
      NodeRunner r("Bernoulli", {p}, {{ot, {kN}}}, 15);
      r.attrs().set("dtype", int64_t{onnx_code(ot)});
      auto out = r.run_once();
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      const Tensor& y = (*out)[0];
      ASSERT_EQ(y.dtype(), ot);
      ASSERT_EQ(y.dims(), (std::vector<int64_t>{kN}));
      std::vector<double> ones(buckets.size()), count(buckets.size());
      for (int64_t i = 0; i < kN; ++i) {
        const double v = y.get(i);
        ASSERT_TRUE(v == 0.0 || v == 1.0) << "element " << i << " = " << v;
        const double pi = p.get(i);  // the probability as the kernel read it (rounded to pt)
        if (pi == 0.0) ASSERT_EQ(v, 0.0) << "element " << i << " has p = 0";
        if (pi == 1.0) ASSERT_EQ(v, 1.0) << "element " << i << " has p = 1";
        ones[static_cast<size_t>(bucket_of[static_cast<size_t>(i)])] += v;
        count[static_cast<size_t>(bucket_of[static_cast<size_t>(i)])] += 1;
      }
      for (size_t b = 2; b < buckets.size(); ++b) {
        Tensor rounded = host_scalar(pt, buckets[b]);
        const double pb = rounded.get(0);
        EXPECT_NEAR(ones[b] / count[b], pb, kSe * std::sqrt(pb * (1 - pb) / count[b])) << "bucket p = " << pb;
      }
    }
}

// Multinomial: per row, class frequencies within 6 standard errors of softmax(x), every index in
// [0, classes); int32 and int64 outputs.
TEST_F(CudaRandomOps, MultinomialFrequencies) {
  GRAFT_REQUIRE_GPU();
  for (DataType xt : kAllFloats)
    for (DataType ot : {DataType::kInt32, DataType::kInt64}) {
      const int64_t batch = 3, classes = 3 + static_cast<int64_t>(rng_() % 10), samples = 40000;
      SCOPED_TRACE(std::string("x ") + dtype_name(xt) + " output " + dtype_name(ot) + " classes " +
                   std::to_string(classes) + " seed " + std::to_string(seed_));
      Tensor x = Tensor::empty(xt, {batch, classes});
      std::normal_distribution<double> nd(0.0, 1.5);
      for (int64_t i = 0; i < x.numel(); ++i) x.set(i, nd(rng_));
      NodeRunner r("Multinomial", {x}, {{ot, {batch, samples}}}, 7);
      r.attrs().set("dtype", int64_t{onnx_code(ot)});
      r.attrs().set("sample_size", samples);
      auto out = r.run_once();
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      const Tensor& y = (*out)[0];
      ASSERT_EQ(y.dtype(), ot);
      ASSERT_EQ(y.dims(), (std::vector<int64_t>{batch, samples}));
      for (int64_t b = 0; b < batch; ++b) {
        double mx = -INFINITY, total = 0;
        for (int64_t c = 0; c < classes; ++c) mx = std::max(mx, x.get(b * classes + c));
        std::vector<double> prob(static_cast<size_t>(classes)), freq(static_cast<size_t>(classes));
        for (int64_t c = 0; c < classes; ++c) total += prob[static_cast<size_t>(c)] = std::exp(x.get(b * classes + c) - mx);
        for (double& q : prob) q /= total;
        for (int64_t s = 0; s < samples; ++s) {
          const double idx = y.get(b * samples + s);
          ASSERT_TRUE(idx >= 0 && idx < static_cast<double>(classes)) << "row " << b << " sample " << s << " = " << idx;
          freq[static_cast<size_t>(idx)] += 1;
        }
        for (int64_t c = 0; c < classes; ++c) {
          const double q = prob[static_cast<size_t>(c)], f = freq[static_cast<size_t>(c)] / samples;
          EXPECT_NEAR(f, q, kSe * std::sqrt(q * (1 - q) / samples) + 1e-12) << "row " << b << " class " << c;
        }
      }
    }
}

// Dropout in training mode: mask true exactly where y = x / (1 - ratio) (rounded to x's dtype), y
// exactly 0 elsewhere, keep rate within 6 standard errors of 1 - ratio. x never 0, so a kept
// element is told apart from a dropped one.
TEST_F(CudaRandomOps, DropoutTrainingMaskAndScale) {
  GRAFT_REQUIRE_GPU();
  for (DataType dt : kAllFloats) {
    const double ratio = static_cast<float>(uniform(0.1, 0.8));
    SCOPED_TRACE(std::string("Dropout ") + dtype_name(dt) + " ratio " + std::to_string(ratio) + " seed " +
                 std::to_string(seed_));
    Tensor x = Tensor::empty(dt, {kN});
    for (int64_t i = 0; i < kN; ++i) x.set(i, (rng_() & 1 ? 1 : -1) * uniform(0.5, 2.0));
    Tensor t = Tensor::empty(DataType::kBool, {});
    t.set(0, 1.0);
    NodeRunner r("Dropout", {x, host_scalar(DataType::kFloat32, ratio), t}, {{dt, {kN}}, {DataType::kBool, {kN}}}, 13);
    auto out = r.run_once();
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    const Tensor& y = (*out)[0];
    const Tensor& mask = (*out)[1];
    ASSERT_EQ(y.dtype(), dt);
    ASSERT_EQ(mask.dtype(), DataType::kBool);
    const double scale = 1.0 / (1.0 - ratio), tol = rel_ulp(dt);
    double kept = 0;
    for (int64_t i = 0; i < kN; ++i) {
      const uint8_t m = static_cast<const uint8_t*>(mask.data())[i];
      ASSERT_TRUE(m == 0 || m == 1) << "mask element " << i << " is " << int(m);
      const double want = x.get(i) * scale, got = y.get(i);
      if (m) {
        ASSERT_NEAR(got, want, tol * std::fabs(want)) << "kept element " << i;
        kept += 1;
      } else {
        ASSERT_EQ(got, 0.0) << "dropped element " << i;
      }
    }
    const double keep = 1 - ratio;
    EXPECT_NEAR(kept / kN, keep, kSe * std::sqrt(keep * (1 - keep) / kN));
  }
}

// The seed contract for every op: a seed repeats the values bit for bit; no seed draws fresh ones
// on every run, with the context's cache (the run counter), without it, and across replays of a
// captured CUDA graph (kernel arguments are baked into the graph; the counter is read on the device).
TEST_F(CudaRandomOps, SeededRepeatsUnseededDrawsFresh) {
  GRAFT_REQUIRE_GPU();
  const int64_t n = 4096;
  Tensor p = Tensor::empty(DataType::kFloat32, {n});
  for (int64_t i = 0; i < n; ++i) p.set(i, uniform(0.2, 0.8));
  Tensor logits = Tensor::empty(DataType::kFloat32, {4, 16});
  for (int64_t i = 0; i < logits.numel(); ++i) logits.set(i, uniform(-1, 1));
  Tensor x = Tensor::empty(DataType::kFloat32, {n});
  for (int64_t i = 0; i < n; ++i) x.set(i, uniform(0.5, 2.0));
  Tensor on = Tensor::empty(DataType::kBool, {});
  on.set(0, 1.0);
  struct Case {
    std::string op;
    std::vector<Tensor> in;
    std::vector<OutSpec> out;
    int opset;
  };
  const std::vector<Case> cases = {
      {"RandomUniform", {}, {{DataType::kFloat32, {n}}}, 17},
      {"RandomNormal", {}, {{DataType::kFloat32, {n}}}, 17},
      {"RandomUniformLike", {x}, {{DataType::kFloat32, {n}}}, 17},
      {"RandomNormalLike", {x}, {{DataType::kFloat32, {n}}}, 17},
      {"Bernoulli", {p}, {{DataType::kFloat32, {n}}}, 15},
      {"Multinomial", {logits}, {{DataType::kInt32, {4, 256}}}, 7},
      {"Dropout", {x, host_scalar(DataType::kFloat32, 0.5), on}, {{DataType::kFloat32, {n}}, {DataType::kBool, {n}}}, 13},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op + " seed " + std::to_string(seed_));
    auto make = [&](bool seeded) {
      auto r = std::make_unique<NodeRunner>(c.op, c.in, c.out, c.opset);
      if (c.op == "RandomUniform" || c.op == "RandomNormal") r->attrs().set("shape", std::vector<int64_t>{n});
      if (c.op == "Multinomial") r->attrs().set("sample_size", int64_t{256});
      if (seeded) {
        if (c.op == "Dropout") r->attrs().set("seed", static_cast<int64_t>(seed_));
        else r->attrs().set("seed", static_cast<float>(seed_ % 100000));
      }
      return r;
    };
    {
      auto r = make(true);
      auto a = r->run_once(), b = r->run_once();
      ASSERT_TRUE(a.is_ok() && b.is_ok()) << (a.is_ok() ? b.status() : a.status()).to_string();
      for (size_t k = 0; k < a->size(); ++k) EXPECT_TRUE(same_bytes((*a)[k], (*b)[k])) << "seeded output " << k;
      // A fresh context (cache) with the same seed draws the same values too.
      auto other = make(true)->run_once();
      ASSERT_TRUE(other.is_ok()) << other.status().to_string();
      EXPECT_TRUE(same_bytes((*a)[0], (*other)[0])) << "seeded, another context";
      auto replays = r->run(true, true, 2);
      ASSERT_TRUE(replays.is_ok()) << replays.status().to_string();
      for (const auto& rep : *replays) EXPECT_TRUE(same_bytes((*a)[0], rep[0])) << "seeded, graph replay";
    }
    for (bool use_cache : {true, false}) {
      auto r = make(false);
      auto a = r->run_once(use_cache), b = r->run_once(use_cache);
      ASSERT_TRUE(a.is_ok() && b.is_ok()) << (a.is_ok() ? b.status() : a.status()).to_string();
      EXPECT_FALSE(same_bytes((*a)[0], (*b)[0])) << "unseeded runs repeated" << (use_cache ? "" : " (no cache)");
      if (!use_cache) continue;
      auto replays = r->run(true, true, 3);
      ASSERT_TRUE(replays.is_ok()) << replays.status().to_string();
      const auto& rep = *replays;
      EXPECT_FALSE(same_bytes((*b)[0], rep[0][0])) << "the first replay repeated the eager run";
      EXPECT_FALSE(same_bytes(rep[0][0], rep[1][0])) << "replays 1 and 2 drew the same values";
      EXPECT_FALSE(same_bytes(rep[1][0], rep[2][0])) << "replays 2 and 3 drew the same values";
    }
    // Two unseeded nodes' first runs differ (each context draws its own base seed).
    auto a = make(false)->run_once(), b = make(false)->run_once();
    ASSERT_TRUE(a.is_ok() && b.is_ok());
    EXPECT_FALSE(same_bytes((*a)[0], (*b)[0])) << "two unseeded nodes drew the same values";
  }
}

// An unseeded node captured before any eager run has no run counter yet, and cudaMalloc is not
// allowed while capturing: a clear kInternal error, not a broken capture.
TEST_F(CudaRandomOps, UnseededCaptureBeforeEagerRunIsAnError) {
  GRAFT_REQUIRE_GPU();
  NodeRunner r("RandomUniform", {}, {{DataType::kFloat32, {64}}});
  r.attrs().set("shape", std::vector<int64_t>{64});
  auto out = r.run(true, true, 1);
  ASSERT_FALSE(out.is_ok());
  EXPECT_EQ(out.status().code(), StatusCode::kInternal);
  EXPECT_NE(out.status().to_string().find("run counter"), std::string::npos) << out.status().to_string();
  (void)cudaGetLastError();
}

}  // namespace
}  // namespace graft::testing
