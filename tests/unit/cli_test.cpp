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
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include "io/tensor_io.h"
#include "plan/plan.h"
#include "tests/unit/onnx_model_builder.h"

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

// Several optimization profiles: each occurrence of --min/--opt/--max-shapes is one profile (trtexec's
// habit), `run --profile-index N` selects one, and `inspect` shows them all.
TEST_F(CliTest, SeveralOptimizationProfiles) {
  CmdResult b = graft("build relu.onnx -o two.plan --min-shapes x:1x3 --opt-shapes x:2x3 --max-shapes x:4x3 "
                      "--min-shapes x:8x3 --opt-shapes x:12x3 --max-shapes x:16x3");
  ASSERT_EQ(b.exit_code, 0) << b.err;
  std::string plan = slurp(dir_ / "two.plan");
  ASSERT_GT(plan.size(), 12u);
  EXPECT_EQ(static_cast<uint32_t>(static_cast<unsigned char>(plan[8])), kPlanFormatVersionProfiles);  // little-endian, < 256
  CmdResult i = graft("inspect two.plan");
  ASSERT_EQ(i.exit_code, 0) << i.err;
  EXPECT_NE(i.out.find("profile 0: min [1,3] opt [2,3] max [4,3]"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("profile 1: min [8,3] opt [12,3] max [16,3]"), std::string::npos) << i.out;
  CmdResult ij = graft("inspect two.plan --json");
  ASSERT_EQ(ij.exit_code, 0) << ij.err;
  auto j = nlohmann::json::parse(ij.out);
  ASSERT_EQ(j["profiles"].size(), 2u);
  // Random inputs take the selected profile's opt shape.
  CmdResult r = graft("run two.plan --profile-index 1 --iterations 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rj = nlohmann::json::parse(r.out);
  EXPECT_EQ(rj["profile_index"], 1);
  EXPECT_EQ(rj["inputs"][0]["shape"], (std::vector<int64_t>{12, 3}));
  CmdResult r0 = graft("run two.plan --iterations 1 --json");
  ASSERT_EQ(r0.exit_code, 0) << r0.err;
  EXPECT_EQ(nlohmann::json::parse(r0.out)["inputs"][0]["shape"], (std::vector<int64_t>{2, 3}));
  // A shape of profile 1 on profile 0, a profile that does not exist, flags given unevenly.
  expect_one_line_error("run two.plan --shapes x:12x3 --iterations 1", "outside optimization profile 0 [min 1, max 4]");
  expect_one_line_error("run two.plan --profile-index 2 --iterations 1",
                        "--profile-index: optimization profile 2 does not exist: this engine has 2 profiles");
  expect_one_line_error("run relu.onnx --min-shapes x:1x3 --max-shapes x:4x3 --profile-index 1 --iterations 1",
                        "--profile-index 1: the shape flags give 1 optimization profile(s)");
  expect_one_line_error("build relu.onnx -o bad.plan --min-shapes x:1x3 --min-shapes x:8x3 --max-shapes x:16x3",
                        "--max-shapes is given 1 time(s) but another shape flag 2 times");
  expect_one_line_error("build relu.onnx -o bad.plan --max-shapes x:4x3 --max-shapes x:2x3 --min-shapes x:1x3 "
                        "--min-shapes x:3x3",
                        "profile 1 for input 'x' dimension 0 needs 0 <= min <= opt <= max");
  // Building from ONNX with two profiles and running on the second.
  CmdResult o = graft("run relu.onnx --min-shapes x:1x3 --max-shapes x:4x3 --min-shapes x:5x3 --max-shapes x:9x3 "
                      "--profile-index 1 --shapes x:7x3 --iterations 1 --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(nlohmann::json::parse(o.out)["inputs"][0]["shape"], (std::vector<int64_t>{7, 3}));
}

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
      EXPECT_EQ(op["traits"]["layout"], "elementwise_unary") << op.dump();
      EXPECT_EQ(op["traits"]["precision"], "any") << op.dump();
      EXPECT_EQ(op["traits"]["elementwise_opcode"], "relu") << op.dump();
    } else if (op["op_type"] == "Exp") {
      EXPECT_EQ(op["traits"]["precision"], "float32") << op.dump();
      EXPECT_EQ(op["traits"]["elementwise_opcode"], "exp") << op.dump();
    } else if (op["op_type"] == "Conv") {
      EXPECT_EQ(op["traits"]["layout"], "fixed") << op.dump();
      EXPECT_FALSE(op["traits"].contains("elementwise_opcode")) << op.dump();
      EXPECT_FALSE(op["traits"].contains("view")) << op.dump();
    } else if (op["op_type"] == "Reshape" || op["op_type"] == "Squeeze") {  // output aliases input 0
      EXPECT_EQ(op["traits"]["view"], "reshape") << op.dump();
    } else if (op["op_type"] == "Transpose") {  // moves data: never an alias
      EXPECT_FALSE(op["traits"].contains("view")) << op.dump();
    } else if (op["op_type"] == "Clip") {  // its instruction depends on its bounds: mapped by the fusion
      EXPECT_FALSE(op["traits"].contains("elementwise_opcode")) << op.dump();
    }
  EXPECT_TRUE(relu);
  // Every op says which backends this build has for it: the CPU reference always; CUDA only in a
  // CUDA build (and then for Relu, which has a kernel).
  // With CUDA, each op's CUDA kernel keys are listed under kernel_dtypes: the keyed value, its
  // schema name and the dtypes (Relu: input 0, X, float32 and float16 among them).
  bool relu_keys = false;
  for (const auto& op : j["builtin"]) {
    ASSERT_TRUE(op["backends"].is_array()) << op.dump();
    EXPECT_EQ(op["backends"][0], "cpu") << op.dump();
    ASSERT_TRUE(op["kernel_dtypes"].is_object()) << op.dump();
    EXPECT_EQ(op["kernel_dtypes"].contains("cuda"), op["backends"].size() == 2u) << op.dump();
#ifndef GRAFT_WITH_CUDA
    EXPECT_EQ(op["backends"].size(), 1u) << op.dump();
#endif
    if (op["op_type"] == "Relu" && op["kernel_dtypes"].contains("cuda")) {
      const auto& key = op["kernel_dtypes"]["cuda"][0];
      const auto& dtypes = key["dtypes"];
      relu_keys = key["value"] == "input 0" && key["name"] == "X" &&
                  std::find(dtypes.begin(), dtypes.end(), "float16") != dtypes.end() &&
                  std::find(dtypes.begin(), dtypes.end(), "float32") != dtypes.end();
    }
  }
#ifdef GRAFT_WITH_CUDA
  EXPECT_TRUE(relu_keys);
  // No op falls back to the CPU reference inside a CUDA engine for want of a kernel (issue 14), but
  // the host-only ones by design: metadata the engine reads on the host (Constant, Shape, Size),
  // string tensors and ImageDecoder, which a CUDA build refuses naming them.
  const std::set<std::string> host_only = {"Constant",      "Shape",         "Size",        "ImageDecoder",
                                           "RegexFullMatch", "StringConcat", "StringNormalizer", "StringSplit"};
  for (const char* table : {"builtin", "internal", "custom"})
    for (const auto& op : j[table]) {
      const std::string name = op.contains("op_type") ? op["op_type"].get<std::string>() : op["name"].get<std::string>();
      EXPECT_EQ(op["backends"].size() == 2u, !host_only.count(name)) << table << " " << op.dump();
    }
#else
  EXPECT_FALSE(relu_keys);
#endif
  // An ONNX op's attributes, inputs and outputs come from its schema (libonnx's), in the form a
  // custom op's take below; an op newer than that registry's opsets says so.
  bool conv = false, mish = false;
  for (const auto& op : j["builtin"]) {
    if (op["op_type"] == "Conv") {
      conv = true;
      EXPECT_EQ(op["since_version"], 11) << op.dump();
      bool group = false;
      for (const auto& a : op["attributes"])
        group |= a["name"] == "group" && a["type"] == "int" && a["default"] == "1" && a["required"] == false;
      EXPECT_TRUE(group) << op.dump();
      ASSERT_EQ(op["inputs"].size(), 3u) << op.dump();
      EXPECT_EQ(op["inputs"][1]["name"], "W");
      EXPECT_EQ(op["inputs"][2]["optional"], true);
      EXPECT_NE(std::find(op["inputs"][0]["dtypes"].begin(), op["inputs"][0]["dtypes"].end(), "float16"),
                op["inputs"][0]["dtypes"].end())
          << op.dump();
    }
    if (op["op_type"] == "Concat") EXPECT_EQ(op["inputs"][0]["doc"], "variadic, at least 1") << op.dump();
    if (op["op_type"] == "Mish") mish = op.contains("schema") && op["schema"].is_null() && !op.contains("attributes");
  }
  EXPECT_TRUE(conv && mish);
  ASSERT_TRUE(j["custom"].is_array());
  for (const auto& op : j["custom"]) {
    EXPECT_TRUE(op.contains("name") && op.contains("domain") && op.contains("version") && op.contains("source"));
    EXPECT_TRUE(op["attributes"].is_array() && op["inputs"].is_array() && op["outputs"].is_array());
    ASSERT_TRUE(op["backends"].is_array()) << op.dump();
    EXPECT_NE(std::find(op["backends"].begin(), op["backends"].end(), "cpu"), op["backends"].end()) << op.dump();
    EXPECT_TRUE(op["kernel_dtypes"].contains("cpu")) << op.dump();
  }
  EXPECT_TRUE(j["aliases"].is_array());
  // graft's internal ops are listed apart from the ONNX ops, never as ONNX ops.
  bool graft_conv = false;
  for (const auto& op : j["builtin"]) EXPECT_NE(op["op_type"].get<std::string>().rfind("Graft", 0), 0u) << op.dump();
  for (const auto& op : j["internal"]) graft_conv |= op["op_type"] == "GraftConv";
  EXPECT_TRUE(graft_conv);
  CmdResult text = graft("ops");
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("Relu"), std::string::npos);
  EXPECT_LT(text.out.find("Relu"), text.out.find("Internal ops"));
  EXPECT_LT(text.out.find("Internal ops"), text.out.find("GraftConv"));
}

