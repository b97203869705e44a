// Graph passes: BN folding numerics, constant folding, dead nodes, identities, custom-op inference.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <set>

#include "graft/engine.h"
#include "graft/registry.h"
#include "graph/dim_expr_builder.h"
#include "graph/passes.h"
#include "onnx/importer.h"
#include "runtime/cpu_executor.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/op_test_util.h"

namespace graft {
namespace {

using testing::OnnxModelBuilder;
using testing::random_tensor;

// Naive direct convolution (NCHW, stride 1, no padding, groups 1): the test's own reference.
Tensor naive_conv(const Tensor& x, const Tensor& w, const Tensor& b) {
  int64_t n = x.dims()[0], c = x.dims()[1], h = x.dims()[2], wd = x.dims()[3];
  int64_t m = w.dims()[0], kh = w.dims()[2], kw = w.dims()[3];
  int64_t oh = h - kh + 1, ow = wd - kw + 1;
  Tensor y = Tensor::empty(DataType::kFloat64, {n, m, oh, ow});
  for (int64_t in = 0; in < n; ++in)
    for (int64_t om = 0; om < m; ++om)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = b.get(om);
          for (int64_t ic = 0; ic < c; ++ic)
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t e = 0; e < kw; ++e)
                acc += x.get(((in * c + ic) * h + i + a) * wd + j + e) * w.get(((om * c + ic) * kh + a) * kw + e);
          y.set(((in * m + om) * oh + i) * ow + j, acc);
        }
  return y;
}

TEST(Passes, ConvBatchNormFoldingNumerics) {
  uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const int64_t C = 3, M = 4;
  Tensor w = random_tensor(DataType::kFloat32, {M, C, 3, 3}, rng);
  Tensor b = random_tensor(DataType::kFloat32, {M}, rng);
  Tensor scale = random_tensor(DataType::kFloat32, {M}, rng, 0.5, 2.0);
  Tensor shift = random_tensor(DataType::kFloat32, {M}, rng);
  Tensor mean = random_tensor(DataType::kFloat32, {M}, rng);
  Tensor var = random_tensor(DataType::kFloat32, {M}, rng, 0.1, 3.0);
  const float eps = 1e-3f;
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2, C, 6, 5});
  m.initializer("w", w);
  m.initializer("b", b);
  for (auto& [name, t] : std::vector<std::pair<std::string, Tensor>>{{"scale", scale}, {"shift", shift}, {"mean", mean}, {"var", var}})
    m.initializer(name, t);
  m.node("Conv", {"x", "w", "b"}, {"c"}, "conv");
  OnnxModelBuilder::attr(m.node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"y"}, "bn"),
                         "epsilon", eps);
  m.output("y", DataType::kFloat32, {2, M, 4, 3});
  auto eng = Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, "convbn.onnx");
  ASSERT_TRUE(eng.is_ok()) << eng.status().to_string();
  std::string js = (*eng)->describe_json();
  EXPECT_EQ(js.find("BatchNormalization"), std::string::npos) << "BN was not folded:\n" << js;
  EXPECT_NE(js.find("\"Conv\""), std::string::npos);

  Tensor x = random_tensor(DataType::kFloat32, {2, C, 6, 5}, rng);
  std::map<std::string, Tensor> outs;
  auto ctx = (*eng)->create_context();
  ASSERT_TRUE((*ctx)->run({{"x", x}}, outs).is_ok());
  const Tensor& y = outs.at("y");
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, M, 4, 3}));
  Tensor conv = naive_conv(x, w, b);
  const int64_t hw = 12;
  for (int64_t i = 0; i < y.numel(); ++i) {
    int64_t ch = (i / hw) % M;
    double expect = (conv.get(i) - mean.get(ch)) / std::sqrt(var.get(ch) + eps) * scale.get(ch) + shift.get(ch);
    ASSERT_NEAR(y.get(i), expect, 1e-4 * (1 + std::fabs(expect))) << "index " << i;
  }
}

