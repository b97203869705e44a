// Engine: build from ONNX bytes, run on the CPU, profiles and input checks.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "graft/engine.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/op_test_util.h"

namespace graft {
namespace {

using testing::OnnxModelBuilder;
using testing::random_tensor;

uint32_t fresh_seed() { return std::random_device{}(); }

// y = Relu(x + b), x: [batch, 4], b: [4] initializer.
OnnxModelBuilder add_relu_model(const Tensor& b) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {"batch", 4});
  m.initializer("b", b);
  m.node("Add", {"x", "b"}, {"s"});
  m.node("Relu", {"s"}, {"y"});
  m.output("y", DataType::kFloat32, {"batch", 4});
  return m;
}

BuilderConfig batch_profile(int64_t lo, int64_t opt, int64_t hi) {
  BuilderConfig c;
  c.profile["x"] = ProfileRange{{lo, 4}, {opt, 4}, {hi, 4}};
  return c;
}

TEST(Engine, BuildAndRunAddRelu) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  Tensor b = random_tensor(DataType::kFloat32, {4}, rng);
  std::vector<std::string> stages;
  BuilderConfig cfg = batch_profile(1, 2, 8);
  cfg.progress = [&](const std::string& s, const std::string&) { stages.push_back(s); };
  auto eng = Engine::build_from_onnx_bytes(add_relu_model(b).bytes(), cfg, "add_relu.onnx");
  ASSERT_TRUE(eng.is_ok()) << eng.status().to_string();
  EXPECT_FALSE(stages.empty());
  auto ctx = (*eng)->create_context();
  ASSERT_TRUE(ctx.is_ok());
  for (int64_t batch : {1, 3, 8}) {
    Tensor x = random_tensor(DataType::kFloat32, {batch, 4}, rng);
    std::map<std::string, Tensor> outs;
    Status st = (*ctx)->run({{"x", x}}, outs);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    const Tensor& y = outs.at("y");
    ASSERT_EQ(y.dims(), (std::vector<int64_t>{batch, 4}));
    for (int64_t i = 0; i < y.numel(); ++i)
      EXPECT_FLOAT_EQ(static_cast<float>(y.get(i)), std::max(0.0f, static_cast<float>(x.get(i)) + static_cast<float>(b.get(i % 4))))
          << "index " << i;
  }
  auto ins = (*eng)->inputs();
  ASSERT_EQ(ins.size(), 1u);
  EXPECT_EQ(ins[0].shape, "[batch,4]");
  ASSERT_TRUE(ins[0].profile.has_value());
  EXPECT_EQ(ins[0].profile->max, (std::vector<int64_t>{8, 4}));
  EXPECT_NE((*eng)->describe().find("Relu"), std::string::npos);
  EXPECT_NE((*eng)->describe_json().find("\"op_type\": \"Add\""), std::string::npos);
}

TEST(Engine, WritesIntoGivenOutputTensor) {
  std::mt19937 rng(fresh_seed());
  Tensor b = random_tensor(DataType::kFloat32, {4}, rng);
  auto eng = Engine::build_from_onnx_bytes(add_relu_model(b).bytes(), batch_profile(1, 2, 4), "m.onnx");
  ASSERT_TRUE(eng.is_ok()) << eng.status().to_string();
  auto ctx = (*eng)->create_context();
  Tensor x = random_tensor(DataType::kFloat32, {2, 4}, rng);
  Tensor y = Tensor::empty(DataType::kFloat32, {2, 4});
  y.poison();
  std::map<std::string, Tensor> outs{{"y", y}};
  ASSERT_TRUE((*ctx)->run({{"x", x}}, outs).is_ok());
  EXPECT_EQ(outs.at("y").data(), y.data());
  for (int64_t i = 0; i < 8; ++i) EXPECT_FALSE(std::isnan(y.get(i)));
}

