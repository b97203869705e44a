// The tactic table and the timing cache file (CPU side of tactic timing): JSON round trip, the file
// format and its errors, atomic writes, and tactics travelling in plan files.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "onnx/importer.h"
#include "plan/plan.h"
#include "plan/tactics.h"
#include "runtime/engine_description.h"
#include "runtime/tactic_timing.h"
#include "tests/unit/onnx_model_builder.h"

namespace graft {
namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + name + "_" + std::to_string(std::random_device{}());
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

TEST(Tactics, JsonRoundTripKeepsEveryField) {
  TacticTable t;
  t.put("conv2d;sm90;float16;nhwc;x1x64x56x56", Tactic{1, 1, 0.0123});
  t.put("gemm;sm90;float32;m197;n768;k768", Tactic{5, 0, 0.5});
  auto back = TacticTable::from_json(t.to_json(), "test");
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  ASSERT_EQ(back->size(), 2u);
  auto c = back->find("conv2d;sm90;float16;nhwc;x1x64x56x56");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->algo, 1);
  EXPECT_EQ(c->variant, 1);
  EXPECT_DOUBLE_EQ(c->ms, 0.0123);
  EXPECT_FALSE(back->find("missing").has_value());
  EXPECT_FALSE(TacticTable::from_json("[1,2]", "test").is_ok());
  EXPECT_FALSE(TacticTable::from_json("{\"k\": {\"variant\": 1}}", "test").is_ok()) << "algo is required";
}

TEST(Tactics, CacheFileSaveLoadAndErrorsNameTheFile) {
  const std::string path = temp_path("graft_cache") + ".json";
  auto empty = TacticTable::load_cache_file(path);
  ASSERT_TRUE(empty.is_ok()) << "a missing cache file is an empty cache";
  EXPECT_EQ(empty->size(), 0u);

  TacticTable t;
  t.put("k1", Tactic{3, 0, 1.5});
  ASSERT_TRUE(t.save_cache_file(path).is_ok());
  auto loaded = TacticTable::load_cache_file(path);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  EXPECT_EQ(loaded->find("k1")->algo, 3);

  write_text(path, "{\"format\": \"something-else\"}");
  auto bad = TacticTable::load_cache_file(path);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().to_string().find(path), std::string::npos) << bad.status().to_string();
  EXPECT_NE(bad.status().to_string().find("not a graft timing cache"), std::string::npos);

  write_text(path, "{\"format\": \"graft-timing-cache\", \"version\": 7, \"entries\": {}}");
  bad = TacticTable::load_cache_file(path);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().to_string().find("version 7"), std::string::npos) << bad.status().to_string();

  write_text(path, "{\"format\": \"graft-timing-cache\", \"version\": 1, \"entries\": {\"k\": 5}}");
  bad = TacticTable::load_cache_file(path);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().to_string().find("'k'"), std::string::npos) << bad.status().to_string();

  // Saving into a missing directory fails and leaves nothing behind.
  EXPECT_FALSE(t.save_cache_file(temp_path("no_such_dir") + "/cache.json").is_ok());
  std::remove(path.c_str());
}

// The state of a one-Relu model (layer "relu"), for tactics to be added to.
EngineState relu_state() {
  testing::OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2, 3});
  m.node("Relu", {"x"}, {"y"}, "relu");
  m.output("y", DataType::kFloat32);
  auto g = import_onnx_bytes(m.bytes(), "relu.onnx");
  EngineState st;
  if (g.is_ok()) st.graph = std::move(g).value();
  return st;
}

TEST(Tactics, PlanCarriesTheEngineTactics) {
  EngineState st = relu_state();
  ASSERT_TRUE(st.graph);
  st.tactics->put("conv2d;sm90;x", Tactic{2, 1, 0.25});
  auto bytes = write_plan_bytes(st);
  ASSERT_TRUE(bytes.is_ok()) << bytes.status().to_string();
  auto back = read_plan_bytes(*bytes, "relu.plan");
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  ASSERT_EQ(back->tactics->size(), 1u);
  EXPECT_EQ(back->tactics->find("conv2d;sm90;x")->variant, 1);
}

