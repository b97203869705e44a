// Cases for the other ONNX ops with float or bool data that the CUDA backend runs: comparisons and
// logic (bool outputs), PRelu, Clip, Identity, Sum/Mean, the normalizations (BatchNormalization,
// InstanceNormalization), global pools, CumSum, ArgMax/ArgMin, TopK, Hardmax, DepthToSpace,
// SpaceToDepth, Trilu, GatherElements and Celu. Each has an independent float64 formula.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <utility>

#include "case_util.h"
#include "harness.h"

namespace graft::optest {

namespace {

using Reference = std::function<Values(const Values&, const DimsList&, const AttributeMap&)>;

AttributeMap attrs2(const char* n1, int64_t v1, const char* n2, int64_t v2) {
  AttributeMap a = attr(n1, v1);
  a.set(n2, v2);
  return a;
}

Reference elementwise(std::function<double(const std::vector<double>&)> f) {
  return [f](const Values& in, const DimsList& dims, const AttributeMap&) { return Values{broadcast_apply(in, dims, f)}; };
}

// Rounds every float input to a multiple of 0.5, so that comparisons meet equal operands often.
void round_to_halves(std::vector<Tensor>& ins) {
  for (Tensor& t : ins)
    if (t.defined() && dtype_is_float(t.dtype()))
      for (int64_t i = 0; i < t.numel(); ++i) t.set(i, std::round(t.get(i) * 2.0) / 2.0);
}

// Replaces input 0's values by distinct multiples of 1/8 in random order (exact in float16 for up
// to 2048 of them), so that orderings have no ties.
void distinct_values(std::vector<Tensor>& ins) {
  Tensor& x = ins[0];
  std::vector<int64_t> order(static_cast<size_t>(x.numel()));
  std::iota(order.begin(), order.end(), -x.numel() / 2);
  std::mt19937_64 rng(std::hash<double>{}(x.get(0)));  // the case's fresh random data seeds it
  std::shuffle(order.begin(), order.end(), rng);
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, static_cast<double>(order[static_cast<size_t>(i)]) / 8.0);
}

std::vector<OpCaseTable> comparison_tables() {
  std::vector<OpCaseTable> out;
  const std::pair<const char*, std::function<bool(double, double)>> ops[] = {
      {"Equal", [](double a, double b) { return a == b; }},         {"Less", [](double a, double b) { return a < b; }},
      {"Greater", [](double a, double b) { return a > b; }},        {"LessOrEqual", [](double a, double b) { return a <= b; }},
      {"GreaterOrEqual", [](double a, double b) { return a >= b; }},
  };
  for (const auto& [name, cmp] : ops) {
    OpCaseTable t = builtin_table(name, elementwise([cmp = cmp](const std::vector<double>& v) { return cmp(v[0], v[1]) ? 1.0 : 0.0; }));
    t.cases.push_back(make_case("same_shape", {data({3, 7}, -2, 2), data({3, 7}, -2, 2)}, {{3, 7}}));
    t.cases.push_back(make_case("broadcast", {data({2, 3, 4}, -2, 2), data({4}, -2, 2)}, {{2, 3, 4}}));
    for (OpCase& c : t.cases) c.adjust_inputs = round_to_halves;
    // Every integer type and float64 (small ranges, so that equal operands are common).
    for (DataType dt : {DataType::kInt8, DataType::kUInt8, DataType::kInt16, DataType::kUInt16, DataType::kInt32,
                        DataType::kUInt32, DataType::kInt64, DataType::kUInt64, DataType::kFloat64}) {
      OpCase c = make_case(std::string(dtype_name(dt)) + "_broadcast", {typed({2, 3, 4}, dt, 0, 3), typed({4}, dt, 0, 3)},
                           {{2, 3, 4}});
      if (dt == DataType::kFloat64) c.adjust_inputs = round_to_halves;
      t.cases.push_back(std::move(c));
    }
    out.push_back(std::move(t));
  }
  const std::pair<const char*, std::function<bool(bool, bool)>> logic[] = {
      {"And", [](bool a, bool b) { return a && b; }}, {"Or", [](bool a, bool b) { return a || b; }},
      {"Xor", [](bool a, bool b) { return a != b; }}};
  for (const auto& [name, op] : logic) {
    OpCaseTable t = builtin_table(name, elementwise([op = op](const std::vector<double>& v) { return op(v[0] != 0, v[1] != 0) ? 1.0 : 0.0; }));
    t.cases.push_back(make_case("same_shape", {typed({5, 6}, DataType::kBool, 0, 1), typed({5, 6}, DataType::kBool, 0, 1)}, {{5, 6}}));
    t.cases.push_back(make_case("broadcast", {typed({2, 1, 5}, DataType::kBool, 0, 1), typed({3, 1}, DataType::kBool, 0, 1)}, {{2, 3, 5}}));
    out.push_back(std::move(t));
  }
  OpCaseTable n = builtin_table("Not", elementwise([](const std::vector<double>& v) { return v[0] != 0 ? 0.0 : 1.0; }));
  n.cases.push_back(make_case("rank2", {typed({4, 9}, DataType::kBool, 0, 1)}, {{4, 9}}));
  out.push_back(std::move(n));
  return out;
}

OpCaseTable prelu_cases() {
  OpCaseTable t = builtin_table("PRelu", elementwise([](const std::vector<double>& v) { return v[0] < 0 ? v[1] * v[0] : v[0]; }));
  t.cases.push_back(make_case("channel_slopes", {data({2, 3, 4, 5}), data({3, 1, 1}, 0, 0.5)}, {{2, 3, 4, 5}}));
  t.cases.push_back(make_case("same_shape", {data({3, 8}), data({3, 8}, -0.5, 0.5)}, {{3, 8}}));
  return t;
}

OpCaseTable clip_cases() {
  OpCaseTable t = builtin_table("Clip", elementwise([](const std::vector<double>& v) {
    return std::min(std::max(v[0], v.size() > 1 ? v[1] : -INFINITY), v.size() > 2 ? v[2] : INFINITY);
  }));
  t.cases.push_back(make_case("both_bounds", {data({4, 6}), data({}, -1.5, -0.5), data({}, 0.5, 1.5)}, {{4, 6}}));
  t.cases.push_back(make_case("long_odd", {data({1029}), data({}, -1.5, -0.5), data({}, 0.5, 1.5)}, {{1029}}));
  // min above max: every element becomes max (min(max(x, min), max), as ONNX and numpy.clip say).
  t.cases.push_back(make_case("min_above_max", {data({3, 5}), data({}, 0.5, 1.5), data({}, -1.5, -0.5)}, {{3, 5}}));
  t.cases.push_back(make_case("int8_both_bounds", {typed({4, 7}, DataType::kInt8, -128, 127), typed({}, DataType::kInt8, -60, -20),
                                                   typed({}, DataType::kInt8, 20, 60)},
                              {{4, 7}}));
  t.cases.push_back(make_case("int8_min_only", {typed({9}, DataType::kInt8, -128, 127), typed({}, DataType::kInt8, -10, 10)},
                              {{9}}));
  return t;
}

OpCaseTable identity_cases() {
  OpCaseTable t = builtin_table("Identity", [](const Values& in, const DimsList&, const AttributeMap&) { return Values{in[0]}; });
  t.cases.push_back(make_case("rank3", {data({2, 3, 4})}, {{2, 3, 4}}));
  return t;
}

OpCaseTable variadic_cases(const char* name, bool mean) {
  OpCaseTable t = builtin_table(name, elementwise([mean](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return mean ? s / static_cast<double>(v.size()) : s;
  }));
  t.cases.push_back(make_case("three_broadcast", {data({2, 3, 4}), data({4}), data({3, 1})}, {{2, 3, 4}}));
  t.cases.push_back(make_case("two_same", {data({5, 6}), data({5, 6})}, {{5, 6}}));
  return t;
}

// Per-channel statistics of [N, C, spatial...]: y = (x - mean) / sqrt(var + eps) * scale + bias.
Values channel_norm(const Values& in, const Ints& d, double eps, bool instance) {
  const int64_t n = d[0], c = d[1], area = count(d, 2);
  std::vector<double> y(in[0].size());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch) {
      const int64_t base = (b * c + ch) * area;
      double mean = 0, var = 0;
      if (instance) {
        for (int64_t i = 0; i < area; ++i) mean += in[0][base + i];
        mean /= static_cast<double>(area);
        for (int64_t i = 0; i < area; ++i) var += (in[0][base + i] - mean) * (in[0][base + i] - mean);
        var /= static_cast<double>(area);
      } else {
        mean = in[3][ch];
        var = in[4][ch];
      }
      for (int64_t i = 0; i < area; ++i)
        y[base + i] = (in[0][base + i] - mean) / std::sqrt(var + eps) * in[1][ch] + in[2][ch];
    }
  return {y};
}

