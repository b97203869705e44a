// The CUDA runtime end to end: models run on the GPU (fp32 and fp16) against the CPU reference
// with fresh random inputs and poisoned device outputs; memory-plan reuse; two contexts on two
// threads; CUDA graph replay against eager; plan round trip and compute-capability mismatch;
// per-layer profiling. Skips with the reason when there is no GPU or graft was built without CUDA.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "graft/cuda_engine.h"
#include "graft/engine.h"
#include "test_models.h"

#include "plan/plan.h"

#ifdef GRAFT_WITH_CUDA
#include <cuda_runtime.h>

#include "cuda_engine_fixture.h"
#endif

namespace {

using namespace graft_cuda_test;

// A CPU engine's plan restamped as one built for CUDA on an sm_90 GPU (no GPU needed to make it).
std::string cuda_stamped_plan(std::mt19937& rng) {
  graft::BuilderConfig cfg;
  cfg.device = graft::DeviceType::kCPU;
  auto e = graft::Engine::build_from_onnx_bytes(mlp_model(rng).bytes(), cfg, "mlp.onnx");
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  if (!e.is_ok()) return {};
  auto bytes = (*e)->serialize();
  EXPECT_TRUE(bytes.is_ok()) << bytes.status().to_string();
  if (!bytes.is_ok()) return {};
  auto st = graft::read_plan_bytes(*bytes, "mlp.plan");
  EXPECT_TRUE(st.is_ok()) << st.status().to_string();
  if (!st.is_ok()) return {};
  st->device = graft::DeviceType::kCUDA;
  st->cuda_compute_capability = 90;
  st->cuda_device_name = "NVIDIA H200";
  auto out = graft::write_plan_bytes(*st);
  EXPECT_TRUE(out.is_ok()) << out.status().to_string();
  return out.is_ok() ? *out : std::string();
}

#ifndef GRAFT_WITH_CUDA

TEST(CudaEngine, CudaPlanWithoutCudaNamesThePlan) {
  std::mt19937 rng(std::random_device{}());
  const std::string plan = cuda_stamped_plan(rng);
  ASSERT_FALSE(plan.empty());
  auto e = graft::Engine::deserialize(plan, "gpu.plan");
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), graft::StatusCode::kUnsupported);
  EXPECT_NE(e.status().message().find("built without CUDA"), std::string::npos) << e.status().to_string();
  EXPECT_EQ(e.status().file(), "gpu.plan") << e.status().to_string();
}

TEST(CudaEngine, BuildWithoutCudaSaysSo) {
  graft::BuilderConfig cfg;
  cfg.device = graft::DeviceType::kCUDA;
  std::mt19937 rng(1);
  auto e = graft::Engine::build_from_onnx_bytes(mlp_model(rng).bytes(), cfg, "mlp.onnx");
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), graft::StatusCode::kUnsupported);
  EXPECT_NE(e.status().message().find("built without CUDA"), std::string::npos) << e.status().to_string();
}

TEST(CudaEngine, GpuTests) { GTEST_SKIP() << "graft was built without CUDA (GRAFT_ENABLE_CUDA=OFF): GPU tests skipped"; }

#else

TEST_F(CudaEngineTest, MlpWithCustomLayer) {
  REQUIRE_GPU();
  auto m = mlp_model(rng_);
  for (bool fp16 : {false, true}) compare_with_cpu(m, {{"x", rand_t({4, 16}, rng_, -3, 3)}}, fp16);
}

TEST_F(CudaEngineTest, SmallCnn) {
  REQUIRE_GPU();
  auto m = cnn_model(rng_);
  for (bool fp16 : {false, true}) compare_with_cpu(m, {{"x", rand_t({2, 3, 16, 16}, rng_)}}, fp16);
}

// Conv+residual+Relu fusion (cuDNN fused call or conv + graft's epilogue, whichever tactic timing
// picked), NHWC regions with GraftPool, SE broadcast, region exits: every layout, fp32 and fp16.
TEST_F(CudaEngineTest, ResidualSeCnnInEveryLayout) {
  REQUIRE_GPU();
  auto m = residual_se_cnn_model(rng_);
  for (const char* layout : {"nchw", "nhwc", "auto"}) {
    layout_ = layout;
    SCOPED_TRACE(std::string("layout ") + layout);
    for (bool fp16 : {false, true}) compare_with_cpu(m, {{"x", rand_t({2, 3, 9, 8}, rng_)}}, fp16);
  }
}