// `graft ops NAME ...` describes the ops named, builtin (from its ONNX schema) or custom (from its
// OpDef) alike; a name no op has is an error naming it.
TEST_F(CliTest, OpsNamedAreDescribed) {
  CmdResult r = graft("ops Conv CustomLayer graft.internal::GraftConv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* line : {"Conv ", "input  W", "attr   group                int default=1", "GraftConv",
                           "ai.onnx.contrib::CustomLayer", "attr   beta"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << " not in:\n" << r.out;
  EXPECT_EQ(r.out.find("Relu"), std::string::npos) << r.out;
  CmdResult j = graft("ops --json Relu");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  auto parsed = nlohmann::json::parse(j.out);
  ASSERT_EQ(parsed["builtin"].size(), 1u) << j.out;
  EXPECT_EQ(parsed["builtin"][0]["op_type"], "Relu");
  EXPECT_TRUE(parsed["custom"].empty() && parsed["internal"].empty()) << j.out;
  // ONNX's DeformConv is read as graft's ModulatedDeformConv2d: listed as such, not as unknown.
  CmdResult dcn = graft("ops DeformConv");
  ASSERT_EQ(dcn.exit_code, 0) << dcn.err;
  EXPECT_NE(dcn.out.find("ai.onnx::DeformConv (opset >= 19) -> ai.onnx.contrib::ModulatedDeformConv2d"), std::string::npos)
      << dcn.out;
  CmdResult dcn_json = graft("ops --json DeformConv");
  ASSERT_EQ(dcn_json.exit_code, 0) << dcn_json.err;
  EXPECT_EQ(nlohmann::json::parse(dcn_json.out)["read_as"][0]["target"], "ai.onnx.contrib::ModulatedDeformConv2d");
  CmdResult bad = graft("ops Relu NoSuchOp");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("no op named 'NoSuchOp'"), std::string::npos) << bad.err;
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
  // A timing cache that is not one is refused with its name, before anything else is built. Without
  // CUDA in this graft, --device cuda is refused first, naming the flag.
#ifdef GRAFT_WITH_CUDA
  expect_one_line_error("build relu.onnx -o bad.plan --shapes x:2x3 --device cuda --timing-cache notcache.json",
                        "notcache.json");
#else
  expect_one_line_error("build relu.onnx -o bad.plan --shapes x:2x3 --device cuda --timing-cache notcache.json",
                        "--device cuda: this graft was built without CUDA");
#endif
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

// x: float32[N,3] -> LeakyRelu(alpha 0.25) -> Transpose(perm [1,0]) -> y: float32[3,N]; attributes of
// three JSON types (a float, a list of ints, and the Transpose's name string via the node name).
std::string attrs_model_bytes() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("attrs");
  auto* n = g->add_node();
  n->set_op_type("LeakyRelu");
  n->set_name("leaky");
  n->add_input("x");
  n->add_output("h");
  auto* a = n->add_attribute();
  a->set_name("alpha");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(0.25f);
  n = g->add_node();
  n->set_op_type("Transpose");
  n->set_name("transpose");
  n->add_input("h");
  n->add_output("y");
  a = n->add_attribute();
  a->set_name("perm");
  a->set_type(onnx::AttributeProto::INTS);
  a->add_ints(1);
  a->add_ints(0);
  auto dims = [](onnx::ValueInfoProto* vi, const char* name, bool transposed) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    if (transposed) tt->mutable_shape()->add_dim()->set_dim_value(3);
    tt->mutable_shape()->add_dim()->set_dim_param("N");
    if (!transposed) tt->mutable_shape()->add_dim()->set_dim_value(3);
  };
  dims(g->add_input(), "x", false);
  dims(g->add_output(), "y", true);
  return m.SerializeAsString();
}

