// Tensor file I/O: .npy and ONNX TensorProto round trips on random data for every dtype, hand-made
// headers in each format version, and every error path (each must name the file).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include <onnx/onnx_pb.h>

#include "io/tensor_io.h"

namespace graft {
namespace {

namespace fs = std::filesystem;

const DataType kAllNpyTypes[] = {DataType::kFloat16, DataType::kFloat32, DataType::kFloat64,
                                 DataType::kInt8,    DataType::kUInt8,   DataType::kInt32,
                                 DataType::kInt64,   DataType::kBool};

class TensorIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = std::random_device{}();
    rng_.seed(seed_);
    dir_ = fs::temp_directory_path() / ("graft_tensor_io_" + std::to_string(::getpid()) + "_" +
                                        std::to_string(seed_));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // Random bytes reinterpreted per dtype would give NaN payloads and non-0/1 bools, so fill by value.
  Tensor random_tensor(DataType dt, std::vector<int64_t> dims) {
    Tensor t = Tensor::empty(dt, dims);
    std::uniform_real_distribution<double> real(-100.0, 100.0);
    std::uniform_int_distribution<int64_t> i64(-(int64_t{1} << 40), int64_t{1} << 40);
    for (int64_t i = 0; i < t.numel(); ++i) {
      switch (dt) {
        case DataType::kBool: t.set(i, static_cast<double>(rng_() & 1)); break;
        case DataType::kInt8: t.set(i, static_cast<double>(static_cast<int>(rng_() % 256) - 128)); break;
        case DataType::kUInt8: t.set(i, static_cast<double>(rng_() % 256)); break;
        case DataType::kInt32: t.data_as<int32_t>()[i] = static_cast<int32_t>(rng_()); break;
        case DataType::kInt64: t.data_as<int64_t>()[i] = i64(rng_); break;
        default: t.set(i, real(rng_)); break;
      }
    }
    return t;
  }

  void write_raw(const std::string& p, const std::string& bytes) {
    ASSERT_TRUE(io::write_file_atomic(p, bytes).is_ok());
  }

  // A .npy file with an arbitrary header dict and payload, for the error cases.
  static std::string npy_bytes(const std::string& dict, const std::string& payload, int version = 1) {
    std::string h = dict;
    size_t prefix = version == 1 ? 10 : 12;
    while ((prefix + h.size() + 1) % 64) h += ' ';
    h += '\n';
    std::string out("\x93NUMPY", 6);
    out += static_cast<char>(version);
    out += '\0';
    uint32_t n = static_cast<uint32_t>(h.size());
    for (size_t i = 0; i < (version == 1 ? 2u : 4u); ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
    return out + h + payload;
  }

  unsigned seed_ = 0;
  std::mt19937_64 rng_;
  fs::path dir_;
};

TEST_F(TensorIoTest, NpyRoundTripEveryDtype) {
  const std::vector<std::vector<int64_t>> shapes = {{}, {7}, {3, 5}, {2, 0, 4}, {2, 3, 4, 5}};
  for (DataType dt : kAllNpyTypes) {
    for (const auto& dims : shapes) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " rank " + std::to_string(dims.size()) + " seed " +
                   std::to_string(seed_));
      Tensor t = random_tensor(dt, dims);
      std::string p = path("t.npy");
      ASSERT_TRUE(io::write_npy(p, t).is_ok());
      auto back = io::read_npy(p);
      ASSERT_TRUE(back.is_ok()) << back.status().to_string();
      EXPECT_TRUE(t.same_contents(back.value()));
      // read_tensor_file recognises the format by content even without the extension.
      fs::rename(p, path("t.bin"));
      auto any = io::read_tensor_file(path("t.bin"));
      ASSERT_TRUE(any.is_ok()) << any.status().to_string();
      EXPECT_TRUE(t.same_contents(any->tensor));
    }
  }
}

TEST_F(TensorIoTest, NpyHeaderIsNumpyCompatible) {
  Tensor t = random_tensor(DataType::kFloat32, {3});
  auto bytes = io::encode_npy(t);
  ASSERT_TRUE(bytes.is_ok());
  const std::string& b = bytes.value();
  ASSERT_GE(b.size(), 10u);
  size_t header_len = static_cast<unsigned char>(b[8]) | (static_cast<unsigned char>(b[9]) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);
  std::string header = b.substr(10, header_len);
  EXPECT_NE(header.find("'descr': '<f4'"), std::string::npos) << header;
  EXPECT_NE(header.find("'shape': (3,)"), std::string::npos) << header;
  EXPECT_EQ(header.back(), '\n');
}

