// Per-layer precisions (BuilderConfig::layer_precisions, trtexec's --layerPrecisions): which nodes a
// name or pattern holds, how the CUDA target's passes obey it (run on the CPU against a stand-in for
// the device, as device_passes_test.cpp does), through fusions that make one layer of several, and
// the errors for keys that match nothing, precisions a build cannot give, and unmet float16.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "build/device_passes.h"
#include "graph/passes.h"
#include "tests/unit/device_pass_test_util.h"

namespace graft::testing {
namespace {

// conv_gemm_model (device_pass_test_util.h), and beside it x -> side_exp (Exp) -> side_sum
// (ReduceSum) -> z, whose Exp graft keeps in float32 by itself.
OnnxModelBuilder two_branch_model(std::mt19937& rng) {
  OnnxModelBuilder m = conv_gemm_model(rng);
  m.node("Exp", {"x"}, {"e"}, "side_exp");
  m.node("ReduceSum", {"e"}, {"z"}, "side_sum");
  m.output("z", DataType::kFloat32);
  return m;
}

// The dtype the single node of op `op` (after the passes) reads at input 0.
DataType input0_dtype(const Graph& g, const std::string& op) {
  const Node* n = nullptr;
  for (const auto& node : g.nodes())
    if (node->op_type == op) {
      EXPECT_EQ(n, nullptr) << "two " << op << " layers";
      n = node.get();
    }
  EXPECT_NE(n, nullptr) << "no " << op << " layer";
  return n && n->input(0) ? n->input(0)->desc.dtype : DataType::kUndefined;
}

// The dtype the layer made from node `name` reads at input 0: the node itself, or the fused layer
// named after it (an elementwise chain over it and its Cast is "<name>_to_fp32_chain").
DataType dtype_read_by(const Graph& g, const std::string& name) {
  for (const auto& n : g.nodes())
    if (n->name == name || n->name.rfind(name + "_", 0) == 0) return n->input(0)->desc.dtype;
  ADD_FAILURE() << "no layer made from " << name;
  return DataType::kUndefined;
}

// The GraftConv made from `conv`'s node (it keeps the convolution's name).
DataType conv_input_dtype(const Graph& g, const std::string& conv) {
  for (const auto& n : g.nodes())
    if (n->op_type == "GraftConv" && n->name == conv) return n->input(0)->desc.dtype;
  ADD_FAILURE() << "no GraftConv named " << conv;
  return DataType::kUndefined;
}

// Imports the model, holds `pins`, runs the CUDA list with FP16 on a device that runs everything.
std::unique_ptr<Graph> held_and_passed(const OnnxModelBuilder& m, const std::map<std::string, DataType>& pins,
                                       int expect_held, const std::string& constraints = "obey",
                                       const DeviceQueries& device = runs_everything()) {
  auto g = load(m);
  EXPECT_TRUE(g);
  if (!g) return nullptr;
  auto held = apply_layer_precisions(*g, pins, /*float16_allowed=*/true);
  EXPECT_TRUE(held.is_ok()) << held.status().to_string();
  if (!held.is_ok()) return nullptr;
  EXPECT_EQ(*held, expect_held);
  BuilderConfig config;
  config.fp16 = true;
  config.layout = "nchw";
  config.precision_constraints = constraints;
  Status s = run_device_pass_list(*g, cuda_device_passes(), config, device);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return s.is_ok() ? std::move(g) : nullptr;
}

TEST(LayerPrecisions, NoneHeldGivesTheFloat16Build) {
  std::mt19937 rng(1);
  auto g = held_and_passed(two_branch_model(rng), {}, 0);
  ASSERT_TRUE(g);
  EXPECT_EQ(conv_input_dtype(*g, "conv0"), DataType::kFloat16);
  EXPECT_EQ(conv_input_dtype(*g, "conv1"), DataType::kFloat16);
  EXPECT_EQ(input0_dtype(*g, "GraftGemm"), DataType::kFloat16);
  EXPECT_EQ(dtype_read_by(*g, "side_exp"), DataType::kFloat32) << "Exp stays float32 by its op's trait";
}

TEST(LayerPrecisions, ANameHoldsItsLayerInFloat32AndTheModelStillComputes) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  OnnxModelBuilder m = two_branch_model(rng);
  auto original = load(m);
  ASSERT_TRUE(original);
  const std::map<std::string, Tensor> in{{"x", random_tensor(DataType::kFloat32, {2, 8, 6, 5}, rng)}};
  const auto want = run_graph(*original, in);
  auto g = held_and_passed(m, {{"conv1", DataType::kFloat32}}, 1);
  ASSERT_TRUE(g);
  EXPECT_EQ(conv_input_dtype(*g, "conv0"), DataType::kFloat16);
  EXPECT_EQ(conv_input_dtype(*g, "conv1"), DataType::kFloat32);
  EXPECT_EQ(input0_dtype(*g, "GraftGemm"), DataType::kFloat16);
  const auto got = run_graph(*g, in);
  expect_close(got.at("y"), want.at("y"), 2e-2, 2e-2);
  expect_close(got.at("z"), want.at("z"), 1e-5, 1e-5);
}

// The activation and residual the convolution absorbs, and the bias the GEMM absorbs, carry their
// hold into the fused layer: float32 wins.
TEST(LayerPrecisions, AFusedLayerIsFloat32WhenAnyPartIsHeldThere) {
  std::mt19937 rng(2);
  auto g = held_and_passed(two_branch_model(rng),
                           {{"relu1", DataType::kFloat32}, {"fc_bias", DataType::kFloat32}}, 2);
  ASSERT_TRUE(g);
  EXPECT_EQ(conv_input_dtype(*g, "conv0"), DataType::kFloat16);
  EXPECT_EQ(conv_input_dtype(*g, "conv1"), DataType::kFloat32) << "relu1 was fused into conv1";
  EXPECT_EQ(input0_dtype(*g, "GraftGemm"), DataType::kFloat32) << "fc_bias was fused into fc";
}

// '*' matches any run of characters; an exact name decides over any pattern, and a longer pattern
// over a shorter one.
TEST(LayerPrecisions, PatternsExactNamesAndTheLongestPatternDecide) {
  std::mt19937 rng(3);
  auto g = load(two_branch_model(rng));
  ASSERT_TRUE(g);
  auto held = apply_layer_precisions(*g,
                                     {{"*", DataType::kFloat16},
                                      {"conv*", DataType::kFloat32},
                                      {"conv1", DataType::kFloat16},
                                      {"fc*", DataType::kFloat32},
                                      {"fc_b*", DataType::kFloat16}},
                                     true);
  ASSERT_TRUE(held.is_ok()) << held.status().to_string();
  std::map<std::string, DataType> got;
  for (const auto& n : g->nodes()) got[n->name] = n->precision;
  EXPECT_EQ(*held, static_cast<int>(g->nodes().size()));
  EXPECT_EQ(got["conv0"], DataType::kFloat32);    // 'conv*' is longer than '*'
  EXPECT_EQ(got["conv1"], DataType::kFloat16);    // its exact name, over 'conv*'
  EXPECT_EQ(got["relu0"], DataType::kFloat16);    // only '*'
  EXPECT_EQ(got["fc"], DataType::kFloat32);       // 'fc*'
  EXPECT_EQ(got["fc_bias"], DataType::kFloat16);  // 'fc_b*' is longer than 'fc*'
  EXPECT_EQ(got["side_exp"], DataType::kFloat16);
}

// Held to float16, an op graft keeps in float32 by itself (Exp) runs in float16 all the same.
TEST(LayerPrecisions, Float16OverridesAnOpsOwnFloat32Trait) {
  std::mt19937 rng(4);
  auto g = held_and_passed(two_branch_model(rng), {{"side_exp", DataType::kFloat16}}, 1);
  ASSERT_TRUE(g);
  EXPECT_EQ(dtype_read_by(*g, "side_exp"), DataType::kFloat16);
}

// "*" held to float16: every layer that computes float values runs in float16; Shape, which only
// reads dims, is left as it is (reading x as it comes, no Cast made for it), and is no error.
TEST(LayerPrecisions, EveryLayerHeldToFloat16LeavesShapeArithmeticAlone) {
  OnnxModelBuilder m;  // x [N, 6] with a dynamic N, so that its Shape stays a layer
  m.input("x", DataType::kFloat32, {"N", 6});
  m.node("Exp", {"x"}, {"e"}, "exp");
  m.node("ReduceSum", {"e"}, {"z"}, "sum");
  m.node("Shape", {"x"}, {"dims"}, "dims");
  m.output("z", DataType::kFloat32);
  m.output("dims", DataType::kInt64);
  auto g = held_and_passed(m, {{"*", DataType::kFloat16}}, 3);
  ASSERT_TRUE(g);
  EXPECT_EQ(input0_dtype(*g, "ReduceSum"), DataType::kFloat16) << "Exp and ReduceSum in float16";
  ASSERT_NE(find_op(*g, "Shape"), nullptr);
  EXPECT_EQ(find_op(*g, "Shape")->input(0)->name, "x") << "read as it comes: no Cast made for it";
}

// A layer held to float16 that the device cannot run so: an error naming it under "obey", a
// warning (and float32) under "prefer".
TEST(LayerPrecisions, UnmetFloat16FailsUnderObeyAndStaysFloat32UnderPrefer) {
  std::mt19937 rng(5);
  OnnxModelBuilder m = two_branch_model(rng);
  DeviceQueries no_fp16_sum = runs_everything();
  no_fp16_sum.runs = [](const Node& n) {
    return !(n.op_type == "ReduceSum" && n.input(0) && n.input(0)->desc.dtype == DataType::kFloat16);
  };
  const std::map<std::string, DataType> pins{{"side_sum", DataType::kFloat16}};
  {
    auto g = load(m);
    ASSERT_TRUE(g);
    ASSERT_TRUE(apply_layer_precisions(*g, pins, true).is_ok());
    BuilderConfig config;
    config.fp16 = true;
    Status s = run_device_pass_list(*g, cuda_device_passes(), config, no_fp16_sum);
    ASSERT_FALSE(s.is_ok());
    EXPECT_EQ(s.node_name(), "side_sum") << s.to_string();
    EXPECT_NE(s.to_string().find("the device has no float16 kernel for it"), std::string::npos) << s.to_string();
  }
  auto g = held_and_passed(m, pins, 1, "prefer", no_fp16_sum);
  ASSERT_TRUE(g);
  EXPECT_EQ(input0_dtype(*g, "ReduceSum"), DataType::kFloat32);
}

TEST(LayerPrecisions, KeysThatMatchNothingAndPrecisionsTheBuildLacksAreErrors) {
  std::mt19937 rng(6);
  auto g = load(two_branch_model(rng));
  ASSERT_TRUE(g);
  auto r = apply_layer_precisions(*g, {{"stage9/*", DataType::kFloat32}}, true);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().to_string().find("'stage9/*' matches no node"), std::string::npos) << r.status().to_string();
  EXPECT_NE(r.status().to_string().find("'conv0'"), std::string::npos) << "lists some node names";
  r = apply_layer_precisions(*g, {{"fc", DataType::kFloat16}}, /*float16_allowed=*/false);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().to_string().find("no float16"), std::string::npos) << r.status().to_string();
  r = apply_layer_precisions(*g, {{"fc", DataType::kInt8}}, true);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().to_string().find("float32 (fp32) or float16 (fp16)"), std::string::npos) << r.status().to_string();
  for (const auto& n : g->nodes()) EXPECT_EQ(n->precision, DataType::kUndefined) << n->name;
}

