// Core types: Status context, dtypes and half conversion, symbolic dims, tensors, attributes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "graft/attribute.h"
#include "graft/dim.h"
#include "graft/dtype.h"
#include "graft/status.h"
#include "graft/tensor.h"
#include "ops/operator.h"

using namespace graft;

TEST(Status, CarriesContextInOneLine) {
  Status st = error(StatusCode::kInvalidModel, "bad value ", 3);
  st.with_attribute("beta").with_node("n1", "CustomLayer").with_file("m.onnx");
  EXPECT_FALSE(st.is_ok());
  EXPECT_EQ(st.to_string(), "m.onnx: node 'n1' (CustomLayer): attribute 'beta': bad value 3");
  // Innermost context wins.
  st.with_node("outer", "X");
  EXPECT_EQ(st.node_name(), "n1");
}

TEST(Status, ResultPropagates) {
  auto f = [](bool ok) -> Result<int> {
    if (!ok) return error(StatusCode::kNotFound, "nope");
    return 42;
  };
  auto g = [&](bool ok) -> Status {
    GRAFT_ASSIGN_OR_RETURN(int v, f(ok));
    EXPECT_EQ(v, 42);
    return Status::ok();
  };
  EXPECT_TRUE(g(true).is_ok());
  EXPECT_EQ(g(false).code(), StatusCode::kNotFound);
}

TEST(DType, SizesAndNames) {
  EXPECT_EQ(dtype_size(DataType::kFloat16), 2u);
  EXPECT_EQ(dtype_size(DataType::kInt64), 8u);
  DataType t;
  ASSERT_TRUE(dtype_from_name("fp16", &t));
  EXPECT_EQ(t, DataType::kFloat16);
  EXPECT_FALSE(dtype_from_onnx(14, &t));  // complex64: not supported
  ASSERT_TRUE(dtype_from_onnx(16, &t));
  EXPECT_EQ(t, DataType::kBFloat16);
}

TEST(DType, HalfRoundTripsEveryFiniteValue) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    uint16_t h = static_cast<uint16_t>(b);
    float f = half_to_float(h);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(half_to_float(float_to_half(f))));
      continue;
    }
    EXPECT_EQ(float_to_half(f), h) << "bits " << b;
  }
}

// Tensor::cast between float32 and float16 (the FP16 pass's weight conversion, vectorized with the
// CPU's conversion instructions where available) agrees bit for bit with the scalar float_to_half /
// half_to_float on every float16 pattern, ties, overflow, subnormals and random values; NaN stays NaN.
TEST(DType, TensorCastMatchesScalarConversion) {
  std::vector<float> vals = {0.f, -0.f, 1.f, -1.f, 65504.f, 65519.99f, 65520.f, -65520.f, 1e-8f, -3e-8f, 5.96e-8f,
                             6.1e-5f, 1.0009765625f + 0.00048828125f, 1.f + 0.00048828125f, 3.14159f, 1e30f, -1e30f,
                             INFINITY, -INFINITY, NAN};
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> u(-70000.f, 70000.f), small(-1e-4f, 1e-4f);
  for (int i = 0; i < 5000; ++i) vals.push_back(i % 2 ? u(rng) : small(rng));
  for (uint32_t b = 0; b < 65536; b += 7) vals.push_back(half_to_float(static_cast<uint16_t>(b)));
  Tensor f = Tensor::empty(DataType::kFloat32, {static_cast<int64_t>(vals.size())});
  std::memcpy(f.data(), vals.data(), vals.size() * sizeof(float));
  auto h = f.cast(DataType::kFloat16);
  ASSERT_TRUE(h.is_ok());
  for (size_t i = 0; i < vals.size(); ++i) {
    const uint16_t got = h->data_as<uint16_t>()[i], want = float_to_half(vals[i]);
    if (std::isnan(vals[i])) {
      EXPECT_TRUE(std::isnan(half_to_float(got))) << "element " << i;
    } else {
      ASSERT_EQ(got, want) << "element " << i << " value " << vals[i];
    }
  }
  Tensor all = Tensor::empty(DataType::kFloat16, {65536});
  for (uint32_t b = 0; b < 65536; ++b) all.data_as<uint16_t>()[b] = static_cast<uint16_t>(b);
  auto back = all.cast(DataType::kFloat32);
  ASSERT_TRUE(back.is_ok());
  for (uint32_t b = 0; b < 65536; ++b) {
    const float got = back->data_as<float>()[b], want = half_to_float(static_cast<uint16_t>(b));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << "pattern " << b;
    } else {
      ASSERT_EQ(std::memcmp(&got, &want, 4), 0) << "pattern " << b;
    }
  }
}

TEST(DType, HalfRoundsToNearest) {
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-70000.f, 70000.f);
  for (int i = 0; i < 10000; ++i) {
    float x = dist(rng);
    float h = half_to_float(float_to_half(x));
    if (std::fabs(x) >= 65520.f) {
      EXPECT_TRUE(std::isinf(h));
    } else {
      EXPECT_LE(std::fabs(h - x), std::fabs(x) * (1.0f / 2048.f) + 1e-7f) << x;
    }
  }
  EXPECT_EQ(half_to_float(float_to_half(1e-8f)), 0.0f);
  EXPECT_NEAR(half_to_float(float_to_half(3e-6f)), 3e-6f, 6e-8f);  // subnormal
  EXPECT_EQ(bfloat16_to_float(float_to_bfloat16(1.0f)), 1.0f);
}

