// Reliability against malformed and hostile inputs (issue 19, fuzzing findings): checked size
// arithmetic, allocation failures as errors, external data confined to the model's directory,
// sizes checked before allocation, scalar axes, rank bounds, Range without undefined behaviour,
// UTF-8 names, plan devices, output and temporary files, outputs that own their memory, threads.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <tuple>

#include "core/checked_math.h"
#include "graft/engine.h"
#include "graft/op.h"
#include "io/tensor_io.h"
#include "onnx/importer.h"
#include "ops/operator.h"
#include "plan/plan.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/op_test_util.h"

namespace graft {
namespace {

namespace fs = std::filesystem;
using testing::OnnxModelBuilder;
using testing::random_tensor;

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("graft_reliability_" + std::to_string(::getpid()) + "_" +
                                        std::to_string(std::random_device{}()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

Result<std::shared_ptr<Engine>> build(const OnnxModelBuilder& m, const std::string& name = "model.onnx") {
  return Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, name);
}

Status run_once(const Engine& e, const std::map<std::string, Tensor>& in, std::map<std::string, Tensor>* out) {
  GRAFT_ASSIGN_OR_RETURN(auto ctx, e.create_context());
  return ctx->run(in, *out);
}

constexpr int64_t k2to62 = int64_t{1} << 62;

// ---- checked arithmetic, Dim, Tensor::allocate (H2, H4, F5) -------------------------------------
TEST(Checked, Helpers) {
  int64_t r = 0;
  EXPECT_TRUE(checked_mul(3, 4, &r));
  EXPECT_EQ(r, 12);
  EXPECT_FALSE(checked_mul(k2to62, 4, &r));
  EXPECT_FALSE(checked_add(std::numeric_limits<int64_t>::max(), 1, &r));
  EXPECT_FALSE(checked_sub(std::numeric_limits<int64_t>::min(), 1, &r));
  EXPECT_EQ(checked_numel({}), 1);
  EXPECT_EQ(checked_numel({3, 0, k2to62}), 0);
  EXPECT_FALSE(checked_numel({k2to62, 4}).has_value());
  EXPECT_FALSE(checked_numel({2, -1}).has_value());
  EXPECT_EQ(checked_nbytes({k2to62 / 4}, 4), k2to62);
  EXPECT_FALSE(checked_nbytes({k2to62}, 4).has_value());
}

TEST(Checked, DimArithmeticOverflowIsInvalidNotWrapped) {
  Dim p = Dim(k2to62 + 3) * Dim(4);
  EXPECT_FALSE(p.is_const());
  EXPECT_TRUE(p.is_invalid());
  EXPECT_FALSE(p.evaluate({}).has_value());
  EXPECT_TRUE((p + Dim::symbol("n")).is_invalid()) << "invalidity spreads";
  EXPECT_TRUE((Dim(std::numeric_limits<int64_t>::max()) + Dim(1)).is_invalid());
  EXPECT_TRUE(floor_div(Dim(std::numeric_limits<int64_t>::min()), Dim(-1)).is_invalid());
  Dim ok = Dim(1 << 20) * Dim(1 << 20);
  ASSERT_TRUE(ok.is_const());
  EXPECT_EQ(ok.value(), int64_t{1} << 40);
  EXPECT_FALSE(ok.is_invalid());
  // Symbolic products overflow only when evaluated.
  Dim s = Dim::symbol("n") * Dim(k2to62);
  EXPECT_FALSE(s.is_invalid());
  EXPECT_EQ(s.evaluate({{"n", 1}}), k2to62);
  EXPECT_FALSE(s.evaluate({{"n", 4}}).has_value());
  EXPECT_FALSE(shape_numel({Dim(k2to62), Dim(2), Dim(2)}).is_const());
}

TEST(Checked, TensorAllocateReportsEveryFailure) {
  auto ok = Tensor::allocate(DataType::kFloat32, {3, 5});
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  EXPECT_NE(ok->data(), nullptr);
  EXPECT_EQ(ok->numel(), 15);

  auto wrap = Tensor::allocate(DataType::kFloat32, {k2to62, 4});
  ASSERT_FALSE(wrap.is_ok());
  EXPECT_EQ(wrap.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(wrap.status().message(), "64-bit")) << wrap.status().to_string();

  auto neg = Tensor::allocate(DataType::kFloat32, {2, -1});
  ASSERT_FALSE(neg.is_ok());
  EXPECT_TRUE(contains(neg.status().message(), "negative")) << neg.status().to_string();

  auto deep = Tensor::allocate(DataType::kFloat32, std::vector<int64_t>(kMaxRank + 1, 1));
  ASSERT_FALSE(deep.is_ok());
  EXPECT_TRUE(contains(deep.status().message(), "rank")) << deep.status().to_string();

  // 4 PiB: beyond any machine's memory, refused before asking the allocator.
  auto huge = Tensor::allocate(DataType::kFloat32, {int64_t{1} << 40, int64_t{1} << 10});
  ASSERT_FALSE(huge.is_ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kOutOfMemory);
  EXPECT_TRUE(contains(huge.status().message(), "float32[1099511627776,1024]")) << huge.status().to_string();
  EXPECT_THROW(Tensor::empty(DataType::kFloat32, {int64_t{1} << 40, int64_t{1} << 10}), std::bad_alloc);
}

// ---- scalar axes (F4, H1) ------------------------------------------------------------------------
TEST(Axis, ScalarHasNoAxes) {
  EXPECT_FALSE(normalize_axis(0, 0).is_ok());
  EXPECT_FALSE(normalize_axis(-1, 0).is_ok());
  EXPECT_TRUE(contains(normalize_axis(0, 0).status().message(), "scalar"));
  EXPECT_EQ(normalize_axis(1, 2).value(), 1);
  EXPECT_EQ(normalize_axis(-2, 2).value(), 0);
  EXPECT_FALSE(normalize_axis(2, 2).is_ok());
  EXPECT_FALSE(normalize_axis(-3, 2).is_ok());
}

TEST(Axis, OpsOnAScalarFailCleanlyNamingTheNode) {
  struct Case {
    const char* op;
    int num_inputs;
  };
  for (const Case& c : {Case{"Split", 1}, Case{"Squeeze", 1}, Case{"Concat", 2}, Case{"Compress", 1}}) {
    SCOPED_TRACE(c.op);
    OnnxModelBuilder m(13);
    m.input("x", DataType::kFloat32, {});
    std::vector<std::string> ins(static_cast<size_t>(c.num_inputs), "x");
    auto& n = m.node(c.op, ins, {"y"}, std::string("scalar_") + c.op);
    if (std::string(c.op) == "Squeeze") {
      m.initializer("axes", Tensor::vector_int64({0}));
      n.add_input("axes");
    } else {
      if (std::string(c.op) == "Compress") {
        m.initializer("cond", Tensor::from_doubles(DataType::kBool, {1}, {1}));
        n.add_input("cond");
      }
      OnnxModelBuilder::attr(n, "axis", int64_t{0});
    }
    m.output("y", DataType::kFloat32);
    auto e = build(m);
    ASSERT_FALSE(e.is_ok());
    EXPECT_EQ(e.status().node_name(), std::string("scalar_") + c.op) << e.status().to_string();
    EXPECT_TRUE(contains(e.status().message(), "scalar")) << e.status().to_string();
  }
}

// ---- rank bound and shape overflow (F3, H2, F5) ------------------------------------------------
TEST(Shapes, ShapeInputOfHugeDeclaredLengthIsRefusedQuickly) {
  OnnxModelBuilder m(13);
  m.input("x", DataType::kFloat32, {2});
  m.input("shape", DataType::kInt64, {1000000000000});
  m.node("Reshape", {"x", "shape"}, {"y"}, "bomb");
  m.output("y", DataType::kFloat32);
  auto t0 = std::chrono::steady_clock::now();
  auto e = build(m);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(e.is_ok());
  EXPECT_LT(s, 5.0);
  EXPECT_EQ(e.status().node_name(), "bomb");
  EXPECT_TRUE(contains(e.status().message(), "rank")) << e.status().to_string();
}

TEST(Shapes, WrappingReshapeAndOverflowingInitializerAreRefused) {
  {
    OnnxModelBuilder m(13);
    m.input("x", DataType::kFloat32, {3, 4});
    m.initializer("shape", Tensor::vector_int64({k2to62 + 3, 4}));  // wraps to 12 elements
    m.node("Reshape", {"x", "shape"}, {"y"}, "wrap");
    m.output("y", DataType::kFloat32);
    auto e = build(m);
    ASSERT_FALSE(e.is_ok());
    EXPECT_EQ(e.status().node_name(), "wrap") << e.status().to_string();
    EXPECT_TRUE(contains(e.status().message(), "64-bit")) << e.status().to_string();
  }
  {
    OnnxModelBuilder m(13);
    m.input("i", DataType::kInt64, {1});
    auto* w = m.model().mutable_graph()->add_initializer();
    w->set_name("W");
    w->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : {k2to62, int64_t{4}, int64_t{1}}) w->add_dims(d);
    w->set_raw_data("");  // numel wraps to 0, so 0 bytes "matched"
    m.node("Gather", {"W", "i"}, {"y"});
    m.output("y", DataType::kFloat32);
    auto e = build(m);
    ASSERT_FALSE(e.is_ok());
    EXPECT_TRUE(contains(e.status().message(), "'W'")) << e.status().to_string();
    EXPECT_TRUE(contains(e.status().message(), "64-bit")) << e.status().to_string();
  }
  {
    OnnxModelBuilder m(13);
    m.input("x", DataType::kFloat32, {k2to62, 4});
    m.node("Relu", {"x"}, {"y"});
    m.output("y", DataType::kFloat32);
    auto e = build(m);
    ASSERT_FALSE(e.is_ok());
    EXPECT_TRUE(contains(e.status().message(), "graph input 'x'")) << e.status().to_string();
  }
}

// ---- sizes checked before allocation (H3) and allocation failures at run (H4) --------------------
TEST(Sizes, DeclaredSizeIsCheckedAgainstTheBytesBeforeAllocating) {
  OnnxModelBuilder m(13);
  m.input("x", DataType::kFloat32, {1});
  auto* w = m.model().mutable_graph()->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(1000000);
  w->add_dims(1000000);  // 4 TB declared
  w->set_raw_data(std::string(16, '\0'));
  m.node("Add", {"x", "W"}, {"y"});
  m.output("y", DataType::kFloat32);
  auto e = build(m);
  ASSERT_FALSE(e.is_ok());
  EXPECT_TRUE(contains(e.status().message(), "needs 4000000000000 bytes but its raw_data has 16"))
      << e.status().to_string();

  w->clear_raw_data();
  w->add_float_data(1.f);
  auto typed = build(m);
  ASSERT_FALSE(typed.is_ok());
  EXPECT_TRUE(contains(typed.status().message(), "float_data holds 1")) << typed.status().to_string();

  // .pb tensor file: the same order.
  onnx::TensorProto p;
  p.set_name("t");
  p.set_data_type(onnx::TensorProto::FLOAT);
  p.add_dims(1000000);
  p.add_dims(1000000);
  p.set_raw_data(std::string(4, '\0'));
  auto pb = io::parse_tensor_pb(p.SerializeAsString(), "huge.pb");
  ASSERT_FALSE(pb.is_ok());
  EXPECT_TRUE(contains(pb.status().to_string(), "huge.pb")) << pb.status().to_string();
  EXPECT_TRUE(contains(pb.status().message(), "expected 4000000000000")) << pb.status().to_string();
}

TEST(Sizes, HugeRunTimeOutputIsAnOutOfMemoryErrorNamingTheNode) {
  OnnxModelBuilder m(13);
  m.input("x", DataType::kFloat32, {1});
  m.input("shape", DataType::kInt64, {2});
  m.node("Expand", {"x", "shape"}, {"y"}, "big_expand");
  m.output("y", DataType::kFloat32);
  auto e = build(m);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  Tensor x = Tensor::from_doubles(DataType::kFloat32, {1}, {1.0});
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{1000000, 1000000000}, std::vector<int64_t>{k2to62, 8}}) {
    std::map<std::string, Tensor> out;
    Status st = run_once(**e, {{"x", x}, {"shape", Tensor::vector_int64(shape)}}, &out);
    ASSERT_FALSE(st.is_ok());
    EXPECT_EQ(st.node_name(), "big_expand") << st.to_string();
  }
  // A caller's tensor whose byte count overflows is refused before anything is computed from it.
  {
    std::map<std::string, Tensor> out;
    float one = 1.f;
    Status st = run_once(**e, {{"x", Tensor::wrap(&one, DataType::kFloat32, {k2to62 + 1})},
                               {"shape", Tensor::vector_int64({1})}}, &out);
    ASSERT_FALSE(st.is_ok());
    EXPECT_TRUE(contains(st.message(), "input 'x'")) << st.to_string();
  }
  // Still usable afterwards.
  std::map<std::string, Tensor> out;
  ASSERT_TRUE(run_once(**e, {{"x", x}, {"shape", Tensor::vector_int64({2, 3})}}, &out).is_ok());
  EXPECT_EQ(out["y"].numel(), 6);
  EXPECT_EQ(out["y"].get(5), 1.0);
}

