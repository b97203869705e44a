// int16, uint16, uint32, uint64 (and int4/uint4, at the end) end to end on the CPU engine: the
// dtype table, .npy and .pb files, plans, Cast's wrap/saturation rules, integer arithmetic against loops in the type itself,
// and the errors for the ONNX types graft still lacks.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "core/float8.h"
#include "graft/engine.h"
#include "io/tensor_io.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/op_test_util.h"

namespace graft {
namespace {

using testing::run_op;

constexpr DataType kNewTypes[] = {DataType::kInt16, DataType::kUInt16, DataType::kUInt32, DataType::kUInt64};

template <typename T>
Tensor tensor_of(std::vector<int64_t> dims, const std::vector<T>& v) {
  Tensor t = Tensor::empty(dtype_of<T>::value, std::move(dims));
  EXPECT_EQ(static_cast<size_t>(t.numel()), v.size());
  if (!v.empty()) std::memcpy(t.data(), v.data(), v.size() * sizeof(T));
  return t;
}

template <typename T>
std::vector<T> elements(const Tensor& t) {
  EXPECT_EQ(t.dtype(), dtype_of<T>::value);
  const T* p = t.data_as<T>();
  return std::vector<T>(p, p + t.numel());
}

// Random values over the type's whole range (the extremes included), as raw bits.
template <typename T>
std::vector<T> random_values(size_t n, std::mt19937_64& rng) {
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(rng());
  if (n >= 2) {
    v[0] = std::numeric_limits<T>::max();
    v[1] = std::numeric_limits<T>::lowest();
  }
  return v;
}

template <typename Fn>
void for_each_new_type(Fn fn) {
  fn(int16_t{});
  fn(uint16_t{});
  fn(uint32_t{});
  fn(uint64_t{});
}

TEST(Dtypes, Table) {
  struct Row {
    DataType t;
    int32_t onnx;
    size_t size;
    const char* name;
  };
  const Row rows[] = {{DataType::kUInt16, 4, 2, "uint16"},
                      {DataType::kInt16, 5, 2, "int16"},
                      {DataType::kUInt32, 12, 4, "uint32"},
                      {DataType::kUInt64, 13, 8, "uint64"}};
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(static_cast<int32_t>(r.t), r.onnx);
    EXPECT_EQ(dtype_size(r.t), r.size);
    EXPECT_STREQ(dtype_name(r.t), r.name);
    DataType got = DataType::kUndefined;
    ASSERT_TRUE(dtype_from_name(r.name, &got));
    EXPECT_EQ(got, r.t);
    got = DataType::kUndefined;
    ASSERT_TRUE(dtype_from_onnx(r.onnx, &got));
    EXPECT_EQ(got, r.t);
    EXPECT_TRUE(dtype_is_integer(r.t));
    EXPECT_FALSE(dtype_is_float(r.t));
  }
  EXPECT_FALSE(dtype_is_integer(DataType::kBool));
  // Still missing: complex (14, 15) and opset 23's float4 (23); uint4/int4 (21, 22) are FourBit*
  // below, the 8-bit floats (17 to 20) Float8*. String (8) is a dtype of the file formats and the
  // CPU engine, but no op's dtype attribute may name it.
  for (int32_t missing : {0, 14, 15, 23, 99}) {
    DataType t = DataType::kUndefined;
    EXPECT_FALSE(dtype_from_onnx(missing, &t)) << missing;
  }
  DataType s = DataType::kUndefined;
  EXPECT_TRUE(dtype_from_onnx(8, &s));
  EXPECT_EQ(s, DataType::kString);
  EXPECT_FALSE(dtype_from_onnx_numeric(8, &s));
}

TEST(Dtypes, DoubleAndInt64Accessors) {
  Tensor u = tensor_of<uint64_t>({3}, {std::numeric_limits<uint64_t>::max(), uint64_t{1} << 63, 5});
  EXPECT_EQ(load_as_int64(DataType::kUInt64, u.data(), 0), -1);  // the bit pattern
  EXPECT_DOUBLE_EQ(u.get(0), 18446744073709551615.0);
  EXPECT_DOUBLE_EQ(u.get(1), 9223372036854775808.0);
  // Doubles at and beyond 2^64 saturate; a negative one wraps as for the other integer types.
  u.set(0, 1e30);
  u.set(1, -1.0);
  u.set(2, std::nan(""));
  EXPECT_EQ(elements<uint64_t>(u), (std::vector<uint64_t>{std::numeric_limits<uint64_t>::max(),
                                                          std::numeric_limits<uint64_t>::max(), 0}));
  Tensor s = Tensor::empty(DataType::kInt16, {2});
  store_from_int64(DataType::kInt16, s.data(), 0, 40000);  // keeps the low 16 bits
  s.set(1, -32769.0);
  EXPECT_EQ(elements<int16_t>(s), (std::vector<int16_t>{-25536, 32767}));
}

TEST(Dtypes, NpyRoundTrip) {
  std::mt19937_64 rng(7);
  for_each_new_type([&](auto zero) {
    using T = decltype(zero);
    SCOPED_TRACE(dtype_name(dtype_of<T>::value));
    Tensor t = tensor_of<T>({2, 3, 5}, random_values<T>(30, rng));
    auto bytes = io::encode_npy(t);
    ASSERT_TRUE(bytes.is_ok()) << bytes.status().to_string();
    const char* descr = std::is_same_v<T, int16_t>    ? "'<i2'"
                        : std::is_same_v<T, uint16_t> ? "'<u2'"
                        : std::is_same_v<T, uint32_t> ? "'<u4'"
                                                      : "'<u8'";
    EXPECT_NE(bytes.value().find(descr), std::string::npos) << bytes.value().substr(0, 80);
    auto back = io::parse_npy(bytes.value(), "t.npy");
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    EXPECT_EQ(back.value().dims(), t.dims());
    EXPECT_EQ(elements<T>(back.value()), elements<T>(t));
  });
}

TEST(Dtypes, NpyStillUnsupported) {
  // A complex64 array: the error names the descr and what graft reads.
  Tensor t = tensor_of<uint32_t>({2}, {1, 2});
  std::string bytes = io::encode_npy(t).value();
  size_t at = bytes.find("'<u4'");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 5, "'<c8'");
  auto r = io::parse_npy(bytes, "c.npy");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("<c8"), std::string::npos) << r.status().to_string();
  EXPECT_NE(r.status().message().find("u8"), std::string::npos) << r.status().to_string();
}

