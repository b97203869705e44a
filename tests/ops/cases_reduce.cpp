// Cases for the ONNX reductions (opset 18: the axes are an int64 input) and LogSoftmax: one table per
// op, each case reducing a different set of axes, with and without keepdims, and an independent
// float64 formula.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <utility>

#include "case_util.h"
#include "harness.h"
#include "ops/internal_ops.h"

namespace graft::optest {

namespace {

// Folds every reduced group of x (dims `d`, `axes` reduced) with `start`, `step` and `finish`.
std::vector<double> reduce_formula(const std::vector<double>& x, const Ints& d, const std::vector<double>& axes_in,
                                   double start, const std::function<double(double, double)>& step,
                                   const std::function<double(double, int64_t)>& finish) {
  const size_t rank = d.size();
  std::vector<bool> reduced(rank, axes_in.empty());
  for (double a : axes_in) reduced[static_cast<size_t>(a < 0 ? a + static_cast<double>(rank) : a)] = true;
  Ints out_dims;
  for (size_t i = 0; i < rank; ++i) out_dims.push_back(reduced[i] ? 1 : d[i]);
  int64_t out_n = 1, group = 1;
  for (size_t i = 0; i < rank; ++i) (reduced[i] ? group : out_n) *= d[i];
  std::vector<double> acc(static_cast<size_t>(out_n), start);
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t rem = static_cast<int64_t>(i), o = 0, stride = 1;
    for (size_t k = rank; k-- > 0;) {
      const int64_t coord = rem % d[k];
      rem /= d[k];
      if (!reduced[k]) {
        o += coord * stride;
        stride *= d[k];
      }
    }
    acc[static_cast<size_t>(o)] = step(acc[static_cast<size_t>(o)], x[i]);
  }
  for (double& v : acc) v = finish(v, group);
  return acc;
}

struct Reduction {
  const char* name;
  double lo, hi;
  double start;
  std::function<double(double, double)> step;
  std::function<double(double, int64_t)> finish = [](double v, int64_t) { return v; };
};

std::vector<Reduction> reductions() {
  const double inf = std::numeric_limits<double>::infinity();
  auto plus = [](double a, double x) { return a + x; };
  return {
      {"ReduceSum", -2, 2, 0.0, plus},
      {"ReduceMean", -2, 2, 0.0, plus, [](double v, int64_t n) { return v / static_cast<double>(n); }},
      {"ReduceMax", -2, 2, -inf, [](double a, double x) { return std::max(a, x); }},
      {"ReduceMin", -2, 2, inf, [](double a, double x) { return std::min(a, x); }},
      // Factors near 1, so that a product of a few hundred stays inside float16's normal range.
      {"ReduceProd", 0.9, 1.1, 1.0, [](double a, double x) { return a * x; }},
      {"ReduceSumSquare", -2, 2, 0.0, [](double a, double x) { return a + x * x; }},
      {"ReduceL1", -2, 2, 0.0, [](double a, double x) { return a + std::fabs(x); }},
      {"ReduceL2", -2, 2, 0.0, [](double a, double x) { return a + x * x; }, [](double v, int64_t) { return std::sqrt(v); }},
      {"ReduceLogSum", 0.1, 2, 0.0, plus, [](double v, int64_t) { return std::log(v); }},
      {"ReduceLogSumExp", -3, 3, 0.0, [](double a, double x) { return a + std::exp(x); },
       [](double v, int64_t) { return std::log(v); }},
  };
}

OpCase reduce_case(const Reduction& r, std::string label, Ints x, Ints axes, bool keepdims, Ints out) {
  OpCase c;
  c.label = std::move(label);
  c.inputs.push_back({std::move(x), r.lo, r.hi});
  CaseInput a{{static_cast<int64_t>(axes.size())}};
  a.dtype = DataType::kInt64;
  for (int64_t v : axes) a.values.push_back(static_cast<double>(v));
  c.inputs.push_back(std::move(a));
  c.attrs.set("keepdims", int64_t{keepdims ? 1 : 0});
  c.output_dims = {std::move(out)};
  return c;
}

}  // namespace

