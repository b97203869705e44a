// Elementwise builtin ops: shape/dtype inference (incl. symbolic broadcasting and symbolic integer
// contents), error paths, and the CPU reference kernels against straightforward formulas written
// here, on fresh random data.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "op_test_util.h"

using namespace graft;
using graft::testing::OneNode;
using graft::testing::random_tensor;

namespace {

uint32_t fresh_seed() { return std::random_device{}(); }

double abs_tol(DataType t) {
  switch (t) {
    case DataType::kFloat16: return 2e-3;
    case DataType::kBFloat16: return 1.6e-2;
    case DataType::kFloat32: return 1e-5;
    case DataType::kFloat64: return 1e-12;
    default: return 0;
  }
}

// |got - want| <= tol * (1 + |want|); NaN only where expected.
void expect_close(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  const double tol = abs_tol(got.dtype());
  int bad = 0;
  for (int64_t i = 0; i < got.numel() && bad < 5; ++i) {
    double g = got.get(i), w = want[i];
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::isinf(w) && g == w) continue;
    if (!(std::fabs(g - w) <= tol * (1 + std::fabs(w)))) {
      ADD_FAILURE() << what << " [" << i << "]: got " << g << ", want " << w;
      ++bad;
    }
  }
}

// Runs only inference, with chosen descs, constant values and symbolic contents per input.
struct InferOnly {
  Graph graph;
  Node* node = nullptr;
  std::vector<TensorDesc> descs;
  std::vector<Tensor> values;  // undefined: not known
  std::vector<std::optional<std::vector<Dim>>> syms;
  std::vector<TensorDesc> outputs;
  std::vector<std::optional<std::vector<Dim>>> out_syms;

  InferOnly(const std::string& op, std::vector<TensorDesc> d, size_t num_outputs = 1) : descs(std::move(d)) {
    node = graph.add_node("n_" + op, op);
    for (size_t i = 0; i < descs.size(); ++i) {
      Value* v = graph.add_value("in" + std::to_string(i));
      v->desc = descs[i];
      node->inputs.push_back(v);
    }
    for (size_t i = 0; i < num_outputs; ++i) node->outputs.push_back(graph.add_value("out" + std::to_string(i)));
    values.resize(descs.size());
    syms.resize(descs.size());
  }
  Status run(int opset = 17) {
    const OpEntry* op = find_onnx_op(node->op_type);
    if (!op) return error(StatusCode::kUnsupported, "no op ", node->op_type);
    std::vector<InferContext::InputInfo> infos;
    for (size_t i = 0; i < descs.size(); ++i) {
      InferContext::InputInfo info;
      info.desc = &descs[i];
      if (values[i].defined()) info.value = &values[i];
      if (syms[i]) info.sym_value = &*syms[i];
      infos.push_back(info);
    }
    InferContext ctx(*node, infos, opset);
    Status st = op->infer(ctx);
    outputs = ctx.outputs();
    out_syms = ctx.output_sym_values();
    return st;
  }
};

Shape S(std::initializer_list<Dim> d) { return Shape(d); }

std::string dims_str(const std::vector<Dim>& v) { return shape_to_string(v); }

}  // namespace

// ---- inference ----------------------------------------------------------------------------------

TEST(ElementwiseInfer, SymbolicBroadcast) {
  Dim b = Dim::symbol("batch"), s = Dim::symbol("seq");
  InferOnly t("Add", {TensorDesc(DataType::kFloat32, S({b, 1, 4})), TensorDesc(DataType::kFloat32, S({s, 1}))});
  ASSERT_TRUE(t.run().is_ok());
  ASSERT_TRUE(t.outputs[0].shape);
  EXPECT_EQ(t.outputs[0].dtype, DataType::kFloat32);
  const Shape& o = *t.outputs[0].shape;
  ASSERT_EQ(o.size(), 3u);
  EXPECT_TRUE(o[0].same_as(b));
  EXPECT_TRUE(o[1].same_as(s));
  EXPECT_TRUE(o[2] == 4);
}

