// The random ops (src/ops/random/random.cpp) and Dropout in training
// mode, tested on statistics: every sample mean, variance and frequency must lie within 6 standard
// errors of the distribution's (computed from the sample size and the distribution's own moments),
// so a wrong distribution fails while a right one fails about once in 5e8 checks. Then support
// bounds, seeds (same seed, same values; another seed or none, other values), the exact cases
// (Bernoulli at p = 0 and 1), dtypes, errors naming the attribute, constant folding leaving the
// nodes alone, the device refusal, and an engine run twice.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "graft/engine.h"
#include "graph/passes.h"
#include "ops/random/random.h"
#include "runtime/device_engine.h"
#include "tests/unit/graph_pass_test_util.h"

namespace graft {
namespace {

using testing::attrs_of;
using testing::contains;
using testing::run_op;

constexpr double kSigmas = 6.0;

struct Moments {
  double mean = 0, var = 0;
};
Moments moments(const Tensor& t) {
  Moments m;
  const double n = static_cast<double>(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) m.mean += t.get(i);
  m.mean /= n;
  for (int64_t i = 0; i < t.numel(); ++i) m.var += (t.get(i) - m.mean) * (t.get(i) - m.mean);
  m.var /= n - 1;
  return m;
}

// Mean and variance of `t` against a distribution with mean `mu`, variance `var` and fourth
// central moment `mu4`: 6 standard errors each (SE of the variance: sqrt((mu4 - var^2) / n)).
void expect_moments(const Tensor& t, double mu, double var, double mu4, const std::string& what) {
  const double n = static_cast<double>(t.numel());
  const Moments m = moments(t);
  EXPECT_NEAR(m.mean, mu, kSigmas * std::sqrt(var / n)) << what << ": mean";
  EXPECT_NEAR(m.var, var, kSigmas * std::sqrt((mu4 - var * var) / n)) << what << ": variance";
}

// A frequency `count / n` against probability p: 6 standard errors of a binomial proportion.
void expect_frequency(int64_t count, int64_t n, double p, const std::string& what) {
  const double f = static_cast<double>(count) / static_cast<double>(n);
  EXPECT_NEAR(f, p, kSigmas * std::sqrt(p * (1 - p) / static_cast<double>(n))) << what;
}

Tensor filled(DataType dt, std::vector<int64_t> dims, double v) {
  Tensor t = Tensor::empty(dt, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, v);
  return t;
}

Tensor first_output(const Result<std::vector<Tensor>>& r) {
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? r.value()[0] : Tensor();
}

bool same_values(const Tensor& a, const Tensor& b) {
  return a.numel() == b.numel() && testing::values(a) == testing::values(b);
}

constexpr int64_t kN = 200000;

// ---- RandomUniform(Like) ----

TEST(RandomUniform, MomentsAndSupport) {
  for (DataType dt : {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16}) {
    const double low = -2.0, high = 3.0, w = high - low;
    Tensor y = first_output(run_op("RandomUniform", {},
                                   attrs_of({{"shape", std::vector<int64_t>{400, 500}}, {"low", float(low)},
                                             {"high", float(high)}, {"dtype", int64_t(dt)}})));
    ASSERT_EQ(y.dtype(), dt);
    ASSERT_EQ(y.dims(), (std::vector<int64_t>{400, 500}));
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < y.numel(); ++i) lo = std::min(lo, y.get(i)), hi = std::max(hi, y.get(i));
    EXPECT_GE(lo, low) << dtype_name(dt);
    EXPECT_LT(hi, high) << dtype_name(dt);
    // float16 rounds each value by up to 2^-9 of it; the bound below is far wider than that.
    expect_moments(y, (low + high) / 2, w * w / 12, w * w * w * w / 80, dtype_name(dt));
  }
}

TEST(RandomUniform, RoundingNeverReachesHigh) {
  // [1, 1 + 2^-11): float16 has no value strictly inside but 1, and most draws round to high.
  Tensor y = first_output(run_op("RandomUniform", {},
                                 attrs_of({{"shape", std::vector<int64_t>{1000}}, {"low", 1.0f},
                                           {"high", 1.0f + 0x1p-11f}, {"dtype", int64_t(DataType::kFloat16)}})));
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(y.get(i), 1.0) << i;
  // high == low: every value is low.
  Tensor c = first_output(run_op("RandomUniform", {},
                                 attrs_of({{"shape", std::vector<int64_t>{10}}, {"low", 0.5f}, {"high", 0.5f}})));
  EXPECT_EQ(testing::values(c), std::vector<double>(10, 0.5));
}

TEST(RandomUniformLike, ShapeAndDtypeFromInputUnlessGiven) {
  Tensor x = filled(DataType::kFloat64, {3, 7, 5}, 0.0);
  Tensor y = first_output(run_op("RandomUniformLike", {x}));
  EXPECT_EQ(y.dtype(), DataType::kFloat64);
  EXPECT_EQ(y.dims(), x.dims());
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_TRUE(y.get(i) >= 0 && y.get(i) < 1) << y.get(i);
  Tensor ints = filled(DataType::kInt32, {4, 4}, 7);
  Tensor f = first_output(run_op("RandomUniformLike", {ints}, attrs_of({{"dtype", int64_t(DataType::kFloat16)}})));
  EXPECT_EQ(f.dtype(), DataType::kFloat16);
  EXPECT_EQ(f.dims(), ints.dims());
  // An int32 input without a dtype attribute: the output would be int32, which the op lacks.
  auto bad = run_op("RandomUniformLike", {ints});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().attribute(), "dtype");
  EXPECT_TRUE(contains(bad.status().message(), "int32")) << bad.status().to_string();
}

