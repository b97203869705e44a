// The FP16 precision pass on the CPU (no GPU needed): Casts at the float16/float32 boundaries, graph
// I/O dtypes kept, refused ops kept in float32, and the converted graph computes the same function.
#include <gtest/gtest.h>

#include "graph/passes.h"
#include "graph/precision.h"
#include "onnx/importer.h"
#include "runtime/cpu_engine.h"
#include "test_models.h"

namespace {

using namespace graft_cuda_test;

OnnxModelBuilder swish_softmax_swish() {
  OnnxModelBuilder m;
  m.opset("ai.onnx.contrib", 1);
  m.input("x", DataType::kFloat32, {3, 10});
  auto& a = m.node("CustomLayer", {"x"}, {"h"}, "first", "ai.onnx.contrib");
  OnnxModelBuilder::attr(a, "beta", 0.8f);
  auto& s = m.node("Softmax", {"h"}, {"s"}, "softmax");
  OnnxModelBuilder::attr(s, "axis", int64_t{-1});
  auto& b = m.node("CustomLayer", {"s"}, {"y"}, "second", "ai.onnx.contrib");
  OnnxModelBuilder::attr(b, "beta", 1.2f);
  m.output("y", DataType::kFloat32, {3, 10});
  return m;
}

std::unique_ptr<graft::Graph> import(const OnnxModelBuilder& m) {
  auto g = graft::import_onnx_bytes(m.bytes(), "precision_test.onnx");
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  auto st = graft::infer_shapes(**g);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return std::move(g).value();
}

TEST(Fp16Pass, CastsAtBoundariesAndSameFunction) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  auto g = import(swish_softmax_swish());
  graft::PrecisionPolicy policy;
  policy.supports_fp16 = [](const graft::Node& n) { return n.custom_op != nullptr; };  // not Softmax
  auto converted = graft::convert_to_fp16(*g, policy);
  ASSERT_TRUE(converted.is_ok()) << converted.status().to_string();
  EXPECT_EQ(*converted, 2);
  int casts = 0;
  for (const auto& n : g->nodes()) {
    if (n->op_type == "Cast") ++casts;
    if (n->op_type == "Softmax") {
      EXPECT_EQ(n->outputs[0]->desc.dtype, DataType::kFloat32);
    }
    if (n->op_type == "CustomLayer") {
      EXPECT_EQ(n->outputs[0]->desc.dtype, DataType::kFloat16) << n->name;
    }
  }
  EXPECT_EQ(casts, 4) << "x->fp16, first->fp32, softmax->fp16, second->fp32";
  EXPECT_EQ(g->inputs()[0]->desc.dtype, DataType::kFloat32);
  EXPECT_EQ(g->outputs()[0]->desc.dtype, DataType::kFloat32);
  EXPECT_EQ(g->outputs()[0]->name, "y");

  // Same function as the float32 graph, to float16 accuracy, on the CPU reference.
  graft::EngineState s16, s32;
  s16.graph = std::move(g);
  s32.graph = import(swish_softmax_swish());
  auto e16 = graft::make_cpu_engine(std::move(s16));
  auto e32 = graft::make_cpu_engine(std::move(s32));
  ASSERT_TRUE(e16.is_ok() && e32.is_ok());
  Tensor x = rand_t({3, 10}, rng, -4, 4);
  std::map<std::string, Tensor> o16, o32;
  auto c16 = (*e16)->create_context();
  auto c32 = (*e32)->create_context();
  ASSERT_TRUE(c16.is_ok() && c32.is_ok());
  auto r16 = (*c16)->run({{"x", x}}, o16);
  ASSERT_TRUE(r16.is_ok()) << r16.to_string();
  ASSERT_TRUE((*c32)->run({{"x", x}}, o32).is_ok());
  EXPECT_EQ(o16.at("y").dtype(), DataType::kFloat32);
  EXPECT_LT(rel_err(o16.at("y"), o32.at("y")), 1e-2);
}

// Shape and Size read only dims: a float16 value they read needs no Cast back to float32 (the
// dynamo export's attention reads Shape(key), which cost one Cast per layer).
TEST(Fp16Pass, ShapeReadsTheFloat16Value) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {3, 10});
  m.node("Relu", {"x"}, {"r"}, "relu");
  m.node("Shape", {"r"}, {"shape"}, "shape");
  m.node("Size", {"r"}, {"size"}, "size");
  m.node("Sigmoid", {"r"}, {"y"}, "sigmoid");
  m.output("y", DataType::kFloat32).output("shape", DataType::kInt64).output("size", DataType::kInt64);
  auto g = import(m);
  graft::PrecisionPolicy policy;
  policy.supports_fp16 = [](const graft::Node&) { return true; };
  auto converted = graft::convert_to_fp16(*g, policy);
  ASSERT_TRUE(converted.is_ok()) << converted.status().to_string();
  EXPECT_EQ(*converted, 2);  // Relu, Sigmoid
  int casts = 0;
  for (const auto& n : g->nodes()) {
    casts += n->op_type == "Cast";
    if (n->op_type == "Shape" || n->op_type == "Size") {
      EXPECT_EQ(n->inputs[0]->desc.dtype, DataType::kFloat16) << n->name;
      EXPECT_EQ(n->outputs[0]->desc.dtype, DataType::kInt64) << n->name;
    }
  }
  EXPECT_EQ(casts, 2) << "x->fp16 and y->fp32 only";
  graft::EngineState st;
  st.graph = std::move(g);
  auto e = graft::make_cpu_engine(std::move(st));
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  auto c = (*e)->create_context();
  ASSERT_TRUE(c.is_ok());
  std::mt19937 rng(std::random_device{}());
  std::map<std::string, Tensor> out;
  ASSERT_TRUE((*c)->run({{"x", rand_t({3, 10}, rng)}}, out).is_ok());
  EXPECT_EQ(out.at("shape").get(0), 3);
  EXPECT_EQ(out.at("shape").get(1), 10);
  EXPECT_EQ(out.at("size").get(0), 30);
}

TEST(Fp16Pass, NothingSupportedLeavesGraphAlone) {
  auto g = import(swish_softmax_swish());
  const size_t nodes = g->nodes().size();
  graft::PrecisionPolicy policy;
  policy.supports_fp16 = [](const graft::Node&) { return false; };
  auto converted = graft::convert_to_fp16(*g, policy);
  ASSERT_TRUE(converted.is_ok());
  EXPECT_EQ(*converted, 0);
  EXPECT_EQ(g->nodes().size(), nodes);
}

TEST(Fp16Pass, KeepsExpInFloat32) {
  EXPECT_TRUE(graft::op_needs_fp32("Exp"));
  EXPECT_TRUE(graft::op_needs_fp32("ReduceSum"));
  EXPECT_FALSE(graft::op_needs_fp32("Softmax"));
  EXPECT_FALSE(graft::op_needs_fp32("LayerNormalization"));
}

}  // namespace