TEST(Dtypes, PbRoundTripRawData) {
  std::mt19937_64 rng(11);
  for_each_new_type([&](auto zero) {
    using T = decltype(zero);
    SCOPED_TRACE(dtype_name(dtype_of<T>::value));
    Tensor t = tensor_of<T>({4, 3}, random_values<T>(12, rng));
    auto bytes = io::encode_tensor_pb(t, "x");
    ASSERT_TRUE(bytes.is_ok()) << bytes.status().to_string();
    onnx::TensorProto p;
    ASSERT_TRUE(p.ParseFromString(bytes.value()));
    EXPECT_EQ(p.data_type(), static_cast<int32_t>(dtype_of<T>::value));
    auto back = io::parse_tensor_pb(bytes.value(), "x.pb");
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    EXPECT_EQ(back.value().name, "x");
    EXPECT_EQ(elements<T>(back.value().tensor), elements<T>(t));
  });
}

// onnx.proto: int16/uint16 in int32_data, uint32/uint64 in uint64_data.
TEST(Dtypes, PbTypedFields) {
  onnx::TensorProto p;
  p.set_name("a");
  p.add_dims(3);
  p.set_data_type(onnx::TensorProto::INT16);
  for (int v : {-32768, -1, 32767}) p.add_int32_data(v);
  auto a = io::parse_tensor_pb(p.SerializeAsString(), "a.pb");
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(elements<int16_t>(a.value().tensor), (std::vector<int16_t>{-32768, -1, 32767}));

  p.set_data_type(onnx::TensorProto::UINT16);
  p.clear_int32_data();
  for (int v : {0, 1, 65535}) p.add_int32_data(v);
  auto b = io::parse_tensor_pb(p.SerializeAsString(), "b.pb");
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  EXPECT_EQ(elements<uint16_t>(b.value().tensor), (std::vector<uint16_t>{0, 1, 65535}));

  p.clear_int32_data();
  p.set_data_type(onnx::TensorProto::UINT32);
  for (uint64_t v : {uint64_t{0}, uint64_t{7}, uint64_t{4294967295u}}) p.add_uint64_data(v);
  auto c = io::parse_tensor_pb(p.SerializeAsString(), "c.pb");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(elements<uint32_t>(c.value().tensor), (std::vector<uint32_t>{0, 7, 4294967295u}));

  p.set_data_type(onnx::TensorProto::UINT64);
  p.set_uint64_data(2, std::numeric_limits<uint64_t>::max());
  auto d = io::parse_tensor_pb(p.SerializeAsString(), "d.pb");
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  EXPECT_EQ(elements<uint64_t>(d.value().tensor), (std::vector<uint64_t>{0, 7, std::numeric_limits<uint64_t>::max()}));

  // The count is checked against the field the type uses.
  p.clear_uint64_data();
  p.add_int32_data(1);
  p.add_int32_data(2);
  p.add_int32_data(3);
  auto e = io::parse_tensor_pb(p.SerializeAsString(), "e.pb");
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.status().message().find("uint64_data"), std::string::npos) << e.status().to_string();
}

TEST(Dtypes, PbStillUnsupported) {
  // 23 is opset 23's float4e2m1, newer than the onnx.proto graft builds against.
  for (int32_t t : {int32_t{onnx::TensorProto::COMPLEX64}, int32_t{onnx::TensorProto::COMPLEX128}, int32_t{23}}) {
    onnx::TensorProto p;
    p.set_name("s");
    p.add_dims(1);
    p.set_data_type(t);
    p.set_raw_data(std::string(8, '\0'));
    auto r = io::parse_tensor_pb(p.SerializeAsString(), "s.pb");
    ASSERT_FALSE(r.is_ok()) << t;
    EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
    EXPECT_NE(r.status().message().find("ONNX data type " + std::to_string(t)), std::string::npos)
        << r.status().to_string();
  }
}

