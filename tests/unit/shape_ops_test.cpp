// Shape (data-movement) builtin ops: symbolic inference including the PyTorch dynamic-reshape
// subgraphs, error paths, and the CPU reference kernels against index formulas written here,
// on fresh random data of several element sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include "op_test_util.h"

using namespace graft;
using graft::testing::OneNode;
using graft::testing::random_tensor;

namespace {

uint32_t fresh_seed() { return std::random_device{}(); }

// Bit-exact element comparison through double: these ops only move data.
void expect_equal(const Tensor& got, const std::vector<int64_t>& want_dims, const std::vector<double>& want,
                  const std::string& what) {
  ASSERT_EQ(got.dims(), want_dims) << what;
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  int bad = 0;
  for (int64_t i = 0; i < got.numel() && bad < 5; ++i)
    if (!(got.get(i) == want[i])) {
      ADD_FAILURE() << what << ": element " << i << " is " << got.get(i) << ", want " << want[i];
      ++bad;
    }
}

std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& dims) {
  std::vector<int64_t> idx(dims.size());
  for (int64_t a = static_cast<int64_t>(dims.size()) - 1; a >= 0; --a) {
    idx[a] = flat % dims[a];
    flat /= dims[a];
  }
  return idx;
}
int64_t ravel(const std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  int64_t f = 0;
  for (size_t a = 0; a < dims.size(); ++a) f = f * dims[a] + idx[a];
  return f;
}

// The index list ONNX Slice selects, written from the spec's text: negative bounds count from the
// end, then starts clamp to [0,n] / [0,n-1] and ends to [0,n] / [-1,n-1] for positive / negative
// steps. (Python's slice differs in one corner: a start below -n with a negative step selects
// nothing in Python but element 0 in ONNX.)
std::vector<int64_t> onnx_slice_indices(int64_t n, int64_t start, int64_t stop, int64_t step) {
  auto from_end = [&](int64_t v) { return v < 0 ? (v < -n ? -n - 1 : v + n) : v; };  // -n-1: "before 0"
  int64_t s = from_end(start), e = from_end(stop);
  if (step > 0) {
    s = std::clamp<int64_t>(s, 0, n);
    e = std::clamp<int64_t>(e, 0, n);
  } else {
    s = std::clamp<int64_t>(s, 0, n - 1);
    e = std::clamp<int64_t>(e, -1, n - 1);
  }
  std::vector<int64_t> out;
  if (step > 0)
    for (int64_t i = s; i < e; i += step) out.push_back(i);
  else
    for (int64_t i = s; i > e; i += step) out.push_back(i);
  return out;
}

const DataType kDtypes[] = {DataType::kFloat32, DataType::kFloat16, DataType::kInt64, DataType::kUInt8,
                            DataType::kFloat64};

Tensor random_of(DataType dt, std::vector<int64_t> dims, std::mt19937& rng) {
  return dtype_is_integer(dt) ? random_tensor(dt, std::move(dims), rng, 0, 200)
                              : random_tensor(dt, std::move(dims), rng, -4, 4);
}

// Chains InferContexts by hand, the way shape inference walks a graph: each node's outputs get the
// inferred desc and symbolic contents.
struct Chain {
  Graph g;
  int counter = 0;

