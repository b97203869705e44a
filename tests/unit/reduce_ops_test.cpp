// Reductions, Softmax and LayerNormalization: inference (axes from attribute or input, keepdims,
// noop_with_empty_axes, opset-dependent Softmax), error paths, and CPU kernels against loops
// written here on fresh random data.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "op_test_util.h"

using namespace graft;
using graft::testing::OneNode;
using graft::testing::random_tensor;
using graft::testing::attrs_of;

namespace {

uint32_t fresh_seed() { return std::random_device{}(); }

double tol_of(DataType t) {
  return t == DataType::kFloat16 ? 2e-3 : t == DataType::kFloat32 ? 2e-5 : t == DataType::kFloat64 ? 1e-12 : 0;
}

void expect_close(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  const double tol = tol_of(got.dtype());
  int bad = 0;
  for (int64_t i = 0; i < got.numel() && bad < 5; ++i) {
    if (!(std::fabs(got.get(i) - want[i]) <= tol * (1 + std::fabs(want[i])))) {
      ADD_FAILURE() << what << " [" << i << "]: got " << got.get(i) << ", want " << want[i];
      ++bad;
    }
  }
}

// Infers only, with symbolic input shapes.
Result<std::vector<TensorDesc>> infer(const std::string& op, std::vector<TensorDesc> descs, const AttributeMap& attrs,
                                      int opset, std::vector<Tensor> values = {}, size_t num_outputs = 1) {
  Graph g;
  Node* n = g.add_node("n", op);
  n->attrs = attrs;
  std::vector<InferContext::InputInfo> infos;
  values.resize(descs.size());
  for (size_t i = 0; i < descs.size(); ++i) {
    Value* v = g.add_value("in" + std::to_string(i));
    v->desc = descs[i];
    n->inputs.push_back(v);
    InferContext::InputInfo info;
    info.desc = &descs[i];
    if (values[i].defined()) info.value = &values[i];
    infos.push_back(info);
  }
  for (size_t o = 0; o < num_outputs; ++o) n->outputs.push_back(g.add_value("out" + std::to_string(o)));
  InferContext ctx(*n, infos, opset);
  GRAFT_RETURN_IF_ERROR(find_onnx_op(op)->infer(ctx));
  return ctx.outputs();
}

// Reference reduction of a [A,B,C] tensor over a subset of axes with keepdims=1 layout.
std::vector<double> reduce_ref(const Tensor& x, std::vector<bool> red, const std::string& kind) {
  const auto& d = x.dims();
  int64_t oa = red[0] ? 1 : d[0], ob = red[1] ? 1 : d[1], oc = red[2] ? 1 : d[2];
  const double init = kind == "max" ? -INFINITY : kind == "min" ? INFINITY : kind == "prod" ? 1.0 : 0.0;
  std::vector<double> acc(oa * ob * oc, init), cnt(acc.size(), 0);
  for (int64_t a = 0; a < d[0]; ++a)
    for (int64_t b = 0; b < d[1]; ++b)
      for (int64_t c = 0; c < d[2]; ++c) {
        int64_t o = ((red[0] ? 0 : a) * ob + (red[1] ? 0 : b)) * oc + (red[2] ? 0 : c);
        double v = x.get((a * d[1] + b) * d[2] + c);
        acc[o] = kind == "max" ? std::max(acc[o], v) : kind == "min" ? std::min(acc[o], v)
                 : kind == "prod" ? acc[o] * v : (kind == "sumsq" || kind == "l2") ? acc[o] + v * v : acc[o] + v;
        cnt[o] += 1;
      }
  for (size_t i = 0; i < acc.size(); ++i) {
    if (kind == "mean") acc[i] /= cnt[i];
    if (kind == "l2") acc[i] = std::sqrt(acc[i]);
  }
  return acc;
}

}  // namespace

TEST(ReduceInfer, AxesAttributeAndKeepdims) {
  Dim b = Dim::symbol("batch");
  TensorDesc x(DataType::kFloat32, Shape{b, 3, 4});
  auto r = infer("ReduceMean", {x}, attrs_of({{"axes", std::vector<int64_t>{-1}}}), 17);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].to_string(), "float32[batch,3,1]");
  r = infer("ReduceMax", {x}, attrs_of({{"axes", std::vector<int64_t>{0, 2}}, {"keepdims", int64_t{0}}}), 13);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value()[0].to_string(), "float32[3]");
  r = infer("ReduceSum", {x}, attrs_of({{"keepdims", int64_t{0}}}), 11);  // no axes: all
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value()[0].to_string(), "float32[]");
}

