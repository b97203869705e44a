// Builtin ops added for ONNX backend-suite coverage (issue 16): the losses (src/ops/loss), the
// quantization ops (src/ops/quantize) and the rest (src/ops/misc). Kernels against independent
// naive computations written here, on fresh random data (never zeros) with poisoned outputs, in the
// dtypes and attribute combinations the suite's few cases leave out; plus inference and the
// attribute errors, which must name the attribute.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

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
  return t == DataType::kFloat16 ? 3e-3 : t == DataType::kBFloat16 ? 2e-2 : t == DataType::kFloat32 ? 2e-6 : 1e-12;
}

void expect_close(const Tensor& got, const std::vector<double>& want, const std::string& what, double tol = -1) {
  graft::testing::expect_values_close(got, want, tol < 0 ? tol_of(got.dtype()) : tol, what);
}

// Random class targets in [0, c), some of them set to `ignore` when `ignore_some`.
Tensor random_targets(DataType dt, std::vector<int64_t> dims, int64_t c, std::mt19937& rng, bool ignore_some,
                      int64_t ignore) {
  Tensor t = Tensor::empty(dt, std::move(dims));
  std::uniform_int_distribution<int64_t> d(0, c - 1);
  std::uniform_int_distribution<int> coin(0, 3);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, static_cast<double>(ignore_some && coin(rng) == 0 ? ignore : d(rng)));
  return t;
}

}  // namespace

// ---- losses -------------------------------------------------------------------------------------

// NLL over [N, C, D] input against a direct loop; SoftmaxCrossEntropyLoss against log-softmax
// written out here, both outputs.
TEST(LossKernels, NllAndSoftmaxCrossEntropyAgainstLoops) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const int64_t N = 3, C = 4, D = 5;
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kFloat64, DataType::kBFloat16})
    for (DataType tdt : {DataType::kInt64, DataType::kInt32})
      for (const char* reduction : {"none", "sum", "mean"})
        for (int with_weight : {0, 1})
          for (int64_t ii : {int64_t{-100}, int64_t{2}, int64_t{0}}) {
            const bool has_ii = ii != -100;
            Tensor x = random_tensor(dt, {N, C, D}, rng, -3, 3);
            Tensor t = random_targets(tdt, {N, D}, C, rng, has_ii, ii);
            Tensor w = random_tensor(dt, {C}, rng, 0.25, 2);
            std::vector<Tensor> in{x, t};
            if (with_weight) in.push_back(w);
            AttributeMap a = attrs_of({{"reduction", std::string(reduction)}});
            if (has_ii) a.set("ignore_index", ii);
            const auto xv = values(x), wv = values(w);
            // log-softmax over C, directly.
            std::vector<double> lp(xv.size());
            for (int64_t n = 0; n < N; ++n)
              for (int64_t d = 0; d < D; ++d) {
                double s = 0;
                for (int64_t c = 0; c < C; ++c) s += std::exp(xv[(n * C + c) * D + d]);
                for (int64_t c = 0; c < C; ++c) lp[(n * C + c) * D + d] = xv[(n * C + c) * D + d] - std::log(s);
              }
            for (int sce = 0; sce < 2; ++sce) {
              const std::vector<double>& src = sce ? lp : xv;
              std::vector<double> per;
              double sum = 0, wsum = 0;
              for (int64_t n = 0; n < N; ++n)
                for (int64_t d = 0; d < D; ++d) {
                  const int64_t k = static_cast<int64_t>(t.get(n * D + d));
                  const double wt = (has_ii && k == ii) ? 0.0 : (with_weight ? wv[k] : 1.0);
                  const double l = wt == 0.0 ? 0.0 : -src[(n * C + k) * D + d] * wt;
                  per.push_back(l);
                  sum += l;
                  wsum += wt;
                }
              std::vector<double> want = std::string(reduction) == "none" ? per
                                         : std::string(reduction) == "sum" ? std::vector<double>{sum}
                                                                           : std::vector<double>{sum / wsum};
              const std::string what = std::string(sce ? "SCE " : "NLL ") + dtype_name(dt) + " target " +
                                       dtype_name(tdt) + " " + reduction + " weight " + std::to_string(with_weight) +
                                       " ii " + std::to_string(ii);
              auto r = run_op(sce ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss", in, a, 13, sce ? 2 : 1);
              ASSERT_TRUE(r.is_ok()) << what << ": " << r.status().to_string();
              // Sums of 15 terms rounded once: a looser bound for the half types.
              const double tol = dt == DataType::kBFloat16 ? 3e-2 : dt == DataType::kFloat16 ? 4e-3 : tol_of(dt) * 4;
              expect_close(r.value()[0], want, what, tol);
              if (sce) expect_close(r.value()[1], lp, what + " log_prob", tol);
            }
          }
}

