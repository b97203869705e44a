// ONNX importer: what it accepts, and a clear error for every way a model can be wrong.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <random>

#include "graft/engine.h"
#include "graft/registry.h"
#include "onnx/importer.h"
#include "ops/internal_ops.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/op_test_util.h"

namespace graft {
namespace {

using testing::OnnxModelBuilder;
using testing::random_tensor;

// A model whose one node is an If over a bool input c, each branch one node that reads the outer
// scope's x into the branch's output; `fill(node, branch)` gives that node its op type, domain,
// name and attributes ("then_branch" or "else_branch").
std::string if_model(const std::function<void(onnx::NodeProto&, const std::string&)>& fill) {
  OnnxModelBuilder outer;
  outer.input("c", DataType::kBool, {});
  outer.input("x", DataType::kFloat32, {2});
  outer.node("If", {"c"}, {"y"}, "branch");
  outer.output("y", DataType::kFloat32);
  onnx::ModelProto nested;
  EXPECT_TRUE(nested.ParseFromString(outer.bytes()));
  for (const char* name : {"then_branch", "else_branch"}) {
    auto* a = nested.mutable_graph()->mutable_node(0)->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto* body = a->mutable_g();
    body->set_name(name);
    auto* n = body->add_node();
    fill(*n, name);
    n->add_input("x");
    n->add_output("out");
    auto* o = body->add_output();
    o->set_name("out");
    o->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }
  std::string bytes;
  EXPECT_TRUE(nested.SerializeToString(&bytes));
  return bytes;
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

OnnxModelBuilder relu_model(int64_t opset = 17) {
  OnnxModelBuilder m(opset);
  m.input("x", DataType::kFloat32, {"batch", 3});
  m.node("Relu", {"x"}, {"y"});
  m.output("y", DataType::kFloat32);
  return m;
}

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() / ("graft_importer_" + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

TEST(Importer, SymbolicAndUnnamedDims) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {"batch", testing::DimSpec::dynamic(), 7});
  m.node("Relu", {"x"}, {"y"});
  m.output("y", DataType::kFloat32);
  auto g = import_onnx_bytes(m.bytes(), "dims.onnx");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const Value* x = (*g)->inputs().at(0);
  ASSERT_EQ(x->desc.rank(), 3);
  EXPECT_TRUE((*x->desc.shape)[0].is_symbol());
  EXPECT_EQ((*x->desc.shape)[0].symbol_name(), "batch");
  EXPECT_TRUE((*x->desc.shape)[1].is_symbol());
  EXPECT_NE((*x->desc.shape)[1].symbol_name(), "batch");
  EXPECT_EQ((*x->desc.shape)[2], 7);
}

TEST(Importer, NotProtobuf) {
  TempDir d;
  std::string path = (d.path / "notes.onnx").string();
  std::ofstream(path) << "this is a text file, not an ONNX model\n";
  auto g = import_onnx_file(path);
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().file(), path);
  EXPECT_TRUE(contains(g.status().message(), "not")) << g.status().to_string();
  auto missing = import_onnx_file((d.path / "absent.onnx").string());
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(Importer, TruncatedModel) {
  std::mt19937 rng(std::random_device{}());
  OnnxModelBuilder m = relu_model();
  m.initializer("big", random_tensor(DataType::kFloat32, {64}, rng));
  std::string b = m.bytes();
  for (size_t keep : {b.size() / 3, b.size() / 2, b.size() - 3}) {
    auto g = import_onnx_bytes(b.substr(0, keep), "cut.onnx");
    EXPECT_FALSE(g.is_ok()) << "kept " << keep << " of " << b.size();
  }
}

TEST(Importer, DanglingInputNamesNodeAndValue) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2, 3});
  m.node("Add", {"x", "ghost"}, {"y"}, "adder");
  m.output("y", DataType::kFloat32);
  auto g = import_onnx_bytes(m.bytes(), "dangling.onnx");
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().node_name(), "adder");
  EXPECT_TRUE(contains(g.status().message(), "'ghost'")) << g.status().to_string();
}

