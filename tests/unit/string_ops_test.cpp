// String tensors on the CPU engine: storage (construction, copies, poison), Cast to and from text,
// StringNormalizer, the refusal of strings by every other op, plans, and the .npy/.pb readers.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "graft/engine.h"
#include "io/tensor_io.h"
#include "tests/unit/onnx_model_builder.h"

namespace graft {
namespace {

using testing::OnnxModelBuilder;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::vector<std::string> strings(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DataType::kString);
  if (t.dtype() != DataType::kString) return {};
  return std::vector<std::string>(t.data_as<std::string>(), t.data_as<std::string>() + t.numel());
}

Result<std::map<std::string, Tensor>> run(const OnnxModelBuilder& m, const std::map<std::string, Tensor>& in,
                                          bool through_plan = false) {
  GRAFT_ASSIGN_OR_RETURN(auto engine, Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, "strings.onnx"));
  if (through_plan) {
    GRAFT_ASSIGN_OR_RETURN(std::string plan, engine->serialize());
    GRAFT_ASSIGN_OR_RETURN(engine, Engine::deserialize(plan, "strings.plan"));
  }
  GRAFT_ASSIGN_OR_RETURN(auto ctx, engine->create_context());
  std::map<std::string, Tensor> out;
  GRAFT_RETURN_IF_ERROR(ctx->run(in, out));
  return out;
}

// ---- storage ----------------------------------------------------------------------------------

TEST(StringTensor, HoldsStringsThatCopiesDoNotShare) {
  Tensor a = Tensor::from_strings({2, 2}, {"a", std::string(100, 'x'), "", "\xc3\xa9t\xc3\xa9"});
  EXPECT_EQ(a.nbytes(), 4 * sizeof(std::string));
  Tensor b = a.clone();
  b.data_as<std::string>()[1] = "changed";
  EXPECT_EQ(strings(a)[1], std::string(100, 'x'));  // a deep copy, not the same std::string objects
  auto c = a.try_clone();
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(strings(*c), strings(a));
  Tensor d = Tensor::empty(DataType::kString, {2, 2});
  EXPECT_EQ(strings(d), std::vector<std::string>(4, ""));  // constructed, not raw memory
  ASSERT_TRUE(d.copy_data_from(a).is_ok());
  EXPECT_EQ(strings(d), strings(a));
  d.poison();
  EXPECT_EQ(strings(d), std::vector<std::string>(4, Tensor::kPoisonString));
  EXPECT_FALSE(d.copy_data_from(Tensor::empty(DataType::kString, {3})).is_ok());
  EXPECT_FALSE(d.copy_data_from(Tensor::empty(DataType::kInt64, {4})).is_ok());
  auto gpu = Tensor::allocate(DataType::kString, {2}, DeviceType::kCUDA);
  ASSERT_FALSE(gpu.is_ok());
  EXPECT_TRUE(contains(gpu.status().message(), "CPU engine only")) << gpu.status().to_string();
  EXPECT_FALSE(a.cast(DataType::kFloat32).is_ok());  // text converts through the Cast op only
}

// Equality by text: two tensors holding the same strings in distinct std::string objects (whose
// bytes differ: each points at its own buffer) are the same; one changed character is not.
TEST(StringTensor, SameContentsComparesText) {
  const std::vector<std::string> text = {"", "short", std::string(64, 'q')};
  Tensor a = Tensor::from_strings({3}, text), b = Tensor::from_strings({3}, text);
  EXPECT_TRUE(a.same_contents(b));
  b.data_as<std::string>()[2].back() = 'r';
  EXPECT_FALSE(a.same_contents(b));
  EXPECT_FALSE(a.same_contents(Tensor::from_strings({1, 3}, text)));  // same text, other dims
  Tensor f = Tensor::empty(DataType::kFloat32, {2}), g = Tensor::empty(DataType::kFloat32, {2});
  f.poison();
  g.poison();
  EXPECT_TRUE(f.same_contents(g));  // bit for bit: equal NaN patterns are the same
  g.set(1, 0.5);
  EXPECT_FALSE(f.same_contents(g));
  // Containers compare item by item.
  auto s1 = Tensor::sequence(DataType::kString, {a, a}), s2 = Tensor::sequence(DataType::kString, {a, b});
  auto s3 = Tensor::sequence(DataType::kString, {a.clone(), a.clone()});
  ASSERT_TRUE(s1.is_ok() && s2.is_ok() && s3.is_ok());
  EXPECT_TRUE(s1->same_contents(*s3));
  EXPECT_FALSE(s1->same_contents(*s2));
  EXPECT_FALSE(s1->same_contents(a));
}