  Value* input(const std::string& name, TensorDesc desc) {
    Value* v = g.add_value(name);
    v->desc = std::move(desc);
    v->is_graph_input = true;
    return v;
  }
  Value* constant(const Tensor& t) {
    Value* v = g.add_value("const" + std::to_string(counter++));
    v->desc = TensorDesc(t.dtype(), shape_from_values(t.dims()));
    v->constant = t;
    return v;
  }
  // Runs inference for one node; returns its outputs, or an empty vector after reporting the error.
  std::vector<Value*> node(const std::string& op_type, std::vector<Value*> ins, AttributeMap attrs = {},
                           size_t n_out = 1, int opset = 17, Status* st_out = nullptr) {
    Node* n = g.add_node(op_type + std::to_string(counter++), op_type);
    n->attrs = std::move(attrs);
    n->inputs = ins;
    n->opset = opset;
    for (size_t i = 0; i < n_out; ++i) {
      Value* v = g.add_value(n->name + "_out" + std::to_string(i));
      v->producer = n;
      n->outputs.push_back(v);
    }
    std::vector<InferContext::InputInfo> infos;
    for (Value* v : ins) {
      InferContext::InputInfo info;
      if (v) {
        info.desc = &v->desc;
        info.value = v->constant ? &*v->constant : nullptr;
        info.sym_value = v->sym_value ? &*v->sym_value : nullptr;
      }
      infos.push_back(info);
    }
    InferContext ctx(*n, infos, opset);
    const OpEntry* op = find_onnx_op(op_type);
    if (!op) {
      ADD_FAILURE() << "no builtin op " << op_type;
      return {};
    }
    Status st = op->infer(ctx);
    if (st_out) *st_out = st;
    if (!st.is_ok()) {
      if (!st_out) ADD_FAILURE() << op_type << ": " << st.to_string();
      return {};
    }
    for (size_t i = 0; i < n_out; ++i) {
      n->outputs[i]->desc = ctx.outputs()[i];
      n->outputs[i]->sym_value = ctx.output_sym_values()[i];
    }
    return n->outputs;
  }
};

AttributeMap attrs_of(std::initializer_list<std::pair<std::string, AttrValue>> kv) {
  AttributeMap m;
  for (auto& [k, v] : kv) m.set(k, v);
  return m;
}

std::string shape_str(const Value* v) { return v->desc.shape ? shape_to_string(*v->desc.shape) : "?"; }

// ---------------------------------------------------------------------------------------------
// Symbolic inference

TEST(ShapeSymbolic, PyTorchGatherUnsqueezeConcatReshape) {
  // x.view(x.size(0), -1) as torch.onnx exports it, for x: [batch,3,4].
  Chain c;
  Value* x = c.input("x", TensorDesc(DataType::kFloat32, {Dim::symbol("batch"), 3, 4}));
  Value* shape = c.node("Shape", {x})[0];
  ASSERT_TRUE(shape->sym_value);
  EXPECT_EQ(shape_str(shape), "[3]");
  Value* b = c.node("Gather", {shape, c.constant(Tensor::scalar_int64(0))}, attrs_of({{"axis", int64_t{0}}}))[0];
  EXPECT_EQ(shape_str(b), "[]");
  ASSERT_TRUE(b->sym_value);
  ASSERT_EQ(b->sym_value->size(), 1u);
  EXPECT_EQ((*b->sym_value)[0].to_string(), "batch");
  Value* ub = c.node("Unsqueeze", {b, c.constant(Tensor::vector_int64({0}))}, {}, 1, 13)[0];
  EXPECT_EQ(shape_str(ub), "[1]");
  Value* cat = c.node("Concat", {ub, c.constant(Tensor::vector_int64({-1}))}, attrs_of({{"axis", int64_t{0}}}))[0];
  ASSERT_TRUE(cat->sym_value);
  EXPECT_EQ(shape_to_string(*cat->sym_value), "[batch,-1]");
  Value* y = c.node("Reshape", {x, cat})[0];
  EXPECT_EQ(shape_str(y), "[batch,12]");

  // The same with Unsqueeze's opset-11 attribute form.
  Value* ub11 = c.node("Unsqueeze", {b}, attrs_of({{"axes", std::vector<int64_t>{0}}}), 1, 11)[0];
  ASSERT_TRUE(ub11->sym_value);
  EXPECT_EQ(shape_to_string(*ub11->sym_value), "[batch]");
}