// Tactic timing fills the timing cache; a second build reads it and times nothing; the tactics
// travel in the plan, and the loaded plan computes what the built engine computes.
TEST_F(CudaEngineTest, TacticTimingCacheAndPlan) {
  REQUIRE_GPU();
  auto m = residual_se_cnn_model(rng_);
  const std::string cache = ::testing::TempDir() + "graft_timing_cache_test.json";
  std::remove(cache.c_str());
  auto build_with_cache = [&](std::vector<std::string>* log) {
    graft::BuilderConfig cfg;
    cfg.device = graft::DeviceType::kCUDA;
    cfg.fp16 = true;
    cfg.layout = "nhwc";  // one engine (no whole-engine candidates): the per-layer tactics are what is tested
    cfg.timing_cache_path = cache;
    cfg.progress = [log](const std::string& stage, const std::string& detail) {
      if (stage == "tactics") log->push_back(detail);
    };
    auto e = graft::Engine::build_from_onnx_bytes(m.bytes(), cfg, "cnn.onnx");
    EXPECT_TRUE(e.is_ok()) << e.status().to_string();
    return e.is_ok() ? *e : nullptr;
  };
  auto find = [](const std::vector<std::string>& log, const std::string& what) {
    for (const auto& l : log)
      if (l.find(what) != std::string::npos) return true;
    return false;
  };
  std::vector<std::string> first, second;
  auto e1 = build_with_cache(&first);
  ASSERT_TRUE(e1);
  for (const auto& l : first) std::printf("[ tactics  ] first: %s\n", l.c_str());
  EXPECT_TRUE(find(first, "6 layers timed, 0 from the timing cache")) << "six convolutions, none cached";
  EXPECT_TRUE(find(first, "timing cache written"));
  auto e2 = build_with_cache(&second);
  ASSERT_TRUE(e2);
  for (const auto& l : second) std::printf("[ tactics  ] second: %s\n", l.c_str());
  EXPECT_TRUE(find(second, "0 layers timed, 6 from the timing cache"));
  EXPECT_FALSE(find(second, "timing cache written")) << "nothing new to write";

  auto bytes = e1->serialize();
  ASSERT_TRUE(bytes.is_ok());
  auto st = graft::read_plan_bytes(*bytes, "mem.plan");
  ASSERT_TRUE(st.is_ok()) << st.status().to_string();
  EXPECT_EQ(st->tactics->size(), 6u) << "the plan carries the chosen tactics";
  auto loaded = graft::Engine::deserialize(*bytes, "mem.plan");
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  std::map<std::string, Tensor> in{{"x", rand_t({2, 3, 9, 8}, rng_)}};
  auto c1 = e1->create_context();
  auto c2 = (*loaded)->create_context();
  ASSERT_TRUE(c1.is_ok() && c2.is_ok());
  auto a = run(**c1, in);
  auto b = run(**c2, in);
  for (const auto& [name, t] : a) EXPECT_LT(rel_err(to_host(b.at(name)), to_host(t)), 1e-6) << name;

  // A file that is not a timing cache is refused with its name, and left as it was.
  {
    std::FILE* f = std::fopen(cache.c_str(), "w");
    std::fputs("{\"not\": \"a cache\"}", f);
    std::fclose(f);
  }
  graft::BuilderConfig cfg;
  cfg.device = graft::DeviceType::kCUDA;
  cfg.timing_cache_path = cache;
  auto bad = graft::Engine::build_from_onnx_bytes(m.bytes(), cfg, "cnn.onnx");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().to_string().find(cache), std::string::npos) << bad.status().to_string();
  EXPECT_NE(bad.status().to_string().find("not a graft timing cache"), std::string::npos);
  std::remove(cache.c_str());
}

TEST_F(CudaEngineTest, LayerNormSoftmaxBlock) {
  REQUIRE_GPU();
  auto m = attention_block_model(rng_);
  for (bool fp16 : {false, true}) compare_with_cpu(m, {{"x", rand_t({2, 6, 16}, rng_)}}, fp16);
}

TEST_F(CudaEngineTest, ShapeSubgraphDynamicBatch) {
  REQUIRE_GPU();
  auto m = shape_subgraph_model();
  std::map<std::string, graft::ProfileRange> profile = {{"x", {{1, 4, 6}, {3, 4, 6}, {8, 4, 6}}}};
  for (int64_t batch : {3, 5, 3})
    for (bool fp16 : {false, true}) compare_with_cpu(m, {{"x", rand_t({batch, 4, 6}, rng_)}}, fp16, profile);
}