TEST(StringTensor, DtypeNamesAndOnnxCode) {
  DataType t;
  ASSERT_TRUE(dtype_from_onnx(8, &t));
  EXPECT_EQ(t, DataType::kString);
  EXPECT_STREQ(dtype_name(DataType::kString), "string");
  ASSERT_TRUE(dtype_from_name("string", &t));
  EXPECT_FALSE(dtype_is_float(DataType::kString));
  EXPECT_FALSE(dtype_is_integer(DataType::kString));
}

// ---- Cast -------------------------------------------------------------------------------------

OnnxModelBuilder round_trip_model(DataType from, int64_t n) {
  OnnxModelBuilder m(13);
  m.input("x", from, {n});
  OnnxModelBuilder::attr(m.node("Cast", {"x"}, {"s"}), "to", int64_t{8});
  OnnxModelBuilder::attr(m.node("Cast", {"s"}, {"y"}), "to", static_cast<int64_t>(from));
  m.output("s", DataType::kString);
  m.output("y", from);
  return m;
}

TEST(StringCast, FloatsBecomeTheShortestTextThatReadsBackExactly) {
  std::mt19937 rng(std::random_device{}());
  const int64_t n = 64;
  Tensor x = Tensor::empty(DataType::kFloat32, {n});
  auto* v = x.data_as<float>();
  for (int64_t i = 0; i < n; ++i) {  // fresh values across magnitudes, signs and the special ones
    const float mant = std::uniform_real_distribution<float>(-1.f, 1.f)(rng);
    v[i] = std::ldexp(mant, std::uniform_int_distribution<int>(-140, 120)(rng));
  }
  v[0] = std::numeric_limits<float>::quiet_NaN();
  v[1] = std::numeric_limits<float>::infinity();
  v[2] = -std::numeric_limits<float>::infinity();
  v[3] = 0.039187793f;  // from ONNX's cast test data: float32's shortest text, not double's
  v[4] = 0.f;
  auto out = run(round_trip_model(DataType::kFloat32, n), {{"x", x}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const auto s = strings(out->at("s"));
  EXPECT_EQ(s[0], "NaN");
  EXPECT_EQ(s[1], "INF");
  EXPECT_EQ(s[2], "-INF");
  EXPECT_EQ(s[3], "0.039187793");
  EXPECT_EQ(s[4], "0");
  const float* y = out->at("y").data_as<float>();
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(v[i])) {
      EXPECT_TRUE(std::isnan(y[i]));
      continue;
    }
    EXPECT_EQ(std::memcmp(&y[i], &v[i], sizeof(float)), 0) << i << ": " << v[i] << " -> '" << s[i] << "' -> " << y[i];
    // strtof agrees, and the text is no longer than printf's 9 significant digits (float's
    // round-trip bound) would make it.
    EXPECT_EQ(std::strtof(s[i].c_str(), nullptr), v[i]) << s[i];
    char nine[64];
    std::snprintf(nine, sizeof nine, "%.9g", static_cast<double>(v[i]));
    EXPECT_LE(s[i].size(), std::strlen(nine)) << s[i] << " against " << nine;
  }
}

