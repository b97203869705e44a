// Cases for the ONNX elementwise ops: one table per op, each with an independent float64 formula
// written here (std:: math on the inputs, numpy broadcasting for the binary ops), and input ranges
// that stay inside the op's domain and away from its singularities.
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <utility>

#include "case_util.h"
#include "harness.h"

namespace graft::optest {

namespace {

using Formula = std::function<double(const std::vector<double>&)>;

// A table whose reference applies `f` elementwise over the (broadcast) inputs.
OpCaseTable elementwise_table(std::string name, Formula f) {
  OpCaseTable t;
  t.domain = "";
  t.name = std::move(name);
  t.cpu_dtypes = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16};
  t.cuda_dtypes = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16};
  t.reference = [f](const std::vector<std::vector<double>>& in, const std::vector<std::vector<int64_t>>& dims,
                    const AttributeMap&) { return std::vector<std::vector<double>>{broadcast_apply(in, dims, f)}; };
  return t;
}

OpCase elementwise_case(std::string label, std::vector<std::vector<int64_t>> dims, double lo, double hi,
                        std::vector<int64_t> out, AttributeMap attrs = {}) {
  OpCase c;
  c.label = std::move(label);
  for (auto& d : dims) c.inputs.push_back({std::move(d), lo, hi});
  c.output_dims = {std::move(out)};
  c.attrs = std::move(attrs);
  return c;
}

// ---- unary ------------------------------------------------------------------------------------
struct Unary {
  const char* name;
  double lo, hi;  // the input range
  Formula f;
  AttributeMap attrs = {};
  int opset = 17;
};