// A custom op with a kernel workspace (GroupNorm's workspace_fn) runs on the GPU through the same
// CudaOp path as a builtin layer (custom_cuda_op): its workspace is sized when the context is made
// for static shapes, and per run when its output's shape is known only then (a dynamic batch).
TEST_F(CudaEngineTest, CustomOpWithWorkspaceStaticAndDynamicBatch) {
  REQUIRE_GPU();
  OnnxModelBuilder m;
  m.opset("ai.onnx.contrib", 1);
  m.input("x", DataType::kFloat32, {"N", 8, 5, 6});
  m.initializer("gamma", rand_t({8}, rng_, 0.5, 1.5));
  m.initializer("beta", rand_t({8}, rng_));
  OnnxModelBuilder::attr(m.node("GroupNorm", {"x", "gamma", "beta"}, {"g"}, "group_norm", "ai.onnx.contrib"),
                         "num_groups", int64_t{4});
  m.node("Relu", {"g"}, {"y"}, "relu");
  m.output("y", DataType::kFloat32);
  std::map<std::string, graft::ProfileRange> fixed = {{"x", {{3, 8, 5, 6}, {3, 8, 5, 6}, {3, 8, 5, 6}}}};
  std::map<std::string, graft::ProfileRange> dynamic = {{"x", {{1, 8, 5, 6}, {4, 8, 5, 6}, {8, 8, 5, 6}}}};
  for (const auto* profile : {&fixed, &dynamic}) {
    SCOPED_TRACE(profile == &fixed ? "fixed batch" : "dynamic batch");
    auto e = build(m, graft::DeviceType::kCUDA, false, *profile);
    ASSERT_TRUE(e);
    auto j = nlohmann::json::parse(e->describe_json());
    bool on_gpu = false;
    for (const auto& l : j["cuda"]["layers"])
      if (l["name"] == "group_norm") on_gpu = l["device"] == "cuda";
    EXPECT_TRUE(on_gpu) << j["cuda"]["layers"].dump();
    for (int64_t batch : profile == &fixed ? std::vector<int64_t>{3} : std::vector<int64_t>{2, 7, 2})
      for (bool fp16 : {false, true}) compare_with_cpu(m, {{"x", rand_t({batch, 8, 5, 6}, rng_)}}, fp16, *profile);
  }
}

TEST_F(CudaEngineTest, DescribeListsPlacementAndFallbacks) {
  REQUIRE_GPU();
  std::vector<std::string> warnings;
  auto e = build(cnn_model(rng_), graft::DeviceType::kCUDA, false, {}, &warnings);
  ASSERT_TRUE(e);
  std::string d = e->describe();
  std::printf("%s", d.c_str());
  EXPECT_NE(d.find("sm_"), std::string::npos);
  EXPECT_NE(d.find("placement:"), std::string::npos);
  auto j = nlohmann::json::parse(e->describe_json());
  ASSERT_TRUE(j.contains("cuda"));
  size_t fallbacks = 0;
  for (const auto& l : j["cuda"]["layers"])
    if (l["device"] == "cpu (fallback)") {
      ++fallbacks;
      EXPECT_TRUE(l.contains("reason")) << l.dump();
      EXPECT_NE(d.find(l["name"].get<std::string>() + " ["), std::string::npos) << "fallback not in describe()";
    }
  EXPECT_EQ(fallbacks, j["cuda"]["fallback_layers"].size());
  EXPECT_EQ(fallbacks, warnings.size()) << "every fallback is a build warning";
}

TEST_F(CudaEngineTest, MemoryPlanReusesBuffersInAChain) {
  REQUIRE_GPU();
  auto e = build(custom_chain_model(8), graft::DeviceType::kCUDA);
  ASSERT_TRUE(e);
  auto j = nlohmann::json::parse(e->describe_json());
  ASSERT_TRUE(j["cuda"]["memory_plan"].is_object()) << j["cuda"].dump();
  const size_t peak = j["cuda"]["memory_plan"]["peak_bytes"], total = j["cuda"]["memory_plan"]["total_bytes"];
  std::printf("[ memplan  ] peak %zu bytes, sum of activations %zu bytes\n", peak, total);
  EXPECT_LT(peak, total);
  EXPECT_LE(peak, 3 * 64 * 256 * sizeof(float) + 3 * 256) << "a chain needs about two live activations";
  auto ctx = e->create_context();
  ASSERT_TRUE(ctx.is_ok());
  auto x = rand_t({64, 256}, rng_);
  run(**ctx, {{"x", x}});
  auto* cctx = dynamic_cast<graft::CudaExecutionContext*>(ctx->get());
  ASSERT_NE(cctx, nullptr);
  EXPECT_LT(cctx->memory_plan().peak_bytes, cctx->memory_plan().total_bytes);
}