TEST(ElementwiseInfer, WhereBroadcastsThreeWays) {
  Dim b = Dim::symbol("b");
  InferOnly t("Where", {TensorDesc(DataType::kBool, S({b, 1})), TensorDesc(DataType::kInt64, S({1, 5})),
                        TensorDesc(DataType::kInt64, S({}))});
  ASSERT_TRUE(t.run().is_ok());
  EXPECT_EQ(t.outputs[0].dtype, DataType::kInt64);
  EXPECT_EQ(shape_to_string(*t.outputs[0].shape), "[b,5]");
}

TEST(ElementwiseInfer, ComparisonsGiveBool) {
  for (const char* op : {"Equal", "Less", "Greater"}) {
    InferOnly t(op, {TensorDesc(DataType::kFloat16, S({2, 3})), TensorDesc(DataType::kFloat16, S({3}))});
    ASSERT_TRUE(t.run().is_ok()) << op;
    EXPECT_EQ(t.outputs[0].dtype, DataType::kBool) << op;
    EXPECT_EQ(shape_to_string(*t.outputs[0].shape), "[2,3]") << op;
  }
}

TEST(ElementwiseInfer, UnknownRankPropagates) {
  InferOnly t("Relu", {TensorDesc()});
  t.descs[0].dtype = DataType::kFloat32;
  ASSERT_TRUE(t.run().is_ok());
  EXPECT_FALSE(t.outputs[0].shape.has_value());
}

TEST(ElementwiseInfer, VariadicMaxBroadcastsAll) {
  InferOnly t("Max", {TensorDesc(DataType::kFloat32, S({3, 1, 1})), TensorDesc(DataType::kFloat32, S({1, 4, 1})),
                      TensorDesc(DataType::kFloat32, S({5}))});
  ASSERT_TRUE(t.run().is_ok());
  EXPECT_EQ(shape_to_string(*t.outputs[0].shape), "[3,4,5]");
}

TEST(ElementwiseInfer, CastSetsDtype) {
  InferOnly t("Cast", {TensorDesc(DataType::kFloat32, S({2, Dim::symbol("n")}))});
  t.node->attrs.set("to", int64_t{10});
  ASSERT_TRUE(t.run().is_ok());
  EXPECT_EQ(t.outputs[0].to_string(), "float16[2,n]");
}

TEST(ElementwiseInfer, AddIncompatibleShapesFailsNamingBoth) {
  std::mt19937 rng(fresh_seed());
  OneNode n("Add", {random_tensor(DataType::kFloat32, {3, 4}, rng), random_tensor(DataType::kFloat32, {5, 6}, rng)});
  auto r = n.run();
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("[3,4]"), std::string::npos) << r.status().to_string();
  EXPECT_NE(r.status().message().find("[5,6]"), std::string::npos) << r.status().to_string();
}

TEST(ElementwiseInfer, MismatchedDtypesFail) {
  InferOnly t("Mul", {TensorDesc(DataType::kFloat32, S({2})), TensorDesc(DataType::kFloat16, S({2}))});
  Status st = t.run();
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("float16"), std::string::npos) << st.to_string();
}

TEST(ElementwiseInfer, UnsupportedDtypeFails) {
  InferOnly t("Sigmoid", {TensorDesc(DataType::kInt64, S({2}))});
  Status st = t.run();
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  EXPECT_NE(st.message().find("int64"), std::string::npos) << st.to_string();
}

TEST(ElementwiseInfer, WrongAttributeTypesFail) {
  struct Case {
    const char* op;
    const char* attr;
    AttrValue value;
  };
  std::vector<Case> cases = {{"LeakyRelu", "alpha", std::string("big")},
                             {"HardSigmoid", "beta", int64_t{1}},
                             {"Gelu", "approximate", 1.0f},
                             {"Gelu", "approximate", std::string("fast")},
                             {"Cast", "to", 1.0f},
                             {"Cast", "to", int64_t{14}}};  // 14 = complex64: not a graft dtype
  for (const auto& c : cases) {
    InferOnly t(c.op, {TensorDesc(DataType::kFloat32, S({2}))});
    t.node->attrs.set(c.attr, c.value);
    Status st = t.run();
    ASSERT_FALSE(st.is_ok()) << c.op << "." << c.attr;
    EXPECT_EQ(st.attribute(), c.attr) << st.to_string();
  }
  InferOnly cast("Cast", {TensorDesc(DataType::kFloat32, S({2}))});
  Status st = cast.run();  // 'to' is required
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.attribute(), "to");
}

