// inline_constant_ifs (src/graph/inline_constant_ifs.cpp): an If whose condition is a constant
// becomes the branch it takes, with the same outputs on fresh random inputs; an If whose condition
// is known only at run time, or whose taken branch nests a subgraph, is left as it is. The builder
// inlines an If whose condition constant folding resolved, so the branch it never takes is never
// inferred.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "graft/engine.h"
#include "graph/passes.h"
#include "tests/unit/graph_pass_test_util.h"

namespace graft {
namespace {

using testing::check_pass;
using testing::count_op;
using testing::graph_attr;
using testing::load;
using testing::OnnxModelBuilder;

uint32_t seed() { return std::random_device{}(); }

Tensor bool_scalar(bool b) {
  Tensor t = Tensor::empty(DataType::kBool, {});
  t.set(0, b ? 1 : 0);
  return t;
}

struct IfForm {
  bool cond = true;
  bool cond_is_input = false;  // known only at run time
  bool nested_if = false;      // the then branch holds an If of its own
};

// x [2, 3], w [3]: then = Relu(x * w) + k (k a constant of the branch), else = Neg(x); the If's
// output and a second output (then: x itself, a captured value handed on; else: w) are read after it.
OnnxModelBuilder if_model(const IfForm& f) {
  OnnxModelBuilder m(17);
  m.input("x", DataType::kFloat32, {2, 3});
  m.input("w", DataType::kFloat32, {3});
  if (f.cond_is_input) m.input("c", DataType::kBool, {});
  else m.initializer("c", bool_scalar(f.cond));
  auto& n = m.node("If", {"c"}, {"r", "side"}, "choose");
  Tensor k = Tensor::empty(DataType::kFloat32, {});
  k.set(0, 0.25);
  auto then_b = graph_attr(n, "then_branch");
  then_b.constant("k", k).node("Mul", {"x", "w"}, {"xw"}).node("Relu", {"xw"}, {"rl"}).node("Add", {"rl", "k"}, {"t"});
  if (f.nested_if) {
    auto& inner = *then_b.g->add_node();
    inner.set_op_type("If");
    inner.set_name("inner_if");
    inner.add_input("c");
    inner.add_output("picked");
    graph_attr(inner, "then_branch").node("Identity", {"x"}, {"a"}).output("a");
    graph_attr(inner, "else_branch").node("Neg", {"x"}, {"b"}).output("b");
    then_b.node("Add", {"t", "picked"}, {"t2"}).output("t2");
  } else {
    then_b.output("t");
  }
  then_b.output("x");
  graph_attr(n, "else_branch").node("Neg", {"x"}, {"e"}).output("e").output("w");
  m.node("Sigmoid", {"r"}, {"y"}, "after");
  m.output("y", DataType::kFloat32);
  m.output("side", DataType::kFloat32);
  return m;
}

TEST(InlineConstantIfs, AConstantConditionBecomesItsBranch) {
  for (bool cond : {true, false}) {
    SCOPED_TRACE(cond ? "then" : "else");
    IfForm f;
    f.cond = cond;
    auto g = load(if_model(f));
    ASSERT_TRUE(g);
    check_pass(*g, inline_constant_ifs, 1, seed(), 0.0, 0.0);  // the same arithmetic: bit-exact
    EXPECT_EQ(count_op(*g, "If"), 0);
    EXPECT_EQ(count_op(*g, "Relu"), cond ? 1 : 0);
    EXPECT_EQ(count_op(*g, "Neg"), cond ? 0 : 1);
  }
}

TEST(InlineConstantIfs, RunTimeConditionsAndNestedBranchesStay) {
  std::vector<std::pair<std::string, IfForm>> forms;
  IfForm input;
  input.cond_is_input = true;
  forms.push_back({"condition from an input", input});
  IfForm nested;
  nested.nested_if = true;
  forms.push_back({"taken branch nests an If", nested});
  for (const auto& [what, f] : forms) {
    SCOPED_TRACE(what);
    auto g = load(if_model(f));
    ASSERT_TRUE(g);
    check_pass(*g, inline_constant_ifs, 0, seed(), 0.0, 0.0);
    EXPECT_GE(count_op(*g, "If"), 1);
  }
}

// The builder: an If whose condition is shape arithmetic (ONNX's function bodies pick their rank's
// path this way) is gone from the engine, and the branch it never takes, which cannot be built for
// this input (a Reshape to 5 elements of a 4-element x), is never looked at.
TEST(InlineConstantIfs, TheBuilderInlinesAFoldedCondition) {
  OnnxModelBuilder m(18);
  m.input("x", DataType::kFloat32, {2, 2});
  m.initializer("four", Tensor::from_doubles(DataType::kInt64, {}, {4}));
  m.initializer("five", Tensor::vector_int64({5}));
  m.node("Size", {"x"}, {"n"}, "count");
  m.node("Equal", {"n", "four"}, {"is4"}, "test");
  auto& n = m.node("If", {"is4"}, {"r"}, "choose");
  graph_attr(n, "then_branch").node("Neg", {"x"}, {"neg"}).output("neg");
  graph_attr(n, "else_branch").node("Reshape", {"x", "five"}, {"bad"}).output("bad");
  m.output("r", DataType::kFloat32);
  auto engine = Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, "if_folded.onnx");
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  const std::string d = (*engine)->describe();
  EXPECT_EQ(d.find("[If]"), std::string::npos) << d;
  EXPECT_NE(d.find("[Neg]"), std::string::npos) << d;
  auto ctx = (*engine)->create_context();
  ASSERT_TRUE(ctx.is_ok());
  std::mt19937 rng(seed());
  std::uniform_real_distribution<double> u(-1, 1);
  Tensor x = Tensor::empty(DataType::kFloat32, {2, 2});
  for (int64_t i = 0; i < 4; ++i) x.set(i, u(rng));
  std::map<std::string, Tensor> out;
  ASSERT_TRUE((*ctx)->run({{"x", x}}, out).is_ok());
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(out.at("r").get(i), -x.get(i)) << i;
}

}  // namespace
}  // namespace graft
