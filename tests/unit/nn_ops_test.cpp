// Conv, pools, BatchNormalization, MatMul, Gemm: symbolic shape inference, error paths, and the CPU
// reference against straightforward formulas written out here on fresh random data.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "tests/unit/op_test_util.h"

namespace graft {
namespace {

using testing::OneNode;
using testing::random_tensor;

// A fresh seed per test, printed by SCOPED_TRACE on any failure.
struct Seeded {
  uint32_t seed = std::random_device{}();
  std::mt19937 rng{seed};
  std::string trace() const { return "seed=" + std::to_string(seed); }
};

double tolerance(DataType t) {
  switch (t) {
    case DataType::kFloat16: return 4e-3;
    case DataType::kFloat64: return 1e-12;
    default: return 2e-6;
  }
}

// |got - want| <= tol * (1 + |want|) elementwise; `want` holds exact (double) results.
void expect_close(const Tensor& got, const std::vector<double>& want, DataType dt, const std::string& what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  const double tol = tolerance(dt);
  int bad = 0;
  for (int64_t i = 0; i < got.numel() && bad < 5; ++i) {
    double g = got.get(i), w = want[static_cast<size_t>(i)];
    if (!(std::fabs(g - w) <= tol * (1.0 + std::fabs(w)))) {
      ADD_FAILURE() << what << ": element " << i << " got " << g << " want " << w;
      ++bad;
    }
  }
}

// Shape inference only, over descriptions that may be symbolic.
struct InferOnly {
  Graph graph;
  Node* node;
  std::vector<Tensor> consts;
  InferOnly(const std::string& op, const std::vector<TensorDesc>& ins, size_t outs = 1) {
    node = graph.add_node("n_" + op, op);
    for (size_t i = 0; i < ins.size(); ++i) {
      Value* v = graph.add_value("in" + std::to_string(i));
      v->desc = ins[i];
      node->inputs.push_back(v);
    }
    for (size_t i = 0; i < outs; ++i) node->outputs.push_back(graph.add_value("out" + std::to_string(i)));
  }
  Result<std::vector<TensorDesc>> run(int opset = 17) {
    std::vector<InferContext::InputInfo> infos;
    for (Value* v : node->inputs) {
      InferContext::InputInfo info;
      info.desc = &v->desc;
      if (v->constant) info.value = &*v->constant;
      infos.push_back(info);
    }
    InferContext ctx(*node, infos, opset);
    const OpEntry* op = find_onnx_op(node->op_type);
    if (!op) return error(StatusCode::kUnsupported, "missing op");
    GRAFT_RETURN_IF_ERROR(op->infer(ctx));
    return ctx.outputs();
  }
};

// ---------------------------------------------------------------------------------------------
// Conv

// Direct definition, every index spelled out (2-D only).
std::vector<double> conv2d_formula(const Tensor& x, const Tensor& w, const Tensor* b, int64_t group,
                                   std::vector<int64_t> stride, std::vector<int64_t> dil,
                                   std::vector<int64_t> pad_begin, std::vector<int64_t> out_hw) {
  const int64_t N = x.dims()[0], C = x.dims()[1], H = x.dims()[2], W = x.dims()[3];
  const int64_t M = w.dims()[0], Cg = w.dims()[1], KH = w.dims()[2], KW = w.dims()[3];
  const int64_t OH = out_hw[0], OW = out_hw[1];
  std::vector<double> y;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = b ? b->get(m) : 0.0;
          int64_t g = m / (M / group);
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                int64_t ih = oh * stride[0] - pad_begin[0] + kh * dil[0];
                int64_t iw = ow * stride[1] - pad_begin[1] + kw * dil[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += x.get(((n * C + g * Cg + c) * H + ih) * W + iw) * w.get(((m * Cg + c) * KH + kh) * KW + kw);
              }
          y.push_back(acc);
        }
  return y;
}

TEST(NnConv, SymbolicBatchShape) {
  InferOnly t("Conv", {TensorDesc(DataType::kFloat32, {Dim::symbol("batch"), 3, 32, 32}),
                       TensorDesc(DataType::kFloat32, {8, 3, 3, 3})});
  t.node->attrs.set("strides", std::vector<int64_t>{2, 2});
  t.node->attrs.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  auto out = t.run();
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(shape_to_string(*(*out)[0].shape), "[batch,8,16,16]");
  EXPECT_EQ((*out)[0].dtype, DataType::kFloat32);
}

TEST(NnConv, SymbolicSpatialShapeEvaluates) {
  // SAME_UPPER over a symbolic height: ceil(H / stride); explicit pads over a symbolic width.
  for (const char* ap : {"SAME_UPPER", "NOTSET", "VALID"}) {
    InferOnly t("Conv", {TensorDesc(DataType::kFloat16, {Dim::symbol("n"), 4, Dim::symbol("h"), Dim::symbol("w")}),
                         TensorDesc(DataType::kFloat16, {6, 2, 3, 2})});
    t.node->attrs.set("auto_pad", std::string(ap));
    t.node->attrs.set("group", int64_t{2});
    t.node->attrs.set("strides", std::vector<int64_t>{2, 3});
    t.node->attrs.set("dilations", std::vector<int64_t>{1, 2});
    if (std::string(ap) == "NOTSET") t.node->attrs.set("pads", std::vector<int64_t>{1, 0, 2, 1});
    auto out = t.run();
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    const Shape& s = *(*out)[0].shape;
    ASSERT_EQ(s.size(), 4u);
    EXPECT_EQ(s[1], 6);
    for (int64_t h : {5, 9, 10}) {
      for (int64_t w : {4, 7, 11}) {
        SymbolBindings b{{"n", 2}, {"h", h}, {"w", w}};
        int64_t want_h, want_w;
        if (std::string(ap) == "SAME_UPPER") {
          want_h = (h + 1) / 2;
          want_w = (w + 2) / 3;
        } else if (std::string(ap) == "VALID") {
          want_h = (h - 3) / 2 + 1;
          want_w = (w - 3) / 3 + 1;  // dilated kernel extent 3
        } else {
          want_h = (h + 1 + 2 - 3) / 2 + 1;
          want_w = (w + 0 + 1 - 3) / 3 + 1;
        }
        EXPECT_EQ(s[0].evaluate(b), 2);
        EXPECT_EQ(s[2].evaluate(b), want_h) << ap << " h=" << h;
        EXPECT_EQ(s[3].evaluate(b), want_w) << ap << " w=" << w;
      }
    }
  }
}

TEST(NnConv, MatchesFormulaRandom) {
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kFloat64}) {
    Seeded s;
    SCOPED_TRACE(s.trace() + " dtype=" + dtype_name(dt));
    Tensor x = random_tensor(dt, {2, 4, 7, 6}, s.rng);
    Tensor w = random_tensor(dt, {6, 2, 3, 2}, s.rng);
    Tensor b = random_tensor(dt, {6}, s.rng);
    OneNode node("Conv", {x, w, b});
    node.node->attrs.set("group", int64_t{2});
    node.node->attrs.set("strides", std::vector<int64_t>{2, 1});
    node.node->attrs.set("dilations", std::vector<int64_t>{1, 2});
    node.node->attrs.set("pads", std::vector<int64_t>{1, 0, 2, 1});
    auto out = node.run();
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    // H: (7 + 3 - 3) / 2 + 1 = 4; W: (6 + 1 - 3) / 1 + 1 = 5
    ASSERT_EQ((*out)[0].dims(), (std::vector<int64_t>{2, 6, 4, 5}));
    expect_close((*out)[0], conv2d_formula(x, w, &b, 2, {2, 1}, {1, 2}, {1, 0}, {4, 5}), dt, "conv");
  }
}