TEST(ElementwiseInfer, ClipBoundsMustBeScalars) {
  InferOnly t("Clip", {TensorDesc(DataType::kFloat32, S({2, 3})), TensorDesc(DataType::kFloat32, S({3}))});
  EXPECT_FALSE(t.run().is_ok());
}

// ---- symbolic integer contents ------------------------------------------------------------------

TEST(ElementwiseSym, ShapeArithmeticResolves) {
  Dim b = Dim::symbol("batch"), s = Dim::symbol("seq");
  auto run_binary = [&](const char* op, std::vector<Dim> lhs, std::vector<int64_t> rhs) {
    InferOnly t(op, {TensorDesc(DataType::kInt64, S({static_cast<int64_t>(lhs.size())})),
                     TensorDesc(DataType::kInt64, S({static_cast<int64_t>(rhs.size())}))});
    t.syms[0] = lhs;
    t.values[1] = Tensor::vector_int64(rhs);
    EXPECT_TRUE(t.run().is_ok()) << op;
    EXPECT_TRUE(t.out_syms[0].has_value()) << op;
    return t.out_syms[0].value_or(std::vector<Dim>{});
  };
  EXPECT_EQ(dims_str(run_binary("Mul", {b, s}, {2})), shape_to_string({b * 2, s * 2}));
  EXPECT_EQ(dims_str(run_binary("Add", {b, 3}, {1, 4})), shape_to_string({b + 1, 7}));
  EXPECT_EQ(dims_str(run_binary("Sub", {s}, {1})), shape_to_string({s - 1}));
  EXPECT_EQ(dims_str(run_binary("Div", {b * 4, 12}, {4})), shape_to_string({floor_div(b * 4, 4), 3}));
  auto eq = run_binary("Equal", {b, 5}, {5});
  ASSERT_EQ(eq.size(), 2u);
  EXPECT_TRUE(eq[1] == 1);
  EXPECT_FALSE(eq[0].is_const());
}

TEST(ElementwiseSym, CastIdentityWherePropagate) {
  Dim b = Dim::symbol("batch");
  {
    InferOnly t("Cast", {TensorDesc(DataType::kInt64, S({2}))});
    t.node->attrs.set("to", int64_t{6});
    t.syms[0] = std::vector<Dim>{b, 3};
    ASSERT_TRUE(t.run().is_ok());
    ASSERT_TRUE(t.out_syms[0]);
    EXPECT_EQ(dims_str(*t.out_syms[0]), "[batch,3]");
  }
  {
    InferOnly t("Cast", {TensorDesc(DataType::kInt64, S({2}))});
    t.node->attrs.set("to", int64_t{1});  // to float: contents are no longer dims
    t.syms[0] = std::vector<Dim>{b, 3};
    ASSERT_TRUE(t.run().is_ok());
    EXPECT_FALSE(t.out_syms[0]);
  }
  {
    InferOnly t("Identity", {TensorDesc(DataType::kInt64, S({1}))});
    t.syms[0] = std::vector<Dim>{b};
    ASSERT_TRUE(t.run().is_ok());
    ASSERT_TRUE(t.out_syms[0]);
    EXPECT_EQ(dims_str(*t.out_syms[0]), "[batch]");
  }
  {
    // Where(Equal(target, 0), shape, target) as exported for Reshape's "0 copies the dim".
    InferOnly t("Where", {TensorDesc(DataType::kBool, S({2})), TensorDesc(DataType::kInt64, S({2})),
                          TensorDesc(DataType::kInt64, S({2}))});
    t.values[0] = Tensor::from_doubles(DataType::kBool, {2}, {1, 0});
    t.syms[1] = std::vector<Dim>{b, 7};
    t.values[2] = Tensor::vector_int64({0, -1});
    ASSERT_TRUE(t.run().is_ok());
    ASSERT_TRUE(t.out_syms[0]);
    EXPECT_EQ(dims_str(*t.out_syms[0]), "[batch,-1]");
  }
}