TEST(ShapeSymbolic, PyTorchSliceConcatReshape) {
  // x.reshape(*x.shape[:2], -1) for x: [batch,seq,4,8] -> [batch,seq,32].
  Chain c;
  Value* x = c.input("x", TensorDesc(DataType::kFloat16, {Dim::symbol("batch"), Dim::symbol("seq"), 4, 8}));
  Value* shape = c.node("Shape", {x})[0];
  Value* head = c.node("Slice", {shape, c.constant(Tensor::vector_int64({0})), c.constant(Tensor::vector_int64({2}))})[0];
  EXPECT_EQ(shape_str(head), "[2]");
  ASSERT_TRUE(head->sym_value);
  Value* cat = c.node("Concat", {head, c.constant(Tensor::vector_int64({-1}))}, attrs_of({{"axis", int64_t{0}}}))[0];
  Value* y = c.node("Reshape", {x, cat})[0];
  EXPECT_EQ(shape_str(y), "[batch,seq,32]");
  EXPECT_EQ(y->desc.dtype, DataType::kFloat16);

  // Shape with opset-15 start/end gives the same slice directly.
  Value* tail = c.node("Shape", {x}, attrs_of({{"start", int64_t{-2}}}), 1, 15)[0];
  ASSERT_TRUE(tail->sym_value);
  EXPECT_EQ(shape_to_string(*tail->sym_value), "[4,8]");
}

TEST(ShapeSymbolic, ExpandConstantOfShapeAndRangeFromShape) {
  Chain c;
  const Dim batch = Dim::symbol("batch");
  Value* x = c.input("x", TensorDesc(DataType::kFloat32, {batch, 1, 16}));
  Value* shape = c.node("Shape", {x})[0];
  // mask = ConstantOfShape(Shape(x)) with an int64 fill.
  Tensor one = Tensor::from_doubles(DataType::kInt64, {1}, {1});
  Value* mask = c.node("ConstantOfShape", {shape}, attrs_of({{"value", one}}))[0];
  EXPECT_EQ(shape_str(mask), "[batch,1,16]");
  EXPECT_EQ(mask->desc.dtype, DataType::kInt64);
  // Expand(y:[1,5,1], Shape(x)) broadcasts both ways.
  Value* y = c.input("y", TensorDesc(DataType::kFloat32, {1, 5, 1}));
  Value* e = c.node("Expand", {y, shape})[0];
  EXPECT_EQ(shape_str(e), "[batch,5,16]");
  // Range(0, batch, 1) -> [batch] (max(batch,0) is fine too; evaluate to check).
  Value* b = c.node("Gather", {shape, c.constant(Tensor::scalar_int64(-3))})[0];
  Value* r = c.node("Range", {c.constant(Tensor::scalar_int64(0)), b, c.constant(Tensor::scalar_int64(2))})[0];
  ASSERT_TRUE(r->desc.shape);
  ASSERT_EQ(r->desc.shape->size(), 1u);
  EXPECT_EQ((*r->desc.shape)[0].evaluate({{"batch", 7}}), 4);
  EXPECT_EQ((*r->desc.shape)[0].evaluate({{"batch", 8}}), 4);
  // Tile with repeats computed from a shape.
  Value* t = c.node("Tile", {x, c.node("Concat", {c.constant(Tensor::vector_int64({1, 3})),
                                                   c.node("Slice", {shape, c.constant(Tensor::vector_int64({1})),
                                                                    c.constant(Tensor::vector_int64({2}))})[0]},
                                       attrs_of({{"axis", int64_t{0}}}))[0]})[0];
  EXPECT_EQ(shape_str(t), "[batch,3,16]");
}

TEST(ShapeSymbolic, UnknownShapeInputsKeepRank) {
  Chain c;
  Value* x = c.input("x", TensorDesc(DataType::kFloat32, {Dim::symbol("batch"), 6}));
  Value* s = c.input("s", TensorDesc(DataType::kInt64, {3}));  // contents unknown at build time
  Value* y = c.node("Reshape", {x, s})[0];
  ASSERT_TRUE(y->desc.shape);
  EXPECT_EQ(y->desc.shape->size(), 3u);
  Value* z = c.node("ConstantOfShape", {s})[0];
  ASSERT_TRUE(z->desc.shape);
  EXPECT_EQ(z->desc.shape->size(), 3u);
  EXPECT_EQ(z->desc.dtype, DataType::kFloat32);
  Value* e = c.node("Expand", {x, s})[0];
  ASSERT_TRUE(e->desc.shape);
  EXPECT_EQ(e->desc.shape->size(), 3u);
}

