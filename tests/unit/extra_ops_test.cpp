// The suite's less common ops (in the elementwise, reduce-and-normalize, selection, gather-scatter
// and shape families since the 'extra' files were split): inference (symbolic shapes, attribute/input errors) and CPU kernels
// against formulas written here on fresh random data. Many of these ops only appear in the ONNX
// suite at opsets graft does not import, so these tests are their main check.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "op_test_util.h"

using namespace graft;
using graft::testing::OneNode;
using graft::testing::random_tensor;
using graft::testing::attrs_of;
using graft::testing::infer;
using graft::testing::run_op;
using graft::testing::values;

namespace {

uint32_t fresh_seed() { return std::random_device{}(); }

double tol_of(DataType t) {
  return t == DataType::kFloat16 ? 2e-3 : t == DataType::kFloat32 ? 2e-6 : t == DataType::kFloat64 ? 1e-12 : 0;
}

// Compares got against want; NaN matches NaN.
void expect_close(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  graft::testing::expect_values_close(got, want, tol_of(got.dtype()), what);
}

}  // namespace

TEST(ExtraInfer, SymbolicShapes) {
  Dim b = Dim::symbol("batch");
  TensorDesc x(DataType::kFloat32, Shape{b, 3, 4});
  auto r = infer("ArgMax", {x}, attrs_of({{"axis", int64_t{-1}}}), 13);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].to_string(), "int64[batch,3,1]");
  r = infer("ArgMin", {x}, attrs_of({{"axis", int64_t{1}}, {"keepdims", int64_t{0}}}), 13);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value()[0].to_string(), "int64[batch,4]");
  r = infer("ReduceLogSumExp", {x}, attrs_of({{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t{0}}}), 13);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value()[0].to_string(), "float32[3,4]");
  r = infer("Size", {x}, {}, 13);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value()[0].to_string(), "int64[]");
  r = infer("GatherElements", {x, TensorDesc(DataType::kInt64, Shape{b, 3, 7})}, attrs_of({{"axis", int64_t{2}}}), 13);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value()[0].to_string(), "float32[batch,3,7]");
  r = infer("Dropout", {x}, {}, 13, 2);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value()[1].to_string(), "bool[batch,3,4]");
  r = infer("IsInf", {x}, {}, 13);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value()[0].to_string(), "bool[batch,3,4]");
  r = infer("Xor", {TensorDesc(DataType::kBool, Shape{b, 1}), TensorDesc(DataType::kBool, Shape{5})}, {}, 13);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value()[0].to_string(), "bool[batch,5]");
}

TEST(ExtraInfer, ErrorsNameTheCulprit) {
  TensorDesc x(DataType::kFloat32, Shape{2, 3});
  auto r = infer("ArgMax", {x}, attrs_of({{"axis", int64_t{2}}}), 13);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "axis");
  r = infer("Mod", {x, x}, {}, 13);  // float needs fmod=1
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "fmod");
  r = infer("Mod", {x, x}, attrs_of({{"fmod", int64_t{2}}}), 13);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "fmod");
  r = infer("Trilu", {TensorDesc(DataType::kFloat32, Shape{3})}, {}, 14);
  EXPECT_FALSE(r.is_ok());
  r = infer("GatherElements", {x, TensorDesc(DataType::kInt64, Shape{2})}, {}, 13);
  EXPECT_FALSE(r.is_ok());
  r = infer("Xor", {x, x}, {}, 13);
  EXPECT_FALSE(r.is_ok());
  // training_mode = true with a ratio outside [0, 1): refused, naming the input.
  Tensor x_t = Tensor::from_doubles(DataType::kFloat32, {2}, {0.5, 1.5});
  Tensor train = Tensor::from_doubles(DataType::kBool, {}, {1});
  auto run = run_op("Dropout", {x_t, Tensor::from_doubles(DataType::kFloat32, {}, {1.5}), train}, {}, 13);
  ASSERT_FALSE(run.is_ok());
  EXPECT_NE(run.status().message().find("input 1 (ratio)"), std::string::npos) << run.status().to_string();
}