// ---- kernels ------------------------------------------------------------------------------------

namespace {

struct UnaryCase {
  const char* op;
  std::function<double(double)> f;
  double lo, hi;
  AttributeMap attrs;
};

AttributeMap attrs_of(std::vector<std::pair<std::string, AttrValue>> kv) {
  AttributeMap m;
  for (auto& [k, v] : kv) m.set(k, v);
  return m;
}

}  // namespace

TEST(ElementwiseKernel, UnaryFloatOpsMatchFormulas) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  const double kPi = 3.14159265358979323846;
  std::vector<UnaryCase> cases = {
      {"Relu", [](double x) { return x < 0 ? 0 : x; }, -3, 3, {}},
      {"LeakyRelu", [](double x) { return x < 0 ? double(0.3f) * x : x; }, -3, 3, attrs_of({{"alpha", 0.3f}})},
      {"LeakyRelu", [](double x) { return x < 0 ? double(0.01f) * x : x; }, -3, 3, {}},
      {"Sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, -8, 8, {}},
      {"Tanh", [](double x) { return std::tanh(x); }, -4, 4, {}},
      {"Erf", [](double x) { return std::erf(x); }, -3, 3, {}},
      {"Gelu", [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, -4, 4, {}},
      {"Gelu",
       [&](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / kPi) * (x + 0.044715 * x * x * x))); },
       -4, 4, attrs_of({{"approximate", std::string("tanh")}})},
      {"HardSigmoid", [](double x) { return std::clamp(double(0.2f) * x + 0.5, 0.0, 1.0); }, -4, 4, {}},
      {"HardSigmoid", [](double x) { return std::clamp(0.5 * x + 0.25, 0.0, 1.0); }, -4, 4,
       attrs_of({{"alpha", 0.5f}, {"beta", 0.25f}})},
      {"HardSwish", [](double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); }, -5, 5, {}},
      {"Exp", [](double x) { return std::exp(x); }, -4, 4, {}},
      {"Log", [](double x) { return std::log(x); }, 0.01, 10, {}},
      {"Sqrt", [](double x) { return std::sqrt(x); }, 0, 10, {}},
      {"Reciprocal", [](double x) { return 1 / x; }, 0.1, 5, {}},
      {"Neg", [](double x) { return -x; }, -5, 5, {}},
      {"Abs", [](double x) { return std::fabs(x); }, -5, 5, {}},
      {"Floor", [](double x) { return std::floor(x); }, -5, 5, {}},
      {"Ceil", [](double x) { return std::ceil(x); }, -5, 5, {}},
      {"Sin", [](double x) { return std::sin(x); }, -5, 5, {}},
      {"Cos", [](double x) { return std::cos(x); }, -5, 5, {}},
      {"Softplus", [](double x) { return std::log(1 + std::exp(x)); }, -8, 8, {}},
      {"Elu", [](double x) { return x < 0 ? double(0.7f) * (std::exp(x) - 1) : x; }, -4, 4,
       attrs_of({{"alpha", 0.7f}})},
  };
  // Attributes are float32, so the formulas use float32 alpha/beta too.
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kFloat64}) {
    for (auto& c : cases) {
      OneNode n(c.op, {random_tensor(dt, {3, 17}, rng, c.lo, c.hi)});
      n.node->attrs = c.attrs;
      auto r = n.run(20);
      ASSERT_TRUE(r.is_ok()) << c.op << ": " << r.status().to_string();
      const Tensor& x = n.inputs[0];
      std::vector<double> want(x.numel());
      for (int64_t i = 0; i < x.numel(); ++i) want[i] = c.f(x.get(i));
      EXPECT_EQ(r.value()[0].dtype(), dt);
      expect_close(r.value()[0], want, std::string(c.op) + " " + dtype_name(dt));
    }
  }
}