TEST(ReduceInfer, AxesInput) {
  Dim b = Dim::symbol("batch");
  TensorDesc x(DataType::kFloat16, Shape{b, 3, 4});
  TensorDesc axes(DataType::kInt64, Shape{1});
  auto r = infer("ReduceSum", {x, axes}, {}, 13, {Tensor(), Tensor::vector_int64({1})});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].to_string(), "float16[batch,1,4]");
  // Unknown axes contents: with keepdims the rank is known, dims are not.
  r = infer("ReduceMean", {x, axes}, {}, 18);
  ASSERT_TRUE(r.is_ok());
  ASSERT_TRUE(r.value()[0].shape);
  EXPECT_EQ(r.value()[0].rank(), 3);
  r = infer("ReduceMean", {x, axes}, attrs_of({{"keepdims", int64_t{0}}}), 18);
  ASSERT_TRUE(r.is_ok());
  EXPECT_FALSE(r.value()[0].shape);
  // Empty axes + noop_with_empty_axes: identity.
  r = infer("ReduceSum", {x, TensorDesc(DataType::kInt64, Shape{0})}, attrs_of({{"noop_with_empty_axes", int64_t{1}}}),
            13, {Tensor(), Tensor::vector_int64({})});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value()[0].to_string(), "float16[batch,3,4]");
}

TEST(ReduceInfer, BadAxesFail) {
  TensorDesc x(DataType::kFloat32, Shape{2, 3});
  auto r = infer("ReduceMean", {x}, attrs_of({{"axes", std::vector<int64_t>{2}}}), 13);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "axes");
  r = infer("ReduceMean", {x}, attrs_of({{"axes", std::vector<int64_t>{1, -1}}}), 13);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("more than once"), std::string::npos);
  r = infer("ReduceMean", {x}, attrs_of({{"axes", int64_t{1}}}), 13);  // wrong attribute type
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "axes");
  r = infer("ReduceL2", {TensorDesc(DataType::kInt64, Shape{2})}, {}, 13);
  EXPECT_FALSE(r.is_ok());
}

TEST(ReduceInfer, SoftmaxAndLayerNorm) {
  Dim b = Dim::symbol("b");
  TensorDesc x(DataType::kFloat32, Shape{b, 5, 8});
  auto r = infer("Softmax", {x}, attrs_of({{"axis", int64_t{3}}}), 13);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "axis");
  r = infer("Softmax", {x}, {}, 13);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value()[0].to_string(), "float32[b,5,8]");
  TensorDesc scale(DataType::kFloat32, Shape{8});
  r = infer("LayerNormalization", {x, scale, scale}, {}, 17, {}, 3);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].to_string(), "float32[b,5,8]");
  EXPECT_EQ(r.value()[1].to_string(), "float32[b,5,1]");
  EXPECT_EQ(r.value()[2].to_string(), "float32[b,5,1]");
  r = infer("LayerNormalization", {x, TensorDesc(DataType::kFloat32, Shape{5})}, {}, 17);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("[5]"), std::string::npos) << r.status().to_string();
  r = infer("LayerNormalization", {x, scale}, attrs_of({{"epsilon", std::string("x")}}), 17);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "epsilon");
}

TEST(ReduceKernel, MeanSumMaxOverAxes) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<std::vector<bool>> subsets = {{false, true, false}, {true, false, true}, {true, true, true},
                                                  {false, false, true}};
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kFloat64}) {
    Tensor x = random_tensor(dt, {3, 4, 5}, rng, -2, 2);
    for (const auto& red : subsets) {
      std::vector<int64_t> axes;
      for (int64_t a = 0; a < 3; ++a)
        if (red[a]) axes.push_back(a - 3);  // negative axes on purpose
      for (const char* op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare",
                             "ReduceL2"}) {
        std::string o = op;
        // Axes as an attribute (opset 13, Mean/Max) or input (opset 13 Sum; opset 18 all).
        for (int opset : {13, 18}) {
          bool as_input = opset == 18 || o == "ReduceSum";
          std::vector<Tensor> ins{x};
          if (as_input) ins.push_back(Tensor::vector_int64(axes));
          OneNode n(op, ins);
          if (!as_input) n.node->attrs.set("axes", axes);
          auto r = n.run(opset);
          ASSERT_TRUE(r.is_ok()) << op << ": " << r.status().to_string();
          std::string kind = o == "ReduceMean" ? "mean" : o == "ReduceSum" ? "sum" : o == "ReduceMax" ? "max"
                             : o == "ReduceMin" ? "min" : o == "ReduceProd" ? "prod" : o == "ReduceSumSquare" ? "sumsq" : "l2";
          expect_close(r.value()[0], reduce_ref(x, red, kind), o + " " + dtype_name(dt));
          EXPECT_EQ(r.value()[0].rank(), 3);
        }
      }
    }
  }
}