TEST(ShapeSymbolic, SliceAndSplitOverSymbolicDims) {
  Chain c;
  const Dim seq = Dim::symbol("seq");
  Value* x = c.input("x", TensorDesc(DataType::kFloat32, {2, seq, 10}));
  // x[:, 1:, ::-3]
  Value* y = c.node("Slice", {x, c.constant(Tensor::vector_int64({1, -1})),
                              c.constant(Tensor::vector_int64({INT64_MAX, INT64_MIN})),
                              c.constant(Tensor::vector_int64({1, 2})), c.constant(Tensor::vector_int64({1, -3}))})[0];
  ASSERT_TRUE(y->desc.shape);
  const Shape& s = *y->desc.shape;
  EXPECT_EQ(s[0].to_string(), "2");
  EXPECT_EQ(s[2].to_string(), "4");
  for (int64_t n : {0, 1, 2, 9}) EXPECT_EQ(s[1].evaluate({{"seq", n}}), std::max<int64_t>(n - 1, 0)) << n;
  // Split a symbolic axis in two (opset 18 allows an uneven last chunk).
  auto parts = c.node("Split", {x}, attrs_of({{"axis", int64_t{1}}, {"num_outputs", int64_t{2}}}), 2, 18);
  ASSERT_EQ(parts.size(), 2u);
  for (int64_t n : {4, 5}) {
    auto a = (*parts[0]->desc.shape)[1].evaluate({{"seq", n}});
    auto b = (*parts[1]->desc.shape)[1].evaluate({{"seq", n}});
    EXPECT_EQ(a, (n + 1) / 2);
    EXPECT_EQ(*a + *b, n);
  }
}

// ---------------------------------------------------------------------------------------------
// Errors

TEST(ShapeErrors, ReshapeTwoMinusOnes) {
  Chain c;
  Value* x = c.input("x", TensorDesc(DataType::kFloat32, {2, 3, 4}));
  Status st;
  auto out = c.node("Reshape", {x, c.constant(Tensor::vector_int64({-1, 2, -1}))}, {}, 1, 17, &st);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(st.code(), StatusCode::kInvalidModel);
  EXPECT_NE(st.message().find("more than one -1"), std::string::npos) << st.message();
}

TEST(ShapeErrors, ReshapeElementCountMismatchNamesBothShapes) {
  std::mt19937 rng(fresh_seed());
  OneNode n("Reshape", {random_tensor(DataType::kFloat32, {2, 3}, rng), Tensor::vector_int64({4, 2})});
  auto r = n.run();
  ASSERT_FALSE(r.is_ok());
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("[2,3]"), std::string::npos) << m;
  EXPECT_NE(m.find("[4,2]"), std::string::npos) << m;
  // -1 that cannot divide evenly.
  OneNode n2("Reshape", {random_tensor(DataType::kFloat32, {2, 3}, rng), Tensor::vector_int64({4, -1})});
  auto r2 = n2.run();
  ASSERT_FALSE(r2.is_ok());
  EXPECT_NE(r2.status().message().find("[2,3]"), std::string::npos) << r2.status().message();
  EXPECT_NE(r2.status().message().find("[4,-1]"), std::string::npos) << r2.status().message();
}