// Every builtin op but RNN, LSTM and GRU writes its output 0, and its kernels assume the slot: a
// node without it is refused at import, naming the node (fuzz finding FZ14, a Pad with no outputs
// in a plan). A recurrent node may leave Y out and ask for Y_h alone.
TEST(Importer, NodeWithoutItsFirstOutputIsRefused) {
  for (bool named_empty : {false, true}) {
    OnnxModelBuilder m;
    m.input("x", DataType::kFloat32, {2, 3});
    m.output("x", DataType::kFloat32);
    auto& n = m.node("Relu", {"x"}, {}, "no_output");
    if (named_empty) n.add_output("");
    auto g = import_onnx_bytes(m.bytes(), "no_output.onnx");
    ASSERT_FALSE(g.is_ok());
    EXPECT_EQ(g.status().node_name(), "no_output");
    EXPECT_TRUE(contains(g.status().message(), "no output 0")) << g.status().to_string();
  }
  std::mt19937 rng(std::random_device{}());
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {3, 1, 2});  // [seq, batch, input]
  m.initializer("w", random_tensor(DataType::kFloat32, {1, 4 * 5, 2}, rng));
  m.initializer("r", random_tensor(DataType::kFloat32, {1, 4 * 5, 5}, rng));
  OnnxModelBuilder::attr(m.node("LSTM", {"x", "w", "r"}, {"", "yh"}, "last_state_only"), "hidden_size", int64_t{5});
  m.output("yh", DataType::kFloat32);
  auto g = import_onnx_bytes(m.bytes(), "lstm.onnx");
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
}

// graft's internal ops are not ONNX ops: they live in their own domain (kInternalDomain), and a
// model naming that domain (at the top or inside an If branch) is refused naming the node, not
// imported as graft's fused form. The same name in the default domain is an unknown ONNX op. A
// plan's graph, which graft wrote, still imports them (import_onnx_model).
TEST(Importer, InternalOpsAreRefusedInModels) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {1, 2, 3, 3});
  m.initializer("w", Tensor::from_doubles(DataType::kFloat32, {2, 2, 1, 1}, {0.5, -1, 2, 0.25}));
  m.node("GraftConv", {"x", "w"}, {"y"}, "sneaky", kInternalDomain);
  m.output("y", DataType::kFloat32);
  auto g = import_onnx_bytes(m.bytes(), "internal.onnx");
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().node_name(), "sneaky");
  EXPECT_TRUE(contains(g.status().message(), "internal ops")) << g.status().to_string();
  auto eng = Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, "internal.onnx");
  ASSERT_FALSE(eng.is_ok());
  EXPECT_TRUE(contains(eng.status().to_string(), "sneaky")) << eng.status().to_string();

  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(m.bytes()));
  auto plan_graph = import_onnx_model(model, "plan.onnx", ".");
  ASSERT_TRUE(plan_graph.is_ok()) << plan_graph.status().to_string();
  EXPECT_EQ(plan_graph.value()->nodes().at(0)->domain, kInternalDomain);

  // In the default domain: an unknown ONNX op, for models and plans' graphs alike.
  model.mutable_graph()->mutable_node(0)->clear_domain();
  std::string plain;
  ASSERT_TRUE(model.SerializeToString(&plain));
  auto u = import_onnx_bytes(plain, "plain.onnx");
  ASSERT_FALSE(u.is_ok());
  EXPECT_TRUE(contains(u.status().to_string(), "sneaky")) << u.status().to_string();
  EXPECT_TRUE(contains(u.status().to_string(), "no builtin op")) << u.status().to_string();
  EXPECT_FALSE(import_onnx_model(model, "plan.onnx", ".").is_ok());

  // Inside an If branch.
  const std::string bytes = if_model([](onnx::NodeProto& n, const std::string& branch) {
    n.set_op_type(branch == "then_branch" ? "Relu" : "GraftStridedCopy");
    if (branch == "else_branch") n.set_domain(kInternalDomain);
    n.set_name(branch == "then_branch" ? "fine" : "hidden");
  });
  auto h = import_onnx_bytes(bytes, "nested.onnx");
  ASSERT_FALSE(h.is_ok());
  EXPECT_EQ(h.status().node_name(), "hidden") << h.status().to_string();
}

TEST(Importer, MissingInitializer) {
  // "W" is meant to be a weight, but the model carries no initializer for it.
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2, 3});
  m.node("Mul", {"x", "W"}, {"y"}, "scale");
  m.output("y", DataType::kFloat32);
  auto g = import_onnx_bytes(m.bytes(), "noweights.onnx");
  ASSERT_FALSE(g.is_ok());
  EXPECT_TRUE(contains(g.status().message(), "initializer")) << g.status().to_string();
  EXPECT_TRUE(contains(g.status().message(), "'W'"));
}

TEST(Importer, Cycle) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2});
  m.node("Add", {"x", "b"}, {"a"}, "n1");
  m.node("Relu", {"a"}, {"b"}, "n2");
  m.output("b", DataType::kFloat32);
  auto g = import_onnx_bytes(m.bytes(), "cycle.onnx");
  ASSERT_FALSE(g.is_ok());
  EXPECT_TRUE(contains(g.status().message(), "cycle")) << g.status().to_string();
  EXPECT_TRUE(contains(g.status().message(), "'n1'"));
}

