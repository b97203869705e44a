// Sequence and optional values (ValueKind) and their ops (schemas and CPU kernels, SequenceMap's
// included: src/ops/control_flow/). Ops run through run_node_cpu, as the engine runs them, on fresh
// random data, and are compared with the same computation written out here: slices taken by hand,
// positions counted by hand. Then models with sequence inputs and outputs (SequenceMap, a Loop that
// carries a sequence, If returning an optional), plan round trips, and the errors: positions out of
// range, an empty sequence, dtype mismatches, a sequence where a tensor belongs, a CUDA engine.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <tuple>
#include <string>
#include <vector>

#include "graft/engine.h"
#include "onnx/importer.h"
#include "onnx_model_builder.h"
#include "op_test_util.h"
#include "graph/passes.h"
#include "runtime/cpu_executor.h"
#include "runtime/device_engine.h"

namespace graft {
namespace {

using testing::contains;
using testing::OnnxModelBuilder;
using testing::random_tensor;
using testing::values;

uint32_t seed() { return testing::process_seed(); }

// Runs builtin `op` on `in` the way the engine does (inference over the values, then the kernel).
Result<std::vector<Tensor>> run(const std::string& op, const std::vector<Tensor>& in, AttributeMap attrs = {},
                                size_t num_outputs = 1, int opset = 17) {
  Graph g;
  Node* n = g.add_node("node_" + op, op);
  n->opset = opset;
  n->attrs = std::move(attrs);
  std::vector<const Tensor*> ins;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i].defined()) {
      n->inputs.push_back(nullptr);
      ins.push_back(nullptr);
      continue;
    }
    Value* v = g.add_value("in" + std::to_string(i));
    v->desc = desc_of_value(in[i]);
    n->inputs.push_back(v);
    ins.push_back(&in[i]);
  }
  for (size_t o = 0; o < num_outputs; ++o) {
    Value* v = g.add_value("out" + std::to_string(o));
    v->producer = n;
    n->outputs.push_back(v);
  }
  return run_node_cpu(*n, ins);
}

Tensor seq_of(const std::vector<Tensor>& items, DataType dt = DataType::kFloat32) {
  auto s = Tensor::sequence(dt, items);
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? s.value() : Tensor();
}

Tensor i64(int64_t v) { return Tensor::scalar_int64(v); }

// Random float tensors of the given shapes, each different (never zeros).
std::vector<Tensor> random_items(const std::vector<std::vector<int64_t>>& shapes, std::mt19937& rng) {
  std::vector<Tensor> out;
  for (const auto& s : shapes) out.push_back(random_tensor(DataType::kFloat32, s, rng, 0.5, 2.0));
  return out;
}

void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_TRUE(got.is_tensor()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.dims(), want.dims()) << what;
  EXPECT_EQ(values(got), values(want)) << what;
}

void expect_error(const Result<std::vector<Tensor>>& r, const std::string& part) {
  ASSERT_FALSE(r.is_ok()) << "expected an error containing '" << part << "'";
  EXPECT_TRUE(contains(r.status().to_string(), part)) << r.status().to_string();
}

// ---- the ops, one by one -----------------------------------------------------------------------

TEST(SequenceOps, ConstructAtAndLength) {
  std::mt19937 rng(seed());
  SCOPED_TRACE("seed " + std::to_string(seed()));
  std::vector<Tensor> items = random_items({{2, 3}, {4}, {1, 1, 2}}, rng);
  auto seq = run("SequenceConstruct", items);
  ASSERT_TRUE(seq.is_ok()) << seq.status().to_string();
  const Tensor& s = (*seq)[0];
  ASSERT_EQ(s.kind(), ValueKind::kSequence);
  ASSERT_EQ(s.items().size(), 3u);
  auto len = run("SequenceLength", {s});
  ASSERT_TRUE(len.is_ok()) << len.status().to_string();
  EXPECT_EQ((*len)[0].dtype(), DataType::kInt64);
  EXPECT_EQ((*len)[0].get(0), 3);
  // Every position, counted from the front and from the back.
  for (int64_t p = -3; p < 3; ++p) {
    auto at = run("SequenceAt", {s, i64(p)});
    ASSERT_TRUE(at.is_ok()) << at.status().to_string();
    expect_same((*at)[0], items[static_cast<size_t>(p < 0 ? p + 3 : p)], "SequenceAt " + std::to_string(p));
  }
  // An int32 position reads the same.
  auto at32 = run("SequenceAt", {s, Tensor::from_doubles(DataType::kInt32, {}, {1})});
  ASSERT_TRUE(at32.is_ok()) << at32.status().to_string();
  expect_same((*at32)[0], items[1], "int32 position");
}

