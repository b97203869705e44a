// Plan files: round trip, and each way a plan can be damaged gets its own error.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "graft/engine.h"
#include "graph/passes.h"
#include "onnx/importer.h"
#include "ops/custom_kernel_call.h"
#include "ops/internal_ops.h"
#include "plan/plan.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/op_test_util.h"

namespace graft {
namespace {

using testing::OnnxModelBuilder;
using testing::random_tensor;

std::shared_ptr<Engine> build_small(std::mt19937& rng) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {"batch", 5});
  m.initializer("b", random_tensor(DataType::kFloat32, {5}, rng));
  m.node("Add", {"x", "b"}, {"s"});
  m.node("Relu", {"s"}, {"y"});
  m.output("y", DataType::kFloat32);
  BuilderConfig c;
  c.profile["x"] = ProfileRange{{1, 5}, {2, 5}, {7, 5}};
  auto e = Engine::build_from_onnx_bytes(m.bytes(), c, "small.onnx");
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  return e.is_ok() ? e.value() : nullptr;
}

std::string plan_bytes(std::mt19937& rng) {
  auto e = build_small(rng);
  if (!e) return "";
  auto b = e->serialize();
  EXPECT_TRUE(b.is_ok());
  return b.is_ok() ? b.value() : "";
}

TEST(Plan, RoundTripSameOutputs) {
  uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  auto e = build_small(rng);
  ASSERT_TRUE(e);
  auto dir = std::filesystem::temp_directory_path() / ("graft_plan_test_" + std::to_string(seed));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "small.plan").string();
  ASSERT_TRUE(e->save_plan(path).is_ok());
  // Atomic write leaves no temporary beside the plan.
  size_t files = 0;
  for (auto& f : std::filesystem::directory_iterator(dir)) { (void)f; ++files; }
  EXPECT_EQ(files, 1u);
  auto loaded = Engine::load_plan(path);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  ASSERT_EQ((*loaded)->inputs().size(), 1u);
  ASSERT_TRUE((*loaded)->inputs()[0].profile.has_value());
  EXPECT_EQ((*loaded)->inputs()[0].profile->max, (std::vector<int64_t>{7, 5}));
  auto c1 = e->create_context();
  auto c2 = (*loaded)->create_context();
  Tensor x = random_tensor(DataType::kFloat32, {3, 5}, rng);
  std::map<std::string, Tensor> o1, o2;
  ASSERT_TRUE((*c1)->run({{"x", x}}, o1).is_ok());
  ASSERT_TRUE((*c2)->run({{"x", x}}, o2).is_ok());
  ASSERT_EQ(o1.at("y").dims(), o2.at("y").dims());
  EXPECT_EQ(std::memcmp(o1.at("y").data(), o2.at("y").data(), o1.at("y").nbytes()), 0);
  // A loaded plan serializes to the same bytes.
  EXPECT_EQ((*loaded)->serialize().value(), e->serialize().value());
  std::filesystem::remove_all(dir);
}

TEST(Plan, NotAPlan) {
  auto e = Engine::deserialize("this is not a plan at all", "junk.plan");
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), StatusCode::kCorruptPlan);
  EXPECT_NE(e.status().message().find("not a graft plan"), std::string::npos) << e.status().to_string();
  EXPECT_EQ(e.status().file(), "junk.plan");
}

// A plan file around `payload` with the header of `format` and its checksum (formats 2 and later:
// every byte but the checksum's own), as an older graft wrote it.
std::string plan_file(uint32_t format, const std::string& payload) {
  auto put32 = [](std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); };
  std::string b(kPlanMagic, sizeof kPlanMagic);
  put32(b, format);
  const std::string writer = "0.old";
  put32(b, static_cast<uint32_t>(writer.size()));
  b += writer;
  const uint64_t n = payload.size();
  b.append(reinterpret_cast<const char*>(&n), 8);
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, reinterpret_cast<const Bytef*>(b.data()), static_cast<uInt>(b.size()));
  crc = crc32(crc, reinterpret_cast<const Bytef*>(payload.data()), static_cast<uInt>(payload.size()));
  put32(b, static_cast<uint32_t>(crc));
  return b + payload;
}

