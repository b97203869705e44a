// The example plugin (examples/plugin_example, ai.example::ClampedSwish) loaded from a library file.
//
// Run twice by CTest: against the library built in-tree, and against the one built out of tree
// from the installed SDK (sdk_install_test.cmake). GRAFT_EXAMPLE_PLUGIN names the library.
// Every expected value comes from the straightforward formula below, never from the plugin.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "graft/engine.h"
#include "graft/plugin.h"
#include "graft/registry.h"
#include "io/tensor_io.h"
#include "test_util.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/op_test_util.h"

namespace {

using graft::AttributeMap;
using graft::Backend;
using graft::DataType;
using graft::KernelContext;
using graft::OpDef;
using graft::StatusCode;
using graft::Tensor;
using graft_test::expect_error;

double swish(double x, double beta) { return x / (1.0 + std::exp(-beta * x)); }
double clamped_swish_ref(double x, double beta, double limit) { return std::min(swish(x, beta), limit); }

std::string plugin_path() {
  const char* p = std::getenv("GRAFT_EXAMPLE_PLUGIN");
  return p ? p : "";
}

class ExamplePlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = plugin_path();
    ASSERT_FALSE(path_.empty()) << "set GRAFT_EXAMPLE_PLUGIN to the plugin library";
    graft::Status st = graft::load_plugin_library(path_);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    auto found = graft::OpRegistry::global().find("ai.example", "ClampedSwish", "1", "");
    ASSERT_TRUE(found.is_ok()) << found.status().to_string();
    def_ = *found;
    seed_ = graft_test::fresh_seed();
    rng_.seed(seed_);
  }

  AttributeMap attrs(double beta, double limit) {
    AttributeMap a;
    a.set("beta", static_cast<float>(beta));
    a.set("limit", static_cast<float>(limit));
    graft::Status st = def_->validate_attributes(a);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    return a;
  }
  // Attributes are float32: draw values that are exactly representable so the reference uses the same.
  double uniform(double lo, double hi) {
    return static_cast<float>(std::uniform_real_distribution<double>(lo, hi)(rng_));
  }

  std::string path_;
  std::shared_ptr<const OpDef> def_;
  uint32_t seed_ = 0;
  std::mt19937 rng_;
};

#define TRACE_SEED() SCOPED_TRACE("random seed " + std::to_string(seed_))

TEST_F(ExamplePlugin, RegisteredUnderItsIdentityFromTheLibrary) {
  EXPECT_EQ(def_->identity().domain, "ai.example");
  EXPECT_EQ(def_->identity().version, "1");
  EXPECT_TRUE(def_->has_backward(Backend::kCPU));
  bool seen = false;
  for (const auto& r : graft::OpRegistry::global().all())
    if (r.def == def_) {
      seen = true;
      EXPECT_EQ(r.source, path_);
    }
  EXPECT_TRUE(seen);
}

TEST_F(ExamplePlugin, ForwardMatchesFormulaForEachDtype) {
  TRACE_SEED();
  struct Case {
    DataType dtype;
    double rtol, atol;
  };
  for (Case c : {Case{DataType::kFloat32, 1e-6, 1e-6}, Case{DataType::kFloat64, 1e-13, 1e-13},
                 Case{DataType::kFloat16, 2e-3, 2e-3}}) {
    SCOPED_TRACE(graft::dtype_name(c.dtype));
    const double beta = uniform(0.2, 3.0), limit = uniform(0.5, 4.0);
    AttributeMap a = attrs(beta, limit);
    Tensor x = graft::testing::random_tensor(c.dtype, {3, 5, 7}, rng_, -6.0, 6.0);
    Tensor y = Tensor::empty(c.dtype, {3, 5, 7});
    y.poison();
    KernelContext ctx;
    ctx.attrs = &a;
    ctx.inputs = {x.view()};
    ctx.outputs = {y.view()};
    graft::Status st = def_->run(Backend::kCPU, ctx);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    int clamped = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      double want = clamped_swish_ref(x.get(i), beta, limit);
      clamped += want == limit;
      ASSERT_NEAR(y.get(i), want, c.atol + c.rtol * std::fabs(want)) << "element " << i << " x=" << x.get(i)
                                                                      << " beta=" << beta << " limit=" << limit;
    }
    EXPECT_GT(clamped, 0) << "the data should exercise the clamp";
  }
}