// A model over the new types: initializers in each typed field, through a plan and back.
TEST(Dtypes, ModelAndPlanRoundTrip) {
  testing::OnnxModelBuilder m;
  m.input("a", DataType::kUInt64, {4});
  m.input("s", DataType::kInt16, {4});
  m.initializer("b", tensor_of<uint64_t>({4}, {1, 2, 3, std::numeric_limits<uint64_t>::max()}));
  m.initializer("k", tensor_of<int16_t>({1}, {-3}));
  m.node("Add", {"a", "b"}, {"sum"});
  m.node("Max", {"s", "k"}, {"mx"});
  auto& c = m.node("Cast", {"mx"}, {"mx32"});
  m.attr(c, "to", int64_t{12});  // uint32
  m.output("sum", DataType::kUInt64);
  m.output("mx32", DataType::kUInt32);
  auto e = Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, "dtypes.onnx");
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  auto plan = e.value()->serialize();
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  auto loaded = Engine::deserialize(plan.value(), "dtypes.plan");
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  EXPECT_EQ(loaded.value()->serialize().value(), plan.value());

  const uint64_t big = std::numeric_limits<uint64_t>::max();
  Tensor a = tensor_of<uint64_t>({4}, {big, 10, uint64_t{1} << 60, 1});
  Tensor s = tensor_of<int16_t>({4}, {-32768, -3, 5, 32767});
  for (auto* eng : {e.value().get(), loaded.value().get()}) {
    auto ctx = eng->create_context();
    ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
    std::map<std::string, Tensor> out;
    Status st = ctx.value()->run({{"a", a}, {"s", s}}, out);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    // big + 1 and 1 + big wrap to 0 and big - 1... exactly, beyond double's 53 bits.
    EXPECT_EQ(elements<uint64_t>(out.at("sum")), (std::vector<uint64_t>{0, 12, (uint64_t{1} << 60) + 3, 0}));
    // max(-32768, -3) = -3 -> uint32 wraps to 2^32 - 3.
    EXPECT_EQ(elements<uint32_t>(out.at("mx32")), (std::vector<uint32_t>{4294967293u, 4294967293u, 5, 32767}));
  }
}

Result<Tensor> cast_to(const Tensor& x, DataType to) {
  AttributeMap at;
  at.set("to", static_cast<int64_t>(to));
  GRAFT_ASSIGN_OR_RETURN(auto outs, run_op("Cast", {x}, at));
  return outs[0];
}

TEST(Dtypes, CastWrapsBetweenIntegers) {
  // Integer to integer keeps the low bits (two's complement), as NumPy's astype does.
  auto a = cast_to(tensor_of<uint16_t>({4}, {0, 32767, 32768, 65535}), DataType::kInt16);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(elements<int16_t>(a.value()), (std::vector<int16_t>{0, 32767, -32768, -1}));

  auto b = cast_to(tensor_of<int16_t>({3}, {-1, -32768, 300}), DataType::kUInt16);
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  EXPECT_EQ(elements<uint16_t>(b.value()), (std::vector<uint16_t>{65535, 32768, 300}));

  auto c = cast_to(tensor_of<int16_t>({2}, {-2, 7}), DataType::kUInt64);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(elements<uint64_t>(c.value()), (std::vector<uint64_t>{18446744073709551614ull, 7}));

  auto d = cast_to(tensor_of<uint64_t>({3}, {std::numeric_limits<uint64_t>::max(), 4294967296ull + 5, 70000}),
                   DataType::kUInt32);
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  EXPECT_EQ(elements<uint32_t>(d.value()), (std::vector<uint32_t>{4294967295u, 5, 70000}));

  auto e = cast_to(tensor_of<uint32_t>({3}, {4294967295u, 65536 + 9, 40000}), DataType::kInt16);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ(elements<int16_t>(e.value()), (std::vector<int16_t>{-1, 9, -25536}));

  auto f = cast_to(tensor_of<uint64_t>({2}, {std::numeric_limits<uint64_t>::max(), 5}), DataType::kInt64);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(elements<int64_t>(f.value()), (std::vector<int64_t>{-1, 5}));

  auto g = cast_to(tensor_of<int8_t>({2}, {-128, 127}), DataType::kUInt32);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(elements<uint32_t>(g.value()), (std::vector<uint32_t>{4294967168u, 127}));

  auto h = cast_to(tensor_of<uint16_t>({3}, {0, 1, 65535}), DataType::kBool);
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  EXPECT_EQ(testing::values(h.value()), (std::vector<double>{0, 1, 1}));
}

TEST(Dtypes, CastFromFloatTruncatesAndSaturates) {
  const float nan = std::nanf("");
  Tensor x = tensor_of<float>({6}, {-3.9f, 3.9f, 70000.5f, -70000.5f, nan, 1e30f});
  auto a = cast_to(x, DataType::kInt16);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(elements<int16_t>(a.value()), (std::vector<int16_t>{-3, 3, 32767, -32768, 0, 32767}));
  auto b = cast_to(x, DataType::kUInt16);
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  EXPECT_EQ(elements<uint16_t>(b.value()), (std::vector<uint16_t>{0, 3, 65535, 0, 0, 65535}));
  auto c = cast_to(x, DataType::kUInt32);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(elements<uint32_t>(c.value()), (std::vector<uint32_t>{0, 3, 70000, 0, 0, 4294967295u}));
  // 2^64 as a double is the first value out of uint64's range; the largest below it converts exactly.
  Tensor y = tensor_of<double>({3}, {18446744073709551616.0, 18446744073709549568.0, 1e300});
  auto d = cast_to(y, DataType::kUInt64);
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  EXPECT_EQ(elements<uint64_t>(d.value()),
            (std::vector<uint64_t>{std::numeric_limits<uint64_t>::max(), 18446744073709549568ull,
                                   std::numeric_limits<uint64_t>::max()}));
}