OpCaseTable batch_norm_cases() {
  OpCaseTable t = builtin_table("BatchNormalization", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    return channel_norm(in, dims[0], a.get_float("epsilon", 1e-5f).value(), false);
  });
  auto params = [](int64_t c) {
    return std::vector<CaseInput>{data({c}, 0.5, 2), data({c}, -1, 1), data({c}, -1, 1), data({c}, 0.5, 2)};
  };
  auto with = [&](Ints x) {
    std::vector<CaseInput> in = {data(x)};
    for (CaseInput& p : params(x[1])) in.push_back(p);
    return in;
  };
  t.cases.push_back(make_case("nchw", with({2, 3, 5, 4}), {{2, 3, 5, 4}}, attr("epsilon", 1e-3f)));
  t.cases.push_back(make_case("rank2", with({6, 5}), {{6, 5}}));
  return t;
}

// Training mode (opset 14+; this table opset 15, so that its name differs from the one above): the
// batch's mean and population variance per channel over every axis but 1, and the running
// statistics input * momentum + batch * (1 - momentum) as outputs 1 and 2.
OpCaseTable batch_norm_training_cases() {
  OpCaseTable t = builtin_table(
      "BatchNormalization",
      [](const Values& in, const DimsList& dims, const AttributeMap& a) {
        const Ints& d = dims[0];
        const int64_t n = d[0], c = d[1], area = count(d, 2);
        const double eps = a.get_float("epsilon", 1e-5f).value(), m = a.get_float("momentum", 0.9f).value();
        std::vector<double> y(in[0].size()), run_mean(static_cast<size_t>(c)), run_var(static_cast<size_t>(c));
        for (int64_t ch = 0; ch < c; ++ch) {
          double mean = 0, var = 0;
          for (int64_t b = 0; b < n; ++b)
            for (int64_t i = 0; i < area; ++i) mean += in[0][(b * c + ch) * area + i];
          mean /= static_cast<double>(n * area);
          for (int64_t b = 0; b < n; ++b)
            for (int64_t i = 0; i < area; ++i) {
              const double dv = in[0][(b * c + ch) * area + i] - mean;
              var += dv * dv;
            }
          var /= static_cast<double>(n * area);
          for (int64_t b = 0; b < n; ++b)
            for (int64_t i = 0; i < area; ++i) {
              const int64_t k = (b * c + ch) * area + i;
              y[k] = (in[0][k] - mean) / std::sqrt(var + eps) * in[1][ch] + in[2][ch];
            }
          run_mean[ch] = in[3][ch] * m + mean * (1 - m);
          run_var[ch] = in[4][ch] * m + var * (1 - m);
        }
        return Values{y, run_mean, run_var};
      },
      15);
  AttributeMap training = attr("training_mode", int64_t{1});
  training.set("momentum", 0.8f);
  for (auto [label, x] : {std::pair<const char*, Ints>{"nchw", {3, 4, 5, 6}}, {"rank2", {7, 3}},
                          {"long_channel", {2, 2, 1500}}}) {
    const int64_t c = x[1];
    t.cases.push_back(make_case(label, {data(x), data({c}, 0.5, 2), data({c}, -1, 1), data({c}, -1, 1), data({c}, 0.5, 2)},
                                {x, {c}, {c}}, training));
  }
  return t;
}