TEST_F(ExamplePlugin, DefaultsAreSiluClampedAtSix) {
  TRACE_SEED();
  AttributeMap a;
  ASSERT_TRUE(def_->validate_attributes(a).is_ok());
  EXPECT_FLOAT_EQ(*a.get_float("beta", -1.0f), 1.0f);
  EXPECT_FLOAT_EQ(*a.get_float("limit", -1.0f), 6.0f);
  Tensor x = graft::testing::random_tensor(DataType::kFloat32, {64}, rng_, -10.0, 10.0);
  Tensor y = Tensor::empty(DataType::kFloat32, {64});
  y.poison();
  KernelContext ctx;
  ctx.attrs = &a;
  ctx.inputs = {x.view()};
  ctx.outputs = {y.view()};
  ASSERT_TRUE(def_->run(Backend::kCPU, ctx).is_ok());
  for (int64_t i = 0; i < x.numel(); ++i)
    ASSERT_NEAR(y.get(i), clamped_swish_ref(x.get(i), 1.0, 6.0), 1e-5) << "x=" << x.get(i);
}

TEST_F(ExamplePlugin, BackwardMatchesFiniteDifferences) {
  TRACE_SEED();
  const double beta = uniform(0.3, 2.5), limit = uniform(1.0, 4.0);
  AttributeMap a = attrs(beta, limit);
  Tensor x = graft::testing::random_tensor(DataType::kFloat64, {4, 33}, rng_, -7.0, 7.0);
  Tensor dy = graft::testing::random_tensor(DataType::kFloat64, {4, 33}, rng_, -2.0, 2.0);
  Tensor dx = Tensor::empty(DataType::kFloat64, {4, 33});
  dx.poison();
  KernelContext ctx;
  ctx.attrs = &a;
  ctx.inputs = {x.view(), dy.view()};
  ctx.outputs = {dx.view()};
  graft::Status st = def_->run_backward(Backend::kCPU, ctx);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  const double h = 1e-6;
  int checked = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = x.get(i);
    if (std::fabs(swish(v, beta) - limit) < 1e-3) continue;  // the kink: no derivative there
    double fd = (clamped_swish_ref(v + h, beta, limit) - clamped_swish_ref(v - h, beta, limit)) / (2 * h);
    ASSERT_NEAR(dx.get(i), fd * dy.get(i), 1e-6 * (1 + std::fabs(fd * dy.get(i)))) << "x=" << v;
    ++checked;
  }
  EXPECT_GT(checked, x.numel() / 2);
}

TEST_F(ExamplePlugin, ShapeFunctionIsElementwise) {
  AttributeMap a = attrs(1.0, 6.0);
  auto shapes = graft::infer_concrete_shapes(*def_, {std::vector<int64_t>{2, 9, 5}}, a);
  ASSERT_TRUE(shapes.is_ok()) << shapes.status().to_string();
  ASSERT_EQ(shapes->size(), 1u);
  EXPECT_EQ((*shapes)[0], (std::vector<int64_t>{2, 9, 5}));
}

TEST_F(ExamplePlugin, AttributeErrorsNameTheAttribute) {
  {
    AttributeMap a;
    a.set("beta", -0.5f);
    graft::Status st = def_->validate_attributes(a);
    expect_error(st, StatusCode::kInvalidArgument, {"beta", "below the minimum"});
    EXPECT_EQ(st.attribute(), "beta");
  }
  {
    AttributeMap a;
    a.set("limit", std::string("six"));
    expect_error(def_->validate_attributes(a), StatusCode::kInvalidArgument, {"limit", "expected type float", "string"});
  }
  {
    AttributeMap a;
    a.set("alpha", 1.0f);
    expect_error(def_->validate_attributes(a), StatusCode::kInvalidArgument, {"alpha", "unknown attribute", "beta", "limit"});
  }
}

TEST_F(ExamplePlugin, UnsupportedDtypeIsAnErrorNotACrash) {
  AttributeMap a = attrs(1.0, 6.0);
  Tensor x = Tensor::from_doubles(DataType::kInt32, {3}, {1, 2, 3});
  Tensor y = Tensor::empty(DataType::kInt32, {3});
  KernelContext ctx;
  ctx.attrs = &a;
  ctx.inputs = {x.view()};
  ctx.outputs = {y.view()};
  expect_error(def_->run(Backend::kCPU, ctx), StatusCode::kUnsupported, {"ClampedSwish", "int32"});
}

// y = ClampedSwish(x) + b through the ONNX importer and graft's engine, the plugin named in the
// BuilderConfig as `graft build --plugins` does.
graft::testing::OnnxModelBuilder swish_add_model(const Tensor& b, float beta, float limit) {
  graft::testing::OnnxModelBuilder m;
  m.opset("ai.example", 1);
  m.input("x", DataType::kFloat32, {"batch", 8});
  m.initializer("b", b);
  auto& n = m.node("ClampedSwish", {"x"}, {"s"}, "swish0", "ai.example");
  graft::testing::OnnxModelBuilder::attr(n, "beta", beta);
  graft::testing::OnnxModelBuilder::attr(n, "limit", limit);
  m.node("Add", {"s", "b"}, {"y"}, "add0");
  m.output("y", DataType::kFloat32, {"batch", 8});
  return m;
}