// The plan bytes of a model whose graph may name internal ops (imported as a plan's graph is), and
// the format version its header says.
void plan_of_internal_graph(const std::string& model_bytes, const std::string& name, std::string* plan,
                            uint32_t* format) {
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(model_bytes));
  auto g = import_onnx_model(model, name + ".onnx", ".");  // a plan's graph may name internal ops
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EngineState st;
  st.graph = std::move(g).value();
  ASSERT_TRUE(infer_shapes(*st.graph).is_ok());
  auto bytes = write_plan_bytes(st);
  ASSERT_TRUE(bytes.is_ok()) << bytes.status().to_string();
  *plan = *bytes;
  std::memcpy(format, plan->data() + 8, 4);
}

// A custom-op node the CUDA builder kept channels-last carries graft's marker (kChannelsLastIoAttr),
// which graft before format 7 would ignore, running the node on NCHW views of NHWC data: such a plan
// is format 7 and loads back with the marker. A model that names the marker is refused at import,
// naming the node and attribute.
TEST(Plan, ChannelsLastCustomNodeIsFormat7) {
  auto model = [](bool marked) {
    OnnxModelBuilder m(17);
    m.opset("ai.onnx.contrib", 1);
    // C = 4, H = 2, W = 3: (N, H, W, C) when marked, (N, C, H, W) when not.
    if (marked) m.input("x", DataType::kFloat32, {1, 2, 3, 4});
    else m.input("x", DataType::kFloat32, {1, 4, 2, 3});
    m.input("offset", DataType::kFloat32, {1, 18, 2, 3});
    m.input("mask", DataType::kFloat32, {1, 9, 2, 3});
    std::mt19937 rng(3);
    m.initializer("w", testing::random_tensor(DataType::kFloat32, {4, 4, 3, 3}, rng));
    auto& n = m.node("ModulatedDeformConv2d", {"x", "offset", "mask", "w"}, {"y"}, "dcn", "ai.onnx.contrib");
    OnnxModelBuilder::attr(n, "padding", std::vector<int64_t>{1, 1});
    if (marked) OnnxModelBuilder::attr(n, kChannelsLastIoAttr, int64_t{1});
    m.output("y", DataType::kFloat32);
    return m.bytes();
  };
  std::string bytes;
  uint32_t format = 0;
  ASSERT_NO_FATAL_FAILURE(plan_of_internal_graph(model(true), "dcn", &bytes, &format));
  EXPECT_EQ(format, kPlanFormatVersion);
  EXPECT_EQ(kPlanFormatVersion, 7u);
  auto back = read_plan_bytes(bytes, "dcn.plan");
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  ASSERT_EQ(back->graph->nodes().size(), 1u);
  const Node& n = *back->graph->nodes()[0];
  EXPECT_TRUE(channels_last_io(n));
  // (N, H, W, C) in, (N, Ho, Wo, Co) out: the op's NCHW shape function through the marker.
  std::vector<int64_t> out_dims;
  ASSERT_TRUE(static_dims_of(n.outputs[0], &out_dims));
  EXPECT_EQ(out_dims, (std::vector<int64_t>{1, 2, 3, 4}));
  ASSERT_NO_FATAL_FAILURE(plan_of_internal_graph(model(false), "dcn", &bytes, &format));
  EXPECT_NE(format, kPlanFormatVersion) << "no marker, no format 7";

  auto refused = import_onnx_bytes(model(true), "user.onnx");
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().to_string().find(kChannelsLastIoAttr), std::string::npos) << refused.status().to_string();
  EXPECT_NE(refused.status().to_string().find("dcn"), std::string::npos) << refused.status().to_string();
}