TEST(SequenceOps, InsertAtEveryPositionAndErase) {
  std::mt19937 rng(seed());
  SCOPED_TRACE("seed " + std::to_string(seed()));
  std::vector<Tensor> items = random_items({{3}, {3}, {3}}, rng);
  const Tensor x = random_tensor(DataType::kFloat32, {2, 2}, rng, 3.0, 4.0);
  const Tensor s = seq_of(items);
  // Default: at the back.
  auto back = run("SequenceInsert", {s, x});
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  ASSERT_EQ((*back)[0].items().size(), 4u);
  expect_same((*back)[0].items()[3], x, "insert at the back");
  for (int64_t p = -3; p <= 3; ++p) {
    auto r = run("SequenceInsert", {s, x, i64(p)});
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    const size_t at = static_cast<size_t>(p < 0 ? p + 3 : p);
    std::vector<Tensor> want = items;
    want.insert(want.begin() + static_cast<ptrdiff_t>(at), x);
    ASSERT_EQ((*r)[0].items().size(), 4u);
    for (size_t i = 0; i < 4; ++i) expect_same((*r)[0].items()[i], want[i], "insert at " + std::to_string(p));
  }
  // The input sequence is a value: inserting made new sequences and left it as it was.
  EXPECT_EQ(s.items().size(), 3u);
  // Erase: the last by default, else the position given.
  auto last = run("SequenceErase", {s});
  ASSERT_TRUE(last.is_ok()) << last.status().to_string();
  ASSERT_EQ((*last)[0].items().size(), 2u);
  expect_same((*last)[0].items()[1], items[1], "erase the last");
  auto first = run("SequenceErase", {s, i64(-3)});
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  ASSERT_EQ((*first)[0].items().size(), 2u);
  expect_same((*first)[0].items()[0], items[1], "erase position -3");
  expect_same((*first)[0].items()[1], items[2], "erase position -3");
}

TEST(SequenceOps, EmptySequenceThenInserts) {
  std::mt19937 rng(seed());
  SCOPED_TRACE("seed " + std::to_string(seed()));
  AttributeMap a;
  a.set("dtype", AttrValue(int64_t{7}));  // int64
  auto e = run("SequenceEmpty", {}, a);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  ASSERT_EQ((*e)[0].kind(), ValueKind::kSequence);
  EXPECT_EQ((*e)[0].dtype(), DataType::kInt64);
  EXPECT_TRUE((*e)[0].items().empty());
  const Tensor x = random_tensor(DataType::kInt64, {5}, rng, 1, 100);
  auto one = run("SequenceInsert", {(*e)[0], x});
  ASSERT_TRUE(one.is_ok()) << one.status().to_string();
  auto at = run("SequenceAt", {(*one)[0], i64(0)});
  ASSERT_TRUE(at.is_ok()) << at.status().to_string();
  expect_same((*at)[0], x, "the one tensor inserted");
  // The default dtype is float32.
  auto f = run("SequenceEmpty", {});
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ((*f)[0].dtype(), DataType::kFloat32);
}