// Through the public builder: a CPU engine takes float32 holds (and checks their names), refuses
// float16 ones, and refuses an unknown constraint mode.
TEST(LayerPrecisions, TheCpuBuilderChecksNamesAndRefusesFloat16) {
  std::mt19937 rng(7);
  const std::string bytes = two_branch_model(rng).bytes();
  BuilderConfig config;
  config.layer_precisions = {{"fc*", DataType::kFloat32}};
  auto e = Engine::build_from_onnx_bytes(bytes, config, "pins.onnx");
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  config.layer_precisions = {{"fcc", DataType::kFloat32}};
  e = Engine::build_from_onnx_bytes(bytes, config, "pins.onnx");
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.status().to_string().find("'fcc' matches no node"), std::string::npos) << e.status().to_string();
  EXPECT_NE(e.status().to_string().find("pins.onnx"), std::string::npos) << "names the file";
  config.layer_precisions = {{"fc", DataType::kFloat16}};
  e = Engine::build_from_onnx_bytes(bytes, config, "pins.onnx");
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.status().to_string().find("no float16"), std::string::npos) << e.status().to_string();
  config.layer_precisions = {{"fc", DataType::kFloat32}};
  config.precision_constraints = "strict";
  e = Engine::build_from_onnx_bytes(bytes, config, "pins.onnx");
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.status().to_string().find("obey, prefer or none"), std::string::npos) << e.status().to_string();
}

TEST(LayerPrecisions, NamesOfPrecisions) {
  EXPECT_EQ(*layer_precision_from_name("fp32"), DataType::kFloat32);
  EXPECT_EQ(*layer_precision_from_name("float16"), DataType::kFloat16);
  auto bad = layer_precision_from_name("int8");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().to_string().find("'int8'"), std::string::npos) << bad.status().to_string();
}

}  // namespace
}  // namespace graft::testing
