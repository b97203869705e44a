// The `graft` command line, run as a user would: build a plan, run it, inspect, list ops, and every
// error path ends with exit code 1 and one "graft: error: ..." line (never a crash or a trace).
#include <gtest/gtest.h>

#include <algorithm>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include "io/tensor_io.h"

namespace graft {
namespace {

namespace fs = std::filesystem;

const std::string kGraft = std::string(GRAFT_BINARY_DIR) + "/bin/graft";

struct CmdResult {
  int exit_code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(l);
  return out;
}

// Relu over x: float32[N,3] -> "y:0" (a name that needs sanitizing as a file name).
std::string relu_model_bytes() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("relu");
  auto* n = g->add_node();
  n->set_op_type("Relu");
  n->set_name("relu0");
  n->add_input("x");
  n->add_output("y:0");
  for (auto [vi, name] : {std::pair{g->add_input(), "x"}, std::pair{g->add_output(), "y:0"}}) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_param("N");
    tt->mutable_shape()->add_dim()->set_dim_value(3);
  }
  return m.SerializeAsString();
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kGraft)) << "the graft binary is not built: " << kGraft;
    seed_ = std::random_device{}();
    dir_ = fs::temp_directory_path() / ("graft_cli_test_" + std::to_string(::getpid()) + "_" + std::to_string(seed_));
    fs::create_directories(dir_);
    ASSERT_TRUE(io::write_file_atomic(path("relu.onnx"), relu_model_bytes()).is_ok());
    std::mt19937 rng(seed_);
    std::normal_distribution<float> normal;
    x_ = Tensor::empty(DataType::kFloat32, {2, 3});
    for (int64_t i = 0; i < x_.numel(); ++i) x_.data_as<float>()[i] = normal(rng);
    ASSERT_TRUE(io::write_npy(path("x.npy"), x_).is_ok());
    ASSERT_TRUE(io::write_tensor_pb(path("x.pb"), x_, "x").is_ok());
  }
  void TearDown() override {
    std::error_code ec;
    if (!HasFailure()) fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  CmdResult graft(const std::string& args) {
    std::string cmd = "cd '" + dir_.string() + "' && '" + kGraft + "' " + args + " >stdout.txt 2>stderr.txt";
    int rc = std::system(cmd.c_str());
    CmdResult r;
    r.exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
    r.out = slurp(dir_ / "stdout.txt");
    r.err = slurp(dir_ / "stderr.txt");
    return r;
  }

  // Exit code 1 and exactly one error line, which is the last line on stderr (progress lines from a
  // build may precede it).
  void expect_one_line_error(const std::string& args, const std::string& words) {
    SCOPED_TRACE("graft " + args);
    CmdResult r = graft(args);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    auto lines = lines_of(r.err);
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(lines.back().rfind("graft: error: ", 0), 0u) << r.err;
    int error_lines = 0;
    for (const auto& l : lines) error_lines += l.find("error") != std::string::npos;
    EXPECT_EQ(error_lines, 1) << r.err;
    EXPECT_NE(lines.back().find(words), std::string::npos) << r.err;
  }

  void build_plan() {
    CmdResult b = graft("build relu.onnx -o relu.plan --min-shapes x:1x3 --opt-shapes x:2x3 --max-shapes x:4x3");
    ASSERT_EQ(b.exit_code, 0) << b.err;
    EXPECT_NE(b.err.find("import"), std::string::npos) << "no progress lines: " << b.err;
    ASSERT_EQ(slurp(dir_ / "relu.plan").substr(0, 8), "GRAFTPLN");
  }

  void expect_relu_of_x(const std::string& npy_path) {
    auto y = io::read_npy(npy_path);
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    ASSERT_EQ(y->dims(), x_.dims());
    for (int64_t i = 0; i < x_.numel(); ++i)
      EXPECT_EQ(y->data_as<float>()[i], std::max(0.0f, x_.data_as<float>()[i])) << "index " << i << " seed " << seed_;
  }

  unsigned seed_ = 0;
  fs::path dir_;
  Tensor x_;
};