TEST_F(CudaEngineTest, TwoContextsOnTwoThreads) {
  REQUIRE_GPU();
  auto m = mlp_model(rng_);
  auto cpu = build(m, graft::DeviceType::kCPU);
  auto gpu = build(m, graft::DeviceType::kCUDA);
  ASSERT_TRUE(cpu && gpu);
  std::vector<Tensor> xs, want;
  for (int i = 0; i < 8; ++i) {
    xs.push_back(rand_t({4, 16}, rng_, -3, 3));
    auto c = cpu->create_context();
    want.push_back(run(**c, {{"x", xs.back()}}).at("y"));
  }
  std::vector<double> worst(2, 0);
  std::vector<std::string> errors(2);
  auto worker = [&](int t) {
    auto ctx = gpu->create_context();
    if (!ctx.is_ok()) { errors[t] = ctx.status().to_string(); return; }
    for (int rep = 0; rep < 20; ++rep) {
      int i = (rep * 3 + t) % 8;
      std::map<std::string, Tensor> out;
      auto st = (*ctx)->run({{"x", xs[i]}}, out);
      if (!st.is_ok()) { errors[t] = st.to_string(); return; }
      worst[t] = std::max(worst[t], rel_err(out.at("y"), want[i]));
    }
  };
  std::thread a(worker, 0), b(worker, 1);
  a.join();
  b.join();
  for (int t = 0; t < 2; ++t) {
    EXPECT_TRUE(errors[t].empty()) << "thread " << t << ": " << errors[t];
    std::printf("[ threads  ] thread %d worst rel err %.3g %s\n", t, worst[t], worst[t] < 1e-4 ? "PASS" : "FAIL");
    EXPECT_LT(worst[t], 1e-4) << "seed " << seed_;
  }
}

TEST_F(CudaEngineTest, CudaGraphReplayMatchesEager) {
  REQUIRE_GPU();
  auto e = build(custom_chain_model(6), graft::DeviceType::kCUDA);
  ASSERT_TRUE(e);
  auto cg = e->create_context();
  auto ce = e->create_context();
  ASSERT_TRUE(cg.is_ok() && ce.is_ok());
  auto* g = dynamic_cast<graft::CudaExecutionContext*>(cg->get());
  auto* eager = dynamic_cast<graft::CudaExecutionContext*>(ce->get());
  ASSERT_TRUE(g && eager);
  g->set_cuda_graphs(true);
  eager->set_cuda_graphs(false);
  bool used_graph = false;
  for (int rep = 0; rep < 4; ++rep) {
    auto x = rand_t({64, 256}, rng_);
    auto yg = run(*g, {{"x", x}}).at("y");
    used_graph |= g->last_run_used_cuda_graph();
    auto ye = run(*eager, {{"x", x}}).at("y");
    EXPECT_FALSE(eager->last_run_used_cuda_graph());
    ASSERT_EQ(yg.nbytes(), ye.nbytes());
    EXPECT_EQ(std::memcmp(yg.data(), ye.data(), yg.nbytes()), 0) << "graph replay differs from eager, run " << rep;
  }
  std::printf("[ graphs   ] CUDA graph used: %s\n", used_graph ? "yes" : "no (capture failed; see log)");
  if (std::getenv("GRAFT_CUDA_GRAPHS") == nullptr) {
    EXPECT_TRUE(used_graph) << "an all-GPU engine should replay a graph";
  }
}

// Layers with a kernel workspace (cuBLASLt Gemm/MatMul, cuDNN Conv): with static shapes the
// workspace is allocated when the context is made, so the very first run is captured and replayed
// (no cudaMalloc inside the capture), and every run matches the CPU reference.
TEST_F(CudaEngineTest, GraphCapturedWithKernelWorkspace) {
  REQUIRE_GPU();
  if (std::getenv("GRAFT_CUDA_GRAPHS") || std::getenv("GRAFT_CUDA_SYNC_CHECK"))
    GTEST_SKIP() << "CUDA graphs are switched by the environment";
  struct Case {
    const char* name;
    OnnxModelBuilder model;
    std::vector<int64_t> dims;
  };
  std::vector<Case> cases;
  cases.push_back({"mlp (Gemm)", mlp_model(rng_), {4, 16}});
  cases.push_back({"cnn (Conv, Gemm)", cnn_model(rng_), {2, 3, 16, 16}});
  cases.push_back({"attention (MatMul)", attention_block_model(rng_), {2, 6, 16}});
  for (auto& c : cases) {
    SCOPED_TRACE(std::string(c.name) + ", random seed " + std::to_string(seed_));
    auto cpu = build(c.model, graft::DeviceType::kCPU);
    auto gpu = build(c.model, graft::DeviceType::kCUDA);
    ASSERT_TRUE(cpu && gpu);
    auto cctx = cpu->create_context();
    auto gctx = gpu->create_context();
    ASSERT_TRUE(cctx.is_ok() && gctx.is_ok());
    auto* g = dynamic_cast<graft::CudaExecutionContext*>(gctx->get());
    ASSERT_NE(g, nullptr);
    g->set_cuda_graphs(true);
    for (int rep = 0; rep < 3; ++rep) {
      auto x = rand_t(c.dims, rng_);
      auto want = run(**cctx, {{"x", x}}).at("y");
      std::map<std::string, Tensor> out{{"y", poisoned_device(want.dtype(), want.dims())}};
      auto st = g->run({{"x", to_device(x)}}, out);
      ASSERT_TRUE(st.is_ok()) << "run " << rep << ": " << st.to_string();
      EXPECT_TRUE(g->last_run_used_cuda_graph()) << "run " << rep << " did not replay a CUDA graph";
      double err = rel_err(to_host(out.at("y")), want);
      std::printf("[ graphs   ] %s run %d: graph %s, rel err %.3g\n", c.name, rep,
                  g->last_run_used_cuda_graph() ? "yes" : "no", err);
      EXPECT_LT(err, 1e-4) << "run " << rep;
    }
    EXPECT_GT(g->memory_plan().workspace_bytes, 0u) << "these models need a kernel workspace";
  }
}