TEST(Dtypes, CastToFloat) {
  auto a = cast_to(tensor_of<uint64_t>({2}, {std::numeric_limits<uint64_t>::max(), 3}), DataType::kFloat64);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(elements<double>(a.value()), (std::vector<double>{18446744073709551616.0, 3.0}));
  auto b = cast_to(tensor_of<int16_t>({2}, {-32768, 12}), DataType::kFloat32);
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  EXPECT_EQ(elements<float>(b.value()), (std::vector<float>{-32768.0f, 12.0f}));
  auto c = cast_to(tensor_of<uint32_t>({1}, {4294967295u}), DataType::kFloat16);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_TRUE(std::isinf(c.value().get(0)));  // beyond float16's range
}

// Wrapping arithmetic in T itself, through unsigned of at least int's width (no promotion UB).
template <typename T>
T wrap(uint64_t v) {
  return static_cast<T>(v);
}

TEST(Dtypes, ElementwiseMatchesLoops) {
  std::mt19937_64 rng(12345);
  for_each_new_type([&](auto zero) {
    using T = decltype(zero);
    SCOPED_TRACE(dtype_name(dtype_of<T>::value));
    constexpr size_t n = 64;
    std::vector<T> av = random_values<T>(n, rng), bv = random_values<T>(n, rng);
    for (auto& b : bv)
      if (b == 0) b = 1;
    bv[2] = static_cast<T>(-1);  // x / -1 and x % -1 at the signed minimum
    const Tensor a = tensor_of<T>({8, 8}, av), b = tensor_of<T>({8, 8}, bv);
    using W = uint64_t;
    struct Case {
      const char* op;
      std::function<T(T, T)> f;
    };
    const std::vector<Case> cases = {
        {"Add", [](T x, T y) { return wrap<T>(W(x) + W(y)); }},
        {"Sub", [](T x, T y) { return wrap<T>(W(x) - W(y)); }},
        {"Mul", [](T x, T y) { return wrap<T>(W(x) * W(y)); }},
        {"Max", [](T x, T y) { return x < y ? y : x; }},
        {"Min", [](T x, T y) { return y < x ? y : x; }},
        {"Div", [](T x, T y) {
           if constexpr (std::is_signed_v<T>) {
             if (y == T(-1)) return wrap<T>(W(0) - W(x));
           }
           return static_cast<T>(x / y);
         }},
        {"Mod", [](T x, T y) {
           if constexpr (std::is_signed_v<T>) {
             if (y == T(-1)) return T(0);
             int64_t r = static_cast<int64_t>(x) % static_cast<int64_t>(y);
             if (r != 0 && ((r < 0) != (y < 0))) r += y;  // the divisor's sign (fmod=0)
             return static_cast<T>(r);
           } else {
             return static_cast<T>(x % y);
           }
         }},
    };
    for (const Case& c : cases) {
      SCOPED_TRACE(c.op);
      auto r = run_op(c.op, {a, b});
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      std::vector<T> want(n);
      for (size_t i = 0; i < n; ++i) want[i] = c.f(av[i], bv[i]);
      EXPECT_EQ(elements<T>(r.value()[0]), want);
    }
    // Comparisons, and a reduction exact at the type's extremes.
    auto less = run_op("Less", {a, b});
    ASSERT_TRUE(less.is_ok()) << less.status().to_string();
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(less.value()[0].get(static_cast<int64_t>(i)) != 0, av[i] < bv[i]) << i;
    AttributeMap keep;
    keep.set("keepdims", int64_t{0});
    auto mx = run_op("ReduceMax", {a}, keep);
    ASSERT_TRUE(mx.is_ok()) << mx.status().to_string();
    EXPECT_EQ(elements<T>(mx.value()[0]), std::vector<T>{std::numeric_limits<T>::max()});
    auto mn = run_op("ReduceMin", {a}, keep);
    ASSERT_TRUE(mn.is_ok()) << mn.status().to_string();
    EXPECT_EQ(elements<T>(mn.value()[0]), std::vector<T>{std::numeric_limits<T>::lowest()});
  });
}

TEST(Dtypes, BitShiftMatchesLoops) {
  std::mt19937_64 rng(99);
  auto check = [&](auto zero) {
    using T = decltype(zero);
    SCOPED_TRACE(dtype_name(dtype_of<T>::value));
    constexpr unsigned kBits = sizeof(T) * 8;
    constexpr size_t n = 40;
    std::vector<T> xv = random_values<T>(n, rng), sv(n);
    for (size_t i = 0; i < n; ++i) sv[i] = static_cast<T>(i % (kBits + 3));  // past the width too
    for (const char* dir : {"LEFT", "RIGHT"}) {
      SCOPED_TRACE(dir);
      AttributeMap at;
      at.set("direction", std::string(dir));
      auto r = run_op("BitShift", {tensor_of<T>({5, 8}, xv), tensor_of<T>({5, 8}, sv)}, at);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      std::vector<T> want(n);
      for (size_t i = 0; i < n; ++i) {
        const uint64_t v = xv[i], by = sv[i];
        want[i] = by >= kBits ? T(0) : static_cast<T>(dir[0] == 'L' ? v << by : v >> by);
      }
      EXPECT_EQ(elements<T>(r.value()[0]), want);
    }
  };
  check(uint8_t{});
  check(uint16_t{});
  check(uint32_t{});
  check(uint64_t{});
}