TEST(LossKernels, NdInputsAndIgnoreOutsideTheClassRange) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  // [N, C, d1, d2] with ignore_index -1 (outside [0, C)), mean over what is left.
  Tensor x = random_tensor(DataType::kFloat32, {2, 3, 2, 3}, rng, -2, 2);
  Tensor t = random_targets(DataType::kInt64, {2, 2, 3}, 3, rng, true, -1);
  t.set(0, 1);  // at least one target counts
  auto r = run_op("NegativeLogLikelihoodLoss", {x, t}, attrs_of({{"ignore_index", int64_t{-1}}}), 13);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  double sum = 0, cnt = 0;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t s = 0; s < 6; ++s) {
      const int64_t k = static_cast<int64_t>(t.get(n * 6 + s));
      if (k == -1) continue;
      sum -= x.get((n * 3 + k) * 6 + s);
      cnt += 1;
    }
  expect_close(r.value()[0], {sum / cnt}, "NLL 4-D mean ii=-1");
  // Every target ignored: the mean is 0/0.
  Tensor all_ignored = Tensor::from_doubles(DataType::kInt64, {2, 2, 3}, std::vector<double>(12, 2.0));
  r = run_op("NegativeLogLikelihoodLoss", {x, all_ignored}, attrs_of({{"ignore_index", int64_t{2}}}), 13);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(std::isnan(r.value()[0].get(0)));
}

TEST(LossInfer, ShapesAndErrors) {
  Dim b = Dim::symbol("batch");
  TensorDesc x(DataType::kFloat32, Shape{b, 5, 7});
  TensorDesc t(DataType::kInt64, Shape{b, 7});
  auto r = infer("NegativeLogLikelihoodLoss", {x, t}, attrs_of({{"reduction", std::string("none")}}), 13);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].to_string(), "float32[batch,7]");
  r = infer("SoftmaxCrossEntropyLoss", {x, t}, {}, 13, 2);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].to_string(), "float32[]");
  EXPECT_EQ(r.value()[1].to_string(), "float32[batch,5,7]");
  // Attribute errors name the attribute.
  r = infer("NegativeLogLikelihoodLoss", {x, t}, attrs_of({{"reduction", std::string("avg")}}), 13);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "reduction");
  r = infer("SoftmaxCrossEntropyLoss", {x, t}, attrs_of({{"ignore_index", std::string("x")}}), 13);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "ignore_index");
  r = infer("SoftmaxCrossEntropyLoss", {x, t}, attrs_of({{"reduction", 1.5f}}), 13);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "reduction");
  // Shape and dtype errors.
  EXPECT_FALSE(infer("NegativeLogLikelihoodLoss", {x, TensorDesc(DataType::kInt64, Shape{b, 6})}, {}, 13).is_ok());
  EXPECT_FALSE(infer("NegativeLogLikelihoodLoss", {x, TensorDesc(DataType::kInt64, Shape{b})}, {}, 13).is_ok());
  EXPECT_FALSE(infer("NegativeLogLikelihoodLoss", {x, TensorDesc(DataType::kFloat32, Shape{b, 7})}, {}, 13).is_ok());
  EXPECT_FALSE(
      infer("NegativeLogLikelihoodLoss", {x, t, TensorDesc(DataType::kFloat32, Shape{4})}, {}, 13).is_ok());
  EXPECT_FALSE(
      infer("NegativeLogLikelihoodLoss", {x, t, TensorDesc(DataType::kFloat64, Shape{5})}, {}, 13).is_ok());
  EXPECT_FALSE(infer("NegativeLogLikelihoodLoss", {TensorDesc(DataType::kFloat32, Shape{5}), TensorDesc(DataType::kInt64, Shape{})}, {}, 13).is_ok());
}

TEST(LossKernels, TargetOutOfRangeIsAnError) {
  std::mt19937 rng(7);
  Tensor x = random_tensor(DataType::kFloat32, {2, 3}, rng, -1, 1);
  for (double bad : {3.0, -1.0}) {
    Tensor t = Tensor::from_doubles(DataType::kInt64, {2}, {0, bad});
    auto r = run_op("NegativeLogLikelihoodLoss", {x, t}, {}, 13);
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find("target value"), std::string::npos) << r.status().to_string();
    r = run_op("SoftmaxCrossEntropyLoss", {x, t}, attrs_of({{"ignore_index", int64_t{7}}}), 13);
    ASSERT_FALSE(r.is_ok());
  }
}

// ---- normalizations -----------------------------------------------------------------------------

