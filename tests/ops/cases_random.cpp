// Cases for the random ops: RandomNormal, RandomUniform, their *Like forms, Bernoulli and
// Multinomial. The CPU and CUDA generators differ, so each backend's draws are checked against the
// distribution (StatisticsFn, harness.h): bounds, and mean, variance or frequencies within six
// standard errors; a seeded node must repeat itself and an unseeded one must not (the harness).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "case_util.h"
#include "harness.h"

namespace graft::optest {

namespace {

constexpr double kStandardErrors = 6.0;

std::vector<double> draws(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get(i);
  return v;
}

// The sample mean and variance of `v` against a distribution's, each within six standard errors
// (the variance's from the sample's fourth central moment).
void expect_moments(const std::vector<double>& v, double mean, double variance, const std::string& what) {
  const double n = static_cast<double>(v.size());
  double m = 0;
  for (double x : v) m += x;
  m /= n;
  double m2 = 0, m4 = 0;
  for (double x : v) {
    const double d = (x - m) * (x - m);
    m2 += d;
    m4 += d * d;
  }
  m2 /= n;
  m4 /= n;
  EXPECT_LE(std::fabs(m - mean), kStandardErrors * std::sqrt(variance / n))
      << what << ": sample mean " << m << ", expected " << mean << " (" << v.size() << " draws)";
  EXPECT_LE(std::fabs(m2 - variance), kStandardErrors * std::sqrt(std::max(m4 - m2 * m2, 0.0) / n) + 1e-12)
      << what << ": sample variance " << m2 << ", expected " << variance << " (" << v.size() << " draws)";
}

void expect_within(const std::vector<double>& v, double lo, double hi, const std::string& what) {
  for (size_t i = 0; i < v.size(); ++i)
    if (!(v[i] >= lo && v[i] <= hi)) {
      ADD_FAILURE() << what << ": draw " << i << " is " << v[i] << ", outside [" << lo << ", " << hi << "]";
      return;
    }
}

// RandomNormal / RandomNormalLike: N(mean, scale^2).
StatisticsFn normal_statistics() {
  return [](const std::vector<Tensor>& outs, const Values&, const AttributeMap& a) {
    const double mean = a.get_float("mean", 0.0f).value(), scale = a.get_float("scale", 1.0f).value();
    expect_moments(draws(outs[0]), mean, scale * scale, "normal draws");
  };
}

// RandomUniform / RandomUniformLike: U[low, high) (a float16 draw may round up to high).
StatisticsFn uniform_statistics() {
  return [](const std::vector<Tensor>& outs, const Values&, const AttributeMap& a) {
    const double lo = a.get_float("low", 0.0f).value(), hi = a.get_float("high", 1.0f).value();
    const std::vector<double> v = draws(outs[0]);
    expect_within(v, lo, hi, "uniform draws");
    expect_moments(v, (lo + hi) / 2, (hi - lo) * (hi - lo) / 12, "uniform draws");
  };
}

OpCaseTable generator_table(const char* name, StatisticsFn statistics) {
  OpCaseTable t = builtin_table(name, nullptr, 17);
  t.statistics = std::move(statistics);
  return t;
}

AttributeMap normal_attrs(double mean, double scale) {
  AttributeMap a;
  a.set("mean", static_cast<float>(mean));
  a.set("scale", static_cast<float>(scale));
  return a;
}

AttributeMap uniform_attrs(double lo, double hi) {
  AttributeMap a;
  a.set("low", static_cast<float>(lo));
  a.set("high", static_cast<float>(hi));
  return a;
}

OpCaseTable random_normal_cases() {
  OpCaseTable t = generator_table("RandomNormal", normal_statistics());
  AttributeMap seeded = normal_attrs(1.5, 0.5);
  seeded.set("shape", Ints{256, 256});
  seeded.set("seed", 7.0f);
  t.cases.push_back(make_case("seeded_256x256", {}, {{256, 256}}, seeded));
  AttributeMap half = normal_attrs(-2.0, 3.0);
  half.set("shape", Ints{4, 128, 128});
  half.set("dtype", int64_t{10});  // float16
  t.cases.push_back(make_case("unseeded_float16", {}, {{4, 128, 128}}, half));
  return t;
}

OpCaseTable random_uniform_cases() {
  OpCaseTable t = generator_table("RandomUniform", uniform_statistics());
  AttributeMap a = uniform_attrs(-2.0, 3.0);
  a.set("shape", Ints{250, 256});
  t.cases.push_back(make_case("unseeded_250x256", {}, {{250, 256}}, a));
  AttributeMap half = uniform_attrs(0.25, 0.75);
  half.set("shape", Ints{65536});
  half.set("dtype", int64_t{10});
  half.set("seed", 3.0f);
  t.cases.push_back(make_case("seeded_float16", {}, {{65536}}, half));
  return t;
}

// The *Like forms: the input's dims and (without `dtype`) its dtype; its values are not read.
OpCaseTable random_normal_like_cases() {
  OpCaseTable t = generator_table("RandomNormalLike", normal_statistics());
  AttributeMap a = normal_attrs(0.5, 2.0);
  a.set("seed", 11.0f);
  t.cases.push_back(make_case("seeded_like_input", {data({256, 256})}, {{256, 256}}, a));
  return t;
}

OpCaseTable random_uniform_like_cases() {
  OpCaseTable t = generator_table("RandomUniformLike", uniform_statistics());
  t.cases.push_back(make_case("unseeded_like_input", {data({4, 16384})}, {{4, 16384}}, uniform_attrs(-1.0, 1.0)));
  return t;
}

// Bernoulli: y_i ~ Bernoulli(p_i): values 0 or 1, and sum(y - p) within six standard deviations of
// zero, over all elements and over those with p below and above one half.
OpCaseTable bernoulli_cases() {
  OpCaseTable t = generator_table("Bernoulli", [](const std::vector<Tensor>& outs, const Values& in, const AttributeMap&) {
    const std::vector<double> y = draws(outs[0]);
    ASSERT_EQ(y.size(), in[0].size());
    for (int part = 0; part < 3; ++part) {
      double diff = 0, var = 0;
      for (size_t i = 0; i < y.size(); ++i) {
        const double p = in[0][i];
        if ((part == 1 && p >= 0.5) || (part == 2 && p < 0.5)) continue;
        if (y[i] != 0.0 && y[i] != 1.0) {
          ADD_FAILURE() << "draw " << i << " is " << y[i] << ", not 0 or 1";
          return;
        }
        diff += y[i] - p;
        var += p * (1 - p);
      }
      EXPECT_LE(std::fabs(diff), kStandardErrors * std::sqrt(var)) << "Bernoulli draws (part " << part << ")";
    }
  });
  t.opset = 15;
  AttributeMap seeded;
  seeded.set("seed", 5.0f);
  t.cases.push_back(make_case("seeded_probabilities", {data({256, 256}, 0.05, 0.95)}, {{256, 256}}, seeded));
  t.cases.push_back(make_case("unseeded_probabilities", {data({65536}, 0.0, 1.0)}, {{65536}}));
  return t;
}

// Multinomial: per batch row, sample_size class indices drawn from softmax(input row): each
// class's count within six standard errors of sample_size * p.
OpCaseTable multinomial_cases() {
  OpCaseTable t = generator_table("Multinomial", [](const std::vector<Tensor>& outs, const Values& in, const AttributeMap& a) {
    const std::vector<double> y = draws(outs[0]);
    const int64_t samples = a.get_int("sample_size", 1).value();
    const int64_t batch = static_cast<int64_t>(y.size()) / samples, classes = static_cast<int64_t>(in[0].size()) / batch;
    for (int64_t b = 0; b < batch; ++b) {
      double total = 0;
      std::vector<double> p(static_cast<size_t>(classes)), seen(static_cast<size_t>(classes), 0.0);
      for (int64_t c = 0; c < classes; ++c) total += p[static_cast<size_t>(c)] = std::exp(in[0][static_cast<size_t>(b * classes + c)]);
      for (int64_t s = 0; s < samples; ++s) {
        const double k = y[static_cast<size_t>(b * samples + s)];
        if (!(k >= 0 && k < static_cast<double>(classes) && k == std::floor(k))) {
          ADD_FAILURE() << "row " << b << " draw " << s << " is " << k << ", not a class index below " << classes;
          return;
        }
        seen[static_cast<size_t>(k)] += 1;
      }
      for (int64_t c = 0; c < classes; ++c) {
        const double pc = p[static_cast<size_t>(c)] / total, n = static_cast<double>(samples);
        EXPECT_LE(std::fabs(seen[static_cast<size_t>(c)] - n * pc), kStandardErrors * std::sqrt(n * pc * (1 - pc)))
            << "row " << b << " class " << c << ": " << seen[static_cast<size_t>(c)] << " of " << samples
            << " draws, probability " << pc;
      }
    }
  });
  t.opset = 7;
  AttributeMap a;
  a.set("sample_size", int64_t{20000});
  a.set("seed", 2.0f);
  t.cases.push_back(make_case("seeded_int32", {data({2, 5}, -1.5, 1.5)}, {{2, 20000}}, a));
  AttributeMap i64;
  i64.set("sample_size", int64_t{20000});
  i64.set("dtype", int64_t{7});  // int64
  t.cases.push_back(make_case("unseeded_int64", {data({3, 4}, -1.0, 1.0)}, {{3, 20000}}, i64));
  return t;
}

}  // namespace

std::vector<OpCaseTable> random_case_tables() {
  return {random_normal_cases(),      random_uniform_cases(), random_normal_like_cases(),
          random_uniform_like_cases(), bernoulli_cases(),      multinomial_cases()};
}

}  // namespace graft::optest