TEST(StringCast, IntegersAndBoolsAsDecimalText) {
  Tensor x = Tensor::empty(DataType::kInt64, {4});
  std::mt19937_64 rng(std::random_device{}());
  for (int64_t i = 0; i < 4; ++i) x.data_as<int64_t>()[i] = static_cast<int64_t>(rng());
  x.data_as<int64_t>()[0] = std::numeric_limits<int64_t>::min();
  auto out = run(round_trip_model(DataType::kInt64, 4), {{"x", x}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(strings(out->at("s"))[i], std::to_string(x.data_as<int64_t>()[i]));
    EXPECT_EQ(out->at("y").data_as<int64_t>()[i], x.data_as<int64_t>()[i]);
  }
  Tensor b = Tensor::from_doubles(DataType::kBool, {2}, {1, 0});
  auto bo = run(round_trip_model(DataType::kBool, 2), {{"x", b}});
  ASSERT_TRUE(bo.is_ok()) << bo.status().to_string();
  EXPECT_EQ(strings(bo->at("s")), (std::vector<std::string>{"1", "0"}));
  EXPECT_EQ(bo->at("y").data_as<uint8_t>()[0], 1);
  EXPECT_EQ(bo->at("y").data_as<uint8_t>()[1], 0);
}

OnnxModelBuilder from_text_model(DataType to, int64_t n) {
  OnnxModelBuilder m(13);
  m.input("s", DataType::kString, {n});
  OnnxModelBuilder::attr(m.node("Cast", {"s"}, {"y"}, "parse"), "to", static_cast<int64_t>(to));
  m.output("y", to);
  return m;
}

TEST(StringCast, TextReadsAsNumbersByTheTargetType) {
  const std::vector<std::string> text = {"12", "-3", "+7", "1e3", "2.9", "-2.9", "  ", "300"};
  // "  " is not a number: checked separately below.
  std::vector<std::string> good = text;
  good.erase(good.begin() + 6);
  auto i32 = run(from_text_model(DataType::kInt32, 7), {{"s", Tensor::from_strings({7}, good)}});
  ASSERT_TRUE(i32.is_ok()) << i32.status().to_string();
  const int32_t* y = i32->at("y").data_as<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(y, y + 7), (std::vector<int32_t>{12, -3, 7, 1000, 2, -2, 300}));
  auto u8 = run(from_text_model(DataType::kUInt8, 7), {{"s", Tensor::from_strings({7}, good)}});
  ASSERT_TRUE(u8.is_ok()) << u8.status().to_string();
  EXPECT_EQ(u8->at("y").data_as<uint8_t>()[6], 300 % 256);  // low bits, as a numeric int64 -> uint8 Cast
  auto f = run(from_text_model(DataType::kFloat32, 5),
               {{"s", Tensor::from_strings({5}, {"NaN", "INF", "+INF", "-inf", "1E-3"})}});
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  const float* fy = f->at("y").data_as<float>();
  EXPECT_TRUE(std::isnan(fy[0]));
  EXPECT_EQ(fy[1], INFINITY);
  EXPECT_EQ(fy[2], INFINITY);
  EXPECT_EQ(fy[3], -INFINITY);
  EXPECT_EQ(fy[4], 1e-3f);
  auto b = run(from_text_model(DataType::kBool, 4), {{"s", Tensor::from_strings({4}, {"true", "False", "0", "2.5"})}});
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  const uint8_t* by = b->at("y").data_as<uint8_t>();
  EXPECT_EQ(std::vector<int>(by, by + 4), (std::vector<int>{1, 0, 0, 1}));
  for (const char* bad : {"  ", "abc", "1.5x", "--1", ""}) {
    auto r = run(from_text_model(DataType::kFloat32, 1), {{"s", Tensor::from_strings({1}, {bad})}});
    ASSERT_FALSE(r.is_ok()) << bad;
    EXPECT_TRUE(contains(r.status().to_string(), "parse")) << r.status().to_string();  // names the node
    EXPECT_TRUE(contains(r.status().to_string(), "'" + std::string(bad) + "'")) << r.status().to_string();
  }
}