TEST(ExtraKernels, ArgMaxArgMinAgainstLoops) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kInt32, DataType::kInt64}) {
    // Integers in a narrow range so ties happen and select_last_index matters.
    Tensor x = random_tensor(dt, {3, 5, 4}, rng, dtype_is_integer(dt) ? -3 : -1, dtype_is_integer(dt) ? 3 : 1);
    const auto v = values(x);
    for (int64_t axis : {0, 1, -1})
      for (int64_t last : {0, 1})
        for (bool is_max : {true, false}) {
          auto r = run_op(is_max ? "ArgMax" : "ArgMin", {x},
                          attrs_of({{"axis", axis}, {"select_last_index", last}, {"keepdims", int64_t{0}}}));
          ASSERT_TRUE(r.is_ok()) << r.status().to_string();
          const int64_t a = axis < 0 ? axis + 3 : axis;
          const int64_t dims[3] = {3, 5, 4};
          std::vector<double> want;
          for (int64_t i = 0; i < 3; ++i)
            for (int64_t j = 0; j < 5; ++j)
              for (int64_t k = 0; k < 4; ++k) {
                int64_t idx[3] = {i, j, k};
                if (idx[a] != 0) continue;  // one output per line along `a`
                int64_t best = 0;
                double bv = 0;
                for (int64_t t = 0; t < dims[a]; ++t) {
                  idx[a] = t;
                  const double e = v[(idx[0] * 5 + idx[1]) * 4 + idx[2]];
                  if (t == 0 || (is_max ? (e > bv || (last && e == bv)) : (e < bv || (last && e == bv)))) {
                    bv = e;
                    best = t;
                  }
                }
                want.push_back(static_cast<double>(best));
              }
          expect_close(r.value()[0], want, std::string(is_max ? "ArgMax" : "ArgMin") + " " + dtype_name(dt) +
                                               " axis " + std::to_string(axis) + " last " + std::to_string(last));
        }
  }
}

TEST(ExtraKernels, ModPythonAndCSemantics) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-50, 50), ddist(1, 9);
  Tensor a = Tensor::empty(DataType::kInt32, {4, 6});
  Tensor b = Tensor::empty(DataType::kInt32, {6});
  for (int64_t i = 0; i < a.numel(); ++i) a.set(i, dist(rng));
  for (int64_t i = 0; i < b.numel(); ++i) b.set(i, ddist(rng) * (i % 2 ? -1 : 1));
  for (int64_t fmod : {0, 1}) {
    auto r = run_op("Mod", {a, b}, attrs_of({{"fmod", fmod}}));
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    std::vector<double> want;
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 6; ++j) {
        const double x = a.get(i * 6 + j), d = b.get(j);
        // fmod=0: the result takes the divisor's sign (floored division); fmod=1: the dividend's.
        want.push_back(fmod ? std::fmod(x, d) : x - d * std::floor(x / d));
      }
    expect_close(r.value()[0], want, "Mod int32 fmod=" + std::to_string(fmod));
  }
  Tensor fa = random_tensor(DataType::kFloat64, {10}, rng, -10, 10);
  Tensor fb = random_tensor(DataType::kFloat64, {10}, rng, 0.5, 3);
  auto r = run_op("Mod", {fa, fb}, attrs_of({{"fmod", int64_t{1}}}));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  std::vector<double> want;
  for (int64_t i = 0; i < 10; ++i) want.push_back(std::fmod(fa.get(i), fb.get(i)));
  expect_close(r.value()[0], want, "Mod float64");
  // Integer division by zero is an error, not a crash.
  b.set(2, 0);
  EXPECT_FALSE(run_op("Mod", {a, b}).is_ok());
}

TEST(ExtraKernels, TriluGatherElements) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  Tensor x = random_tensor(DataType::kFloat32, {2, 4, 5}, rng, 1, 2);  // nonzero, so kept zeros show
  for (int64_t upper : {0, 1})
    for (int64_t k : {-2, 0, 1, 6}) {
      auto r = run_op("Trilu", {x, Tensor::scalar_int64(k)}, attrs_of({{"upper", upper}}), 14);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      std::vector<double> want;
      for (int64_t m = 0; m < 2; ++m)
        for (int64_t i = 0; i < 4; ++i)
          for (int64_t j = 0; j < 5; ++j)
            want.push_back((upper ? j >= i + k : j <= i + k) ? x.get((m * 4 + i) * 5 + j) : 0.0);
      expect_close(r.value()[0], want, "Trilu upper " + std::to_string(upper) + " k " + std::to_string(k));
    }
  Tensor data = random_tensor(DataType::kFloat32, {3, 4}, rng);
  Tensor ind = Tensor::empty(DataType::kInt64, {3, 2});
  std::uniform_int_distribution<int> id(-4, 3);
  for (int64_t i = 0; i < ind.numel(); ++i) ind.set(i, id(rng));
  auto r = run_op("GatherElements", {data, ind}, attrs_of({{"axis", int64_t{1}}}));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  std::vector<double> want;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 2; ++j) {
      int64_t k = static_cast<int64_t>(ind.get(i * 2 + j));
      if (k < 0) k += 4;
      want.push_back(data.get(i * 4 + k));
    }
  expect_close(r.value()[0], want, "GatherElements axis 1");
  ind.set(0, 4);
  EXPECT_FALSE(run_op("GatherElements", {data, ind}, attrs_of({{"axis", int64_t{1}}})).is_ok());
}