// ---- Range (C6, C7) --------------------------------------------------------------------------------
TEST(Range, IntegerExtremesAreExact) {
  OnnxModelBuilder m(13);
  m.input("a", DataType::kInt64, {});
  m.input("b", DataType::kInt64, {});
  m.input("d", DataType::kInt64, {});
  m.node("Range", {"a", "b", "d"}, {"y"});
  m.output("y", DataType::kInt64);
  auto e = build(m);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  std::map<std::string, Tensor> out;
  ASSERT_TRUE(run_once(**e, {{"a", Tensor::scalar_int64(lo)}, {"b", Tensor::scalar_int64(hi)},
                             {"d", Tensor::scalar_int64(k2to62)}}, &out).is_ok());
  EXPECT_EQ(out["y"].to_int64_vector(), (std::vector<int64_t>{lo, -k2to62, 0, k2to62}));
  out.clear();
  ASSERT_TRUE(run_once(**e, {{"a", Tensor::scalar_int64(hi)}, {"b", Tensor::scalar_int64(lo)},
                             {"d", Tensor::scalar_int64(lo)}}, &out).is_ok());
  EXPECT_EQ(out["y"].to_int64_vector(), (std::vector<int64_t>{hi, -1}));
  out.clear();
  Status st = run_once(**e, {{"a", Tensor::scalar_int64(lo)}, {"b", Tensor::scalar_int64(hi)},
                             {"d", Tensor::scalar_int64(1)}}, &out);
  ASSERT_FALSE(st.is_ok());
  EXPECT_TRUE(contains(st.message(), "Range")) << st.to_string();
}