TEST(Dim, FoldsAndSimplifies) {
  Dim b = Dim::symbol("batch");
  EXPECT_TRUE((Dim(3) * Dim(4)).is_const());
  EXPECT_EQ((Dim(3) * Dim(4)).value(), 12);
  EXPECT_TRUE((b * 1).same_as(b));
  EXPECT_TRUE((b + 0).same_as(b));
  EXPECT_TRUE(((b * 3) * 4).same_as(b * 12));
  EXPECT_TRUE(floor_div(b * 6, Dim(6)).same_as(b));
  EXPECT_TRUE((Dim(3) * b).same_as(b * 3));  // commutative canonical form
  EXPECT_EQ(floor_div(Dim(-7), Dim(2)).value(), -4);
  EXPECT_EQ(ceil_div(Dim(7), Dim(2)).value(), 4);
  EXPECT_EQ(dim_lt(Dim(2), Dim(5)).value(), 1);
}

TEST(Dim, EvaluatesWithBindings) {
  Dim b = Dim::symbol("batch"), s = Dim::symbol("seq");
  Dim e = ceil_div(b * s + 3, Dim(2));
  EXPECT_EQ(*e.evaluate({{"batch", 2}, {"seq", 5}}), 7);
  EXPECT_FALSE(e.evaluate({{"batch", 2}}).has_value());
  std::vector<std::string> syms;
  e.collect_symbols(syms);
  EXPECT_EQ(syms.size(), 2u);
  EXPECT_FALSE(floor_div(b, Dim(0)).evaluate({{"batch", 1}}).has_value());
}

TEST(Dim, BroadcastSymbolic) {
  Dim b = Dim::symbol("batch");
  auto r = broadcast_shapes({b, 1, 4}, {3, 1});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(shape_to_string(*r), "[batch,3,4]");
  auto bad = broadcast_shapes({3, 4}, {5, 6});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("[3,4]"), std::string::npos);
}

TEST(Tensor, PoisonMakesFloatsNaN) {
  Tensor t = Tensor::empty(DataType::kFloat32, {2, 3});
  t.poison();
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(std::isnan(t.get(i)));
  Tensor h = Tensor::empty(DataType::kFloat16, {4});
  h.poison();
  EXPECT_TRUE(std::isnan(h.get(0)));
}

TEST(Tensor, CastAndClone) {
  Tensor t = Tensor::from_doubles(DataType::kFloat32, {3}, {1.5, -2.25, 3});
  auto i = t.cast(DataType::kInt64);
  ASSERT_TRUE(i.is_ok());
  EXPECT_EQ(i->to_int64_vector(), (std::vector<int64_t>{1, -2, 3}));
  Tensor c = t.clone();
  c.set(0, 9);
  EXPECT_EQ(t.get(0), 1.5);
}

// The float32 <-> float16 fast paths agree with the generic per-element conversion, including
// rounding, subnormals, overflow to inf and NaN.
TEST(Tensor, HalfCastFastPathsMatchGenericConversion) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<double> mag(-20.0, 20.0);
  std::vector<double> v{0.0, -0.0, 1e-8, 6e-5, 65504.0, 70000.0, -1e6, std::nan(""), 1.0 / 3.0};
  for (int i = 0; i < 500; ++i) v.push_back(std::ldexp(mag(rng) > 0 ? 1.0 : -1.0, static_cast<int>(mag(rng))) * (1 + mag(rng) / 40));
  Tensor f = Tensor::from_doubles(DataType::kFloat32, {static_cast<int64_t>(v.size())}, v);
  auto h = f.cast(DataType::kFloat16);
  ASSERT_TRUE(h.is_ok());
  Tensor generic = Tensor::empty(DataType::kFloat16, f.dims());
  for (int64_t i = 0; i < f.numel(); ++i) generic.set(i, f.get(i));
  ASSERT_EQ(std::memcmp(h->data(), generic.data(), generic.nbytes()), 0);
  auto back = h->cast(DataType::kFloat32);
  ASSERT_TRUE(back.is_ok());
  for (int64_t i = 0; i < f.numel(); ++i) {
    if (std::isnan(generic.get(i))) EXPECT_TRUE(std::isnan(back->get(i)));
    else EXPECT_EQ(back->get(i), generic.get(i)) << i;
  }
}

TEST(Attributes, TypedGettersNameTheAttribute) {
  AttributeMap m;
  m.set("alpha", 0.5f);
  m.set("axes", std::vector<int64_t>{1, 2});
  EXPECT_EQ(*m.get_float("alpha", 1.f), 0.5f);
  EXPECT_EQ(*m.get_int("missing", 7), 7);
  auto wrong = m.get_int("alpha", 0);
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_EQ(wrong.status().attribute(), "alpha");
  EXPECT_NE(wrong.status().message().find("expected type int, got float"), std::string::npos);
  EXPECT_FALSE(m.require_int("k").is_ok());
}