TEST(ExtraKernels, ReductionsAgainstFormulas) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  Tensor x = random_tensor(DataType::kFloat64, {3, 4}, rng, 0.1, 5);
  auto reduce_rows = [&](const std::function<double(const std::vector<double>&)>& f) {
    std::vector<double> out;
    for (int64_t i = 0; i < 3; ++i) {
      std::vector<double> row;
      for (int64_t j = 0; j < 4; ++j) row.push_back(x.get(i * 4 + j));
      out.push_back(f(row));
    }
    return out;
  };
  const AttributeMap axes1 = attrs_of({{"axes", std::vector<int64_t>{1}}});
  auto r = run_op("ReduceLogSumExp", {x}, axes1, 13);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  expect_close(r.value()[0], reduce_rows([](const std::vector<double>& v) {
                 double s = 0;
                 for (double e : v) s += std::exp(e);
                 return std::log(s);
               }), "ReduceLogSumExp");
  r = run_op("ReduceLogSum", {x, Tensor::vector_int64({-1})}, {}, 18);  // axes as an input from opset 18
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  expect_close(r.value()[0], reduce_rows([](const std::vector<double>& v) {
                 double s = 0;
                 for (double e : v) s += e;
                 return std::log(s);
               }), "ReduceLogSum");
  Tensor xi = random_tensor(DataType::kInt64, {3, 4}, rng, -100, 100);
  r = run_op("ReduceL1", {xi}, attrs_of({{"keepdims", int64_t{0}}}), 13);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  double l1 = 0;
  for (int64_t i = 0; i < xi.numel(); ++i) l1 += std::fabs(xi.get(i));
  expect_close(r.value()[0], {l1}, "ReduceL1 int64 all axes");
}

TEST(ExtraKernels, UnaryAgainstFormulas) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  struct Case {
    const char* op;
    double lo, hi;
    std::function<double(double)> f;
    AttributeMap attrs;
  };
  const double selu_a = 1.67326319217681884765625, selu_g = 1.05070102214813232421875;
  const std::vector<Case> cases = {
      {"Tan", -1.2, 1.2, [](double v) { return std::tan(v); }, {}},
      {"Asin", -0.99, 0.99, [](double v) { return std::asin(v); }, {}},
      {"Acos", -0.99, 0.99, [](double v) { return std::acos(v); }, {}},
      {"Atan", -5, 5, [](double v) { return std::atan(v); }, {}},
      {"Sinh", -3, 3, [](double v) { return (std::exp(v) - std::exp(-v)) / 2; }, {}},
      {"Cosh", -3, 3, [](double v) { return (std::exp(v) + std::exp(-v)) / 2; }, {}},
      {"Asinh", -5, 5, [](double v) { return std::log(v + std::sqrt(v * v + 1)); }, {}},
      {"Acosh", 1, 6, [](double v) { return std::log(v + std::sqrt(v * v - 1)); }, {}},
      {"Atanh", -0.95, 0.95, [](double v) { return 0.5 * std::log((1 + v) / (1 - v)); }, {}},
      {"Softsign", -4, 4, [](double v) { return v / (1 + std::fabs(v)); }, {}},
      {"Sign", -2, 2, [](double v) { return v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0; }, {}},
      {"Selu", -3, 3, [=](double v) { return v > 0 ? selu_g * v : selu_g * selu_a * (std::exp(v) - 1); }, {}},
      {"Selu", -3, 3, [](double v) { return v > 0 ? 3 * v : 3 * 0.5 * (std::exp(v) - 1); },
       attrs_of({{"alpha", 0.5f}, {"gamma", 3.0f}})},
      {"ThresholdedRelu", -3, 3, [](double v) { return v > 0.25 ? v : 0.0; }, attrs_of({{"alpha", 0.25f}})},
      {"Shrink", -3, 3, [](double v) { return v < -1.5 ? v + 0.5 : v > 1.5 ? v - 0.5 : 0.0; },
       attrs_of({{"lambd", 1.5f}, {"bias", 0.5f}})},
  };
  for (const Case& c : cases)
    for (DataType dt : {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16}) {
      Tensor x = random_tensor(dt, {5, 7}, rng, c.lo, c.hi);
      auto r = run_op(c.op, {x}, c.attrs, 17);
      ASSERT_TRUE(r.is_ok()) << c.op << ": " << r.status().to_string();
      std::vector<double> want;
      for (int64_t i = 0; i < x.numel(); ++i) want.push_back(c.f(x.get(i)));
      // float16 rounds the result once: compare against the double formula at float16's precision.
      expect_close(r.value()[0], want, std::string(c.op) + " " + dtype_name(dt));
    }
}