TEST(Dtypes, DataMovementOps) {
  std::mt19937_64 rng(5);
  for_each_new_type([&](auto zero) {
    using T = decltype(zero);
    SCOPED_TRACE(dtype_name(dtype_of<T>::value));
    std::vector<T> v = random_values<T>(6, rng);
    Tensor x = tensor_of<T>({2, 3}, v);
    AttributeMap perm;
    perm.set("perm", std::vector<int64_t>{1, 0});
    auto t = run_op("Transpose", {x}, perm);
    ASSERT_TRUE(t.is_ok()) << t.status().to_string();
    EXPECT_EQ(elements<T>(t.value()[0]), (std::vector<T>{v[0], v[3], v[1], v[4], v[2], v[5]}));
    AttributeMap axis;
    axis.set("axis", int64_t{0});
    auto c = run_op("Concat", {x, x}, axis);
    ASSERT_TRUE(c.is_ok()) << c.status().to_string();
    EXPECT_EQ(c.value()[0].dims(), (std::vector<int64_t>{4, 3}));
    auto g = run_op("Gather", {x, Tensor::vector_int64({1})}, axis);
    ASSERT_TRUE(g.is_ok()) << g.status().to_string();
    EXPECT_EQ(elements<T>(g.value()[0]), (std::vector<T>{v[3], v[4], v[5]}));
    Tensor cond = Tensor::from_doubles(DataType::kBool, {2, 3}, {1, 0, 1, 0, 1, 0});
    Tensor other = tensor_of<T>({1}, {T(7)});
    auto w = run_op("Where", {cond, x, other});
    ASSERT_TRUE(w.is_ok()) << w.status().to_string();
    EXPECT_EQ(elements<T>(w.value()[0]), (std::vector<T>{v[0], T(7), v[2], T(7), v[4], T(7)}));
  });
}

TEST(Dtypes, UnsupportedUsesNameTheDtype) {
  // Neg and Relu are signed-only in ONNX; BitShift is unsigned-only.
  auto neg = run_op("Neg", {tensor_of<uint32_t>({1}, {1})});
  ASSERT_FALSE(neg.is_ok());
  EXPECT_NE(neg.status().to_string().find("uint32"), std::string::npos) << neg.status().to_string();
  AttributeMap at;
  at.set("direction", std::string("LEFT"));
  auto bs = run_op("BitShift", {tensor_of<int16_t>({1}, {1}), tensor_of<int16_t>({1}, {1})}, at);
  ASSERT_FALSE(bs.is_ok());
  EXPECT_EQ(bs.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(bs.status().message().find("int16"), std::string::npos) << bs.status().to_string();
  // Cast to complex64 is refused at inference, naming the ONNX number.
  AttributeMap to;
  to.set("to", int64_t{14});
  auto c = run_op("Cast", {tensor_of<uint16_t>({1}, {1})}, to);
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().to_string().find("14"), std::string::npos) << c.status().to_string();
}

// ---- int4 and uint4 (opset 21): one value a byte in memory, packed two a byte in ONNX files ----

std::vector<double> values_of(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get(i));
  return v;
}

TEST(Dtypes, FourBitStoresKeepTheLowBits) {
  Tensor s = Tensor::empty(DataType::kInt4, {6});
  Tensor u = Tensor::empty(DataType::kUInt4, {6});
  const std::vector<double> in = {-8, 7, -9, 8, 16, -1};
  for (int64_t i = 0; i < 6; ++i) {
    s.set(i, in[static_cast<size_t>(i)]);
    u.set(i, in[static_cast<size_t>(i)]);
  }
  // -9 and 8 wrap inside int4's [-8, 7]; 16 and -1 inside uint4's [0, 15], as a narrower C++ type's.
  EXPECT_EQ(values_of(s), (std::vector<double>{-8, 7, 7, -8, 0, -1}));
  EXPECT_EQ(values_of(u), (std::vector<double>{8, 7, 7, 8, 0, 15}));
  EXPECT_EQ(dtype_size(DataType::kInt4), 1u);
  EXPECT_STREQ(dtype_name(DataType::kUInt4), "uint4");
  DataType t;
  EXPECT_TRUE(dtype_from_onnx(22, &t) && t == DataType::kInt4);
  EXPECT_FALSE(dtype_from_onnx_numeric(21, &t));  // no dtype attribute but output_dtype names them
  EXPECT_FALSE(dtype_is_integer(DataType::kInt4));
}