AttributeMap float_attrs(std::initializer_list<std::pair<const char*, float>> kv) {
  AttributeMap a;
  for (const auto& [k, v] : kv) a.set(k, v);
  return a;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

std::vector<Unary> unary_ops() {
  return {
      {"Relu", -3, 3, [](auto& v) { return std::max(0.0, v[0]); }},
      {"LeakyRelu", -3, 3, [](auto& v) { return v[0] < 0 ? static_cast<double>(0.1f) * v[0] : v[0]; },
       float_attrs({{"alpha", 0.1f}})},
      {"Sigmoid", -6, 6, [](auto& v) { return sigmoid(v[0]); }},
      {"Tanh", -4, 4, [](auto& v) { return std::tanh(v[0]); }},
      {"Erf", -3, 3, [](auto& v) { return std::erf(v[0]); }},
      {"HardSigmoid", -4, 4,
       [](auto& v) { return std::clamp(static_cast<double>(0.25f) * v[0] + static_cast<double>(0.4f), 0.0, 1.0); },
       float_attrs({{"alpha", 0.25f}, {"beta", 0.4f}})},
      {"HardSwish", -5, 5, [](auto& v) { return v[0] * std::clamp(v[0] / 6.0 + 0.5, 0.0, 1.0); }, {}, 14},
      {"Exp", -4, 4, [](auto& v) { return std::exp(v[0]); }},
      {"Log", 0.05, 5, [](auto& v) { return std::log(v[0]); }},
      {"Sqrt", 0, 9, [](auto& v) { return std::sqrt(v[0]); }},
      {"Reciprocal", 0.5, 4, [](auto& v) { return 1.0 / v[0]; }},
      {"Neg", -3, 3, [](auto& v) { return -v[0]; }},
      {"Abs", -3, 3, [](auto& v) { return std::fabs(v[0]); }},
      {"Floor", -5, 5, [](auto& v) { return std::floor(v[0]); }},
      {"Ceil", -5, 5, [](auto& v) { return std::ceil(v[0]); }},
      {"Round", -5, 5, [](auto& v) { return std::nearbyint(v[0]); }},  // halves to even
      {"Sign", -3, 3, [](auto& v) { return v[0] > 0 ? 1.0 : v[0] < 0 ? -1.0 : 0.0; }},
      {"Sin", -4, 4, [](auto& v) { return std::sin(v[0]); }},
      {"Cos", -4, 4, [](auto& v) { return std::cos(v[0]); }},
      {"Tan", -1.2, 1.2, [](auto& v) { return std::tan(v[0]); }},
      {"Asin", -0.99, 0.99, [](auto& v) { return std::asin(v[0]); }},
      {"Acos", -0.99, 0.99, [](auto& v) { return std::acos(v[0]); }},
      {"Atan", -4, 4, [](auto& v) { return std::atan(v[0]); }},
      {"Sinh", -3, 3, [](auto& v) { return std::sinh(v[0]); }},
      {"Cosh", -3, 3, [](auto& v) { return std::cosh(v[0]); }},
      {"Asinh", -4, 4, [](auto& v) { return std::asinh(v[0]); }},
      {"Acosh", 1.05, 5, [](auto& v) { return std::acosh(v[0]); }},
      {"Atanh", -0.95, 0.95, [](auto& v) { return std::atanh(v[0]); }},
      {"Softplus", -4, 4, [](auto& v) { return std::log1p(std::exp(v[0])); }},
      {"Softsign", -4, 4, [](auto& v) { return v[0] / (1.0 + std::fabs(v[0])); }},
      {"Elu", -3, 3, [](auto& v) { return v[0] < 0 ? static_cast<double>(0.7f) * std::expm1(v[0]) : v[0]; },
       float_attrs({{"alpha", 0.7f}})},
      {"Selu", -3, 3,
       [](auto& v) {
         const double alpha = static_cast<double>(1.67326319217681884765625f), gamma = static_cast<double>(1.05070102214813232421875f);
         return v[0] > 0 ? gamma * v[0] : gamma * alpha * std::expm1(v[0]);
       }},
      {"Shrink", -3, 3,
       [](auto& v) { return v[0] < -1.0 ? v[0] + 0.5 : v[0] > 1.0 ? v[0] - 0.5 : 0.0; },
       float_attrs({{"bias", 0.5f}, {"lambd", 1.0f}})},
      {"Mish", -5, 5, [](auto& v) { return v[0] * std::tanh(std::log1p(std::exp(v[0]))); }, {}, 18},
      {"ThresholdedRelu", -3, 3, [](auto& v) { return v[0] > 0.75 ? v[0] : 0.0; }, float_attrs({{"alpha", 0.75f}})},
  };
}

// ---- binary -----------------------------------------------------------------------------------
struct Binary {
  const char* name;
  double lo, hi;
  Formula f;
  double divisor_at_least = 0;  // > 0: input 1 is moved at least this far from zero
};

std::vector<Binary> binary_ops() {
  return {
      {"Add", -3, 3, [](auto& v) { return v[0] + v[1]; }},
      {"Sub", -3, 3, [](auto& v) { return v[0] - v[1]; }},
      {"Mul", -3, 3, [](auto& v) { return v[0] * v[1]; }},
      {"Div", -3, 3, [](auto& v) { return v[0] / v[1]; }, 0.5},
      {"Pow", 0.5, 2, [](auto& v) { return std::pow(v[0], v[1]); }},
      {"Max", -3, 3, [](auto& v) { return std::max(v[0], v[1]); }},
      {"Min", -3, 3, [](auto& v) { return std::min(v[0], v[1]); }},
  };
}

void move_from_zero(Tensor& d, double least) {
  for (int64_t i = 0; i < d.numel(); ++i) {
    const double v = d.get(i);
    if (std::fabs(v) < least) d.set(i, v < 0 ? -least : least);
  }
}

// Gelu (opset 20): the erf form, and the tanh approximation its attribute asks for.
OpCaseTable gelu_cases() {
  OpCaseTable t = elementwise_table("Gelu", nullptr);
  t.opset = 20;
  AttributeMap tanh_form;
  tanh_form.set("approximate", std::string("tanh"));
  for (const AttributeMap& a : {AttributeMap(), tanh_form}) {
    const std::string form = a.size() == 0 ? "erf_" : "tanh_";
    t.cases.push_back(elementwise_case(form + "rank3", {{2, 3, 5}}, -4, 4, {2, 3, 5}, a));
    t.cases.push_back(elementwise_case(form + "long_odd", {{1027}}, -4, 4, {1027}, a));
  }
  AttributeMap bad;
  bad.set("approximate", std::string("sigmoid"));
  t.bad_attributes.push_back({"unknown_approximation", bad, {}, "approximate"});
  t.reference = [](const std::vector<std::vector<double>>& in, const std::vector<std::vector<int64_t>>& dims,
                   const AttributeMap& attrs) {
    const bool tanh_form = attrs.get_string("approximate", "none").value() == "tanh";
    const double k = std::sqrt(2.0 / 3.14159265358979323846);
    Formula f = [tanh_form, k](const std::vector<double>& v) {
      const double x = v[0];
      return tanh_form ? 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)))
                       : 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    };
    return std::vector<std::vector<double>>{broadcast_apply(in, dims, f)};
  };
  return t;
}

}  // namespace

std::vector<OpCaseTable> unary_elementwise_cases() {
  std::vector<OpCaseTable> out;
  for (const Unary& u : unary_ops()) {
    OpCaseTable t = elementwise_table(u.name, u.f);
    t.opset = u.opset;
    t.cases.push_back(elementwise_case("rank3", {{2, 3, 5}}, u.lo, u.hi, {2, 3, 5}, u.attrs));
    // More elements than one block of threads, and an odd count (vectorized kernels' tails).
    t.cases.push_back(elementwise_case("long_odd", {{1027}}, u.lo, u.hi, {1027}, u.attrs));
    t.cases.push_back(elementwise_case("scalar", {{}}, u.lo, u.hi, {}, u.attrs));
    out.push_back(std::move(t));
  }
  out.push_back(gelu_cases());
  return out;
}

