// Custom nodes end to end: ONNX model -> importer -> engine -> run, for graft's CustomLayer
// (y = x * sigmoid(beta * x)) in attribute form and in the seed's JSON-in-Constant form, the
// attribute errors a user can make (each naming node and attribute), and a plan whose custom op is
// not registered in the loading process.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include "graft/engine.h"
#include "graft/registry.h"
#include "test_util.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/op_test_util.h"

namespace {

using graft::DataType;
using graft::Tensor;
using graft::testing::OnnxModelBuilder;
using graft_test::expect_contains;

double swish_ref(double x, double beta) { return x / (1.0 + std::exp(-beta * x)); }

class CustomNodeEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = graft_test::fresh_seed();
    rng_.seed(seed_);
  }
  // Builds and runs the model on x ([2, 3, 5], float32) and returns output "y" or the error.
  graft::Result<Tensor> build_and_run(const OnnxModelBuilder& m, const Tensor& x, const std::string& name) {
    auto engine = graft::Engine::build_from_onnx_bytes(m.bytes(), graft::BuilderConfig{}, name);
    if (!engine.is_ok()) return std::move(engine).take_status();
    auto ctx = (*engine)->create_context();
    if (!ctx.is_ok()) return std::move(ctx).take_status();
    std::map<std::string, Tensor> outs;
    outs["y"] = Tensor::empty(DataType::kFloat32, x.dims());
    outs["y"].poison();
    GRAFT_RETURN_IF_ERROR((*ctx)->run({{"x", x}}, outs));
    return outs.at("y");
  }
  void expect_swish(const Tensor& x, const Tensor& y, double beta) {
    ASSERT_EQ(y.dims(), x.dims());
    for (int64_t i = 0; i < x.numel(); ++i) {
      double want = swish_ref(x.get(i), beta);
      ASSERT_NEAR(y.get(i), want, 1e-6 + 1e-6 * std::fabs(want)) << "element " << i << " x=" << x.get(i);
    }
  }
  static OnnxModelBuilder swish_model() {
    OnnxModelBuilder m;
    m.opset("ai.onnx.contrib", 1);
    m.input("x", DataType::kFloat32, {2, 3, 5});
    m.output("y", DataType::kFloat32, {2, 3, 5});
    return m;
  }
  // A one-GroupNorm model with num_groups given by `set_attr` (or absent).
  template <typename F>
  static OnnxModelBuilder group_norm_model(F set_attr) {
    OnnxModelBuilder m;
    m.opset("ai.onnx.contrib", 1);
    m.input("x", DataType::kFloat32, {2, 4, 3});
    m.initializer("scale", Tensor::from_doubles(DataType::kFloat32, {4}, {1, 1, 1, 1}));
    m.initializer("bias", Tensor::from_doubles(DataType::kFloat32, {4}, {0, 0, 0, 0}));
    auto& n = m.node("GroupNorm", {"x", "scale", "bias"}, {"y"}, "gn0", "ai.onnx.contrib");
    set_attr(n);
    m.output("y", DataType::kFloat32, {2, 4, 3});
    return m;
  }
  graft::Status build_error(const OnnxModelBuilder& m, const std::string& name) {
    auto engine = graft::Engine::build_from_onnx_bytes(m.bytes(), graft::BuilderConfig{}, name);
    if (engine.is_ok()) return graft::error(graft::StatusCode::kInternal, "expected the build of ", name, " to fail");
    return engine.status();
  }

  uint32_t seed_ = 0;
  std::mt19937 rng_;
};

#define TRACE_SEED() SCOPED_TRACE("random seed " + std::to_string(seed_))

TEST_F(CustomNodeEngine, CustomLayerAttributeForm) {
  TRACE_SEED();
  const float beta = std::uniform_real_distribution<float>(0.2f, 2.0f)(rng_);
  OnnxModelBuilder m = swish_model();
  auto& n = m.node("CustomLayer", {"x"}, {"y"}, "custom0", "ai.onnx.contrib");
  OnnxModelBuilder::attr(n, "beta", beta);
  Tensor x = graft::testing::random_tensor(DataType::kFloat32, {2, 3, 5}, rng_, -5.0, 5.0);
  auto y = build_and_run(m, x, "custom_attr.onnx");
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  expect_swish(x, *y, beta);
}