// The layers' tactic keys (noted while tuning) travel in plans and appear in the engine's JSON
// description, each key with the tactic the table holds for it; a damaged map is refused whole.
TEST(Tactics, PlanAndDescriptionNameEachLayersTactics) {
  EngineState st = relu_state();
  ASSERT_TRUE(st.graph);
  st.tactics->put("conv2d;x1", Tactic{2, 9, 0.25});
  st.tactics->put("conv2d;x8", Tactic{1, 0, 0.5});
  st.tactics->note_layer("relu", "conv2d;x1");
  st.tactics->note_layer("relu", "conv2d;x8");
  st.tactics->note_layer("relu", "conv2d;x1");  // a key asked twice is listed once
  st.tactics->note_layer("relu", "not-in-the-table");
  auto bytes = write_plan_bytes(st);
  ASSERT_TRUE(bytes.is_ok()) << bytes.status().to_string();
  auto back = read_plan_bytes(*bytes, "relu.plan");
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  const auto layers = back->tactics->layers();
  ASSERT_EQ(layers.count("relu"), 1u);
  EXPECT_EQ(layers.at("relu"), (std::set<std::string>{"conv2d;x1", "conv2d;x8", "not-in-the-table"}));

  auto j = nlohmann::json::parse(describe_engine_json(*back));
  ASSERT_EQ(j["layers"].size(), 1u);
  const auto& t = j["layers"][0]["tactics"];
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0]["key"], "conv2d;x1");
  EXPECT_EQ(t[0]["variant"], 9);
  EXPECT_EQ(t[0]["algo"], 2);
  EXPECT_EQ(t[1]["key"], "conv2d;x8");
  EXPECT_EQ(t[1]["variant"], 0);
  EXPECT_FALSE(t[2].contains("variant")) << "a key the table lacks is listed without a tactic";

  // An engine with no layer map describes no tactics.
  EngineState plain;
  plain.graph = std::move(back->graph);
  EXPECT_FALSE(nlohmann::json::parse(describe_engine_json(plain))["layers"][0].contains("tactics"));

  TacticTable bad;
  EXPECT_FALSE(bad.read_layers_json("[1]", "test").is_ok());
  EXPECT_FALSE(bad.read_layers_json("{\"relu\": \"k\"}", "test").is_ok());
  Status s = bad.read_layers_json("{\"relu\": [\"k\", 3]}", "test");
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.to_string().find("'relu'"), std::string::npos) << s.to_string();
  EXPECT_TRUE(bad.layers().empty()) << "a refused map adds nothing";
}

// Tactics are timed at every profile point whose shapes differ (a dynamic batch runs at all of
// them): opt first, then min and max, each once; a static engine has opt only.
TEST(Tactics, TimedAtEveryDistinctProfilePoint) {
  testing::OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {"batch", 3});
  m.node("Relu", {"x"}, {"y"}, "relu");
  m.output("y", DataType::kFloat32);
  auto points_for = [&](ProfileRange r) {
    BuilderConfig cfg;
    cfg.profile["x"] = std::move(r);
    auto e = Engine::build_from_onnx_bytes(m.bytes(), cfg, "relu.onnx");
    EXPECT_TRUE(e.is_ok()) << e.status().to_string();
    return e.is_ok() ? distinct_profile_points(**e) : std::vector<TimingPoint>{};
  };
  using P = ProfilePoint;
  using T = std::vector<TimingPoint>;  // profile 0's points
  EXPECT_EQ(points_for({{1, 3}, {8, 3}, {32, 3}}), (T{P::kOpt, P::kMin, P::kMax}));
  EXPECT_EQ(points_for({{1, 3}, {1, 3}, {32, 3}}), (T{P::kOpt, P::kMax}));
  EXPECT_EQ(points_for({{4, 3}, {4, 3}, {4, 3}}), (T{P::kOpt}));
  // The inputs follow the point asked for.
  BuilderConfig cfg;
  cfg.profile["x"] = ProfileRange{{1, 3}, {8, 3}, {32, 3}};
  auto e = Engine::build_from_onnx_bytes(m.bytes(), cfg, "relu.onnx");
  ASSERT_TRUE(e.is_ok());
  for (auto [point, batch] : {std::pair{P::kMin, 1}, std::pair{P::kOpt, 8}, std::pair{P::kMax, 32}}) {
    auto in = timing_inputs(**e, point);
    ASSERT_TRUE(in.is_ok()) << in.status().to_string();
    EXPECT_EQ(in->at("x").dims(), (std::vector<int64_t>{batch, 3}));
  }
}

}  // namespace
}  // namespace graft