TEST(Importer, DuplicateOutputName) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2});
  m.node("Relu", {"x"}, {"y"}, "first");
  m.node("Neg", {"x"}, {"y"}, "second");
  m.output("y", DataType::kFloat32);
  auto g = import_onnx_bytes(m.bytes(), "dup.onnx");
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().node_name(), "second");
  EXPECT_TRUE(contains(g.status().message(), "'y'"));
}

TEST(Importer, UnknownOpsReportedTogether) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2});
  m.node("FrobnicateV9", {"x"}, {"a"}, "frob");
  m.node("Relu", {"a"}, {"b"});
  m.node("Wibble", {"b"}, {"y"}, "wib", "com.example");
  m.opset("com.example", 1);
  m.output("y", DataType::kFloat32);
  auto g = import_onnx_bytes(m.bytes(), "unknown.onnx");
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), StatusCode::kUnsupported);
  const std::string& msg = g.status().message();
  EXPECT_TRUE(contains(msg, "'frob'") && contains(msg, "FrobnicateV9")) << msg;
  EXPECT_TRUE(contains(msg, "'wib'") && contains(msg, "Wibble")) << msg;
  EXPECT_TRUE(contains(msg, "2 unsupported nodes")) << msg;
}

TEST(Importer, OpsetOutOfRange) {
  // Opsets 1..10 are converted on import (opset_conversion_test.cpp); past 21 is refused.
  for (int64_t opset : {int64_t{22}, int64_t{23}}) {
    auto g = import_onnx_bytes(relu_model(opset).bytes(), "opset.onnx");
    ASSERT_FALSE(g.is_ok());
    const std::string& msg = g.status().message();
    EXPECT_TRUE(contains(msg, "opset " + std::to_string(opset))) << msg;
    EXPECT_TRUE(contains(msg, "1 to 21")) << msg;
  }
  // IR 14 (onnx 1.23's default) imports; a newer one is refused by number.
  for (int64_t version : {int64_t{14}, int64_t{15}}) {
    OnnxModelBuilder ir(17, version);
    ir.input("x", DataType::kFloat32, {2});
    ir.node("Relu", {"x"}, {"y"});
    ir.output("y", DataType::kFloat32);
    auto g = import_onnx_bytes(ir.bytes(), "ir.onnx");
    if (version <= 14) {
      EXPECT_TRUE(g.is_ok()) << g.status().to_string();
      continue;
    }
    ASSERT_FALSE(g.is_ok());
    EXPECT_TRUE(contains(g.status().message(), "IR version 15")) << g.status().to_string();
    EXPECT_TRUE(contains(g.status().message(), "3 to 14")) << g.status().to_string();
  }
}

TEST(Importer, GraphAttributeIsRejectedByName) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2});
  auto& n = m.node("Relu", {"x"}, {"y"}, "weird");
  auto* a = OnnxModelBuilder::new_attr(n, "body", onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name("sub");
  m.output("y", DataType::kFloat32);
  auto g = import_onnx_bytes(m.bytes(), "graphattr.onnx");
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().node_name(), "weird");
  EXPECT_EQ(g.status().attribute(), "body");
}

TEST(Importer, AttributeOfWrongTypeNamesNodeAndAttribute) {
  // Builtin: Concat's axis must be an int.
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2, 3});
  OnnxModelBuilder::attr(m.node("Concat", {"x", "x"}, {"y"}, "cat"), "axis", "zero");
  m.output("y", DataType::kFloat32);
  auto e = Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, "attr.onnx");
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().node_name(), "cat") << e.status().to_string();
  EXPECT_TRUE(contains(e.status().to_string(), "axis")) << e.status().to_string();

  // Custom op: CustomLayer's beta is a float.
  OnnxModelBuilder c;
  c.input("x", DataType::kFloat32, {2, 3});
  OnnxModelBuilder::attr(c.node("CustomLayer", {"x"}, {"y"}, "custom", "ai.onnx.contrib"), "beta", "large");
  c.opset("ai.onnx.contrib", 1);
  c.output("y", DataType::kFloat32);
  auto g = import_onnx_bytes(c.bytes(), "custom_attr.onnx");
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().node_name(), "custom") << g.status().to_string();
  EXPECT_EQ(g.status().attribute(), "beta") << g.status().to_string();
}