TEST(ExtraKernels, RoundHalfToEvenAndPredicates) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  // Exact halves plus random values.
  Tensor x = random_tensor(DataType::kFloat32, {12}, rng, -9, 9);
  const double halves[6] = {0.5, 1.5, 2.5, -0.5, -2.5, 3.5};
  for (int i = 0; i < 6; ++i) x.set(i, halves[i]);
  auto r = run_op("Round", {x});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  std::vector<double> want;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.get(i), fl = std::floor(v), diff = v - fl;
    want.push_back(diff < 0.5 ? fl : diff > 0.5 ? fl + 1 : (std::fmod(fl, 2.0) == 0 ? fl : fl + 1));
  }
  expect_close(r.value()[0], want, "Round");

  Tensor y = random_tensor(DataType::kFloat32, {8}, rng);
  y.set(1, INFINITY);
  y.set(3, -INFINITY);
  y.set(5, NAN);
  for (int64_t neg : {0, 1})
    for (int64_t pos : {0, 1}) {
      auto ri = run_op("IsInf", {y}, attrs_of({{"detect_negative", neg}, {"detect_positive", pos}}));
      ASSERT_TRUE(ri.is_ok()) << ri.status().to_string();
      std::vector<double> w;
      for (int64_t i = 0; i < y.numel(); ++i) {
        const double v = y.get(i);
        w.push_back(std::isinf(v) && ((v > 0 && pos) || (v < 0 && neg)) ? 1 : 0);
      }
      expect_close(ri.value()[0], w, "IsInf");
    }
  auto rn = run_op("IsNaN", {y});
  ASSERT_TRUE(rn.is_ok());
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_EQ(rn.value()[0].get(i), std::isnan(y.get(i)) ? 1.0 : 0.0) << i;
}

TEST(ExtraKernels, XorHardmaxSizeDropout) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::bernoulli_distribution coin(0.5);
  Tensor a = Tensor::empty(DataType::kBool, {3, 4}), b = Tensor::empty(DataType::kBool, {4});
  for (int64_t i = 0; i < a.numel(); ++i) a.set(i, coin(rng));
  for (int64_t i = 0; i < b.numel(); ++i) b.set(i, coin(rng));
  auto r = run_op("Xor", {a, b});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  std::vector<double> want;
  for (int64_t i = 0; i < 12; ++i) want.push_back((a.get(i) != 0) != (b.get(i % 4) != 0) ? 1 : 0);
  expect_close(r.value()[0], want, "Xor");

  Tensor x = random_tensor(DataType::kFloat32, {2, 3, 4}, rng);
  r = run_op("Hardmax", {x}, attrs_of({{"axis", int64_t{1}}}), 13);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  want.assign(24, 0.0);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t k = 0; k < 4; ++k) {
      int64_t best = 0;
      for (int64_t j = 1; j < 3; ++j)
        if (x.get((i * 3 + j) * 4 + k) > x.get((i * 3 + best) * 4 + k)) best = j;
      want[(i * 3 + best) * 4 + k] = 1;
    }
  expect_close(r.value()[0], want, "Hardmax axis 1");

  r = run_op("Size", {x});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value()[0].get(0), 24);

  r = run_op("Dropout", {x, Tensor::from_doubles(DataType::kFloat32, {}, {0.3})}, {}, 13, 2);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  expect_close(r.value()[0], values(x), "Dropout output");
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(r.value()[1].get(i), 1.0) << "Dropout mask " << i;
}