// ---- RegexFullMatch ---------------------------------------------------------------------------

// RegexFullMatch shares compiled patterns across nodes, runs and threads through a bounded cache
// (src/ops/strings/regex_full_match.cpp). Many more engines than it holds, each with its own pattern,
// run in turn and from several threads: each must match with its own pattern every time, whether its
// pattern is still cached or was evicted and compiled again.
TEST(RegexFullMatch, ManyPatternsAcrossEnginesAndThreadsEachMatchTheirOwn) {
  constexpr int kPatterns = 48;  // more than the cache keeps
  std::vector<std::shared_ptr<Engine>> engines;
  for (int k = 1; k <= kPatterns; ++k) {
    OnnxModelBuilder m(20, 9);
    m.input("x", DataType::kString, {kPatterns});
    auto& n = m.node("RegexFullMatch", {"x"}, {"y"}, "match");
    OnnxModelBuilder::attr(n, "pattern", "w{" + std::to_string(k) + "}");
    m.output("y", DataType::kBool);
    auto e = Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, "regex.onnx");
    ASSERT_TRUE(e.is_ok()) << e.status().to_string();
    engines.push_back(std::move(*e));
  }
  std::vector<std::string> words;  // words[i] is i + 1 w's, so pattern k matches word k - 1 only
  for (int i = 1; i <= kPatterns; ++i) words.push_back(std::string(static_cast<size_t>(i), 'w'));
  const Tensor x = Tensor::from_strings({kPatterns}, words);
  // Pattern k's result: true at word k - 1 only. An empty string when it is, else what went wrong.
  auto check = [&](int k) -> std::string {
    auto ctx = engines[static_cast<size_t>(k - 1)]->create_context();
    if (!ctx.is_ok()) return ctx.status().to_string();
    std::map<std::string, Tensor> out;
    if (Status st = (*ctx)->run({{"x", x}}, out); !st.is_ok()) return st.to_string();
    const Tensor& y = out.at("y");
    for (int i = 0; i < kPatterns; ++i)
      if ((y.get(i) != 0) != (i == k - 1)) return "pattern w{" + std::to_string(k) + "} at word " + std::to_string(i);
    return "";
  };
  for (int round = 0; round < 2; ++round)
    for (int k = 1; k <= kPatterns; ++k) EXPECT_EQ(check(k), "") << "round " << round;
  std::vector<std::string> failures(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 3 && failures[static_cast<size_t>(t)].empty(); ++r)
        for (int k = 1 + t; k <= kPatterns && failures[static_cast<size_t>(t)].empty(); k += 2)
          failures[static_cast<size_t>(t)] = check(k);
    });
  for (std::thread& th : threads) th.join();
  for (const std::string& f : failures) EXPECT_EQ(f, "");
}

// ---- Equal over strings (opset 19) ------------------------------------------------------------

TEST(StringEqual, ComparesBroadcastStringsFromOpset19) {
  auto model = [](int64_t opset) {
    OnnxModelBuilder m(opset, 9);
    m.input("a", DataType::kString, {2, 3});
    m.input("b", DataType::kString, {3});
    m.node("Equal", {"a", "b"}, {"y"}, "eq");
    m.output("y", DataType::kBool);
    return m;
  };
  const Tensor a = Tensor::from_strings({2, 3}, {"cat", "", "d\xc3\xa9j\xc3\xa0", "dog", "Cat", "d\xc3\xa9j\xc3\xa0"});
  const Tensor b = Tensor::from_strings({3}, {"cat", "", "d\xc3\xa9j\xc3\xa0 "});
  auto out = run(model(19), {{"a", a}, {"b", b}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const Tensor& y = out->at("y");
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, 3}));
  const std::vector<double> want{1, 1, 0, 0, 0, 0};  // byte for byte: case and a trailing space count
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(y.get(i), want[static_cast<size_t>(i)]) << "element " << i;
  auto old = Engine::build_from_onnx_bytes(model(18).bytes(), {}, "eq.onnx");
  ASSERT_FALSE(old.is_ok());
  EXPECT_TRUE(contains(old.status().to_string(), "string")) << old.status().to_string();
}

