// Several optimization profiles per engine (TensorRT's): built for all of them, stored in plans,
// selected per context, inputs checked against the selected profile's ranges.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "graft/engine.h"
#include "plan/plan.h"
#include "runtime/tactic_timing.h"
#include "tests/unit/onnx_model_builder.h"

namespace graft {
namespace {

using testing::OnnxModelBuilder;

// y = Relu(x), x: float32[batch, 4].
std::string relu_model() {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {"batch", 4});
  m.node("Relu", {"x"}, {"y"}, "relu");
  m.output("y", DataType::kFloat32);
  return m.bytes();
}

ProfileRange batch_range(int64_t lo, int64_t opt, int64_t hi) { return {{lo, 4}, {opt, 4}, {hi, 4}}; }

// Profile 0: batch 1..4 (opt 2); profile 1: batch 8..16 (opt 12). Disjoint, as a decode and a
// prefill regime would be.
BuilderConfig two_profiles() {
  BuilderConfig c;
  c.profiles = {{{"x", batch_range(1, 2, 4)}}, {{"x", batch_range(8, 12, 16)}}};
  return c;
}

std::shared_ptr<Engine> build(const std::string& model, const BuilderConfig& c) {
  auto e = Engine::build_from_onnx_bytes(model, c, "relu.onnx");
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  return e.is_ok() ? e.value() : nullptr;
}

Tensor batch_of(int64_t n) {
  Tensor t = Tensor::empty(DataType::kFloat32, {n, 4});
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = static_cast<float>(i % 7) - 3.0f;
  return t;
}

void expect_relu(const Tensor& x, const Tensor& y) {
  ASSERT_EQ(y.dims(), x.dims());
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(y.data_as<float>()[i], std::max(0.0f, x.data_as<float>()[i]));
}

Status run_batch(ExecutionContext& ctx, int64_t n) {
  Tensor x = batch_of(n);
  std::map<std::string, Tensor> out;
  GRAFT_RETURN_IF_ERROR(ctx.run({{"x", x}}, out));
  expect_relu(x, out.at("y"));
  return Status::ok();
}

TEST(Profiles, EachProfileRunsItsOwnRange) {
  auto e = build(relu_model(), two_profiles());
  ASSERT_TRUE(e);
  EXPECT_EQ(e->num_profiles(), 2);
  auto p1 = e->profile(1);
  ASSERT_TRUE(p1.is_ok()) << p1.status().to_string();
  EXPECT_EQ(p1->at("x").max, (std::vector<int64_t>{16, 4}));
  EXPECT_EQ(e->inputs()[0].profile->max, (std::vector<int64_t>{4, 4})) << "IOInfo::profile is profile 0's range";
  auto ctx = e->create_context();
  ASSERT_TRUE(ctx.is_ok());
  EXPECT_EQ((*ctx)->profile(), 0);
  Status s = run_batch(**ctx, 3);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  ASSERT_TRUE((*ctx)->set_profile(1).is_ok());
  EXPECT_EQ((*ctx)->profile(), 1);
  s = run_batch(**ctx, 12);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  s = run_batch(**ctx, 16);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
}

// A shape inside profile 1 only, run on profile 0 (and the other way): the error names the input,
// the shape, the selected profile and its range, and the profile that covers the shape.
TEST(Profiles, ShapeOutsideTheSelectedProfileIsRefused) {
  auto e = build(relu_model(), two_profiles());
  ASSERT_TRUE(e);
  auto ctx = e->create_context();
  ASSERT_TRUE(ctx.is_ok());
  Status s = run_batch(**ctx, 12);
  ASSERT_FALSE(s.is_ok());
  const std::string& m = s.message();
  for (const char* words : {"input 'x'", "[12,4]", "optimization profile 0 [min 1, max 4]", "min [1,4] opt [2,4] max [4,4]",
                            "profile 1 covers it"})
    EXPECT_NE(m.find(words), std::string::npos) << words << " not in: " << m;
  ASSERT_TRUE((*ctx)->set_profile(1).is_ok());
  s = run_batch(**ctx, 2);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("outside optimization profile 1 [min 8, max 16]"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("profile 0 covers it"), std::string::npos) << s.message();
  // A shape no profile covers: rebuild advice.
  s = run_batch(**ctx, 6);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("rebuild"), std::string::npos) << s.message();
}