TEST(Engine, FixedShapeSubstitutesSymbol) {
  std::mt19937 rng(fresh_seed());
  Tensor b = random_tensor(DataType::kFloat32, {4}, rng);
  auto eng = Engine::build_from_onnx_bytes(add_relu_model(b).bytes(), batch_profile(3, 3, 3), "m.onnx");
  ASSERT_TRUE(eng.is_ok()) << eng.status().to_string();
  EXPECT_EQ((*eng)->inputs()[0].shape, "[3,4]");
  EXPECT_EQ((*eng)->outputs()[0].shape, "[3,4]");
}

TEST(Engine, DynamicInputWithoutProfileIsAnError) {
  std::mt19937 rng(fresh_seed());
  auto eng = Engine::build_from_onnx_bytes(add_relu_model(random_tensor(DataType::kFloat32, {4}, rng)).bytes(),
                                           BuilderConfig{}, "m.onnx");
  ASSERT_FALSE(eng.is_ok());
  EXPECT_NE(eng.status().message().find("'x'"), std::string::npos) << eng.status().to_string();
  EXPECT_NE(eng.status().message().find("profile"), std::string::npos);
}

TEST(Engine, InputShapeOutsideProfile) {
  std::mt19937 rng(fresh_seed());
  auto eng = Engine::build_from_onnx_bytes(add_relu_model(random_tensor(DataType::kFloat32, {4}, rng)).bytes(),
                                           batch_profile(2, 4, 8), "m.onnx");
  ASSERT_TRUE(eng.is_ok()) << eng.status().to_string();
  auto ctx = (*eng)->create_context();
  std::map<std::string, Tensor> outs;
  Status st = (*ctx)->run({{"x", random_tensor(DataType::kFloat32, {9, 4}, rng)}}, outs);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  const std::string& m = st.message();
  EXPECT_NE(m.find("'x'"), std::string::npos) << m;
  EXPECT_NE(m.find("dimension 0"), std::string::npos) << m;
  EXPECT_NE(m.find("min 2"), std::string::npos) << m;
  EXPECT_NE(m.find("max 8"), std::string::npos) << m;
  // Static dims must match exactly.
  st = (*ctx)->run({{"x", random_tensor(DataType::kFloat32, {3, 5}, rng)}}, outs);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("dimension 1"), std::string::npos) << st.message();
}

TEST(Engine, WrongInputDtypeAndMissingInput) {
  std::mt19937 rng(fresh_seed());
  auto eng = Engine::build_from_onnx_bytes(add_relu_model(random_tensor(DataType::kFloat32, {4}, rng)).bytes(),
                                           batch_profile(1, 2, 8), "m.onnx");
  ASSERT_TRUE(eng.is_ok());
  auto ctx = (*eng)->create_context();
  std::map<std::string, Tensor> outs;
  Status st = (*ctx)->run({{"x", random_tensor(DataType::kFloat64, {2, 4}, rng)}}, outs);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("'x'"), std::string::npos);
  EXPECT_NE(st.message().find("float32"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("float64"), std::string::npos) << st.message();
  st = (*ctx)->run({}, outs);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("'x'"), std::string::npos) << st.message();
  st = (*ctx)->run({{"x", random_tensor(DataType::kFloat32, {2, 4}, rng)}, {"nope", Tensor::scalar_int64(1)}}, outs);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("'nope'"), std::string::npos) << st.message();
}

TEST(Engine, AddShapeMismatchNamesNode) {
  OnnxModelBuilder m;
  m.input("a", DataType::kFloat32, {3, 4});
  m.input("b", DataType::kFloat32, {5, 6});
  m.node("Add", {"a", "b"}, {"c"}, "the_add");
  m.output("c", DataType::kFloat32);
  auto eng = Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, "mismatch.onnx");
  ASSERT_FALSE(eng.is_ok());
  EXPECT_EQ(eng.status().node_name(), "the_add") << eng.status().to_string();
  EXPECT_EQ(eng.status().op_type(), "Add");
  EXPECT_NE(eng.status().to_string().find("[3,4]"), std::string::npos) << eng.status().to_string();
}

