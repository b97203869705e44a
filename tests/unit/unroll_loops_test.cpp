// unroll_fixed_loops (src/graph/unroll_loops.cpp): a Loop that runs a trip count known at build time
// becomes its iterations, with the same outputs on fresh random inputs; a Loop that may stop early,
// runs no iteration, runs too many or nests a subgraph is left as it is.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

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

struct LoopForm {
  int64_t trips = 5;
  bool trips_is_input = false;  // M computed at run time (a graph input)
  bool cond_input = false;      // a constant true cond input
  bool body_cond = false;       // the body computes its condition (i < 3) instead of handing it on
  bool cond_identity = false;   // the body hands its condition on through an Identity
  bool nested_if = false;       // the body holds an If
};

Tensor half() {
  Tensor t = Tensor::empty(DataType::kFloat32, {});
  t.set(0, 0.5);
  return t;
}

// Loop over x [2, 3]: acc += x * i and x2 = Relu(x2) * 0.5 are carried, `keep` is carried unchanged;
// the scan outputs are acc after each step and the iteration number.
OnnxModelBuilder loop_model(const LoopForm& f) {
  OnnxModelBuilder m(17);
  m.input("x", DataType::kFloat32, {2, 3});
  m.input("acc0", DataType::kFloat32, {2, 3});
  m.input("keep0", DataType::kFloat32, {3});
  if (f.trips_is_input) m.input("M", DataType::kInt64, {});
  else m.initializer("M", Tensor::scalar_int64(f.trips));
  Tensor t = Tensor::empty(DataType::kBool, {});
  t.set(0, 1);
  m.initializer("go", t);
  auto& n = m.node("Loop", {"M", f.cond_input ? "go" : "", "acc0", "x", "keep0"},
                   {"acc", "x_last", "keep", "trace", "iters"}, "loop");
  auto body = graph_attr(n, "body");
  body.input("i", DataType::kInt64)
      .input("c_in", DataType::kBool)
      .input("acc_in")
      .input("x_in")
      .input("keep_in")
      .constant("half", half())
      .node("Cast", {"i"}, {"fi"}, {{"to", 1}})
      .node("Mul", {"x", "fi"}, {"step"})
      .node("Add", {"acc_in", "step"}, {"acc_out"})
      .node("Relu", {"x_in"}, {"r"})
      .node("Mul", {"r", "half"}, {"x_out"})
      .node("Identity", {"acc_out"}, {"scan"});
  if (f.nested_if) {
    auto& inner = *body.g->add_node();
    inner.set_op_type("If");
    inner.set_name("inner_if");
    inner.add_input("c_in");
    inner.add_output("picked");
    graph_attr(inner, "then_branch").node("Identity", {"x_in"}, {"a"}).output("a");
    graph_attr(inner, "else_branch").node("Neg", {"x_in"}, {"b"}).output("b");
    body.node("Add", {"picked", "x_out"}, {"x_out2"});
  }
  if (f.body_cond) {
    body.constant("three", Tensor::scalar_int64(3)).node("Less", {"i", "three"}, {"c_out"}).output("c_out");
  } else if (f.cond_identity) {
    body.node("Identity", {"c_in"}, {"c_same"}).output("c_same");
  } else {
    body.output("c_in");
  }
  body.output("acc_out").output(f.nested_if ? "x_out2" : "x_out").output("keep_in").output("scan").output("i");
  for (const char* o : {"acc", "x_last", "keep", "trace"}) m.output(o, DataType::kFloat32);
  m.output("iters", DataType::kInt64);
  return m;
}

// Every form that runs exactly M iterations: a for loop (ONNX ignores the body's condition without a
// cond input, so a computed one changes nothing), and a constant-true cond the body hands on.
TEST(UnrollLoops, LoopsThatCannotStopEarlyBecomeTheirIterations) {
  std::vector<std::pair<std::string, LoopForm>> forms;
  for (int64_t trips : {1, 2, 5}) {
    LoopForm f;
    f.trips = trips;
    forms.push_back({"for loop of " + std::to_string(trips), f});
  }
  LoopForm handed_on;
  handed_on.cond_input = true;
  forms.push_back({"constant true condition handed on", handed_on});
  LoopForm through_identity;
  through_identity.cond_input = through_identity.cond_identity = true;
  forms.push_back({"constant true condition handed on through an Identity", through_identity});
  LoopForm ignored;
  ignored.body_cond = true;
  forms.push_back({"for loop computing a condition", ignored});
  for (const auto& [what, f] : forms) {
    SCOPED_TRACE(what);
    auto g = load(loop_model(f));
    ASSERT_TRUE(g);
    check_pass(*g, unroll_fixed_loops, 1, seed(), 0.0, 0.0);  // the same arithmetic: bit-exact
    EXPECT_EQ(count_op(*g, "Loop"), 0);
    EXPECT_EQ(count_op(*g, "Relu"), f.trips);
    EXPECT_EQ(count_op(*g, "Concat"), f.trips > 1 ? 2 : 0);  // the two scan outputs
    std::vector<int64_t> dims;
    for (const Value* v : g->outputs())
      if (v->name == "trace") {
        ASSERT_TRUE(static_dims_of(v, &dims));
        EXPECT_EQ(dims, (std::vector<int64_t>{f.trips, 2, 3}));
      }
  }
}

TEST(UnrollLoops, LoopsThatAreNotFixedStay) {
  std::vector<std::pair<std::string, LoopForm>> forms;
  LoopForm early;  // cond input and a body condition: may stop after 3 iterations
  early.cond_input = early.body_cond = true;
  forms.push_back({"may stop early", early});
  LoopForm zero;
  zero.trips = 0;
  forms.push_back({"no iteration", zero});
  LoopForm many;
  many.trips = 65;
  forms.push_back({"over 64 iterations", many});
  LoopForm input;
  input.trips_is_input = true;
  forms.push_back({"trip count from an input", input});
  LoopForm nested;
  nested.nested_if = true;
  forms.push_back({"nested If", nested});
  for (const auto& [what, f] : forms) {
    SCOPED_TRACE(what);
    auto g = load(loop_model(f));
    ASSERT_TRUE(g);
    if (f.trips_is_input) {
      auto n = unroll_fixed_loops(*g);
      ASSERT_TRUE(n.is_ok()) << n.status().to_string();
      EXPECT_EQ(*n, 0);
    } else {
      check_pass(*g, unroll_fixed_loops, 0, seed(), 0.0, 0.0);
    }
    EXPECT_EQ(count_op(*g, "Loop"), 1);
  }
}

}  // namespace
}  // namespace graft
