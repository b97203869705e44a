// The CUDA builder's convolution passes, checked on the CPU: Conv+Add+Relu fusion into GraftConv
// and NHWC regions must leave every output unchanged (the internal ops' CPU references are the
// builtin kernels), on fresh random data.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "graft/engine.h"
#include "graph/passes.h"
#include "onnx/importer.h"
#include "ops/layout.h"
#include "runtime/cpu_engine.h"
#include "tests/cuda/test_models.h"
#include "tests/unit/graph_pass_test_util.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/op_test_util.h"

namespace graft {
namespace {

using testing::OnnxModelBuilder;
using testing::random_tensor;

// Imported as a plan's graph is, so the internal ops of the reference tests (GraftChannelsLast)
// come in too (import_onnx_bytes refuses them in a user's model).
std::unique_ptr<Graph> imported(const std::string& bytes) {
  auto g = testing::import_plan_graph(bytes);
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  std::unique_ptr<Graph> out = std::move(g).value();
  Status s = infer_shapes(*out);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return out;
}

std::map<std::string, Tensor> run_on_cpu(std::unique_ptr<Graph> g, const std::map<std::string, Tensor>& inputs) {
  EngineState st;
  st.graph = std::move(g);
  auto eng = make_cpu_engine(std::move(st));
  EXPECT_TRUE(eng.is_ok()) << eng.status().to_string();
  auto ctx = (*eng)->create_context();
  EXPECT_TRUE(ctx.is_ok());
  std::map<std::string, Tensor> outs;
  Status s = (*ctx)->run(inputs, outs);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return outs;
}

int count_ops(const Graph& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.nodes()) n += node->op_type == op;
  return n;
}

// |got - want| <= rel * (1 + the largest |want|) everywhere; a reference of zeros fails.
void expect_within(const Tensor& got, const Tensor& want, const std::string& name, double rel) {
  ASSERT_EQ(got.dims(), want.dims()) << name;
  double scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, std::fabs(want.get(i)));
  ASSERT_GT(scale, 0.0) << name << " is all zeros: the test would prove nothing";
  for (int64_t i = 0; i < want.numel(); ++i)
    ASSERT_NEAR(got.get(i), want.get(i), rel * (1 + scale)) << name << " element " << i;
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& name) {
  expect_within(got, want, name, 1e-5);
}

// A float16 output against the model's own: float16 rounding of the same float64 sums in another
// order (of the channels, or of a rearranged stem's taps), within 2 ulp of the output's scale.
void expect_fp16_close(const Tensor& got, const Tensor& want, const std::string& name) {
  expect_within(got, want, name, 2e-3);
}

// The model through the conv epilogue fusion and the NHWC pass (`wanted` picks the region seeds).
std::unique_ptr<Graph> through_nhwc_pass(const std::string& bytes, const std::function<bool(const Node&)>& wanted) {
  auto g = imported(bytes);
  auto fused = fuse_conv_epilogues(*g);
  EXPECT_TRUE(fused.is_ok()) << fused.status().to_string();
  auto moved = convert_conv_regions_to_nhwc(*g, wanted);
  EXPECT_TRUE(moved.is_ok()) << moved.status().to_string();
  Status inferred = infer_shapes(*g);
  EXPECT_TRUE(inferred.is_ok()) << inferred.to_string();
  return g;
}

bool every_conv(const Node&) { return true; }

TEST(FusionConv, EpilogueFusionAndNhwcKeepOutputs) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::string model = graft_cuda_test::residual_se_cnn_model(rng).bytes();
  std::map<std::string, Tensor> in{{"x", random_tensor(DataType::kFloat32, {2, 3, 9, 8}, rng)}};
  auto want = run_on_cpu(imported(model), in);

  auto fused = imported(model);
  auto n = fuse_conv_epilogues(*fused);
  ASSERT_TRUE(n.is_ok()) << n.status().to_string();
  EXPECT_EQ(*n, 6);
  ASSERT_TRUE(infer_shapes(*fused).is_ok());
  EXPECT_EQ(count_ops(*fused, "Conv"), 0);
  EXPECT_EQ(count_ops(*fused, "Relu"), 0) << "every Relu follows a conv or a residual add";
  EXPECT_EQ(count_ops(*fused, "HardSwish"), 0) << "the HardSwish after c2 joins its epilogue";
  EXPECT_EQ(count_ops(*fused, "Add"), 1) << "the residual add is fused, the per-channel shift is not";
  int with_residual = 0;
  for (const auto& node : fused->nodes())
    if (node->op_type == "GraftConv" && node->inputs.size() == 4) {
      ++with_residual;
      EXPECT_TRUE(node->name == "c3_conv" || node->name == "d3_conv") << node->name;
      EXPECT_EQ(*node->attrs.get_string("activation", ""), "Relu");
    }
  EXPECT_EQ(with_residual, 1) << "exactly one convolution absorbs the residual add";
  auto got = run_on_cpu(std::move(fused), in);
  for (const char* o : {"y", "feat"}) expect_close(got.at(o), want.at(o), std::string("fused ") + o);

  auto nhwc = imported(model);
  ASSERT_TRUE(fuse_conv_epilogues(*nhwc).is_ok());
  auto moved = convert_conv_regions_to_nhwc(*nhwc, [](const Node&) { return true; });
  ASSERT_TRUE(moved.is_ok()) << moved.status().to_string();
  Status inferred = infer_shapes(*nhwc);
  ASSERT_TRUE(inferred.is_ok()) << inferred.to_string();
  EXPECT_EQ(count_ops(*nhwc, "GraftPool"), 2) << "MaxPool and GlobalAveragePool run channels-last";
  // Transposes: the input, the region's exit before the per-channel add, and the `feat` output.
  EXPECT_EQ(count_ops(*nhwc, "Transpose"), 3);
  for (const Value* out : nhwc->outputs()) EXPECT_EQ(out->desc.shape->at(1).value(), out->name == "y" ? 4 : 8);
  got = run_on_cpu(std::move(nhwc), in);
  for (const char* o : {"y", "feat"}) expect_close(got.at(o), want.at(o), std::string("nhwc ") + o);
}