// Internal ops with attributes graft before format 6 would ignore, and so run wrongly (GraftConv's
// deferred input activation, GraftChannelsLast's space-to-depth block), make a format-6 plan, which
// that graft refuses by its version check; the plan loads back here with the attributes.
TEST(Plan, AttributesOlderGraftIgnoresAreFormat6) {
  for (const char* op : {"GraftConv", "GraftChannelsLast"}) {
    SCOPED_TRACE(op);
    OnnxModelBuilder m;
    m.input("x", DataType::kFloat32, {1, 3, 4, 4});
    std::mt19937 rng(5);
    if (std::string(op) == "GraftConv") {
      m.initializer("w", testing::random_tensor(DataType::kFloat32, {3, 1, 1, 1}, rng));
      auto& n = m.node("GraftConv", {"x", "w"}, {"y"}, "dw", kInternalDomain);
      OnnxModelBuilder::attr(n, "group", int64_t{3});
      OnnxModelBuilder::attr(n, "input_activation", "HardSwish");
    } else {
      auto& n = m.node("GraftChannelsLast", {"x"}, {"y"}, "s2d", kInternalDomain);
      OnnxModelBuilder::attr(n, "channels", int64_t{16});
      OnnxModelBuilder::attr(n, "block", int64_t{2});
    }
    m.output("y", DataType::kFloat32);
    std::string bytes;
    uint32_t format = 0;
    ASSERT_NO_FATAL_FAILURE(plan_of_internal_graph(m.bytes(), "op", &bytes, &format));
    EXPECT_EQ(format, kPlanFormatVersionInternalAttrs);
    EXPECT_EQ(kPlanFormatVersionInternalAttrs, 6u);
    auto back = read_plan_bytes(bytes, "op.plan");
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    ASSERT_EQ(back->graph->nodes().size(), 1u);
    EXPECT_TRUE(back->graph->nodes()[0]->attrs.has(std::string(op) == "GraftConv" ? "input_activation" : "block"));
  }
}

// A graph holding graft's internal ops (a view chain here, as a dynamic-shape CUDA engine's passes
// make it) is written as format 5, with the op in its own domain: graft before format 5 refuses it
// by its version check instead of taking the node for an unregistered custom op. A format-4 plan,
// whose internal ops are in the default domain, still loads, its op moved to its domain.
TEST(Plan, InternalOpsAreFormat5AndFormat4PlansStillLoad) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {"batch", 6});
  auto& n = m.node("GraftViewChain", {"x"}, {"y"}, "chain", kInternalDomain);
  OnnxModelBuilder::attr(n, "view_kinds", std::vector<int64_t>{2, 0});
  OnnxModelBuilder::attr(n, "view_args", std::vector<int64_t>{0, 2, 3, 0, 2, 1});
  OnnxModelBuilder::attr(n, "view_arg_counts", std::vector<int64_t>{3, 3});
  m.output("y", DataType::kFloat32);
  std::string plan;
  uint32_t format = 0;
  ASSERT_NO_FATAL_FAILURE(plan_of_internal_graph(m.bytes(), "chain", &plan, &format));
  EXPECT_EQ(format, kPlanFormatVersionInternalDomain);
  EXPECT_EQ(kPlanFormatVersionInternalDomain, 5u);
  auto back = read_plan_bytes(plan, "chain.plan");
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  ASSERT_EQ(back->graph->nodes().size(), 1u);
  EXPECT_EQ(back->graph->nodes()[0]->domain, kInternalDomain);

  // The same plan as format 4 wrote it: the node in the default domain.
  uint32_t ver_len = 0;
  std::memcpy(&ver_len, plan.data() + 12, 4);
  const std::string payload = plan.substr(16 + ver_len + 8 + 4);
  uint64_t model_len = 0;
  std::memcpy(&model_len, payload.data(), 8);
  onnx::ModelProto written;
  ASSERT_TRUE(written.ParseFromString(payload.substr(8, model_len)));
  ASSERT_EQ(written.graph().node_size(), 1);
  EXPECT_EQ(written.graph().node(0).domain(), kInternalDomain);
  written.mutable_graph()->mutable_node(0)->clear_domain();
  std::string old_model;
  ASSERT_TRUE(written.SerializeToString(&old_model));
  const uint64_t old_len = old_model.size();
  std::string old_payload(reinterpret_cast<const char*>(&old_len), 8);
  old_payload += old_model + payload.substr(8 + model_len);
  auto old = read_plan_bytes(plan_file(kPlanFormatVersionViewChains, old_payload), "format4.plan");
  ASSERT_TRUE(old.is_ok()) << old.status().to_string();
  ASSERT_EQ(old->graph->nodes().size(), 1u);
  EXPECT_EQ(old->graph->nodes()[0]->domain, kInternalDomain);
  EXPECT_EQ(old->graph->nodes()[0]->op_type, "GraftViewChain");
}