OpCaseTable instance_norm_cases() {
  OpCaseTable t = builtin_table("InstanceNormalization", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    return channel_norm(in, dims[0], a.get_float("epsilon", 1e-5f).value(), true);
  });
  t.cases.push_back(make_case("nchw", {data({2, 3, 6, 5}), data({3}, 0.5, 2), data({3}, -1, 1)}, {{2, 3, 6, 5}}));
  t.cases.push_back(make_case("long_planes", {data({1, 2, 1100}), data({2}, 0.5, 2), data({2}, -1, 1)}, {{1, 2, 1100}},
                              attr("epsilon", 1e-3f)));
  return t;
}

OpCaseTable global_pool_cases(const char* name, bool max) {
  OpCaseTable t = builtin_table(name, [max](const Values& in, const DimsList& dims, const AttributeMap&) {
    const Ints& d = dims[0];
    const int64_t rows = d[0] * d[1], area = count(d, 2);
    std::vector<double> y(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      double acc = max ? -INFINITY : 0.0;
      for (int64_t i = 0; i < area; ++i) acc = max ? std::max(acc, in[0][r * area + i]) : acc + in[0][r * area + i];
      y[r] = max ? acc : acc / static_cast<double>(area);
    }
    return Values{y};
  });
  t.cases.push_back(make_case("nchw", {data({2, 5, 7, 6})}, {{2, 5, 1, 1}}));
  t.cases.push_back(make_case("large_plane", {data({1, 3, 45, 45})}, {{1, 3, 1, 1}}));
  t.cases.push_back(make_case("1d", {data({3, 4, 9})}, {{3, 4, 1}}));
  return t;
}