// Dynamic batch: the first run of each new shape set is the eager warm-up (it measures the arena and
// workspace), later runs of that shape set capture and replay; switching back and forth keeps
// matching the CPU reference and keeps using graphs.
TEST_F(CudaEngineTest, GraphsRecapturedWhenShapesChange) {
  REQUIRE_GPU();
  if (std::getenv("GRAFT_CUDA_GRAPHS") || std::getenv("GRAFT_CUDA_SYNC_CHECK"))
    GTEST_SKIP() << "CUDA graphs are switched by the environment";
  SCOPED_TRACE("random seed " + std::to_string(seed_));
  std::map<std::string, graft::ProfileRange> profile = {{"x", {{1, 16}, {4, 16}, {64, 16}}}};
  auto m = dynamic_gemm_model(rng_);
  auto cpu = build(m, graft::DeviceType::kCPU, false, profile);
  auto gpu = build(m, graft::DeviceType::kCUDA, false, profile);
  ASSERT_TRUE(cpu && gpu);
  auto cctx = cpu->create_context();
  auto gctx = gpu->create_context();
  ASSERT_TRUE(cctx.is_ok() && gctx.is_ok());
  auto* g = dynamic_cast<graft::CudaExecutionContext*>(gctx->get());
  ASSERT_NE(g, nullptr);
  g->set_cuda_graphs(true);
  std::set<int64_t> seen;
  for (int64_t batch : {2, 2, 48, 48, 2, 7, 48, 7}) {
    auto x = rand_t({batch, 16}, rng_);
    auto want = run(**cctx, {{"x", x}}).at("y");
    std::map<std::string, Tensor> out;
    auto st = g->run({{"x", x}}, out);
    ASSERT_TRUE(st.is_ok()) << "batch " << batch << ": " << st.to_string();
    const bool first = seen.insert(batch).second;
    double err = rel_err(to_host(out.at("y")), want);
    std::printf("[ graphs   ] batch %lld: graph %s, rel err %.3g\n", static_cast<long long>(batch),
                g->last_run_used_cuda_graph() ? "yes" : "no", err);
    EXPECT_LT(err, 1e-4) << "batch " << batch;
    ASSERT_EQ(out.at("y").dims(), (std::vector<int64_t>{batch, 8}));
    if (!first) {
      EXPECT_TRUE(g->last_run_used_cuda_graph()) << "batch " << batch << " seen before but not replayed";
    }
  }
}

// A dynamic profile with cuDNN convolutions and a host shape subgraph (Shape -> Gather -> Concat ->
// Reshape, as exporters write a dynamic flatten): every shape set is captured on its second run and
// replayed after, in FP32 and FP16, and the cache of captured shape sets stays within its bound.
// This is the engine a user builds from a dynamic-batch export; it used to fall back to eager
// execution for good (cudnnSetStream refused inside the capture, and the host subgraph was taken
// for tensor data).
TEST_F(CudaEngineTest, DynamicCnnCapturesEveryShapeSet) {
  REQUIRE_GPU();
  if (std::getenv("GRAFT_CUDA_GRAPHS") || std::getenv("GRAFT_CUDA_SYNC_CHECK"))
    GTEST_SKIP() << "CUDA graphs are switched by the environment";
  SCOPED_TRACE("random seed " + std::to_string(seed_));
  std::map<std::string, graft::ProfileRange> profile = {{"x", {{1, 3, 12, 12}, {4, 3, 12, 12}, {16, 3, 12, 12}}}};
  auto m = dynamic_cnn_model(rng_);
  auto cpu = build(m, graft::DeviceType::kCPU, false, profile);
  ASSERT_TRUE(cpu);
  auto cctx = cpu->create_context();
  ASSERT_TRUE(cctx.is_ok());
  for (bool fp16 : {false, true}) {
    auto gpu = build(m, graft::DeviceType::kCUDA, fp16, profile);
    ASSERT_TRUE(gpu);
    EXPECT_EQ(gpu->describe().find("CUDA graphs off"), std::string::npos) << gpu->describe();
    auto gctx = gpu->create_context();
    ASSERT_TRUE(gctx.is_ok());
    auto* g = dynamic_cast<graft::CudaExecutionContext*>(gctx->get());
    ASSERT_NE(g, nullptr);
    g->set_graph_cache_size(2);
    // The shape sets the context should still hold, most recently used first (an LRU of 2): a
    // batch among them replays its graph, any other plans (eager) again.
    std::vector<int64_t> cached;
    for (int64_t batch : {2, 2, 2, 9, 9, 2, 16, 16, 1, 1, 9}) {
      auto x = rand_t({batch, 3, 12, 12}, rng_);
      auto want = run(**cctx, {{"x", x}}).at("y");
      std::map<std::string, Tensor> out = {{"y", poisoned_device(DataType::kFloat32, {batch, 5})}};
      auto st = g->run({{"x", to_device(x)}}, out);
      ASSERT_TRUE(st.is_ok()) << "batch " << batch << ": " << st.to_string();
      const double err = rel_err(to_host(out.at("y")), want);
      std::printf("[ dynamic  ] %s batch %lld: graph %s, captured shape sets %zu, rel err %.3g\n", fp16 ? "fp16" : "fp32",
                  static_cast<long long>(batch), g->last_run_used_cuda_graph() ? "yes" : "no", g->captured_graphs(), err);
      EXPECT_LT(err, fp16 ? 1e-2 : 1e-4) << "batch " << batch;
      EXPECT_LE(g->captured_graphs(), 2u);
      auto it = std::find(cached.begin(), cached.end(), batch);
      const bool held = it != cached.end();
      if (held) cached.erase(it);
      cached.insert(cached.begin(), batch);
      if (cached.size() > 2) cached.pop_back();
      if (held) EXPECT_TRUE(g->last_run_used_cuda_graph()) << "batch " << batch << " is cached but was not replayed";
      else EXPECT_FALSE(g->last_run_used_cuda_graph()) << "batch " << batch << " was evicted but replayed a graph";
    }
  }
}