TEST(Passes, ConstantFoldingAndDeadNodes) {
  std::mt19937 rng(std::random_device{}());
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {4});
  m.initializer("a", random_tensor(DataType::kFloat32, {4}, rng));
  m.initializer("b", random_tensor(DataType::kFloat32, {4}, rng));
  m.node("Mul", {"a", "b"}, {"ab"}, "const_mul");
  m.node("Relu", {"ab"}, {"r"}, "const_relu");
  m.node("Add", {"x", "r"}, {"y"}, "live_add");
  m.node("Neg", {"x"}, {"unused"}, "dead_neg");
  m.output("y", DataType::kFloat32);
  auto g = import_onnx_bytes(m.bytes(), "fold.onnx");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  ASSERT_TRUE(infer_shapes(**g).is_ok());
  // Folding prunes the now unused initializers: keep them for the check.
  const Tensor a = *(*g)->find_value("a")->constant;
  const Tensor b = *(*g)->find_value("b")->constant;
  auto folded = fold_constants(**g, run_node_cpu);
  ASSERT_TRUE(folded.is_ok()) << folded.status().to_string();
  EXPECT_EQ(*folded, 2);
  const Value* r = (*g)->find_value("r");
  ASSERT_TRUE(r && r->constant);
  for (int64_t i = 0; i < 4; ++i) {
    float expect = std::max(0.0f, static_cast<float>(a.get(i)) * static_cast<float>(b.get(i)));
    EXPECT_FLOAT_EQ(static_cast<float>(r->constant->get(i)), expect);
  }
  EXPECT_EQ(eliminate_dead_nodes(**g), 1);
  ASSERT_EQ((*g)->nodes().size(), 1u);
  ASSERT_NE((*g)->find_value("r"), nullptr);
  EXPECT_EQ((*g)->nodes()[0]->name, "live_add");
  EXPECT_EQ((*g)->find_value("unused"), nullptr);
}

TEST(Passes, ShapeOfStaticTensorFoldsToConstant) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {"N", 3, 5});
  m.node("Shape", {"x"}, {"s"});
  m.initializer("idx", Tensor::vector_int64({1, 2}));
  m.node("Gather", {"s", "idx"}, {"tail"});
  m.output("tail", DataType::kInt64);
  auto g = import_onnx_bytes(m.bytes(), "shape.onnx");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  ASSERT_TRUE(infer_shapes(**g).is_ok());
  auto folded = fold_constants(**g, run_node_cpu);
  ASSERT_TRUE(folded.is_ok()) << folded.status().to_string();
  eliminate_dead_nodes(**g);
  const Value* tail = (*g)->find_value("tail");
  ASSERT_TRUE(tail != nullptr);
  ASSERT_TRUE(tail->constant.has_value()) << "Gather of the static part of a symbolic shape should fold";
  EXPECT_EQ(tail->constant->to_int64_vector(), (std::vector<int64_t>{3, 5}));
  EXPECT_TRUE((*g)->nodes().empty());
}

TEST(Passes, IdentityChainRemoved) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2});
  m.node("Identity", {"x"}, {"i1"});
  m.node("Relu", {"i1"}, {"r"});
  m.node("Identity", {"r"}, {"y"});
  m.output("y", DataType::kFloat32);
  auto g = import_onnx_bytes(m.bytes(), "id.onnx");
  ASSERT_TRUE(g.is_ok());
  EXPECT_EQ(remove_identities(**g), 2);
  ASSERT_EQ((*g)->nodes().size(), 1u);
  EXPECT_EQ((*g)->nodes()[0]->inputs[0]->name, "x");
  EXPECT_EQ((*g)->nodes()[0]->outputs[0]->name, "y");
  EXPECT_EQ((*g)->outputs()[0]->producer, (*g)->nodes()[0].get());
}