TEST_F(TensorIoTest, NpyVersion2AndUnusualSpacing) {
  Tensor t = random_tensor(DataType::kInt32, {2, 3});
  std::string payload(static_cast<const char*>(t.data()), t.nbytes());
  write_raw(path("v2.npy"), npy_bytes("{\"shape\":(2,3),\"fortran_order\":False,\"descr\":\"<i4\"}", payload, 2));
  auto back = io::read_npy(path("v2.npy"));
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_TRUE(t.same_contents(back.value()));
  // Fortran order is harmless when at most one dimension exceeds 1.
  write_raw(path("f1.npy"), npy_bytes("{'descr': '<i4', 'fortran_order': True, 'shape': (1, 6), }", payload));
  auto f1 = io::read_npy(path("f1.npy"));
  ASSERT_TRUE(f1.is_ok()) << f1.status().to_string();
  EXPECT_EQ(f1->dims(), (std::vector<int64_t>{1, 6}));
}

void expect_error_naming_file(const Status& st, const std::string& file, const std::string& words) {
  ASSERT_FALSE(st.is_ok());
  std::string s = st.to_string();
  EXPECT_NE(s.find(file), std::string::npos) << s;
  EXPECT_NE(s.find(words), std::string::npos) << s;
}

TEST_F(TensorIoTest, NpyErrors) {
  std::string payload(24, '\1');
  struct Case {
    std::string name, bytes, words;
  };
  const std::vector<Case> cases = {
      {"fortran.npy", npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", payload), "Fortran"},
      {"big.npy", npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", payload), "big-endian"},
      {"complex.npy", npy_bytes("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", payload), "unsupported dtype '<c8'"},
      {"struct.npy", npy_bytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,), }", payload), "structured"},
      {"trunc.npy", npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", payload), "truncated data"},
      {"extra.npy", npy_bytes("{'descr': '<f16', 'fortran_order': False, 'shape': (2, 3), }", payload), "unsupported dtype"},
      {"trailing.npy", npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }", payload), "trailing bytes"},
      {"badhdr.npy", npy_bytes("{'descr': '<f4', 'shape': (2, 3), }", payload), "header lacks"},
      {"negative.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3), }", payload), "malformed"},
      {"shorthdr.npy", std::string("\x93NUMPY\x01\x00\xff\x00{'descr'", 17), "truncated .npy header"},
      {"version.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", payload, 9), "version 9"},
      {"notnpy.npy", "hello world", "magic"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    write_raw(path(c.name), c.bytes);
    auto r = io::read_npy(path(c.name));
    expect_error_naming_file(r.status(), c.name, c.words);
  }
  auto missing = io::read_npy(path("nope.npy"));
  expect_error_naming_file(missing.status(), "nope.npy", "cannot open");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  // bfloat16 has no NumPy dtype: the writer refuses and names the file.
  Tensor bf = Tensor::empty(DataType::kBFloat16, {2});
  expect_error_naming_file(io::write_npy(path("bf.npy"), bf), "bf.npy", "bfloat16");
  EXPECT_FALSE(fs::exists(path("bf.npy")));
}

TEST_F(TensorIoTest, PbRoundTripEveryDtype) {
  std::vector<DataType> types(std::begin(kAllNpyTypes), std::end(kAllNpyTypes));
  types.push_back(DataType::kBFloat16);
  for (DataType dt : types) {
    for (const auto& dims : std::vector<std::vector<int64_t>>{{}, {5}, {2, 3, 4}, {0, 3}}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " seed " + std::to_string(seed_));
      Tensor t = random_tensor(dt, dims);
      std::string p = path("t.pb");
      ASSERT_TRUE(io::write_tensor_pb(p, t, "my/tensor:0").is_ok());
      auto back = io::read_tensor_file(p);
      ASSERT_TRUE(back.is_ok()) << back.status().to_string();
      EXPECT_EQ(back->name, "my/tensor:0");
      EXPECT_TRUE(t.same_contents(back->tensor));
    }
  }
}