TEST(NnConv, AutoPadSameLowerAndUpper) {
  for (const char* ap : {"SAME_UPPER", "SAME_LOWER"}) {
    Seeded s;
    SCOPED_TRACE(s.trace() + " " + ap);
    Tensor x = random_tensor(DataType::kFloat32, {1, 3, 6, 5}, s.rng);
    Tensor w = random_tensor(DataType::kFloat32, {2, 3, 4, 3}, s.rng);
    OneNode node("Conv", {x, w});
    node.node->attrs.set("auto_pad", std::string(ap));
    node.node->attrs.set("strides", std::vector<int64_t>{2, 2});
    auto out = node.run();
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    ASSERT_EQ((*out)[0].dims(), (std::vector<int64_t>{1, 2, 3, 3}));
    // Total pads are even here (H: (3-1)*2 + 4 - 6 = 2, W: (3-1)*2 + 3 - 5 = 2): 1 before, 1 after.
    expect_close((*out)[0], conv2d_formula(x, w, nullptr, 1, {2, 2}, {1, 1}, {1, 1}, {3, 3}), DataType::kFloat32, ap);

    Tensor x2 = random_tensor(DataType::kFloat32, {1, 3, 5, 5}, s.rng);
    OneNode node2("Conv", {x2, w});
    node2.node->attrs.set("auto_pad", std::string(ap));
    auto out2 = node2.run();
    ASSERT_TRUE(out2.is_ok()) << out2.status().to_string();
    ASSERT_EQ((*out2)[0].dims(), (std::vector<int64_t>{1, 2, 5, 5}));
    // Total pad H = 3: SAME_UPPER puts 1 before, SAME_LOWER 2; W total 2 -> 1 before.
    int64_t before_h = std::string(ap) == "SAME_UPPER" ? 1 : 2;
    expect_close((*out2)[0], conv2d_formula(x2, w, nullptr, 1, {1, 1}, {1, 1}, {before_h, 1}, {5, 5}),
                 DataType::kFloat32, ap);
  }
}