TEST(MiscKernels, InstanceNormLrnMvnAgainstLoops) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const int64_t N = 2, C = 5, H = 3, W = 4, S = H * W;
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kFloat64}) {
    Tensor x = random_tensor(dt, {N, C, H, W}, rng, -2, 3);
    Tensor sc = random_tensor(dt, {C}, rng, 0.5, 1.5);
    Tensor bi = random_tensor(dt, {C}, rng, -1, 1);
    const auto xv = values(x);
    const double tol = dt == DataType::kFloat16 ? 4e-3 : tol_of(dt) * 4;
    {  // InstanceNormalization, epsilon 0.01
      auto r = run_op("InstanceNormalization", {x, sc, bi}, attrs_of({{"epsilon", 0.01f}}), 13);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      std::vector<double> want(xv.size());
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c) {
          double m = 0, v = 0;
          for (int64_t s = 0; s < S; ++s) m += xv[(n * C + c) * S + s] / S;
          for (int64_t s = 0; s < S; ++s) v += (xv[(n * C + c) * S + s] - m) * (xv[(n * C + c) * S + s] - m) / S;
          for (int64_t s = 0; s < S; ++s)
            want[(n * C + c) * S + s] = sc.get(c) * (xv[(n * C + c) * S + s] - m) / std::sqrt(v + double{0.01f}) + bi.get(c);
        }
      expect_close(r.value()[0], want, std::string("InstanceNormalization ") + dtype_name(dt), tol);
    }
    for (int64_t size : {1, 2, 3, 4, 7}) {  // LRN, even and odd windows, one wider than C
      const float alpha = 0.3f, beta = 0.6f, bias = 1.5f;
      auto r = run_op("LRN", {x}, attrs_of({{"size", size}, {"alpha", alpha}, {"beta", beta}, {"bias", bias}}), 13);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      std::vector<double> want(xv.size());
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c)
          for (int64_t s = 0; s < S; ++s) {
            double sq = 0;
            for (int64_t k = 0; k < C; ++k)  // channel k is in c's window when c - floor((size-1)/2) <= k <= c + ceil((size-1)/2)
              if (k >= c - (size - 1) / 2 && k <= c + size / 2) sq += xv[(n * C + k) * S + s] * xv[(n * C + k) * S + s];
            want[(n * C + c) * S + s] =
                xv[(n * C + c) * S + s] / std::pow(double{bias} + double{alpha} / size * sq, double{beta});
          }
      expect_close(r.value()[0], want, std::string("LRN ") + dtype_name(dt) + " size " + std::to_string(size), tol);
    }
    for (const std::vector<int64_t>& axes : {std::vector<int64_t>{0, 2, 3}, std::vector<int64_t>{1}, std::vector<int64_t>{-1, 1}}) {
      AttributeMap a;
      if (axes != std::vector<int64_t>{0, 2, 3}) a.set("axes", axes);  // the default
      auto r = run_op("MeanVarianceNormalization", {x}, a, 13);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      const int64_t dims[4] = {N, C, H, W};
      bool red[4] = {false, false, false, false};
      for (int64_t ax : axes) red[ax < 0 ? ax + 4 : ax] = true;
      std::vector<double> want(xv.size());
      for (int64_t e = 0; e < x.numel(); ++e) {
        int64_t ie[4], rem = e;
        for (int d = 3; d >= 0; --d) { ie[d] = rem % dims[d]; rem /= dims[d]; }
        double m = 0, cnt = 0, v = 0;
        for (int64_t f = 0; f < x.numel(); ++f) {  // f in e's group: equal on every kept axis
          int64_t jf[4], rf = f;
          for (int d = 3; d >= 0; --d) { jf[d] = rf % dims[d]; rf /= dims[d]; }
          bool same = true;
          for (int d = 0; d < 4; ++d) same = same && (red[d] || jf[d] == ie[d]);
          if (same) { m += xv[f]; cnt += 1; }
        }
        m /= cnt;
        for (int64_t f = 0; f < x.numel(); ++f) {
          int64_t jf[4], rf = f;
          for (int d = 3; d >= 0; --d) { jf[d] = rf % dims[d]; rf /= dims[d]; }
          bool same = true;
          for (int d = 0; d < 4; ++d) same = same && (red[d] || jf[d] == ie[d]);
          if (same) v += (xv[f] - m) * (xv[f] - m) / cnt;
        }
        want[e] = (xv[e] - m) / (std::sqrt(v) + 1e-9);
      }
      expect_close(r.value()[0], want, std::string("MVN ") + dtype_name(dt), tol);
    }
  }
}

// A window wider than 256 channels takes the kernel's prefix-sum path: the same sums.
TEST(MiscKernels, LrnWideWindow) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const int64_t C = 300, S = 2;
  Tensor x = random_tensor(DataType::kFloat64, {1, C, S}, rng, -2, 2);
  for (int64_t size : {int64_t{257}, int64_t{600}, int64_t{1} << 62}) {
    auto r = run_op("LRN", {x}, attrs_of({{"size", size}, {"alpha", 0.5f}}), 13);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    std::vector<double> want;
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s) {
        double sq = 0;
        for (int64_t k = 0; k < C; ++k)
          if (k >= c - (size - 1) / 2 && k - c <= size / 2) sq += x.get(k * S + s) * x.get(k * S + s);
        want.push_back(x.get(c * S + s) / std::pow(1.0 + double{0.5f} / static_cast<double>(size) * sq, double{0.75f}));
      }
    expect_close(r.value()[0], want, "LRN size " + std::to_string(size), 1e-12);
  }
}