TEST(Range, FloatLengthIsCheckedBeforeConversion) {
  OnnxModelBuilder m(13);
  for (const char* n : {"a", "b", "d"}) m.input(n, DataType::kFloat32, {});
  m.node("Range", {"a", "b", "d"}, {"y"}, "range");
  m.output("y", DataType::kFloat32);
  auto e = build(m);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  auto scalar = [](double v) { return Tensor::from_doubles(DataType::kFloat32, {}, {v}); };
  auto run = [&](double a, double b, double d, std::map<std::string, Tensor>* out) {
    return run_once(**e, {{"a", scalar(a)}, {"b", scalar(b)}, {"d", scalar(d)}}, out);
  };
  std::map<std::string, Tensor> out;
  ASSERT_TRUE(run(0, 10, -2.26e-41, &out).is_ok());  // the fuzzer's denormal: correctly empty
  EXPECT_EQ(out["y"].numel(), 0);
  out.clear();
  ASSERT_TRUE(run(0, 2, 0.5, &out).is_ok());
  EXPECT_EQ(out["y"].numel(), 4);
  EXPECT_EQ(out["y"].get(3), 1.5);
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  using Triple = std::tuple<double, double, double>;
  for (auto [a, b, d] : {Triple{0.0, 1e30, 1e-30}, Triple{0.0, inf, 1.0}, Triple{0.0, 1.0, nan}, Triple{-inf, 0.0, 1.0}}) {
    out.clear();
    Status st = run(a, b, d, &out);
    ASSERT_FALSE(st.is_ok()) << a << " " << b << " " << d;
    EXPECT_EQ(st.node_name(), "range") << st.to_string();
  }
}