TEST(Passes, SameTypeCastRemovedOtherCastsKept) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2});
  m.node("Relu", {"x"}, {"r"});
  m.attr(m.node("Cast", {"r"}, {"same"}, "to_float"), "to", int64_t{1});
  m.attr(m.node("Cast", {"same"}, {"y"}, "to_half"), "to", int64_t{10});
  m.output("y", DataType::kFloat16);
  auto g = import_onnx_bytes(m.bytes(), "cast.onnx");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  ASSERT_TRUE(infer_shapes(**g));
  EXPECT_EQ(remove_identities(**g), 1);
  ASSERT_EQ((*g)->nodes().size(), 2u);
  EXPECT_EQ((*g)->nodes()[1]->name, "to_half");
  EXPECT_EQ((*g)->nodes()[1]->inputs[0]->name, "r");
  EXPECT_EQ(remove_identities(**g), 0);
}

// A Pad by zero and a Slice of whole axes copy their input and are bypassed; a Pad by one, a partial
// Slice, a reversing Slice of a whole axis and one ending at -1 are not. The engine's outputs match.
TEST(Passes, ZeroPadAndWholeSliceRemoved) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  auto ints = [](std::vector<int64_t> v) { return Tensor::vector_int64(v); };
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2, 6, 5, 4});
  m.initializer("zero_pads", ints({0, 0, 0, 0, 0, 0, 0, 0}));
  m.initializer("one_pad", ints({0, 0, 1, 0, 0, 0, 0, 0}));
  m.initializer("s0", ints({0, 0}));
  m.initializer("e_full", ints({6, big}));
  m.initializer("a12", ints({1, 2}));
  m.initializer("s_neg", ints({-1}));
  m.initializer("e_neg", ints({-big}));
  m.initializer("a1", ints({1}));
  m.initializer("step_neg", ints({-1}));
  m.initializer("zero1", ints({0}));
  m.initializer("e4", ints({4}));
  m.initializer("a2", ints({2}));
  m.initializer("e_m1", ints({-1}));
  m.node("Pad", {"x", "zero_pads"}, {"p0"}, "pad_zero");
  m.node("Relu", {"p0"}, {"r"}, "relu");
  m.node("Slice", {"r", "s0", "e_full", "a12"}, {"whole"}, "slice_whole");
  m.node("Add", {"whole", "r"}, {"y1"}, "add");
  m.node("Slice", {"r", "zero1", "e4", "a2"}, {"y2"}, "slice_part");
  m.node("Slice", {"r", "s_neg", "e_neg", "a1", "step_neg"}, {"y3"}, "slice_reverse");
  m.node("Pad", {"r", "one_pad"}, {"y4"}, "pad_one");
  m.node("Slice", {"r", "zero1", "e_m1", "a1"}, {"y5"}, "slice_to_minus_one");
  for (const char* y : {"y1", "y2", "y3", "y4", "y5"}) m.output(y, DataType::kFloat32);
  auto g = import_onnx_bytes(m.bytes(), "copies.onnx");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  ASSERT_TRUE(infer_shapes(**g));
  EXPECT_EQ(remove_identities(**g), 2);
  std::set<std::string> names;
  for (const auto& n : (*g)->nodes()) names.insert(n->name);
  EXPECT_EQ(names, (std::set<std::string>{"relu", "add", "slice_part", "slice_reverse", "pad_one", "slice_to_minus_one"}));

  auto eng = Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, "copies.onnx");
  ASSERT_TRUE(eng.is_ok()) << eng.status().to_string();
  std::mt19937 rng(std::random_device{}());
  Tensor x = random_tensor(DataType::kFloat32, {2, 6, 5, 4}, rng);
  std::map<std::string, Tensor> outs;
  auto ctx = (*eng)->create_context();
  ASSERT_TRUE((*ctx)->run({{"x", x}}, outs).is_ok());
  ASSERT_EQ(outs.at("y1").dims(), x.dims());
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(outs.at("y1").get(i), 2 * std::max(0.0, x.get(i))) << i;
  EXPECT_EQ(outs.at("y2").dims(), (std::vector<int64_t>{2, 6, 4, 4}));
  EXPECT_EQ(outs.at("y3").dims(), (std::vector<int64_t>{2, 6, 5, 4}));
  EXPECT_EQ(outs.at("y3").get(0), std::max(0.0, x.get(5 * 5 * 4)));  // row 5 first: reversed
  EXPECT_EQ(outs.at("y4").dims(), (std::vector<int64_t>{2, 6, 6, 4}));  // one before axis 2
  EXPECT_EQ(outs.at("y5").dims(), (std::vector<int64_t>{2, 5, 5, 4}));
}