// GELU's negative tail: 1 + erf(x / sqrt 2) cancels there (at x = -5 it is 6e-7, below float32's
// spacing near 1), so each element must match the double formula to float32 precision.
TEST(ElementwiseKernel, GeluNegativeTailKeepsPrecision) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  OneNode n("Gelu", {random_tensor(DataType::kFloat32, {64}, rng, -9, -3)});
  auto r = n.run(20);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const Tensor& x = n.inputs[0];
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.get(i), want = 0.5 * v * std::erfc(-v / std::sqrt(2.0));
    EXPECT_NEAR(r.value()[0].get(i), want, 1e-5 * std::fabs(want)) << "x=" << v;
  }
}

TEST(ElementwiseKernel, IntegerUnary) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  for (DataType dt : {DataType::kInt32, DataType::kInt64}) {
    Tensor x = random_tensor(dt, {40}, rng, -100, 100);
    for (const char* op : {"Neg", "Abs", "Relu"}) {
      OneNode n(op, {x});
      auto r = n.run();
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      auto xs = x.to_int64_vector();
      auto ys = r.value()[0].to_int64_vector();
      for (size_t i = 0; i < xs.size(); ++i) {
        int64_t want = std::string(op) == "Neg" ? -xs[i] : std::string(op) == "Abs" ? std::llabs(xs[i]) : std::max<int64_t>(xs[i], 0);
        EXPECT_EQ(ys[i], want) << op << " " << dtype_name(dt) << " x=" << xs[i];
      }
    }
  }
}

TEST(ElementwiseKernel, BinaryBroadcastMatchesIndexMath) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  struct Case {
    const char* op;
    std::function<double(double, double)> f;
  };
  std::vector<Case> cases = {{"Add", [](double a, double b) { return a + b; }},
                             {"Sub", [](double a, double b) { return a - b; }},
                             {"Mul", [](double a, double b) { return a * b; }},
                             {"Div", [](double a, double b) { return a / b; }},
                             {"Pow", [](double a, double b) { return std::pow(a, b); }},
                             {"Max", [](double a, double b) { return std::max(a, b); }},
                             {"Min", [](double a, double b) { return std::min(a, b); }},
                             {"PRelu", [](double a, double b) { return a < 0 ? a * b : a; }}};
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kFloat64}) {
    for (auto& c : cases) {
      const bool pow = std::string(c.op) == "Pow";
      // a: [2,3,4]; b: [3,1] broadcasts over axes 0 and 2.
      Tensor a = random_tensor(dt, {2, 3, 4}, rng, pow ? 0.1 : -2, 2);
      Tensor b = random_tensor(dt, {3, 1}, rng, 0.5, 2);
      OneNode n(c.op, {a, b});
      auto r = n.run();
      ASSERT_TRUE(r.is_ok()) << c.op << ": " << r.status().to_string();
      const Tensor& y = r.value()[0];
      ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, 3, 4}));
      std::vector<double> want;
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j)
          for (int k = 0; k < 4; ++k) want.push_back(c.f(a.get(i * 12 + j * 4 + k), b.get(j)));
      expect_close(y, want, std::string(c.op) + " " + dtype_name(dt));
    }
  }
}

TEST(ElementwiseKernel, VariadicMinOfThree) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  Tensor a = random_tensor(DataType::kFloat32, {2, 1}, rng), b = random_tensor(DataType::kFloat32, {1, 3}, rng),
         c = random_tensor(DataType::kFloat32, {3}, rng);
  OneNode n("Min", {a, b, c});
  auto r = n.run();
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  std::vector<double> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) want.push_back(std::min({a.get(i), b.get(j), c.get(j)}));
  expect_close(r.value()[0], want, "Min");
}

TEST(ElementwiseKernel, VariadicSumRoundsOnce) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  for (DataType dt : {DataType::kFloat16, DataType::kFloat32, DataType::kInt32}) {
    Tensor a = random_tensor(dt, {2, 3}, rng, -9, 9), b = random_tensor(dt, {3}, rng, -9, 9),
           c = random_tensor(dt, {2, 1}, rng, -9, 9);
    OneNode n("Sum", {a, b, c});
    auto r = n.run();
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    std::vector<double> want;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) want.push_back(a.get(i * 3 + j) + b.get(j) + c.get(i));
    expect_close(r.value()[0], want, std::string("Sum ") + dtype_name(dt));
  }
}