// A dynamic-batch engine composes the dynamo export's head split into view chains planned per
// shape set (compose_view_chains), and the layers that only feed Shape(k) compute dims, not data.
TEST_F(CudaEngineTest, DynamicHeadSplitRunsAsViewChains) {
  REQUIRE_GPU();
  SCOPED_TRACE("random seed " + std::to_string(seed_));
  auto gpu = check_dynamic_batches(dynamic_head_split_model(), false, 1e-6);
  ASSERT_TRUE(gpu);
  const std::string d = gpu->describe();
  EXPECT_NE(d.find("(8 dims only)"), std::string::npos) << d;  // r, u, t, sq, k0..k3 feed only Shape(k3)
}

// In float16 the head split's chains fold into the attention (read in place, Y written through the
// output permute) over the dynamic batch.
TEST_F(CudaEngineTest, DynamicAttentionReadsItsChainsInPlace) {
  REQUIRE_GPU();
  SCOPED_TRACE("random seed " + std::to_string(seed_));
  ASSERT_TRUE(check_dynamic_batches(dynamic_attention_model(), true, 1e-2));
}

// The block's out_proj over a dynamic batch: its output Transpose moves ahead of the GEMM and merges
// with the attention's output permute, which the attention writes through; the residual Add becomes
// the GEMM's C matrix. No Transpose or Add layer is left of that path.
TEST_F(CudaEngineTest, DynamicAttentionBlockOutProjection) {
  REQUIRE_GPU();
  SCOPED_TRACE("random seed " + std::to_string(seed_));
  auto gpu = check_dynamic_batches(dynamic_attention_block_model(rng_), true, 1e-2);
  ASSERT_TRUE(gpu);
  const std::string d = gpu->describe();
  EXPECT_EQ(d.find("[Add]"), std::string::npos) << d;
  EXPECT_EQ(d.find("o_bse"), std::string::npos) << d;  // the old Transpose's output is the GEMM's now
}