// ---- external data confined to the model's directory (H5) -----------------------------------------
OnnxModelBuilder external_model(const std::string& location) {
  OnnxModelBuilder m(13);
  m.input("x", DataType::kUInt8, {4});
  auto* t = m.model().mutable_graph()->add_initializer();
  t->set_name("W");
  t->set_data_type(onnx::TensorProto::UINT8);
  t->add_dims(4);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* e = t->add_external_data();
  e->set_key("location");
  e->set_value(location);
  m.node("Add", {"x", "W"}, {"y"});
  m.output("y", DataType::kUInt8);
  return m;
}

TEST(ExternalData, LocationMustStayInsideTheModelDirectory) {
  TempDir d;
  fs::create_directories(d.path / "model" / "sub");
  std::ofstream(d.path / "secret.bin", std::ios::binary) << "SECR";
  std::ofstream(d.path / "model" / "sub" / "w.bin", std::ios::binary) << "good";
  std::error_code ec;
  fs::create_symlink(d.path / "secret.bin", d.path / "model" / "escape.bin", ec);
  ASSERT_FALSE(ec) << ec.message();
  fs::create_symlink(d.path / "model" / "sub" / "w.bin", d.path / "model" / "inside.bin", ec);
  ASSERT_FALSE(ec) << ec.message();
  fs::create_directory_symlink(d.path, d.path / "model" / "up", ec);
  ASSERT_FALSE(ec) << ec.message();

  auto import_with = [&](const std::string& location) {
    const std::string path = (d.path / "model" / "m.onnx").string();
    external_model(location).save(path);
    return import_onnx_file(path);
  };
  for (const std::string& ok : {std::string("sub/w.bin"), std::string("inside.bin"), std::string("./sub/w.bin")}) {
    auto g = import_with(ok);
    ASSERT_TRUE(g.is_ok()) << ok << ": " << g.status().to_string();
    EXPECT_EQ((*g)->find_value("W")->constant->get(0), 'g');
  }
  struct Bad {
    std::string location, words;
  };
  for (const Bad& b : {Bad{"/etc/passwd", "absolute"}, Bad{(d.path / "secret.bin").string(), "absolute"},
                       Bad{"../secret.bin", "'..'"}, Bad{"sub/../../secret.bin", "'..'"},
                       Bad{"escape.bin", "outside the model's directory"},
                       Bad{"up/secret.bin", "outside the model's directory"}, Bad{"sub", "not a regular file"},
                       Bad{std::string("sub/w.bin\0x", 11), "NUL"}}) {
    SCOPED_TRACE(b.location);
    auto g = import_with(b.location);
    ASSERT_FALSE(g.is_ok());
    const std::string msg = g.status().to_string();
    EXPECT_TRUE(contains(msg, "initializer 'W'")) << msg;
    EXPECT_TRUE(contains(msg, b.words)) << msg;
    EXPECT_FALSE(contains(msg, "SECR"));
  }
}

TEST(ExternalData, FuzzReproducersAreRefused) {
  for (const char* f : {"H5_external_data_abs_path.onnx", "H5_external_data_dotdot.onnx"}) {
    SCOPED_TRACE(f);
    auto e = Engine::build_from_onnx_file(std::string(GRAFT_SOURCE_DIR) + "/tests/data/fuzz_regressions/" + f,
                                          BuilderConfig{});
    ASSERT_FALSE(e.is_ok());
    EXPECT_TRUE(contains(e.status().message(), "initializer 'W'")) << e.status().to_string();
    EXPECT_TRUE(contains(e.status().message(), "etc/passwd")) << e.status().to_string();
  }
}