TEST(SequenceOps, SplitToSequenceMatchesSlicesTakenByHand) {
  std::mt19937 rng(seed());
  SCOPED_TRACE("seed " + std::to_string(seed()));
  const Tensor x = random_tensor(DataType::kFloat32, {2, 5, 3}, rng, 0.5, 2.0);
  auto at = [&](int64_t i, int64_t j, int64_t k) { return x.get((i * 5 + j) * 3 + k); };
  // x[:, begin:begin+len, :] written out.
  auto slice = [&](int64_t begin, int64_t len) {
    std::vector<double> v;
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = begin; j < begin + len; ++j)
        for (int64_t k = 0; k < 3; ++k) v.push_back(at(i, j, k));
    return v;
  };
  struct Case {
    Tensor split;
    int64_t keepdims;
    std::vector<int64_t> lengths;
  };
  std::vector<Case> cases = {
      {Tensor(), 1, {1, 1, 1, 1, 1}},
      {Tensor(), 0, {1, 1, 1, 1, 1}},
      {i64(2), 1, {2, 2, 1}},  // a scalar that does not divide 5: the last chunk is shorter
      {Tensor::vector_int64({1, 0, 4}), 0, {1, 0, 4}},  // keepdims is ignored with a split
      {Tensor::from_doubles(DataType::kInt32, {2}, {3, 2}), 1, {3, 2}},
  };
  for (const Case& c : cases) {
    AttributeMap a;
    a.set("axis", AttrValue(int64_t{-2}));
    a.set("keepdims", AttrValue(c.keepdims));
    std::vector<Tensor> in{x};
    if (c.split.defined()) in.push_back(c.split);
    auto r = run("SplitToSequence", in, a);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    const Tensor& s = (*r)[0];
    ASSERT_EQ(s.items().size(), c.lengths.size());
    int64_t begin = 0;
    for (size_t i = 0; i < c.lengths.size(); ++i) {
      const Tensor& t = s.items()[i];
      std::vector<int64_t> dims{2, c.lengths[i], 3};
      if (!c.split.defined() && c.keepdims == 0) dims = {2, 3};
      EXPECT_EQ(t.dims(), dims) << "chunk " << i;
      EXPECT_EQ(values(t), slice(begin, c.lengths[i])) << "chunk " << i;
      begin += c.lengths[i];
    }
  }
  // Lengths that do not add up to the axis, or a negative one, are errors naming the numbers.
  AttributeMap a;
  a.set("axis", AttrValue(int64_t{1}));
  expect_error(run("SplitToSequence", {x, Tensor::vector_int64({2, 2})}, a), "sum to 4 but the axis has 5");
  expect_error(run("SplitToSequence", {x, Tensor::vector_int64({6, -1})}, a), "non-negative");
  expect_error(run("SplitToSequence", {x, i64(0)}, a), "must be positive");
}

TEST(SequenceOps, ConcatFromSequenceConcatenatesAndStacks) {
  std::mt19937 rng(seed());
  SCOPED_TRACE("seed " + std::to_string(seed()));
  std::vector<Tensor> items = random_items({{2, 1}, {2, 3}, {2, 2}}, rng);
  const Tensor s = seq_of(items);
  AttributeMap a;
  a.set("axis", AttrValue(int64_t{1}));
  auto cat = run("ConcatFromSequence", {s}, a);
  ASSERT_TRUE(cat.is_ok()) << cat.status().to_string();
  ASSERT_EQ((*cat)[0].dims(), (std::vector<int64_t>{2, 6}));
  std::vector<double> want;
  for (int64_t r = 0; r < 2; ++r)
    for (const Tensor& t : items)
      for (int64_t c = 0; c < t.dims()[1]; ++c) want.push_back(t.get(r * t.dims()[1] + c));
  EXPECT_EQ(values((*cat)[0]), want);

  // Stacking along a new last axis: y[i, j, k] = items[k][i, j].
  std::vector<Tensor> same = random_items({{2, 3}, {2, 3}}, rng);
  AttributeMap st;
  st.set("axis", AttrValue(int64_t{-1}));
  st.set("new_axis", AttrValue(int64_t{1}));
  auto stacked = run("ConcatFromSequence", {seq_of(same)}, st);
  ASSERT_TRUE(stacked.is_ok()) << stacked.status().to_string();
  ASSERT_EQ((*stacked)[0].dims(), (std::vector<int64_t>{2, 3, 2}));
  for (int64_t e = 0; e < 6; ++e)
    for (int64_t k = 0; k < 2; ++k) EXPECT_EQ((*stacked)[0].get(e * 2 + k), same[static_cast<size_t>(k)].get(e));

  // Split then concatenate along the same axis gives the tensor back.
  const Tensor x = random_tensor(DataType::kFloat32, {3, 4}, rng, 0.5, 2.0);
  AttributeMap ax0;
  ax0.set("axis", AttrValue(int64_t{0}));
  auto split = run("SplitToSequence", {x, Tensor::vector_int64({2, 1})}, ax0);
  ASSERT_TRUE(split.is_ok()) << split.status().to_string();
  auto back = run("ConcatFromSequence", {(*split)[0]}, ax0);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  expect_same((*back)[0], x, "split then concat");

  // Tensors that disagree off the axis, stacking tensors of different shapes, an empty sequence.
  AttributeMap ax0b = ax0;
  expect_error(run("ConcatFromSequence", {s}, ax0b), "must agree on every axis but 0");
  expect_error(run("ConcatFromSequence", {s}, st), "must have the same shape");
  expect_error(run("ConcatFromSequence", {seq_of({})}, a), "the sequence is empty");
}