TEST(ShapeErrors, BadInputsGiveStatusNotCrash) {
  std::mt19937 rng(fresh_seed());
  Tensor x = random_tensor(DataType::kFloat32, {3, 4}, rng);
  // Gather index out of range (build time, since the indices are constant).
  EXPECT_FALSE(OneNode("Gather", {x, Tensor::vector_int64({3})}).run().is_ok());
  EXPECT_FALSE(OneNode("Gather", {x, Tensor::vector_int64({-4})}).run().is_ok());
  // Slice step 0.
  EXPECT_FALSE(OneNode("Slice", {x, Tensor::vector_int64({0}), Tensor::vector_int64({2}), Tensor::vector_int64({0}),
                                 Tensor::vector_int64({0})})
                   .run()
                   .is_ok());
  // Squeeze a non-1 axis; Transpose with a bad perm; Expand incompatible; Concat mismatch.
  EXPECT_FALSE(OneNode("Squeeze", {x, Tensor::vector_int64({0})}).run().is_ok());
  OneNode t("Transpose", {x});
  t.node->attrs.set("perm", std::vector<int64_t>{0, 0});
  EXPECT_FALSE(t.run().is_ok());
  EXPECT_FALSE(OneNode("Expand", {x, Tensor::vector_int64({2, 4})}).run().is_ok());
  OneNode cat("Concat", {x, random_tensor(DataType::kFloat32, {2, 5}, rng)});
  cat.node->attrs.set("axis", int64_t{0});
  EXPECT_FALSE(cat.run().is_ok());
  // Split sizes that do not sum to the extent.
  OneNode sp("Split", {x, Tensor::vector_int64({1, 1})}, 2);
  EXPECT_FALSE(sp.run().is_ok());
  // Constant with a sparse value is a clear "unsupported".
  OneNode k("Constant", {});
  k.node->attrs.set("sparse_value", x);
  auto kr = k.run();
  ASSERT_FALSE(kr.is_ok());
  EXPECT_EQ(kr.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(kr.status().to_string().find("sparse"), std::string::npos);
  // Range with delta 0.
  EXPECT_FALSE(OneNode("Range", {Tensor::scalar_int64(0), Tensor::scalar_int64(4), Tensor::scalar_int64(0)})
                   .run()
                   .is_ok());
}

// ---------------------------------------------------------------------------------------------
// Numerics on random data

TEST(ShapeNumerics, SliceNegativeStepsMatchesSpecClamping) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> bound(-9, 9), stepd(1, 3), coin(0, 1);
  for (DataType dt : kDtypes) {
    for (int trial = 0; trial < 20; ++trial) {
      const std::vector<int64_t> dims = {5, 4, 7};
      Tensor x = random_of(dt, dims, rng);
      std::vector<int64_t> starts, ends, axes = {2, 0}, steps;
      for (int k = 0; k < 2; ++k) {
        starts.push_back(coin(rng) ? bound(rng) : (coin(rng) ? INT64_MAX : INT64_MIN));
        ends.push_back(coin(rng) ? bound(rng) : (coin(rng) ? INT64_MAX : INT64_MIN));
        steps.push_back(coin(rng) ? -stepd(rng) : stepd(rng));
      }
      OneNode n("Slice", {x, Tensor::vector_int64(starts), Tensor::vector_int64(ends), Tensor::vector_int64(axes),
                          Tensor::vector_int64(steps)});
      auto r = n.run();
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      auto i2 = onnx_slice_indices(7, starts[0], ends[0], steps[0]);
      auto i0 = onnx_slice_indices(5, starts[1], ends[1], steps[1]);
      std::vector<int64_t> od = {static_cast<int64_t>(i0.size()), 4, static_cast<int64_t>(i2.size())};
      std::vector<double> want;
      for (int64_t a : i0)
        for (int64_t b = 0; b < 4; ++b)
          for (int64_t c : i2) want.push_back(x.get(ravel({a, b, c}, dims)));
      expect_equal((*r)[0], od, want,
                   std::string("Slice ") + dtype_name(dt) + " starts " + std::to_string(starts[0]) + "," +
                       std::to_string(starts[1]) + " ends " + std::to_string(ends[0]) + "," +
                       std::to_string(ends[1]) + " steps " + std::to_string(steps[0]) + "," +
                       std::to_string(steps[1]));
    }
  }
}