TEST(RandomUniformLike, MomentsOverALargeInput) {
  Tensor x = filled(DataType::kFloat32, {kN}, 0.0);
  Tensor y = first_output(run_op("RandomUniformLike", {x}, attrs_of({{"low", 10.0f}, {"high", 12.0f}})));
  expect_moments(y, 11.0, 4.0 / 12, 16.0 / 80, "uniform [10, 12)");
}

// ---- RandomNormal(Like) ----

TEST(RandomNormal, Moments) {
  for (DataType dt : {DataType::kFloat32, DataType::kFloat64}) {
    const double mean = 1.5, scale = 0.25;
    Tensor y = first_output(run_op("RandomNormal", {},
                                   attrs_of({{"shape", std::vector<int64_t>{kN}}, {"mean", float(mean)},
                                             {"scale", float(scale)}, {"dtype", int64_t(dt)}})));
    ASSERT_EQ(y.dtype(), dt);
    const double v = scale * scale;
    expect_moments(y, mean, v, 3 * v * v, dtype_name(dt));
    // A normal's tails: about 4.55% of draws lie beyond 2 standard deviations.
    int64_t beyond = 0;
    for (int64_t i = 0; i < y.numel(); ++i) beyond += std::fabs(y.get(i) - mean) > 2 * scale;
    expect_frequency(beyond, y.numel(), std::erfc(2 / std::sqrt(2.0)), "beyond 2 sigma");
  }
}

TEST(RandomNormalLike, MomentsAndDtype) {
  Tensor x = filled(DataType::kFloat16, {kN / 2, 2}, 0.0);
  Tensor y = first_output(run_op("RandomNormalLike", {x}, attrs_of({{"dtype", int64_t(DataType::kFloat64)}})));
  EXPECT_EQ(y.dtype(), DataType::kFloat64);
  EXPECT_EQ(y.dims(), x.dims());
  expect_moments(y, 0.0, 1.0, 3.0, "standard normal");
  // scale 0: every value is the mean.
  Tensor c = first_output(run_op("RandomNormalLike", {filled(DataType::kFloat32, {8}, 0)},
                                 attrs_of({{"mean", -3.0f}, {"scale", 0.0f}})));
  EXPECT_EQ(testing::values(c), std::vector<double>(8, -3.0));
}

// ---- seeds ----