TEST(SequenceOps, OptionalHoldsAndHandsBack) {
  std::mt19937 rng(seed());
  SCOPED_TRACE("seed " + std::to_string(seed()));
  const Tensor x = random_tensor(DataType::kFloat32, {3, 2}, rng, 0.5, 2.0);
  auto o = run("Optional", {x});
  ASSERT_TRUE(o.is_ok()) << o.status().to_string();
  ASSERT_EQ((*o)[0].kind(), ValueKind::kOptionalTensor);
  auto has = run("OptionalHasElement", {(*o)[0]});
  ASSERT_TRUE(has.is_ok()) << has.status().to_string();
  EXPECT_EQ((*has)[0].get(0), 1);
  auto got = run("OptionalGetElement", {(*o)[0]});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  expect_same((*got)[0], x, "OptionalGetElement");

  // An optional sequence; an empty optional from the type attribute (a sequence of int32 [2]).
  const Tensor s = seq_of(random_items({{2}, {2}}, rng));
  auto os = run("Optional", {s});
  ASSERT_TRUE(os.is_ok()) << os.status().to_string();
  EXPECT_EQ((*os)[0].kind(), ValueKind::kOptionalSequence);
  auto back = run("OptionalGetElement", {(*os)[0]});
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  ASSERT_EQ((*back)[0].items().size(), 2u);
  expect_same((*back)[0].items()[1], s.items()[1], "sequence out of an optional");
  AttributeMap t;
  t.set("type", AttrValue(std::vector<int64_t>{1, 6, 1, 2}));
  auto none = run("Optional", {}, t);
  ASSERT_TRUE(none.is_ok()) << none.status().to_string();
  EXPECT_EQ((*none)[0].kind(), ValueKind::kOptionalSequence);
  EXPECT_EQ((*none)[0].dtype(), DataType::kInt32);
  auto empty = run("OptionalHasElement", {(*none)[0]});
  ASSERT_TRUE(empty.is_ok()) << empty.status().to_string();
  EXPECT_EQ((*empty)[0].get(0), 0);
  expect_error(run("OptionalGetElement", {(*none)[0]}), "the optional holds no value");
  // Opset 18: a plain tensor has an element, and is its own element.
  auto plain = run("OptionalHasElement", {x});
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  EXPECT_EQ((*plain)[0].get(0), 1);
}

// ---- errors ---------------------------------------------------------------------------------------

TEST(SequenceOps, PositionsOutOfRangeAndEmptySequencesAreErrors) {
  std::mt19937 rng(seed());
  const Tensor s = seq_of(random_items({{2}, {2}}, rng));
  expect_error(run("SequenceAt", {s, i64(2)}), "position 2 is out of range for a sequence of 2 tensors (valid: -2 to 1)");
  expect_error(run("SequenceAt", {s, i64(-3)}), "position -3 is out of range");
  expect_error(run("SequenceInsert", {s, random_tensor(DataType::kFloat32, {2}, rng), i64(3)}),
               "(valid: -2 to 2)");
  expect_error(run("SequenceErase", {s, i64(2)}), "position 2 is out of range");
  const Tensor empty = seq_of({});
  expect_error(run("SequenceAt", {empty, i64(0)}), "the sequence is empty");
  expect_error(run("SequenceErase", {empty}), "no tensor to erase");
  // A position of two elements, or a float one.
  expect_error(run("SequenceAt", {s, Tensor::vector_int64({0, 1})}), "one element");
  expect_error(run("SequenceAt", {s, Tensor::from_doubles(DataType::kFloat32, {}, {0})}), "float32");
  // Errors name the node.
  auto r = run("SequenceAt", {s, i64(5)});
  ASSERT_FALSE(r.is_ok());
  EXPECT_TRUE(contains(r.status().to_string(), "node_SequenceAt")) << r.status().to_string();
}