// A progress line of a build ("[graft   0.001s] import: ...") means the model was imported.
bool imported(const CmdResult& r) { return r.err.find("] import:") != std::string::npos; }

int count_of(const std::string& text, const std::string& word) {
  int n = 0;
  for (size_t p = text.find(word); p != std::string::npos; p = text.find(word, p + 1)) ++n;
  return n;
}

// graft run takes a dynamic input's shape from its --inputs file (as ONNX Runtime and Polygraphy do);
// with no file and no shapes every dynamic dimension is 1, with one warning line (trtexec's rule).
TEST_F(CliTest, DynamicShapesComeFromTheInputFiles) {
  CmdResult r = graft("run relu.onnx --inputs x:x.npy --save-outputs out --iterations 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("float32[2,3]"), std::string::npos) << r.out;
  expect_relu_of_x(path("out/y_0.npy"));

  CmdResult d = graft("run relu.onnx --iterations 1");
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(count_of(d.err, "warning"), 1) << d.err;
  EXPECT_NE(d.err.find("graft: warning: input 'x' has dynamic shape [N,3] and no shape was given: built for 1x3"),
            std::string::npos) << d.err;
  EXPECT_NE(d.out.find("float32[1,3]"), std::string::npos) << d.out;
  // graft build the same way: a plan for [1,3].
  CmdResult b = graft("build relu.onnx -o one.plan");
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(count_of(b.err, "warning"), 1) << b.err;
  CmdResult i = graft("inspect one.plan --json");
  ASSERT_EQ(i.exit_code, 0) << i.err;
  auto j = nlohmann::json::parse(i.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << i.out;
  EXPECT_EQ(j["inputs"][0]["static_dims"], nlohmann::json::array({1, 3})) << i.out;
  // --shapes or a profile still decide when given; -q silences the warning.
  CmdResult q = graft("-q run relu.onnx --iterations 1");
  EXPECT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(q.err.find("warning"), std::string::npos) << q.err;
  // A file whose rank or fixed dimension disagrees with the model is refused naming the input, before
  // the build gets past the import.
  ASSERT_TRUE(io::write_npy(path("bad.npy"), Tensor::empty(DataType::kFloat32, {2, 4})).is_ok());
  expect_one_line_error("run relu.onnx --inputs x:bad.npy", "input 'x' has shape [N,3] but its sample has shape [2,4]");
  ASSERT_TRUE(io::write_npy(path("flat.npy"), Tensor::empty(DataType::kFloat32, {6})).is_ok());
  expect_one_line_error("run relu.onnx --inputs x:flat.npy", "input 'x'");
}

// A CPU engine's plan restamped as one built for CUDA (no GPU needed to make it).
std::string cuda_stamped(const std::string& cpu_plan) {
  auto st = read_plan_bytes(cpu_plan, "relu.plan");
  EXPECT_TRUE(st.is_ok()) << st.status().to_string();
  if (!st.is_ok()) return {};
  st->device = DeviceType::kCUDA;
  st->fp16 = true;
  st->cuda_compute_capability = 90;
  st->cuda_device_name = "NVIDIA H200";
  auto out = write_plan_bytes(*st);
  EXPECT_TRUE(out.is_ok()) << out.status().to_string();
  return out.is_ok() ? *out : std::string();
}

// A plan decides its device: run and inspect need no --device, --device is a check with correct
// advice, and a graft that cannot run a CUDA plan still describes it.
TEST_F(CliTest, ThePlanDecidesTheDevice) {
  build_plan();
  CmdResult r = graft("run relu.plan --inputs x:x.npy --iterations 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  expect_one_line_error("run relu.plan --device cuda --inputs x:x.npy",
                        "--device cuda, but the plan was built for cpu: leave --device out");
  expect_one_line_error("inspect relu.plan --device cuda", "leave --device out to use the plan on cpu");
  CmdResult ok = graft("inspect relu.plan --device cpu");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;

  const std::string gpu = cuda_stamped(slurp(dir_ / "relu.plan"));
  ASSERT_FALSE(gpu.empty());
  ASSERT_TRUE(io::write_file_atomic(path("gpu.plan"), gpu).is_ok());
  CmdResult text = graft("inspect gpu.plan");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("device cuda, fp16"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("relu0 [Relu]"), std::string::npos) << text.out;
  CmdResult json = graft("inspect gpu.plan --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto j = nlohmann::json::parse(json.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << json.out;
  EXPECT_EQ(j["device"], "cuda");
  EXPECT_EQ(j["inputs"][0]["name"], "x");
  expect_one_line_error("inspect gpu.plan --device cpu", "leave --device out to use the plan on cuda");
#ifndef GRAFT_WITH_CUDA
  // Without CUDA: described from the plan, with a note; running it names the plan and gives advice
  // that works (never "--device cpu", which a plan cannot change).
  EXPECT_EQ(j["engine_created"], false) << json.out;
  EXPECT_NE(text.err.find("graft: note: described from the plan alone"), std::string::npos) << text.err;
  expect_one_line_error("run gpu.plan", "gpu.plan: this engine is for device cuda, but this graft was built without CUDA");
  CmdResult run = graft("run gpu.plan");
  EXPECT_EQ(run.err.find("--device"), std::string::npos) << run.err;
#endif
}

// Options that do nothing here say so in one line; --device cuda in a graft without CUDA and an
// output that cannot be written fail before the import.
TEST_F(CliTest, UselessOptionsWarnAndChecksComeFirst) {
  CmdResult b = graft("build relu.onnx -o f.plan --shapes x:2x3 --fp16 --timing-cache tc.json --layout nhwc "
                      "--no-fusion --strict");
#ifndef GRAFT_WITH_CUDA
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(count_of(b.err, "warning"), 1) << b.err;
  EXPECT_NE(b.err.find("graft: warning: --fp16, --timing-cache, --layout, --no-fusion and --strict apply to CUDA "
                       "engines only; ignored for this CPU engine"),
            std::string::npos) << b.err;
  EXPECT_FALSE(fs::exists(path("tc.json"))) << "a CPU build must not write a timing cache";
  CmdResult i = graft("inspect f.plan --json");
  auto j = nlohmann::json::parse(i.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << i.out;
  EXPECT_EQ(j["fp16"], false) << "a CPU plan must not claim fp16";
  CmdResult text = graft("inspect f.plan");
  EXPECT_EQ(text.out.find("fp16"), std::string::npos) << text.out;
  CmdResult c = graft("build relu.onnx -o c.plan --device cuda");
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_NE(c.err.find("--device cuda: this graft was built without CUDA"), std::string::npos) << c.err;
  EXPECT_FALSE(imported(c)) << "refused after the import: " << c.err;
  expect_one_line_error("run relu.onnx --device cuda", "use --device cpu");
#endif
  // Build options given for a plan: one warning.
  build_plan();
  CmdResult p = graft("run relu.plan --inputs x:x.npy --fp16 --min-shapes x:1x3 --iterations 1");
  EXPECT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.err.find("--min-shapes and --fp16 apply when building from ONNX; ignored for the plan relu.plan"),
            std::string::npos) << p.err;
  // Unwritable outputs are found before the import.
  for (const std::string& args :
       {std::string("build relu.onnx -o nodir/m.plan --shapes x:2x3"),
        std::string("run relu.onnx --shapes x:2x3 --export-times nodir/t.json"),
        std::string("run relu.onnx --shapes x:2x3 --export-output nodir/o.json")}) {
    SCOPED_TRACE(args);
    CmdResult e = graft(args);
    EXPECT_EQ(e.exit_code, 1);
    EXPECT_NE(e.err.find("the directory 'nodir' does not exist"), std::string::npos) << e.err;
    EXPECT_FALSE(imported(e)) << e.err;
  }
  // A directory graft may not write into: /proc/self refuses new files even to root.
  CmdResult w = graft("build relu.onnx -o /proc/self/m.plan --shapes x:2x3");
  EXPECT_EQ(w.exit_code, 1);
  EXPECT_NE(w.err.find("-o: cannot write into the directory '/proc/self'"), std::string::npos) << w.err;
  EXPECT_FALSE(imported(w)) << w.err;
  if (::geteuid() != 0) {
    fs::create_directory(dir_ / "ro");
    fs::permissions(dir_ / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    CmdResult ro = graft("build relu.onnx -o ro/m.plan --shapes x:2x3");
    fs::permissions(dir_ / "ro", fs::perms::owner_all);
    EXPECT_EQ(ro.exit_code, 1);
    EXPECT_NE(ro.err.find("cannot write into the directory 'ro'"), std::string::npos) << ro.err;
    EXPECT_FALSE(imported(ro)) << ro.err;
  }
}

// Error messages name only flags graft has (never trtexec's camelCase ones), and library code, whose
// messages Python shows too, names no command-line flag at all.
TEST_F(CliTest, MessagesNameOnlyFlagsThatExist) {
  build_plan();
  CmdResult r = graft("run relu.plan --shapes x:9x3");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("outside the optimization profile"), std::string::npos) << r.err;
  for (const char* bad : {"minShapes", "maxShapes", "optShapes", "--device cpu"})
    EXPECT_EQ(r.err.find(bad), std::string::npos) << bad << " in: " << r.err;
  const fs::path root = GRAFT_SOURCE_DIR;
  for (const char* dir : {"src", "include", "python", "ops"}) {
    for (const auto& e : fs::recursive_directory_iterator(root / dir)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cpp" && ext != ".h" && ext != ".cu" && ext != ".cuh" && ext != ".py"))
        continue;
      std::istringstream in(slurp(e.path()));
      int line_no = 0;
      for (std::string line; std::getline(in, line);) {
        ++line_no;
        const size_t code_end = std::min(line.find("//"), line.find(" # "));
        const std::string code = line.substr(0, code_end);
        for (const char* flag : {"minShapes", "optShapes", "maxShapes", "\"--", " --plugins", " --device",
                                 " --shapes", " --fp16", " --timing-cache", " --min-shapes", " --max-shapes"})
          EXPECT_EQ(code.find(flag), std::string::npos)
              << e.path().string() << ":" << line_no << " names a command-line flag in library code: " << line;
      }
    }
  }
}

// A string model through the CLI: the dynamic input's shape and text come from a .npy unicode
// array, the outputs are saved as one and exported as JSON strings.
TEST_F(CliTest, StringModelsRunFromNpyText) {
  testing::OnnxModelBuilder m(13);
  m.input("w", DataType::kString, {"n"});
  auto& norm = m.node("StringNormalizer", {"w"}, {"kept"}, "norm");
  testing::OnnxModelBuilder::attr(norm, "case_change_action", "LOWER");
  testing::OnnxModelBuilder::attr(norm, "stopwords", std::vector<std::string>{"the"});
  m.output("kept", DataType::kString);
  ASSERT_TRUE(io::write_file_atomic(path("words.onnx"), m.bytes()).is_ok());
  ASSERT_TRUE(io::write_npy(path("w.npy"), Tensor::from_strings({4}, {"The", "Quick", "\xc3\x89t\xc3\xa9", "fox"})).is_ok());
  CmdResult r = graft("run words.onnx --inputs w:w.npy --save-outputs out --export-output out.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto saved = io::read_npy(path("out/kept.npy"));
  ASSERT_TRUE(saved.is_ok()) << saved.status().to_string();
  ASSERT_EQ(saved->dtype(), DataType::kString);
  const auto* k = saved->data_as<std::string>();
  EXPECT_EQ(std::vector<std::string>(k, k + saved->numel()), (std::vector<std::string>{"quick", "\xc3\xa9t\xc3\xa9", "fox"}));
  const auto j = nlohmann::json::parse(slurp(dir_ / "out.json"));
  EXPECT_EQ(j[0]["values"], nlohmann::json({"quick", "\xc3\xa9t\xc3\xa9", "fox"})) << j.dump();
  // A CUDA build of it is refused naming the string value (or refused because CUDA is not built in).
  CmdResult cuda = graft("build words.onnx -o words.plan --device cuda --shapes w:4");
  EXPECT_NE(cuda.exit_code, 0);
  EXPECT_FALSE(fs::exists(dir_ / "words.plan"));
}

// graft run --json, --export-times, --export-output, --duration: what scripts read.
TEST_F(CliTest, MachineReadableRun) {
  build_plan();
  CmdResult r = graft("run relu.plan --inputs x:x.npy --iterations 5 --warmup 1 --json --export-times t.json "
                      "--export-output o.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << "stdout is not one JSON document:\n" << r.out;
  EXPECT_EQ(j["device"], "cpu");
  EXPECT_EQ(j["plan"], true);
  EXPECT_EQ(j["inputs"][0]["source"], "x.npy");
  EXPECT_EQ(j["inputs"][0]["shape"], nlohmann::json::array({2, 3}));
  EXPECT_EQ(j["outputs"][0]["name"], "y:0");
  EXPECT_EQ(j["outputs"][0]["shape"], nlohmann::json::array({2, 3}));
  const auto& t = j["timing"];
  EXPECT_EQ(t["mode"], "host");
  EXPECT_EQ(t["iterations"], 5);
  EXPECT_EQ(t["warmup"], 1);
  for (const char* k : {"min", "max", "mean", "median", "p90", "p99"}) {
    ASSERT_TRUE(t["latency_ms"][k].is_number()) << k;
    EXPECT_GE(t["latency_ms"][k].get<double>(), 0) << k;
  }
  EXPECT_LE(t["latency_ms"]["min"].get<double>(), t["latency_ms"]["median"].get<double>());
  EXPECT_LE(t["latency_ms"]["median"].get<double>(), t["latency_ms"]["max"].get<double>());
  EXPECT_GT(t["throughput_qps"].get<double>(), 0);
  EXPECT_FALSE(t.contains("h2d_ms")) << "the CPU engine has no copies to split";

  auto times = nlohmann::json::parse(slurp(dir_ / "t.json"), nullptr, false);
  ASSERT_FALSE(times.is_discarded());
  EXPECT_EQ(times["format"], "graft-run-times");
  ASSERT_EQ(times["iterations"].size(), 5u);
  double prev = -1;
  for (const auto& it : times["iterations"]) {
    EXPECT_GT(it["start_ms"].get<double>(), prev);
    prev = it["start_ms"].get<double>();
    EXPECT_GE(it["latency_ms"].get<double>(), 0);
  }
  auto outs = nlohmann::json::parse(slurp(dir_ / "o.json"), nullptr, false);
  ASSERT_FALSE(outs.is_discarded());
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0]["name"], "y:0");
  EXPECT_EQ(outs[0]["dimensions"], "2x3");
  ASSERT_EQ(outs[0]["values"].size(), 6u);
  for (int64_t i = 0; i < x_.numel(); ++i)
    EXPECT_EQ(outs[0]["values"][i].get<float>(), std::max(0.0f, x_.data_as<float>()[i])) << i;

  // --duration: at least that long, and at least --iterations times.
  CmdResult d = graft("run relu.plan --inputs x:x.npy --iterations 1 --duration 0.3 --json");
  ASSERT_EQ(d.exit_code, 0) << d.err;
  auto dj = nlohmann::json::parse(d.out, nullptr, false);
  ASSERT_FALSE(dj.is_discarded()) << d.out;
  EXPECT_GE(dj["timing"]["wall_s"].get<double>(), 0.3);
  EXPECT_GT(dj["timing"]["iterations"].get<int>(), 1);
  // --compare goes into the JSON; the per-layer profile needs a CUDA engine.
  ASSERT_TRUE(graft("run relu.plan --inputs x:x.npy --save-outputs ref --iterations 1").exit_code == 0);
  CmdResult c = graft("run relu.plan --inputs x:x.npy --compare ref --iterations 1 --json");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  auto cj = nlohmann::json::parse(c.out, nullptr, false);
  ASSERT_FALSE(cj.is_discarded()) << c.out;
  EXPECT_EQ(cj["compare"][0]["beyond_tolerance"], 0);
#ifndef GRAFT_WITH_CUDA
  expect_one_line_error("run relu.plan --export-profile p.json", "needs a CUDA engine");
  expect_one_line_error("run relu.plan --profile", "needs a CUDA engine");
#endif
}

// inspect --json gives attribute values as typed JSON, not their text.
TEST_F(CliTest, InspectJsonTypedAttributes) {
  ASSERT_TRUE(io::write_file_atomic(path("attrs.onnx"), attrs_model_bytes()).is_ok());
  CmdResult r = graft("inspect attrs.onnx --shapes x:2x3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  bool leaky = false, transpose = false;
  for (const auto& l : j["layers"]) {
    if (l["op_type"] == "LeakyRelu") {
      leaky = true;
      ASSERT_TRUE(l["attributes"]["alpha"].is_number_float()) << l.dump();
      EXPECT_EQ(l["attributes"]["alpha"].get<double>(), 0.25);
    }
    if (l["op_type"] == "Transpose") {
      transpose = true;
      EXPECT_EQ(l["attributes"]["perm"], nlohmann::json::array({1, 0})) << l.dump();
    }
  }
  EXPECT_TRUE(leaky && transpose) << r.out;
}

// trtexec's spellings work with trtexec's meaning: --onnx/--loadEngine for the model, --saveEngine,
// --minShapes/--optShapes/--maxShapes, --loadInputs (comma-separated), --warmUp (milliseconds),
// --exportTimes; -q/--verbose after the subcommand. trtexec flags graft has no same-named equivalent
// for fail with a hint saying what graft does instead.
TEST_F(CliTest, TrtexecSpellings) {
  CmdResult b = graft("build --onnx=relu.onnx --saveEngine=relu.plan --minShapes=x:1x3 --optShapes=x:2x3 "
                      "--maxShapes=x:4x3 -q");
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(b.err.find("import"), std::string::npos) << "-q after the subcommand did not quiet the build: " << b.err;
  ASSERT_EQ(slurp(dir_ / "relu.plan").substr(0, 8), "GRAFTPLN");
  CmdResult r = graft("run --loadEngine=relu.plan --loadInputs=x:x.npy --warmUp=20 --iterations=3 "
                      "--exportTimes=times.json --save-outputs out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_relu_of_x(path("out/y_0.npy"));
  auto times = nlohmann::json::parse(slurp(dir_ / "times.json"));
  EXPECT_GE(times["iterations"].size(), 3u);
  // Comma-separated --loadInputs entries are split: the second names a non-input and is refused.
  expect_one_line_error("run relu.plan --loadInputs=x:x.npy,nope:x.npy", "'nope', which is not an input");
  expect_one_line_error("run relu.plan --int8", "trtexec's --int8: graft has no INT8 engines yet");
  expect_one_line_error("run relu.plan --workspace=4096", "trtexec's --workspace:");
  expect_one_line_error("run relu.plan --useCudaGraph", "graft captures CUDA graphs by default");
  expect_one_line_error("run relu.plan --warmUp=-1", "--warmUp");
  // --shapes beside a profile is the shape to run at, inside that profile (trtexec's meaning).
  CmdResult s = graft("run relu.onnx --minShapes=x:1x3 --optShapes=x:2x3 --maxShapes=x:4x3 --shapes=x:3x3 "
                      "--iterations=1 --seed 7");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_NE(s.err.find("random inputs (seed 7): x float32[3,3]"), std::string::npos) << s.err;
  expect_one_line_error("run relu.onnx --minShapes=x:1x3 --maxShapes=x:4x3 --shapes=x:5x3 --iterations=1",
                        "outside the optimization profile");
}

// trtexec's --layerPrecisions and --precisionConstraints: a float32 hold on the CPU engine builds
// (names checked); a name matching no node, an unknown precision, float16 on the CPU engine and a bad
// constraint mode are one-line errors naming what is wrong.
TEST_F(CliTest, LayerPrecisions) {
  CmdResult b = graft("build relu.onnx -o relu.plan --shapes x:2x3 --layerPrecisions=relu0:fp32 "
                      "--precisionConstraints=obey -q");
  ASSERT_EQ(b.exit_code, 0) << b.err;
  b = graft("build relu.onnx -o relu2.plan --shapes x:2x3 --layer-precisions 'rel*:fp32' -q");
  ASSERT_EQ(b.exit_code, 0) << b.err;
  expect_one_line_error("build relu.onnx -o r.plan --shapes x:2x3 --layer-precisions relu1:fp32",
                        "'relu1' matches no node");
  expect_one_line_error("build relu.onnx -o r.plan --shapes x:2x3 --layer-precisions relu0:int8",
                        "precision 'int8': a layer can be held to fp32 or fp16");
  expect_one_line_error("build relu.onnx -o r.plan --shapes x:2x3 --layer-precisions relu0",
                        "bad --layer-precisions entry 'relu0': missing ':'");
  expect_one_line_error("build relu.onnx -o r.plan --shapes x:2x3 --layer-precisions relu0:fp16", "no float16");
  expect_one_line_error("build relu.onnx -o r.plan --shapes x:2x3 --layer-precisions relu0:fp32 "
                        "--precision-constraints always",
                        "--precision-constraints");
  EXPECT_FALSE(fs::exists(dir_ / "r.plan"));
}

TEST_F(CliTest, VersionNamesBackendsOpsetsAndPlanFormat) {
  CmdResult r = graft("--version");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("graft ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("backends: cpu"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("opsets 11 to 21"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("plan format: " + std::to_string(kPlanFormatVersion)), std::string::npos) << r.out;
}

// --device takes cuda:N; a malformed one is refused naming the spellings.
TEST_F(CliTest, DeviceOrdinal) {
  expect_one_line_error("build relu.onnx -o a.plan --device cuda:x", "unknown device 'cuda:x' (cpu, cuda or cuda:N)");
  expect_one_line_error("build relu.onnx -o a.plan --device cuda:", "unknown device");
  expect_one_line_error("build relu.onnx -o a.plan --device gpu", "unknown device");
#ifndef GRAFT_WITH_CUDA
  expect_one_line_error("build relu.onnx -o a.plan --device cuda:0", "built without CUDA");
#endif
}

// ---- comparisons: --compare-backend, --compare-model, --layerwise ------------------------------

// A two-layer MLP, y = Sigmoid(Relu(x W1 + b1) W2 + b2), written with its nodes out of topological
// order (Sigmoid first) so the report's order has to come from the graph, not the file. `b1_shift`
// changes one element of b1: the model's 'fc1_bias' layer is then the first to differ from the
// unshifted model, and every layer after it differs too. `r1_name` renames the Relu's output (a
// tensor only one model has); `x_name` renames the input.
std::string mlp_model_bytes(float b1_shift, const std::string& r1_name = "r1", const std::string& x_name = "x") {
  testing::OnnxModelBuilder b(13);
  b.input(x_name, DataType::kFloat32, {2, 4});
  std::vector<double> w1(4 * 8), w2(8 * 3), b1(8), b2 = {0.1, -0.2, 0.3};
  for (size_t i = 0; i < w1.size(); ++i) w1[i] = std::sin(0.7 * static_cast<double>(i) + 0.3);
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = std::cos(0.9 * static_cast<double>(i));
  for (size_t i = 0; i < b1.size(); ++i) b1[i] = 0.05 * static_cast<double>(i) + 1.0;  // keeps Relu open
  b1[3] += b1_shift;
  b.initializer("W1", Tensor::from_doubles(DataType::kFloat32, {4, 8}, w1));
  b.initializer("b1", Tensor::from_doubles(DataType::kFloat32, {8}, b1));
  b.initializer("W2", Tensor::from_doubles(DataType::kFloat32, {8, 3}, w2));
  b.initializer("b2", Tensor::from_doubles(DataType::kFloat32, {3}, b2));
  b.node("Sigmoid", {"h2b"}, {"y"}, "sigmoid");
  b.node("MatMul", {x_name, "W1"}, {"h1"}, "fc1");
  b.node("Add", {"h1", "b1"}, {"h1b"}, "fc1_bias");
  b.node("Relu", {"h1b"}, {r1_name}, "relu1");
  b.node("MatMul", {r1_name, "W2"}, {"h2"}, "fc2");
  b.node("Add", {"h2", "b2"}, {"h2b"}, "fc2_bias");
  b.output("y", DataType::kFloat32);
  return b.bytes();
}

class CliCompareTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    ASSERT_TRUE(io::write_file_atomic(path("mlp.onnx"), mlp_model_bytes(0)).is_ok());
    ASSERT_TRUE(io::write_file_atomic(path("mlp_shifted.onnx"), mlp_model_bytes(0.25f)).is_ok());
    ASSERT_TRUE(io::write_file_atomic(path("mlp_renamed.onnx"), mlp_model_bytes(0, "relu_out")).is_ok());
    ASSERT_TRUE(io::write_file_atomic(path("mlp_other_input.onnx"), mlp_model_bytes(0, "r1", "image")).is_ok());
  }
  nlohmann::json comparison_of(const CmdResult& r) {
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    EXPECT_TRUE(j.contains("comparison")) << r.out;
    return j.is_discarded() ? nlohmann::json() : j["comparison"];
  }
};

// The honest failing case: two models that differ in one constant of one known layer. The report
// names that layer first, although the file lists Sigmoid first and every later layer differs too.
TEST_F(CliCompareTest, LayerwiseNamesTheChangedLayerFirst) {
  CmdResult r = graft("run mlp.onnx --compare-model mlp_shifted.onnx --layerwise --iterations 1 --seed 3 --json");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  auto lines = lines_of(r.err);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.back().find("layer 'fc1_bias' (Add), output 'h1b'"), std::string::npos) << r.err;
  nlohmann::json c = comparison_of(r);
  ASSERT_TRUE(c.is_object());
  EXPECT_EQ(c["passed"], false);
  EXPECT_EQ(c["first_divergence"]["layer"], "fc1_bias") << c.dump(1);
  EXPECT_EQ(c["first_divergence"]["op_type"], "Add");
  EXPECT_EQ(c["first_divergence"]["tensor"], "h1b");
  EXPECT_EQ(c["first_divergence"]["worst_at"], nlohmann::json::array({0, 3}));
  EXPECT_NEAR(c["first_divergence"]["max_abs_error"].get<double>(), 0.25, 1e-6);
  // Topological order: fc1 (equal), fc1_bias, relu1, fc2, fc2_bias, sigmoid.
  std::vector<std::string> order, status;
  for (const auto& t : c["tensors"]) {
    order.push_back(t["layer"]);
    status.push_back(t["status"]);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"fc1", "fc1_bias", "relu1", "fc2", "fc2_bias", "sigmoid"}));
  EXPECT_EQ(status, (std::vector<std::string>{"match", "mismatch", "mismatch", "mismatch", "mismatch", "mismatch"}));
  EXPECT_EQ(c["summary"]["matched"], 1);
  EXPECT_EQ(c["summary"]["mismatched"], 5);

  CmdResult text = graft("run mlp.onnx --compare-model mlp_shifted.onnx --mark-all --iterations 1 --seed 3");
  EXPECT_EQ(text.exit_code, 1) << text.err;
  EXPECT_NE(text.out.find("first divergence: layer 'fc1_bias' (Add), output 'h1b'"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("MISMATCH"), std::string::npos) << text.out;
}

// Every field of the report, with its type: scripts read this (docs/cli.md, "Comparison report").
TEST_F(CliCompareTest, JsonReportSchema) {
  CmdResult r = graft("run mlp.onnx --compare-backend cpu --layerwise --iterations 1 --seed 5 --json "
                      "--rtol 1e-4 --atol y:1e-6 --rtol h2:0.5");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json c = comparison_of(r);
  ASSERT_TRUE(c.is_object());
  EXPECT_EQ(c["format"], "graft-compare");
  EXPECT_EQ(c["version"], 1);
  EXPECT_TRUE(c["candidate"].is_string() && c["reference"].is_string()) << c.dump(1);
  EXPECT_NE(c["reference"].get<std::string>().find("mlp.onnx on cpu"), std::string::npos);
  EXPECT_EQ(c["layerwise"], true);
  EXPECT_EQ(c["passed"], true);
  EXPECT_TRUE(c["first_divergence"].is_null());
  EXPECT_EQ(c["tolerance"]["rtol"], 1e-4);
  EXPECT_EQ(c["tolerance"]["atol"], 1e-5);
  EXPECT_EQ(c["tolerance"]["per_tensor"]["y"]["atol"], 1e-6);
  EXPECT_EQ(c["tolerance"]["per_tensor"]["h2"]["rtol"], 0.5);
  for (const char* k : {"tensors", "matched", "mismatched", "not_compared"})
    EXPECT_TRUE(c["summary"][k].is_number_integer()) << k;
  EXPECT_EQ(c["summary"]["tensors"], 6);
  ASSERT_EQ(c["tensors"].size(), 6u);
  int index = 0;
  for (const auto& t : c["tensors"]) {
    SCOPED_TRACE(t.dump());
    EXPECT_TRUE(t["tensor"].is_string());
    EXPECT_EQ(t["status"], "match");
    EXPECT_TRUE(t["layer"].is_string());
    EXPECT_TRUE(t["op_type"].is_string());
    EXPECT_EQ(t["layer_index"], index++);
    EXPECT_EQ(t["candidate_type"], t["reference_type"]);
    for (const char* k : {"rtol", "atol", "max_abs_error", "max_rel_error", "candidate_value", "reference_value"})
      EXPECT_TRUE(t[k].is_number()) << k;
    for (const char* k : {"elements", "beyond_tolerance"}) EXPECT_TRUE(t[k].is_number_integer()) << k;
    EXPECT_TRUE(t["worst_at"].is_array());
    if (t["tensor"] == "h2") EXPECT_EQ(t["rtol"], 0.5);
    if (t["tensor"] == "y") EXPECT_EQ(t["atol"], 1e-6);
  }
  // The run's own report is still there beside the comparison.
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j.contains("timing"));
  EXPECT_EQ(j["outputs"].size(), 6u);
}

// Per-output tolerances decide: the shifted model's output differs by about 0.04.
TEST_F(CliCompareTest, PerOutputTolerance) {
  CmdResult strict = graft("run mlp.onnx --compare-model mlp_shifted.onnx --iterations 1 --seed 4");
  EXPECT_EQ(strict.exit_code, 1) << strict.err;
  EXPECT_NE(strict.err.find("output 'y'"), std::string::npos) << strict.err;
  CmdResult loose = graft("run mlp.onnx --compare-model mlp_shifted.onnx --iterations 1 --seed 4 --atol y:0.5");
  EXPECT_EQ(loose.exit_code, 0) << loose.err << loose.out;
  EXPECT_NE(loose.out.find("every compared tensor is within tolerance"), std::string::npos) << loose.out;
}

// A tensor only one side has is listed as not compared, saying which side has it, never skipped.
TEST_F(CliCompareTest, TensorsOnlyOneSideHasAreListed) {
  CmdResult r = graft("run mlp.onnx --compare-model mlp_renamed.onnx --layerwise --iterations 1 --seed 6 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json c = comparison_of(r);
  ASSERT_TRUE(c.is_object());
  EXPECT_EQ(c["summary"]["not_compared"], 2);
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& t : c["tensors"]) by_name[t["tensor"]] = t;
  EXPECT_EQ(by_name["r1"]["status"], "not_compared");
  EXPECT_EQ(by_name["r1"]["reason"], "only the candidate has it");
  EXPECT_EQ(by_name["r1"]["layer"], "relu1");
  EXPECT_TRUE(by_name["r1"]["reference_type"].is_null());
  EXPECT_EQ(by_name["relu_out"]["status"], "not_compared");
  EXPECT_EQ(by_name["relu_out"]["reason"], "only the reference has it");
  EXPECT_EQ(by_name["h2"]["status"], "match");
  CmdResult text = graft("run mlp.onnx --compare-model mlp_renamed.onnx --layerwise --iterations 1 --seed 6");
  EXPECT_NE(text.out.find("not compared: only the candidate has it"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("2 not compared"), std::string::npos) << text.out;
}

TEST_F(CliCompareTest, BadInputGivesOneLineErrors) {
  expect_one_line_error("run mlp.onnx --compare-backend cpu --rtol nosuch:1e-3 --iterations 1",
                        "--rtol names 'nosuch', which is not an output of the model (y)");
  expect_one_line_error("run mlp.onnx --compare-backend cpu --layerwise --atol nosuch:1e-3 --iterations 1",
                        "--atol names 'nosuch', which is not a tensor of the model");
  expect_one_line_error("run mlp.onnx --compare-backend cpu --rtol abc --iterations 1",
                        "--rtol entry 'abc' is not a non-negative number or NAME:NUMBER");
  expect_one_line_error("run mlp.onnx --compare-backend cpu --atol=-1 --iterations 1", "--atol entry '-1'");
  expect_one_line_error("run mlp.onnx --compare-backend cpu --rtol 1e-3 --rtol 1e-2 --iterations 1",
                        "--rtol gives the default tolerance twice");
  expect_one_line_error("run mlp.onnx --layerwise --iterations 1", "give --compare-backend BACKEND or --compare-model");
  expect_one_line_error("run mlp.onnx --rtol 1e-2 --iterations 1", "tolerances of a comparison");
  expect_one_line_error("run mlp.onnx --compare-model mlp_other_input.onnx --iterations 1",
                        "the models take different inputs: mlp.onnx (x float32) and mlp_other_input.onnx (image float32)");
  expect_one_line_error("run mlp.onnx --compare-model relu.onnx --shapes x:2x4 --iterations 1",
                        "building the reference failed: relu.onnx");
  expect_one_line_error("run mlp.onnx --compare-model missing.onnx --iterations 1", "missing.onnx");
  ASSERT_EQ(graft("build mlp.onnx -o mlp.plan").exit_code, 0);
  expect_one_line_error("run mlp.plan --compare-backend cpu --iterations 1", "needs the ONNX model, not a plan");
  expect_one_line_error("run mlp.onnx --compare-model mlp.plan --iterations 1",
                        "--compare-model takes an ONNX model, not a plan");
#ifndef GRAFT_WITH_CUDA
  expect_one_line_error("run mlp.onnx --compare-backend cuda --iterations 1", "built without CUDA");
#endif
}

// Nothing in common: the reference's output has another name.
TEST_F(CliCompareTest, ModelsWithNoOutputInCommon) {
  testing::OnnxModelBuilder b(13);
  b.input("x", DataType::kFloat32, {2, 4});
  b.node("Relu", {"x"}, {"z"}, "relu");
  b.output("z", DataType::kFloat32);
  ASSERT_TRUE(io::write_file_atomic(path("relu_z.onnx"), b.bytes()).is_ok());
  expect_one_line_error("run mlp.onnx --compare-model relu_z.onnx --iterations 1",
                        "the models have no output name in common, so nothing can be compared: mlp.onnx (y) and "
                        "relu_z.onnx (z)");
}

}  // namespace
}  // namespace graft