// A ConvNeXt block as PyTorch exports it: depthwise 7x7 conv, permute to channels-last, LayerNorm,
// two Linear layers, permute back, a per-channel layer scale [C,1,1] and the residual add. The
// model's own permutes are the region's storage, so the whole block runs channels-last with no
// Transpose inside it: only the model input's and the output's remain.
TEST(FusionConv, ModelPermutesAndChannelScalesJoinTheRegion) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const int64_t c = 8;
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {"N", 3, 9, 7});
  m.initializer("w0", random_tensor(DataType::kFloat32, {c, 3, 3, 3}, rng));
  m.initializer("b0", random_tensor(DataType::kFloat32, {c}, rng));
  m.initializer("wd", random_tensor(DataType::kFloat32, {c, 1, 7, 7}, rng, -0.3, 0.3));
  m.initializer("bd", random_tensor(DataType::kFloat32, {c}, rng));
  m.initializer("gamma", random_tensor(DataType::kFloat32, {c}, rng, 0.5, 1.5));
  m.initializer("beta", random_tensor(DataType::kFloat32, {c}, rng));
  m.initializer("w1", random_tensor(DataType::kFloat32, {c, 4 * c}, rng, -0.5, 0.5));
  m.initializer("b1", random_tensor(DataType::kFloat32, {4 * c}, rng));
  m.initializer("w2", random_tensor(DataType::kFloat32, {4 * c, c}, rng, -0.5, 0.5));
  m.initializer("scale", random_tensor(DataType::kFloat32, {c, 1, 1}, rng, 0.5, 1.5));
  OnnxModelBuilder::attr(m.node("Conv", {"x", "w0", "b0"}, {"stem"}, "stem"), "pads", std::vector<int64_t>{1, 1, 1, 1});
  auto& dw = m.node("Conv", {"stem", "wd", "bd"}, {"d"}, "dwconv");
  OnnxModelBuilder::attr(dw, "group", c);
  OnnxModelBuilder::attr(dw, "pads", std::vector<int64_t>{3, 3, 3, 3});
  OnnxModelBuilder::attr(m.node("Transpose", {"d"}, {"d_nhwc"}, "to_last"), "perm", std::vector<int64_t>{0, 2, 3, 1});
  OnnxModelBuilder::attr(m.node("LayerNormalization", {"d_nhwc", "gamma", "beta"}, {"n"}, "ln"), "axis", int64_t{-1});
  m.node("MatMul", {"n", "w1"}, {"h0"}, "fc1");
  m.node("Add", {"h0", "b1"}, {"h1"}, "fc1_bias");
  m.node("Relu", {"h1"}, {"h2"}, "act");
  m.node("MatMul", {"h2", "w2"}, {"h3"}, "fc2");
  OnnxModelBuilder::attr(m.node("Transpose", {"h3"}, {"h"}, "to_first"), "perm", std::vector<int64_t>{0, 3, 1, 2});
  m.node("Mul", {"h", "scale"}, {"scaled"}, "layer_scale");
  m.node("Add", {"scaled", "stem"}, {"y"}, "residual");
  m.output("y", DataType::kFloat32);
  std::map<std::string, Tensor> in{{"x", random_tensor(DataType::kFloat32, {2, 3, 9, 7}, rng)}};
  auto want = run_on_cpu(imported(m.bytes()), in);

  auto g = through_nhwc_pass(m.bytes(), every_conv);
  EXPECT_EQ(count_ops(*g, "Transpose"), 2) << "the model's two permutes are absorbed: only x's and y's remain";
  for (const auto& node : g->nodes())
    if (node->op_type == "Mul") {
      ASSERT_TRUE(node->input(1)->constant.has_value());
      EXPECT_EQ(node->input(1)->constant->dims(), (std::vector<int64_t>{1, 1, 1, c})) << "the scale, channels-last";
    }
  auto got = run_on_cpu(std::move(g), in);
  expect_close(got.at("y"), want.at("y"), "y");
}

// MaxViT's MBConv as exported: 1x1 Conv -> Gelu -> depthwise 3x3 Conv -> Gelu -> 1x1 Conv. GELU is
// per element whatever the layout (its definition says so: elementwise_unary), so the block is one
// NHWC region with no Transpose inside it; before, each Gelu left and re-entered the region (two
// Transposes per Gelu), and the engine's timing preferred NCHW for the whole model.
TEST(FusionConv, GeluStaysInTheRegion) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const int64_t c = 8;
  OnnxModelBuilder m(20);
  m.input("x", DataType::kFloat32, {"N", c, 6, 5});
  m.initializer("wa", random_tensor(DataType::kFloat32, {2 * c, c, 1, 1}, rng, -0.5, 0.5));
  m.initializer("wb", random_tensor(DataType::kFloat32, {2 * c, 1, 3, 3}, rng, -0.5, 0.5));
  m.initializer("wc", random_tensor(DataType::kFloat32, {c, 2 * c, 1, 1}, rng, -0.5, 0.5));
  m.initializer("bc", random_tensor(DataType::kFloat32, {c}, rng));
  m.node("Conv", {"x", "wa"}, {"a"}, "conv_a");
  m.node("Gelu", {"a"}, {"ga"}, "gelu_a");
  auto& dw = m.node("Conv", {"ga", "wb"}, {"b"}, "conv_b");
  OnnxModelBuilder::attr(dw, "group", 2 * c);
  OnnxModelBuilder::attr(dw, "pads", std::vector<int64_t>{1, 1, 1, 1});
  OnnxModelBuilder::attr(m.node("Gelu", {"b"}, {"gb"}, "gelu_b"), "approximate", std::string("tanh"));
  m.node("Conv", {"gb", "wc", "bc"}, {"y"}, "conv_c");
  m.output("y", DataType::kFloat32);
  std::map<std::string, Tensor> in{{"x", random_tensor(DataType::kFloat32, {2, c, 6, 5}, rng)}};
  auto want = run_on_cpu(imported(m.bytes()), in);

  auto g = through_nhwc_pass(m.bytes(), every_conv);
  EXPECT_EQ(count_ops(*g, "Transpose"), 2) << "only the region's entry (x) and exit (y)";
  EXPECT_EQ(count_ops(*g, "Gelu"), 2);
  auto got = run_on_cpu(std::move(g), in);
  expect_close(got.at("y"), want.at("y"), "y");
}

// A DCN block as detectors have it: Conv -> ModulatedDeformConv2d (offsets and mask from a Conv of
// the same input) -> Relu -> Conv. The custom op is declared channels_last_io, so the region runs
// through it: its x is the first Conv's NHWC output and its output feeds Relu without a Transpose;
// only the offset/mask Conv's output (an NCHW input of the op) leaves the region. The CPU engine runs
// the channels-last node (KernelContext::channels_last_io) and must give the model's values.
TEST(FusionConv, ChannelsLastCustomOpStaysInTheRegion) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const int64_t c = 8;
  OnnxModelBuilder m(17);
  m.opset("ai.onnx.contrib", 1);
  m.input("x", DataType::kFloat32, {"N", c, 6, 5});
  m.initializer("wa", random_tensor(DataType::kFloat32, {c, c, 1, 1}, rng, -0.5, 0.5));
  m.initializer("wo", random_tensor(DataType::kFloat32, {27, c, 3, 3}, rng, -0.2, 0.2));
  m.initializer("wd", random_tensor(DataType::kFloat32, {c, c, 3, 3}, rng, -0.3, 0.3));
  m.initializer("bd", random_tensor(DataType::kFloat32, {c}, rng));
  m.initializer("wc", random_tensor(DataType::kFloat32, {c, c, 1, 1}, rng, -0.5, 0.5));
  m.initializer("split", Tensor::vector_int64({18, 9}));
  m.node("Conv", {"x", "wa"}, {"a"}, "conv_a");
  OnnxModelBuilder::attr(m.node("Conv", {"a", "wo"}, {"om"}, "conv_offset"), "pads", std::vector<int64_t>{1, 1, 1, 1});
  OnnxModelBuilder::attr(m.node("Split", {"om", "split"}, {"offset", "mask_logits"}, "split"), "axis", int64_t{1});
  m.node("Sigmoid", {"mask_logits"}, {"mask"}, "sigmoid");
  auto& dcn = m.node("ModulatedDeformConv2d", {"a", "offset", "mask", "wd", "bd"}, {"d"}, "dcn", "ai.onnx.contrib");
  OnnxModelBuilder::attr(dcn, "padding", std::vector<int64_t>{1, 1});
  m.node("Relu", {"d"}, {"r"}, "relu");
  m.node("Conv", {"r", "wc"}, {"y"}, "conv_c");
  m.output("y", DataType::kFloat32);
  std::map<std::string, Tensor> in{{"x", random_tensor(DataType::kFloat32, {2, c, 6, 5}, rng)}};
  auto want = run_on_cpu(imported(m.bytes()), in);

  auto g = through_nhwc_pass(m.bytes(), every_conv);
  const Node* dcn_node = nullptr;
  for (const auto& node : g->nodes())
    if (node->op_type == "ModulatedDeformConv2d") dcn_node = node.get();
  ASSERT_NE(dcn_node, nullptr);
  EXPECT_TRUE(dcn_node->attrs.get_int("graft_channels_last_io", 0).value() == 1);
  EXPECT_NE(dcn_node->input(0)->producer->op_type, "Transpose") << "x comes from the region";
  for (const auto& node : g->nodes())
    if (node->op_type == "Relu") EXPECT_EQ(node->input(0), dcn_node->outputs[0]) << "the output stays in the region";
  // x's entry, the offset/mask Conv's exit to the op's NCHW offset input, y's exit.
  EXPECT_EQ(count_ops(*g, "Transpose"), 3);
  auto got = run_on_cpu(std::move(g), in);
  expect_close(got.at("y"), want.at("y"), "y");
}