TEST(NnConv, OneDimensional) {
  Seeded s;
  SCOPED_TRACE(s.trace());
  Tensor x = random_tensor(DataType::kFloat32, {2, 3, 9}, s.rng);
  Tensor w = random_tensor(DataType::kFloat32, {4, 3, 3}, s.rng);
  OneNode node("Conv", {x, w});
  node.node->attrs.set("pads", std::vector<int64_t>{1, 1});
  node.node->attrs.set("strides", std::vector<int64_t>{2});
  auto out = node.run();
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  // The 2-D formula with a height of 1 is the 1-D convolution.
  Tensor x4 = x.reshaped({2, 3, 1, 9}), w4 = w.reshaped({4, 3, 1, 3});
  expect_close((*out)[0], conv2d_formula(x4, w4, nullptr, 1, {1, 2}, {1, 1}, {0, 1}, {1, 5}), DataType::kFloat32,
               "conv1d");
}

TEST(NnConv, ChannelMismatchIsAnError) {
  InferOnly t("Conv", {TensorDesc(DataType::kFloat32, {1, 5, 8, 8}), TensorDesc(DataType::kFloat32, {4, 3, 3, 3})});
  auto out = t.run();
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("5 channels"), std::string::npos) << out.status().message();
  EXPECT_NE(out.status().message().find("[4,3,3,3]"), std::string::npos) << out.status().message();
}