TEST(ReduceKernel, IntegerSumMaxAndNoop) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  Tensor x = random_tensor(DataType::kInt64, {3, 4, 2}, rng, -1000, 1000);
  for (const char* op : {"ReduceSum", "ReduceMax"}) {
    OneNode n(op, {x, Tensor::vector_int64({1})});
    n.node->attrs.set("keepdims", int64_t{0});
    auto r = n.run(18);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    ASSERT_EQ(r.value()[0].dims(), (std::vector<int64_t>{3, 2}));
    auto want = reduce_ref(x, {false, true, false}, std::string(op) == "ReduceSum" ? "sum" : "max");
    auto got = r.value()[0].to_int64_vector();
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], static_cast<int64_t>(want[i])) << op;
  }
  OneNode n("ReduceSum", {x, Tensor::vector_int64({})});
  n.node->attrs.set("noop_with_empty_axes", int64_t{1});
  auto r = n.run(13);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value()[0].to_int64_vector(), x.to_int64_vector());
}

TEST(ReduceKernel, SoftmaxOpsetSemantics) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16}) {
    Tensor x = random_tensor(dt, {2, 3, 4}, rng, -3, 3);
    // Opset 13: softmax over axis 1 only (groups of 3 with stride 4).
    std::vector<double> want13(24), want11(24);
    for (int a = 0; a < 2; ++a)
      for (int c = 0; c < 4; ++c) {
        double s = 0;
        for (int b = 0; b < 3; ++b) s += std::exp(x.get(a * 12 + b * 4 + c));
        for (int b = 0; b < 3; ++b) want13[a * 12 + b * 4 + c] = std::exp(x.get(a * 12 + b * 4 + c)) / s;
      }
    // Opset 11: coerced to [2, 12]; softmax over each row of 12.
    for (int a = 0; a < 2; ++a) {
      double s = 0;
      for (int k = 0; k < 12; ++k) s += std::exp(x.get(a * 12 + k));
      for (int k = 0; k < 12; ++k) want11[a * 12 + k] = std::exp(x.get(a * 12 + k)) / s;
    }
    OneNode n13("Softmax", {x});
    n13.node->attrs.set("axis", int64_t{1});
    auto r13 = n13.run(13);
    ASSERT_TRUE(r13.is_ok()) << r13.status().to_string();
    expect_close(r13.value()[0], want13, "Softmax-13");
    OneNode n11("Softmax", {x});  // default axis 1 before opset 13
    auto r11 = n11.run(11);
    ASSERT_TRUE(r11.is_ok());
    expect_close(r11.value()[0], want11, "Softmax-11");
    // LogSoftmax shares the rule; compare with log of the softmax reference.
    for (double& v : want13) v = std::log(v);
    OneNode nl("LogSoftmax", {x});
    nl.node->attrs.set("axis", int64_t{-2});
    auto rl = nl.run(13);
    ASSERT_TRUE(rl.is_ok()) << rl.status().to_string();
    expect_close(rl.value()[0], want13, "LogSoftmax-13");
  }
}

TEST(ReduceKernel, LayerNormWithStats) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kFloat64}) {
    Tensor x = random_tensor(dt, {2, 3, 4}, rng, -3, 3);
    Tensor scale = random_tensor(dt, {3, 4}, rng, 0.5, 1.5);
    Tensor bias = random_tensor(dt, {4}, rng);  // broadcasts onto [3,4]
    OneNode n("LayerNormalization", {x, scale, bias}, 3);
    n.node->attrs.set("axis", int64_t{1});
    n.node->attrs.set("epsilon", 1e-3f);
    auto r = n.run(17);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    std::vector<double> want(24), mean(2), inv(2);
    for (int a = 0; a < 2; ++a) {
      double m = 0, v = 0;
      for (int k = 0; k < 12; ++k) m += x.get(a * 12 + k) / 12;
      for (int k = 0; k < 12; ++k) v += (x.get(a * 12 + k) - m) * (x.get(a * 12 + k) - m) / 12;
      mean[a] = m;
      inv[a] = 1 / std::sqrt(v + double(1e-3f));
      for (int k = 0; k < 12; ++k) want[a * 12 + k] = (x.get(a * 12 + k) - m) * inv[a] * scale.get(k) + bias.get(k % 4);
    }
    expect_close(r.value()[0], want, std::string("LayerNorm Y ") + dtype_name(dt));
    EXPECT_EQ(r.value()[1].dims(), (std::vector<int64_t>{2, 1, 1}));
    EXPECT_EQ(r.value()[1].dtype(), DataType::kFloat32);  // stash_type default
    expect_close(r.value()[1], mean, "LayerNorm Mean");
    expect_close(r.value()[2], inv, "LayerNorm InvStdDev");
  }
}