TEST(Dtypes, FourBitPbIsPackedLowNibbleFirst) {
  onnx::TensorProto p;
  p.set_name("w");
  p.add_dims(5);
  p.set_data_type(22);  // INT4, newer than the onnx.proto graft builds against
  p.set_raw_data(std::string("\x21\xf8\x07", 3));  // 1, 2 | -8, -1 | 7, (unused)
  auto a = io::parse_tensor_pb(p.SerializeAsString(), "w.pb");
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(a.value().tensor.dtype(), DataType::kInt4);
  EXPECT_EQ(values_of(a.value().tensor), (std::vector<double>{1, 2, -8, -1, 7}));
  // The same bytes in int32_data, one packed byte an entry, read as uint4.
  p.clear_raw_data();
  p.set_data_type(21);
  for (int b : {0x21, 0xf8, 0x07}) p.add_int32_data(b);
  auto b = io::parse_tensor_pb(p.SerializeAsString(), "w.pb");
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  EXPECT_EQ(values_of(b.value().tensor), (std::vector<double>{1, 2, 8, 15, 7}));
  // Written back packed, and read back equal.
  auto bytes = io::encode_tensor_pb(b.value().tensor, "w");
  ASSERT_TRUE(bytes.is_ok()) << bytes.status().to_string();
  onnx::TensorProto q;
  ASSERT_TRUE(q.ParseFromString(bytes.value()));
  EXPECT_EQ(q.raw_data(), std::string("\x21\xf8\x07", 3));
  auto c = io::parse_tensor_pb(bytes.value(), "w.pb");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(values_of(c.value().tensor), values_of(b.value().tensor));
  // Five values need three packed bytes: one value a byte is refused, naming the packing.
  q.set_raw_data(std::string(5, '\0'));
  auto d = io::parse_tensor_pb(q.SerializeAsString(), "w.pb");
  ASSERT_FALSE(d.is_ok());
  EXPECT_NE(d.status().message().find("two values a byte"), std::string::npos) << d.status().to_string();
}

// An int4 weight-only layer as onnx's quantizer writes one (opset 21): a packed int4 initializer
// with blocked scales, dequantized, then the activation quantized to int4 and dequantized again;
// through a plan and back.
TEST(Dtypes, FourBitQuantizeDequantizeModelAndPlan) {
  testing::OnnxModelBuilder m(21, 10);
  m.input("x", DataType::kFloat32, {2, 4});
  Tensor w = Tensor::empty(DataType::kInt4, {4, 3});
  for (int64_t i = 0; i < w.numel(); ++i) w.set(i, static_cast<double>((i * 5) % 16 - 8));
  m.initializer("w", w);
  m.initializer("w_scale", Tensor::from_doubles(DataType::kFloat32, {2, 3}, {0.5, 0.25, 1, 2, 0.125, 4}));  // [k / 2, c]
  m.initializer("a_scale", Tensor::from_doubles(DataType::kFloat32, {}, {0.5}));
  m.initializer("a_zp", Tensor::from_doubles(DataType::kUInt4, {}, {3}));
  auto& dq = m.node("DequantizeLinear", {"w", "w_scale"}, {"wf"});
  m.attr(dq, "axis", int64_t{0});
  m.attr(dq, "block_size", int64_t{2});
  m.node("MatMul", {"x", "wf"}, {"y"});
  m.node("QuantizeLinear", {"y", "a_scale", "a_zp"}, {"yq"});
  m.node("DequantizeLinear", {"yq", "a_scale", "a_zp"}, {"yd"});
  m.output("yq", DataType::kUInt4, {2, 3});
  m.output("yd", DataType::kFloat32, {2, 3});
  auto e = Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, "int4.onnx");
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  auto plan = e.value()->serialize();
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  auto loaded = Engine::deserialize(plan.value(), "int4.plan");
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();

  Tensor x = Tensor::from_doubles(DataType::kFloat32, {2, 4}, {0.5, -1, 2, 0.25, -0.75, 1.5, 0, 3});
  // The expected values, in double from the definitions.
  const std::vector<double> w_scale = {0.5, 0.25, 1, 2, 0.125, 4};  // [2, 3]: rows k / 2 of w
  std::vector<double> yq, yd;
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 3; ++c) {
      double acc = 0;
      for (int64_t k = 0; k < 4; ++k)
        acc += x.get(r * 4 + k) * w.get(k * 3 + c) * w_scale[static_cast<size_t>((k / 2) * 3 + c)];
      const double q = std::clamp(std::nearbyint(acc / 0.5) + 3, 0.0, 15.0);
      yq.push_back(q);
      yd.push_back((q - 3) * 0.5);
    }
  for (auto* eng : {e.value().get(), loaded.value().get()}) {
    auto ctx = eng->create_context();
    ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
    std::map<std::string, Tensor> out;
    Status st = ctx.value()->run({{"x", x}}, out);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_EQ(out.at("yq").dtype(), DataType::kUInt4);
    EXPECT_EQ(values_of(out.at("yq")), yq);
    EXPECT_EQ(values_of(out.at("yd")), yd);
  }
}