TEST(NnConv, BadAttributeTypeNamesAttribute) {
  InferOnly t("Conv", {TensorDesc(DataType::kFloat32, {1, 3, 8, 8}), TensorDesc(DataType::kFloat32, {4, 3, 3, 3})});
  t.node->attrs.set("strides", std::vector<float>{1.0f, 1.0f});
  auto out = t.run();
  ASSERT_FALSE(out.is_ok());
  EXPECT_EQ(out.status().attribute(), "strides");

  InferOnly t2("Conv", {TensorDesc(DataType::kFloat32, {1, 3, 8, 8}), TensorDesc(DataType::kFloat32, {4, 3, 3, 3})});
  t2.node->attrs.set("kernel_shape", std::vector<int64_t>{5, 5});
  auto out2 = t2.run();
  ASSERT_FALSE(out2.is_ok());
  EXPECT_EQ(out2.status().attribute(), "kernel_shape");

  InferOnly t3("Conv", {TensorDesc(DataType::kFloat32, {1, 3, 8, 8}), TensorDesc(DataType::kFloat32, {4, 3, 3, 3})});
  t3.node->attrs.set("auto_pad", std::string("SAME"));
  auto out3 = t3.run();
  ASSERT_FALSE(out3.is_ok());
  EXPECT_EQ(out3.status().attribute(), "auto_pad");
}

TEST(NnConv, InputTooSmallIsAnError) {
  InferOnly t("Conv", {TensorDesc(DataType::kFloat32, {1, 3, 2, 8}), TensorDesc(DataType::kFloat32, {4, 3, 3, 3})});
  auto out = t.run();
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("too small"), std::string::npos) << out.status().message();
}

// ConvTranspose as a gather: output o of axis d receives input i where i*stride - pad + k*dil == o.
TEST(NnConvTranspose, MatchesGatherFormulaRandom) {
  Seeded s;
  SCOPED_TRACE(s.trace());
  const int64_t N = 2, C = 4, H = 3, W = 4, group = 2, Mg = 3, KH = 3, KW = 2;
  const int64_t sh = 2, sw = 3, dh = 1, dw = 2, pbh = 1, pbw = 0, peh = 0, pew = 2, oph = 1, opw = 0;
  Tensor x = random_tensor(DataType::kFloat32, {N, C, H, W}, s.rng);
  Tensor w = random_tensor(DataType::kFloat32, {C, Mg, KH, KW}, s.rng);
  Tensor b = random_tensor(DataType::kFloat32, {Mg * group}, s.rng);
  OneNode node("ConvTranspose", {x, w, b});
  node.node->attrs.set("group", group);
  node.node->attrs.set("strides", std::vector<int64_t>{sh, sw});
  node.node->attrs.set("dilations", std::vector<int64_t>{dh, dw});
  node.node->attrs.set("pads", std::vector<int64_t>{pbh, pbw, peh, pew});
  node.node->attrs.set("output_padding", std::vector<int64_t>{oph, opw});
  auto out = node.run();
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const int64_t OH = sh * (H - 1) + oph + dh * (KH - 1) + 1 - pbh - peh;  // 6
  const int64_t OW = sw * (W - 1) + opw + dw * (KW - 1) + 1 - pbw - pew;  // 10
  ASSERT_EQ((*out)[0].dims(), (std::vector<int64_t>{N, Mg * group, OH, OW}));
  std::vector<double> want;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < Mg * group; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = b.get(m);
          const int64_t g = m / Mg;
          for (int64_t c = g * (C / group); c < (g + 1) * (C / group); ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                int64_t th = oh + pbh - kh * dh, tw = ow + pbw - kw * dw;
                if (th < 0 || tw < 0 || th % sh || tw % sw || th / sh >= H || tw / sw >= W) continue;
                acc += x.get(((n * C + c) * H + th / sh) * W + tw / sw) * w.get(((c * Mg + m % Mg) * KH + kh) * KW + kw);
              }
          want.push_back(acc);
        }
  expect_close((*out)[0], want, DataType::kFloat32, "conv_transpose");
}

TEST(NnConvTranspose, SymbolicShape) {
  InferOnly t("ConvTranspose", {TensorDesc(DataType::kFloat32, {Dim::symbol("n"), 4, Dim::symbol("h"), 5}),
                                TensorDesc(DataType::kFloat32, {4, 2, 3, 3})});
  t.node->attrs.set("strides", std::vector<int64_t>{2, 2});
  t.node->attrs.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  auto out = t.run();
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const Shape& sh = *(*out)[0].shape;
  EXPECT_TRUE(sh[0].same_as(Dim::symbol("n")));
  EXPECT_EQ(sh[1], 2);
  EXPECT_EQ(sh[2].evaluate({{"h", 7}}), 2 * 6 + 3 - 2);
  EXPECT_EQ(sh[3], 2 * 4 + 3 - 2);
}