TEST(Passes, InferenceDropoutRemovedTrainingDropoutKept) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2});
  m.initializer("ratio", Tensor::from_doubles(DataType::kFloat32, {}, {0.3}));
  m.initializer("train", Tensor::from_doubles(DataType::kBool, {}, {1}));
  m.node("Dropout", {"x", "ratio"}, {"d1"}, "inference");
  m.node("Relu", {"d1"}, {"r"});
  m.node("Dropout", {"r", "ratio", "train"}, {"y"}, "training");  // training mode: not an identity
  m.node("Dropout", {"r"}, {"z", "mask"}, "with_mask");             // mask requested: kept
  m.output("y", DataType::kFloat32);
  m.output("z", DataType::kFloat32);
  m.output("mask", DataType::kBool);
  auto g = import_onnx_bytes(m.bytes(), "dropout.onnx");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(remove_identities(**g), 1);
  std::set<std::string> names;
  for (const auto& n : (*g)->nodes()) names.insert(n->name);
  EXPECT_EQ(names.count("inference"), 0u);
  EXPECT_EQ(names.count("training"), 1u);
  EXPECT_EQ(names.count("with_mask"), 1u);
}

TEST(Passes, DimExprBuilderFoldsAndKeepsSymbols) {
  DimExprBuilder b;
  SymDim n(&b, b.intern(Dim::symbol("N")));
  SymDim two(&b, b.constant(2));
  EXPECT_EQ((two * 3 + 1).constant_value(), 7);
  SymDim e = ceil_div(n * two, SymDim(&b, b.constant(4)));
  EXPECT_FALSE(e.constant_value().has_value());
  const Dim* d = DimExprBuilder::as_dim(e.expr());
  EXPECT_EQ(d->evaluate({{"N", 5}}), 3);
}

// Custom op end to end: CustomLayer (y = x * sigmoid(beta x)) with a symbolic batch.
TEST(Passes, CustomOpInferenceAndRun) {
  uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  OnnxModelBuilder m;
  m.opset("ai.onnx.contrib", 1);
  m.input("x", DataType::kFloat32, {"N", 6});
  OnnxModelBuilder::attr(m.node("CustomLayer", {"x"}, {"y"}, "swish", "ai.onnx.contrib"), "beta", 1.5f);
  m.output("y", DataType::kFloat32);
  BuilderConfig cfg;
  cfg.profile["x"] = ProfileRange{{1, 6}, {2, 6}, {4, 6}};
  auto eng = Engine::build_from_onnx_bytes(m.bytes(), cfg, "custom.onnx");
  ASSERT_TRUE(eng.is_ok()) << eng.status().to_string();
  EXPECT_EQ((*eng)->outputs()[0].shape, "[N,6]");
  EXPECT_NE((*eng)->describe().find("beta = 1.5"), std::string::npos) << (*eng)->describe();
  Tensor x = random_tensor(DataType::kFloat32, {3, 6}, rng, -4, 4);
  std::map<std::string, Tensor> outs;
  auto ctx = (*eng)->create_context();
  Status st = (*ctx)->run({{"x", x}}, outs);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = x.get(i);
    EXPECT_NEAR(outs.at("y").get(i), v / (1 + std::exp(-1.5 * v)), 1e-5) << i;
  }
  // Round trip through a plan keeps the custom op and its attribute.
  auto bytes = (*eng)->serialize();
  ASSERT_TRUE(bytes.is_ok());
  auto loaded = Engine::deserialize(bytes.value(), "custom.plan");
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  std::map<std::string, Tensor> outs2;
  ASSERT_TRUE((*(*loaded)->create_context())->run({{"x", x}}, outs2).is_ok());
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(outs2.at("y").get(i), outs.at("y").get(i));
}