std::vector<OpCaseTable> reduce_case_tables() {
  std::vector<OpCaseTable> out;
  for (const Reduction& r : reductions()) {
    OpCaseTable t;
    t.domain = "";
    t.name = r.name;
    t.opset = 18;
    t.cpu_dtypes = {DataType::kFloat32, DataType::kFloat16};
    t.cuda_dtypes = {DataType::kFloat32, DataType::kFloat16};
    t.cases.push_back(reduce_case(r, "last_axis_keep", {3, 4, 37}, {-1}, true, {3, 4, 1}));
    t.cases.push_back(reduce_case(r, "middle_axis_drop", {3, 5, 6}, {1}, false, {3, 6}));
    t.cases.push_back(reduce_case(r, "first_and_last", {4, 3, 5}, {0, 2}, false, {3}));
    t.cases.push_back(reduce_case(r, "spatial_keep", {2, 3, 7, 6}, {2, 3}, true, {2, 3, 1, 1}));
    const int64_t row = std::string(r.name) == "ReduceProd" ? 300 : 2000;
    t.cases.push_back(reduce_case(r, "long_rows", {2, row}, {1}, false, {2}));
    // Over an empty set every output is the fold's start, finished (ONNX: 0 for the sums, 1 for
    // Prod, -inf and +inf for Max and Min, -inf for LogSum and LogSumExp). Mean's is NaN (0 / 0),
    // which the poisoned output already holds, so no case could tell it from an unwritten output.
    if (std::string(r.name) != "ReduceMean")
      t.cases.push_back(reduce_case(r, "empty_axis", {3, 0, 4}, {1}, true, {3, 1, 4}));
    OpCase f64 = reduce_case(r, "float64_rows", {3, 5, 600}, {2}, false, {3, 5});  // reduced in double
    f64.inputs[0].dtype = DataType::kFloat64;
    t.cases.push_back(std::move(f64));
    t.reference = [r](const std::vector<std::vector<double>>& in, const std::vector<std::vector<int64_t>>& dims,
                      const AttributeMap&) {
      return std::vector<std::vector<double>>{reduce_formula(in[0], dims[0], in[1], r.start, r.step, r.finish)};
    };
    out.push_back(std::move(t));
  }

  // Opset 20's bool ReduceMax (any) and ReduceMin (all).
  for (bool max : {true, false}) {
    auto step = max ? std::function<double(double, double)>([](double a, double x) { return std::max(a, x); })
                    : std::function<double(double, double)>([](double a, double x) { return std::min(a, x); });
    OpCaseTable b = builtin_table(max ? "ReduceMax" : "ReduceMin",
                                  [max, step](const std::vector<std::vector<double>>& in,
                                              const std::vector<std::vector<int64_t>>& dims, const AttributeMap&) {
                                    return std::vector<std::vector<double>>{reduce_formula(
                                        in[0], dims[0], in[1], max ? 0.0 : 1.0, step, [](double v, int64_t) { return v; })};
                                  },
                                  20);
    for (auto [label, x, axes, keep, y] :
         {std::tuple<const char*, Ints, Ints, bool, Ints>{"bool_last_axis", {4, 9}, {1}, false, {4}},
          {"bool_first_and_last_keep", {3, 4, 5}, {0, 2}, true, {1, 4, 1}}, {"bool_empty_axis", {3, 0}, {1}, false, {3}}}) {
      CaseInput a{{static_cast<int64_t>(axes.size())}};
      a.dtype = DataType::kInt64;
      for (int64_t v : axes) a.values.push_back(static_cast<double>(v));
      AttributeMap at;
      at.set("keepdims", int64_t{keep ? 1 : 0});
      b.cases.push_back(make_case(label, {typed(x, DataType::kBool, 0, 1), a}, {y}, at));
    }
    out.push_back(std::move(b));
  }

  // Integer ReduceMax and ReduceMin: over an empty set, the type's minimum and maximum (ONNX).
  // int32 at opset 13 and int64 at opset 12 (axes an attribute in both), one table per opset so
  // that each table's name differs from the float tables' (opset 18) and the reference knows its type.
  for (auto [dt, opset] : {std::pair<DataType, int>{DataType::kInt32, 13}, {DataType::kInt64, 12}})
    for (bool max : {true, false}) {
      const bool i32 = dt == DataType::kInt32;
      const double start = max ? (i32 ? -2147483648.0 : -9223372036854775808.0)
                               : (i32 ? 2147483647.0 : 9223372036854775807.0);
      OpCaseTable t = builtin_table(
          max ? "ReduceMax" : "ReduceMin",
          [max, start](const std::vector<std::vector<double>>& in, const std::vector<std::vector<int64_t>>& dims,
                       const AttributeMap& a) {
            const std::vector<int64_t> given = a.get_ints("axes", {}).value();
            const std::vector<double> axes(given.begin(), given.end());
            auto step = [max](double acc, double x) { return max ? std::max(acc, x) : std::min(acc, x); };
            return std::vector<std::vector<double>>{
                reduce_formula(in[0], dims[0], axes, start, step, [](double v, int64_t) { return v; })};
          },
          opset);
      for (auto [label, x, axis, y] : {std::tuple<std::string, Ints, int64_t, Ints>{"last_axis", {4, 9}, 1, {4}},
                                       {"empty_axis", {3, 0, 2}, 1, {3, 2}}}) {
        AttributeMap at;
        at.set("keepdims", int64_t{0});
        at.set("axes", std::vector<int64_t>{axis});
        t.cases.push_back(make_case(std::string(dtype_name(dt)) + "_" + label, {typed(x, dt, -1000, 1000)}, {y}, at));
      }
      out.push_back(std::move(t));
    }

  // LogSoftmax: x - max - log(sum(exp(x - max))) along one axis.
  OpCaseTable t;
  t.domain = "";
  t.name = "LogSoftmax";
  t.opset = 13;
  t.cpu_dtypes = {DataType::kFloat32, DataType::kFloat16};
  t.cuda_dtypes = {DataType::kFloat32, DataType::kFloat16};
  for (auto [label, dims, axis] : {std::tuple<const char*, Ints, int64_t>{"last_axis", {4, 3, 10}, -1},
                                   {"middle_axis", {2, 7, 5}, 1}, {"long_rows", {3, 1500}, 1}}) {
    OpCase c;
    c.label = label;
    c.inputs.push_back({dims, -4, 4});
    c.attrs.set("axis", axis);
    c.output_dims = {dims};
    t.cases.push_back(std::move(c));
  }
  t.reference = [](const std::vector<std::vector<double>>& in, const std::vector<std::vector<int64_t>>& dims,
                   const AttributeMap& a) {
    const Ints& d = dims[0];
    int64_t axis = a.get_int("axis", -1).value();
    if (axis < 0) axis += static_cast<int64_t>(d.size());
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= d[i];
    for (size_t i = static_cast<size_t>(axis) + 1; i < d.size(); ++i) inner *= d[i];
    const int64_t len = d[axis];
    std::vector<double> y(in[0].size());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        auto at = [&](int64_t j) { return static_cast<size_t>((o * len + j) * inner + i); };
        double mx = -std::numeric_limits<double>::infinity(), sum = 0.0;
        for (int64_t j = 0; j < len; ++j) mx = std::max(mx, in[0][at(j)]);
        for (int64_t j = 0; j < len; ++j) sum += std::exp(in[0][at(j)] - mx);
        for (int64_t j = 0; j < len; ++j) y[at(j)] = in[0][at(j)] - mx - std::log(sum);
      }
    return std::vector<std::vector<double>>{y};
  };
  out.push_back(std::move(t));

  // GraftL2Normalize (internal): x / max(||x|| over the last axis, eps), each row on its own. A row
  // of zeros must give zeros (not 0/0), and a row whose norm is under eps is divided by eps.
  OpCaseTable n;
  n.domain = kInternalDomain;
  n.name = "GraftL2Normalize";
  n.cpu_dtypes = n.cuda_dtypes = {DataType::kFloat32, DataType::kFloat16};
  AttributeMap tiny, large;
  tiny.set("eps", 1e-12f);
  large.set("eps", 0.5f);
  n.cases.push_back(make_case("swin_rows", {data({4, 3, 16, 32})}, {{4, 3, 16, 32}}, tiny));
  n.cases.push_back(make_case("long_odd_rows", {data({5, 777}, -2, 2)}, {{5, 777}}, tiny));
  n.cases.push_back(make_case("short_rows_large_eps", {data({6, 3}, -0.2, 0.2)}, {{6, 3}}, large));
  OpCase zero = make_case("zero_rows", {data({4, 9})}, {{4, 9}}, tiny);
  zero.adjust_inputs = [](std::vector<Tensor>& in) {
    for (int64_t i = 9; i < 18; ++i) in[0].set(i, 0.0);  // row 1
  };
  n.cases.push_back(zero);
  AttributeMap negative;
  negative.set("eps", -1.f);
  n.bad_attributes.push_back({"negative_eps", negative, {{2, 3}}, "eps"});
  n.reference = [](const std::vector<std::vector<double>>& in, const std::vector<std::vector<int64_t>>& dims,
                   const AttributeMap& a) {
    const double eps = a.get_float("eps", 0.f).value();
    const int64_t len = dims[0].back();
    std::vector<double> y(in[0].size());
    for (size_t r = 0; r < in[0].size() / static_cast<size_t>(len); ++r) {
      double sum = 0;
      for (int64_t k = 0; k < len; ++k) sum += in[0][r * len + k] * in[0][r * len + k];
      const double d = std::max(std::sqrt(sum), eps);
      for (int64_t k = 0; k < len; ++k) y[r * len + k] = in[0][r * len + k] / d;
    }
    return std::vector<std::vector<double>>{y};
  };
  out.push_back(std::move(n));
  return out;
}

}  // namespace graft::optest