OpCaseTable cumsum_cases() {
  OpCaseTable t = builtin_table("CumSum", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const Ints& d = dims[0];
    const int64_t axis = axis_in(static_cast<int64_t>(in[1][0]), d.size());
    const bool exclusive = a.get_int("exclusive", 0).value() != 0, reverse = a.get_int("reverse", 0).value() != 0;
    const int64_t outer = count(d, 0, static_cast<size_t>(axis)), len = d[axis], inner = count(d, static_cast<size_t>(axis) + 1);
    std::vector<double> y(in[0].size());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        double s = 0;
        for (int64_t step = 0; step < len; ++step) {
          const int64_t j = reverse ? len - 1 - step : step;
          const size_t at = static_cast<size_t>((o * len + j) * inner + i);
          if (exclusive) {
            y[at] = s;
            s += in[0][at];
          } else {
            s += in[0][at];
            y[at] = s;
          }
        }
      }
    return Values{y};
  });
  t.cases.push_back(make_case("last_axis", {data({3, 40}), fixed({}, DataType::kInt64, {1})}, {{3, 40}}));
  t.cases.push_back(make_case("middle_exclusive", {data({2, 9, 3}), fixed({}, DataType::kInt64, {1})}, {{2, 9, 3}}, attr("exclusive", int64_t{1})));
  t.cases.push_back(make_case("first_reverse", {data({6, 4}), fixed({}, DataType::kInt64, {-2})}, {{6, 4}}, attr("reverse", int64_t{1})));
  t.cases.push_back(make_case("long_row", {data({1, 3000}, -1, 1), fixed({}, DataType::kInt64, {1})}, {{1, 3000}}));
  // float64 sums in double (a long row, so a float accumulator would show), and int32.
  t.cases.push_back(make_case("float64_long_row", {typed({2, 3000}, DataType::kFloat64, -1, 1), fixed({}, DataType::kInt64, {1})},
                              {{2, 3000}}));
  t.cases.push_back(make_case("float64_middle", {typed({3, 7, 4}, DataType::kFloat64, -1, 1), fixed({}, DataType::kInt64, {1})},
                              {{3, 7, 4}}, attr("exclusive", int64_t{1})));
  t.cases.push_back(make_case("int32_reverse", {typed({4, 9}, DataType::kInt32, -1000, 1000), fixed({}, DataType::kInt64, {1})},
                              {{4, 9}}, attr("reverse", int64_t{1})));
  return t;
}

