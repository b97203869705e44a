// If, Loop and Scan (schemas and CPU kernels: src/ops/control_flow/; subgraphs imported as
// Node::subgraphs by src/onnx/importer.cpp).
// Models are written here with their subgraphs, run on fresh random data and compared with the
// computation written out in plain C++: branches and bodies that read outer-scope values (nested
// two levels deep too), every Loop form (M and cond, M only, cond only, zero iterations, early exit),
// Scan with axes and directions, inference at build time, plan round trips, then bad models, whose
// errors name the node and the attribute.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "graft/engine.h"
#include "onnx/importer.h"
#include "control_flow_models.h"
#include "onnx_model_builder.h"
#include "op_test_util.h"

namespace graft {
namespace {

using testing::OnnxModelBuilder;
using testing::random_tensor;
using testing::values;

uint32_t seed() {
  static const uint32_t s = std::random_device{}();
  return s;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

using Sub = testing::SubgraphBuilder;
using testing::graph_attr;

Tensor scalar_bool(bool b) { return Tensor::from_doubles(DataType::kBool, {}, {b ? 1.0 : 0.0}); }

Result<std::map<std::string, Tensor>> run_model(const OnnxModelBuilder& m, const std::map<std::string, Tensor>& in,
                                                bool round_trip = false, const BuilderConfig& cfg = {}) {
  GRAFT_ASSIGN_OR_RETURN(auto engine, Engine::build_from_onnx_bytes(m.bytes(), cfg, "cf.onnx"));
  if (round_trip) {
    GRAFT_ASSIGN_OR_RETURN(std::string plan, engine->serialize());
    GRAFT_ASSIGN_OR_RETURN(engine, Engine::deserialize(plan, "cf.plan"));
  }
  GRAFT_ASSIGN_OR_RETURN(auto ctx, engine->create_context());
  std::map<std::string, Tensor> out;
  GRAFT_RETURN_IF_ERROR(ctx->run(in, out));
  return out;
}

// ---- If ----------------------------------------------------------------------------------------

// then: x + y; else: x * y (both read x and y from the main graph).
OnnxModelBuilder if_model() {
  OnnxModelBuilder m(17);
  m.input("c", DataType::kBool, {});
  m.input("x", DataType::kFloat32, {2, 3});
  m.input("y", DataType::kFloat32, {3});
  auto& n = m.node("If", {"c"}, {"r"}, "choose");
  graph_attr(n, "then_branch").node("Add", {"x", "y"}, {"sum"}).output("sum");
  graph_attr(n, "else_branch").node("Mul", {"x", "y"}, {"prod"}).output("prod");
  m.output("r", DataType::kFloat32);
  return m;
}

TEST(ControlFlow, IfRunsTheBranchTheConditionPicksWithOuterValues) {
  std::mt19937 rng(seed());
  SCOPED_TRACE("seed " + std::to_string(seed()));
  for (bool round_trip : {false, true}) {
    for (bool c : {true, false}) {
      Tensor x = random_tensor(DataType::kFloat32, {2, 3}, rng), y = random_tensor(DataType::kFloat32, {3}, rng);
      auto out = run_model(if_model(), {{"c", scalar_bool(c)}, {"x", x}, {"y", y}}, round_trip);
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      std::vector<double> want;
      for (int64_t i = 0; i < 6; ++i) want.push_back(c ? x.get(i) + y.get(i % 3) : x.get(i) * y.get(i % 3));
      ASSERT_EQ(out->at("r").dims(), (std::vector<int64_t>{2, 3}));
      testing::expect_values_close(out->at("r"), want, 1e-6, c ? "then" : "else");
    }
  }
}

// then: x as it is (an outer value returned directly); else: x[1:3].
OnnxModelBuilder slice_if_model() {
  OnnxModelBuilder m(17);
  m.input("c", DataType::kBool, {});
  m.input("x", DataType::kFloat32, {4});
  auto& n = m.node("If", {"c"}, {"r"}, "pick");
  graph_attr(n, "then_branch").output("x");
  graph_attr(n, "else_branch")
      .constant("starts", Tensor::vector_int64({1}))
      .constant("ends", Tensor::vector_int64({3}))
      .node("Slice", {"x", "starts", "ends"}, {"part"})
      .output("part");
  m.output("r", DataType::kFloat32);
  return m;
}

TEST(ControlFlow, IfBranchesOfDifferentShapesGiveADynamicDimension) {
  OnnxModelBuilder m = slice_if_model();
  auto engine = Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, "if.onnx");
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  auto outs = (*engine)->outputs();
  ASSERT_EQ(outs.size(), 1u);
  ASSERT_EQ(outs[0].static_dims.size(), 1u) << outs[0].shape;
  EXPECT_EQ(outs[0].static_dims[0], -1) << outs[0].shape;
  Tensor x = Tensor::from_doubles(DataType::kFloat32, {4}, {1, 2, 3, 4});
  for (bool c : {true, false}) {
    auto out = run_model(m, {{"c", scalar_bool(c)}, {"x", x}});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    EXPECT_EQ(values(out->at("r")), c ? std::vector<double>({1, 2, 3, 4}) : std::vector<double>({2, 3}));
  }
}

TEST(ControlFlow, IfWithAConstantConditionHasTheChosenBranchsShape) {
  // Only the choice is known at build time (x is an input): inference follows the chosen branch.
  OnnxModelBuilder m = slice_if_model();
  m.model().mutable_graph()->mutable_input()->erase(m.model().mutable_graph()->mutable_input()->begin());
  m.initializer("c", scalar_bool(false));
  auto engine = Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, "if.onnx");
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  EXPECT_EQ((*engine)->outputs()[0].static_dims, (std::vector<int64_t>{2})) << (*engine)->outputs()[0].shape;
}

// A branch that cannot be inferred for the model's shapes (ONNX's expanded AffineGrid carries the
// path for the other rank) does not stop the build while the condition is known only at run time:
// a run that takes the other branch gives its result, one that takes it fails naming the node.
TEST(ControlFlow, IfBranchThatCannotBeInferredFailsOnlyTheRunsThatTakeIt) {
  OnnxModelBuilder m(18);
  m.input("c", DataType::kBool, {});
  m.input("x", DataType::kFloat32, {4});
  auto& n = m.node("If", {"c"}, {"r"}, "choose");
  graph_attr(n, "then_branch").node("Neg", {"x"}, {"neg"}).output("neg");
  graph_attr(n, "else_branch")
      .node("Split", {"x"}, {"p0", "p1", "p2", "p3", "p4"}, {{"axis", 0}, {"num_outputs", 5}})
      .output("p0");
  m.output("r", DataType::kFloat32);
  std::mt19937 rng(seed());
  const Tensor x = random_tensor(DataType::kFloat32, {4}, rng);
  auto out = run_model(m, {{"c", scalar_bool(true)}, {"x", x}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  testing::expect_values_close(out->at("r"), {-x.get(0), -x.get(1), -x.get(2), -x.get(3)}, 0, "then");
  out = run_model(m, {{"c", scalar_bool(false)}, {"x", x}});
  ASSERT_FALSE(out.is_ok());
  EXPECT_TRUE(contains(out.status().to_string(), "Split")) << out.status().to_string();
  EXPECT_TRUE(contains(out.status().to_string(), "else_branch")) << out.status().to_string();
}

// Branches of different ranks leave the If's output rank unknown at build time; a Transpose with a
// perm after it still builds (perm gives the rank) and runs on what the taken branch made.
TEST(ControlFlow, TransposeOfAnIfOutputOfUnknownRankTakesItsRankFromPerm) {
  OnnxModelBuilder m(17);
  m.input("c", DataType::kBool, {});
  m.input("x", DataType::kFloat32, {2, 3});
  m.initializer("flat", Tensor::vector_int64({6}));
  auto& n = m.node("If", {"c"}, {"r"}, "choose");
  graph_attr(n, "then_branch").node("Neg", {"x"}, {"neg"}).output("neg");
  graph_attr(n, "else_branch").node("Reshape", {"x", "flat"}, {"row"}).output("row");
  auto& t = m.node("Transpose", {"r"}, {"y"}, "swap");
  OnnxModelBuilder::attr(t, "perm", std::vector<int64_t>{1, 0});
  m.output("y", DataType::kFloat32);
  std::mt19937 rng(seed());
  const Tensor x = random_tensor(DataType::kFloat32, {2, 3}, rng);
  auto out = run_model(m, {{"c", scalar_bool(true)}, {"x", x}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  ASSERT_EQ(out->at("y").dims(), (std::vector<int64_t>{3, 2}));
  std::vector<double> want;
  for (int64_t j = 0; j < 3; ++j)
    for (int64_t i = 0; i < 2; ++i) want.push_back(-x.get(i * 3 + j));
  testing::expect_values_close(out->at("y"), want, 0, "then, transposed");
  out = run_model(m, {{"c", scalar_bool(false)}, {"x", x}});
  ASSERT_FALSE(out.is_ok());
  EXPECT_TRUE(contains(out.status().to_string(), "perm")) << out.status().to_string();
}

// A condition that is shape arithmetic (Equal(Size(x), 4) on an x of static shape, how ONNX's
// expanded functions test their input's rank) is known at build time: only the branch it takes is
// inferred, so the If's output has that branch's exact shape and rank (here the other branch has a
// different rank, which would leave it unknown), and a Transpose without perm after it builds.
TEST(ControlFlow, IfConditionFromShapeArithmeticPicksTheBranchAtBuildTime) {
  OnnxModelBuilder m(18);
  m.input("x", DataType::kFloat32, {2, 2});
  m.initializer("four", Tensor::from_doubles(DataType::kInt64, {}, {4}));
  m.initializer("flat", Tensor::vector_int64({4}));
  m.node("Size", {"x"}, {"n"}, "count");
  m.node("Equal", {"n", "four"}, {"is4"}, "test");
  auto& n = m.node("If", {"is4"}, {"r"}, "choose");
  graph_attr(n, "then_branch").node("Neg", {"x"}, {"neg"}).output("neg");
  graph_attr(n, "else_branch").node("Reshape", {"x", "flat"}, {"row"}).output("row");
  m.node("Transpose", {"r"}, {"y"}, "swap");  // no perm: needs the rank
  m.output("y", DataType::kFloat32);
  auto engine = Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, "if_shape.onnx");
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  EXPECT_EQ((*engine)->outputs()[0].static_dims, (std::vector<int64_t>{2, 2})) << (*engine)->outputs()[0].shape;
  std::mt19937 rng(seed());
  const Tensor x = random_tensor(DataType::kFloat32, {2, 2}, rng);
  auto out = run_model(m, {{"x", x}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  testing::expect_values_close(out->at("y"), {-x.get(0), -x.get(2), -x.get(1), -x.get(3)}, 0, "then, transposed");
}

// A shape built by Concat from a piece whose value is known only at run time (a dim read from a
// graph input's values) and constants keeps the constants: the Expand to it has a known rank and
// known trailing dims at build time, and runs with the value the input gives.
TEST(ControlFlow, ConcatOfARuntimeValueAndConstantsKeepsTheConstants) {
  OnnxModelBuilder m(17);
  m.input("n", DataType::kInt64, {1});
  m.input("x", DataType::kFloat32, {2, 3});
  m.initializer("tail", Tensor::vector_int64({2, 3}));
  auto& cat = m.node("Concat", {"n", "tail"}, {"shape"}, "join");
  OnnxModelBuilder::attr(cat, "axis", int64_t{0});
  m.node("Expand", {"x", "shape"}, {"y"}, "grow");
  m.output("y", DataType::kFloat32);
  auto engine = Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, "concat_value.onnx");
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  const std::string shape = (*engine)->outputs()[0].shape;
  EXPECT_TRUE(contains(shape, ",2,3]")) << shape;
  std::mt19937 rng(seed());
  const Tensor x = random_tensor(DataType::kFloat32, {2, 3}, rng);
  auto out = run_model(m, {{"n", Tensor::vector_int64({4})}, {"x", x}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  ASSERT_EQ(out->at("y").dims(), (std::vector<int64_t>{4, 2, 3}));
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(out->at("y").get(i), x.get(i % 6)) << i;
}

TEST(ControlFlow, PlanKeepsCapturesWhosOuterValueAPassRenamed) {
  // The branches read `xi`, an Identity of x that identity removal bypasses: the If's implicit input
  // becomes x, and the plan must write the branches' reads of `xi` as reads of `x`.
  OnnxModelBuilder m(17);
  m.input("c", DataType::kBool, {});
  m.input("x", DataType::kFloat32, {3});
  m.node("Identity", {"x"}, {"xi"}, "alias");
  auto& n = m.node("If", {"c"}, {"r"}, "choose");
  graph_attr(n, "then_branch").node("Relu", {"xi"}, {"pos"}).output("pos");
  graph_attr(n, "else_branch").node("Neg", {"xi"}, {"neg"}).output("neg");
  m.output("r", DataType::kFloat32);
  Tensor x = Tensor::from_doubles(DataType::kFloat32, {3}, {-1, 0.5, 2});
  for (bool c : {true, false}) {
    auto out = run_model(m, {{"c", scalar_bool(c)}, {"x", x}}, /*round_trip=*/true);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    EXPECT_EQ(values(out->at("r")), c ? std::vector<double>({0, 0.5, 2}) : std::vector<double>({1, -0.5, -2}));
  }
}

// Opset-8 Scan (a batch axis Scan-9 lacks): converted on import for a batch of 1, refused otherwise;
// tests/unit/opset_conversion_test.cpp (OpsetConversion.Scan8WithBatchOneBecomesScan9).

// ---- Loop --------------------------------------------------------------------------------------

// Loop(M, cond, acc): body reads `x` from the main graph; acc += x * i; scan output acc; cond_out =
// i < limit (limit from the main graph), so with a cond input the loop stops early.
OnnxModelBuilder loop_model(bool with_m, bool with_cond) {
  OnnxModelBuilder m(17);
  if (with_m) m.input("M", DataType::kInt64, {});
  if (with_cond) m.input("cond", DataType::kBool, {});
  m.input("acc0", DataType::kFloat32, {3});
  m.input("x", DataType::kFloat32, {3});
  m.input("limit", DataType::kInt64, {});
  auto& n = m.node("Loop", {with_m ? "M" : "", with_cond ? "cond" : "", "acc0"}, {"acc", "trace"}, "loop");
  graph_attr(n, "body")
      .input("i", DataType::kInt64)
      .input("c_in", DataType::kBool)
      .input("acc_in")  // untyped: the node's input gives it
      .node("Cast", {"i"}, {"fi"}, {{"to", 1}})
      .node("Mul", {"x", "fi"}, {"step"})
      .node("Add", {"acc_in", "step"}, {"acc_out"})
      .node("Less", {"i", "limit"}, {"c_out"})
      .node("Identity", {"acc_out"}, {"scan"})
      .output("c_out")
      .output("acc_out")
      .output("scan");
  m.output("acc", DataType::kFloat32);
  m.output("trace", DataType::kFloat32);
  return m;
}

TEST(ControlFlow, LoopFormsAgainstAPlainLoop) {
  std::mt19937 rng(seed());
  SCOPED_TRACE("seed " + std::to_string(seed()));
  struct Case { bool with_m, with_cond; int64_t m; bool cond; int64_t limit; };
  const std::vector<Case> cases = {
      {true, true, 5, true, 10},   // M ends it
      {true, true, 5, true, 2},    // the body's condition ends it (after i = 2)
      {true, true, 5, false, 10},  // never starts
      {true, true, 0, true, 10},   // zero iterations
      {true, false, 4, true, 0},   // for loop: the body's condition (false at once) is ignored
      {false, true, 0, true, 3},   // while loop
  };
  for (const Case& k : cases) {
    for (bool round_trip : {false, true}) {
      SCOPED_TRACE("M " + std::to_string(k.with_m ? k.m : -1) + " cond " + std::to_string(k.with_cond ? k.cond : -1) +
                   " limit " + std::to_string(k.limit) + (round_trip ? " (plan)" : ""));
      Tensor acc0 = random_tensor(DataType::kFloat32, {3}, rng), x = random_tensor(DataType::kFloat32, {3}, rng);
      std::map<std::string, Tensor> in{{"acc0", acc0}, {"x", x}, {"limit", Tensor::scalar_int64(k.limit)}};
      if (k.with_m) in["M"] = Tensor::scalar_int64(k.m);
      if (k.with_cond) in["cond"] = scalar_bool(k.cond);
      auto out = run_model(loop_model(k.with_m, k.with_cond), in, round_trip);
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      // The loop as ONNX defines it, written plainly.
      std::vector<double> acc = values(acc0), trace;
      bool go = k.with_cond ? k.cond : true;
      int64_t iters = 0;
      for (int64_t i = 0; (!k.with_m || i < k.m) && go; ++i, ++iters) {
        for (int j = 0; j < 3; ++j) acc[j] = static_cast<float>(acc[j] + static_cast<float>(x.get(j) * i));
        trace.insert(trace.end(), acc.begin(), acc.end());
        if (k.with_cond) go = i < k.limit;
      }
      testing::expect_values_close(out->at("acc"), acc, 1e-6, "acc");
      ASSERT_EQ(out->at("trace").dims(), (std::vector<int64_t>{iters, 3}));
      testing::expect_values_close(out->at("trace"), trace, 1e-6, "trace");
    }
  }
}

// A custom op inside a Loop body runs through the same op entry as in the main graph, plan included.
TEST(ControlFlow, CustomOpInALoopBody) {
  std::mt19937 rng(seed());
  SCOPED_TRACE("seed " + std::to_string(seed()));
  for (int64_t trips : {3, 0}) {
    for (bool round_trip : {false, true}) {
      SCOPED_TRACE("M " + std::to_string(trips) + (round_trip ? " (plan)" : ""));
      Tensor x = random_tensor(DataType::kFloat32, {2, 5}, rng, -3, 3), w = random_tensor(DataType::kFloat32, {5}, rng);
      auto out = run_model(testing::custom_op_loop_model(), {{"x", x}, {"w", w}, {"M", Tensor::scalar_int64(trips)}},
                           round_trip);
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      std::vector<double> v = values(x);
      for (int64_t i = 0; i < trips; ++i)
        for (size_t j = 0; j < v.size(); ++j) v[j] = v[j] / (1 + std::exp(-v[j])) + w.get(static_cast<int64_t>(j % 5));
      testing::expect_values_close(out->at("y"), v, 1e-5, "y");
    }
  }
}

TEST(ControlFlow, LoopWithAKnownTripCountHasAStaticScanOutput) {
  OnnxModelBuilder m = loop_model(true, false);
  m.model().mutable_graph()->mutable_input()->erase(m.model().mutable_graph()->mutable_input()->begin());
  m.initializer("M", Tensor::scalar_int64(6));
  auto engine = Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, "loop.onnx");
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  for (const auto& o : (*engine)->outputs())
    EXPECT_EQ(o.shape, o.name == "trace" ? "[6,3]" : "[3]") << o.name;
}

TEST(ControlFlow, NestedSubgraphsReadTheMainGraphThroughTwoScopes) {
  // Loop body holds an If whose branches read `bias` from the main graph: the If captures it from
  // the body, which captures it from the main graph. acc += (i even ? bias : -bias).
  OnnxModelBuilder m(17);
  m.input("M", DataType::kInt64, {});
  m.input("acc0", DataType::kFloat32, {2});
  m.input("bias", DataType::kFloat32, {2});
  auto& loop = m.node("Loop", {"M", "", "acc0"}, {"acc"}, "outer");
  Sub body = graph_attr(loop, "body");
  body.input("i", DataType::kInt64).input("c", DataType::kBool).input("a", DataType::kFloat32)
      .constant("two", Tensor::scalar_int64(2))
      .constant("zero", Tensor::scalar_int64(0))
      .node("Mod", {"i", "two"}, {"r"})
      .node("Equal", {"r", "zero"}, {"even"});
  auto* inner = body.g->add_node();
  inner->set_op_type("If");
  inner->set_name("inner_if");
  inner->add_input("even");
  inner->add_output("delta");
  graph_attr(*inner, "then_branch").node("Identity", {"bias"}, {"pos"}).output("pos");
  graph_attr(*inner, "else_branch").node("Neg", {"bias"}, {"neg"}).output("neg");
  body.node("Add", {"a", "delta"}, {"a_out"}).node("Identity", {"c"}, {"c_out"}).output("c_out").output("a_out");
  m.output("acc", DataType::kFloat32);

  std::mt19937 rng(seed());
  SCOPED_TRACE("seed " + std::to_string(seed()));
  Tensor acc0 = random_tensor(DataType::kFloat32, {2}, rng), bias = random_tensor(DataType::kFloat32, {2}, rng);
  for (bool round_trip : {false, true}) {
    auto out = run_model(m, {{"M", Tensor::scalar_int64(5)}, {"acc0", acc0}, {"bias", bias}}, round_trip);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    std::vector<double> want = values(acc0);
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 2; ++j) want[j] = static_cast<float>(want[j] + (i % 2 == 0 ? bias.get(j) : -bias.get(j)));
    testing::expect_values_close(out->at("acc"), want, 1e-6, round_trip ? "acc (plan)" : "acc");
  }
}

// ---- Scan --------------------------------------------------------------------------------------

TEST(ControlFlow, ScanWithAxesAndDirectionsAgainstAPlainLoop) {
  std::mt19937 rng(seed());
  SCOPED_TRACE("seed " + std::to_string(seed()));
  const int64_t len = 4;
  OnnxModelBuilder m = testing::scan_axes_and_directions_model(len);
  Tensor s0 = random_tensor(DataType::kFloat32, {2}, rng), a = random_tensor(DataType::kFloat32, {2, len}, rng),
         b = random_tensor(DataType::kFloat32, {len, 2}, rng), w = random_tensor(DataType::kFloat32, {2}, rng);
  for (bool round_trip : {false, true}) {
    auto out = run_model(m, {{"s0", s0}, {"a", a}, {"b", b}, {"w", w}}, round_trip);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    std::vector<double> s = values(s0), ys(2 * len), ds(len * 2);
    for (int64_t t = 0; t < len; ++t) {
      const int64_t tb = len - 1 - t;  // b is scanned backwards
      for (int64_t j = 0; j < 2; ++j) {
        const float at = static_cast<float>(a.get(j * len + t)), bt = static_cast<float>(b.get(tb * 2 + j));
        s[j] = static_cast<float>(s[j] + static_cast<float>(at * bt) * static_cast<float>(w.get(j)));
        ys[j * len + (len - 1 - t)] = s[j];  // axis 1, written backwards
        ds[t * 2 + j] = at - bt;
      }
    }
    testing::expect_values_close(out->at("s"), s, 1e-5, "state");
    ASSERT_EQ(out->at("ys").dims(), (std::vector<int64_t>{2, len}));
    testing::expect_values_close(out->at("ys"), ys, 1e-5, "ys");
    ASSERT_EQ(out->at("ds").dims(), (std::vector<int64_t>{len, 2}));
    testing::expect_values_close(out->at("ds"), ds, 1e-5, "ds");
  }
}

TEST(ControlFlow, ScanInfersItsOutputsAtBuildTime) {
  OnnxModelBuilder m(17);
  m.input("s0", DataType::kFloat32, {3});
  m.input("x", DataType::kFloat32, {"n", 3});
  auto& n = m.node("Scan", {"s0", "x"}, {"s", "ys"}, "scan");
  OnnxModelBuilder::attr(n, "num_scan_inputs", int64_t{1});
  OnnxModelBuilder::attr(n, "scan_output_axes", std::vector<int64_t>{1});
  graph_attr(n, "body").input("s_in").input("xt").node("Add", {"s_in", "xt"}, {"s_out"})
      .node("Identity", {"s_out"}, {"y"}).output("s_out").output("y");
  m.output("s", DataType::kFloat32);
  m.output("ys", DataType::kFloat32);
  BuilderConfig cfg;
  cfg.profile["x"] = ProfileRange{{0, 3}, {4, 3}, {8, 3}};
  auto engine = Engine::build_from_onnx_bytes(m.bytes(), cfg, "scan.onnx");
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  for (const auto& o : (*engine)->outputs())
    EXPECT_EQ(o.shape, o.name == "ys" ? "[3,n]" : "[3]") << o.name;
  // Zero scan steps: the state passes through, the scan output is empty.
  auto out = run_model(m, {{"s0", Tensor::from_doubles(DataType::kFloat32, {3}, {1, 2, 3})},
                           {"x", Tensor::empty(DataType::kFloat32, {0, 3})}},
                      false, cfg);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(values(out->at("s")), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(out->at("ys").dims(), (std::vector<int64_t>{3, 0}));
}

// ---- bad models ----------------------------------------------------------------------------------

// Building `m` fails naming `node`, and `attr` and `text` in the message when they are not empty.
void expect_build_error(const OnnxModelBuilder& m, const std::string& node, const std::string& attr,
                        const std::string& text) {
  auto e = Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, "bad.onnx");
  ASSERT_FALSE(e.is_ok());
  const Status& st = e.status();
  EXPECT_EQ(st.node_name(), node) << st.to_string();
  if (!attr.empty()) EXPECT_EQ(st.attribute(), attr) << st.to_string();
  if (!text.empty()) EXPECT_TRUE(contains(st.message(), text)) << st.to_string();
}

TEST(ControlFlow, MissingBranchIsNamed) {
  OnnxModelBuilder m(17);
  m.input("c", DataType::kBool, {});
  m.input("x", DataType::kFloat32, {2});
  auto& n = m.node("If", {"c"}, {"r"}, "half_if");
  graph_attr(n, "then_branch").node("Relu", {"x"}, {"y"}).output("y");
  m.output("r", DataType::kFloat32);
  expect_build_error(m, "half_if", "else_branch", "missing");
}

TEST(ControlFlow, BranchWithTheWrongOutputCountIsNamed) {
  OnnxModelBuilder m(17);
  m.input("c", DataType::kBool, {});
  m.input("x", DataType::kFloat32, {2});
  auto& n = m.node("If", {"c"}, {"r"}, "if2");
  graph_attr(n, "then_branch").node("Relu", {"x"}, {"y"}).output("y").output("x");
  graph_attr(n, "else_branch").output("x");
  m.output("r", DataType::kFloat32);
  expect_build_error(m, "if2", "then_branch", "then_branch has 2 outputs but the node has 1");
}

TEST(ControlFlow, NonBoolConditionIsNamed) {
  OnnxModelBuilder m = if_model();
  m.model().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  expect_build_error(m, "choose", "", "cond ('c') must be bool, not float32");
}

TEST(ControlFlow, BranchesOfDifferentDtypesAreNamed) {
  OnnxModelBuilder m(17);
  m.input("c", DataType::kBool, {});
  m.input("x", DataType::kFloat32, {2});
  auto& n = m.node("If", {"c"}, {"r"}, "mixed");
  graph_attr(n, "then_branch").output("x");
  graph_attr(n, "else_branch").node("Cast", {"x"}, {"xi"}, {{"to", 7}}).output("xi");
  m.output("r", DataType::kFloat32);
  expect_build_error(m, "mixed", "", "float32 in then_branch but int64 in else_branch");
}

// Loop `name` over (M, "", v: float32 `dims`) -> r, its body taking (i, c, v_in) and returning
// (c, v_out) through the node `op` applied to v_in (its int attributes `attrs`). Without `with_m`
// the trip count is left out too.
OnnxModelBuilder one_value_loop(const std::string& name, const std::vector<testing::DimSpec>& dims,
                                const std::string& op, std::vector<std::pair<std::string, int64_t>> attrs = {},
                                DataType declared = DataType::kUndefined, bool with_m = true) {
  OnnxModelBuilder m(17);
  if (with_m) m.input("M", DataType::kInt64, {});
  m.input("v", DataType::kFloat32, dims);
  auto& n = m.node("Loop", {with_m ? "M" : "", "", "v"}, {"r"}, name);
  const std::vector<std::string> in = op == "MatMul" ? std::vector<std::string>{"v_in", "v_in"}
                                                     : std::vector<std::string>{"v_in"};
  graph_attr(n, "body").input("i").input("c").input("v_in", declared).node(op, in, {"v_out"}, std::move(attrs))
      .output("c").output("v_out");
  m.output("r", DataType::kFloat32);
  return m;
}

TEST(ControlFlow, LoopCarriedDtypeMismatchIsNamed) {
  expect_build_error(one_value_loop("bad_loop", {2}, "Cast", {{"to", 7}}), "bad_loop", "body",
                     "enters the body as float32 but the body returns int64");
}

TEST(ControlFlow, LoopBodyDeclaringAnotherDtypeIsNamed) {
  expect_build_error(one_value_loop("decl_loop", {2}, "Identity", {}, DataType::kInt32), "decl_loop", "",
                     "('v_in') is declared int32 but receives float32");
}

TEST(ControlFlow, LoopWithoutTripCountOrConditionIsRefusedWhenRun) {
  OnnxModelBuilder m = one_value_loop("forever", {2}, "Identity", {}, DataType::kUndefined, /*with_m=*/false);
  auto out = run_model(m, {{"v", Tensor::from_doubles(DataType::kFloat32, {2}, {1, 2})}});
  ASSERT_FALSE(out.is_ok());
  EXPECT_EQ(out.status().node_name(), "forever");
  EXPECT_TRUE(contains(out.status().message(), "would never end")) << out.status().to_string();
}

TEST(ControlFlow, SubgraphReadingAnUndefinedNameIsNamed) {
  OnnxModelBuilder m(17);
  m.input("c", DataType::kBool, {});
  auto& n = m.node("If", {"c"}, {"r"}, "lost");
  graph_attr(n, "then_branch").node("Relu", {"nowhere"}, {"y"}).output("y");
  graph_attr(n, "else_branch").node("Relu", {"nowhere"}, {"z"}).output("z");
  m.output("r", DataType::kFloat32);
  auto g = import_onnx_bytes(m.bytes(), "lost.onnx");
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().node_name(), "lost");
  EXPECT_TRUE(contains(g.status().message(), "reads 'nowhere'")) << g.status().to_string();
}

TEST(ControlFlow, ErrorInsideABodyNamesBothNodes) {
  // The body's MatMul gets shapes that do not agree: the error names the Loop, its attribute and the
  // MatMul inside.
  OnnxModelBuilder m = one_value_loop("outer_loop", {2, 3}, "MatMul");
  expect_build_error(m, "outer_loop", "", "subgraph 'body'");
  expect_build_error(m, "outer_loop", "", "(MatMul)");
}

TEST(ControlFlow, ScanAttributeOfTheWrongLengthIsNamed) {
  OnnxModelBuilder m(17);
  m.input("s0", DataType::kFloat32, {3});
  m.input("x", DataType::kFloat32, {2, 3});
  auto& n = m.node("Scan", {"s0", "x"}, {"s"}, "scan_bad");
  OnnxModelBuilder::attr(n, "num_scan_inputs", int64_t{1});
  OnnxModelBuilder::attr(n, "scan_input_axes", std::vector<int64_t>{0, 1});
  graph_attr(n, "body").input("s_in").input("xt").node("Add", {"s_in", "xt"}, {"s_out"}).output("s_out");
  m.output("s", DataType::kFloat32);
  expect_build_error(m, "scan_bad", "scan_input_axes", "");
}

}  // namespace
}  // namespace graft