TEST(Plan, OtherFormatVersion) {
  std::mt19937 rng(std::random_device{}());
  std::string b = plan_bytes(rng);
  ASSERT_GT(b.size(), 12u);
  uint32_t other = kPlanFormatVersion + 41;
  std::memcpy(b.data() + 8, &other, 4);
  auto e = Engine::deserialize(b, "old.plan");
  ASSERT_FALSE(e.is_ok());
  const std::string& m = e.status().message();
  EXPECT_NE(m.find("version " + std::to_string(other)), std::string::npos) << m;
  EXPECT_NE(m.find("versions " + std::to_string(kPlanFormatVersionPayloadCrc) + " to " +
                   std::to_string(kPlanFormatVersion)),
            std::string::npos)
      << m;
}

TEST(Plan, FlippedByteIsCorruption) {
  uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::string b = plan_bytes(rng);
  ASSERT_GT(b.size(), 100u);
  // Somewhere in the payload (after the header).
  size_t pos = b.size() - 1 - rng() % (b.size() - 64);
  b[pos] = static_cast<char>(b[pos] ^ 0x10);
  auto e = Engine::deserialize(b, "flipped.plan");
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), StatusCode::kCorruptPlan);
  EXPECT_NE(e.status().message().find("checksum"), std::string::npos) << e.status().to_string();
}

// Format 2's checksum covers every byte but its own, so no change of one byte may load: the header
// (magic, format, the writer's version string, lengths), the checksum and the payload. Format 1 let
// 10 of 760 single-bit flips in the version string load (issue 19).
TEST(Plan, EveryChangedByteFailsToLoad) {
  std::mt19937 rng(7);
  const std::string b = plan_bytes(rng);
  ASSERT_GT(b.size(), 100u);
  ASSERT_TRUE(Engine::deserialize(b, "good.plan").is_ok());
  int loaded = 0;
  for (size_t pos = 0; pos < b.size(); ++pos) {
    for (unsigned mask : {0x01u, 0x02u, 0x04u, 0x08u, 0x10u, 0x20u, 0x40u, 0x80u, 0xffu, 0x5au}) {
      std::string c = b;
      c[pos] = static_cast<char>(static_cast<unsigned char>(c[pos]) ^ mask);
      auto e = Engine::deserialize(c, "flipped.plan");
      if (e.is_ok()) {
        ++loaded;
        ADD_FAILURE() << "byte " << pos << " ^ 0x" << std::hex << mask << " still loads";
        continue;
      }
      EXPECT_EQ(e.status().message().find('\n'), std::string::npos) << e.status().to_string();
    }
  }
  EXPECT_EQ(loaded, 0);
}