// ---- names and JSON (F1, F2) ---------------------------------------------------------------------
// ---- float -> integer conversions of values from files (UBSan; FZ6) ------------------------------
// Values that come from a model or its inputs (Resize scales and roi, float indices and depths,
// Cast of out-of-range floats) are converted without undefined behaviour: checked where they
// become shapes, saturated where they become data.
TEST(FloatToInt, HugeOrNaNValuesAreErrorsOrSaturatedNeverUB) {
  EXPECT_EQ(checked_int64(1e30), std::nullopt);
  EXPECT_EQ(checked_int64(std::nan("")), std::nullopt);
  EXPECT_EQ(checked_int64(-9223372036854775808.0), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(checked_int64(-2.9), -2);
  EXPECT_EQ(saturating_int64(1e30), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(saturating_int64(-1e30), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(saturating_int64(std::nan("")), 0);
  // Cast: NaN -> 0, beyond the range -> saturated, then the low bits for narrower types.
  Tensor f = Tensor::from_doubles(DataType::kFloat32, {4}, {std::nan(""), 1e30, -1e30, -3.0});
  EXPECT_EQ(f.cast(DataType::kInt64)->to_int64_vector(),
            (std::vector<int64_t>{0, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), -3}));
  EXPECT_EQ(f.cast(DataType::kUInt8)->to_int64_vector(), (std::vector<int64_t>{0, 255, 0, 253}));
  EXPECT_EQ(f.to_int64_vector()[1], std::numeric_limits<int64_t>::max());
}

TEST(FloatToInt, ResizeToAnExtentBeyondInt64IsAnError) {
  OnnxModelBuilder m(13);
  m.input("x", DataType::kFloat32, {1, 1, 2, 2});
  m.initializer("roi", Tensor::empty(DataType::kFloat32, {0}));
  m.initializer("scales", Tensor::from_doubles(DataType::kFloat32, {4}, {1.0, 1.0, 1e30, 1.0}));
  m.node("Resize", {"x", "roi", "scales"}, {"y"});
  m.output("y", DataType::kFloat32);
  auto e = build(m);
  ASSERT_FALSE(e.is_ok());
  EXPECT_TRUE(contains(e.status().to_string(), "would resize to an extent of")) << e.status().to_string();
}

TEST(FloatToInt, OneHotDepthMustBeAPositiveIntegerInRange) {
  for (double depth : {std::nan(""), 1e30, 0.5}) {
    OnnxModelBuilder m(13);
    m.input("i", DataType::kInt64, {3});
    m.input("depth", DataType::kFloat32, {});
    m.initializer("values", Tensor::from_doubles(DataType::kFloat32, {2}, {0.0, 1.0}));
    m.node("OneHot", {"i", "depth", "values"}, {"y"});
    m.output("y", DataType::kFloat32);
    auto e = build(m);
    if (!e.is_ok()) continue;  // refused at build: fine too
    std::map<std::string, Tensor> out;
    Status st = run_once(**e, {{"i", Tensor::vector_int64({0, 1, std::numeric_limits<int64_t>::max()})},
                               {"depth", Tensor::from_doubles(DataType::kFloat32, {}, {depth})}}, &out);
    ASSERT_FALSE(st.is_ok()) << depth;
    EXPECT_TRUE(contains(st.to_string(), "depth")) << st.to_string();
  }
}

TEST(FloatToInt, IntegerModOfTheMinimumByMinusOneIsZero) {
  OnnxModelBuilder m(13);
  m.input("a", DataType::kInt64, {2});
  m.input("b", DataType::kInt64, {2});
  m.node("Mod", {"a", "b"}, {"y"});
  m.output("y", DataType::kInt64);
  auto e = build(m);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  std::map<std::string, Tensor> out;
  const int64_t lo = std::numeric_limits<int64_t>::min();
  ASSERT_TRUE(run_once(**e, {{"a", Tensor::vector_int64({lo, -7})}, {"b", Tensor::vector_int64({-1, 3})}}, &out)
                  .is_ok());
  EXPECT_EQ(out["y"].to_int64_vector(), (std::vector<int64_t>{0, 2}));  // Python semantics: -7 mod 3 = 2
}

// Names and keys from files may hold newlines or terminal escapes; an error quoting them stays one
// line (found by fuzz_tensor_file_read and fuzz_timing_cache_parse: FZ2, FZ3).
TEST(OneLineErrors, ControlCharactersAreEscapedInEveryPart) {
  Status s = error(StatusCode::kInvalidModel, "key 'a\nb\rc\td\x1b[31m\x7f' is bad");
  s.with_file("dir/x\ny.onnx").with_node("n\n1", "Op\n").with_attribute("at\ntr");
  EXPECT_EQ(s.message(), "key 'a\\nb\\rc\\td\\x1b[31m\\x7f' is bad");
  EXPECT_EQ(s.to_string().find('\n'), std::string::npos) << s.to_string();
  EXPECT_EQ(s.to_string().find('\x1b'), std::string::npos) << s.to_string();
  EXPECT_NE(s.to_string().find("dir/x\\ny.onnx: node 'n\\n1' (Op\\n): attribute 'at\\ntr'"), std::string::npos)
      << s.to_string();
  // graft's indented list lines stay (the importer's unsupported-op list); a bare newline does not.
  EXPECT_EQ(error(StatusCode::kUnsupported, "ops:\n  A\n  B\nC\n").message(), "ops:\n  A\n  B\\nC\\n");
  // UTF-8 text is kept as it is.
  EXPECT_EQ(error(StatusCode::kInvalidModel, "caf\xc3\xa9 \xe2\x9c\x93").message(), "caf\xc3\xa9 \xe2\x9c\x93");
}

TEST(Utf8, InvalidNamesAreRefusedAtImportNamingWhere) {
  OnnxModelBuilder m(13);
  m.input("x", DataType::kFloat32, {2});
  m.node("Relu", {"x"}, {"y"}, std::string("re\xff\xfelu"));
  m.output("y", DataType::kFloat32);
  auto e = build(m);
  ASSERT_FALSE(e.is_ok());
  EXPECT_TRUE(contains(e.status().message(), "node 0")) << e.status().to_string();
  EXPECT_TRUE(contains(e.status().message(), "re\\xff\\xfelu")) << e.status().to_string();
  EXPECT_TRUE(contains(e.status().message(), "UTF-8")) << e.status().to_string();
}

TEST(Utf8, ValidUnicodeNamesRoundTripAndJsonNeverThrows) {
  const std::string in = "x\xc3\x9f", out = "y\xe5\xb1\x82";  // "xß", "y层"
  OnnxModelBuilder m(13);
  m.input(in, DataType::kFloat32, {"n\xc3\xa4", 3});
  // (Attribute values of any bytes: Utf8.AttributeSerializationKeepsAnyBytes. Relu has no attribute
  // to carry one, and an unknown one is refused at import.)
  m.node("Relu", {in}, {out}, "relu\xe2\x9c\x93");
  m.output(out, DataType::kFloat32);
  BuilderConfig c;
  c.profile[in] = ProfileRange{{1, 3}, {2, 3}, {4, 3}};
  // A source path that is not UTF-8 (Linux file names are bytes).
  auto e = Engine::build_from_onnx_bytes(m.bytes(), c, "mod\xff" "el.onnx");
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  std::string json;
  ASSERT_NO_THROW(json = (*e)->describe_json());
  auto j = nlohmann::json::parse(json, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["inputs"][0]["name"], in);
  auto bytes = (*e)->serialize();
  ASSERT_TRUE(bytes.is_ok()) << bytes.status().to_string();
  auto again = Engine::deserialize(*bytes, "unicode.plan");
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_EQ((*again)->inputs().at(0).name, in);
  ASSERT_TRUE((*again)->inputs().at(0).profile.has_value()) << "the profile is keyed by the UTF-8 name";
  EXPECT_EQ((*again)->inputs().at(0).profile->max, (std::vector<int64_t>{4, 3}));
  std::map<std::string, Tensor> outs;
  ASSERT_TRUE(run_once(**again, {{in, Tensor::from_doubles(DataType::kFloat32, {1, 3}, {-1, 0, 2})}}, &outs).is_ok());
  EXPECT_EQ(outs.at(out).get(2), 2.0);
}

TEST(Utf8, AttributeSerializationKeepsAnyBytes) {
  const std::string binary("\xff\x00z\xc3", 4), unicode = "\xc3\x9f\xe5\xb1\x82";
  const std::vector<std::string> mixed = {"ok", std::string("\xfe\xfd", 2), unicode};
  AttributeMap a;
  a.set("binary", binary);
  a.set("unicode", unicode);
  a.set("mixed", mixed);
  a.set("plain", std::vector<std::string>{"a", "b"});
  std::string text;
  ASSERT_NO_THROW(text = serialize_attributes(a));
  ASSERT_FALSE(nlohmann::json::parse(text, nullptr, false).is_discarded());
  auto back = deserialize_attributes(text);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(back->get_string("binary", "").value(), binary);
  EXPECT_EQ(back->get_string("unicode", "").value(), unicode);
  EXPECT_EQ(back->get_strings("mixed", {}).value(), mixed);
  EXPECT_EQ(back->get_strings("plain", {}).value(), (std::vector<std::string>{"a", "b"}));
}

// ---- plans: unknown device (and the CRC helper the test needs) ----------------------------------
uint32_t crc32_of(const std::string& s) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return c ^ 0xFFFFFFFFu;
}

// Replaces `from` by `to` (same length) in the plan's payload and fixes the checksum, so that
// the loader itself, not the CRC, must reject the change.
std::string patch_plan(std::string plan, const std::string& from, const std::string& to) {
  uint32_t ver_len = 0;
  std::memcpy(&ver_len, plan.data() + 12, 4);
  const size_t crc_at = 16 + ver_len + 8, payload_at = crc_at + 4;
  const size_t pos = plan.find(from, payload_at);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos == std::string::npos) return plan;
  plan.replace(pos, from.size(), to);
  // Format 2: the checksum covers every byte but its own (the header before it, then the payload).
  const uint32_t crc = crc32_of(plan.substr(0, crc_at) + plan.substr(payload_at));
  std::memcpy(plan.data() + crc_at, &crc, 4);
  return plan;
}