TEST(MiscInfer, NormalizationAttributeErrors) {
  TensorDesc x(DataType::kFloat32, Shape{2, 3, 4, 5});
  TensorDesc c3(DataType::kFloat32, Shape{3});
  auto r = infer("InstanceNormalization", {x, c3, c3}, attrs_of({{"epsilon", -1.0f}}), 13);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "epsilon");
  EXPECT_FALSE(infer("InstanceNormalization", {x, TensorDesc(DataType::kFloat32, Shape{4}), c3}, {}, 13).is_ok());
  EXPECT_FALSE(infer("InstanceNormalization", {x, TensorDesc(DataType::kFloat64, Shape{3}), c3}, {}, 13).is_ok());
  r = infer("LRN", {x}, {}, 13);  // size is required
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "size");
  r = infer("LRN", {x}, attrs_of({{"size", int64_t{0}}}), 13);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "size");
  r = infer("LRN", {x}, attrs_of({{"size", int64_t{3}}, {"beta", std::string("x")}}), 13);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "beta");
  r = infer("LRN", {x}, attrs_of({{"size", int64_t{3}}, {"alpha", NAN}}), 13);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "alpha");
  r = infer("MeanVarianceNormalization", {x}, attrs_of({{"axes", std::vector<int64_t>{0, 4}}}), 13);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "axes");
  r = infer("MeanVarianceNormalization", {x}, attrs_of({{"axes", std::vector<int64_t>{1, -3}}}), 13);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "axes");
  // The default axes [0, 2, 3] need rank 4.
  EXPECT_FALSE(infer("MeanVarianceNormalization", {TensorDesc(DataType::kFloat32, Shape{2, 3, 4})}, {}, 13).is_ok());
}

// ---- EyeLike, BitShift, ReverseSequence ---------------------------------------------------------

TEST(MiscKernels, EyeLikeDtypesAndOffsets) {
  std::mt19937 rng(fresh_seed());
  for (DataType in_dt : {DataType::kFloat32, DataType::kInt32, DataType::kBool})
    for (int64_t k : {-5, -1, 0, 2, 6}) {
      Tensor x = random_tensor(in_dt == DataType::kBool ? DataType::kInt32 : in_dt, {3, 5}, rng, 1, 9);
      if (in_dt == DataType::kBool) x = Tensor::from_doubles(DataType::kBool, {3, 5}, std::vector<double>(15, 1.0));
      for (int with_dtype : {0, 1}) {
        AttributeMap a = attrs_of({{"k", k}});
        if (with_dtype) a.set("dtype", int64_t{11});  // float64
        auto r = run_op("EyeLike", {x}, a, 13);
        ASSERT_TRUE(r.is_ok()) << r.status().to_string();
        EXPECT_EQ(r.value()[0].dtype(), with_dtype ? DataType::kFloat64 : in_dt);
        std::vector<double> want;
        for (int64_t i = 0; i < 3; ++i)
          for (int64_t j = 0; j < 5; ++j) want.push_back(j == i + k ? 1.0 : 0.0);
        expect_close(r.value()[0], want, "EyeLike k " + std::to_string(k), 0);
      }
    }
  auto r = infer("EyeLike", {TensorDesc(DataType::kFloat32, Shape{3, 4})}, attrs_of({{"dtype", int64_t{8}}}), 13);
  ASSERT_FALSE(r.is_ok());  // string: graft lacks it
  EXPECT_EQ(r.status().attribute(), "dtype");
  r = infer("EyeLike", {TensorDesc(DataType::kFloat32, Shape{3, 4})}, attrs_of({{"k", 1.0f}}), 13);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "k");
  EXPECT_FALSE(infer("EyeLike", {TensorDesc(DataType::kFloat32, Shape{3})}, {}, 13).is_ok());
}

// BitwiseNot of the unsigned types, whose ~x depends on the width ((2^bits - 1) - x; the op harness's
// one formula covers the signed types, where ~x is -x - 1 in every width); and the dtype rules of
// all four Bitwise ops: integers only, operands of one dtype.
TEST(MiscKernels, BitwiseNotOfUnsignedAndDtypeRules) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (auto [type, bits] : {std::pair<DataType, int>{DataType::kUInt8, 8}, {DataType::kUInt16, 16},
                            {DataType::kUInt32, 32}, {DataType::kUInt64, 64}}) {
    Tensor x = random_tensor(type, {11}, rng, 0, bits == 64 ? 9e15 : std::ldexp(1.0, bits));
    x.set(0, 0);  // ~0 is the type's largest value
    auto r = run_op("BitwiseNot", {x}, {}, 18);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    ASSERT_EQ(r.value()[0].dtype(), type);
    for (int64_t i = 0; i < x.numel(); ++i) {
      // In the type's own unsigned arithmetic, exactly (uint64's values are above 2^53: read the bits).
      const uint64_t v = type == DataType::kUInt64 ? static_cast<const uint64_t*>(x.data())[i] : static_cast<uint64_t>(x.get(i));
      const uint64_t got = type == DataType::kUInt64 ? static_cast<const uint64_t*>(r.value()[0].data())[i]
                                                     : static_cast<uint64_t>(r.value()[0].get(i));
      const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
      EXPECT_EQ(got, ~v & mask) << dtype_name(type) << " [" << i << "] of " << v;
    }
  }
  TensorDesc i32(DataType::kInt32, Shape{3});
  EXPECT_FALSE(infer("BitwiseAnd", {i32, TensorDesc(DataType::kInt64, Shape{3})}, {}, 18).is_ok());
  EXPECT_FALSE(infer("BitwiseOr", {TensorDesc(DataType::kFloat32, Shape{3}), TensorDesc(DataType::kFloat32, Shape{3})}, {}, 18).is_ok());
  EXPECT_FALSE(infer("BitwiseNot", {TensorDesc(DataType::kBool, Shape{3})}, {}, 18).is_ok());
  auto r = infer("BitwiseXor", {i32, TensorDesc(DataType::kInt32, Shape{2, 1})}, {}, 18);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].to_string(), "int32[2,3]");
}