// A permute whose output is also read elsewhere, or is a graph output, keeps its Transpose; the
// region's other readers still compute the same values.
TEST(FusionConv, SharedModelPermutesStay) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2, 4, 5, 6});
  m.initializer("w", random_tensor(DataType::kFloat32, {8, 4, 3, 3}, rng));
  m.initializer("shift", random_tensor(DataType::kFloat32, {1, 8, 1, 6}, rng));  // varies along W too
  OnnxModelBuilder::attr(m.node("Conv", {"x", "w"}, {"c"}, "conv"), "pads", std::vector<int64_t>{1, 1, 1, 1});
  OnnxModelBuilder::attr(m.node("Transpose", {"c"}, {"last"}, "to_last"), "perm", std::vector<int64_t>{0, 2, 3, 1});
  m.node("Relu", {"last"}, {"r"}, "relu");  // a plain [N,H,W,C] reader of the absorbed permute
  OnnxModelBuilder::attr(m.node("Transpose", {"r"}, {"back"}, "to_first"), "perm", std::vector<int64_t>{0, 3, 1, 2});
  m.node("Add", {"back", "shift"}, {"y"}, "shift_add");
  m.node("Sigmoid", {"back"}, {"z"}, "gate");  // a second reader of `back`
  m.output("y", DataType::kFloat32);
  m.output("z", DataType::kFloat32);
  m.output("last", DataType::kFloat32);  // a graph output: this permute stays
  std::map<std::string, Tensor> in{{"x", random_tensor(DataType::kFloat32, {2, 4, 5, 6}, rng)}};
  auto want = run_on_cpu(imported(m.bytes()), in);
  auto g = through_nhwc_pass(m.bytes(), every_conv);
  auto got = run_on_cpu(std::move(g), in);
  for (const char* o : {"y", "z", "last"}) expect_close(got.at(o), want.at(o), o);
}

// A squeeze-excitation gate whose squeeze width is not a multiple of 8 (EfficientNet-B0: 96 -> 4):
// its 1x1 convolutions over a 1x1 image are the same in both layouts, so they stay in the region
// even where `wanted` refuses them, and the gate's Mul needs no Transpose around it.
TEST(FusionConv, GateConvolutionsStayInTheRegion) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {"N", 8, 6, 5});
  m.initializer("w1", random_tensor(DataType::kFloat32, {16, 8, 3, 3}, rng));
  m.initializer("ws", random_tensor(DataType::kFloat32, {2, 16, 1, 1}, rng));
  m.initializer("bs", random_tensor(DataType::kFloat32, {2}, rng));
  m.initializer("we", random_tensor(DataType::kFloat32, {16, 2, 1, 1}, rng));
  m.initializer("be", random_tensor(DataType::kFloat32, {16}, rng));
  m.initializer("w2", random_tensor(DataType::kFloat32, {8, 16, 1, 1}, rng));
  OnnxModelBuilder::attr(m.node("Conv", {"x", "w1"}, {"c1"}, "conv1"), "pads", std::vector<int64_t>{1, 1, 1, 1});
  m.node("GlobalAveragePool", {"c1"}, {"p"}, "squeeze_pool");
  m.node("Conv", {"p", "ws", "bs"}, {"s1"}, "squeeze");
  m.node("Relu", {"s1"}, {"s2"}, "squeeze_act");
  m.node("Conv", {"s2", "we", "be"}, {"s3"}, "excite");
  m.node("Sigmoid", {"s3"}, {"s4"}, "gate");
  m.node("Mul", {"c1", "s4"}, {"scaled"}, "apply_gate");
  m.node("Conv", {"scaled", "w2"}, {"y"}, "project");
  m.output("y", DataType::kFloat32);
  std::map<std::string, Tensor> in{{"x", random_tensor(DataType::kFloat32, {3, 8, 6, 5}, rng)}};
  auto want = run_on_cpu(imported(m.bytes()), in);
  // As the CUDA builder's "auto" layout: channel counts that are multiples of 8 only.
  auto g = through_nhwc_pass(m.bytes(), [](const Node& n) {
    const auto& d = n.input(1)->constant->dims();
    return d[0] % 8 == 0 && d[1] % 8 == 0;
  });
  EXPECT_EQ(count_ops(*g, "Transpose"), 2) << "only x's and y's";
  for (const auto& node : g->nodes())
    if (node->op_type == "GraftConv") EXPECT_EQ(*node->attrs.get_string("layout", ""), "NHWC") << node->name;
  auto got = run_on_cpu(std::move(g), in);
  expect_close(got.at("y"), want.at("y"), "y");
}

TEST(FusionConv, SharedConvOutputIsNotFused) {
  std::mt19937 rng(7);
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {1, 2, 5, 5});
  m.initializer("w", random_tensor(DataType::kFloat32, {2, 2, 1, 1}, rng));
  m.node("Conv", {"x", "w"}, {"c"}, "conv");
  m.node("Relu", {"c"}, {"r"}, "relu");
  m.node("Add", {"c", "r"}, {"y"}, "add");  // c is read twice: the Relu cannot be absorbed
  m.output("y", DataType::kFloat32);
  auto g = imported(m.bytes());
  ASSERT_TRUE(fuse_conv_epilogues(*g).is_ok());
  EXPECT_EQ(count_ops(*g, "GraftConv"), 1);
  EXPECT_EQ(count_ops(*g, "Relu"), 1);
  EXPECT_EQ(count_ops(*g, "Add"), 1);
}