TEST_F(CustomNodeEngine, CustomLayerSeedJsonConstantForm) {
  TRACE_SEED();
  for (DataType code_type : {DataType::kInt64, DataType::kInt32}) {
    SCOPED_TRACE(graft::dtype_name(code_type));
    OnnxModelBuilder m = swish_model();
    const std::string json = "{\"param\": 0.5}";
    std::vector<double> codes(json.begin(), json.end());
    m.constant("params", Tensor::from_doubles(code_type, {static_cast<int64_t>(codes.size())}, codes));
    m.node("CustomLayer", {"x", "params"}, {"y"}, "custom_json", "ai.onnx.contrib");
    Tensor x = graft::testing::random_tensor(DataType::kFloat32, {2, 3, 5}, rng_, -5.0, 5.0);
    auto y = build_and_run(m, x, "custom_json.onnx");
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    expect_swish(x, *y, 0.5);
  }
}

TEST_F(CustomNodeEngine, TwoCustomNodesInOneGraph) {
  TRACE_SEED();
  // y = CustomLayer_b2(CustomLayer_b1(x)): attribute form feeding the JSON form.
  OnnxModelBuilder m = swish_model();
  auto& a = m.node("CustomLayer", {"x"}, {"h"}, "first", "ai.onnx.contrib");
  OnnxModelBuilder::attr(a, "beta", 1.25f);
  const std::string json = "{\"param\": 0.5}";
  m.constant("params", Tensor::from_doubles(DataType::kInt64, {static_cast<int64_t>(json.size())},
                                            std::vector<double>(json.begin(), json.end())));
  m.node("CustomLayer", {"h", "params"}, {"y"}, "second", "ai.onnx.contrib");
  Tensor x = graft::testing::random_tensor(DataType::kFloat32, {2, 3, 5}, rng_, -4.0, 4.0);
  auto y = build_and_run(m, x, "two.onnx");
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  for (int64_t i = 0; i < x.numel(); ++i) {
    double h = static_cast<float>(swish_ref(x.get(i), 1.25));
    double want = swish_ref(h, 0.5);
    ASSERT_NEAR(y->get(i), want, 1e-5 * (1 + std::fabs(want))) << "x=" << x.get(i);
  }
}

TEST_F(CustomNodeEngine, WrongAttributeTypeNamesNodeAndAttribute) {
  OnnxModelBuilder m = swish_model();
  auto& n = m.node("CustomLayer", {"x"}, {"y"}, "custom_bad_type", "ai.onnx.contrib");
  OnnxModelBuilder::attr(n, "beta", "half");
  expect_contains(build_error(m, "bad_type.onnx").to_string(), {"custom_bad_type", "beta", "expected type float", "string"});
}

TEST_F(CustomNodeEngine, OutOfRangeValueNamesNodeAndAttribute) {
  OnnxModelBuilder m = swish_model();
  auto& n = m.node("CustomLayer", {"x"}, {"y"}, "custom_range", "ai.onnx.contrib");
  OnnxModelBuilder::attr(n, "beta", 5e4f);
  expect_contains(build_error(m, "range.onnx").to_string(), {"custom_range", "beta", "above the maximum"});
}

TEST_F(CustomNodeEngine, UnknownAttributeNamesNodeAndAttribute) {
  OnnxModelBuilder m = swish_model();
  auto& n = m.node("CustomLayer", {"x"}, {"y"}, "custom_unknown", "ai.onnx.contrib");
  OnnxModelBuilder::attr(n, "gamma", 1.0f);
  expect_contains(build_error(m, "unknown.onnx").to_string(), {"custom_unknown", "gamma", "unknown attribute", "beta"});
}

TEST_F(CustomNodeEngine, UnknownJsonKeyNamesNode) {
  OnnxModelBuilder m = swish_model();
  const std::string json = "{\"gamma\": 0.5}";
  m.constant("params", Tensor::from_doubles(DataType::kInt64, {static_cast<int64_t>(json.size())},
                                            std::vector<double>(json.begin(), json.end())));
  m.node("CustomLayer", {"x", "params"}, {"y"}, "custom_json_bad", "ai.onnx.contrib");
  expect_contains(build_error(m, "json_bad.onnx").to_string(), {"custom_json_bad", "gamma"});
}