TEST(SequenceOps, DtypeAndKindMismatchesAreErrors) {
  std::mt19937 rng(seed());
  const Tensor s = seq_of(random_items({{2}}, rng));
  const Tensor ints = random_tensor(DataType::kInt64, {2}, rng, 1, 9);
  expect_error(run("SequenceInsert", {s, ints}), "is int64 but the sequence holds float32");
  expect_error(run("SequenceConstruct", {random_tensor(DataType::kFloat32, {2}, rng), ints}),
               "is int64 but the sequence holds float32");
  // A sequence where a tensor belongs, and a tensor where a sequence belongs.
  expect_error(run("Relu", {s}), "is a sequence (seq(float32[2])); Relu takes tensors");
  expect_error(run("SequenceAt", {ints, i64(0)}), "must be a sequence, not a tensor");
  expect_error(run("Optional", {run("Optional", {ints})->at(0)}), "already an optional");
  // Tensor::sequence itself refuses a tensor of another dtype.
  auto bad = Tensor::sequence(DataType::kFloat32, {ints});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_TRUE(contains(bad.status().to_string(), "sequence item 0 is int64")) << bad.status().to_string();
}

// ---- models -----------------------------------------------------------------------------------

// A graph value of a container type: seq(float32[dims]) or optional(...) of it.
void typed(onnx::ValueInfoProto* vi, const std::string& name, ValueKind kind, DataType dt,
           const std::vector<int64_t>* dims = nullptr) {
  vi->set_name(name);
  onnx::TypeProto* tp = vi->mutable_type();
  if (is_optional_kind(kind)) tp = tp->mutable_optional_type()->mutable_elem_type();
  if (kind == ValueKind::kSequence || kind == ValueKind::kOptionalSequence)
    tp = tp->mutable_sequence_type()->mutable_elem_type();
  auto* tt = tp->mutable_tensor_type();
  tt->set_elem_type(static_cast<int>(dt));
  if (dims)
    for (int64_t d : *dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

Result<std::map<std::string, Tensor>> run_model(const OnnxModelBuilder& m, const std::map<std::string, Tensor>& in,
                                                bool round_trip) {
  GRAFT_ASSIGN_OR_RETURN(auto engine, Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, "seq.onnx"));
  if (round_trip) {
    GRAFT_ASSIGN_OR_RETURN(std::string plan, engine->serialize());
    GRAFT_ASSIGN_OR_RETURN(engine, Engine::deserialize(plan, "seq.plan"));
  }
  GRAFT_ASSIGN_OR_RETURN(auto ctx, engine->create_context());
  std::map<std::string, Tensor> out;
  GRAFT_RETURN_IF_ERROR(ctx->run(in, out));
  return out;
}

// ys = SequenceMap(xs, b) with body y = x * b + x; n = SequenceLength(ys); e = Identity(xs).
OnnxModelBuilder map_model() {
  OnnxModelBuilder m(17);
  typed(m.model().mutable_graph()->add_input(), "xs", ValueKind::kSequence, DataType::kFloat32);
  m.input("b", DataType::kFloat32, {3});
  auto& n = m.node("SequenceMap", {"xs", "b"}, {"ys"}, "map");
  auto* g = OnnxModelBuilder::new_attr(n, "body", onnx::AttributeProto::GRAPH)->mutable_g();
  g->set_name("body");
  g->add_input()->set_name("x");
  g->add_input()->set_name("bb");
  for (auto [op, in, out] : {std::tuple{"Mul", std::vector<std::string>{"x", "bb"}, "xb"},
                             std::tuple{"Add", std::vector<std::string>{"xb", "x"}, "y"}}) {
    auto* node = g->add_node();
    node->set_op_type(op);
    for (const auto& i : in) node->add_input(i);
    node->add_output(out);
  }
  g->add_output()->set_name("y");
  m.node("SequenceLength", {"ys"}, {"n"});
  m.node("Identity", {"xs"}, {"e"});
  typed(m.model().mutable_graph()->add_output(), "ys", ValueKind::kSequence, DataType::kFloat32);
  m.output("n", DataType::kInt64, {});
  typed(m.model().mutable_graph()->add_output(), "e", ValueKind::kSequence, DataType::kFloat32);
  return m;
}

TEST(SequenceModels, SequenceMapOverTensorsOfDifferentShapes) {
  std::mt19937 rng(seed());
  SCOPED_TRACE("seed " + std::to_string(seed()));
  for (bool round_trip : {false, true}) {
    std::vector<Tensor> xs = random_items({{2, 3}, {3}, {4, 1, 3}}, rng);
    const Tensor b = random_tensor(DataType::kFloat32, {3}, rng, 0.5, 2.0);
    auto out = run_model(map_model(), {{"xs", seq_of(xs)}, {"b", b}}, round_trip);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    const Tensor& ys = out->at("ys");
    ASSERT_EQ(ys.kind(), ValueKind::kSequence);
    ASSERT_EQ(ys.items().size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      std::vector<double> want;
      for (int64_t e = 0; e < xs[i].numel(); ++e) want.push_back(xs[i].get(e) * b.get(e % 3) + xs[i].get(e));
      ASSERT_EQ(ys.items()[i].dims(), xs[i].dims());
      testing::expect_values_close(ys.items()[i], want, 1e-6, "ys[" + std::to_string(i) + "]");
    }
    EXPECT_EQ(out->at("n").get(0), 3);
    // Identity hands the sequence back, as copies the caller owns.
    const Tensor& e = out->at("e");
    ASSERT_EQ(e.items().size(), 3u);
    expect_same(e.items()[2], xs[2], "Identity of a sequence");
    EXPECT_NE(e.items()[2].data(), xs[2].data());
  }
  // An empty sequence maps to an empty sequence of the body's dtype.
  auto none = run_model(map_model(), {{"xs", seq_of({})}, {"b", random_tensor(DataType::kFloat32, {3}, rng)}}, false);
  ASSERT_TRUE(none.is_ok()) << none.status().to_string();
  EXPECT_TRUE(none->at("ys").items().empty());
  EXPECT_EQ(none->at("n").get(0), 0);
}

// A container's tensors live on one device, which Tensor::device() reports: a CUDA engine keeps
// sequences of GPU tensors, and the CPU engine refuses one as an input. Device tensors are stood
// in for by Tensor::wrap (no memory is read: both checks look at the device alone).
TEST(SequenceModels, AContainersTensorsLiveOnOneDevice) {
  std::mt19937 rng(seed());
  const Tensor host = random_tensor(DataType::kFloat32, {3}, rng);
  static float no_bytes[3];
  const Tensor dev = Tensor::wrap(no_bytes, DataType::kFloat32, {3}, DeviceType::kCUDA);
  auto mixed = Tensor::sequence(DataType::kFloat32, {host, dev});
  ASSERT_FALSE(mixed.is_ok());
  EXPECT_TRUE(contains(mixed.status().to_string(), "sequence item 1 is float32 on cuda")) << mixed.status().to_string();
  auto on_gpu = Tensor::sequence(DataType::kFloat32, {dev, dev});
  ASSERT_TRUE(on_gpu.is_ok()) << on_gpu.status().to_string();
  EXPECT_EQ(on_gpu->device(), DeviceType::kCUDA);
  EXPECT_EQ(seq_of({host}).device(), DeviceType::kCPU);
  auto opt = Tensor::optional(ValueKind::kOptionalTensor, DataType::kFloat32, dev);
  ASSERT_TRUE(opt.is_ok());
  EXPECT_EQ(opt->device(), DeviceType::kCUDA);
  auto refused = run_model(map_model(), {{"xs", *on_gpu}, {"b", host}}, false);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_TRUE(contains(refused.status().to_string(), "input 'xs' is on")) << refused.status().to_string();
}

TEST(SequenceModels, InputsOfTheWrongKindOrShapeAreRefusedNamingTheInput) {
  std::mt19937 rng(seed());
  const Tensor b = random_tensor(DataType::kFloat32, {3}, rng);
  auto tensor_given = run_model(map_model(), {{"xs", b}, {"b", b}}, false);
  ASSERT_FALSE(tensor_given.is_ok());
  EXPECT_TRUE(contains(tensor_given.status().to_string(), "input 'xs' expects a sequence")) << tensor_given.status().to_string();
  auto ints = run_model(map_model(), {{"xs", seq_of({}, DataType::kInt64)}, {"b", b}}, false);
  ASSERT_FALSE(ints.is_ok());
  EXPECT_TRUE(contains(ints.status().to_string(), "of float32 but was given one of int64")) << ints.status().to_string();
}

// A device engine takes sequences and optionals (the CUDA engine's own tests run them:
// tests/cuda/containers_test.cpp).
TEST(SequenceModels, DeviceEnginesAcceptContainers) {
  // Through the builder in a build without CUDA: refused for CUDA itself, not for the sequence.
  BuilderConfig cfg;
  cfg.device = DeviceType::kCUDA;
  auto engine = Engine::build_from_onnx_bytes(map_model().bytes(), cfg, "seq.onnx");
  if (!engine.is_ok()) {
    EXPECT_EQ(engine.status().code(), StatusCode::kUnsupported);
    EXPECT_FALSE(contains(engine.status().to_string(), "sequence")) << engine.status().to_string();
  }
}

// A Loop of M iterations carrying a sequence: iteration i appends x[0:i+1] (ONNX test_loop13_seq's
// form), then ConcatFromSequence joins them.
TEST(SequenceModels, LoopCarriesASequence) {
  std::mt19937 rng(seed());
  SCOPED_TRACE("seed " + std::to_string(seed()));
  OnnxModelBuilder m(17);
  m.input("M", DataType::kInt64, {});
  m.input("x", DataType::kFloat32, {5});
  m.node("SequenceEmpty", {}, {"s0"});
  auto& loop = m.node("Loop", {"M", "", "s0"}, {"s"}, "loop");
  auto* g = OnnxModelBuilder::new_attr(loop, "body", onnx::AttributeProto::GRAPH)->mutable_g();
  g->set_name("body");
  for (const char* in : {"i", "c", "acc"}) g->add_input()->set_name(in);
  OnnxModelBuilder::to_proto(Tensor::vector_int64({0}), "zero", g->add_initializer());
  OnnxModelBuilder::to_proto(Tensor::scalar_int64(1), "one", g->add_initializer());
  OnnxModelBuilder::to_proto(Tensor::vector_int64({0}), "axes", g->add_initializer());
  struct N {
    const char* op;
    std::vector<std::string> in;
    const char* out;
  };
  for (const N& n : {N{"Identity", {"c"}, "c_out"}, N{"Add", {"i", "one"}, "end"}, N{"Unsqueeze", {"end", "axes"}, "end1"},
                     N{"Slice", {"x", "zero", "end1"}, "part"}, N{"SequenceInsert", {"acc", "part"}, "acc_out"}}) {
    auto* node = g->add_node();
    node->set_op_type(n.op);
    for (const auto& i : n.in) node->add_input(i);
    node->add_output(n.out);
  }
  g->add_output()->set_name("c_out");
  g->add_output()->set_name("acc_out");
  auto& cat = m.node("ConcatFromSequence", {"s"}, {"y"});
  OnnxModelBuilder::attr(cat, "axis", int64_t{0});
  m.node("SequenceLength", {"s"}, {"n"});
  m.output("y", DataType::kFloat32);
  m.output("n", DataType::kInt64, {});
  const Tensor x = random_tensor(DataType::kFloat32, {5}, rng, 0.5, 2.0);
  auto out = run_model(m, {{"M", i64(4)}, {"x", x}}, true);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  std::vector<double> want;
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j <= i; ++j) want.push_back(x.get(j));
  EXPECT_EQ(out->at("n").get(0), 4);
  EXPECT_EQ(values(out->at("y")), want);
}