TEST_F(ExamplePlugin, RunsInsideAnOnnxModelThroughTheEngine) {
  TRACE_SEED();
  const float beta = static_cast<float>(uniform(0.5, 2.0)), limit = static_cast<float>(uniform(1.0, 3.0));
  Tensor b = graft::testing::random_tensor(DataType::kFloat32, {8}, rng_);
  graft::BuilderConfig cfg;
  cfg.plugin_libraries = {path_};
  cfg.profile["x"] = graft::ProfileRange{{1, 8}, {2, 8}, {4, 8}};
  auto engine = graft::Engine::build_from_onnx_bytes(swish_add_model(b, beta, limit).bytes(), cfg, "swish_add.onnx");
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();

  // The plan round trip keeps the custom node (the plugin is loaded in this process).
  auto plan = (*engine)->serialize();
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  auto reloaded = graft::Engine::deserialize(*plan, "swish_add.plan");
  ASSERT_TRUE(reloaded.is_ok()) << reloaded.status().to_string();

  for (auto* e : {&*engine, &*reloaded}) {
    auto ctx = (*e)->create_context();
    ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
    Tensor x = graft::testing::random_tensor(DataType::kFloat32, {3, 8}, rng_, -6.0, 6.0);
    std::map<std::string, Tensor> outs;
    graft::Status st = (*ctx)->run({{"x", x}}, outs);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    const Tensor& y = outs.at("y");
    ASSERT_EQ(y.dims(), (std::vector<int64_t>{3, 8}));
    for (int64_t i = 0; i < x.numel(); ++i) {
      double want = clamped_swish_ref(x.get(i), beta, limit) + b.get(i % 8);
      ASSERT_NEAR(y.get(i), want, 1e-5 * (1 + std::fabs(want))) << "element " << i;
    }
  }
}

TEST_F(ExamplePlugin, OutOfRangeAttributeInModelNamesNodeAndAttribute) {
  TRACE_SEED();
  Tensor b = graft::testing::random_tensor(DataType::kFloat32, {8}, rng_);
  graft::BuilderConfig cfg;
  cfg.profile["x"] = graft::ProfileRange{{1, 8}, {2, 8}, {4, 8}};
  auto engine = graft::Engine::build_from_onnx_bytes(swish_add_model(b, 500.0f, 2.0f).bytes(), cfg, "bad_beta.onnx");
  ASSERT_FALSE(engine.is_ok());
  graft_test::expect_contains(engine.status().to_string(), {"swish0", "beta", "maximum"});
}

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

// The `graft` command: the installed one when testing the installed SDK, else the build tree's.
std::string graft_cli() {
  const char* prefix = std::getenv("GRAFT_EXAMPLE_PREFIX");
  if (prefix) return std::string(prefix) + "/bin/graft";
  return GRAFT_CLI;
}

TEST_F(ExamplePlugin, RunsThroughTheGraftCliWithPlugins) {
  TRACE_SEED();
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / ("graft_cli_plugin_" + std::to_string(seed_));
  fs::remove_all(dir);
  fs::create_directories(dir / "out");
  const float beta = static_cast<float>(uniform(0.5, 2.0)), limit = static_cast<float>(uniform(1.0, 3.0));
  Tensor b = graft::testing::random_tensor(DataType::kFloat32, {8}, rng_);
  swish_add_model(b, beta, limit).save((dir / "model.onnx").string());
  Tensor x = graft::testing::random_tensor(DataType::kFloat32, {3, 8}, rng_, -6.0, 6.0);
  ASSERT_TRUE(graft::io::write_npy((dir / "x.npy").string(), x).is_ok());

  const std::string base = "'" + graft_cli() + "' run '" + (dir / "model.onnx").string() + "'";
  auto [rc, out] = run_command(base + " --plugins '" + path_ + "' --inputs x:'" + (dir / "x.npy").string() +
                               "' --save-outputs '" + (dir / "out").string() + "' --shapes x:3x8 --iterations 1 --warmup 0");
  ASSERT_EQ(rc, 0) << out;
  auto y = graft::io::read_npy((dir / "out" / "y.npy").string());
  ASSERT_TRUE(y.is_ok()) << y.status().to_string() << "\n" << out;
  ASSERT_EQ(y->dims(), (std::vector<int64_t>{3, 8}));
  for (int64_t i = 0; i < x.numel(); ++i) {
    double want = clamped_swish_ref(x.get(i), beta, limit) + b.get(i % 8);
    ASSERT_NEAR(y->get(i), want, 1e-5 * (1 + std::fabs(want))) << "element " << i;
  }

  // Without --plugins the CLI names the node and the op and says how to load it.
  auto [rc2, out2] = run_command(base + " --shapes x:3x8");
  EXPECT_NE(rc2, 0) << out2;
  graft_test::expect_contains(out2, {"swish0", "ClampedSwish", "ai.example", "--plugins"});
  fs::remove_all(dir);
}

}  // namespace