TEST(Profiles, BadProfileIndexIsRefused) {
  auto e = build(relu_model(), two_profiles());
  ASSERT_TRUE(e);
  auto ctx = e->create_context();
  ASSERT_TRUE(ctx.is_ok());
  for (int bad : {2, -1}) {
    Status s = (*ctx)->set_profile(bad);
    ASSERT_FALSE(s.is_ok()) << bad;
    EXPECT_NE(s.message().find("optimization profile " + std::to_string(bad) + " does not exist"), std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find("2 profiles (indices 0 to 1)"), std::string::npos) << s.message();
    EXPECT_EQ((*ctx)->profile(), 0) << "a refused index leaves the selection unchanged";
  }
  EXPECT_FALSE(e->profile(2).is_ok());
  // One profile: index 0 only.
  BuilderConfig one;
  one.profile["x"] = batch_range(1, 2, 4);
  auto single = build(relu_model(), one);
  ASSERT_TRUE(single);
  EXPECT_EQ(single->num_profiles(), 1);
  auto c1 = single->create_context();
  ASSERT_TRUE(c1.is_ok());
  Status s = (*c1)->set_profile(1);
  EXPECT_NE(s.message().find("1 profile (index 0)"), std::string::npos) << s.message();
}

uint32_t format_of(const std::string& plan) {
  uint32_t f = 0;
  std::memcpy(&f, plan.data() + 8, 4);
  return f;
}

TEST(Profiles, PlanRoundTripKeepsEveryProfile) {
  auto e = build(relu_model(), two_profiles());
  ASSERT_TRUE(e);
  auto bytes = e->serialize();
  ASSERT_TRUE(bytes.is_ok()) << bytes.status().to_string();
  // Several profiles are format 3, which a graft reading formats 1 and 2 refuses by its version check.
  EXPECT_EQ(format_of(*bytes), kPlanFormatVersionProfiles);
  auto loaded = Engine::deserialize(*bytes, "two.plan");
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  ASSERT_EQ((*loaded)->num_profiles(), 2);
  for (int k = 0; k < 2; ++k) {
    auto a = e->profile(k), b = (*loaded)->profile(k);
    ASSERT_TRUE(a.is_ok() && b.is_ok());
    EXPECT_EQ(a->at("x").min, b->at("x").min);
    EXPECT_EQ(a->at("x").opt, b->at("x").opt);
    EXPECT_EQ(a->at("x").max, b->at("x").max);
  }
  auto ctx = (*loaded)->create_context();
  ASSERT_TRUE(ctx.is_ok());
  ASSERT_TRUE((*ctx)->set_profile(1).is_ok());
  Status s = run_batch(**ctx, 9);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  // One profile is still written as format 2, which older graft reads.
  BuilderConfig one;
  one.profile["x"] = batch_range(1, 2, 4);
  auto single = build(relu_model(), one);
  ASSERT_TRUE(single);
  auto one_bytes = single->serialize();
  ASSERT_TRUE(one_bytes.is_ok());
  EXPECT_EQ(format_of(*one_bytes), kPlanFormatVersionOneProfile);
}