TEST(MiscKernels, BitShiftBroadcastAndWideShifts) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  Tensor x = random_tensor(DataType::kUInt8, {4, 6}, rng, 1, 256);
  Tensor s = random_tensor(DataType::kUInt8, {6}, rng, 0, 11);  // 8, 9, 10: shifted out entirely
  s.set(0, 9);
  for (const char* dir : {"LEFT", "RIGHT"}) {
    auto r = run_op("BitShift", {x, s}, attrs_of({{"direction", std::string(dir)}}), 11);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    std::vector<double> want;
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 6; ++j) {
        const uint64_t v = static_cast<uint64_t>(x.get(i * 6 + j)), by = static_cast<uint64_t>(s.get(j));
        want.push_back(static_cast<double>((std::string(dir) == "LEFT" ? (v << by) : (v >> by)) & 0xff));
      }
    expect_close(r.value()[0], want, std::string("BitShift ") + dir, 0);
  }
  TensorDesc u8(DataType::kUInt8, Shape{3});
  auto r = infer("BitShift", {u8, u8}, {}, 11);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "direction");
  r = infer("BitShift", {u8, u8}, attrs_of({{"direction", std::string("left")}}), 11);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "direction");
  EXPECT_FALSE(infer("BitShift", {u8, TensorDesc(DataType::kInt8, Shape{3})}, attrs_of({{"direction", std::string("LEFT")}}), 11).is_ok());
}

TEST(MiscKernels, ReverseSequenceBothLayoutsWithInnerDims) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (int64_t batch_axis : {0, 1}) {
    const int64_t T = 5, B = 3, E = 2;
    const int64_t d0 = batch_axis == 0 ? B : T, d1 = batch_axis == 0 ? T : B;
    Tensor x = random_tensor(DataType::kFloat32, {d0, d1, E}, rng, -4, 4);
    Tensor lens = Tensor::from_doubles(DataType::kInt64, {B}, {5, 0, 3});
    auto r = run_op("ReverseSequence", {x, lens},
                    attrs_of({{"batch_axis", batch_axis}, {"time_axis", int64_t{1 - batch_axis}}}), 13);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    std::vector<double> want(static_cast<size_t>(x.numel()));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t e = 0; e < E; ++e) {
          const int64_t len = static_cast<int64_t>(lens.get(b));
          const int64_t st = t < len ? len - 1 - t : t;
          auto at = [&](int64_t tt) { return batch_axis == 0 ? (b * T + tt) * E + e : (tt * B + b) * E + e; };
          want[at(t)] = x.get(at(st));
        }
    expect_close(r.value()[0], want, "ReverseSequence batch_axis " + std::to_string(batch_axis), 0);
    Tensor too_long = Tensor::from_doubles(DataType::kInt64, {B}, {6, 1, 1});
    r = run_op("ReverseSequence", {x, too_long}, attrs_of({{"batch_axis", batch_axis}, {"time_axis", int64_t{1 - batch_axis}}}), 13);
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find("sequence_lens[0]"), std::string::npos) << r.status().to_string();
  }
  TensorDesc x(DataType::kFloat32, Shape{4, 3});
  TensorDesc l(DataType::kInt64, Shape{3});
  auto r = infer("ReverseSequence", {x, l}, attrs_of({{"batch_axis", int64_t{0}}, {"time_axis", int64_t{0}}}), 13);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "time_axis");
  r = infer("ReverseSequence", {x, l}, attrs_of({{"batch_axis", int64_t{2}}}), 13);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "batch_axis");
  EXPECT_FALSE(infer("ReverseSequence", {x, TensorDesc(DataType::kInt64, Shape{4})}, {}, 13).is_ok());  // batch is axis 1
  EXPECT_TRUE(infer("ReverseSequence", {x, l}, {}, 13).is_ok());
}

// ---- windows, Det -------------------------------------------------------------------------------