TEST(ElementwiseKernel, IntegerArithmetic) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  for (DataType dt : {DataType::kInt32, DataType::kInt64}) {
    Tensor a = random_tensor(dt, {4, 5}, rng, -50, 50);
    Tensor b = random_tensor(dt, {5}, rng, 1, 9);  // positive: no division by zero
    for (int k = 0; k < 5; k += 2) b.set(k, -b.get(k));  // and some negative divisors
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
      OneNode n(op, {a, b});
      auto r = n.run();
      ASSERT_TRUE(r.is_ok()) << op << ": " << r.status().to_string();
      EXPECT_EQ(r.value()[0].dtype(), dt);
      auto ys = r.value()[0].to_int64_vector();
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 5; ++j) {
          int64_t x = static_cast<int64_t>(a.get(i * 5 + j)), y = static_cast<int64_t>(b.get(j));
          std::string o = op;
          int64_t want = o == "Add" ? x + y : o == "Sub" ? x - y : o == "Mul" ? x * y
                         : o == "Div" ? x / y : o == "Max" ? std::max(x, y) : std::min(x, y);
          EXPECT_EQ(ys[i * 5 + j], want) << op << " " << x << ", " << y;
        }
    }
  }
}

TEST(ElementwiseKernel, IntegerDivTruncatesAndDivByZeroFails) {
  OneNode n("Div", {Tensor::vector_int64({-7, 7, -7, 7}), Tensor::vector_int64({2, 2, -2, -2})});
  auto r = n.run();
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value()[0].to_int64_vector(), (std::vector<int64_t>{-3, 3, 3, -3}));
  OneNode z("Div", {Tensor::vector_int64({1, 2}), Tensor::vector_int64({1, 0})});
  auto rz = z.run();
  ASSERT_FALSE(rz.is_ok());
  EXPECT_NE(rz.status().message().find("division by zero"), std::string::npos);
}

// Integer Pow past the type's range (finding FZ22): the power keeps its low bits, through int64
// saturated at its ends, as graft's double-to-integer stores do; 0 to a negative power (infinity)
// saturates. The values are written out: 5^5 = 3125 = 12 * 256 + 53; 3^5 = 243 is -13 in int8.
TEST(ElementwiseKernel, IntegerPowPastTheRangeKeepsLowBits) {
  OneNode u("Pow", {Tensor::from_doubles(DataType::kUInt8, {4}, {5, 2, 3, 0}),
                    Tensor::from_doubles(DataType::kUInt8, {4}, {5, 7, 2, 0})});
  auto ru = u.run();
  ASSERT_TRUE(ru.is_ok()) << ru.status().to_string();
  EXPECT_EQ(ru.value()[0].to_int64_vector(), (std::vector<int64_t>{53, 128, 9, 1}));
  OneNode s("Pow", {Tensor::from_doubles(DataType::kInt8, {3}, {3, -2, 2}),
                    Tensor::vector_int64({5, 3, 62})});
  auto rs = s.run();
  ASSERT_TRUE(rs.is_ok()) << rs.status().to_string();
  EXPECT_EQ(rs.value()[0].to_int64_vector(), (std::vector<int64_t>{-13, -8, 0}));
  OneNode z("Pow", {Tensor::vector_int64({0, 2, 3}), Tensor::vector_int64({-1, 70, 40})});
  auto rz = z.run();
  ASSERT_TRUE(rz.is_ok()) << rz.status().to_string();
  EXPECT_EQ(rz.value()[0].to_int64_vector(),
            (std::vector<int64_t>{INT64_MAX, INT64_MAX, INT64_MAX}));
}