// ---------------------------------------------------------------------------------------------
// MatMul / Gemm

std::vector<double> matmul_formula(const Tensor& a, const Tensor& b, std::vector<int64_t> batch_a,
                                   std::vector<int64_t> batch_b, int64_t M, int64_t K, int64_t N,
                                   const std::vector<int64_t>& out_batch) {
  // Batch operands are right-aligned; a batch axis of size 1 repeats.
  std::vector<double> y;
  int64_t nb = 1;
  for (int64_t d : out_batch) nb *= d;
  for (int64_t f = 0; f < nb; ++f) {
    std::vector<int64_t> idx(out_batch.size());
    int64_t r = f;
    for (size_t i = out_batch.size(); i-- > 0;) {
      idx[i] = r % out_batch[i];
      r /= out_batch[i];
    }
    auto offset = [&](const std::vector<int64_t>& dims) {
      int64_t off = 0;
      size_t lead = out_batch.size() - dims.size();
      for (size_t i = 0; i < dims.size(); ++i) off = off * dims[i] + (dims[i] == 1 ? 0 : idx[lead + i]);
      return off;
    };
    int64_t oa = offset(batch_a), ob = offset(batch_b);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0.0;
        for (int64_t k = 0; k < K; ++k) acc += a.get(oa * M * K + i * K + k) * b.get(ob * K * N + k * N + j);
        y.push_back(acc);
      }
  }
  return y;
}

TEST(NnMatMul, BroadcastBatchesRandom) {
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16}) {
    Seeded s;
    SCOPED_TRACE(s.trace() + " dtype=" + dtype_name(dt));
    Tensor a = random_tensor(dt, {2, 1, 3, 4}, s.rng);
    Tensor b = random_tensor(dt, {5, 4, 6}, s.rng);
    OneNode node("MatMul", {a, b});
    auto out = node.run();
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    ASSERT_EQ((*out)[0].dims(), (std::vector<int64_t>{2, 5, 3, 6}));
    expect_close((*out)[0], matmul_formula(a, b, {2, 1}, {5}, 3, 4, 6, {2, 5}), dt, "matmul");
  }
}

TEST(NnMatMul, OneDimensionalOperands) {
  Seeded s;
  SCOPED_TRACE(s.trace());
  Tensor v = random_tensor(DataType::kFloat32, {4}, s.rng);
  Tensor m = random_tensor(DataType::kFloat32, {3, 4, 5}, s.rng);
  Tensor m2 = random_tensor(DataType::kFloat32, {2, 6, 4}, s.rng);
  {
    OneNode node("MatMul", {v, m});  // [4] x [3,4,5] -> [3,5]
    auto out = node.run();
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    ASSERT_EQ((*out)[0].dims(), (std::vector<int64_t>{3, 5}));
    expect_close((*out)[0], matmul_formula(v, m, {}, {3}, 1, 4, 5, {3}), DataType::kFloat32, "vec x batch");
  }
  {
    OneNode node("MatMul", {m2, v});  // [2,6,4] x [4] -> [2,6]
    auto out = node.run();
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    ASSERT_EQ((*out)[0].dims(), (std::vector<int64_t>{2, 6}));
    expect_close((*out)[0], matmul_formula(m2, v, {2}, {}, 6, 4, 1, {2}), DataType::kFloat32, "batch x vec");
  }
  {
    OneNode node("MatMul", {v, v});  // [4] x [4] -> []
    auto out = node.run();
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    EXPECT_EQ((*out)[0].rank(), 0);
    expect_close((*out)[0], matmul_formula(v, v, {}, {}, 1, 4, 1, {}), DataType::kFloat32, "dot");
  }
}