TEST(RandomSeeds, SameSeedSameValuesOtherSeedOrNoneOtherValues) {
  const std::vector<std::pair<std::string, std::vector<Tensor>>> ops = {
      {"RandomUniform", {}}, {"RandomNormal", {}},
      {"RandomUniformLike", {filled(DataType::kFloat32, {64}, 0)}},
      {"RandomNormalLike", {filled(DataType::kFloat32, {64}, 0)}},
      {"Bernoulli", {filled(DataType::kFloat32, {64}, 0.5)}},
      {"Multinomial", {filled(DataType::kFloat32, {2, 8}, 0.0)}}};
  for (const auto& [op, in] : ops) {
    auto with = [&, op = op, in = in](std::optional<float> seed) {
      AttributeMap a;
      if (op == "RandomUniform" || op == "RandomNormal") a.set("shape", std::vector<int64_t>{64});
      if (op == "Multinomial") a.set("sample_size", int64_t{32});
      if (seed) a.set("seed", *seed);
      return first_output(run_op(op, in, a, 17));
    };
    EXPECT_TRUE(same_values(with(3.0f), with(3.0f))) << op;
    EXPECT_TRUE(same_values(with(0.25f), with(0.25f))) << op;
    EXPECT_FALSE(same_values(with(3.0f), with(4.0f))) << op;
    EXPECT_FALSE(same_values(with(std::nullopt), with(std::nullopt))) << op;
  }
}

TEST(RandomSeeds, IntegralSeedsOfEitherTypeAgree) {
  // Dropout's seed is an int, the others' a float: 7 and 7.0 seed the same stream.
  auto a = seed_attr(attrs_of({{"seed", 7.0f}}));
  auto b = seed_attr(attrs_of({{"seed", int64_t{7}}}));
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(a.value(), b.value());
  auto bad = seed_attr(attrs_of({{"seed", std::string("x")}}));
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().attribute(), "seed");
}

// ---- Bernoulli ----

TEST(Bernoulli, ZeroAndOneAreExact) {
  for (DataType out : {DataType::kFloat32, DataType::kBool, DataType::kInt64, DataType::kFloat16}) {
    Tensor p(Tensor::empty(DataType::kFloat64, {1000}));
    for (int64_t i = 0; i < p.numel(); ++i) p.set(i, i % 2);
    Tensor y = first_output(run_op("Bernoulli", {p}, attrs_of({{"dtype", int64_t(out)}})));
    ASSERT_EQ(y.dtype(), out);
    for (int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(y.get(i), static_cast<double>(i % 2)) << dtype_name(out) << " " << i;
  }
}

TEST(Bernoulli, FrequenciesFollowEachElementsProbability) {
  // Four probabilities interleaved: each one's share of ones, and every output 0 or 1.
  const std::vector<double> ps = {0.05, 0.3, 0.5, 0.9};
  Tensor p = Tensor::empty(DataType::kFloat32, {kN});
  for (int64_t i = 0; i < kN; ++i) p.set(i, ps[static_cast<size_t>(i % 4)]);
  Tensor y = first_output(run_op("Bernoulli", {p}));
  ASSERT_EQ(y.dtype(), DataType::kFloat32);
  std::vector<int64_t> ones(4, 0);
  for (int64_t i = 0; i < kN; ++i) {
    const double v = y.get(i);
    ASSERT_TRUE(v == 0 || v == 1) << i << ": " << v;
    ones[static_cast<size_t>(i % 4)] += v == 1;
  }
  for (size_t k = 0; k < ps.size(); ++k) expect_frequency(ones[k], kN / 4, ps[k], "p = " + std::to_string(ps[k]));
}

TEST(Bernoulli, ProbabilitiesOutsideZeroOneAreErrors) {
  Tensor p = filled(DataType::kFloat32, {4}, 0.5);
  p.set(2, 1.5);
  auto r = run_op("Bernoulli", {p});
  ASSERT_FALSE(r.is_ok());
  EXPECT_TRUE(contains(r.status().message(), "element 2 is 1.5")) << r.status().to_string();
  auto ints = run_op("Bernoulli", {filled(DataType::kInt32, {4}, 0)});
  ASSERT_FALSE(ints.is_ok());
  auto dtype = run_op("Bernoulli", {filled(DataType::kFloat32, {4}, 0)}, attrs_of({{"dtype", int64_t{8}}}));
  ASSERT_FALSE(dtype.is_ok());
  EXPECT_EQ(dtype.status().attribute(), "dtype");
}

// ---- Multinomial ----

TEST(Multinomial, FrequenciesMatchTheSoftmax) {
  // Row 0: probabilities 0.1, 0.2, 0.3, 0.4 as log weights offset by 5 (unnormalized); row 1:
  // class 1 impossible (-inf) and the rest equal.
  const int64_t samples = 100000;
  Tensor x = Tensor::empty(DataType::kFloat32, {2, 4});
  for (int64_t c = 0; c < 4; ++c) x.set(c, std::log(0.1 * (c + 1)) + 5);
  for (int64_t c = 0; c < 4; ++c) x.set(4 + c, c == 1 ? -INFINITY : 0.0);
  for (DataType dt : {DataType::kInt32, DataType::kInt64}) {
    Tensor y = first_output(
        run_op("Multinomial", {x}, attrs_of({{"sample_size", samples}, {"dtype", int64_t(dt)}}), 17));
    ASSERT_EQ(y.dtype(), dt);
    ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, samples}));
    std::vector<std::vector<int64_t>> counts(2, std::vector<int64_t>(4, 0));
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t s = 0; s < samples; ++s) {
        const double c = y.get(b * samples + s);
        ASSERT_TRUE(c >= 0 && c < 4 && c == std::floor(c)) << c;
        ++counts[static_cast<size_t>(b)][static_cast<size_t>(c)];
      }
    for (int64_t c = 0; c < 4; ++c) expect_frequency(counts[0][c], samples, 0.1 * (c + 1), "row 0 class " + std::to_string(c));
    EXPECT_EQ(counts[1][1], 0);
    for (int64_t c : {0, 2, 3}) expect_frequency(counts[1][c], samples, 1.0 / 3, "row 1 class " + std::to_string(c));
  }
}