TEST_F(CustomNodeEngine, MissingRequiredAttributeNamesNodeAndAttribute) {
  auto m = group_norm_model([](onnx::NodeProto&) {});
  expect_contains(build_error(m, "missing.onnx").to_string(), {"gn0", "num_groups", "required"});
}

TEST_F(CustomNodeEngine, Int64ThatDoesNotFitAnIntAttribute) {
  // num_groups is an int attribute whose range is that of int32 (TensorRT narrows INT to kINT32).
  auto m = group_norm_model([](onnx::NodeProto& n) { OnnxModelBuilder::attr(n, "num_groups", int64_t{1} << 40); });
  expect_contains(build_error(m, "too_big.onnx").to_string(), {"gn0", "num_groups", "1099511627776", "maximum"});
  auto ok = group_norm_model([](onnx::NodeProto& n) { OnnxModelBuilder::attr(n, "num_groups", int64_t{2}); });
  auto engine = graft::Engine::build_from_onnx_bytes(ok.bytes(), graft::BuilderConfig{}, "ok.onnx");
  EXPECT_TRUE(engine.is_ok()) << engine.status().to_string();
}

// Runs a command, returns (exit status, stdout+stderr).
std::pair<int, std::string> run_command(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int rc = ::pclose(p);
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, out};
}

// The adapters' GRAFT_PLUGIN_LIBRARIES form: empty entries skipped, a missing library reported by
// path without stopping the others.
TEST_F(CustomNodeEngine, PluginLibraryListLoadsEveryEntry) {
  const std::string missing = (std::filesystem::path(::testing::TempDir()) / "no_such_plugin.so").string();
  auto failed = graft::load_plugin_libraries(":" + missing + "::" + GRAFT_TEST_PLUGIN_CLAMPED_SWISH + ":");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_NE(failed[0].to_string().find(missing), std::string::npos) << failed[0].to_string();
  bool found = false;
  for (const auto& r : graft::OpRegistry::global().all()) found |= r.def->identity().name == "ClampedSwish";
  EXPECT_TRUE(found) << "the library after the missing one was loaded";
}

TEST_F(CustomNodeEngine, PlanWithUnregisteredPluginOpSaysToLoadThePlugin) {
  // Save a plan that uses the example plugin's op, then load it in fresh processes.
  ASSERT_TRUE(graft::load_plugin_library(GRAFT_TEST_PLUGIN_CLAMPED_SWISH).is_ok());
  OnnxModelBuilder m;
  m.opset("ai.example", 1);
  m.input("x", DataType::kFloat32, {2, 4});
  auto& n = m.node("ClampedSwish", {"x"}, {"y"}, "swish_node", "ai.example");
  OnnxModelBuilder::attr(n, "beta", 1.5f);
  m.output("y", DataType::kFloat32, {2, 4});
  auto engine = graft::Engine::build_from_onnx_bytes(m.bytes(), graft::BuilderConfig{}, "swish.onnx");
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  const std::string plan = (std::filesystem::path(::testing::TempDir()) /
                            ("plugin_plan_" + std::to_string(seed_) + ".plan")).string();
  ASSERT_TRUE((*engine)->save_plan(plan).is_ok());

  auto [rc, out] = run_command(std::string("'") + GRAFT_TEST_PLAN_LOADER + "' '" + plan + "'");
  EXPECT_NE(rc, 0) << out;
  expect_contains(out, {"ClampedSwish", "ai.example", "swish_node", "not registered", "plugin"});

  auto [rc2, out2] = run_command(std::string("'") + GRAFT_TEST_PLAN_LOADER + "' '" + plan + "' '" +
                                 GRAFT_TEST_PLUGIN_CLAMPED_SWISH + "'");
  EXPECT_EQ(rc2, 0) << out2;

  // The `graft` command without --plugins says the same.
  auto [rc3, out3] = run_command(std::string("'") + GRAFT_CLI + "' run '" + plan + "' --iterations 1 --warmup 0");
  EXPECT_NE(rc3, 0) << out3;
  expect_contains(out3, {"ClampedSwish", "swish_node", "--plugins"});
  std::filesystem::remove(plan);
}

}  // namespace