TEST(NnMatMul, InnerDimMismatchNamesBothShapes) {
  InferOnly t("MatMul", {TensorDesc(DataType::kFloat32, {Dim::symbol("b"), 3, 4}),
                         TensorDesc(DataType::kFloat32, {5, 6})});
  auto out = t.run();
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("[b,3,4]"), std::string::npos) << out.status().message();
  EXPECT_NE(out.status().message().find("[5,6]"), std::string::npos) << out.status().message();
}

TEST(NnMatMul, SymbolicShape) {
  InferOnly t("MatMul", {TensorDesc(DataType::kFloat32, {Dim::symbol("b"), Dim::symbol("s"), 64}),
                         TensorDesc(DataType::kFloat32, {64, 32})});
  auto out = t.run();
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(shape_to_string(*(*out)[0].shape), "[b,s,32]");
}

TEST(NnGemm, AllTransposesAndBiasShapesRandom) {
  const int64_t M = 3, K = 5, N = 4;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (int cshape = 0; cshape < 5; ++cshape) {
        Seeded s;
        SCOPED_TRACE(s.trace() + " transA=" + std::to_string(ta) + " transB=" + std::to_string(tb) +
                     " cshape=" + std::to_string(cshape));
        Tensor a = random_tensor(DataType::kFloat32, ta ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K}, s.rng);
        Tensor b = random_tensor(DataType::kFloat32, tb ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, s.rng);
        std::vector<std::vector<int64_t>> cdims = {{}, {N}, {M, 1}, {M, N}, {1}};
        Tensor c = random_tensor(DataType::kFloat32, cdims[static_cast<size_t>(cshape)], s.rng);
        const bool with_c = cshape != 4 || ta == 0;  // also cover "no C"
        OneNode node("Gemm", with_c ? std::vector<Tensor>{a, b, c} : std::vector<Tensor>{a, b});
        node.node->attrs.set("transA", int64_t{ta});
        node.node->attrs.set("transB", int64_t{tb});
        node.node->attrs.set("alpha", 0.75f);
        node.node->attrs.set("beta", -1.5f);
        auto out = node.run(11);
        ASSERT_TRUE(out.is_ok()) << out.status().to_string();
        ASSERT_EQ((*out)[0].dims(), (std::vector<int64_t>{M, N}));
        std::vector<double> want;
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) {
            double acc = 0.0;
            for (int64_t k = 0; k < K; ++k)
              acc += (ta ? a.get(k * M + i) : a.get(i * K + k)) * (tb ? b.get(j * K + k) : b.get(k * N + j));
            double cv = 0.0;
            if (with_c) {
              switch (cshape) {
                case 0: case 4: cv = c.get(0); break;
                case 1: cv = c.get(j); break;
                case 2: cv = c.get(i); break;
                default: cv = c.get(i * N + j); break;
              }
            }
            want.push_back(0.75 * acc + -1.5 * cv);
          }
        expect_close((*out)[0], want, DataType::kFloat32, "gemm");
      }
}

TEST(NnGemm, BadBiasShapeIsAnError) {
  InferOnly t("Gemm", {TensorDesc(DataType::kFloat32, {3, 5}), TensorDesc(DataType::kFloat32, {5, 4}),
                       TensorDesc(DataType::kFloat32, {2, 4})});
  auto out = t.run();
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("[2,4]"), std::string::npos) << out.status().message();
}

// ---------------------------------------------------------------------------------------------
// BatchNormalization