// If returns an optional: the then-branch an empty one from Optional's type attribute, the
// else-branch one holding a sequence (ONNX test_if_opt's form).
TEST(SequenceModels, IfReturnsAnOptional) {
  std::mt19937 rng(seed());
  SCOPED_TRACE("seed " + std::to_string(seed()));
  OnnxModelBuilder m(16);
  m.input("c", DataType::kBool, {});
  m.input("x", DataType::kFloat32, {4});
  auto& n = m.node("If", {"c"}, {"o"}, "choose");
  for (const char* attr : {"then_branch", "else_branch"}) {
    auto* g = OnnxModelBuilder::new_attr(n, attr, onnx::AttributeProto::GRAPH)->mutable_g();
    g->set_name(attr);
    auto* opt = g->add_node();
    opt->set_op_type("Optional");
    opt->add_output("r");
    if (std::string(attr) == "then_branch") {
      auto* t = OnnxModelBuilder::new_attr(*opt, "type", onnx::AttributeProto::TYPE_PROTO)->mutable_tp();
      auto* tt = t->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type();
      tt->set_elem_type(1);
      tt->mutable_shape()->add_dim()->set_dim_value(4);
    } else {
      auto* sc = g->add_node();
      sc->set_op_type("SequenceConstruct");
      sc->add_input("x");
      sc->add_input("x");
      sc->add_output("s");
      opt->add_input("s");
    }
    g->add_output()->set_name("r");
  }
  m.node("OptionalHasElement", {"o"}, {"has"});
  const std::vector<int64_t> four{4};
  typed(m.model().mutable_graph()->add_output(), "o", ValueKind::kOptionalSequence, DataType::kFloat32, &four);
  m.output("has", DataType::kBool, {});
  const Tensor x = random_tensor(DataType::kFloat32, {4}, rng, 0.5, 2.0);
  for (bool round_trip : {false, true}) {
    auto then = run_model(m, {{"c", Tensor::from_doubles(DataType::kBool, {}, {1})}, {"x", x}}, round_trip);
    ASSERT_TRUE(then.is_ok()) << then.status().to_string();
    EXPECT_EQ(then->at("o").kind(), ValueKind::kOptionalSequence);
    EXPECT_FALSE(then->at("o").has_element());
    EXPECT_EQ(then->at("has").get(0), 0);
    auto other = run_model(m, {{"c", Tensor::from_doubles(DataType::kBool, {}, {0})}, {"x", x}}, round_trip);
    ASSERT_TRUE(other.is_ok()) << other.status().to_string();
    ASSERT_TRUE(other->at("o").has_element());
    ASSERT_EQ(other->at("o").items()[0].items().size(), 2u);
    expect_same(other->at("o").items()[0].items()[1], x, "the optional's sequence");
    EXPECT_EQ(other->at("has").get(0), 1);
  }
}

// A branch that returns a sequence where the other returns a tensor is an error naming both types.
TEST(SequenceModels, BranchesOfDifferentKindsAreNamed) {
  OnnxModelBuilder m(17);
  m.input("c", DataType::kBool, {});
  m.input("x", DataType::kFloat32, {2});
  auto& n = m.node("If", {"c"}, {"r"}, "mixed");
  for (const char* attr : {"then_branch", "else_branch"}) {
    auto* g = OnnxModelBuilder::new_attr(n, attr, onnx::AttributeProto::GRAPH)->mutable_g();
    g->set_name(attr);
    auto* node = g->add_node();
    node->set_op_type(std::string(attr) == "then_branch" ? "SequenceConstruct" : "Identity");
    node->add_input("x");
    node->add_output("r");
    g->add_output()->set_name("r");
  }
  m.output("r", DataType::kFloat32);
  auto engine = Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, "mixed.onnx");
  ASSERT_FALSE(engine.is_ok());
  EXPECT_TRUE(contains(engine.status().to_string(), "is seq(float32[2]) in then_branch but float32[2] in else_branch"))
      << engine.status().to_string();
}

}  // namespace
}  // namespace graft
