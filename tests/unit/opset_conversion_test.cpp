// Opset conversion on import (src/onnx/opset_conversion.cpp): models of opsets 1..10 are converted
// to 11 (ONNX's version converter plus graft's adapters) and run with the old semantics; what
// cannot be converted is refused naming the opset and the op; opset 21 is read directly.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "graft/engine.h"
#include "onnx/importer.h"
#include "onnx/opset_conversion.h"
#include "tests/unit/onnx_model_builder.h"

namespace graft {
namespace {

using testing::OnnxModelBuilder;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Builds a CPU engine from `m` and runs it once; returns the named outputs.
Result<std::map<std::string, Tensor>> run_model(const OnnxModelBuilder& m, const std::map<std::string, Tensor>& inputs,
                                                const std::string& name = "old.onnx") {
  GRAFT_ASSIGN_OR_RETURN(auto engine, Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, name));
  GRAFT_ASSIGN_OR_RETURN(auto ctx, engine->create_context());
  std::map<std::string, Tensor> outputs;
  GRAFT_RETURN_IF_ERROR(ctx->run(inputs, outputs));
  return outputs;
}

Tensor f32(std::vector<int64_t> dims, const std::vector<double>& v) {
  return Tensor::from_doubles(DataType::kFloat32, std::move(dims), v);
}

void expect_values(const Tensor& got, const std::vector<int64_t>& dims, const std::vector<double>& want) {
  ASSERT_EQ(got.dims(), dims);
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_NEAR(got.get(i), want[static_cast<size_t>(i)], 1e-6) << "at " << i;
}

// Refusals are kUnsupported and name the opset and the op, in the message and as node context.
void expect_refused(const OnnxModelBuilder& m, int64_t opset, const std::string& op, const std::string& node,
                    const std::string& why) {
  auto g = import_onnx_bytes(m.bytes(), "refused.onnx");
  ASSERT_FALSE(g.is_ok());
  const Status& st = g.status();
  EXPECT_EQ(st.code(), StatusCode::kUnsupported) << st.to_string();
  EXPECT_TRUE(contains(st.message(), "opset " + std::to_string(opset) + " cannot be converted")) << st.to_string();
  EXPECT_TRUE(contains(st.message(), op)) << st.to_string();
  EXPECT_TRUE(contains(st.message(), why)) << st.to_string();
  EXPECT_EQ(st.op_type(), op) << st.to_string();
  EXPECT_EQ(st.node_name(), node) << st.to_string();
}

TEST(OpsetConversion, LegacyBroadcastWithAxis) {
  // Opset 6: B's dims start at `axis` of A's (here the middle one), not at the end as numpy's do.
  OnnxModelBuilder m(6, 3);
  m.input("a", DataType::kFloat32, {2, 3, 2});
  m.input("b", DataType::kFloat32, {3});
  m.input("c", DataType::kFloat32, {2});
  auto& add = m.node("Add", {"a", "b"}, {"s"}, "add");
  OnnxModelBuilder::attr(add, "broadcast", 1);
  OnnxModelBuilder::attr(add, "axis", 1);
  auto& mul = m.node("Mul", {"s", "c"}, {"y"}, "mul");  // no axis: trailing alignment, as numpy
  OnnxModelBuilder::attr(mul, "broadcast", 1);
  m.output("y", DataType::kFloat32);
  std::vector<double> a(12);
  for (int i = 0; i < 12; ++i) a[static_cast<size_t>(i)] = i;
  auto out = run_model(m, {{"a", f32({2, 3, 2}, a)}, {"b", f32({3}, {100, 200, 300})}, {"c", f32({2}, {1, -1})}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  std::vector<double> want(12);
  for (int n = 0; n < 2; ++n)
    for (int k = 0; k < 3; ++k)
      for (int j = 0; j < 2; ++j) {
        const int i = (n * 3 + k) * 2 + j;
        want[static_cast<size_t>(i)] = (i + 100.0 * (k + 1)) * (j == 0 ? 1 : -1);
      }
  expect_values(out->at("y"), {2, 3, 2}, want);
}

TEST(OpsetConversion, LegacyBroadcastOfLogicalOpsAndConsumedInputs) {
  // Opset 1: And with broadcast/axis (ONNX's converter has no adapter for it), Add with the
  // consumed_inputs attribute of opsets 1..5.
  OnnxModelBuilder m(1, 3);
  m.input("p", DataType::kBool, {2, 3});
  m.input("q", DataType::kBool, {2});
  m.input("x", DataType::kFloat32, {2});
  auto& a = m.node("And", {"p", "q"}, {"r"}, "and");
  OnnxModelBuilder::attr(a, "broadcast", 1);
  OnnxModelBuilder::attr(a, "axis", 0);
  auto& add = m.node("Add", {"x", "x"}, {"y"}, "add");
  OnnxModelBuilder::attr(add, "consumed_inputs", std::vector<int64_t>{0, 0});
  m.output("r", DataType::kBool);
  m.output("y", DataType::kFloat32);
  auto out = run_model(m, {{"p", Tensor::from_doubles(DataType::kBool, {2, 3}, {1, 1, 0, 1, 0, 1})},
                           {"q", Tensor::from_doubles(DataType::kBool, {2}, {1, 0})},
                           {"x", f32({2}, {1.5, -2})}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  expect_values(out->at("r"), {2, 3}, {1, 1, 0, 0, 0, 0});
  expect_values(out->at("y"), {2}, {3, -4});
}

TEST(OpsetConversion, ReshapeAttributeAndNumericValueNames) {
  // Reshape-1 takes its shape as an attribute; the conversion adds a value for it. PyTorch's old
  // exporter numbers its values, which is how ONNX's IR names added values too: names must survive.
  OnnxModelBuilder m(4, 3);
  m.input("0", DataType::kFloat32, {2, 3});
  auto& r = m.node("Reshape", {"0"}, {"1"}, "reshape");
  OnnxModelBuilder::attr(r, "shape", std::vector<int64_t>{3, 2});
  m.node("Neg", {"1"}, {"2"}, "neg");
  m.node("Relu", {"2"}, {"3"}, "relu");
  m.output("3", DataType::kFloat32);
  m.output("1", DataType::kFloat32);

  onnx::ModelProto converted;
  ASSERT_TRUE(convert_to_supported_opset(m.model(), &converted).is_ok());
  EXPECT_EQ(default_domain_opset_of(converted), kMinOpset);
  std::set<std::string> produced;
  for (const auto& n : converted.graph().node())
    for (const auto& o : n.output()) EXPECT_TRUE(produced.insert(o).second) << "'" << o << "' produced twice";
  EXPECT_TRUE(produced.count("1") && produced.count("2") && produced.count("3"));
  EXPECT_EQ(converted.graph().input(0).name(), "0");
  EXPECT_EQ(converted.graph().output(0).name(), "3");

  auto out = run_model(m, {{"0", f32({2, 3}, {1, -2, 3, -4, 5, -6})}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  expect_values(out->at("3"), {3, 2}, {0, 2, 0, 4, 0, 6});
  expect_values(out->at("1"), {3, 2}, {1, -2, 3, -4, 5, -6});
}

TEST(OpsetConversion, PadAttributes) {
  // Pad-1 names its pads `paddings`; Pad-2's value defaults to 0. Both become Pad-11's inputs.
  OnnxModelBuilder m1(1, 3);
  m1.input("x", DataType::kFloat32, {1, 2});
  auto& p1 = m1.node("Pad", {"x"}, {"y"}, "pad");
  OnnxModelBuilder::attr(p1, "paddings", std::vector<int64_t>{0, 1, 1, 0});
  OnnxModelBuilder::attr(p1, "value", 1.5f);
  m1.output("y", DataType::kFloat32);
  auto out = run_model(m1, {{"x", f32({1, 2}, {7, 8})}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  expect_values(out->at("y"), {2, 3}, {1.5, 7, 8, 1.5, 1.5, 1.5});

  OnnxModelBuilder m2(2, 3);
  m2.input("x", DataType::kFloat32, {1, 2});
  OnnxModelBuilder::attr(m2.node("Pad", {"x"}, {"y"}, "pad"), "pads", std::vector<int64_t>{0, 2, 0, 1});
  m2.output("y", DataType::kFloat32);
  out = run_model(m2, {{"x", f32({1, 2}, {7, 8})}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  expect_values(out->at("y"), {1, 5}, {0, 0, 7, 8, 0});
}

TEST(OpsetConversion, ClipAttributesTypedLikeTheData) {
  for (DataType dt : {DataType::kFloat32, DataType::kFloat64}) {
    SCOPED_TRACE(dtype_name(dt));
    OnnxModelBuilder m(6, 3);
    m.input("x", dt, {4});
    OnnxModelBuilder::attr(m.node("Clip", {"x"}, {"y"}, "only_max"), "max", 0.5f);
    auto& both = m.node("Clip", {"x"}, {"z"}, "both");
    OnnxModelBuilder::attr(both, "min", -1.0f);
    OnnxModelBuilder::attr(both, "max", 1.0f);
    m.output("y", dt);
    m.output("z", dt);
    auto out = run_model(m, {{"x", Tensor::from_doubles(dt, {4}, {-3, 0.25, 0.75, 2})}});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    EXPECT_EQ(out->at("y").dtype(), dt);
    expect_values(out->at("y"), {4}, {-3, 0.25, 0.5, 0.5});
    expect_values(out->at("z"), {4}, {-1, 0.25, 0.75, 1});
  }
}

TEST(OpsetConversion, CastToByName) {
  // Cast-1's `to` is the type's name.
  OnnxModelBuilder m(1, 3);
  m.input("x", DataType::kFloat32, {3});
  OnnxModelBuilder::attr(m.node("Cast", {"x"}, {"y"}, "cast"), "to", "INT32");
  m.output("y", DataType::kInt32);
  auto out = run_model(m, {{"x", f32({3}, {1.9, -2.5, 7})}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(out->at("y").dtype(), DataType::kInt32);
  expect_values(out->at("y"), {3}, {1, -2, 7});
}

TEST(OpsetConversion, UpsampleAndResize10KeepAsymmetricCoordinates) {
  // Upsample-7 nearest: every input pixel repeated (floor(x / scale)).
  OnnxModelBuilder up(7, 3);
  up.input("x", DataType::kFloat32, {1, 1, 2, 2});
  auto& u = up.node("Upsample", {"x"}, {"y"}, "up");
  OnnxModelBuilder::attr(u, "scales", std::vector<float>{1, 1, 2, 3});
  OnnxModelBuilder::attr(u, "mode", "nearest");
  up.output("y", DataType::kFloat32);
  auto out = run_model(up, {{"x", f32({1, 1, 2, 2}, {1, 2, 3, 4})}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  expect_values(out->at("y"), {1, 1, 4, 6},
                {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});

  // Upsample-1 (height_scale/width_scale, bilinear) and Resize-10 linear: x_in = x_out / scale,
  // clamped at the border.
  const std::vector<double> bilinear = {1, 1.5, 2, 2, 2, 2.5, 3, 3, 3, 3.5, 4, 4, 3, 3.5, 4, 4};
  OnnxModelBuilder up1(1, 3);
  up1.input("x", DataType::kFloat32, {1, 1, 2, 2});
  auto& u1 = up1.node("Upsample", {"x"}, {"y"}, "up1");
  OnnxModelBuilder::attr(u1, "height_scale", 2.0f);
  OnnxModelBuilder::attr(u1, "width_scale", 2.0f);
  OnnxModelBuilder::attr(u1, "mode", "bilinear");
  up1.output("y", DataType::kFloat32);
  out = run_model(up1, {{"x", f32({1, 1, 2, 2}, {1, 2, 3, 4})}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  expect_values(out->at("y"), {1, 1, 4, 4}, bilinear);

  OnnxModelBuilder rs(10, 5);
  rs.input("x", DataType::kFloat32, {1, 1, 2, 2});
  rs.initializer("scales", f32({4}, {1, 1, 2, 2}));
  OnnxModelBuilder::attr(rs.node("Resize", {"x", "scales"}, {"y"}, "resize"), "mode", "linear");
  rs.output("y", DataType::kFloat32);
  out = run_model(rs, {{"x", f32({1, 1, 2, 2}, {1, 2, 3, 4})}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  expect_values(out->at("y"), {1, 1, 4, 4}, bilinear);
}

TEST(OpsetConversion, PReluSlopePerChannel) {
  // Before opset 7 a 1-D slope of C values applies along axis 1.
  OnnxModelBuilder m(6, 3);
  m.input("x", DataType::kFloat32, {1, 2, 2});
  m.initializer("slope", f32({2}, {0.5, 0.25}));
  m.node("PRelu", {"x", "slope"}, {"y"}, "prelu");
  m.output("y", DataType::kFloat32);
  auto out = run_model(m, {{"x", f32({1, 2, 2}, {-2, 2, -4, -8})}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  expect_values(out->at("y"), {1, 2, 2}, {-1, 2, -1, -2});
}

TEST(OpsetConversion, UnknownAndCustomNodesPassThrough) {
  // ONNX's converter fails on nodes it cannot look up; they are kept as they are and the importer
  // resolves them as usual: a registered custom op builds, an unknown op is listed by name.
  OnnxModelBuilder m(9, 4);
  m.input("x", DataType::kFloat32, {2, 3});
  m.node("Relu", {"x"}, {"r"}, "relu");
  OnnxModelBuilder::attr(m.node("CustomLayer", {"r"}, {"y"}, "custom", "ai.onnx.contrib"), "beta", 0.25f);
  m.opset("ai.onnx.contrib", 1);
  m.output("y", DataType::kFloat32);
  auto e = Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, "custom9.onnx");
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();

  // An op newer than the model's opset (Range is opset 11's) is read as at opset 11.
  OnnxModelBuilder r(9, 4);
  r.input("n", DataType::kInt64, {});
  r.initializer("zero", Tensor::from_doubles(DataType::kInt64, {}, {0}));
  r.initializer("one", Tensor::from_doubles(DataType::kInt64, {}, {1}));
  r.node("Range", {"zero", "n", "one"}, {"y"}, "range");
  r.output("y", DataType::kInt64);
  auto ro = run_model(r, {{"n", Tensor::from_doubles(DataType::kInt64, {}, {3})}});
  ASSERT_TRUE(ro.is_ok()) << ro.status().to_string();
  expect_values(ro->at("y"), {3}, {0, 1, 2});

  OnnxModelBuilder u(9, 4);
  u.input("x", DataType::kFloat32, {2});
  u.node("FrobnicateV9", {"x"}, {"y"}, "frob");
  u.output("y", DataType::kFloat32);
  auto g = import_onnx_bytes(u.bytes(), "unknown9.onnx");
  ASSERT_FALSE(g.is_ok());
  EXPECT_TRUE(contains(g.status().message(), "'frob' (FrobnicateV9)")) << g.status().to_string();
  EXPECT_FALSE(contains(g.status().message(), "cannot be converted")) << g.status().to_string();
}

TEST(OpsetConversion, SubgraphsAreConvertedAndKeepOuterNames) {
  // If's branches (read by the control-flow work later) are converted too, outer-scope names intact.
  OnnxModelBuilder m(6, 3);
  m.input("c", DataType::kBool, {});
  m.input("x", DataType::kFloat32, {2, 3});
  m.input("b", DataType::kFloat32, {2});
  auto& n = m.node("If", {"c"}, {"y"}, "if");
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* g = OnnxModelBuilder::new_attr(n, branch, onnx::AttributeProto::GRAPH)->mutable_g();
    g->set_name(branch);
    auto* add = g->add_node();
    add->set_op_type(std::string(branch) == "then_branch" ? "Add" : "Mul");
    add->add_input("x");
    add->add_input("b");
    add->add_output(std::string(branch) + "_out");
    OnnxModelBuilder::attr(*add, "broadcast", 1);
    OnnxModelBuilder::attr(*add, "axis", 0);
    auto* out = g->add_output();
    out->set_name(std::string(branch) + "_out");
    out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }
  m.output("y", DataType::kFloat32);
  onnx::ModelProto converted;
  Status st = convert_to_supported_opset(m.model(), &converted);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(converted.graph().node_size(), 1);
  const onnx::NodeProto& cif = converted.graph().node(0);
  ASSERT_EQ(cif.attribute_size(), 2);
  for (const auto& a : cif.attribute()) {
    SCOPED_TRACE(a.name());
    const onnx::NodeProto* op = nullptr;
    for (const auto& sn : a.g().node())
      if (sn.op_type() == "Add" || sn.op_type() == "Mul") op = &sn;
    ASSERT_NE(op, nullptr);
    EXPECT_EQ(op->attribute_size(), 0);  // broadcast/axis gone
    EXPECT_EQ(op->input(0), "x");
    EXPECT_EQ(op->output(0), a.name() + "_out");
    ASSERT_EQ(a.g().node_size(), 2);  // b unsqueezed to [2, 1]: axis 0 of the outer, rank-2 x
    EXPECT_EQ(a.g().node(0).op_type(), "Unsqueeze");
    EXPECT_EQ(a.g().node(0).input(0), "b");
    EXPECT_EQ(op->input(1), a.g().node(0).output(0));
  }
}

TEST(OpsetConversion, KeepsDeclaredValueInfoOnly) {
  OnnxModelBuilder m(8, 3);
  m.input("x", DataType::kFloat32, {2, 3});
  m.node("Relu", {"x"}, {"a"}, "relu");
  m.node("Neg", {"a"}, {"b"}, "neg");
  m.node("Abs", {"b"}, {"y"}, "abs");
  m.value_info("a", DataType::kFloat32, {2, 3});
  m.output("y", DataType::kFloat32);
  onnx::ModelProto converted;
  ASSERT_TRUE(convert_to_supported_opset(m.model(), &converted).is_ok());
  ASSERT_EQ(converted.graph().value_info_size(), 1);
  EXPECT_EQ(converted.graph().value_info(0).name(), "a");
  ASSERT_EQ(converted.graph().node_size(), 3);
  EXPECT_EQ(converted.graph().node(1).name(), "neg");
}

TEST(OpsetConversion, ExternalDataSurvives) {
  const auto dir = std::filesystem::temp_directory_path() / ("graft_opset_" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  const std::vector<float> w = {1.f, 2.f, 3.f, 4.f};
  {
    std::ofstream out(dir / "w.bin", std::ios::binary);
    out.write(reinterpret_cast<const char*>(w.data()), static_cast<std::streamsize>(w.size() * sizeof(float)));
  }
  OnnxModelBuilder m(9, 4);
  m.input("x", DataType::kFloat32, {4});
  auto* t = m.model().mutable_graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(4);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* e = t->add_external_data();
  e->set_key("location");
  e->set_value("w.bin");
  m.node("Mul", {"x", "w"}, {"y"}, "mul");
  m.output("y", DataType::kFloat32);
  const std::string path = (dir / "model.onnx").string();
  m.save(path);
  auto engine = Engine::build_from_onnx_file(path, BuilderConfig{});
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  auto ctx = (*engine)->create_context();
  ASSERT_TRUE(ctx.is_ok());
  std::map<std::string, Tensor> outputs;
  ASSERT_TRUE((*ctx)->run({{"x", f32({4}, {1, 1, 2, 2})}}, outputs).is_ok());
  expect_values(outputs.at("y"), {4}, {1, 2, 6, 8});
}

TEST(OpsetConversion, LargeWeightsSurvive) {
  // Large initializers bypass the converter and get their data back.
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> w(5000), x(5000);
  for (auto& v : w) v = u(rng);
  for (auto& v : x) v = u(rng);
  OnnxModelBuilder m(8, 3);
  m.input("x", DataType::kFloat32, {5000});
  m.initializer("w", f32({5000}, w));
  m.node("Add", {"x", "w"}, {"y"}, "add");
  m.output("y", DataType::kFloat32);
  auto out = run_model(m, {{"x", f32({5000}, x)}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  std::vector<double> want(5000);
  for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<float>(x[i]) + static_cast<float>(w[i]);
  expect_values(out->at("y"), {5000}, want);
}

// Scan-8: state [1, 2] and scan input [1, 3, 2] (batch 1, three steps), scanned backwards; the body
// adds each row to the running sum and emits the sum. Converted to Scan-9 between Squeeze and
// Unsqueeze, with the outputs' names kept. A batch of 2, or sequence_lens, is refused with the reason.
OnnxModelBuilder scan8_model(int64_t batch, bool with_lens) {
  OnnxModelBuilder m(8, 3);
  if (with_lens) m.input("lens", DataType::kInt32, {batch});
  m.input("init", DataType::kFloat32, {batch, 2});
  m.input("x", DataType::kFloat32, {batch, 3, 2});
  auto& n = m.node("Scan", {with_lens ? "lens" : "", "init", "x"}, {"sum", "sums"}, "scan");
  OnnxModelBuilder::attr(n, "num_scan_inputs", int64_t{1});
  auto* dirs = OnnxModelBuilder::new_attr(n, "directions", onnx::AttributeProto::INTS);
  dirs->add_ints(1);
  testing::graph_attr(n, "body")
      .input("s_in", DataType::kFloat32)
      .input("row", DataType::kFloat32)
      .node("Add", {"s_in", "row"}, {"s_out"})
      .node("Identity", {"s_out"}, {"emit"})
      .output("s_out")
      .output("emit");
  m.output("sum", DataType::kFloat32);
  m.output("sums", DataType::kFloat32);
  return m;
}

TEST(OpsetConversion, Scan8WithBatchOneBecomesScan9) {
  auto out = run_model(scan8_model(1, false), {{"init", f32({1, 2}, {0.5, -1})},
                                              {"x", f32({1, 3, 2}, {1, 2, 3, 4, 5, 6})}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  // Backwards: rows (5, 6), (3, 4), (1, 2) added in that order.
  expect_values((*out)["sum"], {1, 2}, {9.5, 11});
  expect_values((*out)["sums"], {1, 3, 2}, {5.5, 5, 8.5, 9, 9.5, 11});  // in iteration order
  expect_refused(scan8_model(2, false), 8, "Scan", "scan", "only for a batch of 1");
  expect_refused(scan8_model(1, true), 8, "Scan", "scan", "sequence_lens");
}

TEST(OpsetConversion, RefusalsNameTheOpsetAndTheOp) {
  {  // Tile-1 (tiles and axis inputs): no adapter to Tile-6, in ONNX or graft.
    OnnxModelBuilder m(5, 3);
    m.input("x", DataType::kFloat32, {2});
    m.initializer("tiles", Tensor::vector_int64({2}));
    m.initializer("axis", Tensor::vector_int64({0}));
    m.node("Tile", {"x", "tiles", "axis"}, {"y"}, "tile");
    m.output("y", DataType::kFloat32);
    expect_refused(m, 5, "Tile", "tile", "from opset 5 to 6");
  }
  {  // BatchNormalization in training mode (is_test=0) has no opset-7 form.
    OnnxModelBuilder m(6, 3);
    m.input("x", DataType::kFloat32, {1, 2, 2});
    for (const char* p : {"s", "b", "mean", "var"}) m.initializer(p, f32({2}, {1, 1}));
    OnnxModelBuilder::attr(m.node("BatchNormalization", {"x", "s", "b", "mean", "var"}, {"y"}, "bn"), "is_test", 0);
    m.output("y", DataType::kFloat32);
    expect_refused(m, 6, "BatchNormalization", "bn", "is_test");
  }
  {  // Dropout's mask changes type at 10.
    OnnxModelBuilder m(7, 3);
    m.input("x", DataType::kFloat32, {2});
    m.node("Dropout", {"x"}, {"y", "mask"}, "drop");
    m.output("y", DataType::kFloat32);
    m.output("mask", DataType::kFloat32);
    expect_refused(m, 7, "Dropout", "drop", "mask");
  }
  {  // Legacy broadcast with an axis needs ranks; a custom op's output has none.
    OnnxModelBuilder m(6, 3);
    m.input("x", DataType::kFloat32, {2, 3});
    m.input("b", DataType::kFloat32, {3});
    m.node("Mystery", {"x"}, {"m"}, "mystery", "com.example");
    m.opset("com.example", 1);
    auto& add = m.node("Add", {"m", "b"}, {"y"}, "add");
    OnnxModelBuilder::attr(add, "broadcast", 1);
    OnnxModelBuilder::attr(add, "axis", 1);
    m.output("y", DataType::kFloat32);
    expect_refused(m, 6, "Add", "add", "ranks");
  }
  {  // Malformed: Reshape-4 without its shape. ONNX's IR asserts; no exception leaves graft.
    OnnxModelBuilder m(4, 3);
    m.input("x", DataType::kFloat32, {2});
    m.node("Reshape", {"x"}, {"y"}, "reshape");
    m.output("y", DataType::kFloat32);
    expect_refused(m, 4, "Reshape", "reshape", "shape");
  }
}

TEST(OpsetConversion, Opset21ReadDirectly) {
  // The ops that changed at 21 changed in the types they accept; their meaning is opset 18..20's.
  OnnxModelBuilder m(21, 10);
  m.input("x", DataType::kFloat32, {2, 2});
  m.initializer("axes", Tensor::vector_int64({0}));
  m.initializer("pads", Tensor::vector_int64({0, 0, 0, 0, 0, 1}));
  m.initializer("value", Tensor::from_doubles(DataType::kFloat32, {}, {9}));
  m.initializer("shape", Tensor::vector_int64({-1}));
  m.node("Unsqueeze", {"x", "axes"}, {"u"}, "unsqueeze");
  m.node("Pad", {"u", "pads", "value"}, {"p"}, "pad");
  auto& t = m.node("Transpose", {"p"}, {"t"}, "transpose");
  OnnxModelBuilder::attr(t, "perm", std::vector<int64_t>{0, 2, 1});
  m.node("Reshape", {"t", "shape"}, {"r"}, "reshape");
  OnnxModelBuilder::attr(m.node("Cast", {"r"}, {"y"}, "cast"), "to", int64_t{onnx::TensorProto::INT64});
  m.output("y", DataType::kInt64);
  auto out = run_model(m, {{"x", f32({2, 2}, {1, 2, 3, 4})}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(out->at("y").dtype(), DataType::kInt64);
  expect_values(out->at("y"), {6}, {1, 3, 2, 4, 9, 9});
}

TEST(OpsetConversion, OpsetRange) {
  auto relu = [](int64_t opset) {
    OnnxModelBuilder m(opset, opset >= 21 ? 10 : 8);
    m.input("x", DataType::kFloat32, {2});
    m.node("Relu", {"x"}, {"y"});
    m.output("y", DataType::kFloat32);
    return m;
  };
  for (int64_t opset = 1; opset <= kMaxOpset; ++opset) {
    auto out = run_model(relu(opset), {{"x", f32({2}, {-1, 2})}});
    ASSERT_TRUE(out.is_ok()) << "opset " << opset << ": " << out.status().to_string();
    expect_values(out->at("y"), {2}, {0, 2});
  }
  for (int64_t opset : {int64_t{0}, int64_t{22}}) {
    auto g = import_onnx_bytes(relu(opset).bytes(), "range.onnx");
    ASSERT_FALSE(g.is_ok()) << opset;
    EXPECT_EQ(g.status().code(), StatusCode::kUnsupported);
    EXPECT_TRUE(contains(g.status().message(), "opset " + std::to_string(opset))) << g.status().to_string();
  }
}

}  // namespace
}  // namespace graft
