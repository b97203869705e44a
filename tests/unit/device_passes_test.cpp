// The CUDA target's pass list (src/build/device_passes.cpp) is the builder's: it runs on any
// machine against a stand-in for the device's answers. Here it rewrites a small conv + GEMM model
// as a CUDA build would, on the CPU, and the result still computes the model.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "build/device_passes.h"
#include "tests/unit/device_pass_test_util.h"

namespace graft::testing {
namespace {

TEST(DevicePasses, CudaListRewritesTheModelAndKeepsItsValues) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  OnnxModelBuilder m = conv_gemm_model(rng);
  auto original = load(m);
  ASSERT_TRUE(original);
  const std::map<std::string, Tensor> in{{"x", random_tensor(DataType::kFloat32, {2, 8, 6, 5}, rng)}};
  const auto want = run_graph(*original, in);

  for (const char* layout : {"auto", "nchw"}) {
    SCOPED_TRACE(std::string("layout ") + layout);
    auto g = load(m);
    ASSERT_TRUE(g);
    BuilderConfig config;
    config.fp16 = true;
    config.layout = layout;
    std::vector<std::string> stages;
    config.progress = [&](const std::string& stage, const std::string&) { stages.push_back(stage); };
    Status s = run_device_pass_list(*g, cuda_device_passes(), config, runs_everything());
    ASSERT_TRUE(s.is_ok()) << s.to_string();

    EXPECT_EQ(count_op(*g, "GraftConv"), 2) << "both convolutions with their bias, residual and Relu";
    EXPECT_EQ(count_op(*g, "Conv") + count_op(*g, "Relu"), 0);
    EXPECT_EQ(count_op(*g, "GraftGemm"), 1) << "MatMul + bias";
    bool half = false;
    for (const auto& n : g->nodes())
      if (n->op_type == "GraftConv") half |= n->input(0)->desc.dtype == DataType::kFloat16;
    EXPECT_TRUE(half) << "the fp16 pass ran: the convolutions read float16";
    const bool nhwc = std::string(layout) == "auto";
    for (const auto& n : g->nodes())
      if (n->op_type == "GraftConv") EXPECT_EQ(*n->attrs.get_string("layout", "NCHW"), nhwc ? "NHWC" : "NCHW");

    // Reported in the list's order, each at most once; the layout pass only when it ran.
    std::vector<std::string> order;
    for (const DevicePass& p : cuda_device_passes()) order.push_back(p.name);
    size_t at = 0;
    for (const std::string& st : stages) {
      while (at < order.size() && order[at] != st) ++at;
      ASSERT_LT(at, order.size()) << "stage '" << st << "' out of the list's order";
      ++at;
    }
    const std::set<std::string> seen(stages.begin(), stages.end());
    for (const char* st : {"fuse conv", "fuse gemm", "fp16", "fuse elementwise", "compose views"})
      EXPECT_TRUE(seen.count(st)) << st;
    EXPECT_EQ(seen.count("layout"), nhwc ? 1u : 0u);

    const auto got = run_graph(*g, in);
    ASSERT_EQ(got.count("y"), 1u);
    expect_close(got.at("y"), want.at("y"), 2e-2, 2e-2);  // float16 convolutions and GEMM
  }
}

// A device that runs nothing in float16 keeps the model in float32, and a bad layout is refused
// before any pass runs.
TEST(DevicePasses, TheDeviceAnswersDecideAndBadLayoutsAreRefused) {
  std::mt19937 rng(7);
  OnnxModelBuilder m = conv_gemm_model(rng);
  auto g = load(m);
  ASSERT_TRUE(g);
  BuilderConfig config;
  config.fp16 = true;
  DeviceQueries q = runs_everything();
  q.runs = [](const Node& n) {
    for (const Value* v : n.outputs)
      if (v && v->desc.dtype == DataType::kFloat16) return false;
    return true;
  };
  ASSERT_TRUE(run_device_pass_list(*g, cuda_device_passes(), config, q).is_ok());
  for (const auto& n : g->nodes())
    for (const Value* v : n->outputs) EXPECT_NE(v->desc.dtype, DataType::kFloat16) << n->name;

  auto g2 = load(m);
  config.layout = "NHWC8";
  Status s = run_device_pass_list(*g2, cuda_device_passes(), config, runs_everything());
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.to_string().find("layout must be auto, nchw or nhwc, got 'NHWC8'"), std::string::npos) << s.to_string();
  EXPECT_EQ(count_op(*g2, "GraftConv"), 0) << "nothing ran";
}

// GRAFT_DISABLE_PASSES leaves the named passes out (reported as skipped), and a name that is no pass
// of the list is refused, naming it, before any pass runs.
TEST(DevicePasses, DisabledPassesAreLeftOutAndUnknownNamesRefused) {
  struct EnvGuard {
    ~EnvGuard() { unsetenv("GRAFT_DISABLE_PASSES"); }
  } guard;
  std::mt19937 rng(11);
  OnnxModelBuilder m = conv_gemm_model(rng);
  BuilderConfig config;
  std::map<std::string, std::string> reported;
  config.progress = [&](const std::string& stage, const std::string& detail) { reported[stage] = detail; };

  setenv("GRAFT_DISABLE_PASSES", "fuse conv,fuse gemm", 1);
  auto g = load(m);
  ASSERT_TRUE(g);
  Status s = run_device_pass_list(*g, cuda_device_passes(), config, runs_everything());
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(count_op(*g, "GraftConv"), 0);
  EXPECT_EQ(count_op(*g, "Conv"), 2) << "the convolutions stay ONNX Convs";
  EXPECT_EQ(count_op(*g, "GraftGemm"), 0);
  EXPECT_EQ(reported["fuse conv"], "skipped (GRAFT_DISABLE_PASSES)");
  EXPECT_EQ(reported["fuse gemm"], "skipped (GRAFT_DISABLE_PASSES)");

  setenv("GRAFT_DISABLE_PASSES", "fuse conv,no such pass", 1);
  auto g2 = load(m);
  ASSERT_TRUE(g2);
  s = run_device_pass_list(*g2, cuda_device_passes(), config, runs_everything());
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.to_string().find("'no such pass'"), std::string::npos) << s.to_string();
  EXPECT_NE(s.to_string().find("defer activations"), std::string::npos) << "the error lists the passes: " << s.to_string();
  EXPECT_EQ(count_op(*g2, "Conv"), 2) << "nothing ran";
}

}  // namespace
}  // namespace graft::testing