TEST_F(CliTest, BuildThenRunPlan) {
  build_plan();
  CmdResult r = graft("run relu.plan --inputs x:x.npy --save-outputs out --iterations 4 --warmup 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* key : {"Throughput", "qps", "min =", "mean =", "median =", "percentile(90%)", "percentile(99%)",
                          "Total Host Walltime", "Iterations: 4"})
    EXPECT_NE(r.out.find(key), std::string::npos) << key << " missing from:\n" << r.out;
  expect_relu_of_x(path("out/y_0.npy"));
}

TEST_F(CliTest, RunOnnxWithPbInputAndCompare) {
  CmdResult r = graft("run relu.onnx --inputs x:x.pb --shapes x:2x3 --save-outputs ref --iterations 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_relu_of_x(path("ref/y_0.npy"));
  // Comparing the same run against its own saved outputs must pass...
  CmdResult c = graft("run relu.onnx --inputs x:x.pb --shapes x:2x3 --compare ref --iterations 1");
  EXPECT_EQ(c.exit_code, 0) << c.err;
  // ...and a perturbed reference must fail with one line.
  Tensor y = io::read_npy(path("ref/y_0.npy")).value();
  y.data_as<float>()[0] += 1.0f;
  ASSERT_TRUE(io::write_npy(path("ref/y_0.npy"), y).is_ok());
  expect_one_line_error("run relu.onnx --inputs x:x.pb --shapes x:2x3 --compare ref --iterations 1", "differ");
}

TEST_F(CliTest, RandomInputsReportTheSeed) {
  build_plan();
  CmdResult r = graft("run relu.plan --shapes x:3x3 --iterations 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("seed"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("float32[3,3]"), std::string::npos) << r.out;
}

TEST_F(CliTest, PlanDetectedByContentNotExtension) {
  build_plan();
  fs::copy_file(path("relu.plan"), path("engine.bin"));
  CmdResult r = graft("run engine.bin --inputs x:x.npy --iterations 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(CliTest, InspectJsonParses) {
  build_plan();
  for (const char* args : {"inspect relu.plan --json", "inspect relu.onnx --shapes x:2x3 --json"}) {
    SCOPED_TRACE(args);
    CmdResult r = graft(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.out;
    EXPECT_NE(r.out.find("\"x\""), std::string::npos);
    EXPECT_NE(r.out.find("Relu"), std::string::npos);
  }
  CmdResult text = graft("inspect relu.plan");
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Relu"), std::string::npos) << text.out;
}

TEST_F(CliTest, OpsJsonListsRelu) {
  CmdResult r = graft("ops --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  bool relu = false;
  for (const auto& op : j["builtin"])
    if (op["op_type"] == "Relu") {
      relu = true;
      EXPECT_EQ(op["domain"], "ai.onnx");
      EXPECT_GE(op["min_opset"].get<int>(), 1);
    }
  EXPECT_TRUE(relu);
  // Every op says which backends this build has for it: the CPU reference always; CUDA only in a
  // CUDA build (and then for Relu, which has a kernel).
  for (const auto& op : j["builtin"]) {
    ASSERT_TRUE(op["backends"].is_array()) << op.dump();
    EXPECT_EQ(op["backends"][0], "cpu") << op.dump();
#ifndef GRAFT_WITH_CUDA
    EXPECT_EQ(op["backends"].size(), 1u) << op.dump();
#endif
  }
  ASSERT_TRUE(j["custom"].is_array());
  for (const auto& op : j["custom"]) {
    EXPECT_TRUE(op.contains("name") && op.contains("domain") && op.contains("version") && op.contains("source"));
    EXPECT_TRUE(op["attributes"].is_array() && op["inputs"].is_array() && op["outputs"].is_array());
    ASSERT_TRUE(op["backends"].is_array()) << op.dump();
    EXPECT_NE(std::find(op["backends"].begin(), op["backends"].end(), "cpu"), op["backends"].end()) << op.dump();
    EXPECT_TRUE(op["kernel_dtypes"].contains("cpu")) << op.dump();
  }
  EXPECT_TRUE(j["aliases"].is_array());
  CmdResult text = graft("ops");
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("Relu"), std::string::npos);
}

TEST_F(CliTest, ErrorsAreOneLine) {
  build_plan();
  std::string plan = slurp(dir_ / "relu.plan");
  ASSERT_TRUE(io::write_file_atomic(path("truncated.plan"), plan.substr(0, plan.size() / 2)).is_ok());
  ASSERT_TRUE(io::write_file_atomic(path("garbage.plan"), "GRAFTPLN" + std::string(200, '\x5a')).is_ok());
  expect_one_line_error("run missing.onnx", "missing.onnx");
  expect_one_line_error("inspect missing.plan", "missing.plan");
  expect_one_line_error("run truncated.plan", "truncated.plan");
  expect_one_line_error("run garbage.plan", "garbage.plan");
  expect_one_line_error("build relu.onnx -o bad.plan --shapes x:2xa", "--shapes");
  expect_one_line_error("build relu.onnx -o bad.plan --min-shapes x1x3", "missing ':'");
  expect_one_line_error("run relu.plan --shapes x:2x3x", "--shapes");
  expect_one_line_error("run relu.plan --inputs bogus:x.npy", "bogus");
  expect_one_line_error("run relu.plan --shapes bogus:2x3", "bogus");
  expect_one_line_error("build relu.onnx -o bad.plan --shapes bogus:2x3", "bogus");
  expect_one_line_error("run relu.plan --inputs x:nothere.npy", "nothere.npy");
  expect_one_line_error("run relu.plan --shapes x:9x3", "profile");
  expect_one_line_error("build relu.onnx", "--output");
  expect_one_line_error("no-such-command", "");
  expect_one_line_error("build relu.onnx -o bad.plan --layout sideways", "--layout");
  ASSERT_TRUE(io::write_file_atomic(path("notcache.json"), "[1, 2, 3]").is_ok());
  // A timing cache that is not one is refused with its name, before anything else is built.
  expect_one_line_error("build relu.onnx -o bad.plan --shapes x:2x3 --device cuda --timing-cache notcache.json",
                        "notcache.json");
  EXPECT_EQ(slurp(dir_ / "notcache.json"), "[1, 2, 3]") << "the user's file is left as it was";
  EXPECT_FALSE(fs::exists(path("bad.plan")));
}

// -o never replaces the input model or a non-regular file; a directory is never read as a model or
// an input file (it used to report std::bad_alloc).
TEST_F(CliTest, OutputAndInputPathsAreChecked) {
  const std::string model = slurp(dir_ / "relu.onnx");
  fs::create_directory(dir_ / "adir");
  expect_one_line_error("build relu.onnx -o relu.onnx --shapes x:2x3", "overwrite the model");
  expect_one_line_error("build relu.onnx -o ./adir/../relu.onnx --shapes x:2x3", "overwrite the model");
  EXPECT_EQ(slurp(dir_ / "relu.onnx"), model) << "the model is left as it was";
  expect_one_line_error("build relu.onnx -o adir --shapes x:2x3", "not a regular file");
  EXPECT_TRUE(fs::is_directory(dir_ / "adir"));
  if (fs::is_character_file("/dev/null")) {
    expect_one_line_error("build relu.onnx -o /dev/null --shapes x:2x3", "not a regular file");
    EXPECT_TRUE(fs::is_character_file("/dev/null"));
  }
  expect_one_line_error("build adir -o d.plan", "is a directory");
  expect_one_line_error("run adir", "is a directory");
  build_plan();
  expect_one_line_error("run relu.plan --inputs x:adir", "is a directory");
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

}  // namespace
}  // namespace graft