TEST(ExtraKernels, CumSumScatterElementsOneHot) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  Tensor x = random_tensor(DataType::kFloat32, {3, 5}, rng);
  for (int64_t excl : {0, 1})
    for (int64_t rev : {0, 1}) {
      auto r = run_op("CumSum", {x, Tensor::scalar_int64(-1)}, attrs_of({{"exclusive", excl}, {"reverse", rev}}), 14);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      std::vector<double> want;
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 5; ++j) {
          double s = 0;
          for (int64_t t = 0; t < 5; ++t) {
            const bool in = rev ? (excl ? t > j : t >= j) : (excl ? t < j : t <= j);
            if (in) s += x.get(i * 5 + t);
          }
          want.push_back(s);
        }
      expect_close(r.value()[0], want, "CumSum exclusive " + std::to_string(excl) + " reverse " + std::to_string(rev));
    }

  // ScatterElements with add over possibly duplicated indices along axis 0.
  Tensor data = random_tensor(DataType::kFloat64, {4, 3}, rng);
  Tensor upd = random_tensor(DataType::kFloat64, {2, 3}, rng);
  Tensor ind = Tensor::empty(DataType::kInt64, {2, 3});
  std::uniform_int_distribution<int> id(-4, 3);
  for (int64_t i = 0; i < ind.numel(); ++i) ind.set(i, id(rng));
  for (const char* red : {"none", "add", "max"}) {
    auto r = run_op("ScatterElements", {data, ind, upd}, attrs_of({{"reduction", std::string(red)}}), 18);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    std::vector<double> want = values(data);
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        int64_t k = static_cast<int64_t>(ind.get(i * 3 + j));
        if (k < 0) k += 4;
        double& w = want[k * 3 + j];
        const double u = upd.get(i * 3 + j);
        w = std::string(red) == "add" ? w + u : std::string(red) == "max" ? std::max(w, u) : u;
      }
    expect_close(r.value()[0], want, std::string("ScatterElements ") + red);
  }
  EXPECT_FALSE(run_op("ScatterElements", {data, ind, upd}, attrs_of({{"reduction", std::string("avg")}}), 18).is_ok());
  // An index past either end of the axis fails naming it (-5 and 4 for an axis of 4).
  for (int64_t bad : {int64_t{4}, int64_t{-5}}) {
    Tensor bad_ind = ind.clone();
    bad_ind.set(4, bad);
    auto r = run_op("ScatterElements", {data, bad_ind, upd}, attrs_of({{"reduction", std::string("add")}}), 18);
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().to_string().find("ScatterElements index " + std::to_string(bad) + " is out of range"),
              std::string::npos)
        << r.status().to_string();
  }

  // OneHot on axis 0 with negative indices and custom off/on values.
  Tensor oh_ind = Tensor::empty(DataType::kInt64, {4});
  std::uniform_int_distribution<int> od(-5, 4);
  for (int64_t i = 0; i < 4; ++i) oh_ind.set(i, od(rng));
  Tensor vals = Tensor::from_doubles(DataType::kFloat32, {2}, {-2, 7});
  auto r = run_op("OneHot", {oh_ind, Tensor::from_doubles(DataType::kFloat32, {}, {5}), vals},
                  attrs_of({{"axis", int64_t{0}}}), 11);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].dims(), (std::vector<int64_t>{5, 4}));
  std::vector<double> want;
  for (int64_t d = 0; d < 5; ++d)
    for (int64_t i = 0; i < 4; ++i) want.push_back((static_cast<int64_t>(oh_ind.get(i)) + 5) % 5 == d ? 7 : -2);
  expect_close(r.value()[0], want, "OneHot");
}