std::vector<OpCaseTable> binary_elementwise_cases() {
  std::vector<OpCaseTable> out;
  for (const Binary& b : binary_ops()) {
    OpCaseTable t = elementwise_table(b.name, b.f);
    t.cases.push_back(elementwise_case("same_shape", {{2, 3, 4}, {2, 3, 4}}, b.lo, b.hi, {2, 3, 4}));
    t.cases.push_back(elementwise_case("rows", {{2, 3, 5}, {5}}, b.lo, b.hi, {2, 3, 5}));
    t.cases.push_back(elementwise_case("both_ways", {{4, 1, 6}, {3, 1}}, b.lo, b.hi, {4, 3, 6}));
    t.cases.push_back(elementwise_case("scalar_operand", {{}, {7, 3}}, b.lo, b.hi, {7, 3}));
    t.cases.push_back(elementwise_case("long_odd", {{1031}, {1031}}, b.lo, b.hi, {1031}));
    if (b.divisor_at_least > 0)
      for (OpCase& c : t.cases) c.adjust_inputs = [d = b.divisor_at_least](std::vector<Tensor>& ins) { move_from_zero(ins[1], d); };
    // Add, Sub, Mul, Max and Min in every integer type and float64, Div in float64 (its integer
    // cases: integer_div_cases; Pow: below). Ranges keep every result inside the type: unsigned
    // x - y stays >= 0, int8 x * y <= 100.
    const std::string name = b.name;
    if (name != "Pow")
      for (DataType dt : {DataType::kInt8, DataType::kUInt8, DataType::kInt16, DataType::kUInt16, DataType::kInt32,
                          DataType::kUInt32, DataType::kInt64, DataType::kUInt64, DataType::kFloat64}) {
        if (name == "Div" && dt != DataType::kFloat64) continue;
        const bool is_unsigned = dt == DataType::kUInt8 || dt == DataType::kUInt16 || dt == DataType::kUInt32 ||
                                 dt == DataType::kUInt64;
        OpCase c = make_case(std::string(dtype_name(dt)) + "_rows",
                             {typed({3, 2, 5}, dt, is_unsigned ? 10 : -10, is_unsigned ? 20 : 10),
                              typed({5}, dt, is_unsigned ? 0 : -10, 10)},
                             {{3, 2, 5}});
        if (name == "Div") c.adjust_inputs = [](std::vector<Tensor>& ins) { move_from_zero(ins[1], 0.5); };
        t.cases.push_back(std::move(c));
      }
    // Pow with the exponent of another type than the base (opset 12+; the result has the base's
    // type), and integer bases: exponents whole where the base is an integer, so every power is exact.
    if (name == "Pow") {
      t.cases.push_back(make_case("float32_base_int32_exponent",
                                  {typed({3, 4}, DataType::kFloat32, 0.5, 2), typed({4}, DataType::kInt32, -2, 3)}, {{3, 4}}));
      t.cases.push_back(make_case("int32_base_int32_exponent",
                                  {typed({3, 4}, DataType::kInt32, -3, 3), typed({4}, DataType::kInt32, 0, 4)}, {{3, 4}}));
      t.cases.push_back(make_case("int64_base_float32_exponent",
                                  {typed({2, 4}, DataType::kInt64, 1, 5), fixed({4}, DataType::kFloat32, {0, 1, 2, 3})},
                                  {{2, 4}}));
      t.cases.push_back(make_case("float64_base_int64_exponent",
                                  {typed({3, 4}, DataType::kFloat64, 0.5, 2), typed({4}, DataType::kInt64, -2, 3)}, {{3, 4}}));
      t.cases.push_back(make_case("float32_base_uint64_exponent",
                                  {typed({5}, DataType::kFloat32, 0.5, 2), typed({5}, DataType::kUInt64, 0, 3)}, {{5}}));
    }
    out.push_back(std::move(t));
  }
  return out;
}

// Div of every integer type, a table of its own (made at opset 14, so its cases are named apart
// from the float table's) because its formula truncates toward zero, as C and the CPU reference
// do. Divisors are moved off zero: a zero integer divisor fails the run, which the CUDA engine's
// invalid-data test covers (the harness runs kernels outside an engine, where nothing reports it).
OpCaseTable integer_div_cases() {
  OpCaseTable t = elementwise_table("Div", [](auto& v) { return std::trunc(v[0] / v[1]); });
  t.opset = 14;
  for (DataType dt : {DataType::kInt8, DataType::kUInt8, DataType::kInt16, DataType::kUInt16, DataType::kInt32,
                      DataType::kUInt32, DataType::kInt64, DataType::kUInt64}) {
    const bool is_unsigned =
        dt == DataType::kUInt8 || dt == DataType::kUInt16 || dt == DataType::kUInt32 || dt == DataType::kUInt64;
    OpCase c = make_case(std::string(dtype_name(dt)) + "_rows",
                         {typed({3, 2, 5}, dt, is_unsigned ? 0 : -100, 100), typed({5}, dt, is_unsigned ? 1 : -9, 9)},
                         {{3, 2, 5}});
    c.adjust_inputs = [](std::vector<Tensor>& ins) { move_from_zero(ins[1], 1); };
    t.cases.push_back(std::move(c));
  }
  return t;
}

std::vector<OpCaseTable> elementwise_case_tables() {
  std::vector<OpCaseTable> tables = unary_elementwise_cases();
  for (OpCaseTable& t : binary_elementwise_cases()) tables.push_back(std::move(t));
  tables.push_back(integer_div_cases());
  return tables;
}

}  // namespace graft::optest