// An ONNX op's attributes are those of its schema at the model's opset (libonnx's registry,
// onnx/builtin_schema.h): an attribute the op does not have, or one of another type, is refused
// naming the node and the attribute (the type even where no kernel reads the attribute), in the main graph and in subgraphs, as onnx.checker and ONNX Runtime refuse it and as
// a custom op's unknown attribute is refused. An attribute the op had at an older opset is checked
// against that opset's schema, before the model is converted.
TEST(Importer, UnknownOrMistypedAttributesOfOnnxOpsAreRefused) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2, 3});
  OnnxModelBuilder::attr(m.node("Relu", {"x"}, {"y"}, "act"), "alpha", 0.5f);
  m.output("y", DataType::kFloat32);
  auto g = import_onnx_bytes(m.bytes(), "relu_alpha.onnx");
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().node_name(), "act") << g.status().to_string();
  EXPECT_EQ(g.status().attribute(), "alpha") << g.status().to_string();
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidModel) << g.status().to_string();
  EXPECT_TRUE(contains(g.status().to_string(), "unknown attribute for op Relu-14 (known: none)"))
      << g.status().to_string();
  // An op with attributes lists them.
  OnnxModelBuilder c;
  c.input("x", DataType::kFloat32, {2, 3});
  OnnxModelBuilder::attr(c.node("Concat", {"x", "x"}, {"y"}, "cat"), "axes", int64_t{0});
  c.output("y", DataType::kFloat32);
  auto cg = import_onnx_bytes(c.bytes(), "concat_axes.onnx");
  ASSERT_FALSE(cg.is_ok());
  EXPECT_EQ(cg.status().attribute(), "axes") << cg.status().to_string();
  EXPECT_TRUE(contains(cg.status().to_string(), "(known: axis)")) << cg.status().to_string();

  // Dropout's seed is an int; no inference kernel reads it.
  OnnxModelBuilder d;
  d.input("x", DataType::kFloat32, {2, 3});
  OnnxModelBuilder::attr(d.node("Dropout", {"x"}, {"y"}, "drop"), "seed", 1.5f);
  d.output("y", DataType::kFloat32);
  auto dg = import_onnx_bytes(d.bytes(), "dropout_seed.onnx");
  ASSERT_FALSE(dg.is_ok());
  EXPECT_EQ(dg.status().node_name(), "drop") << dg.status().to_string();
  EXPECT_EQ(dg.status().attribute(), "seed") << dg.status().to_string();
  EXPECT_TRUE(contains(dg.status().to_string(), "expected type int, got float")) << dg.status().to_string();

  // Inside an If branch.
  const std::string bytes = if_model([](onnx::NodeProto& n, const std::string& branch) {
    n.set_op_type("Relu");
    n.set_name(branch == "then_branch" ? "fine" : "odd");
    if (branch == "else_branch") OnnxModelBuilder::attr(n, "slope", 0.1f);
  });
  auto h = import_onnx_bytes(bytes, "nested.onnx");
  ASSERT_FALSE(h.is_ok());
  EXPECT_EQ(h.status().node_name(), "odd") << h.status().to_string();
  EXPECT_EQ(h.status().attribute(), "slope") << h.status().to_string();

  // Dropout's `ratio` is an attribute at opset 10 (an input from 12): a valid opset-10 model.
  OnnxModelBuilder old(10, 5);
  old.input("x", DataType::kFloat32, {2, 3});
  OnnxModelBuilder::attr(old.node("Dropout", {"x"}, {"y"}, "drop"), "ratio", 0.25f);
  old.output("y", DataType::kFloat32);
  auto o = import_onnx_bytes(old.bytes(), "dropout10.onnx");
  EXPECT_TRUE(o.is_ok()) << o.status().to_string();
}

TEST(Importer, CustomOpWithTypedAttribute) {
  OnnxModelBuilder c;
  c.input("x", DataType::kFloat32, {2, 3});
  OnnxModelBuilder::attr(c.node("CustomLayer", {"x"}, {"y"}, "custom", "ai.onnx.contrib"), "beta", 0.25f);
  c.opset("ai.onnx.contrib", 1);
  c.output("y", DataType::kFloat32);
  auto g = import_onnx_bytes(c.bytes(), "custom.onnx");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const Node& n = *(*g)->nodes().at(0);
  ASSERT_TRUE(n.is_custom());
  EXPECT_EQ(*n.attrs.get_float("beta", 0.f), 0.25f);
}