// ArgMax/ArgMin and Hardmax: the first (or with select_last_index the last) extreme along an axis.
int64_t extreme_index(const std::vector<double>& x, int64_t base, int64_t len, int64_t stride, bool max, bool last) {
  int64_t best = 0;
  for (int64_t j = 1; j < len; ++j) {
    const double v = x[base + j * stride], b = x[base + best * stride];
    if ((max ? v > b : v < b) || (last && v == b)) best = j;
  }
  return best;
}

OpCaseTable arg_cases(const char* name, bool max) {
  OpCaseTable t = builtin_table(name, [max](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const Ints& d = dims[0];
    const int64_t axis = axis_in(a.get_int("axis", 0).value(), d.size());
    const bool last = a.get_int("select_last_index", 0).value() != 0;
    const int64_t outer = count(d, 0, static_cast<size_t>(axis)), len = d[axis], inner = count(d, static_cast<size_t>(axis) + 1);
    std::vector<double> y;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) y.push_back(static_cast<double>(extreme_index(in[0], o * len * inner + i, len, inner, max, last)));
    return Values{y};
  });
  t.cases.push_back(make_case("last_axis_keep", {data({3, 4, 11})}, {{3, 4, 1}}, attr("axis", int64_t{-1})));
  t.cases.push_back(make_case("middle_drop", {data({2, 9, 5})}, {{2, 5}}, attrs2("axis", 1, "keepdims", 0)));
  // Halves tie often in float16 and float32 alike: the first or the last of equal extremes.
  OpCase ties = make_case("ties_last_index", {data({4, 12}, -2, 2)}, {{4, 1}}, attrs2("axis", 1, "select_last_index", 1));
  ties.adjust_inputs = round_to_halves;
  t.cases.push_back(ties);
  OpCase first = make_case("ties_first_index", {data({4, 12}, -2, 2)}, {{4, 1}}, attr("axis", int64_t{1}));
  first.adjust_inputs = round_to_halves;
  t.cases.push_back(first);
  return t;
}

OpCaseTable hardmax_cases() {
  OpCaseTable t = builtin_table("Hardmax", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const Ints& d = dims[0];
    const int64_t axis = axis_in(a.get_int("axis", -1).value(), d.size());
    const int64_t outer = count(d, 0, static_cast<size_t>(axis)), len = d[axis], inner = count(d, static_cast<size_t>(axis) + 1);
    std::vector<double> y(in[0].size(), 0.0);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t base = o * len * inner + i;
        y[base + extreme_index(in[0], base, len, inner, true, false) * inner] = 1.0;
      }
    return Values{y};
  }, 13);
  t.cases.push_back(make_case("last_axis", {data({3, 10})}, {{3, 10}}));
  OpCase ties = make_case("ties_middle_axis", {data({2, 8, 3}, -1, 1)}, {{2, 8, 3}}, attr("axis", int64_t{1}));
  ties.adjust_inputs = round_to_halves;
  t.cases.push_back(ties);
  return t;
}

OpCaseTable topk_cases() {
  // Outputs: the k values and their int64 indices along the axis, largest (or smallest) first.
  OpCaseTable t = builtin_table("TopK", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const Ints& d = dims[0];
    const int64_t axis = axis_in(a.get_int("axis", -1).value(), d.size());
    const bool largest = a.get_int("largest", 1).value() != 0;
    const int64_t k = static_cast<int64_t>(in[1][0]);
    const int64_t outer = count(d, 0, static_cast<size_t>(axis)), len = d[axis], inner = count(d, static_cast<size_t>(axis) + 1);
    std::vector<double> values(static_cast<size_t>(outer * k * inner)), indices(values.size());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        std::vector<int64_t> idx(static_cast<size_t>(len));
        std::iota(idx.begin(), idx.end(), 0);
        auto at = [&](int64_t j) { return in[0][(o * len + j) * inner + i]; };
        std::stable_sort(idx.begin(), idx.end(), [&](int64_t p, int64_t q) { return largest ? at(p) > at(q) : at(p) < at(q); });
        for (int64_t j = 0; j < k; ++j) {
          values[(o * k + j) * inner + i] = at(idx[j]);
          indices[(o * k + j) * inner + i] = static_cast<double>(idx[j]);
        }
      }
    return Values{values, indices};
  }, 11);
  OpCase a = make_case("largest_last_axis", {data({3, 50}), fixed({1}, DataType::kInt64, {7})}, {{3, 7}, {3, 7}});
  OpCase b = make_case("smallest_middle_axis", {data({2, 20, 3}), fixed({1}, DataType::kInt64, {5})}, {{2, 5, 3}, {2, 5, 3}},
                       attrs2("axis", 1, "largest", 0));
  OpCase c = make_case("k_equals_length", {data({4, 9}), fixed({1}, DataType::kInt64, {9})}, {{4, 9}, {4, 9}});
  for (OpCase* x : {&a, &b, &c}) {
    x->adjust_inputs = distinct_values;
    t.cases.push_back(*x);
  }
  return t;
}