// ReLU6 (Clip 0..6, MobileNetV2) and SiLU as PyTorch exports it (x * Sigmoid(x), EfficientNet) join
// the convolution's epilogue, also behind a residual add; the fused graph computes the same values.
// A Clip with a bound computed at run time and a Sigmoid read by anything else stay separate.
TEST(FusionConv, ClipAndSiluJoinTheEpilogue) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2, 3, 7, 6});
  m.input("hi", DataType::kFloat32, {});
  m.initializer("w1", random_tensor(DataType::kFloat32, {4, 3, 3, 3}, rng));
  m.initializer("w2", random_tensor(DataType::kFloat32, {4, 1, 3, 3}, rng));  // depthwise
  m.initializer("w3", random_tensor(DataType::kFloat32, {4, 4, 1, 1}, rng));
  m.initializer("w4", random_tensor(DataType::kFloat32, {4, 4, 1, 1}, rng));
  m.initializer("b1", random_tensor(DataType::kFloat32, {4}, rng));
  m.initializer("lo", Tensor::from_doubles(DataType::kFloat32, {}, {0.}));
  m.initializer("top", Tensor::from_doubles(DataType::kFloat32, {}, {0.5}));  // small, so the clamp binds on random data
  OnnxModelBuilder::attr(m.node("Conv", {"x", "w1", "b1"}, {"c1"}, "c1"), "pads", std::vector<int64_t>{1, 1, 1, 1});
  m.node("Clip", {"c1", "lo", "top"}, {"r1"}, "relu6");
  auto& c2 = m.node("Conv", {"r1", "w2"}, {"c2"}, "c2");
  OnnxModelBuilder::attr(c2, "group", int64_t{4});
  OnnxModelBuilder::attr(c2, "pads", std::vector<int64_t>{1, 1, 1, 1});
  m.node("Add", {"c2", "r1"}, {"a2"}, "residual");
  m.node("Sigmoid", {"a2"}, {"s2"}, "sig");
  m.node("Mul", {"s2", "a2"}, {"y2"}, "silu");
  m.node("Conv", {"y2", "w3"}, {"c3"}, "c3");
  m.node("Clip", {"c3", "lo", "hi"}, {"y3"}, "clip_runtime_bound");  // hi is an input: not fused
  m.node("Conv", {"y3", "w4"}, {"c4"}, "c4");
  m.node("Sigmoid", {"c4"}, {"s4"}, "sig4");
  m.node("Mul", {"c4", "s4"}, {"y4"}, "silu4");
  m.node("Add", {"y4", "s4"}, {"y"}, "reads_sigmoid");  // s4 has a second reader: not fused
  m.output("y", DataType::kFloat32);
  Tensor hi = Tensor::from_doubles(DataType::kFloat32, {}, {0.7});
  std::map<std::string, Tensor> in{{"x", random_tensor(DataType::kFloat32, {2, 3, 7, 6}, rng)}, {"hi", hi}};
  auto want = run_on_cpu(imported(m.bytes()), in);

  auto fused = imported(m.bytes());
  auto n = fuse_conv_epilogues(*fused);
  ASSERT_TRUE(n.is_ok()) << n.status().to_string();
  EXPECT_EQ(*n, 4);
  ASSERT_TRUE(infer_shapes(*fused).is_ok());
  std::map<std::string, std::string> act;
  for (const auto& node : fused->nodes())
    if (node->op_type == "GraftConv") act[node->name] = *node->attrs.get_string("activation", "");
  EXPECT_EQ(act["c1"], "Clip");
  EXPECT_EQ(act["c2"], "Silu") << "residual add, then SiLU";
  EXPECT_EQ(act["c3"], "");
  EXPECT_EQ(act["c4"], "");
  EXPECT_EQ(count_ops(*fused, "Clip"), 1);
  EXPECT_EQ(count_ops(*fused, "Sigmoid"), 1);
  for (const auto& node : fused->nodes())
    if (node->name == "c1") {
      EXPECT_EQ(*node->attrs.get_float("clip_min", -1.f), 0.f);
      EXPECT_EQ(*node->attrs.get_float("clip_max", -1.f), 0.5f);
    }
  auto got = run_on_cpu(std::move(fused), in);
  expect_close(got.at("y"), want.at("y"), "fused y");
}

// DenseNet's pre-activation: Concat -> BatchNormalization -> Relu -> Conv. The BatchNormalization
// becomes a 1x1 depthwise Conv that takes the Relu into its epilogue; one whose reader is not an
// activation (an Add), one in training mode, and one after a Conv (fold_batchnorm's) stay. Outputs
// unchanged.
TEST(FusionConv, PreActivationBatchNormJoinsAConvEpilogue) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const int64_t c = 6;
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2, 4, 5, 7});
  m.input("u", DataType::kFloat32, {2, 2, 5, 7});
  auto stats = [&](const std::string& p) {
    m.initializer(p + "_scale", random_tensor(DataType::kFloat32, {c}, rng, 0.5, 2.0));
    m.initializer(p + "_shift", random_tensor(DataType::kFloat32, {c}, rng));
    m.initializer(p + "_mean", random_tensor(DataType::kFloat32, {c}, rng));
    m.initializer(p + "_var", random_tensor(DataType::kFloat32, {c}, rng, 0.1, 3.0));
    return std::vector<std::string>{p + "_scale", p + "_shift", p + "_mean", p + "_var"};
  };
  auto bn = [&](const std::string& name, const std::string& in, const std::string& out) -> auto& {
    std::vector<std::string> ins{in};
    for (const std::string& t : stats(name)) ins.push_back(t);
    auto& node = m.node("BatchNormalization", ins, {out}, name);
    OnnxModelBuilder::attr(node, "epsilon", 1e-3f);
    return node;
  };
  m.initializer("w", random_tensor(DataType::kFloat32, {c, c, 3, 3}, rng));
  OnnxModelBuilder::attr(m.node("Concat", {"x", "u"}, {"cat"}, "cat"), "axis", int64_t{1});
  bn("pre", "cat", "n1");
  m.node("Relu", {"n1"}, {"r1"}, "relu1");
  OnnxModelBuilder::attr(m.node("Conv", {"r1", "w"}, {"c1"}, "conv"), "pads", std::vector<int64_t>{1, 1, 1, 1});
  bn("post", "c1", "n2");  // folded into the Conv by fold_batchnorm, not this pass
  bn("other", "cat", "n3");
  m.node("Add", {"n3", "n2"}, {"a"}, "add");  // n3's reader is not an activation
  bn("clipped", "a", "n4");
  m.node("Sigmoid", {"n4"}, {"y"}, "gate");
  m.output("y", DataType::kFloat32);
  std::map<std::string, Tensor> in{{"x", random_tensor(DataType::kFloat32, {2, 4, 5, 7}, rng)},
                                   {"u", random_tensor(DataType::kFloat32, {2, 2, 5, 7}, rng)}};
  auto want = run_on_cpu(imported(m.bytes()), in);

  auto g = imported(m.bytes());
  ASSERT_TRUE(fold_batchnorm(*g).is_ok());
  auto n = batchnorm_activations_as_convs(*g);
  ASSERT_TRUE(n.is_ok()) << n.status().to_string();
  EXPECT_EQ(*n, 2) << "'pre' (Relu) and 'clipped' (Sigmoid)";
  ASSERT_TRUE(infer_shapes(*g).is_ok());
  ASSERT_TRUE(fuse_conv_epilogues(*g).is_ok());
  ASSERT_TRUE(infer_shapes(*g).is_ok());
  EXPECT_EQ(count_ops(*g, "BatchNormalization"), 1) << "only 'other' stays";
  EXPECT_EQ(count_ops(*g, "Relu"), 0);
  EXPECT_EQ(count_ops(*g, "Sigmoid"), 0);
  std::map<std::string, std::string> act;
  for (const auto& node : g->nodes())
    if (node->op_type == "GraftConv") act[node->name] = *node->attrs.get_string("activation", "");
  EXPECT_EQ(act["pre"], "Relu");
  EXPECT_EQ(act["clipped"], "Sigmoid");
  auto got = run_on_cpu(std::move(g), in);
  expect_close(got.at("y"), want.at("y"), "y");

  // Training mode is left alone.
  OnnxModelBuilder t;
  t.input("x", DataType::kFloat32, {2, c, 3, 3});
  for (const char* s : {"t_scale", "t_shift", "t_mean", "t_var"})
    t.initializer(s, random_tensor(DataType::kFloat32, {c}, rng, 0.5, 2.0));
  auto& tn = t.node("BatchNormalization", {"x", "t_scale", "t_shift", "t_mean", "t_var"}, {"n"}, "train");
  OnnxModelBuilder::attr(tn, "training_mode", int64_t{1});
  t.node("Relu", {"n"}, {"y"}, "relu");
  t.output("y", DataType::kFloat32);
  auto tg = imported(t.bytes());
  auto tr = batchnorm_activations_as_convs(*tg);
  ASSERT_TRUE(tr.is_ok()) << tr.status().to_string();
  EXPECT_EQ(*tr, 0);
}