// x: [N,3,4] -> Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [12])) -> [N,12]
TEST(Engine, ShapeGatherUnsqueezeConcatReshapeWithSymbolicBatch) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  OnnxModelBuilder m(17);
  m.input("x", DataType::kFloat32, {"N", 3, 4});
  m.initializer("idx0", Tensor::scalar_int64(0));
  m.initializer("axes0", Tensor::vector_int64({0}));
  m.initializer("twelve", Tensor::vector_int64({12}));
  m.node("Shape", {"x"}, {"shape"});
  m.node("Gather", {"shape", "idx0"}, {"n"});
  m.node("Unsqueeze", {"n", "axes0"}, {"n1"});
  OnnxModelBuilder::attr(m.node("Concat", {"n1", "twelve"}, {"target"}), "axis", int64_t{0});
  m.node("Reshape", {"x", "target"}, {"y"});
  m.output("y", DataType::kFloat32);
  BuilderConfig cfg;
  cfg.profile["x"] = ProfileRange{{1, 3, 4}, {2, 3, 4}, {6, 3, 4}};
  auto eng = Engine::build_from_onnx_bytes(m.bytes(), cfg, "reshape.onnx");
  ASSERT_TRUE(eng.is_ok()) << eng.status().to_string();
  // The target shape resolved at build time: only the Reshape is left, with a symbolic output.
  EXPECT_EQ((*eng)->outputs()[0].shape, "[N,12]");
  auto ctx = (*eng)->create_context();
  for (int64_t n : {1, 5}) {
    Tensor x = random_tensor(DataType::kFloat32, {n, 3, 4}, rng);
    std::map<std::string, Tensor> outs;
    Status st = (*ctx)->run({{"x", x}}, outs);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_EQ(outs.at("y").dims(), (std::vector<int64_t>{n, 12}));
    for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(outs.at("y").get(i), x.get(i));
  }
}