// The payload parser refuses profiles that do not name the same inputs, and an empty list.
TEST(Profiles, PlanWithMismatchedProfilesIsCorrupt) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {"batch", 4});
  m.input("z", DataType::kFloat32, {"n", 4});
  m.node("Relu", {"x"}, {"y"}, "relu");
  m.node("Relu", {"z"}, {"w"}, "relu2");
  m.output("y", DataType::kFloat32);
  m.output("w", DataType::kFloat32);
  BuilderConfig c;
  c.profiles = {{{"x", batch_range(1, 2, 4)}, {"z", batch_range(1, 1, 1)}},
                {{"x", batch_range(8, 8, 8)}, {"z", batch_range(2, 3, 4)}}};
  auto e = build(m.bytes(), c);
  ASSERT_TRUE(e);
  auto bytes = e->serialize();
  ASSERT_TRUE(bytes.is_ok());
  // The JSON section is the payload's tail: rewrite its profiles and re-parse the payload alone.
  const size_t payload_pos = bytes->size() - [&] {
    uint64_t n = 0;
    uint32_t ver_len = 0;
    std::memcpy(&ver_len, bytes->data() + 12, 4);
    std::memcpy(&n, bytes->data() + 16 + ver_len, 8);
    return n;
  }();
  std::string payload = bytes->substr(payload_pos);
  uint64_t model_len = 0;
  std::memcpy(&model_len, payload.data(), 8);
  const std::string model = payload.substr(0, 8 + model_len);
  nlohmann::json j = nlohmann::json::parse(payload.substr(8 + model_len + 8));
  ASSERT_TRUE(j["profiles"].is_array());
  ASSERT_EQ(j["profiles"].size(), 2u);
  auto with_json = [&](const nlohmann::json& jj) {
    std::string text = jj.dump(), p = model;
    const uint64_t n = text.size();
    p.append(reinterpret_cast<const char*>(&n), 8);
    return p + text;
  };
  EXPECT_TRUE(read_plan_payload(with_json(j), "ok.plan").is_ok());
  nlohmann::json missing = j;
  missing["profiles"][1].erase("z");
  auto r = read_plan_payload(with_json(missing), "missing.plan");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("every profile must name the same inputs"), std::string::npos)
      << r.status().to_string();
  nlohmann::json empty = j;
  empty["profiles"] = nlohmann::json::array();
  EXPECT_FALSE(read_plan_payload(with_json(empty), "empty.plan").is_ok());
}

// Refused at build, naming the profile index: min > max, an input missing from one profile, a
// config that sets both forms. Overlapping ranges are fine.
TEST(Profiles, BadProfilesAreRefusedAtBuild) {
  auto build_error = [](const std::string& model, const BuilderConfig& c) {
    auto e = Engine::build_from_onnx_bytes(model, c, "m.onnx");
    EXPECT_FALSE(e.is_ok());
    return e.is_ok() ? std::string() : e.status().message();
  };
  BuilderConfig c = two_profiles();
  c.profiles[1]["x"] = ProfileRange{{9, 4}, {9, 4}, {8, 4}};
  std::string m = build_error(relu_model(), c);
  EXPECT_NE(m.find("profile 1 for input 'x' dimension 0 needs 0 <= min <= opt <= max"), std::string::npos) << m;

  c = two_profiles();
  c.profiles[0]["x"] = ProfileRange{{1, 5}, {1, 5}, {2, 5}};
  m = build_error(relu_model(), c);
  EXPECT_NE(m.find("profile 0 for input 'x' dimension 1 is fixed at 4"), std::string::npos) << m;

  OnnxModelBuilder two;
  two.input("x", DataType::kFloat32, {"batch", 4});
  two.input("z", DataType::kFloat32, {"n", 4});
  two.node("Add", {"x", "z"}, {"y"}, "add");
  two.output("y", DataType::kFloat32);
  c = two_profiles();
  c.profiles[0]["z"] = batch_range(1, 1, 1);
  m = build_error(two.bytes(), c);
  EXPECT_NE(m.find("profile 1 gives no shapes for input 'z', which profile 0 gives"), std::string::npos) << m;

  c = two_profiles();
  c.profile["x"] = batch_range(1, 1, 1);
  m = build_error(relu_model(), c);
  EXPECT_NE(m.find("both profile"), std::string::npos) << m;

  c = two_profiles();
  c.profiles[1]["q"] = batch_range(1, 1, 1);
  m = build_error(relu_model(), c);
  EXPECT_NE(m.find("profile 1 names 'q', which is not an input"), std::string::npos) << m;

  c = two_profiles();
  c.profiles[1]["x"] = batch_range(2, 3, 8);  // overlaps profile 0
  auto overlapping = build(relu_model(), c);
  ASSERT_TRUE(overlapping);
  auto ctx = overlapping->create_context();
  ASSERT_TRUE(ctx.is_ok());
  ASSERT_TRUE((*ctx)->set_profile(1).is_ok());
  EXPECT_TRUE(run_batch(**ctx, 3).is_ok());
}