// A squeeze-excitation gate (EfficientNet): GlobalAveragePool -> Conv -> Silu -> Conv -> Sigmoid ->
// Mul(x, gate), and MobileNetV3's with HardSigmoid. The gate joins the second conv's epilogue;
// outputs unchanged.
TEST(FusionConv, SigmoidGateJoinsTheEpilogue) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (const char* gate_op : {"Sigmoid", "HardSigmoid"}) {
    SCOPED_TRACE(gate_op);
    OnnxModelBuilder m;
    m.input("x", DataType::kFloat32, {2, 8, 5, 4});
    m.initializer("w1", random_tensor(DataType::kFloat32, {2, 8, 1, 1}, rng));
    m.initializer("b1", random_tensor(DataType::kFloat32, {2}, rng));
    m.initializer("w2", random_tensor(DataType::kFloat32, {8, 2, 1, 1}, rng));
    m.initializer("b2", random_tensor(DataType::kFloat32, {8}, rng));
    m.node("GlobalAveragePool", {"x"}, {"g"}, "squeeze");
    m.node("Conv", {"g", "w1", "b1"}, {"c1"}, "reduce");
    m.node("Sigmoid", {"c1"}, {"s1"}, "sig1");
    m.node("Mul", {"c1", "s1"}, {"a1"}, "silu");
    m.node("Conv", {"a1", "w2", "b2"}, {"c2"}, "expand");
    auto& gate = m.node(gate_op, {"c2"}, {"gate"}, "gate");
    if (std::string(gate_op) == "HardSigmoid") OnnxModelBuilder::attr(gate, "alpha", 1.f / 6.f);  // PyTorch's
    m.node("Mul", {"x", "gate"}, {"y"}, "excite");
    m.output("y", DataType::kFloat32);
    std::map<std::string, Tensor> in{{"x", random_tensor(DataType::kFloat32, {2, 8, 5, 4}, rng)}};
    auto want = run_on_cpu(imported(m.bytes()), in);
    auto fused = imported(m.bytes());
    auto n = fuse_conv_epilogues(*fused);
    ASSERT_TRUE(n.is_ok()) << n.status().to_string();
    EXPECT_EQ(*n, 2);
    ASSERT_TRUE(infer_shapes(*fused).is_ok());
    EXPECT_EQ(count_ops(*fused, gate_op), 0);
    for (const auto& node : fused->nodes())
      if (node->name == "expand") EXPECT_EQ(*node->attrs.get_string("activation", ""), gate_op);
    auto got = run_on_cpu(std::move(fused), in);
    expect_close(got.at("y"), want.at("y"), "y");
  }
}

// Under a dynamic batch the residual's shape and the convolution's are the same expression
// ([N, 4, 5, 5]) rather than numbers: the residual add still joins the epilogue.
TEST(FusionConv, ResidualFusesUnderDynamicBatch) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {"N", 4, 5, 5});
  m.initializer("w", random_tensor(DataType::kFloat32, {4, 4, 3, 3}, rng));
  m.initializer("b", random_tensor(DataType::kFloat32, {4}, rng));
  OnnxModelBuilder::attr(m.node("Conv", {"x", "w", "b"}, {"c"}, "conv"), "pads", std::vector<int64_t>{1, 1, 1, 1});
  m.node("Add", {"c", "x"}, {"a"}, "residual");
  m.node("Relu", {"a"}, {"y"}, "relu");
  m.output("y", DataType::kFloat32);
  std::map<std::string, Tensor> in{{"x", random_tensor(DataType::kFloat32, {3, 4, 5, 5}, rng)}};
  auto want = run_on_cpu(imported(m.bytes()), in);
  auto fused = imported(m.bytes());
  auto n = fuse_conv_epilogues(*fused);
  ASSERT_TRUE(n.is_ok()) << n.status().to_string();
  ASSERT_TRUE(infer_shapes(*fused).is_ok());
  EXPECT_EQ(count_ops(*fused, "Add"), 0);
  EXPECT_EQ(count_ops(*fused, "Relu"), 0);
  ASSERT_EQ(fused->nodes().size(), 1u);
  EXPECT_EQ(fused->nodes()[0]->inputs.size(), 4u) << "X, W, B and the residual";
  auto got = run_on_cpu(std::move(fused), in);
  expect_close(got.at("y"), want.at("y"), "fused y");
}

TEST(FusionConv, ClipActivationNeedsOrderedBounds) {
  std::mt19937 rng(5);
  for (int missing = 0; missing < 2; ++missing) {
    OnnxModelBuilder m;
    m.input("x", DataType::kFloat32, {1, 2, 5, 5});
    m.initializer("w", random_tensor(DataType::kFloat32, {2, 2, 1, 1}, rng));
    auto& n = m.node("GraftConv", {"x", "w"}, {"y"}, "fused");
    OnnxModelBuilder::attr(n, "activation", "Clip");
    OnnxModelBuilder::attr(n, "clip_min", 1.0f);
    if (!missing) OnnxModelBuilder::attr(n, "clip_max", 0.5f);
    m.output("y", DataType::kFloat32);
    Status eng = testing::load_plan_graph(m.bytes());
    ASSERT_FALSE(eng.is_ok());
    const std::string msg = eng.to_string();
    EXPECT_NE(msg.find(missing ? "clip_max" : "exceeds clip_max"), std::string::npos) << msg;
    EXPECT_NE(msg.find("fused"), std::string::npos) << msg;
  }
}