OpCaseTable depth_to_space_cases() {
  OpCaseTable t = builtin_table("DepthToSpace", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const Ints& d = dims[0];
    const int64_t bs = a.get_int("blocksize", 1).value(), n = d[0], c = d[1], h = d[2], w = d[3], oc = c / (bs * bs);
    const bool crd = a.get_string("mode", "DCR").value() == "CRD";
    std::vector<double> y(in[0].size());
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < oc; ++ch)
        for (int64_t oy = 0; oy < h * bs; ++oy)
          for (int64_t ox = 0; ox < w * bs; ++ox) {
            const int64_t by = oy % bs, bx = ox % bs;
            const int64_t src_c = crd ? (ch * bs + by) * bs + bx : (by * bs + bx) * oc + ch;
            y[((b * oc + ch) * h * bs + oy) * w * bs + ox] = in[0][((b * c + src_c) * h + oy / bs) * w + ox / bs];
          }
    return Values{y};
  }, 13);
  auto mode = [](const char* m) {
    AttributeMap a;
    a.set("blocksize", int64_t{2});
    a.set("mode", std::string(m));
    return a;
  };
  t.cases.push_back(make_case("dcr", {data({2, 8, 3, 4})}, {{2, 2, 6, 8}}, mode("DCR")));
  t.cases.push_back(make_case("crd", {data({1, 12, 2, 3})}, {{1, 3, 4, 6}}, mode("CRD")));
  return t;
}

OpCaseTable space_to_depth_cases() {
  OpCaseTable t = builtin_table("SpaceToDepth", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const Ints& d = dims[0];
    const int64_t bs = a.get_int("blocksize", 1).value(), n = d[0], c = d[1], h = d[2], w = d[3];
    const int64_t oh = h / bs, ow = w / bs, oc = c * bs * bs;
    std::vector<double> y(in[0].size());
    for (int64_t b = 0; b < n; ++b)
      for (int64_t o = 0; o < oc; ++o)
        for (int64_t oy = 0; oy < oh; ++oy)
          for (int64_t ox = 0; ox < ow; ++ox) {
            const int64_t block = o / c, ch = o % c, by = block / bs, bx = block % bs;
            y[((b * oc + o) * oh + oy) * ow + ox] = in[0][((b * c + ch) * h + oy * bs + by) * w + ox * bs + bx];
          }
    return Values{y};
  }, 13);
  t.cases.push_back(make_case("blocks_of_2", {data({2, 3, 6, 4})}, {{2, 12, 3, 2}}, attr("blocksize", int64_t{2})));
  t.cases.push_back(make_case("blocks_of_3", {data({1, 2, 3, 9})}, {{1, 18, 1, 3}}, attr("blocksize", int64_t{3})));
  return t;
}