TEST(ExtraKernels, TopKGatherNDCompressMean) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  // Narrow integer range so ties occur: equal values must come out in index order.
  Tensor x = random_tensor(DataType::kInt32, {3, 6}, rng, -3, 3);
  for (int64_t largest : {0, 1}) {
    auto r = run_op("TopK", {x, Tensor::vector_int64({4})}, attrs_of({{"axis", int64_t{1}}, {"largest", largest}}), 11, 2);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    std::vector<double> want_v, want_i;
    for (int64_t i = 0; i < 3; ++i) {
      std::vector<bool> used(6, false);
      for (int t = 0; t < 4; ++t) {  // selection: best unused value, lowest index on ties
        int64_t best = -1;
        for (int64_t j = 0; j < 6; ++j) {
          if (used[j]) continue;
          const double e = x.get(i * 6 + j);
          if (best < 0 || (largest ? e > x.get(i * 6 + best) : e < x.get(i * 6 + best))) best = j;
        }
        used[best] = true;
        want_v.push_back(x.get(i * 6 + best));
        want_i.push_back(static_cast<double>(best));
      }
    }
    expect_close(r.value()[0], want_v, "TopK values");
    expect_close(r.value()[1], want_i, "TopK indices");
  }

  Tensor data = random_tensor(DataType::kFloat32, {2, 3, 4}, rng);
  Tensor ind = Tensor::empty(DataType::kInt64, {2, 2});  // batch_dims=1: per batch one (row, col) tuple
  std::uniform_int_distribution<int> ri(0, 2), ci(-4, 3);
  for (int64_t t = 0; t < 2; ++t) {
    ind.set(t * 2, ri(rng));
    ind.set(t * 2 + 1, ci(rng));
  }
  auto r = run_op("GatherND", {data, ind}, attrs_of({{"batch_dims", int64_t{1}}}), 13);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r.value()[0].dims(), (std::vector<int64_t>{2}));
  std::vector<double> want;
  for (int64_t bt = 0; bt < 2; ++bt) {
    int64_t row = static_cast<int64_t>(ind.get(bt * 2)), col = static_cast<int64_t>(ind.get(bt * 2 + 1));
    if (col < 0) col += 4;
    want.push_back(data.get((bt * 3 + row) * 4 + col));
  }
  expect_close(r.value()[0], want, "GatherND batch_dims 1");

  Tensor cond = Tensor::empty(DataType::kBool, {3});
  std::bernoulli_distribution coin(0.5);
  for (int64_t i = 0; i < 3; ++i) cond.set(i, coin(rng));
  r = run_op("Compress", {data, cond}, attrs_of({{"axis", int64_t{1}}}), 11);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  want.clear();
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t c = 0; c < 4; ++c)
        if (cond.get(b) != 0) want.push_back(data.get((a * 3 + b) * 4 + c));
  expect_close(r.value()[0], want, "Compress axis 1");

  Tensor m1 = random_tensor(DataType::kFloat64, {3, 1}, rng), m2 = random_tensor(DataType::kFloat64, {4}, rng);
  r = run_op("Mean", {m1, m2, m1}, {}, 13);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  want.clear();
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) want.push_back((2 * m1.get(i) + m2.get(j)) / 3);
  expect_close(r.value()[0], want, "Mean");
}

TEST(ExtraKernels, DepthToSpaceModes) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const int64_t N = 2, C = 2, H = 3, W = 2, b = 2;
  Tensor x = random_tensor(DataType::kFloat32, {N, C * b * b, H, W}, rng);
  for (const char* mode : {"DCR", "CRD"}) {
    auto r = run_op("DepthToSpace", {x}, attrs_of({{"blocksize", b}, {"mode", std::string(mode)}}), 13);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    ASSERT_EQ(r.value()[0].dims(), (std::vector<int64_t>{N, C, H * b, W * b}));
    std::vector<double> want;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t hh = 0; hh < H * b; ++hh)
          for (int64_t ww = 0; ww < W * b; ++ww) {
            const int64_t i = hh % b, j = ww % b;
            const int64_t src_c = std::string(mode) == "DCR" ? (i * b + j) * C + c : (c * b + i) * b + j;
            want.push_back(x.get(((n * C * b * b + src_c) * H + hh / b) * W + ww / b));
          }
    expect_close(r.value()[0], want, std::string("DepthToSpace ") + mode);
    if (std::string(mode) == "DCR") {  // SpaceToDepth inverts DCR
      auto back = run_op("SpaceToDepth", {r.value()[0]}, attrs_of({{"blocksize", b}}), 13);
      ASSERT_TRUE(back.is_ok()) << back.status().to_string();
      expect_close(back.value()[0], values(x), "SpaceToDepth(DepthToSpace(x))");
    }
  }
  EXPECT_FALSE(run_op("DepthToSpace", {x}, attrs_of({{"blocksize", int64_t{3}}}), 13).is_ok());
  EXPECT_FALSE(run_op("DepthToSpace", {x}, attrs_of({{"blocksize", b}, {"mode", std::string("XYZ")}}), 13).is_ok());
}