TEST(FusionConv, BadInternalAttributesAreNamed) {
  std::mt19937 rng(3);
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {1, 2, 5, 5});
  m.initializer("w", random_tensor(DataType::kFloat32, {2, 2, 1, 1}, rng));
  OnnxModelBuilder::attr(m.node("GraftConv", {"x", "w"}, {"y"}, "fused"), "activation", "Gelu");
  m.output("y", DataType::kFloat32);
  Status eng = testing::load_plan_graph(m.bytes());
  ASSERT_FALSE(eng.is_ok());
  const std::string msg = eng.to_string();
  EXPECT_NE(msg.find("activation"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fused"), std::string::npos) << msg;
  // The input activation's name and bounds are checked the same way, under their own names.
  for (int bad = 0; bad < 2; ++bad) {
    OnnxModelBuilder b;
    b.input("x", DataType::kFloat32, {1, 2, 5, 5});
    b.initializer("w", random_tensor(DataType::kFloat32, {2, 2, 1, 1}, rng));
    auto& n = b.node("GraftConv", {"x", "w"}, {"y"}, "fused");
    OnnxModelBuilder::attr(n, "input_activation", bad == 0 ? "Gelu" : "Clip");
    if (bad == 1) {
      OnnxModelBuilder::attr(n, "input_clip_min", 1.f);
      OnnxModelBuilder::attr(n, "input_clip_max", 0.f);
    }
    b.output("y", DataType::kFloat32);
    Status st = testing::load_plan_graph(b.bytes());
    ASSERT_FALSE(st.is_ok()) << bad;
    const std::string text = st.to_string();
    EXPECT_NE(text.find(bad == 0 ? "input_activation" : "input_clip_min"), std::string::npos) << text;
    EXPECT_NE(text.find("fused"), std::string::npos) << text;
  }
}

TEST(FusionConv, BadPoolAndLayoutAttributesAreNamed) {
  std::mt19937 rng(5);
  struct Case {
    const char* op;
    const char* attr;
    const char* value;
  };
  for (const Case& c : {Case{"GraftPool", "pool", "MedianPool"}, Case{"GraftPool", "layout", "NCHW"},
                        Case{"GraftConv", "layout", "CHWN"}}) {
    OnnxModelBuilder m;
    m.input("x", DataType::kFloat32, {1, 4, 4, 2});
    std::vector<std::string> ins{"x"};
    if (std::string(c.op) == "GraftConv") {
      m.initializer("w", random_tensor(DataType::kFloat32, {2, 1, 1, 2}, rng));
      ins.push_back("w");
    }
    auto& n = m.node(c.op, ins, {"y"}, "internal");
    if (std::string(c.op) == "GraftPool" && std::string(c.attr) != "pool") OnnxModelBuilder::attr(n, "pool", "MaxPool");
    OnnxModelBuilder::attr(n, c.attr, c.value);
    m.output("y", DataType::kFloat32);
    Status eng = testing::load_plan_graph(m.bytes());
    ASSERT_FALSE(eng.is_ok()) << c.op << " " << c.attr << "=" << c.value;
    const std::string msg = eng.to_string();
    EXPECT_NE(msg.find("internal"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::string(c.attr) == "layout" && std::string(c.op) == "GraftPool" ? "NHWC" : c.attr),
              std::string::npos)
        << msg;
  }
}

// A float16 stem over 3 channels behind the model's input Cast (what the fp16 pass makes of an
// image model) joins the NHWC region: one GraftChannelsLast reads the float32 image, pads it to 8
// channels and takes the Cast's place; the filter is padded the same way, so the MaxPool after the
// stem is in the region too and only the graph output is transposed. A Cast that something else
// also reads stays. Outputs match the model's own on fresh random data.
TEST(FusionConv, StemJoinsTheRegionThroughPaddedChannelsLast) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (bool shared_cast : {false, true}) {
    SCOPED_TRACE(shared_cast ? "the Cast is also a graph output" : "the Cast feeds only the stem");
    OnnxModelBuilder m;
    m.input("x", DataType::kFloat32, {2, 3, 11, 10});
    m.initializer("w", random_tensor(DataType::kFloat16, {16, 3, 3, 3}, rng));
    m.initializer("b", random_tensor(DataType::kFloat16, {16}, rng));
    m.initializer("w2", random_tensor(DataType::kFloat16, {8, 16, 1, 1}, rng));
    OnnxModelBuilder::attr(m.node("Cast", {"x"}, {"xh"}, "input_to_fp16"), "to", int64_t{10});
    auto& stem = m.node("Conv", {"xh", "w", "b"}, {"c"}, "stem");
    OnnxModelBuilder::attr(stem, "pads", std::vector<int64_t>{1, 1, 1, 1});
    OnnxModelBuilder::attr(stem, "strides", std::vector<int64_t>{2, 2});
    m.node("Relu", {"c"}, {"r"}, "relu");
    auto& pool = m.node("MaxPool", {"r"}, {"p"}, "pool");
    OnnxModelBuilder::attr(pool, "kernel_shape", std::vector<int64_t>{2, 2});
    m.node("Conv", {"p", "w2"}, {"y"}, "head");
    m.output("y", DataType::kFloat16);
    if (shared_cast) m.output("xh", DataType::kFloat16);
    std::map<std::string, Tensor> in{{"x", random_tensor(DataType::kFloat32, {2, 3, 11, 10}, rng)}};
    auto want = run_on_cpu(imported(m.bytes()), in);

    auto g = imported(m.bytes());
    ASSERT_TRUE(fuse_conv_epilogues(*g).is_ok());
    auto wide = [](const Node& n) { return n.input(1)->constant->dims()[1] % 8 == 0; };
    auto stem8 = [](const Node& n) -> int64_t { return n.input(1)->constant->dims()[1] < 8 ? 8 : 0; };
    auto moved = convert_conv_regions_to_nhwc(*g, wide, stem8);
    ASSERT_TRUE(moved.is_ok()) << moved.status().to_string();
    Status inferred = infer_shapes(*g);
    ASSERT_TRUE(inferred.is_ok()) << inferred.to_string();
    EXPECT_EQ(count_ops(*g, "GraftChannelsLast"), 1);
    EXPECT_EQ(count_ops(*g, "Cast"), shared_cast ? 1 : 0);
    EXPECT_EQ(count_ops(*g, "GraftPool"), 1) << "the pool after the stem is in the region";
    EXPECT_EQ(count_ops(*g, "Transpose"), 1) << "only the graph output goes back to NCHW";
    for (const auto& node : g->nodes()) {
      if (node->op_type == "GraftChannelsLast")
        EXPECT_EQ(node->input(0)->desc.dtype, shared_cast ? DataType::kFloat16 : DataType::kFloat32);
      if (node->name == "stem") {
        EXPECT_EQ(*node->attrs.get_string("layout", ""), "NHWC");
        EXPECT_EQ(node->input(1)->constant->dims(), (std::vector<int64_t>{16, 3, 3, 8})) << "OHWI, padded to 8";
      }
    }
    auto got = run_on_cpu(std::move(g), in);
    expect_fp16_close(got.at("y"), want.at("y"), "y");
    if (shared_cast) expect_close(got.at("xh"), want.at("xh"), "xh");
  }
}

