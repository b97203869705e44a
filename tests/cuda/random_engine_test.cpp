// Random ops in a CUDA engine (src/ops/random/random.cu): the engine builds (device engines
// used to refuse random nodes), runs them on the GPU inside its CUDA graph, and keeps the seed
// contract across graph replays: an unseeded RandomUniformLike draws fresh values on every run,
// replays included (its kernel reads a run counter the graph advances), a seeded one the same
// values on every run. Needs a GPU; skips (with the reason) without one or without CUDA.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <string>

#include "graft/engine.h"
#include "test_models.h"

#ifdef GRAFT_WITH_CUDA
#include "cuda_engine_fixture.h"
#include "graft/cuda_engine.h"
#endif

namespace {

using namespace graft_cuda_test;
using graft::DeviceType;

#ifdef GRAFT_WITH_CUDA

// x[n] -> RandomUniformLike(low, high, seed?) -> r; y = r + x. Outputs r and y.
OnnxModelBuilder uniform_like_model(int64_t n, float low, float high, const float* seed) {
  OnnxModelBuilder m(17);
  m.input("x", DataType::kFloat32, {n});
  auto& draw = m.node("RandomUniformLike", {"x"}, {"r"}, "draw");
  OnnxModelBuilder::attr(draw, "low", low);
  OnnxModelBuilder::attr(draw, "high", high);
  if (seed) OnnxModelBuilder::attr(draw, "seed", *seed);
  m.node("Add", {"r", "x"}, {"y"}, "add");
  m.output("r", DataType::kFloat32);
  m.output("y", DataType::kFloat32);
  return m;
}

class CudaRandomEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = std::random_device{}();
    rng_.seed(seed_);
  }
  // Runs the model `runs` times on one CUDA context with fresh x each run; per run, r and whether
  // the run replayed (or captured) a CUDA graph. Checks r in [low, high) and y = r + x exactly.
  void run_engine(const OnnxModelBuilder& m, int runs, float low, float high, std::vector<Tensor>* rs,
                  std::vector<bool>* graphed) {
    graft::BuilderConfig cfg;
    cfg.device = DeviceType::kCUDA;
    auto e = graft::Engine::build_from_onnx_bytes(m.bytes(), cfg, "uniform_like.onnx");
    ASSERT_TRUE(e.is_ok()) << e.status().to_string();
    auto ctx = (*e)->create_context();
    ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
    auto* cuda_ctx = dynamic_cast<graft::CudaExecutionContext*>(ctx->get());
    ASSERT_NE(cuda_ctx, nullptr);
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    for (int run = 0; run < runs; ++run) {
      SCOPED_TRACE("run " + std::to_string(run));
      Tensor x = Tensor::empty(DataType::kFloat32, {n_});
      for (int64_t i = 0; i < n_; ++i) x.data_as<float>()[i] = u(rng_);
      std::map<std::string, Tensor> out;
      auto st = (*ctx)->run({{"x", x}}, out);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      ASSERT_TRUE(out.count("r") && out.count("y"));
      auto r = out.at("r").to_host();
      auto y = out.at("y").to_host();
      ASSERT_TRUE(r.is_ok() && y.is_ok());
      ASSERT_EQ(r->dims(), x.dims());
      ASSERT_EQ(r->dtype(), DataType::kFloat32);
      for (int64_t i = 0; i < n_; ++i) {
        const float ri = r->data_as<float>()[i];
        ASSERT_TRUE(ri >= low && ri < high) << "r[" << i << "] = " << ri;
        ASSERT_EQ(y->data_as<float>()[i], ri + x.data_as<float>()[i]) << "y[" << i << "]";
      }
      rs->push_back(*r);
      graphed->push_back(cuda_ctx->last_run_used_cuda_graph());
    }
  }
  static bool same(const Tensor& a, const Tensor& b) { return std::memcmp(a.data(), b.data(), a.nbytes()) == 0; }

  const int64_t n_ = 4096;
  uint32_t seed_ = 0;
  std::mt19937 rng_;
};

TEST_F(CudaRandomEngine, UnseededDrawsFreshValuesOnEveryGraphReplay) {
  REQUIRE_GPU();
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const float low = -1.5f, high = 2.5f;
  std::vector<Tensor> rs;
  std::vector<bool> graphed;
  ASSERT_NO_FATAL_FAILURE(run_engine(uniform_like_model(n_, low, high, nullptr), 6, low, high, &rs, &graphed));
  int graph_runs = 0;
  for (size_t i = 0; i < rs.size(); ++i) {
    graph_runs += graphed[i];
    if (i) {
      EXPECT_FALSE(same(rs[i], rs[i - 1])) << "run " << i << (graphed[i] ? " (CUDA graph)" : " (eager)")
                                           << " repeated the previous run's draw";
    }
  }
  // Runs after the first replay the captured graph; at least two of them, or the test proves nothing.
  EXPECT_GE(graph_runs, 2) << "the engine should replay its CUDA graph";
}

TEST_F(CudaRandomEngine, SeededDrawsTheSameValuesOnEveryRun) {
  REQUIRE_GPU();
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const float low = 0.25f, high = 0.75f, seed = static_cast<float>(seed_ % 100000);
  std::vector<Tensor> rs;
  std::vector<bool> graphed;
  ASSERT_NO_FATAL_FAILURE(run_engine(uniform_like_model(n_, low, high, &seed), 5, low, high, &rs, &graphed));
  int graph_runs = 0;
  for (size_t i = 0; i < rs.size(); ++i) {
    graph_runs += graphed[i];
    EXPECT_TRUE(same(rs[i], rs[0])) << "run " << i << (graphed[i] ? " (CUDA graph)" : " (eager)") << " differs";
  }
  EXPECT_GE(graph_runs, 2) << "the engine should replay its CUDA graph";
  // The draw is not constant: a seeded stream still spreads over [low, high).
  size_t distinct = 0;
  for (int64_t i = 1; i < n_; ++i) distinct += rs[0].data_as<float>()[i] != rs[0].data_as<float>()[0];
  EXPECT_GT(distinct, static_cast<size_t>(n_ / 2));
}

#endif  // GRAFT_WITH_CUDA

}  // namespace