TEST(Multinomial, BadInputsAndAttributes) {
  Tensor x = filled(DataType::kFloat32, {2, 3}, 0);
  auto zero = run_op("Multinomial", {x}, attrs_of({{"sample_size", int64_t{0}}}));
  ASSERT_FALSE(zero.is_ok());
  EXPECT_EQ(zero.status().attribute(), "sample_size");
  auto dtype = run_op("Multinomial", {x}, attrs_of({{"dtype", int64_t(DataType::kFloat32)}}));
  ASSERT_FALSE(dtype.is_ok());
  EXPECT_EQ(dtype.status().attribute(), "dtype");
  auto rank = run_op("Multinomial", {filled(DataType::kFloat32, {6}, 0)});
  ASSERT_FALSE(rank.is_ok());
  Tensor dead = filled(DataType::kFloat32, {1, 3}, -INFINITY);
  auto none = run_op("Multinomial", {dead});
  ASSERT_FALSE(none.is_ok());
  EXPECT_TRUE(contains(none.status().message(), "row 0")) << none.status().to_string();
}

// ---- attribute errors ----

TEST(RandomAttributes, ErrorsNameTheAttribute) {
  const std::vector<int64_t> shape{2, 3};
  struct Case {
    std::string op;
    AttributeMap attrs;
    std::string attribute;
  };
  const std::vector<Case> cases = {
      {"RandomUniform", attrs_of({{"shape", shape}, {"low", 2.0f}, {"high", 1.0f}}), "high"},
      {"RandomUniform", attrs_of({{"shape", shape}, {"dtype", int64_t(DataType::kInt32)}}), "dtype"},
      {"RandomUniform", attrs_of({{"shape", shape}, {"dtype", int64_t{8}}}), "dtype"},  // string
      {"RandomUniform", attrs_of({{"shape", shape}, {"low", -INFINITY}}), "low"},
      {"RandomUniform", attrs_of({{"low", 0.0f}}), "shape"},
      {"RandomUniform", attrs_of({{"shape", std::vector<int64_t>{2, -1}}}), "shape"},
      {"RandomNormal", attrs_of({{"shape", shape}, {"scale", -1.0f}}), "scale"},
      {"RandomNormal", attrs_of({{"shape", shape}, {"mean", NAN}}), "mean"},
      {"RandomNormal", attrs_of({{"shape", shape}, {"seed", std::string("1")}}), "seed"},
  };
  for (const Case& c : cases) {
    auto r = run_op(c.op, {}, c.attrs);
    ASSERT_FALSE(r.is_ok()) << c.op << " " << c.attribute;
    EXPECT_EQ(r.status().attribute(), c.attribute) << r.status().to_string();
  }
  auto high = run_op("RandomUniformLike", {filled(DataType::kFloat32, {2}, 0)}, attrs_of({{"low", 1.0f}, {"high", 0.0f}}));
  ASSERT_FALSE(high.is_ok());
  EXPECT_EQ(high.status().attribute(), "high");
  EXPECT_TRUE(contains(high.status().message(), "must be >= low")) << high.status().to_string();
}