// torch's default stream is the legacy default stream, which cannot be captured: a run enqueued
// on it goes to the context's own stream, ordered with events after the inputs the caller wrote on
// the legacy stream and before what it queues next, and still replays a CUDA graph.
TEST_F(CudaEngineTest, EnqueueOnTheLegacyDefaultStream) {
  REQUIRE_GPU();
  if (std::getenv("GRAFT_CUDA_GRAPHS") || std::getenv("GRAFT_CUDA_SYNC_CHECK"))
    GTEST_SKIP() << "CUDA graphs are switched by the environment";
  SCOPED_TRACE("random seed " + std::to_string(seed_));
  DynamicCnnPair pair;
  ASSERT_NO_FATAL_FAILURE(make_dynamic_cnn_pair(&pair));
  graft::ExecutionContext** cctx = &pair.cpu_context;
  graft::CudaExecutionContext* g = pair.gpu_context;
  Tensor dx = Tensor::empty(DataType::kFloat32, {6, 3, 12, 12}, graft::DeviceType::kCUDA);
  for (int rep = 0; rep < 4; ++rep) {
    auto x = rand_t({6, 3, 12, 12}, rng_);
    auto want = run(**cctx, {{"x", x}}).at("y");
    // The input is written asynchronously on the legacy stream, right before the enqueue.
    ASSERT_EQ(cudaMemcpyAsync(dx.data(), x.data(), x.nbytes(), cudaMemcpyHostToDevice, cudaStreamLegacy), cudaSuccess);
    std::map<std::string, Tensor> out = {{"y", poisoned_device(DataType::kFloat32, {6, 5})}};
    auto st = g->enqueue({{"x", dx}}, out, cudaStreamLegacy);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    Tensor host = Tensor::empty(DataType::kFloat32, {6, 5});
    // Read back on the legacy stream: ordered after the engine's run by the engine's event.
    ASSERT_EQ(cudaMemcpyAsync(host.data(), out.at("y").data(), host.nbytes(), cudaMemcpyDeviceToHost, cudaStreamLegacy),
              cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(cudaStreamLegacy), cudaSuccess);
    const double err = rel_err(host, want);
    std::printf("[ legacy   ] run %d: graph %s, rel err %.3g\n", rep, g->last_run_used_cuda_graph() ? "yes" : "no", err);
    EXPECT_LT(err, 1e-4) << "run " << rep;
    if (rep >= 1) {
      EXPECT_TRUE(g->last_run_used_cuda_graph()) << "run " << rep;
    }
  }
}

// A caller capturing its own CUDA graph (torch.cuda.graph around graft) records the engine's run
// into that graph; replaying the caller's graph recomputes the outputs from new input values.
TEST_F(CudaEngineTest, RunCapturedIntoTheCallersGraph) {
  REQUIRE_GPU();
  SCOPED_TRACE("random seed " + std::to_string(seed_));
  DynamicCnnPair pair;
  ASSERT_NO_FATAL_FAILURE(make_dynamic_cnn_pair(&pair));
  graft::ExecutionContext** cctx = &pair.cpu_context;
  graft::CudaExecutionContext* g = pair.gpu_context;
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  Tensor dx = Tensor::empty(DataType::kFloat32, {3, 3, 12, 12}, graft::DeviceType::kCUDA);
  std::map<std::string, Tensor> out = {{"y", poisoned_device(DataType::kFloat32, {3, 5})}};
  auto x0 = rand_t({3, 3, 12, 12}, rng_);
  ASSERT_EQ(cudaMemcpy(dx.data(), x0.data(), x0.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
  // Not yet run at this shape: the engine refuses to be captured (it would have to allocate).
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  auto refused = g->enqueue({{"x", dx}}, out, s);
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  if (graph) cudaGraphDestroy(graph);
  graph = nullptr;
  EXPECT_FALSE(refused.is_ok());
  EXPECT_NE(refused.message().find("run it once before capturing"), std::string::npos) << refused.to_string();
  // Warm up once, then capture into the caller's graph.
  ASSERT_TRUE(g->enqueue({{"x", dx}}, out, s).is_ok());
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  auto st = g->enqueue({{"x", dx}}, out, s);
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int rep = 0; rep < 3; ++rep) {
    auto x = rand_t({3, 3, 12, 12}, rng_);
    auto want = run(**cctx, {{"x", x}}).at("y");
    ASSERT_EQ(cudaMemcpy(dx.data(), x.data(), x.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemset(out.at("y").data(), 0xFF, out.at("y").nbytes()), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    const double err = rel_err(to_host(out.at("y")), want);
    std::printf("[ caller   ] replay %d: rel err %.3g\n", rep, err);
    EXPECT_LT(err, 1e-4) << "replay " << rep;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
}

TEST_F(CudaEngineTest, PlanRoundTripAndArchitectureMismatch) {
  REQUIRE_GPU();
  auto m = mlp_model(rng_);
  auto e = build(m, graft::DeviceType::kCUDA);
  ASSERT_TRUE(e);
  auto bytes = e->serialize();
  ASSERT_TRUE(bytes.is_ok()) << bytes.status().to_string();
  auto loaded = graft::Engine::deserialize(*bytes, "mlp.plan");
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  EXPECT_EQ((*loaded)->device(), graft::DeviceType::kCUDA);
  auto x = rand_t({4, 16}, rng_, -3, 3);
  auto c1 = e->create_context();
  auto c2 = (*loaded)->create_context();
  ASSERT_TRUE(c1.is_ok() && c2.is_ok());
  EXPECT_LT(rel_err(run(**c2, {{"x", x}}).at("y"), run(**c1, {{"x", x}}).at("y")), 1e-6);

  // The same plan stamped for another architecture is refused, naming both.
  auto st = graft::read_plan_bytes(*bytes, "mlp.plan");
  ASSERT_TRUE(st.is_ok()) << st.status().to_string();
  st->cuda_compute_capability = 10;
  st->cuda_device_name = "Imaginary GPU";
  auto other = graft::write_plan_bytes(*st);
  ASSERT_TRUE(other.is_ok());
  auto refused = graft::Engine::deserialize(*other, "other.plan");
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), graft::StatusCode::kUnsupported);
  EXPECT_NE(refused.status().message().find("sm_10"), std::string::npos) << refused.status().to_string();
  std::printf("[ plan     ] mismatch error: %s\n", refused.status().to_string().c_str());
}

// A CUDA build on a machine without a usable GPU (CI): building for CUDA and loading a CUDA plan
// are clear errors (the plan's error names the plan), and the CPU engine still works. On a GPU
// machine the tests above cover these paths with a GPU.
TEST_F(CudaEngineTest, NoGpuIsAClearError) {
  const std::string why = gpu_missing();
  if (why.empty()) GTEST_SKIP() << "a GPU is visible: this test is for machines without one";
  auto m = mlp_model(rng_);
  graft::BuilderConfig cfg;
  cfg.device = graft::DeviceType::kCUDA;
  auto b = graft::Engine::build_from_onnx_bytes(m.bytes(), cfg, "mlp.onnx");
  ASSERT_FALSE(b.is_ok());
  EXPECT_EQ(b.status().code(), graft::StatusCode::kUnsupported) << b.status().to_string();
  EXPECT_NE(b.status().message().find("GPU"), std::string::npos) << b.status().to_string();
  const std::string plan = cuda_stamped_plan(rng_);
  ASSERT_FALSE(plan.empty());
  auto e = graft::Engine::deserialize(plan, "gpu.plan");
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), graft::StatusCode::kUnsupported) << e.status().to_string();
  EXPECT_NE(e.status().message().find("GPU"), std::string::npos) << e.status().to_string();
  EXPECT_EQ(e.status().file(), "gpu.plan") << e.status().to_string();
  std::printf("[ no GPU   ] build: %s\n[ no GPU   ] plan:  %s\n", b.status().to_string().c_str(),
              e.status().to_string().c_str());
  // The process stays usable: a CPU engine of the same model builds and runs.
  auto cpu = build(m, graft::DeviceType::kCPU);
  ASSERT_TRUE(cpu);
  auto ctx = cpu->create_context();
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
  auto y = run(**ctx, {{"x", rand_t({4, 16}, rng_, -3, 3)}}).at("y");
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{4, 8}));
}