TEST(MiscKernels, WindowsAgainstFormulas) {
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    for (int64_t periodic : {0, 1})
      for (int64_t n : {1, 2, 7, 16}) {
        const double pi = std::acos(-1.0);
        auto r = run_op(op, {Tensor::from_doubles(DataType::kInt64, {}, {static_cast<double>(n)})},
                        attrs_of({{"periodic", periodic}, {"output_datatype", int64_t{11}}}), 17);
        ASSERT_TRUE(r.is_ok()) << r.status().to_string();
        ASSERT_EQ(r.value()[0].dtype(), DataType::kFloat64);
        std::vector<double> want;
        const double den = periodic ? n : n - 1;
        for (int64_t i = 0; i < n; ++i) {
          const double a = den == 0 ? 0 : 2 * pi * i / den;
          const std::string o = op;
          want.push_back(o == "HannWindow" ? std::pow(std::sin(a / 2), 2)
                         : o == "HammingWindow" ? 0.54347826086956519 - 0.45652173913043481 * std::cos(a)
                                                : 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a));
        }
        if (n == 1 && !periodic) want = {1.0};  // symmetric, one sample: 0/0 in the formula
        expect_close(r.value()[0], want, std::string(op) + " n " + std::to_string(n) + " periodic " + std::to_string(periodic), 1e-12);
      }
  TensorDesc sz(DataType::kInt64, Shape{});
  auto r = infer("HannWindow", {sz}, attrs_of({{"output_datatype", int64_t{9}}}), 17);  // bool
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "output_datatype");
  r = infer("HammingWindow", {sz}, attrs_of({{"periodic", int64_t{2}}}), 17);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "periodic");
  // A size beyond the limit is refused before anything is allocated.
  auto big = run_op("BlackmanWindow", {Tensor::from_doubles(DataType::kInt64, {}, {1e15})}, {}, 17);
  ASSERT_FALSE(big.is_ok());
  auto neg = run_op("BlackmanWindow", {Tensor::from_doubles(DataType::kInt32, {}, {-3})}, {}, 17);
  ASSERT_FALSE(neg.is_ok());
}

TEST(MiscKernels, DetAgainstCofactorExpansion) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  // Laplace expansion along the first row: independent of the kernel's elimination.
  std::function<double(const std::vector<double>&, int64_t)> cof = [&](const std::vector<double>& m, int64_t n) -> double {
    if (n == 0) return 1.0;
    double d = 0;
    for (int64_t j = 0; j < n; ++j) {
      std::vector<double> sub;
      for (int64_t r = 1; r < n; ++r)
        for (int64_t c = 0; c < n; ++c)
          if (c != j) sub.push_back(m[r * n + c]);
      d += (j % 2 ? -1.0 : 1.0) * m[j] * cof(sub, n - 1);
    }
    return d;
  };
  for (DataType dt : {DataType::kFloat32, DataType::kFloat64})
    for (int64_t m : {1, 2, 3, 4, 5}) {
      Tensor x = random_tensor(dt, {2, 3, m, m}, rng, -2, 2);
      if (m >= 2) {  // a singular matrix: two equal rows
        for (int64_t c = 0; c < m; ++c) x.set(m + c, x.get(c));
      }
      auto r = run_op("Det", {x}, {}, 13);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      ASSERT_EQ(r.value()[0].dims(), (std::vector<int64_t>{2, 3}));
      std::vector<double> want;
      for (int64_t b = 0; b < 6; ++b) {
        std::vector<double> mat;
        for (int64_t i = 0; i < m * m; ++i) mat.push_back(x.get(b * m * m + i));
        want.push_back(cof(mat, m));
      }
      expect_close(r.value()[0], want, std::string("Det ") + dtype_name(dt) + " m " + std::to_string(m),
                   dt == DataType::kFloat32 ? 1e-5 : 1e-11);
    }
  EXPECT_FALSE(infer("Det", {TensorDesc(DataType::kFloat32, Shape{2, 3, 4})}, {}, 13).is_ok());
  EXPECT_FALSE(infer("Det", {TensorDesc(DataType::kInt32, Shape{3, 3})}, {}, 13).is_ok());
}

// ---- quantization ---------------------------------------------------------------------------------

// Independent round-half-even.
double round_even(double v) {
  const double f = std::floor(v), d = v - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return std::fmod(f, 2.0) == 0 ? f : f + 1;
}