// Plans of format 1 (checksum over the payload only) are still read.
TEST(Plan, ReadsFormatVersion1) {
  std::mt19937 rng(11);
  std::string b = plan_bytes(rng);
  ASSERT_GT(b.size(), 100u);
  uint32_t ver_len = 0;
  std::memcpy(&ver_len, b.data() + 12, 4);
  const size_t crc_pos = 16 + ver_len + 8, payload_pos = crc_pos + 4;
  ASSERT_LT(payload_pos, b.size());
  const uint32_t v1 = kPlanFormatVersionPayloadCrc;
  std::memcpy(b.data() + 8, &v1, 4);
  const std::string payload = b.substr(payload_pos);
  const uint32_t crc = static_cast<uint32_t>(
      crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(payload.data()), static_cast<uInt>(payload.size())));
  std::memcpy(b.data() + crc_pos, &crc, 4);
  auto e = Engine::deserialize(b, "v1.plan");
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  // Written back, it is format 2 (one profile).
  auto again = (*e)->serialize();
  ASSERT_TRUE(again.is_ok());
  uint32_t format = 0;
  std::memcpy(&format, again->data() + 8, 4);
  EXPECT_EQ(format, kPlanFormatVersionOneProfile);
  // The same file with its format field saying 2 fails: the checksum is not the one format 2 has.
  const uint32_t v2 = kPlanFormatVersionOneProfile;
  std::memcpy(b.data() + 8, &v2, 4);
  auto bad = Engine::deserialize(b, "v1-as-v2.plan");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("checksum"), std::string::npos) << bad.status().to_string();
}

TEST(Plan, Truncated) {
  std::mt19937 rng(std::random_device{}());
  std::string b = plan_bytes(rng);
  for (size_t keep : {size_t{4}, size_t{10}, b.size() / 2, b.size() - 1}) {
    auto e = Engine::deserialize(b.substr(0, keep), "short.plan");
    ASSERT_FALSE(e.is_ok()) << keep;
    EXPECT_NE(e.status().message().find("truncated"), std::string::npos) << keep << ": " << e.status().to_string();
  }
}

TEST(Plan, UnregisteredCustomOp) {
  // A plan whose graph holds a custom node no registry knows.
  EngineState st;
  st.graph = std::make_unique<Graph>();
  Graph& g = *st.graph;
  g.opset_imports[""] = 17;
  g.opset_imports["my.domain"] = 1;
  g.ir_version = 8;
  Value* x = g.add_value("x");
  x->desc = TensorDesc(DataType::kFloat32, {Dim(2)});
  x->is_graph_input = true;
  g.inputs().push_back(x);
  Node* n = g.add_node("mystery", "NoSuchOp", "my.domain");
  n->inputs.push_back(x);
  n->attrs.set("plugin_version", std::string("3"));
  n->attrs.set("plugin_namespace", std::string("acme"));
  Value* y = g.add_value("y");
  y->producer = n;
  y->is_graph_output = true;
  y->desc = x->desc;
  n->outputs.push_back(y);
  g.outputs().push_back(y);
  auto bytes = write_plan_bytes(st);
  ASSERT_TRUE(bytes.is_ok());
  auto e = Engine::deserialize(bytes.value(), "custom.plan");
  ASSERT_FALSE(e.is_ok());
  const std::string m = e.status().message();
  EXPECT_NE(m.find("op NoSuchOp (domain my.domain, version 3, namespace 'acme') is not registered"),
            std::string::npos) << m;
  EXPECT_NE(m.find("load the plugin library that defines it"), std::string::npos) << m;
}

TEST(Plan, MissingFileAndUnwritableDirectory) {
  auto e = Engine::load_plan("/nonexistent/dir/x.plan");
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), StatusCode::kNotFound);
  std::mt19937 rng(std::random_device{}());
  auto eng = build_small(rng);
  ASSERT_TRUE(eng);
  Status s = eng->save_plan("/nonexistent/dir/x.plan");
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.file(), "/nonexistent/dir/x.plan");
}

}  // namespace
}  // namespace graft