TEST(NnBatchNorm, MatchesFormulaRandom) {
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16}) {
    Seeded s;
    SCOPED_TRACE(s.trace() + " dtype=" + dtype_name(dt));
    Tensor x = random_tensor(dt, {2, 3, 4, 5}, s.rng);
    Tensor scale = random_tensor(dt, {3}, s.rng);
    Tensor bias = random_tensor(dt, {3}, s.rng);
    Tensor mean = random_tensor(dt, {3}, s.rng);
    Tensor var = random_tensor(dt, {3}, s.rng, 0.5, 2.0);
    OneNode node("BatchNormalization", {x, scale, bias, mean, var});
    node.node->attrs.set("epsilon", 1e-3f);
    auto out = node.run(15);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    std::vector<double> want;
    for (int64_t i = 0; i < x.numel(); ++i) {
      int64_t c = (i / 20) % 3;
      want.push_back((x.get(i) - mean.get(c)) / std::sqrt(var.get(c) + double(1e-3f)) * scale.get(c) + bias.get(c));
    }
    expect_close((*out)[0], want, dt, "batchnorm");
  }
}

// Training mode runs from opset 14 (tests/unit/tfidf_training_ops_test.cpp); before it the
// attribute does not exist.
TEST(NnBatchNorm, TrainingModeBeforeOpset14IsAnErrorNamingTheAttribute) {
  std::mt19937 rng(1);
  Tensor p = random_tensor(DataType::kFloat32, {3}, rng);
  OneNode node("BatchNormalization", {random_tensor(DataType::kFloat32, {2, 3, 4}, rng), p, p, p, p});
  node.node->attrs.set("training_mode", int64_t{1});
  auto out = node.run(13);
  ASSERT_FALSE(out.is_ok());
  EXPECT_EQ(out.status().attribute(), "training_mode");
}

// ---------------------------------------------------------------------------------------------
// Pools

// Direct 2-D pooling definition. Average divides by the valid count, or with include_pad by the
// taps within the padded extent [-pad_begin, H + pad_end).
std::vector<double> pool2d_formula(const Tensor& x, bool is_max, bool include_pad, std::vector<int64_t> k,
                                   std::vector<int64_t> stride, std::vector<int64_t> pb, std::vector<int64_t> pe,
                                   std::vector<int64_t> out_hw, std::vector<int64_t>* argmax = nullptr) {
  const int64_t NC = x.dims()[0] * x.dims()[1], H = x.dims()[2], W = x.dims()[3];
  std::vector<double> y;
  for (int64_t nc = 0; nc < NC; ++nc)
    for (int64_t oh = 0; oh < out_hw[0]; ++oh)
      for (int64_t ow = 0; ow < out_hw[1]; ++ow) {
        double best = -INFINITY, sum = 0.0;
        int64_t count = 0, padded = 0, best_at = -1;
        for (int64_t kh = 0; kh < k[0]; ++kh)
          for (int64_t kw = 0; kw < k[1]; ++kw) {
            int64_t ih = oh * stride[0] - pb[0] + kh, iw = ow * stride[1] - pb[1] + kw;
            if (ih >= -pb[0] && ih < H + pe[0] && iw >= -pb[1] && iw < W + pe[1]) ++padded;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            double v = x.get((nc * H + ih) * W + iw);
            if (v > best) {
              best = v;
              best_at = (nc * H + ih) * W + iw;
            }
            sum += v;
            ++count;
          }
        y.push_back(is_max ? best : sum / double(include_pad ? padded : count));
        if (argmax) argmax->push_back(best_at);
      }
  return y;
}

TEST(NnPool, MaxPoolWithIndicesRandom) {
  Seeded s;
  SCOPED_TRACE(s.trace());
  Tensor x = random_tensor(DataType::kFloat32, {2, 3, 7, 8}, s.rng);
  OneNode node("MaxPool", {x}, 2);
  node.node->attrs.set("kernel_shape", std::vector<int64_t>{3, 2});
  node.node->attrs.set("strides", std::vector<int64_t>{2, 2});
  node.node->attrs.set("pads", std::vector<int64_t>{1, 0, 1, 1});
  auto out = node.run();
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  // H: (7 + 2 - 3) / 2 + 1 = 4; W: (8 + 1 - 2) / 2 + 1 = 4
  ASSERT_EQ((*out)[0].dims(), (std::vector<int64_t>{2, 3, 4, 4}));
  std::vector<int64_t> argmax;
  expect_close((*out)[0], pool2d_formula(x, true, false, {3, 2}, {2, 2}, {1, 0}, {1, 1}, {4, 4}, &argmax),
               DataType::kFloat32, "maxpool");
  ASSERT_EQ((*out)[1].dtype(), DataType::kInt64);
  for (int64_t i = 0; i < (*out)[1].numel(); ++i) EXPECT_EQ((*out)[1].data_as<int64_t>()[i], argmax[size_t(i)]);
}