// ---- Dropout in training mode ----

Tensor flag(bool v) { return Tensor::from_doubles(DataType::kBool, {}, {v ? 1.0 : 0.0}); }
Tensor ratio_of(double r) { return Tensor::from_doubles(DataType::kFloat32, {}, {r}); }

TEST(DropoutTraining, MaskScaleAndKeptFraction) {
  std::mt19937 rng(testing::process_seed());
  SCOPED_TRACE("seed " + std::to_string(testing::process_seed()));
  Tensor x = testing::random_tensor(DataType::kFloat32, {kN / 100, 100}, rng, 0.5, 2.0);  // never 0
  for (double ratio : {0.25, 0.75}) {
    auto r = run_op("Dropout", {x, ratio_of(ratio), flag(true)}, {}, 13, 2);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    const Tensor& y = r.value()[0];
    const Tensor& mask = r.value()[1];
    ASSERT_EQ(mask.dtype(), DataType::kBool);
    const double scale = 1.0 / (1.0 - ratio);
    int64_t kept = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double m = mask.get(i);
      ASSERT_TRUE(m == 0 || m == 1) << i;
      if (m == 1) {
        ++kept;
        ASSERT_NEAR(y.get(i), x.get(i) * scale, 1e-6 * std::fabs(x.get(i) * scale)) << i;
      } else {
        ASSERT_EQ(y.get(i), 0.0) << i;
      }
    }
    expect_frequency(kept, x.numel(), 1.0 - ratio, "kept fraction at ratio " + std::to_string(ratio));
  }
  // The default ratio is 0.5.
  auto def = run_op("Dropout", {x, Tensor(), flag(true)}, {}, 13, 2);
  ASSERT_TRUE(def.is_ok()) << def.status().to_string();
  int64_t kept = 0;
  for (int64_t i = 0; i < x.numel(); ++i) kept += def.value()[1].get(i) != 0;
  expect_frequency(kept, x.numel(), 0.5, "kept fraction at the default ratio");
}

TEST(DropoutTraining, SeedGivesTheSameMask) {
  Tensor x = filled(DataType::kFloat32, {256}, 1.0);
  auto run = [&](std::optional<int64_t> seed) {
    AttributeMap a;
    if (seed) a.set("seed", *seed);
    auto r = run_op("Dropout", {x, ratio_of(0.5), flag(true)}, a, 13, 2);
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    return r.is_ok() ? r.value()[1] : Tensor();
  };
  EXPECT_TRUE(same_values(run(11), run(11)));
  EXPECT_FALSE(same_values(run(11), run(12)));
  EXPECT_FALSE(same_values(run(std::nullopt), run(std::nullopt)));
}