// A strided stem over 3 channels reads the image space to depth: one GraftChannelsLast with a
// block, a stride-1 filter of ceil(k/s) taps over s*s*3 channels (rounded up to 8), and the same
// outputs as the model's own on fresh random data. ResNet's 7x7/2, AlexNet's 11x11/4, a 7x7/2 on
// odd extents, a MobileNet's 3x3/2, and a 5x5/3 over one channel (the generic kernel's kind). A
// stem the rearrangement does not fit (dilated) keeps the padded channels.
TEST(FusionConv, StridedStemReadsTheImageSpaceToDepth) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  struct Stem {
    int64_t c, h, w, k, s;
    std::vector<int64_t> pads;
    int64_t dilation, want_channels;  // want_channels 0: no rearrangement
  };
  for (const Stem& t : {Stem{3, 23, 22, 7, 2, {3, 3, 3, 3}, 1, 16}, Stem{3, 31, 29, 11, 4, {2, 2, 2, 2}, 1, 48},
                        Stem{3, 13, 11, 7, 2, {3, 3, 3, 3}, 1, 16}, Stem{1, 17, 16, 5, 3, {2, 2, 2, 2}, 1, 16},
                        Stem{3, 15, 15, 3, 2, {2, 2, 2, 2}, 2, 0}, Stem{3, 15, 14, 3, 2, {1, 1, 1, 1}, 1, 16}}) {
    SCOPED_TRACE("k " + std::to_string(t.k) + " s " + std::to_string(t.s));
    OnnxModelBuilder m;
    m.input("x", DataType::kFloat32, {2, t.c, t.h, t.w});
    m.initializer("w", random_tensor(DataType::kFloat16, {16, t.c, t.k, t.k}, rng));
    m.initializer("b", random_tensor(DataType::kFloat16, {16}, rng));
    OnnxModelBuilder::attr(m.node("Cast", {"x"}, {"xh"}, "input_to_fp16"), "to", int64_t{10});
    auto& stem = m.node("Conv", {"xh", "w", "b"}, {"c"}, "stem");
    OnnxModelBuilder::attr(stem, "pads", t.pads);
    OnnxModelBuilder::attr(stem, "strides", std::vector<int64_t>{t.s, t.s});
    OnnxModelBuilder::attr(stem, "dilations", std::vector<int64_t>{t.dilation, t.dilation});
    m.node("Relu", {"c"}, {"y"}, "relu");
    m.output("y", DataType::kFloat16);
    std::map<std::string, Tensor> in{{"x", random_tensor(DataType::kFloat32, {2, t.c, t.h, t.w}, rng)}};
    auto want = run_on_cpu(imported(m.bytes()), in);

    auto g = imported(m.bytes());
    ASSERT_TRUE(fuse_conv_epilogues(*g).is_ok());
    auto wide = [](const Node& n) { return n.input(1)->constant->dims()[1] % 8 == 0; };
    auto stem8 = [](const Node& n) -> int64_t { return n.input(1)->constant->dims()[1] < 8 ? 8 : 0; };
    auto moved = convert_conv_regions_to_nhwc(*g, wide, stem8, /*stem_space_to_depth=*/true);
    ASSERT_TRUE(moved.is_ok()) << moved.status().to_string();
    Status inferred = infer_shapes(*g);
    ASSERT_TRUE(inferred.is_ok()) << inferred.to_string();
    ASSERT_EQ(count_ops(*g, "GraftChannelsLast"), 1);
    for (const auto& node : g->nodes()) {
      if (node->op_type == "GraftChannelsLast")
        EXPECT_EQ(*node->attrs.get_int("block", 1), t.want_channels ? t.s : 1);
      if (node->name != "stem") continue;
      const int64_t k2 = (t.k + t.s - 1) / t.s;
      if (t.want_channels) {
        EXPECT_EQ(node->input(1)->constant->dims(), (std::vector<int64_t>{16, k2, k2, t.want_channels}));
        EXPECT_EQ(*node->attrs.get_ints("strides", {}), (std::vector<int64_t>{1, 1}));
        EXPECT_EQ(*node->attrs.get_ints("pads", {}), (std::vector<int64_t>{0, 0, 0, 0}));
      } else {
        EXPECT_EQ(node->input(1)->constant->dims(), (std::vector<int64_t>{16, t.k, t.k, 8})) << "padded, not rearranged";
      }
    }
    auto got = run_on_cpu(std::move(g), in);
    expect_fp16_close(got.at("y"), want.at("y"), "y");
  }
}

// An inverted-residual block (1x1 expansion with ReLU6, HardSwish or SiLU, 3x3 depthwise, 1x1
// projection): the expansion's activation moves to the depthwise convolution's input (Relu or
// nothing stays with the expansion) and the outputs match the model's own on fresh random data.
// An expansion read by two nodes keeps its activation.
TEST(FusionConv, ExpansionActivationDefersToTheDepthwiseReader) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (const char* act : {"Clip", "HardSwish", "Silu"})
    for (bool shared : {false, true}) {
      SCOPED_TRACE(std::string(act) + (shared ? ", expansion also a graph output" : ""));
      OnnxModelBuilder m;
      m.input("x", DataType::kFloat32, {2, 8, 7, 6});
      m.initializer("we", random_tensor(DataType::kFloat32, {16, 8, 1, 1}, rng));
      m.initializer("be", random_tensor(DataType::kFloat32, {16}, rng));
      m.initializer("wd", random_tensor(DataType::kFloat32, {16, 1, 3, 3}, rng));
      m.initializer("wp", random_tensor(DataType::kFloat32, {8, 16, 1, 1}, rng));
      m.initializer("lo", Tensor::from_doubles(DataType::kFloat32, {}, {0.}));
      m.initializer("hi", Tensor::from_doubles(DataType::kFloat32, {}, {0.5}));  // low enough that the upper bound binds on random data
      m.node("Conv", {"x", "we", "be"}, {"e"}, "expand");
      const std::string a = act;
      if (a == "Clip") {
        m.node("Clip", {"e", "lo", "hi"}, {"ea"}, "expand_act");
      } else if (a == "HardSwish") {
        m.node("HardSwish", {"e"}, {"ea"}, "expand_act");
      } else {
        m.node("Sigmoid", {"e"}, {"es"}, "expand_sigmoid");
        m.node("Mul", {"e", "es"}, {"ea"}, "expand_act");
      }
      auto& dw = m.node("Conv", {"ea", "wd"}, {"d"}, "depthwise");
      OnnxModelBuilder::attr(dw, "group", int64_t{16});
      OnnxModelBuilder::attr(dw, "pads", std::vector<int64_t>{1, 1, 1, 1});
      m.node("Conv", {"d", "wp"}, {"y"}, "project");
      m.output("y", DataType::kFloat32);
      if (shared) m.output("ea", DataType::kFloat32);
      std::map<std::string, Tensor> in{{"x", random_tensor(DataType::kFloat32, {2, 8, 7, 6}, rng)}};
      auto want = run_on_cpu(imported(m.bytes()), in);
      // As the builder runs it: straight after the NHWC pass, before shapes are inferred again.
      auto g = imported(m.bytes());
      ASSERT_TRUE(fuse_conv_epilogues(*g).is_ok());
      ASSERT_TRUE(convert_conv_regions_to_nhwc(*g, every_conv).is_ok());
      auto moved = defer_activations_to_depthwise(*g);
      ASSERT_TRUE(moved.is_ok()) << moved.status().to_string();
      EXPECT_EQ(*moved, shared ? 0 : 1);
      ASSERT_TRUE(infer_shapes(*g).is_ok());
      for (const auto& node : g->nodes()) {
        if (node->op_type != "GraftConv") continue;
        if (node->name == "depthwise")
          EXPECT_EQ(*node->attrs.get_string("input_activation", ""), shared ? "" : a);
        if (node->name == "expand")
          EXPECT_EQ(*node->attrs.get_string("activation", ""), shared ? a : (a == "Clip" ? "Relu" : ""));
      }
      auto got = run_on_cpu(std::move(g), in);
      expect_close(got.at("y"), want.at("y"), "y");
    }
}

// An Inception-style Concat of conv branches along the channels stays in the region (axis 3 in
// NHWC), including a branch that was NCHW (it is transposed in) and a negative axis; a Concat along
// another axis maps that axis. Outputs match the model's own on fresh random data.
TEST(FusionConv, ConcatOfBranchesStaysInTheRegion) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (int64_t axis : {1, -3, 2}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    OnnxModelBuilder m;
    m.input("x", DataType::kFloat32, {2, 8, 6, 6});
    m.input("side", DataType::kFloat32, {2, 8, 6, 6});  // an NCHW branch from outside the region
    m.initializer("w1", random_tensor(DataType::kFloat32, {8, 8, 1, 1}, rng));
    m.initializer("w3", random_tensor(DataType::kFloat32, {8, 8, 3, 3}, rng));
    m.initializer("wo", random_tensor(DataType::kFloat32, {8, axis == 2 ? 8 : 24, 1, 1}, rng));
    m.node("Conv", {"x", "w1"}, {"b1"}, "branch1");
    OnnxModelBuilder::attr(m.node("Conv", {"x", "w3"}, {"b3"}, "branch3"), "pads", std::vector<int64_t>{1, 1, 1, 1});
    OnnxModelBuilder::attr(m.node("Concat", {"b1", "b3", "side"}, {"cat"}, "concat"), "axis", axis);
    m.node("Relu", {"cat"}, {"r"}, "relu");
    m.node("Conv", {"r", "wo"}, {"y"}, "head");
    m.output("y", DataType::kFloat32);
    std::map<std::string, Tensor> in{{"x", random_tensor(DataType::kFloat32, {2, 8, 6, 6}, rng)},
                                     {"side", random_tensor(DataType::kFloat32, {2, 8, 6, 6}, rng)}};
    auto want = run_on_cpu(imported(m.bytes()), in);
    auto g = through_nhwc_pass(m.bytes(), every_conv);
    EXPECT_EQ(count_ops(*g, "Transpose"), 3) << "x and side in, y out: none around the Concat";
    for (const auto& node : g->nodes())
      if (node->op_type == "Concat") EXPECT_EQ(*node->attrs.get_int("axis", -1), axis == 2 ? 1 : 3);
    auto got = run_on_cpu(std::move(g), in);
    expect_close(got.at("y"), want.at("y"), "y");
  }
}