TEST(QuantizeKernels, QuantizeDequantizePerTensorAndPerAxis) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<int64_t> dims{2, 3, 4};
  for (DataType qt : {DataType::kUInt8, DataType::kInt8})
    for (int64_t axis : {-100, 0, 1, -1}) {  // -100: per-tensor
      const bool per_axis = axis != -100;
      const int64_t a = axis < 0 && per_axis ? axis + 3 : axis;
      const int64_t ch = per_axis ? dims[a] : 1;
      std::vector<int64_t> sdims = per_axis ? std::vector<int64_t>{ch} : std::vector<int64_t>{};
      Tensor x = random_tensor(DataType::kFloat32, dims, rng, -300, 300);
      x.set(0, 2.5f * 0.5f);  // ties: 2.5 after division by 0.5 in channel 0 rounds to 2
      Tensor scale = random_tensor(DataType::kFloat32, sdims, rng, 0.5, 2);
      scale.set(0, 0.5);
      Tensor zp = random_tensor(qt, sdims, rng, qt == DataType::kUInt8 ? 1 : -20, qt == DataType::kUInt8 ? 200 : 20);
      AttributeMap at;
      if (per_axis) at.set("axis", axis);
      auto r = run_op("QuantizeLinear", {x, scale, zp}, at, 13);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      ASSERT_EQ(r.value()[0].dtype(), qt);
      const double lo = qt == DataType::kUInt8 ? 0 : -128, hi = qt == DataType::kUInt8 ? 255 : 127;
      int64_t inner = 1;
      if (per_axis)
        for (size_t d = a + 1; d < 3; ++d) inner *= dims[d];
      std::vector<double> wq, wd;
      for (int64_t i = 0; i < x.numel(); ++i) {
        const int64_t c = per_axis ? (i / inner) % ch : 0;
        const double q = std::min(hi, std::max(lo, round_even(static_cast<float>(x.get(i)) / static_cast<float>(scale.get(c))) + zp.get(c)));
        wq.push_back(q);
        wd.push_back((q - zp.get(c)) * scale.get(c));
      }
      const std::string what = std::string(dtype_name(qt)) + " axis " + std::to_string(axis);
      expect_close(r.value()[0], wq, "QuantizeLinear " + what, 0);
      auto d = run_op("DequantizeLinear", {r.value()[0], scale, zp}, at, 13);
      ASSERT_TRUE(d.is_ok()) << d.status().to_string();
      expect_close(d.value()[0], wd, "DequantizeLinear " + what);
    }
  // No zero point: uint8, zero point 0; DequantizeLinear of int32 with a float16 scale (opset 19).
  std::mt19937 rng2(seed + 1);
  Tensor x = random_tensor(DataType::kFloat32, {7}, rng2, -50, 400);
  auto r = run_op("QuantizeLinear", {x, Tensor::from_doubles(DataType::kFloat32, {}, {2.0})}, {}, 13);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].dtype(), DataType::kUInt8);
  std::vector<double> want;
  for (int64_t i = 0; i < 7; ++i) want.push_back(std::min(255.0, std::max(0.0, round_even(static_cast<float>(x.get(i)) / 2.0f))));
  expect_close(r.value()[0], want, "QuantizeLinear without zero point", 0);
  Tensor xi = random_tensor(DataType::kInt32, {5}, rng2, -1000, 1000);
  auto d = run_op("DequantizeLinear", {xi, Tensor::from_doubles(DataType::kFloat16, {}, {0.25})}, {}, 19);
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  EXPECT_EQ(d.value()[0].dtype(), DataType::kFloat16);
  want.clear();
  for (int64_t i = 0; i < 5; ++i) want.push_back(xi.get(i) * 0.25);
  expect_close(d.value()[0], want, "DequantizeLinear int32 float16 scale");
}

// Opset 19's 8-bit float outputs: x / scale converted as Cast converts (round to nearest even;
// saturate=1, the default, clamps to the largest finite, saturate=0 overflows to NaN or infinity);
// back through DequantizeLinear exactly. Their zero point must be zero: another one is refused,
// naming the input, both ways.
TEST(QuantizeKernels, Float8QuantizeLinearSaturatesAndRefusesNonzeroZeroPoints) {
  const Tensor x = Tensor::from_doubles(DataType::kFloat32, {6}, {0.3, -1e5, 1e5, 17.0, -0.0013, 9.0});
  const Tensor scale = Tensor::from_doubles(DataType::kFloat32, {}, {0.5});
  // x / scale = 0.6, -2e5, 2e5, 34, -0.0026, 18, each worked out by hand from the type's spacing:
  // - 0.6 lies between 0.5625 and 0.625 (e4m3fn) or 0.5 and 0.625 (e5m2): 0.625 is nearer;
  // - +-2e5 passes both types' largest finite (448, 57344);
  // - 34 is halfway between 32 and 36 (e4m3fn) and nearer 32 than 40 (e5m2): 32, whose mantissa is even;
  // - -0.0026: e4m3fn's subnormal step is 2^-9 (0.00195), e5m2's step there is 2^-11 (0.00244 is nearest);
  // - 18 is exact in e4m3fn, and halfway between 16 and 20 in e5m2: 16, the even one.
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  struct Want {
    DataType type;
    int64_t saturate;
    std::vector<double> values;
  };
  for (const Want& w : {Want{DataType::kFloat8E4M3FN, 1, {0.625, -448, 448, 32, -0.001953125, 18}},
                        Want{DataType::kFloat8E4M3FN, 0, {0.625, -nan, nan, 32, -0.001953125, 18}},
                        Want{DataType::kFloat8E5M2, 1, {0.625, -57344, 57344, 32, -0.00244140625, 16}},
                        Want{DataType::kFloat8E5M2, 0, {0.625, -inf, inf, 32, -0.00244140625, 16}}}) {
    const std::string what = std::string(dtype_name(w.type)) + " saturate " + std::to_string(w.saturate);
    Tensor zp = Tensor::empty(w.type, {});
    zp.set(0, 0.0);
    AttributeMap at;
    at.set("saturate", w.saturate);
    auto r = run_op("QuantizeLinear", {x, scale, zp}, at, 19);
    ASSERT_TRUE(r.is_ok()) << what << ": " << r.status().to_string();
    ASSERT_EQ(r.value()[0].dtype(), w.type) << what;
    expect_close(r.value()[0], w.values, "QuantizeLinear " + what, 0);
    auto d = run_op("DequantizeLinear", {r.value()[0], scale, zp}, {}, 19);
    ASSERT_TRUE(d.is_ok()) << what << ": " << d.status().to_string();
    std::vector<double> back;
    for (double v : w.values) back.push_back(v * 0.5);
    expect_close(d.value()[0], back, "DequantizeLinear " + what, 0);
  }
  // A nonzero 8-bit float zero point, known at build time, is refused by inference naming it.
  Tensor one = Tensor::empty(DataType::kFloat8E4M3FN, {});
  one.set(0, 1.0);
  auto q = run_op("QuantizeLinear", {x, scale, one}, {}, 19);
  ASSERT_FALSE(q.is_ok());
  EXPECT_TRUE(graft::testing::contains(q.status().message(), "y_zero_point")) << q.status().to_string();
  Tensor x8 = Tensor::empty(DataType::kFloat8E4M3FN, {2});
  x8.set(0, 3.0);
  x8.set(1, -5.0);
  auto d = run_op("DequantizeLinear", {x8, scale, one}, {}, 19);
  ASSERT_FALSE(d.is_ok());
  EXPECT_TRUE(graft::testing::contains(d.status().message(), "x_zero_point")) << d.status().to_string();
}