TEST(PlanDevice, UnknownDeviceIsRefusedNamingPlanAndDevice) {
  OnnxModelBuilder m(13);
  m.input("x", DataType::kFloat32, {2});
  m.node("Relu", {"x"}, {"y"});
  m.output("y", DataType::kFloat32);
  auto e = build(m);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  std::string plan = *(*e)->serialize();
  ASSERT_TRUE(Engine::deserialize(patch_plan(plan, "\"device\":\"cpu\"", "\"device\":\"cpu\""), "same.plan").is_ok())
      << "patching with the same text must keep the plan loadable (checksum recomputed correctly)";
  auto tpu = Engine::deserialize(patch_plan(plan, "\"device\":\"cpu\"", "\"device\":\"tpu\""), "tpu.plan");
  ASSERT_FALSE(tpu.is_ok());
  EXPECT_TRUE(contains(tpu.status().to_string(), "tpu.plan")) << tpu.status().to_string();
  EXPECT_TRUE(contains(tpu.status().message(), "'tpu'")) << tpu.status().to_string();
}

// ---- files: directories, non-regular targets, temporaries ---------------------------------------
TEST(Files, DirectoryAsModelPlanOrTensorFileIsAClearError) {
  TempDir d;
  const std::string dir = d.path.string();
  auto g = import_onnx_file(dir);
  ASSERT_FALSE(g.is_ok());
  EXPECT_TRUE(contains(g.status().to_string(), "directory")) << g.status().to_string();
  auto p = Engine::load_plan(dir);
  ASSERT_FALSE(p.is_ok());
  EXPECT_TRUE(contains(p.status().to_string(), "directory")) << p.status().to_string();
  auto t = io::read_tensor_file(dir);
  ASSERT_FALSE(t.is_ok());
  EXPECT_TRUE(contains(t.status().to_string(), dir)) << t.status().to_string();
  EXPECT_TRUE(contains(t.status().to_string(), "directory")) << t.status().to_string();
}