// Builtin and custom nodes resolve to one kind of op entry, and find_op_entry is what tells them
// apart: a custom op in the default domain (TensorRT's plugin convention) is not an ONNX op.
TEST(Passes, OneOpEntryForBuiltinAndCustomNodes) {
  OnnxModelBuilder m;
  m.opset("ai.onnx.contrib", 1);
  m.input("x", DataType::kFloat32, {2, 6});
  m.node("Relu", {"x"}, {"r"}, "relu");
  OnnxModelBuilder::attr(m.node("CustomLayer", {"r"}, {"y"}, "contrib", "ai.onnx.contrib"), "beta", 1.5f);
  OnnxModelBuilder::attr(m.node("CustomLayer", {"y"}, {"z"}, "default_domain"), "beta", 0.5f);
  m.output("z", DataType::kFloat32);
  auto g = import_onnx_bytes(m.bytes(), "entries.onnx");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const auto& nodes = (*g)->nodes();
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(find_op_entry(*nodes[0]), find_onnx_op("Relu"));
  EXPECT_TRUE(is_onnx(*nodes[0], "Relu"));
  for (size_t i : {size_t{1}, size_t{2}}) {
    SCOPED_TRACE(nodes[i]->name);
    ASSERT_TRUE(nodes[i]->is_custom());
    EXPECT_EQ(find_op_entry(*nodes[i]), &custom_op_entry(*nodes[i]->custom_op));
    EXPECT_EQ(find_op_entry(*nodes[i])->layout, LayoutTrait::kFixed);
    EXPECT_FALSE(is_onnx(*nodes[i]));
    EXPECT_FALSE(is_onnx(*nodes[i], "CustomLayer"));
  }
  // The custom entry infers through the OpDef: the output of each is [2,6] float32.
  for (const Node* n : {nodes[1].get(), nodes[2].get()}) {
    TensorDesc in(DataType::kFloat32, {Dim(2), Dim(6)});
    InferContext::InputInfo info;
    info.desc = &in;
    InferContext ctx(*n, {info}, n->opset);
    ASSERT_TRUE(find_op_entry(*n)->infer(ctx).is_ok());
    EXPECT_EQ(ctx.outputs()[0].to_string(), in.to_string());
  }
  // A custom op that declares channels_last_io says so by its entry's layout trait, as a builtin
  // op says it is layout-free: the NHWC pass reads the trait and nothing else.
  auto dcn = OpRegistry::global().find("ai.onnx.contrib", "ModulatedDeformConv2d", "1", "");
  ASSERT_TRUE(dcn.is_ok()) << dcn.status().to_string();
  ASSERT_TRUE((*dcn)->supports_channels_last_io());
  EXPECT_EQ(custom_op_entry(**dcn).layout, LayoutTrait::kChannelsLastIo);
  EXPECT_EQ(custom_op_entry(**dcn).infer, find_op_entry(*nodes[1])->infer);
}

TEST(Passes, DeclaredOutputShapeMustAgree) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2, 3});
  m.node("Relu", {"x"}, {"y"}, "relu");
  m.output("y", DataType::kFloat32, {2, 4});
  auto eng = Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, "decl.onnx");
  ASSERT_FALSE(eng.is_ok());
  EXPECT_NE(eng.status().message().find("'y'"), std::string::npos) << eng.status().to_string();
  OnnxModelBuilder d;
  d.input("x", DataType::kFloat32, {2, 3});
  d.node("Relu", {"x"}, {"y"}, "relu");
  d.output("y", DataType::kInt64);
  auto eng2 = Engine::build_from_onnx_bytes(d.bytes(), BuilderConfig{}, "decl.onnx");
  ASSERT_FALSE(eng2.is_ok());
  EXPECT_NE(eng2.status().message().find("int64"), std::string::npos) << eng2.status().to_string();
}

}  // namespace
}  // namespace graft