TEST_F(TensorIoTest, PbTypedFields) {
  std::uniform_real_distribution<float> real(-5.f, 5.f);
  {
    onnx::TensorProto p;
    p.set_name("f");
    p.set_data_type(onnx::TensorProto::FLOAT);
    p.add_dims(2);
    p.add_dims(2);
    std::vector<float> v;
    for (int i = 0; i < 4; ++i) v.push_back(real(rng_)), p.add_float_data(v.back());
    auto r = io::parse_tensor_pb(p.SerializeAsString(), "f.pb");
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    for (int i = 0; i < 4; ++i) EXPECT_EQ(r->tensor.data_as<float>()[i], v[i]);
  }
  {
    onnx::TensorProto p;
    p.set_data_type(onnx::TensorProto::FLOAT16);
    p.add_dims(3);
    std::vector<uint16_t> bits;
    for (int i = 0; i < 3; ++i) bits.push_back(float_to_half(real(rng_))), p.add_int32_data(bits.back());
    auto r = io::parse_tensor_pb(p.SerializeAsString(), "h.pb");
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(r->tensor.dtype(), DataType::kFloat16);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(r->tensor.data_as<uint16_t>()[i], bits[i]);
  }
  {
    onnx::TensorProto p;
    p.set_data_type(onnx::TensorProto::INT64);
    p.add_dims(2);
    int64_t a = static_cast<int64_t>(rng_()), b = -static_cast<int64_t>(rng_() >> 1);
    p.add_int64_data(a);
    p.add_int64_data(b);
    auto r = io::parse_tensor_pb(p.SerializeAsString(), "i.pb");
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(r->tensor.data_as<int64_t>()[0], a);
    EXPECT_EQ(r->tensor.data_as<int64_t>()[1], b);
  }
  {
    onnx::TensorProto p;
    p.set_data_type(onnx::TensorProto::DOUBLE);
    p.add_dims(1);
    double d = real(rng_);
    p.add_double_data(d);
    auto r = io::parse_tensor_pb(p.SerializeAsString(), "d.pb");
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(r->tensor.data_as<double>()[0], d);
  }
}

TEST_F(TensorIoTest, PbErrors) {
  struct Case {
    std::string name, bytes, words;
  };
  std::vector<Case> cases;
  {
    onnx::TensorProto p;
    p.set_name("x");
    p.set_data_type(onnx::TensorProto::FLOAT);
    p.add_dims(4);
    p.set_raw_data(std::string(12, '\0'));
    cases.push_back({"short.pb", p.SerializeAsString(), "truncated"});
  }
  {
    onnx::TensorProto p;
    p.set_data_type(onnx::TensorProto::FLOAT);
    p.add_dims(3);
    p.add_float_data(1.f);
    cases.push_back({"count.pb", p.SerializeAsString(), "float_data holds 1 values"});
  }
  {
    onnx::TensorProto p;
    p.set_data_type(onnx::TensorProto::STRING);
    p.add_dims(2);
    p.add_string_data("a");
    cases.push_back({"string.pb", p.SerializeAsString(), "string_data holds 1 values"});
  }
  {
    onnx::TensorProto p;
    p.set_data_type(onnx::TensorProto::FLOAT);
    p.add_dims(1);
    p.set_data_location(onnx::TensorProto::EXTERNAL);
    cases.push_back({"external.pb", p.SerializeAsString(), "external data"});
  }
  cases.push_back({"garbage.pb", std::string("\xff\xff\xff\xff\xff", 5), "not a valid ONNX TensorProto"});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    write_raw(path(c.name), c.bytes);
    expect_error_naming_file(io::read_tensor_file(path(c.name)).status(), c.name, c.words);
  }
}

TEST_F(TensorIoTest, AtomicWriteLeavesNoTemporaries) {
  Tensor t = random_tensor(DataType::kFloat32, {4});
  ASSERT_TRUE(io::write_npy(path("a.npy"), t).is_ok());
  ASSERT_TRUE(io::write_npy(path("a.npy"), t).is_ok());  // overwrite
  int files = 0;
  for (auto it = fs::directory_iterator(dir_); it != fs::directory_iterator(); ++it) ++files;
  EXPECT_EQ(files, 1);
  Status st = io::write_npy(path("no/such/dir/a.npy"), t);
  expect_error_naming_file(st, "a.npy", "cannot create");
}

TEST(TensorIoNames, SanitizeFileName) {
  EXPECT_EQ(io::sanitize_file_name("out/put:0"), "out_put_0");
  EXPECT_EQ(io::sanitize_file_name(""), "_");
  EXPECT_EQ(io::sanitize_file_name(".."), "_..");
  EXPECT_EQ(io::sanitize_file_name("a.b-c_d"), "a.b-c_d");
}

}  // namespace
}  // namespace graft