TEST(ElementwiseKernel, ComparisonsAndWhere) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kInt64}) {
    Tensor a = random_tensor(dt, {3, 4}, rng, -3, 3);
    Tensor b = random_tensor(dt, {4}, rng, -3, 3);
    a.set(1, b.get(1));  // at least one equal pair
    for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
      OneNode n(op, {a, b});
      auto r = n.run();
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      const Tensor& y = r.value()[0];
      ASSERT_EQ(y.dtype(), DataType::kBool);
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j) {
          double x = a.get(i * 4 + j), w = b.get(j);
          std::string o = op;
          bool want = o == "Equal" ? x == w : o == "Less" ? x < w : o == "Greater" ? x > w
                      : o == "LessOrEqual" ? x <= w : x >= w;
          EXPECT_EQ(y.get(i * 4 + j) != 0, want) << op << " " << dtype_name(dt) << " " << x << " vs " << w;
        }
    }
  }
  Tensor cond = Tensor::empty(DataType::kBool, {2, 1});
  cond.set(0, 1);
  cond.set(1, 0);
  Tensor x = random_tensor(DataType::kFloat16, {1, 3}, rng), y = random_tensor(DataType::kFloat16, {2, 3}, rng);
  OneNode w("Where", {cond, x, y});
  auto r = w.run();
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  std::vector<double> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) want.push_back(i == 0 ? x.get(j) : y.get(i * 3 + j));
  expect_close(r.value()[0], want, "Where");

  Tensor bools = Tensor::empty(DataType::kBool, {3});
  for (int i = 0; i < 3; ++i) bools.set(i, i % 2);
  OneNode nt("Not", {bools});
  auto rn = nt.run();
  ASSERT_TRUE(rn.is_ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(rn.value()[0].get(i), i % 2 ? 0.0 : 1.0);
}

TEST(ElementwiseKernel, ClipWithOptionalBounds) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kInt32}) {
    Tensor x = random_tensor(dt, {30}, rng, -10, 10);
    Tensor lo = Tensor::from_doubles(dt, {}, {-2});
    Tensor hi = Tensor::from_doubles(dt, {}, {3});
    struct Case { Tensor lo, hi; double l, h; };
    for (const Case& c : {Case{lo, hi, -2, 3}, Case{Tensor(), hi, -INFINITY, 3}, Case{lo, Tensor(), -2, INFINITY}}) {
      std::vector<Tensor> ins{x, c.lo};
      if (c.hi.defined()) ins.push_back(c.hi);
      OneNode n("Clip", ins);
      auto r = n.run(13);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      std::vector<double> want;
      for (int64_t i = 0; i < x.numel(); ++i) want.push_back(std::min(std::max(x.get(i), c.l), c.h));
      expect_close(r.value()[0], want, std::string("Clip ") + dtype_name(dt));
    }
  }
}

TEST(ElementwiseKernel, CastRoundTrips) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  Tensor x = random_tensor(DataType::kFloat32, {50}, rng, -100, 100);
  struct Case { int64_t to; DataType dt; std::function<double(double)> f; };
  std::vector<Case> cases = {
      {6, DataType::kInt32, [](double v) { return std::trunc(v); }},
      {7, DataType::kInt64, [](double v) { return std::trunc(v); }},
      {9, DataType::kBool, [](double v) { return v != 0 ? 1.0 : 0.0; }},
      {10, DataType::kFloat16, [](double v) { return v; }},
      {11, DataType::kFloat64, [](double v) { return v; }},
  };
  for (auto& c : cases) {
    OneNode n("Cast", {x});
    n.node->attrs.set("to", c.to);
    auto r = n.run();
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(r.value()[0].dtype(), c.dt);
    std::vector<double> want;
    for (int64_t i = 0; i < x.numel(); ++i) want.push_back(c.f(x.get(i)));
    if (c.dt == DataType::kFloat16) {
      expect_close(r.value()[0], want, "Cast to float16");
    } else {
      for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(r.value()[0].get(i), want[i]) << "to=" << c.to << " x=" << x.get(i);
    }
  }
}

TEST(ElementwiseKernel, IdentityCopiesAnyDtype) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  for (DataType dt : {DataType::kFloat16, DataType::kInt64, DataType::kFloat64}) {
    Tensor x = random_tensor(dt, {2, 5}, rng, -9, 9);
    OneNode n("Identity", {x});
    auto r = n.run();
    ASSERT_TRUE(r.is_ok());
    for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(r.value()[0].get(i), x.get(i));
  }
}