TEST(ShapeNumerics, GatherAnyAxisNegativeIndices) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<int64_t> dims = {3, 4, 5};
  for (DataType dt : kDtypes) {
    for (int64_t axis = -3; axis < 3; ++axis) {
      const int64_t a = axis < 0 ? axis + 3 : axis, n = dims[a];
      Tensor x = random_of(dt, dims, rng);
      std::uniform_int_distribution<int64_t> pick(-n, n - 1);
      std::vector<int64_t> idx = {pick(rng), pick(rng), -1, pick(rng), -n, pick(rng)};
      Tensor it = Tensor::vector_int64(idx).reshaped({2, 3});
      OneNode node("Gather", {x, it});
      node.node->attrs.set("axis", axis);
      auto r = node.run();
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      std::vector<int64_t> od(dims.begin(), dims.begin() + a);
      od.push_back(2);
      od.push_back(3);
      od.insert(od.end(), dims.begin() + a + 1, dims.end());
      std::vector<double> want;
      for (int64_t f = 0; f < numel_of(od); ++f) {
        auto oi = unravel(f, od);
        std::vector<int64_t> ii(oi.begin(), oi.begin() + a);
        int64_t j = idx[oi[a] * 3 + oi[a + 1]];
        ii.push_back(j < 0 ? j + n : j);
        ii.insert(ii.end(), oi.begin() + a + 2, oi.end());
        want.push_back(x.get(ravel(ii, dims)));
      }
      expect_equal((*r)[0], od, want, std::string("Gather ") + dtype_name(dt) + " axis " + std::to_string(axis));
    }
  }
  // Scalar index drops the axis; int32 indices work too.
  Tensor x = random_of(DataType::kFloat32, dims, rng);
  Tensor i32 = Tensor::from_doubles(DataType::kInt32, {}, {-2});
  OneNode node("Gather", {x, i32});
  node.node->attrs.set("axis", int64_t{1});
  auto r = node.run();
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  std::vector<double> want;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t k = 0; k < 5; ++k) want.push_back(x.get(ravel({i, 2, k}, dims)));
  expect_equal((*r)[0], {3, 5}, want, "Gather scalar index");
}

TEST(ShapeNumerics, TransposeConcatSplit) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (DataType dt : kDtypes) {
    const std::vector<int64_t> dims = {2, 3, 4, 5};
    Tensor x = random_of(dt, dims, rng);
    std::vector<int64_t> perm = {0, 1, 2, 3};
    std::shuffle(perm.begin(), perm.end(), rng);
    OneNode t("Transpose", {x});
    t.node->attrs.set("perm", perm);
    auto r = t.run();
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    std::vector<int64_t> od;
    for (int64_t p : perm) od.push_back(dims[p]);
    std::vector<double> want;
    for (int64_t f = 0; f < x.numel(); ++f) {
      auto oi = unravel(f, od);
      std::vector<int64_t> ii(4);
      for (int a = 0; a < 4; ++a) ii[perm[a]] = oi[a];
      want.push_back(x.get(ravel(ii, dims)));
    }
    expect_equal((*r)[0], od, want, std::string("Transpose ") + dtype_name(dt));

    // Default perm reverses.
    auto rd = OneNode("Transpose", {x}).run();
    ASSERT_TRUE(rd.is_ok());
    EXPECT_EQ((*rd)[0].dims(), (std::vector<int64_t>{5, 4, 3, 2}));

    // Concat along axis -2 (= 2) of three inputs, then Split it back with explicit sizes.
    Tensor b = random_of(dt, {2, 3, 1, 5}, rng), c = random_of(dt, {2, 3, 2, 5}, rng);
    OneNode cat("Concat", {x, b, c});
    cat.node->attrs.set("axis", int64_t{-2});
    auto rc = cat.run();
    ASSERT_TRUE(rc.is_ok()) << rc.status().to_string();
    std::vector<int64_t> cd = {2, 3, 7, 5};
    want.clear();
    for (int64_t f = 0; f < numel_of(cd); ++f) {
      auto i = unravel(f, cd);
      const int64_t k = i[2];
      if (k < 4) want.push_back(x.get(ravel(i, dims)));
      else if (k < 5) want.push_back(b.get(ravel({i[0], i[1], 0, i[3]}, {2, 3, 1, 5})));
      else want.push_back(c.get(ravel({i[0], i[1], k - 5, i[3]}, {2, 3, 2, 5})));
    }
    expect_equal((*rc)[0], cd, want, std::string("Concat ") + dtype_name(dt));

    for (int opset : {11, 13}) {
      std::vector<Tensor> ins = {(*rc)[0]};
      if (opset == 13) ins.push_back(Tensor::vector_int64({4, 1, 2}));
      OneNode sp("Split", ins, 3);
      sp.node->attrs.set("axis", int64_t{2});
      if (opset == 11) sp.node->attrs.set("split", std::vector<int64_t>{4, 1, 2});
      auto rs = sp.run(opset);
      ASSERT_TRUE(rs.is_ok()) << rs.status().to_string();
      ASSERT_EQ(rs->size(), 3u);
      const Tensor* parts[] = {&x, &b, &c};
      for (int p = 0; p < 3; ++p) {
        std::vector<double> pw;
        for (int64_t f = 0; f < parts[p]->numel(); ++f) pw.push_back(parts[p]->get(f));
        expect_equal((*rs)[p], parts[p]->dims(), pw, "Split part " + std::to_string(p));
      }
    }
  }
  // Opset 18 num_outputs with an uneven last chunk: 7 -> 3,3,1.
  Tensor v = random_of(DataType::kFloat32, {7, 2}, rng);
  OneNode sp("Split", {v}, 3);
  sp.node->attrs.set("num_outputs", int64_t{3});
  auto rs = sp.run(18);
  ASSERT_TRUE(rs.is_ok()) << rs.status().to_string();
  EXPECT_EQ((*rs)[0].dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ((*rs)[2].dims(), (std::vector<int64_t>{1, 2}));
  expect_equal((*rs)[2], {1, 2}, {v.get(12), v.get(13)}, "Split 18 last chunk");
}