TEST(DropoutTraining, RatiosOutsideZeroOneAreErrors) {
  Tensor x = filled(DataType::kFloat32, {4}, 1.0);
  for (double bad : {1.0, -0.25}) {
    auto r = run_op("Dropout", {x, ratio_of(bad), flag(true)}, {}, 13);
    ASSERT_FALSE(r.is_ok()) << bad;
    EXPECT_TRUE(contains(r.status().message(), "input 1 (ratio)")) << r.status().to_string();
  }
  // In inference mode the ratio is not read.
  EXPECT_TRUE(run_op("Dropout", {x, ratio_of(1.0), flag(false)}, {}, 13).is_ok());
}

// ---- graph level: folding, device refusal, engine runs ----

// y = RandomUniformLike(c), z = Dropout(c, 0.5, true), over constant initializers.
testing::OnnxModelBuilder random_over_constants() {
  testing::OnnxModelBuilder b(17);
  b.initializer("c", filled(DataType::kFloat32, {16}, 1.0));
  b.initializer("r", ratio_of(0.5));
  b.initializer("t", flag(true));
  b.node("RandomUniformLike", {"c"}, {"y"}, "draw");
  b.node("Dropout", {"c", "r", "t"}, {"z"}, "drop");
  b.output("y", DataType::kFloat32);
  b.output("z", DataType::kFloat32);
  return b;
}

TEST(RandomGraph, ConstantFoldingLeavesRandomNodes) {
  auto g = testing::load(random_over_constants());
  ASSERT_TRUE(g);
  EXPECT_EQ(testing::count_op(*g, "RandomUniformLike"), 1);
  EXPECT_EQ(testing::count_op(*g, "Dropout"), 1);
  // A Dropout in inference mode over constants still folds.
  testing::OnnxModelBuilder b(17);
  b.initializer("c", filled(DataType::kFloat32, {4}, 1.0));
  b.initializer("t", flag(false));
  b.initializer("r", ratio_of(0.5));
  b.node("Dropout", {"c", "r", "t"}, {"z"});
  b.output("z", DataType::kFloat32);
  auto inference = testing::load(b);
  ASSERT_TRUE(inference);
  EXPECT_EQ(testing::count_op(*inference, "Dropout"), 0);
}

// The CUDA engine has a generator of its own (src/ops/random/random.cu): random nodes do
// not stop a device engine (tests/cuda/random_engine_test.cpp runs them).
TEST(RandomGraph, DeviceEnginesAcceptRandomNodes) {
  // Through the builder: an engine, or an error about this build or machine (no CUDA compiled, no
  // GPU), never a refusal of the random nodes; and never a crash.
  BuilderConfig cfg;
  cfg.device = DeviceType::kCUDA;
  auto eng = Engine::build_from_onnx_bytes(random_over_constants().bytes(), cfg, "draws.onnx");
  if (!eng.is_ok()) {
    EXPECT_FALSE(contains(eng.status().to_string(), "CPU engine only")) << eng.status().to_string();
    EXPECT_FALSE(contains(eng.status().to_string(), "random")) << eng.status().to_string();
  }
}

TEST(RandomGraph, EngineRunsSeededTheSameAndUnseededFresh) {
  testing::OnnxModelBuilder b(17);
  auto& seeded = b.node("RandomNormal", {}, {"a"});
  b.attr(seeded, "shape", std::vector<int64_t>{32});
  b.attr(seeded, "seed", 5.0f);
  auto& fresh = b.node("RandomNormal", {}, {"b"});
  b.attr(fresh, "shape", std::vector<int64_t>{32});
  b.output("a", DataType::kFloat32);
  b.output("b", DataType::kFloat32);
  auto eng = Engine::build_from_onnx_bytes(b.bytes(), BuilderConfig{}, "normal.onnx");
  ASSERT_TRUE(eng.is_ok()) << eng.status().to_string();
  auto ctx = (*eng)->create_context();
  ASSERT_TRUE(ctx.is_ok());
  std::map<std::string, Tensor> run1, run2;
  ASSERT_TRUE((*ctx)->run({}, run1).is_ok());
  ASSERT_TRUE((*ctx)->run({}, run2).is_ok());
  EXPECT_TRUE(same_values(run1.at("a"), run2.at("a")));
  EXPECT_FALSE(same_values(run1.at("b"), run2.at("b")));
}

}  // namespace
}  // namespace graft