TEST(NnPool, AveragePoolCeilModeAndIncludePadRandom) {
  for (int include_pad = 0; include_pad < 2; ++include_pad) {
    Seeded s;
    SCOPED_TRACE(s.trace() + " include_pad=" + std::to_string(include_pad));
    Tensor x = random_tensor(DataType::kFloat32, {1, 2, 6, 7}, s.rng);
    OneNode node("AveragePool", {x});
    node.node->attrs.set("kernel_shape", std::vector<int64_t>{3, 3});
    node.node->attrs.set("strides", std::vector<int64_t>{2, 2});
    node.node->attrs.set("pads", std::vector<int64_t>{1, 1, 1, 1});
    node.node->attrs.set("ceil_mode", int64_t{1});
    node.node->attrs.set("count_include_pad", int64_t{include_pad});
    auto out = node.run();
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    // H: ceil((6 + 2 - 3) / 2) + 1 = 4, and the 4th window starts at 5 < 6 + 1: kept.
    // W: ceil((7 + 2 - 3) / 2) + 1 = 4, the 4th starts at 5 < 7 + 1: kept.
    ASSERT_EQ((*out)[0].dims(), (std::vector<int64_t>{1, 2, 4, 4}));
    expect_close((*out)[0], pool2d_formula(x, false, include_pad, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {4, 4}),
                 DataType::kFloat32, "avgpool");
  }
}

TEST(NnPool, CeilModeDropsWindowStartingInEndPadding) {
  // Concrete and symbolic inference agree: H=5, k=2, stride=2, pads 1/1: ceil((5+2-2)/2)+1 = 4,
  // but the 4th window would start at 6 - 1 = 5 >= 5 + 1? no: starts at 3*2-1 = 5 < 6, kept: 4.
  // With H=4: ceil((4+2-2)/2)+1 = 3, the 3rd starts at 3 < 5: kept. With k=1, pads 0/1, H=4:
  // ceil((4+1-1)/2)+1 = 3, the 3rd starts at 4 >= 4: dropped -> 2.
  InferOnly t("MaxPool", {TensorDesc(DataType::kFloat32, {1, 1, Dim::symbol("h"), 4})});
  t.node->attrs.set("kernel_shape", std::vector<int64_t>{1, 1});
  t.node->attrs.set("strides", std::vector<int64_t>{2, 2});
  t.node->attrs.set("pads", std::vector<int64_t>{0, 0, 1, 1});
  t.node->attrs.set("ceil_mode", int64_t{1});
  auto out = t.run();
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ((*(*out)[0].shape)[3], 2);
  EXPECT_EQ((*(*out)[0].shape)[2].evaluate({{"h", 4}}), 2);
  EXPECT_EQ((*(*out)[0].shape)[2].evaluate({{"h", 5}}), 3);
}

TEST(NnPool, GlobalAveragePoolRandom) {
  Seeded s;
  SCOPED_TRACE(s.trace());
  Tensor x = random_tensor(DataType::kFloat16, {2, 3, 4, 5}, s.rng);
  OneNode node("GlobalAveragePool", {x});
  auto out = node.run();
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  ASSERT_EQ((*out)[0].dims(), (std::vector<int64_t>{2, 3, 1, 1}));
  std::vector<double> want(6, 0.0);
  for (int64_t i = 0; i < x.numel(); ++i) want[size_t(i / 20)] += x.get(i) / 20.0;
  expect_close((*out)[0], want, DataType::kFloat16, "gap");
}

}  // namespace
}  // namespace graft