TEST(ShapeNumerics, ExpandTileReshapeFamily) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (DataType dt : kDtypes) {
    Tensor x = random_of(dt, {3, 1, 4}, rng);
    auto re = OneNode("Expand", {x, Tensor::vector_int64({2, 1, 5, 1})}).run();
    ASSERT_TRUE(re.is_ok()) << re.status().to_string();
    std::vector<int64_t> ed = {2, 3, 5, 4};
    std::vector<double> want;
    for (int64_t f = 0; f < numel_of(ed); ++f) {
      auto i = unravel(f, ed);
      want.push_back(x.get(ravel({i[1], 0, i[3]}, {3, 1, 4})));
    }
    expect_equal((*re)[0], ed, want, std::string("Expand ") + dtype_name(dt));

    auto rt = OneNode("Tile", {x, Tensor::vector_int64({2, 3, 1})}).run();
    ASSERT_TRUE(rt.is_ok()) << rt.status().to_string();
    std::vector<int64_t> td = {6, 3, 4};
    want.clear();
    for (int64_t f = 0; f < numel_of(td); ++f) {
      auto i = unravel(f, td);
      want.push_back(x.get(ravel({i[0] % 3, 0, i[2]}, {3, 1, 4})));
    }
    expect_equal((*rt)[0], td, want, std::string("Tile ") + dtype_name(dt));

    // Reshape family: contents are unchanged, only dims differ.
    std::vector<double> flat;
    for (int64_t f = 0; f < x.numel(); ++f) flat.push_back(x.get(f));
    auto rr = OneNode("Reshape", {x, Tensor::vector_int64({0, -1})}).run();
    ASSERT_TRUE(rr.is_ok()) << rr.status().to_string();
    expect_equal((*rr)[0], {3, 4}, flat, "Reshape 0,-1");
    OneNode fl("Flatten", {x});
    fl.node->attrs.set("axis", int64_t{-1});
    auto rf = fl.run();
    ASSERT_TRUE(rf.is_ok()) << rf.status().to_string();
    expect_equal((*rf)[0], {3, 4}, flat, "Flatten axis -1");
    auto rs = OneNode("Squeeze", {x, Tensor::vector_int64({-2})}).run();
    ASSERT_TRUE(rs.is_ok()) << rs.status().to_string();
    expect_equal((*rs)[0], {3, 4}, flat, "Squeeze");
    auto ru = OneNode("Unsqueeze", {x, Tensor::vector_int64({0, -1})}).run();
    ASSERT_TRUE(ru.is_ok()) << ru.status().to_string();
    expect_equal((*ru)[0], {1, 3, 1, 4, 1}, flat, "Unsqueeze");
  }
  // allowzero=1 keeps a literal 0 extent.
  Tensor empty = Tensor::empty(DataType::kFloat32, {0, 4});
  OneNode az("Reshape", {empty, Tensor::vector_int64({4, 0})});
  az.node->attrs.set("allowzero", int64_t{1});
  auto raz = az.run(14);
  ASSERT_TRUE(raz.is_ok()) << raz.status().to_string();
  EXPECT_EQ((*raz)[0].dims(), (std::vector<int64_t>{4, 0}));
}