// Exporters pad to a window multiple with (w - H % w) % w and then read the padded shape back with
// Shape (Swin's shifted windows). With H static and only the batch dynamic, all of it folds at build
// time, across rounds: Mod resolves the padding, the Pad's output shape becomes static, and only then
// does the Shape -> Gather -> Div -> ConstantOfShape chain over it fold. The engine must keep no
// shape arithmetic (on a CUDA engine it would stop graph capture) and compute the same result.
TEST(Engine, WindowPaddingShapeArithmeticFoldsAcrossRounds) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  constexpr int64_t kH = 5, kW = 6, kWin = 4;
  OnnxModelBuilder m(17);
  m.input("x", DataType::kFloat32, {"N", kH, kW});
  m.initializer("i1", Tensor::scalar_int64(1));
  m.initializer("win", Tensor::scalar_int64(kWin));
  m.initializer("ax0", Tensor::vector_int64({0}));
  m.initializer("zeros2", Tensor::vector_int64({0, 0}));
  m.node("Shape", {"x"}, {"s"});
  m.node("Gather", {"s", "i1"}, {"h"});
  OnnxModelBuilder::attr(m.node("Mod", {"h", "win"}, {"hm"}), "fmod", int64_t{0});
  m.node("Sub", {"win", "hm"}, {"d"});
  OnnxModelBuilder::attr(m.node("Mod", {"d", "win"}, {"pad_b"}), "fmod", int64_t{0});
  m.node("Unsqueeze", {"pad_b", "ax0"}, {"pad_b1"});
  // pads [0, 0, 0, 0, pad_b, 0] (the rows padded at the end), built as PyTorch's exporter does: (begin,
  // end) pairs per axis, transposed. Transpose carries no symbolic contents, so the pads become known
  // only when the Transpose folds, after the first round of inference.
  m.initializer("zeros3", Tensor::vector_int64({0, 0, 0}));
  m.initializer("pairs_shape", Tensor::vector_int64({3, 2}));
  m.initializer("flat_shape", Tensor::vector_int64({6}));
  OnnxModelBuilder::attr(m.node("Concat", {"zeros3", "pad_b1", "zeros2"}, {"pairs_flat"}), "axis", int64_t{0});
  m.node("Reshape", {"pairs_flat", "pairs_shape"}, {"pairs"});
  m.node("Transpose", {"pairs"}, {"pairs_t"});
  m.node("Reshape", {"pairs_t", "flat_shape"}, {"pads"});
  m.node("Pad", {"x", "pads"}, {"xp"});
  m.node("Shape", {"xp"}, {"sp"});
  m.node("Gather", {"sp", "i1"}, {"ph"});
  m.node("Div", {"ph", "win"}, {"rows"});  // windows per column: 2
  m.node("Unsqueeze", {"rows", "ax0"}, {"rows1"});
  m.initializer("one1", Tensor::vector_int64({1}));
  OnnxModelBuilder::attr(m.node("Concat", {"rows1", "one1"}, {"mshape"}), "axis", int64_t{0});
  m.node("ConstantOfShape", {"mshape"}, {"mask"});  // float 0 [2, 1]
  m.initializer("r0", Tensor::vector_int64({0}));
  m.node("Slice", {"xp", "r0", "rows1", "one1"}, {"head"});  // xp[:, 0:2]
  m.node("Add", {"head", "mask"}, {"y"});
  m.output("y", DataType::kFloat32);
  BuilderConfig cfg;
  cfg.profile["x"] = ProfileRange{{1, kH, kW}, {2, kH, kW}, {8, kH, kW}};
  auto eng = Engine::build_from_onnx_bytes(m.bytes(), cfg, "window_pad.onnx");
  ASSERT_TRUE(eng.is_ok()) << eng.status().to_string();
  const std::string layers = (*eng)->describe();
  for (const char* op : {"[Mod]", "[Shape]", "[Div]", "[ConstantOfShape]", "[Concat]"})
    EXPECT_EQ(layers.find(op), std::string::npos) << op << " left in the engine:\n" << layers;
  EXPECT_EQ((*eng)->outputs()[0].shape, "[N,2,6]");
  auto ctx = (*eng)->create_context();
  for (int64_t n : {1, 3}) {
    Tensor x = random_tensor(DataType::kFloat32, {n, kH, kW}, rng);
    std::map<std::string, Tensor> outs;
    Status st = (*ctx)->run({{"x", x}}, outs);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_EQ(outs.at("y").dims(), (std::vector<int64_t>{n, 2, kW}));
    for (int64_t b = 0; b < n; ++b)
      for (int64_t r = 0; r < 2; ++r)
        for (int64_t c = 0; c < kW; ++c)
          ASSERT_EQ(outs.at("y").get((b * 2 + r) * kW + c), x.get((b * kH + r) * kW + c));
  }
}

TEST(Engine, ConstantOutputAndIdentity) {
  std::mt19937 rng(fresh_seed());
  Tensor a = random_tensor(DataType::kFloat32, {2, 3}, rng);
  Tensor b = random_tensor(DataType::kFloat32, {2, 3}, rng);
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2, 3});
  m.initializer("a", a);
  m.initializer("b", b);
  m.node("Add", {"a", "b"}, {"ab"});         // folds at build time
  m.node("Add", {"x", "ab"}, {"s"});
  m.node("Identity", {"s"}, {"y"});         // removed; y keeps its name
  m.output("y", DataType::kFloat32, {2, 3});
  auto eng = Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, "fold.onnx");
  ASSERT_TRUE(eng.is_ok()) << eng.status().to_string();
  std::string js = (*eng)->describe_json();
  EXPECT_EQ(js.find("Identity"), std::string::npos) << js;
  auto ctx = (*eng)->create_context();
  Tensor x = random_tensor(DataType::kFloat32, {2, 3}, rng);
  std::map<std::string, Tensor> outs;
  ASSERT_TRUE((*ctx)->run({{"x", x}}, outs).is_ok());
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_FLOAT_EQ(static_cast<float>(outs.at("y").get(i)),
                    static_cast<float>(x.get(i)) + (static_cast<float>(a.get(i)) + static_cast<float>(b.get(i))));
}

}  // namespace
}  // namespace graft
