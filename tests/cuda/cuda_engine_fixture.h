// The CUDA engine tests' fixture: builds a model for the CPU reference and for CUDA, moves tensors
// between host and device, poisons device outputs, compares against the CPU reference. Shared by
// cuda_engine_test.cpp and reliability_test.cpp; CUDA builds only.
#pragma once

#ifdef GRAFT_WITH_CUDA

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "graft/cuda_engine.h"
#include "graft/engine.h"
#include "test_models.h"

namespace graft_cuda_test {

inline std::string gpu_missing() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("no CUDA GPU (cudaGetDeviceCount: ") + cudaGetErrorString(e) + ")";
  }
  return n == 0 ? "no CUDA GPU (cudaGetDeviceCount returned 0)" : "";
}

}  // namespace graft_cuda_test

#define REQUIRE_GPU()                                        \
  do {                                                       \
    std::string why_ = ::graft_cuda_test::gpu_missing();     \
    if (!why_.empty()) GTEST_SKIP() << why_ << ": skipped";  \
  } while (0)

namespace graft_cuda_test {

class CudaEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = std::random_device{}();
    rng_.seed(seed_);
  }
  std::shared_ptr<graft::Engine> build(const OnnxModelBuilder& m, graft::DeviceType dev, bool fp16 = false,
                                       std::map<std::string, graft::ProfileRange> profile = {},
                                       std::vector<std::string>* warnings = nullptr) {
    graft::BuilderConfig cfg;
    cfg.device = dev;
    cfg.fp16 = fp16;
    cfg.profile = std::move(profile);
    cfg.layout = layout_;
    cfg.progress = [warnings](const std::string& stage, const std::string& detail) {
      if (warnings && stage == "warning") warnings->push_back(detail);
    };
    auto e = graft::Engine::build_from_onnx_bytes(m.bytes(), cfg, "test.onnx");
    EXPECT_TRUE(e.is_ok()) << e.status().to_string();
    return e.is_ok() ? *e : nullptr;
  }

 public:
  // Host/device copies and runs, usable by a test file's own helpers too.
  static Tensor to_device(const Tensor& h) {
    Tensor d = Tensor::empty(h.dtype(), h.dims(), graft::DeviceType::kCUDA);
    EXPECT_EQ(cudaMemcpy(d.data(), h.data(), h.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
    return d;
  }
  static Tensor to_host(const Tensor& d) {
    if (d.device() == graft::DeviceType::kCPU) return d;
    Tensor h = Tensor::empty(d.dtype(), d.dims());
    EXPECT_EQ(cudaMemcpy(h.data(), d.data(), d.nbytes(), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
  static Tensor poisoned_device(DataType dt, std::vector<int64_t> dims) {
    Tensor d = Tensor::empty(dt, std::move(dims), graft::DeviceType::kCUDA);
    EXPECT_EQ(cudaMemset(d.data(), 0xFF, d.nbytes()), cudaSuccess);
    return d;
  }
  static std::map<std::string, Tensor> run(graft::ExecutionContext& ctx, const std::map<std::string, Tensor>& in,
                                           std::map<std::string, Tensor> out = {}) {
    auto st = ctx.run(in, out);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    return out;
  }

 protected:
  // One run of `m`'s CUDA engine with per-layer profiling on: the rows (none, with the failure
  // recorded, when the engine cannot be built or made a context).
  std::vector<graft::LayerTiming> profile_one_run(const OnnxModelBuilder& m, const std::map<std::string, Tensor>& in) {
    auto e = build(m, graft::DeviceType::kCUDA);
    if (!e) {
      ADD_FAILURE() << "the CUDA engine did not build";
      return {};
    }
    auto ctx = e->create_context();
    auto* c = ctx.is_ok() ? dynamic_cast<graft::CudaExecutionContext*>(ctx->get()) : nullptr;
    if (!c) {
      ADD_FAILURE() << "no CUDA execution context";
      return {};
    }
    c->set_profiling(true);
    run(*c, in);
    return c->layer_timings();
  }
  // CPU reference vs CUDA (host inputs, then device inputs with poisoned device outputs).
  void compare_with_cpu(const OnnxModelBuilder& m, const std::map<std::string, Tensor>& in, bool fp16,
                        std::map<std::string, graft::ProfileRange> profile = {}) {
    SCOPED_TRACE("random seed " + std::to_string(seed_) + (fp16 ? " fp16" : " fp32"));
    auto cpu = build(m, graft::DeviceType::kCPU, false, profile);
    std::vector<std::string> warnings;
    auto gpu = build(m, graft::DeviceType::kCUDA, fp16, profile, &warnings);
    ASSERT_TRUE(cpu && gpu);
    for (const auto& w : warnings) std::printf("[ build    ] %s\n", w.c_str());
    EXPECT_EQ(gpu->device(), graft::DeviceType::kCUDA);
    auto cctx = cpu->create_context();
    auto gctx = gpu->create_context();
    ASSERT_TRUE(cctx.is_ok() && gctx.is_ok()) << gctx.status().to_string();
    auto want = run(**cctx, in);
    const double tol = fp16 ? 1e-2 : 1e-4;
    // Host inputs -> host outputs.
    auto got = run(**gctx, in);
    for (const auto& [name, w] : want) {
      ASSERT_TRUE(got.count(name)) << name;
      EXPECT_EQ(got.at(name).device(), graft::DeviceType::kCPU);
      double err = rel_err(to_host(got.at(name)), w);
      std::printf("[ compare  ] %s host I/O: rel err %.3g (tol %.0e) %s\n", name.c_str(), err, tol,
                  err < tol ? "PASS" : "FAIL");
      EXPECT_LT(err, tol) << "output " << name;
    }
    // Device inputs -> poisoned device outputs written in place; twice (second run: planned/graph).
    std::map<std::string, Tensor> din;
    for (const auto& [k, v] : in) din[k] = to_device(v);
    for (int rep = 0; rep < 2; ++rep) {
      std::map<std::string, Tensor> dout;
      for (const auto& [name, w] : want) dout[name] = poisoned_device(w.dtype(), w.dims());
      auto st = (*gctx)->run(din, dout);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      for (const auto& [name, w] : want) {
        EXPECT_EQ(dout.at(name).device(), graft::DeviceType::kCUDA);
        double err = rel_err(to_host(dout.at(name)), w);
        std::printf("[ compare  ] %s device I/O run %d: rel err %.3g %s\n", name.c_str(), rep, err,
                    err < tol ? "PASS" : "FAIL");
        EXPECT_LT(err, tol) << "output " << name << " run " << rep;
      }
    }
    // Device inputs and no preallocated outputs: outputs come back on the device.
    std::map<std::string, Tensor> fresh;
    ASSERT_TRUE((*gctx)->run(din, fresh).is_ok());
    for (const auto& [name, w] : want) EXPECT_EQ(fresh.at(name).device(), graft::DeviceType::kCUDA);
  }

  // dynamic_head_split_model and dynamic_attention_model (x [7, batch, 48]) built for the CPU
  // reference and for CUDA with a 1..3..8 batch profile; each batch in turn (repeats replay a CUDA
  // graph) against the CPU reference, the device outputs poisoned first. Returns the CUDA engine.
  std::shared_ptr<graft::Engine> check_dynamic_batches(const OnnxModelBuilder& m, bool fp16, double tol) {
    std::map<std::string, graft::ProfileRange> profile = {{"x", {{7, 1, 48}, {7, 3, 48}, {7, 8, 48}}}};
    auto cpu = build(m, graft::DeviceType::kCPU, false, profile);
    auto gpu = build(m, graft::DeviceType::kCUDA, fp16, profile);
    EXPECT_TRUE(cpu && gpu);
    if (!cpu || !gpu) return nullptr;
    auto cctx = cpu->create_context();
    auto gctx = gpu->create_context();
    EXPECT_TRUE(cctx.is_ok() && gctx.is_ok());
    if (!cctx.is_ok() || !gctx.is_ok()) return nullptr;
    for (int64_t batch : {3, 3, 3, 1, 8, 5, 5, 5}) {
      SCOPED_TRACE("batch " + std::to_string(batch));
      auto x = rand_t({7, batch, 48}, rng_);
      auto want = run(**cctx, {{"x", x}});
      std::map<std::string, Tensor> out;
      for (const auto& [name, w] : want) out[name] = poisoned_device(w.dtype(), w.dims());
      auto st = (*gctx)->run({{"x", to_device(x)}}, out);
      EXPECT_TRUE(st.is_ok()) << st.to_string();
      if (!st.is_ok()) break;
      for (const auto& [name, w] : want) EXPECT_LT(rel_err(to_host(out.at(name)), w), tol) << name;
    }
    return gpu;
  }

  // dynamic_cnn_model (batch 1..4..16) built for the CPU reference and for CUDA, one context each.
  struct DynamicCnnPair {
    std::shared_ptr<graft::Engine> cpu, gpu;
    std::unique_ptr<graft::ExecutionContext> cpu_owned, gpu_owned;
    graft::ExecutionContext* cpu_context = nullptr;
    graft::CudaExecutionContext* gpu_context = nullptr;
  };
  void make_dynamic_cnn_pair(DynamicCnnPair* p) {
    std::map<std::string, graft::ProfileRange> profile = {{"x", {{1, 3, 12, 12}, {4, 3, 12, 12}, {16, 3, 12, 12}}}};
    auto m = dynamic_cnn_model(rng_);
    p->cpu = build(m, graft::DeviceType::kCPU, false, profile);
    p->gpu = build(m, graft::DeviceType::kCUDA, false, profile);
    ASSERT_TRUE(p->cpu && p->gpu);
    auto cctx = p->cpu->create_context();
    auto gctx = p->gpu->create_context();
    ASSERT_TRUE(cctx.is_ok() && gctx.is_ok());
    p->cpu_owned = std::move(cctx).value();
    p->gpu_owned = std::move(gctx).value();
    p->cpu_context = p->cpu_owned.get();
    p->gpu_context = dynamic_cast<graft::CudaExecutionContext*>(p->gpu_owned.get());
    ASSERT_NE(p->gpu_context, nullptr);
  }

  uint32_t seed_ = 0;
  std::mt19937 rng_;
  std::string layout_ = "auto";
};

}  // namespace graft_cuda_test

#endif  // GRAFT_WITH_CUDA