TEST(ShapeNumerics, ShapeConstantRange) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> ext(1, 6);
  std::vector<int64_t> dims = {ext(rng), ext(rng), ext(rng), ext(rng)};
  Tensor x = random_of(DataType::kFloat32, dims, rng);
  OneNode sh("Shape", {x});
  sh.node->attrs.set("start", int64_t{1});
  sh.node->attrs.set("end", int64_t{-1});
  auto r = sh.run(15);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  expect_equal((*r)[0], {2}, {double(dims[1]), double(dims[2])}, "Shape start/end");

  // ConstantOfShape with a float16 fill.
  Tensor fill = Tensor::from_doubles(DataType::kFloat16, {1}, {std::uniform_real_distribution<double>(1, 2)(rng)});
  OneNode cs("ConstantOfShape", {Tensor::vector_int64({2, 3})});
  cs.node->attrs.set("value", fill);
  auto rc = cs.run();
  ASSERT_TRUE(rc.is_ok()) << rc.status().to_string();
  expect_equal((*rc)[0], {2, 3}, std::vector<double>(6, fill.get(0)), "ConstantOfShape");

  // Constant in each attribute form.
  Tensor val = random_of(DataType::kFloat32, {2, 2}, rng);
  OneNode k("Constant", {});
  k.node->attrs.set("value", val);
  auto rk = k.run();
  ASSERT_TRUE(rk.is_ok()) << rk.status().to_string();
  expect_equal((*rk)[0], {2, 2}, {val.get(0), val.get(1), val.get(2), val.get(3)}, "Constant value");
  const int64_t iv = ext(rng);
  OneNode ki("Constant", {});
  ki.node->attrs.set("value_ints", std::vector<int64_t>{iv, -iv});
  auto rki = ki.run();
  ASSERT_TRUE(rki.is_ok()) << rki.status().to_string();
  expect_equal((*rki)[0], {2}, {double(iv), double(-iv)}, "Constant value_ints");
  OneNode kf("Constant", {});
  kf.node->attrs.set("value_float", 0.25f * static_cast<float>(iv));
  auto rkf = kf.run();
  ASSERT_TRUE(rkf.is_ok()) << rkf.status().to_string();
  expect_equal((*rkf)[0], {}, {0.25 * double(iv)}, "Constant value_float");

  // Range, integer and float, increasing and decreasing.
  const int64_t s0 = ext(rng), lim = s0 + 3 * ext(rng) + 1;
  auto ri = OneNode("Range", {Tensor::scalar_int64(lim), Tensor::scalar_int64(s0), Tensor::scalar_int64(-3)}).run();
  ASSERT_TRUE(ri.is_ok()) << ri.status().to_string();
  std::vector<double> want;
  for (int64_t v = lim; v > s0; v -= 3) want.push_back(double(v));
  expect_equal((*ri)[0], {static_cast<int64_t>(want.size())}, want, "Range int64");
  auto rfl = OneNode("Range", {Tensor::from_doubles(DataType::kFloat32, {}, {0.5}),
                               Tensor::from_doubles(DataType::kFloat32, {}, {2.0}),
                               Tensor::from_doubles(DataType::kFloat32, {}, {0.25})})
                 .run();
  ASSERT_TRUE(rfl.is_ok()) << rfl.status().to_string();
  expect_equal((*rfl)[0], {6}, {0.5, 0.75, 1.0, 1.25, 1.5, 1.75}, "Range float");
}

}  // namespace