// Arithmetic refuses the 4-bit types, naming int4. Cast converts to them as ONNX Runtime does (the
// value clamped into the range, then rounded half to even; NaN to 0) and back exactly; a Cast
// target graft lacks is still refused, naming the type.
TEST(Dtypes, FourBitArithmeticIsRefusedAndCastConverts) {
  Tensor a = Tensor::from_doubles(DataType::kInt4, {2}, {1, -2});
  auto add = run_op("Add", {a, a});
  ASSERT_FALSE(add.is_ok());
  EXPECT_NE(add.status().to_string().find("int4"), std::string::npos) << add.status().to_string();
  const std::vector<double> x = {2.5, -3.5, 7.5, -9.0, 100.0, 0.49, std::nan(""), -0.5};
  for (auto [onnx_type, want] : {std::pair<int64_t, std::vector<double>>{22, {2, -4, 7, -8, 7, 0, 0, 0}},
                                 std::pair<int64_t, std::vector<double>>{21, {2, 0, 8, 0, 15, 0, 0, 0}}}) {
    AttributeMap to;
    to.set("to", onnx_type);
    auto c = run_op("Cast", {Tensor::from_doubles(DataType::kFloat32, {8}, x)}, to);
    ASSERT_TRUE(c.is_ok()) << c.status().to_string();
    const Tensor& q = c.value()[0];
    EXPECT_EQ(q.dtype(), onnx_type == 22 ? DataType::kInt4 : DataType::kUInt4);
    for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(q.get(i), want[i]) << "to " << onnx_type << ", element " << i;
    AttributeMap back;
    back.set("to", int64_t{6});  // int32: the values, exactly
    auto b = run_op("Cast", {q}, back);
    ASSERT_TRUE(b.is_ok()) << b.status().to_string();
    for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(b.value()[0].get(i), want[i]);
  }
  AttributeMap complex64;
  complex64.set("to", int64_t{14});
  auto c = run_op("Cast", {Tensor::from_doubles(DataType::kFloat32, {1}, {1})}, complex64);
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().to_string().find("14"), std::string::npos) << c.status().to_string();
}

// ONNX's 8-bit floats: decoding known codes (largest finite, smallest subnormal, infinities and
// NaNs, the fnuz types' missing -0), and encoding checked against the nearest code found by
// searching every code's value (ties to the code whose mantissa is even), with and without
// saturation, on values across each type's range and past it.
TEST(Dtypes, Float8DecodesAndRoundsToNearestEven) {
  using float8::Format;
  // ONNX's numbers and names; one byte each; neither float nor integer types (arithmetic refuses them).
  for (auto [onnx_type, name] : {std::pair<int32_t, const char*>{17, "float8e4m3fn"}, {18, "float8e4m3fnuz"},
                                 {19, "float8e5m2"}, {20, "float8e5m2fnuz"}}) {
    DataType t = DataType::kUndefined, named = DataType::kUndefined;
    ASSERT_TRUE(dtype_from_onnx(onnx_type, &t));
    EXPECT_STREQ(dtype_name(t), name);
    EXPECT_TRUE(dtype_from_name(name, &named) && named == t);
    EXPECT_EQ(dtype_size(t), 1u);
    EXPECT_TRUE(dtype_is_float8(t));
    EXPECT_FALSE(dtype_is_float(t) || dtype_is_integer(t));
    EXPECT_FALSE(dtype_from_onnx_numeric(onnx_type, &t)) << "only Cast's `to` names it";
  }
  // A TensorProto keeps them as bit patterns in int32_data (or raw bytes): 0x7E is e4m3fn's 448.
  onnx::TensorProto p;
  p.set_name("w");
  p.add_dims(2);
  p.set_data_type(17);
  p.add_int32_data(0x7E);
  p.add_int32_data(0x38);
  auto parsed = io::parse_tensor_pb(p.SerializeAsString(), "w.pb");
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed.value().tensor.get(0), 448.0);
  EXPECT_EQ(parsed.value().tensor.get(1), 1.0);
  struct Known { Format f; uint8_t bits; double value; };
  for (const Known& k : {Known{Format::kE4M3FN, 0x7E, 448}, Known{Format::kE4M3FN, 0x01, std::ldexp(1.0, -9)},
                         Known{Format::kE4M3FN, 0xFE, -448}, Known{Format::kE4M3FNUZ, 0x7F, 240},
                         Known{Format::kE4M3FNUZ, 0x01, std::ldexp(1.0, -10)}, Known{Format::kE5M2, 0x7B, 57344},
                         Known{Format::kE5M2, 0x01, std::ldexp(1.0, -16)}, Known{Format::kE5M2, 0x7C, INFINITY},
                         Known{Format::kE5M2, 0xFC, -INFINITY}, Known{Format::kE5M2FNUZ, 0x7F, 57344},
                         Known{Format::kE5M2FNUZ, 0x01, std::ldexp(1.0, -17)}, Known{Format::kE4M3FN, 0x38, 1.0},
                         Known{Format::kE5M2, 0x3C, 1.0}, Known{Format::kE4M3FNUZ, 0x40, 1.0}})
    EXPECT_EQ(float8::to_double(k.f, k.bits), k.value) << static_cast<int>(k.f) << " 0x" << std::hex << int(k.bits);
  EXPECT_TRUE(std::isnan(float8::to_double(Format::kE4M3FN, 0x7F)));
  EXPECT_TRUE(std::isnan(float8::to_double(Format::kE5M2, 0x7D)));
  EXPECT_TRUE(std::isnan(float8::to_double(Format::kE4M3FNUZ, 0x80)));
  EXPECT_TRUE(std::isnan(float8::to_double(Format::kE5M2FNUZ, 0x80)));
  for (Format f : {Format::kE4M3FN, Format::kE4M3FNUZ, Format::kE5M2, Format::kE5M2FNUZ}) {
    const float8::Layout l = float8::layout_of(f);
    // Every finite code, by value.
    std::vector<std::pair<double, int>> codes;
    for (int b = 0; b < 256; ++b) {
      const double v = float8::to_double(f, static_cast<uint8_t>(b));
      if (std::isfinite(v)) codes.push_back({v, b});
    }
    auto nearest = [&](double x) {
      int best = -1;
      double best_d = INFINITY;
      for (auto [v, b] : codes) {
        const double d = std::fabs(v - x);
        const bool even = (b & 1) == 0;
        if (d < best_d || (d == best_d && even && v != 0.0)) best = b, best_d = d;
      }
      return best;
    };
    std::mt19937 rng(static_cast<unsigned>(f) * 7919u);
    std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
    std::uniform_int_distribution<int> scale(-20, 18);
    for (int i = 0; i < 4000; ++i) {
      // float32 values, as ONNX's casts take them; halfway points between codes among them.
      double x = static_cast<float>(std::ldexp(mantissa(rng), scale(rng)));
      if (i % 5 == 0 && codes.size() > 2) {
        const size_t k = static_cast<size_t>(rng() % (codes.size() - 1));
        std::vector<double> sorted;
        for (auto [v, b] : codes) sorted.push_back(v);
        std::sort(sorted.begin(), sorted.end());
        x = (sorted[k] + sorted[k + 1]) / 2;
      }
      const uint8_t sat = float8::from_double(f, x, true);
      const double clamped = std::clamp(x, -l.largest, l.largest);
      const double want = float8::to_double(f, static_cast<uint8_t>(nearest(clamped)));
      const double got = float8::to_double(f, sat);
      EXPECT_EQ(got, want) << "format " << static_cast<int>(f) << " x " << x;
      if (got == 0.0 && !l.unsigned_zero) EXPECT_EQ(std::signbit(got), std::signbit(x)) << x;
      const uint8_t raw = float8::from_double(f, x, false);
      if (std::fabs(x) <= l.largest) EXPECT_EQ(raw, sat) << x;
    }
    // Past the largest finite: the largest with saturation; without, infinity or NaN once the
    // rounding passes it.
    const double big = l.largest * 4;
    EXPECT_EQ(float8::to_double(f, float8::from_double(f, big, true)), l.largest);
    EXPECT_EQ(float8::to_double(f, float8::from_double(f, -INFINITY, true)), -l.largest);
    const double over = float8::to_double(f, float8::from_double(f, big, false));
    if (l.has_infinity) EXPECT_EQ(over, INFINITY);
    else EXPECT_TRUE(std::isnan(over));
    EXPECT_TRUE(std::isnan(float8::to_double(f, float8::from_double(f, NAN, true))));
    EXPECT_EQ(float8::from_double(f, -0.0, true), l.unsigned_zero ? 0x00 : 0x80);
  }
}