// A dimension stays dynamic unless every profile fixes it to the same value.
TEST(Profiles, DimensionFixedInOneProfileStaysDynamic) {
  BuilderConfig c;
  c.profiles = {{{"x", batch_range(1, 1, 1)}}, {{"x", batch_range(2, 4, 8)}}};
  auto e = build(relu_model(), c);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->inputs()[0].static_dims, (std::vector<int64_t>{-1, 4}));
  auto ctx = e->create_context();
  ASSERT_TRUE(ctx.is_ok());
  EXPECT_TRUE(run_batch(**ctx, 1).is_ok());
  EXPECT_FALSE(run_batch(**ctx, 2).is_ok());
  ASSERT_TRUE((*ctx)->set_profile(1).is_ok());
  EXPECT_TRUE(run_batch(**ctx, 5).is_ok());

  c.profiles = {{{"x", batch_range(3, 3, 3)}}, {{"x", batch_range(3, 3, 3)}}};
  auto fixed = build(relu_model(), c);
  ASSERT_TRUE(fixed);
  EXPECT_EQ(fixed->inputs()[0].static_dims, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(fixed->num_profiles(), 2);
}

// Build-time timing covers every profile's points; the inputs follow the point's profile.
TEST(Profiles, TimingPointsCoverEveryProfile) {
  auto e = build(relu_model(), two_profiles());
  ASSERT_TRUE(e);
  using P = ProfilePoint;
  EXPECT_EQ(distinct_profile_points(*e), (std::vector<TimingPoint>{{P::kOpt, 0}, {P::kMin, 0}, {P::kMax, 0},
                                                                   {P::kOpt, 1}, {P::kMin, 1}, {P::kMax, 1}}));
  auto in = timing_inputs(*e, TimingPoint(P::kMax, 1));
  ASSERT_TRUE(in.is_ok()) << in.status().to_string();
  EXPECT_EQ(in->at("x").dims(), (std::vector<int64_t>{16, 4}));
  // A point a later profile shares with an earlier one is timed once.
  BuilderConfig c;
  c.profiles = {{{"x", batch_range(1, 2, 4)}}, {{"x", batch_range(4, 4, 8)}}};
  auto shared = build(relu_model(), c);
  ASSERT_TRUE(shared);
  EXPECT_EQ(distinct_profile_points(*shared),
            (std::vector<TimingPoint>{{P::kOpt, 0}, {P::kMin, 0}, {P::kMax, 0}, {P::kMax, 1}}));
}

TEST(Profiles, DescribeShowsEveryProfile) {
  auto e = build(relu_model(), two_profiles());
  ASSERT_TRUE(e);
  const std::string text = e->describe();
  EXPECT_NE(text.find("profile 0: min [1,4] opt [2,4] max [4,4]"), std::string::npos) << text;
  EXPECT_NE(text.find("profile 1: min [8,4] opt [12,4] max [16,4]"), std::string::npos) << text;
  auto j = nlohmann::json::parse(e->describe_json());
  ASSERT_EQ(j["profiles"].size(), 2u);
  EXPECT_EQ(j["profiles"][1]["x"]["max"], (std::vector<int64_t>{16, 4}));
}

}  // namespace
}  // namespace graft