// ---- StringNormalizer -------------------------------------------------------------------------

OnnxModelBuilder normalizer_model(std::vector<testing::DimSpec> dims, const std::string& action, int64_t sensitive,
                                  const std::vector<std::string>& stopwords) {
  OnnxModelBuilder m(10);
  m.input("x", DataType::kString, dims);
  auto& n = m.node("StringNormalizer", {"x"}, {"y"}, "norm");
  if (!action.empty()) OnnxModelBuilder::attr(n, "case_change_action", action);
  OnnxModelBuilder::attr(n, "is_case_sensitive", sensitive);
  if (!stopwords.empty()) OnnxModelBuilder::attr(n, "stopwords", stopwords);
  m.output("y", DataType::kString);
  return m;
}

// Independent reference, ASCII only: drop stopwords (lower-cased unless case-sensitive), change case.
std::vector<std::string> normalize_ascii(const std::vector<std::string>& x, const std::string& action, bool sensitive,
                                         const std::vector<std::string>& stopwords) {
  auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  std::vector<std::string> out;
  for (const std::string& s : x) {
    bool stop = false;
    for (const std::string& w : stopwords) stop |= sensitive ? s == w : lower(s) == lower(w);
    if (stop) continue;
    std::string r = s;
    for (char& c : r)
      c = static_cast<char>(action == "UPPER"   ? std::toupper(static_cast<unsigned char>(c))
                            : action == "LOWER" ? std::tolower(static_cast<unsigned char>(c))
                                                : c);
    out.push_back(r);
  }
  if (out.empty()) out.push_back("");
  return out;
}

TEST(StringNormalizer, DropsStopwordsAndChangesCaseOnRandomWords) {
  std::mt19937 rng(std::random_device{}());
  const std::vector<std::string> vocab = {"Monday", "monday", "TUESDAY", "wed", "Thu", "fri", "SAT", "sun"};
  for (const char* action : {"LOWER", "UPPER", "NONE"})
    for (int64_t sensitive : {0, 1}) {
      std::vector<std::string> x;
      for (int i = 0; i < 12; ++i) x.push_back(vocab[rng() % vocab.size()]);
      const std::vector<std::string> stop = {"monday", "SAT"};
      auto out = run(normalizer_model({1, 12}, action, sensitive, stop), {{"x", Tensor::from_strings({1, 12}, x)}});
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      const auto want = normalize_ascii(x, action, sensitive, stop);
      EXPECT_EQ(out->at("y").dims(), (std::vector<int64_t>{1, static_cast<int64_t>(want.size())}));
      EXPECT_EQ(strings(out->at("y")), want) << action << " sensitive=" << sensitive;
    }
}