TEST_F(CudaEngineTest, PerLayerProfile) {
  REQUIRE_GPU();
  auto rows = profile_one_run(mlp_model(rng_), {{"x", rand_t({4, 16}, rng_)}});
  // One row per engine layer: swish, fc1 with its Relu fused into the GEMM epilogue, fc2.
  EXPECT_EQ(rows.size(), 3u);
  double pct = 0;
  for (const auto& r : rows) {
    EXPECT_GE(r.ms, 0) << r.name;
    pct += r.percent;
  }
  EXPECT_NEAR(pct, 100.0, 0.5);
  std::string table = graft::format_layer_timings(rows);
  std::printf("%s", table.c_str());
  EXPECT_NE(table.find("fc1"), std::string::npos);
}

// The profile names what each convolution ran (GraftConv's tactic); other layers leave it empty.
TEST_F(CudaEngineTest, PerLayerProfileNamesConvolutionTactics) {
  REQUIRE_GPU();
  const auto rows = profile_one_run(cnn_model(rng_), {{"x", rand_t({2, 3, 16, 16}, rng_)}});
  int convs = 0;
  for (const auto& r : rows) {
    if (r.op_type == "GraftConv") {
      ++convs;
      EXPECT_FALSE(r.tactic.empty()) << r.name;
      EXPECT_TRUE(r.tactic.find("cuDNN algo") != std::string::npos || r.tactic.find("(variant ") != std::string::npos)
          << r.tactic;
    } else if (r.op_type != "GraftGemm") {
      EXPECT_TRUE(r.tactic.empty()) << r.name << ": " << r.tactic;
    }
  }
  EXPECT_GE(convs, 1);
  const std::string table = graft::format_layer_timings(rows);
  EXPECT_NE(table.find("tactic"), std::string::npos) << table;
}

TEST_F(CudaEngineTest, BadInputIsAClearErrorAndContextStaysUsable) {
  REQUIRE_GPU();
  auto e = build(mlp_model(rng_), graft::DeviceType::kCUDA);
  ASSERT_TRUE(e);
  auto ctx = e->create_context();
  ASSERT_TRUE(ctx.is_ok());
  std::map<std::string, Tensor> out;
  auto st = (*ctx)->run({{"x", rand_t({4, 15}, rng_)}}, out);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("'x'"), std::string::npos) << st.to_string();
  run(**ctx, {{"x", rand_t({4, 16}, rng_)}});
}

#endif

}  // namespace