TEST(QuantizeKernels, DynamicQuantizeLinearAgainstFormula) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (auto [lo, hi] : {std::pair<double, double>{-3, 5}, {0.5, 4}, {-6, -1}}) {
    Tensor x = random_tensor(DataType::kFloat32, {3, 5}, rng, lo, hi);
    auto r = run_op("DynamicQuantizeLinear", {x}, {}, 11, 3);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    float mn = 0, mx = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      mn = std::min(mn, static_cast<float>(x.get(i)));
      mx = std::max(mx, static_cast<float>(x.get(i)));
    }
    const float scale = (mx - mn) / 255.0f;
    const double zp = std::min(255.0, std::max(0.0, round_even(-mn / scale)));
    expect_close(r.value()[1], {scale}, "scale", 0);
    expect_close(r.value()[2], {zp}, "zero point", 0);
    std::vector<double> want;
    for (int64_t i = 0; i < x.numel(); ++i)
      want.push_back(std::min(255.0, std::max(0.0, round_even(static_cast<float>(x.get(i)) / scale) + zp)));
    expect_close(r.value()[0], want, "y", 0);
  }
  // All zeros: scale 0, zero point 0, zeros; no division by zero.
  Tensor z = Tensor::from_doubles(DataType::kFloat32, {4}, {0, 0, 0, 0});
  auto r = run_op("DynamicQuantizeLinear", {z}, {}, 11, 3);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  expect_close(r.value()[0], {0, 0, 0, 0}, "zeros", 0);
  expect_close(r.value()[1], {0}, "zeros scale", 0);
}

TEST(QuantizeInfer, LayoutAndAttributeErrors) {
  TensorDesc x(DataType::kFloat32, Shape{2, 3, 4});
  TensorDesc s3(DataType::kFloat32, Shape{3});
  TensorDesc z3(DataType::kInt8, Shape{3});
  auto r = infer("QuantizeLinear", {x, s3, z3}, {}, 13);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].to_string(), "int8[2,3,4]");
  r = infer("QuantizeLinear", {x, s3, z3}, attrs_of({{"axis", int64_t{2}}}), 13);  // axis 2 has 4 entries
  EXPECT_FALSE(r.is_ok());
  r = infer("QuantizeLinear", {x, s3, z3}, attrs_of({{"axis", int64_t{3}}}), 13);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "axis");
  r = infer("QuantizeLinear", {x, s3, z3}, attrs_of({{"axis", std::string("1")}}), 13);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "axis");
  r = infer("QuantizeLinear", {x, s3, z3}, attrs_of({{"block_size", int64_t{2}}}), 21);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "block_size");
  r = infer("QuantizeLinear", {x, s3}, attrs_of({{"output_dtype", int64_t{3}}}), 21);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].to_string(), "int8[2,3,4]");
  r = infer("QuantizeLinear", {x, s3}, attrs_of({{"output_dtype", int64_t{4}}}), 21);  // uint16
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].to_string(), "uint16[2,3,4]");
  r = infer("QuantizeLinear", {x, s3}, attrs_of({{"output_dtype", int64_t{1}}}), 21);  // float32: not a quantized type
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "output_dtype");
  r = infer("QuantizeLinear", {x, s3, TensorDesc(DataType::kUInt8, Shape{3})}, attrs_of({{"output_dtype", int64_t{3}}}), 21);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "output_dtype");
  EXPECT_FALSE(infer("QuantizeLinear", {x, s3, TensorDesc(DataType::kInt8, Shape{})}, {}, 13).is_ok());
  EXPECT_FALSE(infer("QuantizeLinear", {x, TensorDesc(DataType::kFloat32, Shape{3, 1})}, {}, 13).is_ok());
  EXPECT_FALSE(infer("QuantizeLinear", {x, TensorDesc(DataType::kInt32, Shape{})}, {}, 13).is_ok());
  r = infer("DequantizeLinear", {TensorDesc(DataType::kInt8, Shape{2, 3}), s3, z3}, {}, 13);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].to_string(), "float32[2,3]");
  EXPECT_FALSE(infer("DequantizeLinear", {TensorDesc(DataType::kInt8, Shape{2, 3}), s3, TensorDesc(DataType::kUInt8, Shape{3})}, {}, 13).is_ok());
  EXPECT_FALSE(infer("DequantizeLinear", {x, s3}, {}, 13).is_ok());
  EXPECT_FALSE(infer("DynamicQuantizeLinear", {x}, {}, 11, 1).is_ok());
}