// Cast to the 8-bit floats reads opset 19's saturate: with it (the default) out-of-range values and
// infinities give the largest finite, without it NaN (e4m3fn, no infinity) or infinity (e5m2);
// back to float32 they are exact. A saturate other than 0 or 1 is an error naming it.
TEST(Dtypes, Float8CastSaturatesOrNot) {
  const std::vector<double> x = {500, -INFINITY, 1.0625, -0.001};
  struct Want { int64_t to, saturate; std::vector<double> back; };
  // -0.001: e4m3fn's smallest subnormal (2^-9) is nearest; in e5m2 it is a normal, 2^-10.
  for (const Want& w : {Want{17, 1, {448, -448, 1.0, -0.001953125}}, Want{17, 0, {NAN, NAN, 1.0, -0.001953125}},
                        Want{19, 0, {512, -INFINITY, 1.0, -0.0009765625}}}) {
    AttributeMap a;
    a.set("to", w.to);
    a.set("saturate", w.saturate);
    auto q = run_op("Cast", {Tensor::from_doubles(DataType::kFloat32, {4}, x)}, a);
    ASSERT_TRUE(q.is_ok()) << q.status().to_string();
    AttributeMap back;
    back.set("to", int64_t{1});
    auto b = run_op("Cast", {q.value()[0]}, back);
    ASSERT_TRUE(b.is_ok()) << b.status().to_string();
    for (int64_t i = 0; i < 4; ++i) {
      const double got = b.value()[0].get(i);
      if (std::isnan(w.back[i])) EXPECT_TRUE(std::isnan(got)) << "to " << w.to << " element " << i;
      else EXPECT_EQ(got, w.back[i]) << "to " << w.to << " saturate " << w.saturate << " element " << i;
    }
  }
  AttributeMap bad;
  bad.set("to", int64_t{17});
  bad.set("saturate", int64_t{2});
  auto r = run_op("Cast", {Tensor::from_doubles(DataType::kFloat32, {1}, {1})}, bad);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().to_string().find("saturate"), std::string::npos) << r.status().to_string();
  // Arithmetic refuses them, naming the type.
  const Tensor f8 = Tensor::from_doubles(DataType::kFloat8E4M3FN, {2}, {1, -2});
  auto add = run_op("Add", {f8, f8});
  ASSERT_FALSE(add.is_ok());
  EXPECT_NE(add.status().to_string().find("float8e4m3fn"), std::string::npos) << add.status().to_string();
}

}  // namespace
}  // namespace graft