TEST(Files, AtomicWriteRefusesNonRegularTargetsAndLeavesNoTemporaries) {
  TempDir d;
  fs::create_directory(d.path / "adir.plan");
  Status st = io::write_file_atomic((d.path / "adir.plan").string(), "bytes");
  ASSERT_FALSE(st.is_ok());
  EXPECT_TRUE(fs::is_directory(d.path / "adir.plan"));
  if (fs::exists("/dev/null")) {
    // Refused before any temporary is created (so /dev is never written to).
    Status dev = io::write_file_atomic("/dev/null", "bytes");
    ASSERT_FALSE(dev.is_ok());
    EXPECT_TRUE(contains(dev.to_string(), "/dev/null")) << dev.to_string();
    EXPECT_TRUE(fs::is_character_file("/dev/null"));
  }
  for (const auto& entry : fs::directory_iterator(d.path))
    EXPECT_FALSE(contains(entry.path().filename().string(), ".tmp.")) << entry.path();
}

TEST(Files, StaleTemporariesOfDeadWritersAreRemovedOnTheNextWrite) {
  TempDir d;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);  // reaped: this pid is no longer alive
  const fs::path target = d.path / "model.plan";
  const fs::path dead = d.path / ("model.plan.tmp." + std::to_string(child) + ".3");
  const fs::path live = d.path / ("model.plan.tmp." + std::to_string(::getpid()) + ".999");
  const fs::path other = d.path / "other.plan.tmp.1.0";
  const fs::path not_ours = d.path / ("model.plan.tmp." + std::to_string(child) + ".x");
  for (const auto& p : {dead, live, other, not_ours}) std::ofstream(p) << "partial";
  ASSERT_TRUE(io::write_file_atomic(target.string(), "PLAN").is_ok());
  EXPECT_FALSE(fs::exists(dead)) << "a dead writer's temporary is removed";
  EXPECT_TRUE(fs::exists(live)) << "a live process's temporary may be mid-write";
  EXPECT_TRUE(fs::exists(other)) << "another target's temporaries are not touched";
  EXPECT_TRUE(fs::exists(not_ours)) << "only exact <name>.tmp.<pid>.<n> names are removed";
  std::ifstream in(target);
  std::string s;
  in >> s;
  EXPECT_EQ(s, "PLAN");
}

// ---- outputs own their memory (P2) ------------------------------------------------------------------
TEST(Ownership, OutputThatIsAnInputOrAViewOfOneIsACopy) {
  OnnxModelBuilder m(13);
  m.input("x", DataType::kFloat32, {4, 6});
  m.initializer("shape", Tensor::vector_int64({6, 4}));
  m.node("Reshape", {"x", "shape"}, {"v"});
  m.output("x", DataType::kFloat32);
  m.output("v", DataType::kFloat32);
  auto e = build(m);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  std::mt19937 rng(std::random_device{}());
  std::vector<float> buffer(24);
  for (float& f : buffer) f = std::uniform_real_distribution<float>(-1, 1)(rng);
  const std::vector<float> expected = buffer;
  std::map<std::string, Tensor> out;
  ASSERT_TRUE(run_once(**e, {{"x", Tensor::wrap(buffer.data(), DataType::kFloat32, {4, 6})}}, &out).is_ok());
  for (const char* name : {"x", "v"}) {
    const char* p = static_cast<const char*>(out.at(name).data());
    const char* lo = reinterpret_cast<const char*>(buffer.data());
    EXPECT_TRUE(p + out.at(name).nbytes() <= lo || p >= lo + buffer.size() * sizeof(float))
        << "output '" << name << "' aliases the caller's input buffer";
  }
  std::fill(buffer.begin(), buffer.end(), -7.f);  // the caller reuses (or frees) its buffer
  for (int i = 0; i < 24; ++i) {
    EXPECT_EQ(out.at("x").data_as<float>()[i], expected[i]);
    EXPECT_EQ(out.at("v").data_as<float>()[i], expected[i]);
  }
}