// GraftChannelsLast's reference against a hand loop, float32 -> float16 with padding; and its
// attribute errors name the node and the attribute.
TEST(FusionConv, ChannelsLastReferenceAndErrors) {
  std::mt19937 rng(std::random_device{}());
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2, 3, 4, 5});
  auto& n = m.node("GraftChannelsLast", {"x"}, {"y"}, "to_last");
  OnnxModelBuilder::attr(n, "channels", int64_t{8});
  OnnxModelBuilder::attr(n, "to", static_cast<int64_t>(DataType::kFloat16));
  m.output("y", DataType::kFloat16);
  Tensor x = random_tensor(DataType::kFloat32, {2, 3, 4, 5}, rng);
  auto got = run_on_cpu(imported(m.bytes()), {{"x", x}});
  const Tensor& y = got.at("y");
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, 4, 5, 8}));
  ASSERT_EQ(y.dtype(), DataType::kFloat16);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t p = 0; p < 20; ++p)
      for (int64_t c = 0; c < 8; ++c) {
        const double want = c < 3 ? x.get((b * 3 + c) * 20 + p) : 0.0;
        ASSERT_NEAR(y.get((b * 20 + p) * 8 + c), want, 1e-3 * (1 + std::fabs(want))) << b << " " << p << " " << c;
      }
  for (auto [attr, value] : {std::pair<const char*, int64_t>{"channels", 2}, {"channels", 0}, {"to", 7}}) {
    OnnxModelBuilder bad;
    bad.input("x", DataType::kFloat32, {1, 3, 2, 2});
    auto& b = bad.node("GraftChannelsLast", {"x"}, {"y"}, "to_last");
    OnnxModelBuilder::attr(b, "channels", std::string(attr) == "channels" ? value : int64_t{8});
    if (std::string(attr) == "to") OnnxModelBuilder::attr(b, "to", value);
    bad.output("y", DataType::kFloat32);
    Status eng = testing::load_plan_graph(bad.bytes());
    ASSERT_FALSE(eng.is_ok()) << attr << "=" << value;
    const std::string msg = eng.to_string();
    EXPECT_NE(msg.find("to_last"), std::string::npos) << msg;
    EXPECT_NE(msg.find(attr), std::string::npos) << msg;
  }
}

// GraftChannelsLast with a block against a hand loop of its definition, float32 -> float16, pads
// on every side (one negative: the last row cropped); its block and pads errors name the attribute.
TEST(FusionConv, SpaceToDepthReferenceAndErrors) {
  std::mt19937 rng(std::random_device{}());
  const int64_t n = 2, c = 3, h = 7, w = 6, s = 2, top = 1, left = 2, bottom = -1, right = 1, cp = 16;
  const int64_t oh = (h + top + bottom) / s, ow = (w + left + right) / s;
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {n, c, h, w});
  auto& node = m.node("GraftChannelsLast", {"x"}, {"y"}, "to_blocks");
  OnnxModelBuilder::attr(node, "channels", cp);
  OnnxModelBuilder::attr(node, "to", static_cast<int64_t>(DataType::kFloat16));
  OnnxModelBuilder::attr(node, "block", s);
  OnnxModelBuilder::attr(node, "pads", std::vector<int64_t>{top, left, bottom, right});
  m.output("y", DataType::kFloat16);
  Tensor x = random_tensor(DataType::kFloat32, {n, c, h, w}, rng);
  auto got = run_on_cpu(imported(m.bytes()), {{"x", x}});
  const Tensor& y = got.at("y");
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{n, oh, ow, cp}));
  int64_t nonzero = 0;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        for (int64_t dy = 0; dy < s; ++dy)
          for (int64_t dx = 0; dx < s; ++dx)
            for (int64_t ch = 0; ch < cp / (s * s); ++ch) {
              const int64_t k = (dy * s + dx) * c + ch, r = s * i + dy - top, col = s * j + dx - left;
              double want = 0.0;
              if (ch < c && r >= 0 && r < h && col >= 0 && col < w) want = x.get(((b * c + ch) * h + r) * w + col);
              if (ch >= c) continue;
              nonzero += want != 0.0;
              ASSERT_NEAR(y.get(((b * oh + i) * ow + j) * cp + k), want, 1e-3 * (1 + std::fabs(want)))
                  << b << " " << i << " " << j << " " << k;
            }
  EXPECT_GT(nonzero, 0);
  for (int64_t b = 0; b < n * oh * ow; ++b)
    for (int64_t k = s * s * c; k < cp; ++k) ASSERT_EQ(y.get(b * cp + k), 0.0) << "padding channel " << k;
  struct Bad {
    const char* attr;
    int64_t block;
    std::vector<int64_t> pads;
    int64_t channels;
  };
  for (const Bad& bad : {Bad{"block", 0, {0, 0, 0, 0}, 16}, Bad{"pads", 2, {0, 0, 0}, 16}, Bad{"channels", 2, {0, 0, 0, 0}, 8},
                         Bad{"pads", 2, {0, 0, -9, 0}, 16}, Bad{"pads", 2, {0, 0, 999, 0}, 16}}) {
    OnnxModelBuilder bm;
    bm.input("x", DataType::kFloat32, {1, 3, 4, 4});
    auto& b = bm.node("GraftChannelsLast", {"x"}, {"y"}, "to_blocks");
    OnnxModelBuilder::attr(b, "channels", bad.channels);
    OnnxModelBuilder::attr(b, "block", bad.block);
    OnnxModelBuilder::attr(b, "pads", bad.pads);
    bm.output("y", DataType::kFloat32);
    Status eng = testing::load_plan_graph(bm.bytes());
    ASSERT_FALSE(eng.is_ok()) << bad.attr;
    const std::string msg = eng.to_string();
    EXPECT_NE(msg.find("to_blocks"), std::string::npos) << msg;
    if (std::string(bad.attr) != "pads" || bad.pads.size() != 4 || bad.pads[2] > 0)
      EXPECT_NE(msg.find(bad.attr), std::string::npos) << msg;
  }
}

TEST(FusionConv, PermuteRank4RoundTrips) {
  std::mt19937 rng(11);
  Tensor t = random_tensor(DataType::kFloat32, {2, 3, 4, 5}, rng);
  Tensor nhwc = permute_rank4(t, kNchwToNhwc);
  ASSERT_EQ(nhwc.dims(), (std::vector<int64_t>{2, 4, 5, 3}));
  EXPECT_EQ(nhwc.get(((1 * 4 + 2) * 5 + 3) * 3 + 1), t.get(((1 * 3 + 1) * 4 + 2) * 5 + 3));
  Tensor back = permute_rank4(nhwc, kNhwcToNchw);
  for (int64_t i = 0; i < t.numel(); ++i) ASSERT_EQ(back.get(i), t.get(i));
}

}  // namespace
}  // namespace graft
