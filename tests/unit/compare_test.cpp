// The pieces under `graft run --compare-backend/--compare-model/--layerwise`: marking every tensor of
// an ONNX model as an output (in topological order) and comparing two sets of tensors.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include "graft/engine.h"
#include "onnx/mark_outputs.h"
#include "runtime/compare.h"
#include "tests/unit/onnx_model_builder.h"

namespace graft {
namespace {

// Nodes listed consumer first; a Constant node (computes nothing worth comparing) and an unnamed node.
std::string unsorted_model() {
  testing::OnnxModelBuilder b(13);
  b.input("x", DataType::kFloat32, {2, 3});
  b.node("Neg", {"a"}, {"y"}, "neg");
  b.constant("c", Tensor::from_doubles(DataType::kFloat32, {3}, {1, 2, 3}));
  b.node("Add", {"x", "c"}, {"a"}, "add").set_name("");
  b.output("y", DataType::kFloat32);
  return b.bytes();
}

TEST(MarkAllOutputs, TopologicalOrderWithoutConstants) {
  auto marked = mark_all_outputs(unsorted_model(), "m.onnx");
  ASSERT_TRUE(marked.is_ok()) << marked.status().to_string();
  ASSERT_EQ(marked->layers.size(), 2u);
  EXPECT_EQ(marked->layers[0].name, "Add#2");  // unnamed: op type and position in the file
  EXPECT_EQ(marked->layers[0].op_type, "Add");
  EXPECT_EQ(marked->layers[0].outputs, std::vector<std::string>{"a"});
  EXPECT_EQ(marked->layers[1].name, "neg");
  EXPECT_EQ(marked->original_outputs, std::vector<std::string>{"y"});
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(marked->bytes));
  std::vector<std::string> outs;
  for (const auto& o : m.graph().output()) outs.push_back(o.name());
  EXPECT_EQ(outs, (std::vector<std::string>{"y", "a"}));  // the constant 'c' is not marked

  // The marked model builds and its engine outputs the intermediate tensor too.
  auto engine = Engine::build_from_onnx_bytes(marked->bytes, BuilderConfig{}, "m.onnx");
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  std::vector<std::string> engine_outs;
  for (const IOInfo& o : (*engine)->outputs()) engine_outs.push_back(o.name);
  EXPECT_EQ(engine_outs, (std::vector<std::string>{"y", "a"}));
}

TEST(MarkAllOutputs, NotAModel) {
  auto marked = mark_all_outputs("not protobuf at all", "bad.onnx");
  ASSERT_FALSE(marked.is_ok());
  EXPECT_NE(marked.status().to_string().find("bad.onnx"), std::string::npos) << marked.status().to_string();
}

Tensor floats(std::vector<int64_t> dims, std::vector<double> v) { return Tensor::from_doubles(DataType::kFloat32, dims, v); }

TEST(CompareTensorSets, RulesNanInfinityAndShapes) {
  Tolerances tol;
  tol.fallback = {0.0, 0.1};
  tol.atol["loose"] = 10;
  std::map<std::string, Tensor> a = {{"same", floats({3}, {NAN, INFINITY, 1.0})},
                                     {"nan_vs_number", floats({2}, {NAN, 1.0})},
                                     {"loose", floats({1}, {5.0})},
                                     {"shape", floats({2}, {1, 2})},
                                     {"only_a", floats({1}, {0})}};
  std::map<std::string, Tensor> b = {{"same", floats({3}, {NAN, INFINITY, 1.05})},
                                     {"nan_vs_number", floats({2}, {1.0, 1.0})},
                                     {"loose", floats({1}, {0.0})},
                                     {"shape", floats({1, 2}, {1, 2})},
                                     {"only_b", floats({1}, {0})}};
  ComparisonReport r = compare_tensor_sets(a, b, {}, {"shape", "same"}, tol);
  std::vector<std::string> order;
  for (const auto& t : r.tensors) order.push_back(t.tensor);
  // The given order first, then the candidate's names, then the reference's.
  EXPECT_EQ(order, (std::vector<std::string>{"shape", "same", "loose", "nan_vs_number", "only_a", "only_b"}));
  using S = TensorComparison::Status;
  EXPECT_EQ(r.tensors[0].status, S::kMismatch);
  EXPECT_NE(r.tensors[0].reason.find("shapes differ"), std::string::npos);
  EXPECT_EQ(r.tensors[1].status, S::kMatch);
  EXPECT_EQ(r.tensors[2].status, S::kMatch);  // |5 - 0| <= its own atol of 10
  EXPECT_EQ(r.tensors[3].status, S::kMismatch);
  EXPECT_TRUE(std::isinf(r.tensors[3].max_abs));
  EXPECT_EQ(r.tensors[3].worst_at, std::vector<int64_t>{0});
  EXPECT_EQ(r.tensors[4].status, S::kNotCompared);
  EXPECT_EQ(r.tensors[4].reason, "only the candidate has it");
  EXPECT_EQ(r.tensors[5].reason, "only the reference has it");
  EXPECT_EQ(r.first_divergence, 0);
  EXPECT_EQ(r.matched, 2);
  EXPECT_EQ(r.mismatched, 2);
  EXPECT_EQ(r.not_compared, 2);
  // An infinite error is written as a string, so the JSON stays valid.
  auto j = nlohmann::json::parse(comparison_json(r));
  EXPECT_EQ(j["tensors"][3]["max_abs_error"], "inf");
  EXPECT_EQ(tol.unknown_names({"same"}), std::vector<std::string>{"loose"});
}

}  // namespace
}  // namespace graft