// ---- threads ---------------------------------------------------------------------------------------
TEST(Threads, OneEngineFrom8ThreadsIsBitExact) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  OnnxModelBuilder m(13);
  m.input("x", DataType::kFloat32, {"n", 3, 12, 12});
  m.initializer("w", random_tensor(DataType::kFloat32, {4, 3, 3, 3}, rng));
  m.initializer("b", random_tensor(DataType::kFloat32, {4}, rng));
  auto& conv = m.node("Conv", {"x", "w", "b"}, {"c"});
  OnnxModelBuilder::attr(conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
  m.node("Relu", {"c"}, {"r"});
  auto& pool = m.node("MaxPool", {"r"}, {"p"});
  OnnxModelBuilder::attr(pool, "kernel_shape", std::vector<int64_t>{2, 2});
  OnnxModelBuilder::attr(pool, "strides", std::vector<int64_t>{2, 2});
  m.node("Flatten", {"p"}, {"f"});
  auto& sm = m.node("Softmax", {"f"}, {"y"});
  OnnxModelBuilder::attr(sm, "axis", int64_t{1});
  m.output("y", DataType::kFloat32);
  BuilderConfig c;
  c.profile["x"] = ProfileRange{{1, 3, 12, 12}, {2, 3, 12, 12}, {4, 3, 12, 12}};
  auto e = Engine::build_from_onnx_bytes(m.bytes(), c, "threads.onnx");
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  const Engine& engine = **e;
  constexpr int kThreads = 8, kRuns = 300;
  std::vector<Tensor> inputs, want;
  for (int t = 0; t < kThreads; ++t) {
    inputs.push_back(random_tensor(DataType::kFloat32, {1 + t % 4, 3, 12, 12}, rng));
    std::map<std::string, Tensor> out;
    ASSERT_TRUE(run_once(engine, {{"x", inputs.back()}}, &out).is_ok());
    want.push_back(out.at("y"));
  }
  auto shared_ctx = engine.create_context();
  ASSERT_TRUE(shared_ctx.is_ok());
  for (bool shared : {false, true}) {
    SCOPED_TRACE(shared ? "one shared CPU context" : "one context per thread");
    std::vector<std::string> failures(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        std::unique_ptr<ExecutionContext> own;
        ExecutionContext* ctx = shared_ctx->get();
        if (!shared) {
          auto c2 = engine.create_context();
          if (!c2) { failures[t] = c2.status().to_string(); return; }
          own = std::move(c2).value();
          ctx = own.get();
        }
        for (int i = 0; i < kRuns; ++i) {
          std::map<std::string, Tensor> out;
          Status st = ctx->run({{"x", inputs[t]}}, out);
          if (!st) { failures[t] = st.to_string(); return; }
          const Tensor& y = out.at("y");
          if (y.dims() != want[t].dims() || std::memcmp(y.data(), want[t].data(), y.nbytes()) != 0) {
            failures[t] = "run " + std::to_string(i) + " differs from the single-threaded result";
            return;
          }
        }
      });
    for (auto& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
  }
}

// ---- MaxPool: the separable values path equals the per-window walk (C1) ---------------------------
TEST(MaxPool, SeparableValuesMatchTheWindowWalkBitForBit) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  struct Config {
    std::vector<int64_t> in, kernel, strides, dilations, pads;
    int64_t ceil_mode;
    const char* auto_pad;
  };
  const std::vector<Config> configs = {
      {{2, 3, 9, 11}, {3, 2}, {1, 2}, {1, 1}, {1, 0, 1, 1}, 0, "NOTSET"},
      {{1, 2, 13, 10}, {3, 4}, {2, 1}, {2, 3}, {2, 1, 2, 3}, 1, "NOTSET"},
      {{1, 1, 17}, {5}, {3}, {2}, {4, 4}, 1, "NOTSET"},  // windows entirely in padding
      {{1, 2, 5, 6, 7}, {2, 3, 2}, {1, 2, 2}, {2, 1, 1}, {1, 1, 0, 0, 1, 1}, 0, "NOTSET"},
      {{2, 2, 8, 9}, {3, 3}, {2, 2}, {1, 1}, {}, 0, "SAME_UPPER"},
  };
  for (const Config& c : configs) {
    Tensor x = random_tensor(DataType::kFloat32, c.in, rng, -2, 2);
    // Ties (+0/-0, repeated values), NaNs and infinities exercise the order-sensitive cases.
    for (int64_t i = 0; i < x.numel(); ++i) {
      const uint32_t r = rng() % 16;
      if (r == 0) x.set(i, std::nan(""));
      else if (r == 1) x.set(i, -0.0);
      else if (r == 2) x.set(i, 0.0);
      else if (r == 3) x.set(i, -INFINITY);
      else if (r == 4) x.set(i, 1.0);
    }
    std::vector<Tensor> ys;
    for (bool with_indices : {false, true}) {
      OnnxModelBuilder m(13);
      std::vector<testing::DimSpec> dims(c.in.begin(), c.in.end());
      m.input("x", DataType::kFloat32, dims);
      auto& n = m.node("MaxPool", {"x"}, with_indices ? std::vector<std::string>{"y", "i"} : std::vector<std::string>{"y"});
      OnnxModelBuilder::attr(n, "kernel_shape", c.kernel);
      OnnxModelBuilder::attr(n, "strides", c.strides);
      OnnxModelBuilder::attr(n, "dilations", c.dilations);
      if (!c.pads.empty()) OnnxModelBuilder::attr(n, "pads", c.pads);
      OnnxModelBuilder::attr(n, "ceil_mode", c.ceil_mode);
      OnnxModelBuilder::attr(n, "auto_pad", c.auto_pad);
      m.output("y", DataType::kFloat32);
      if (with_indices) m.output("i", DataType::kInt64);
      auto e = build(m);
      ASSERT_TRUE(e.is_ok()) << e.status().to_string();
      std::map<std::string, Tensor> out;
      ASSERT_TRUE(run_once(**e, {{"x", x}}, &out).is_ok());
      ys.push_back(out.at("y"));
    }
    ASSERT_EQ(ys[0].dims(), ys[1].dims());
    EXPECT_EQ(std::memcmp(ys[0].data(), ys[1].data(), ys[0].nbytes()), 0)
        << "MaxPool values differ between the separable and the per-window path";
  }
}

}  // namespace
}  // namespace graft