TEST(StringNormalizer, EverythingDroppedLeavesOneEmptyString) {
  auto out = run(normalizer_model({3}, "UPPER", 0, {"a"}), {{"x", Tensor::from_strings({3}, {"a", "A", "a"})}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(out->at("y").dims(), std::vector<int64_t>{1});
  EXPECT_EQ(strings(out->at("y")), std::vector<std::string>{""});
}

TEST(StringNormalizer, ChangesTheCaseOfUnicodeText) {
  // "élan", "ÀB", "Straße": é/É and à/À map by Unicode's simple case mapping; ß has no one-letter upper.
  auto out = run(normalizer_model({3}, "UPPER", 1, {}),
                 {{"x", Tensor::from_strings({3}, {"\xc3\xa9lan", "\xc3\xa0" "b", "Stra\xc3\x9f" "e"})}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(strings(out->at("y")),
            (std::vector<std::string>{"\xc3\x89LAN", "\xc3\x80" "B", "STRA\xc3\x9f" "E"}));
  auto bad = run(normalizer_model({1}, "LOWER", 1, {}), {{"x", Tensor::from_strings({1}, {"\xff\xfe"})}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_TRUE(contains(bad.status().to_string(), "not UTF-8")) << bad.status().to_string();
}

TEST(StringNormalizer, BadAttributesAndInputsAreRefusedAtBuild) {
  auto e = Engine::build_from_onnx_bytes(normalizer_model({2}, "TITLE", 0, {}).bytes(), {}, "n.onnx");
  ASSERT_FALSE(e.is_ok());
  EXPECT_TRUE(contains(e.status().to_string(), "case_change_action")) << e.status().to_string();
  e = Engine::build_from_onnx_bytes(normalizer_model({2}, "", 2, {}).bytes(), {}, "n.onnx");
  ASSERT_FALSE(e.is_ok());
  EXPECT_TRUE(contains(e.status().to_string(), "is_case_sensitive")) << e.status().to_string();
  e = Engine::build_from_onnx_bytes(normalizer_model({2, 3}, "", 0, {}).bytes(), {}, "n.onnx");
  ASSERT_FALSE(e.is_ok());
  EXPECT_TRUE(contains(e.status().to_string(), "[C] or [1, C]")) << e.status().to_string();
  OnnxModelBuilder m(10);
  m.input("x", DataType::kFloat32, {2});
  m.node("StringNormalizer", {"x"}, {"y"}, "norm");
  m.output("y", DataType::kString);
  e = Engine::build_from_onnx_bytes(m.bytes(), {}, "n.onnx");
  ASSERT_FALSE(e.is_ok());
  EXPECT_TRUE(contains(e.status().to_string(), "norm")) << e.status().to_string();
}

// ---- every other op refuses strings; plans and files keep them --------------------------------

TEST(StringTensor, OpsThatDoNotTakeStringsRefuseThemNamingTheInput) {
  for (const char* op : {"Concat", "Transpose", "Add", "Reshape"}) {
    OnnxModelBuilder m(13);
    m.input("s", DataType::kString, {2});
    std::vector<std::string> ins = {"s", "s"};
    if (std::string(op) == "Transpose") ins = {"s"};
    if (std::string(op) == "Reshape") {
      m.initializer("shape", Tensor::vector_int64({2}));
      ins = {"s", "shape"};
    }
    auto& n = m.node(op, ins, {"y"}, "the_node");
    if (std::string(op) == "Concat") OnnxModelBuilder::attr(n, "axis", int64_t{0});
    m.output("y", DataType::kString);
    auto e = Engine::build_from_onnx_bytes(m.bytes(), {}, "s.onnx");
    ASSERT_FALSE(e.is_ok()) << op;
    const std::string msg = e.status().to_string();
    EXPECT_TRUE(contains(msg, "the_node") && contains(msg, "'s'") && contains(msg, "string")) << msg;
  }
}

TEST(StringTensor, StringConstantsSurviveAPlanAndIdentityCopiesThem) {
  OnnxModelBuilder m(13);
  m.input("x", DataType::kString, {2});
  auto& c = m.node("Constant", {}, {"words"}, "words");
  OnnxModelBuilder::attr(c, "value_strings", std::vector<std::string>{"alpha", "", "\xce\xb2"});
  m.node("Identity", {"x"}, {"same"});
  m.output("words", DataType::kString);
  m.output("same", DataType::kString);
  m.output("x", DataType::kString);  // an output that is the input itself
  Tensor x = Tensor::from_strings({2}, {"p", "q"});
  for (bool plan : {false, true}) {
    auto out = run(m, {{"x", x}}, plan);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    EXPECT_EQ(strings(out->at("words")), (std::vector<std::string>{"alpha", "", "\xce\xb2"}));
    EXPECT_EQ(strings(out->at("same")), strings(x));
    EXPECT_EQ(strings(out->at("x")), strings(x));
    EXPECT_NE(out->at("x").data(), x.data());  // the caller gets its own copy
  }
}

TEST(StringTensor, InitializersAreReadFromStringDataOnly) {
  OnnxModelBuilder m(13);
  m.input("x", DataType::kFloat32, {1});
  m.initializer("t", Tensor::from_strings({2}, {"1.5", "-2"}));
  OnnxModelBuilder::attr(m.node("Cast", {"t"}, {"v"}), "to", int64_t{1});
  m.node("Add", {"v", "x"}, {"y"});
  m.output("y", DataType::kFloat32);
  auto out = run(m, {{"x", Tensor::from_doubles(DataType::kFloat32, {1}, {1})}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(out->at("y").data_as<float>()[0], 2.5f);
  EXPECT_EQ(out->at("y").data_as<float>()[1], -1.f);
  // A string tensor whose string_data is short, or that uses raw_data, is refused by name.
  m.model().mutable_graph()->mutable_initializer(0)->mutable_string_data()->RemoveLast();
  auto e = Engine::build_from_onnx_bytes(m.bytes(), {}, "s.onnx");
  ASSERT_FALSE(e.is_ok());
  EXPECT_TRUE(contains(e.status().to_string(), "string_data")) << e.status().to_string();
  m.model().mutable_graph()->mutable_initializer(0)->set_raw_data("xx");
  e = Engine::build_from_onnx_bytes(m.bytes(), {}, "s.onnx");
  ASSERT_FALSE(e.is_ok());
  EXPECT_TRUE(contains(e.status().to_string(), "raw_data")) << e.status().to_string();
}

TEST(StringTensor, NpyAndTensorProtoFilesRoundTrip) {
  Tensor t = Tensor::from_strings({2, 2}, {"a", "", "\xc3\xa9t\xc3\xa9", "longer text"});
  auto npy = io::encode_npy(t);
  ASSERT_TRUE(npy.is_ok()) << npy.status().to_string();
  EXPECT_TRUE(contains(*npy, "'descr': '<U11'"));
  auto back = io::parse_npy(*npy, "s.npy");
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(back->dims(), t.dims());
  EXPECT_EQ(strings(*back), strings(t));
  auto pb = io::encode_tensor_pb(t, "t");
  ASSERT_TRUE(pb.is_ok());
  auto pb_back = io::parse_tensor_pb(*pb, "t.pb");
  ASSERT_TRUE(pb_back.is_ok()) << pb_back.status().to_string();
  EXPECT_EQ(strings(pb_back->tensor), strings(t));
  // Text that is not UTF-8 has no .npy unicode form.
  EXPECT_FALSE(io::encode_npy(Tensor::from_strings({1}, {"\xff"})).is_ok());
  // NumPy bytes ('S') arrays: fixed width, trailing NULs dropped. "|S3" of ["ab", "xyz"]:
  std::string header = "{'descr': '|S3', 'fortran_order': False, 'shape': (2,), }";
  header.append(128 - 10 - header.size() - 1, ' ');  // magic, version and length take 10 bytes
  header += '\n';
  std::string file = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) + '\0' + header +
                     std::string("ab\0xyz", 6);
  auto s = io::parse_npy(file, "s.npy");
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(strings(*s), (std::vector<std::string>{"ab", "xyz"}));
  auto truncated = io::parse_npy(file.substr(0, file.size() - 1), "s.npy");
  ASSERT_FALSE(truncated.is_ok());
  EXPECT_TRUE(contains(truncated.status().to_string(), "s.npy")) << truncated.status().to_string();
}

}  // namespace
}  // namespace graft