// The seed's convention: a Constant int tensor of character codes spelling {"param": 0.5}.
TEST(Importer, SeedJsonParameterInputBecomesAttribute) {
  std::string json = "{\"param\": 0.5}";
  std::vector<double> codes(json.begin(), json.end());
  OnnxModelBuilder c;
  c.input("x", DataType::kFloat32, {2, 3});
  c.constant("params", Tensor::from_doubles(DataType::kInt64, {static_cast<int64_t>(codes.size())}, codes));
  c.node("CustomLayer", {"x", "params"}, {"y"}, "seed_node", "ai.onnx.contrib");
  c.opset("ai.onnx.contrib", 1);
  c.output("y", DataType::kFloat32);
  auto g = import_onnx_bytes(c.bytes(), "seed.onnx");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  ASSERT_EQ((*g)->nodes().size(), 1u);
  const Node& n = *(*g)->nodes()[0];
  EXPECT_EQ(n.inputs.size(), 1u);
  EXPECT_EQ(*n.attrs.get_float("beta", 0.f), 0.5f);
}

TEST(Importer, TypedInitializerFieldsAndInputDefaults) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {3});
  m.input("w", DataType::kFloat32, {3});  // also an initializer: a constant
  auto* w = m.model().mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(3);
  for (float f : {1.5f, -2.f, 0.25f}) w->add_float_data(f);
  auto* h = m.model().mutable_graph()->add_initializer();
  h->set_name("h");
  h->set_data_type(onnx::TensorProto::FLOAT16);
  h->add_dims(2);
  h->add_int32_data(float_to_half(1.0f));
  h->add_int32_data(float_to_half(-3.5f));
  auto* i8 = m.model().mutable_graph()->add_initializer();
  i8->set_name("i8");
  i8->set_data_type(onnx::TensorProto::INT8);
  i8->add_dims(2);
  i8->add_int32_data(-7);
  i8->add_int32_data(100);
  m.node("Add", {"x", "w"}, {"y"});
  m.output("y", DataType::kFloat32);
  m.output("h", DataType::kFloat16);
  m.output("i8", DataType::kInt8);
  auto g = import_onnx_bytes(m.bytes(), "typed.onnx");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ((*g)->inputs().size(), 1u);
  const Value* wv = (*g)->find_value("w");
  ASSERT_TRUE(wv && wv->constant);
  EXPECT_EQ(wv->constant->get(1), -2.0);
  EXPECT_EQ((*g)->find_value("h")->constant->get(1), -3.5);
  EXPECT_EQ((*g)->find_value("i8")->constant->get(0), -7.0);
  // A count that does not match the dims is an error naming the tensor.
  w->add_float_data(9.f);
  auto bad = import_onnx_bytes(m.bytes(), "typed.onnx");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_TRUE(contains(bad.status().message(), "'w'")) << bad.status().to_string();
}

TEST(Importer, ExternalData) {
  uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  TempDir d;
  Tensor b = random_tensor(DataType::kFloat32, {4}, rng);
  {
    std::ofstream out(d.path / "weights.bin", std::ios::binary);
    out << "PAD!";  // the tensor starts at offset 4
    out.write(static_cast<const char*>(b.data()), static_cast<std::streamsize>(b.nbytes()));
  }
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {4});
  auto* t = m.model().mutable_graph()->add_initializer();
  t->set_name("b");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(4);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto kv = [&](const char* k, const std::string& v) {
    auto* e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  kv("location", "weights.bin");
  kv("offset", "4");
  kv("length", "16");
  m.node("Add", {"x", "b"}, {"y"});
  m.output("y", DataType::kFloat32);
  std::string path = (d.path / "model.onnx").string();
  m.save(path);
  auto g = import_onnx_file(path);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const Value* bv = (*g)->find_value("b");
  ASSERT_TRUE(bv && bv->constant);
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(bv->constant->get(i), b.get(i));

  std::filesystem::remove(d.path / "weights.bin");
  auto missing = import_onnx_file(path);
  ASSERT_FALSE(missing.is_ok());
  EXPECT_TRUE(contains(missing.status().message(), "weights.bin")) << missing.status().to_string();
}

TEST(Importer, ConstantNodesBecomeConstants) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2});
  m.constant("c", Tensor::from_doubles(DataType::kFloat32, {2}, {1.0, 2.0}));
  m.node("Add", {"x", "c"}, {"y"});
  m.output("y", DataType::kFloat32);
  auto g = import_onnx_bytes(m.bytes(), "const.onnx");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ((*g)->nodes().size(), 1u);
  ASSERT_TRUE((*g)->find_value("c")->constant.has_value());
}

}  // namespace
}  // namespace graft