OpCaseTable trilu_cases() {
  OpCaseTable t = builtin_table("Trilu", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const Ints& d = dims[0];
    const bool upper = a.get_int("upper", 1).value() != 0;
    const int64_t k = in.size() > 1 && !in[1].empty() ? static_cast<int64_t>(in[1][0]) : 0;
    const int64_t rows = d[d.size() - 2], cols = d.back();
    std::vector<double> y(in[0].size());
    for (size_t i = 0; i < y.size(); ++i) {
      const int64_t r = static_cast<int64_t>(i) / cols % rows, c = static_cast<int64_t>(i) % cols;
      y[i] = (upper ? c - r >= k : c - r <= k) ? in[0][i] : 0.0;
    }
    return Values{y};
  }, 14);
  t.cases.push_back(make_case("upper_k1", {data({2, 5, 6}), fixed({}, DataType::kInt64, {1})}, {{2, 5, 6}}));
  t.cases.push_back(make_case("lower_k_minus2", {data({7, 4}), fixed({}, DataType::kInt64, {-2})}, {{7, 4}}, attr("upper", int64_t{0})));
  return t;
}

OpCaseTable gather_elements_cases() {
  OpCaseTable t = builtin_table("GatherElements", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const Ints& d = dims[0];
    const Ints& id = dims[1];
    const int64_t axis = axis_in(a.get_int("axis", 0).value(), d.size());
    std::vector<double> y(in[1].size());
    for (size_t i = 0; i < y.size(); ++i) {
      int64_t rem = static_cast<int64_t>(i), src = 0, stride = 1;
      for (size_t k = id.size(); k-- > 0;) {
        int64_t coord = rem % id[k];
        rem /= id[k];
        if (static_cast<int64_t>(k) == axis) {
          coord = static_cast<int64_t>(in[1][i]);
          if (coord < 0) coord += d[k];
        }
        src += coord * stride;
        stride *= d[k];
      }
      y[i] = in[0][src];
    }
    return Values{y};
  }, 13);
  auto idx = [](Ints dims, int64_t extent) { return typed(std::move(dims), DataType::kInt64, -extent, extent - 1); };
  t.cases.push_back(make_case("axis1", {data({3, 7}), idx({3, 4}, 7)}, {{3, 4}}, attr("axis", int64_t{1})));
  t.cases.push_back(make_case("axis0_rank3", {data({5, 2, 3}), idx({4, 2, 3}, 5)}, {{4, 2, 3}}, attr("axis", int64_t{0})));
  return t;
}

OpCaseTable celu_cases() {
  OpCaseTable t = builtin_table("Celu", elementwise([](const std::vector<double>& v) {
    const double alpha = static_cast<double>(0.8f);
    return std::max(0.0, v[0]) + std::min(0.0, alpha * std::expm1(v[0] / alpha));
  }), 12);
  t.cases.push_back(make_case("rank2", {data({4, 9})}, {{4, 9}}, attr("alpha", 0.8f)));
  return t;
}

}  // namespace

std::vector<OpCaseTable> misc_case_tables() {
  std::vector<OpCaseTable> out = comparison_tables();
  for (OpCaseTable t : {prelu_cases(), clip_cases(), identity_cases(), variadic_cases("Sum", false),
                        variadic_cases("Mean", true), batch_norm_cases(), batch_norm_training_cases(), instance_norm_cases(),
                        global_pool_cases("GlobalAveragePool", false), global_pool_cases("GlobalMaxPool", true),
                        cumsum_cases(), arg_cases("ArgMax", true), arg_cases("ArgMin", false), hardmax_cases(),
                        topk_cases(), depth_to_space_cases(), space_to_depth_cases(), trilu_cases(),
                        gather_elements_cases()})
    out.push_back(std::move(t));
  for (OpCaseTable& t : out) {
    t.cpu_dtypes = {DataType::kFloat32, DataType::kFloat16};
    t.cuda_dtypes = {DataType::kFloat32, DataType::kFloat16};
  }
  // Celu: float32 is its only type in ONNX's schema, the CPU kernel's (so the reference's) and the
  // CUDA kernel's.
  OpCaseTable celu = celu_cases();
  celu.cpu_dtypes = celu.cuda_dtypes = {DataType::kFloat32};
  celu.reference_dtype = DataType::kFloat32;
  out.push_back(std::move(celu));
  return out;
}

}  // namespace graft::optest
