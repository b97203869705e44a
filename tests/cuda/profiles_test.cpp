// Several optimization profiles on the CUDA engine: tactic timing covers every profile's points, a
// context checks inputs against its selected profile, and one context runs (and captures) both.
#include <gtest/gtest.h>

#ifdef GRAFT_WITH_CUDA

#include "cuda_engine_fixture.h"

namespace graft_cuda_test {
namespace {

TEST_F(CudaEngineTest, TwoProfilesEachRunAndAreTimed) {
  REQUIRE_GPU();
  SCOPED_TRACE("random seed " + std::to_string(seed_));
  auto m = dynamic_cnn_model(rng_);
  graft::BuilderConfig cfg;
  cfg.device = graft::DeviceType::kCUDA;
  cfg.profiles = {{{"x", {{1, 3, 12, 12}, {2, 3, 12, 12}, {4, 3, 12, 12}}}},
                  {{"x", {{8, 3, 12, 12}, {12, 3, 12, 12}, {16, 3, 12, 12}}}}};
  std::string tactics_line;
  cfg.progress = [&](const std::string& stage, const std::string& detail) {
    if (stage == "tactics" && detail.find("profile point") != std::string::npos) tactics_line = detail;
  };
  auto gpu = graft::Engine::build_from_onnx_bytes(m.bytes(), cfg, "cnn.onnx");
  ASSERT_TRUE(gpu.is_ok()) << gpu.status().to_string();
  // Six distinct points: min, opt and max of each profile.
  EXPECT_NE(tactics_line.find("at 6 profile point(s) of 2 profiles"), std::string::npos) << tactics_line;
  graft::BuilderConfig cpu_cfg = cfg;
  cpu_cfg.device = graft::DeviceType::kCPU;
  cpu_cfg.progress = nullptr;
  auto cpu = graft::Engine::build_from_onnx_bytes(m.bytes(), cpu_cfg, "cnn.onnx");
  ASSERT_TRUE(cpu.is_ok()) << cpu.status().to_string();
  // The plan keeps both profiles.
  auto bytes = (*gpu)->serialize();
  ASSERT_TRUE(bytes.is_ok());
  auto loaded = graft::Engine::deserialize(*bytes, "cnn.plan");
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  ASSERT_EQ((*loaded)->num_profiles(), 2);
  auto cctx = (*cpu)->create_context();
  auto gctx = (*loaded)->create_context();
  ASSERT_TRUE(cctx.is_ok() && gctx.is_ok());
  // One context, switching back and forth; each shape set runs twice (the second replays a graph).
  for (auto [profile, batch] : {std::pair{0, 3}, std::pair{1, 12}, std::pair{0, 3}, std::pair{1, 16}, std::pair{1, 16}}) {
    ASSERT_TRUE((*cctx)->set_profile(profile).is_ok());
    ASSERT_TRUE((*gctx)->set_profile(profile).is_ok());
    auto x = rand_t({batch, 3, 12, 12}, rng_);
    auto want = run(**cctx, {{"x", x}}).at("y");
    auto got = to_host(run(**gctx, {{"x", to_device(x)}}).at("y"));
    EXPECT_LT(rel_err(got, want), 1e-4) << "profile " << profile << " batch " << batch;
  }
  // A batch of profile 1 on profile 0 is refused, naming the input, the range and profile 1.
  ASSERT_TRUE((*gctx)->set_profile(0).is_ok());
  std::map<std::string, Tensor> out;
  graft::Status s = (*gctx)->run({{"x", to_device(rand_t({12, 3, 12, 12}, rng_))}}, out);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("input 'x' has shape [12,3,12,12]"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("outside optimization profile 0 [min 1, max 4]"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("profile 1 covers it"), std::string::npos) << s.message();
  EXPECT_FALSE((*gctx)->set_profile(2).is_ok());
}

}  // namespace
}  // namespace graft_cuda_test

#endif  // GRAFT_WITH_CUDA
