// Transformer fusions (src/graph/fuse_gemm_epilogues.cpp, fold_gemm_scales.cpp,
// fuse_elementwise_chains.cpp): GEMM epilogues (bias, Relu, GELU in both
// exporters' forms) and elementwise chains. Each test runs the graph on the CPU reference before
// and after the pass, on fresh random inputs, and compares; negative tests check that patterns the
// pass must not touch stay as they were.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "graph/passes.h"
#include "graph/precision.h"
#include "onnx/importer.h"
#include "ops/transformer/transformer.h"
#include "ops/operator.h"
#include "runtime/cpu_executor.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/graph_pass_test_util.h"
#include "tests/unit/op_test_util.h"

namespace graft {
namespace {

using testing::OnnxModelBuilder;
using testing::random_tensor;
using namespace testing;  // NOLINT(build/namespaces): the graph-pass test helpers

constexpr DataType kF32 = DataType::kFloat32;

Result<int> gemm_pass(Graph& g) { return fuse_gemm_epilogues(g); }
Result<int> chain_pass(Graph& g) { return fuse_elementwise_chains(g, [](const Node&) { return true; }); }

Tensor scalar(float v) { return Tensor::from_doubles(kF32, {}, {v}); }

// X[2,5,K] . W[K,N] (+ b) [-> act]; variants picked by the flags.
struct LinearSpec {
  bool bias_first = false;          // Add(b, y) instead of Add(y, b)
  std::vector<int64_t> bias_dims;   // default {N}
  std::string act;                  // "", "Relu", "GeluTorch", "GeluHf", "GeluNode"
  bool extra_consumer = false;      // the MatMul output is also a graph output
  bool bias_input = false;          // bias is a graph input, not a constant
  int residual = 0;                 // Add(r, out) after everything: 0 none, 1 r [2,5,N], 2 r [N] (broadcast)
};

OnnxModelBuilder linear_model(const LinearSpec& s, std::mt19937& rng, int64_t K = 16, int64_t N = 8) {
  OnnxModelBuilder b(s.act == "GeluNode" ? 20 : 17);
  b.input("x", kF32, {2, 5, K});
  b.initializer("w", random_tensor(kF32, {K, N}, rng));
  std::vector<int64_t> bd = s.bias_dims.empty() ? std::vector<int64_t>{N} : s.bias_dims;
  if (s.bias_input) {
    std::vector<testing::DimSpec> d(bd.begin(), bd.end());
    b.input("b", kF32, d);
  } else {
    b.initializer("b", random_tensor(kF32, bd, rng));
  }
  b.node("MatMul", {"x", "w"}, {"mm"});
  if (s.bias_first) b.node("Add", {"b", "mm"}, {"h"});
  else b.node("Add", {"mm", "b"}, {"h"});
  std::string out = "h";
  if (s.act == "Relu") {
    b.node("Relu", {"h"}, {"y"});
    out = "y";
  } else if (s.act == "GeluTorch") {  // torch.onnx symbolic_opset9.gelu
    b.initializer("sqrt2", scalar(1.4142135623730951f));
    b.initializer("one", scalar(1.f));
    b.initializer("half", scalar(0.5f));
    b.node("Div", {"h", "sqrt2"}, {"g1"});
    b.node("Erf", {"g1"}, {"g2"});
    b.node("Add", {"g2", "one"}, {"g3"});
    b.node("Mul", {"h", "g3"}, {"g4"});
    b.node("Mul", {"g4", "half"}, {"y"});
    out = "y";
  } else if (s.act == "GeluHf") {  // 0.5 x first, erf(x * 1/sqrt2), operands swapped
    b.initializer("rsqrt2", scalar(0.7071067811865476f));
    b.initializer("one", scalar(1.f));
    b.initializer("half", scalar(0.5f));
    b.node("Mul", {"half", "h"}, {"g0"});
    b.node("Mul", {"rsqrt2", "h"}, {"g1"});
    b.node("Erf", {"g1"}, {"g2"});
    b.node("Add", {"one", "g2"}, {"g3"});
    b.node("Mul", {"g0", "g3"}, {"y"});
    out = "y";
  } else if (s.act == "GeluNode") {
    b.node("Gelu", {"h"}, {"y"});
    out = "y";
  }
  if (s.residual) {
    if (s.residual == 1) b.input("r", kF32, {2, 5, N});
    else b.input("r", kF32, {N});
    b.node("Add", {"r", out}, {"z"});
    out = "z";
  }
  b.output(out, kF32);
  if (s.extra_consumer) b.output("mm", kF32);
  return b;
}

TEST(FuseGemm, MatMulBiasActivationVariants) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  for (std::string act : {"", "Relu", "GeluTorch", "GeluHf", "GeluNode"})
    for (bool first : {false, true})
      for (std::vector<int64_t> bd : {std::vector<int64_t>{8}, std::vector<int64_t>{1, 8}, std::vector<int64_t>{1, 1, 8}}) {
        SCOPED_TRACE("act '" + act + "' bias first " + std::to_string(first) + " bias rank " + std::to_string(bd.size()));
        LinearSpec s;
        s.act = act;
        s.bias_first = first;
        s.bias_dims = bd;
        auto g = load(linear_model(s, rng));
        ASSERT_TRUE(g);
        check_pass(*g, gemm_pass, 1, seed);
        ASSERT_EQ(g->nodes().size(), 1u) << "everything folds into one GraftGemm";
        const Node* n = find_op(*g, "GraftGemm");
        ASSERT_TRUE(n);
        EXPECT_EQ(n->attrs.get_string("activation", "?").value(), act.rfind("Gelu", 0) == 0 ? "Gelu" : act);
      }
}

TEST(FuseGemm, ResidualAddBecomesTheCMatrix) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  {
    SCOPED_TRACE("MatMul + bias + residual");
    LinearSpec s;
    s.residual = 1;
    auto g = load(linear_model(s, rng));
    ASSERT_TRUE(g);
    check_pass(*g, gemm_pass, 1, seed);
    ASSERT_EQ(g->nodes().size(), 1u);
    EXPECT_EQ(g->nodes()[0]->inputs.size(), 4u);
  }
  {
    SCOPED_TRACE("a broadcast residual stays an Add");
    LinearSpec s;
    s.residual = 2;
    auto g = load(linear_model(s, rng));
    ASSERT_TRUE(g);
    check_pass(*g, gemm_pass, 1, seed);
    EXPECT_EQ(count_op(*g, "Add"), 1);
    EXPECT_EQ(find_op(*g, "GraftGemm")->inputs.size(), 3u);
  }
  {
    SCOPED_TRACE("after an activation the residual stays an Add");
    LinearSpec s;
    s.residual = 1;
    s.act = "Relu";
    auto g = load(linear_model(s, rng));
    ASSERT_TRUE(g);
    check_pass(*g, gemm_pass, 1, seed);
    EXPECT_EQ(count_op(*g, "Add"), 1);
  }
  {
    SCOPED_TRACE("MatMul + residual without bias: the bias input is omitted");
    OnnxModelBuilder b;
    b.input("x", kF32, {4, 16});
    b.initializer("w", random_tensor(kF32, {16, 8}, rng));
    b.input("r", kF32, {4, 8});
    b.node("MatMul", {"x", "w"}, {"h"});
    b.node("Add", {"h", "r"}, {"y"});
    b.output("y", kF32);
    auto g = load(b);
    ASSERT_TRUE(g);
    check_pass(*g, gemm_pass, 1, seed);
    ASSERT_EQ(g->nodes().size(), 1u);
    EXPECT_EQ(g->nodes()[0]->inputs[2], nullptr);
  }
}

// ConvNeXt's block tail once the layout pass has removed its permute: GraftGemm -> Mul by a
// per-channel layer scale -> Add(block input). The scale moves into W's columns and the bias, the
// Add becomes the GEMM's residual; a scale that is not per-column, and a GEMM with an activation,
// are left alone.
TEST(FuseGemm, ChannelScaleAndResidualFoldIntoTheGemm) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  auto pass = [](Graph& g) -> Result<int> {
    GRAFT_ASSIGN_OR_RETURN(int fused, fuse_gemm_epilogues(g));
    GRAFT_RETURN_IF_ERROR(infer_shapes(g));
    GRAFT_ASSIGN_OR_RETURN(int folded, fold_gemm_scales_and_residuals(g));
    return fused + folded;
  };
  for (bool trans_b : {false, true}) {
    for (bool with_add : {true, false}) {
      SCOPED_TRACE(std::string(trans_b ? "Gemm transB" : "MatMul") + (with_add ? " + scale + residual" : " + scale"));
      OnnxModelBuilder b;
      b.input("x", kF32, {2, 3, 4, 16});
      b.initializer("w", random_tensor(kF32, trans_b ? std::vector<int64_t>{8, 16} : std::vector<int64_t>{16, 8}, rng));
      b.initializer("bias", random_tensor(kF32, {8}, rng));
      b.initializer("gamma", random_tensor(kF32, {1, 1, 1, 8}, rng));
      b.input("r", kF32, {2, 3, 4, 8});
      if (trans_b) {
        std::vector<int64_t> flat{24, 16}, unflat{2, 3, 4, 8};
        b.initializer("flat", Tensor::vector_int64(flat));
        b.initializer("unflat", Tensor::vector_int64(unflat));
        b.node("Reshape", {"x", "flat"}, {"x2"});
        OnnxModelBuilder::attr(b.node("Gemm", {"x2", "w", "bias"}, {"h2"}), "transB", int64_t{1});
        b.node("Reshape", {"h2", "unflat"}, {"h"});
      } else {
        b.node("MatMul", {"x", "w"}, {"hm"});
        b.node("Add", {"hm", "bias"}, {"h"});
      }
      b.node("Mul", {"gamma", "h"}, {"s"});
      if (with_add) b.node("Add", {"s", "r"}, {"y"});
      else b.node("Identity", {"s"}, {"y"});
      b.output("y", kF32);
      auto g = load(b);
      ASSERT_TRUE(g);
      check_pass(*g, pass, 2, seed);
      EXPECT_EQ(count_op(*g, "Mul"), 0);
      EXPECT_EQ(count_op(*g, "Add"), 0);
      EXPECT_EQ(find_op(*g, "GraftGemm")->inputs.size(), with_add ? 4u : 3u);
    }
  }
  {
    SCOPED_TRACE("a scale along another axis, and a GEMM with an activation, stay");
    OnnxModelBuilder b;
    b.input("x", kF32, {2, 8, 16});
    b.initializer("w", random_tensor(kF32, {16, 8}, rng));
    b.initializer("w2", random_tensor(kF32, {8, 8}, rng));
    b.initializer("rowscale", random_tensor(kF32, {8, 1}, rng));
    b.initializer("colscale", random_tensor(kF32, {8}, rng));
    b.node("MatMul", {"x", "w"}, {"h"});
    b.node("Mul", {"h", "rowscale"}, {"s"});
    b.node("MatMul", {"s", "w2"}, {"h2"});
    b.node("Relu", {"h2"}, {"a"});
    b.node("Mul", {"a", "colscale"}, {"y"});
    b.output("y", kF32);
    auto g = load(b);
    ASSERT_TRUE(g);
    check_pass(*g, pass, 1, seed);  // only the Relu joins its GEMM
    EXPECT_EQ(count_op(*g, "Mul"), 2);
  }
}

// aten.linear on a 3-D input through aten.addmm: Reshape -> Gemm(transB, C) -> Reshape.
TEST(FuseGemm, GemmBetweenFoldingReshapes) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  for (int tail = 0; tail < 4; ++tail) {  // nothing, GELU node, residual, fold read elsewhere too
    SCOPED_TRACE("tail " + std::to_string(tail));
    OnnxModelBuilder b(20);
    b.input("x", kF32, {2, 5, 16});
    b.initializer("w", random_tensor(kF32, {8, 16}, rng));
    b.initializer("c", random_tensor(kF32, {8}, rng));
    b.initializer("s1", Tensor::vector_int64({-1, 16}));
    b.initializer("s2", Tensor::vector_int64({2, 5, 8}));
    b.node("Reshape", {"x", "s1"}, {"x2"});
    auto& n = b.node("Gemm", {"x2", "w", "c"}, {"h2"});
    OnnxModelBuilder::attr(n, "transB", 1);
    b.node("Reshape", {"h2", "s2"}, {"h"});
    std::string out = "h";
    if (tail == 1) {
      b.node("Gelu", {"h"}, {"y"});
      out = "y";
    } else if (tail == 2) {
      b.input("r", kF32, {2, 5, 8});
      b.node("Add", {"h", "r"}, {"y"});
      out = "y";
    }
    b.output(out, kF32);
    if (tail == 3) b.output("x2", kF32);
    auto g = load(b);
    ASSERT_TRUE(g);
    check_pass(*g, gemm_pass, 1, seed);
    EXPECT_EQ(count_op(*g, "Reshape"), tail == 3 ? 1 : 0);
    EXPECT_EQ(count_op(*g, "GraftGemm"), 1);
    EXPECT_EQ(g->nodes().size(), tail == 3 ? 2u : 1u);
  }
  // An unfold to another shape ([5, 2, 8]) is not the inverse of the fold: left alone.
  OnnxModelBuilder b;
  b.input("x", kF32, {2, 5, 16});
  b.initializer("w", random_tensor(kF32, {16, 8}, rng));
  b.initializer("s1", Tensor::vector_int64({-1, 16}));
  b.initializer("s2", Tensor::vector_int64({5, 2, 8}));
  b.node("Reshape", {"x", "s1"}, {"x2"});
  b.node("Gemm", {"x2", "w"}, {"h2"});
  b.node("Reshape", {"h2", "s2"}, {"y"});
  b.output("y", kF32);
  auto g = load(b);
  ASSERT_TRUE(g);
  check_pass(*g, gemm_pass, 0, seed);
}

// ---- attention ----

struct AttnSpec {
  std::string scale_at = "q";  // "q" (Div(Q, sqrt d)), "qk" (Mul on Q and on K before Transpose), "scores", "none"
  int64_t softmax_axis = -1;
  int64_t opset = 17;
  bool scores_output = false;  // the scores are also a graph output
  bool transpose_shared = false;  // the Transpose's output is also a graph output
};

OnnxModelBuilder attention_model(const AttnSpec& a) {
  OnnxModelBuilder b(a.opset);
  b.input("q", kF32, {2, 3, 6, 8});
  b.input("k", kF32, {2, 3, 5, 8});
  b.input("v", kF32, {2, 3, 5, 4});
  b.initializer("c", scalar(a.scale_at == "q" || a.scale_at == "scores" ? 2.8284271f : 0.5946036f));
  std::string q = "q", k = "k";
  if (a.scale_at == "q") {
    b.node("Div", {"q", "c"}, {"qs"});
    q = "qs";
  } else if (a.scale_at == "qk") {
    b.node("Mul", {"q", "c"}, {"qs"});
    b.node("Mul", {"c", "k"}, {"ks"});
    q = "qs";
    k = "ks";
  }
  auto& t = b.node("Transpose", {k}, {"kt"});
  OnnxModelBuilder::attr(t, "perm", std::vector<int64_t>{0, 1, 3, 2});
  b.node("MatMul", {q, "kt"}, {"s"});
  std::string s = "s";
  if (a.scale_at == "scores") {
    b.node("Div", {"s", "c"}, {"ss"});
    s = "ss";
  }
  auto& sm = b.node("Softmax", {s}, {"p"});
  if (a.softmax_axis != -100) OnnxModelBuilder::attr(sm, "axis", a.softmax_axis);
  b.node("MatMul", {"p", "v"}, {"y"});
  b.output("y", kF32);
  if (a.scores_output) b.output("s", kF32);
  if (a.transpose_shared) b.output("kt", kF32);
  return b;
}

// Inference Dropouts (torchvision's MLP and encoder block, sdpa's Dropout(p = 0)) are absorbed.
TEST(FuseGemm, InferenceDropoutsAreAbsorbed) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  for (int mask_read = 0; mask_read < 2; ++mask_read) {
    SCOPED_TRACE("mask output read: " + std::to_string(mask_read));
    OnnxModelBuilder b(20);
    b.input("x", kF32, {2, 5, 16});
    b.initializer("w1", random_tensor(kF32, {16, 32}, rng));
    b.initializer("b1", random_tensor(kF32, {32}, rng));
    b.initializer("w2", random_tensor(kF32, {32, 16}, rng));
    b.initializer("b2", random_tensor(kF32, {16}, rng));
    b.initializer("ratio", scalar(0.1f));
    b.initializer("train", Tensor::from_doubles(DataType::kBool, {}, {0.0}));
    b.node("MatMul", {"x", "w1"}, {"m1"});
    b.node("Add", {"m1", "b1"}, {"h1"});
    b.node("Gelu", {"h1"}, {"g"});
    if (mask_read) b.node("Dropout", {"g", "ratio", "train"}, {"gd", "mask"});
    else b.node("Dropout", {"g", "ratio", "train"}, {"gd"});
    b.node("MatMul", {"gd", "w2"}, {"m2"});
    b.node("Add", {"m2", "b2"}, {"h2"});
    b.node("Dropout", {"h2"}, {"h2d"});
    b.node("Add", {"h2d", "x"}, {"y"});
    b.output("y", kF32);
    if (mask_read) b.output("mask", DataType::kBool);
    auto g = load(b);
    ASSERT_TRUE(g);
    // atol 1e-5: the residual Add cancels terms of size ~1 summed in another order by the fused
    // epilogue, so a result near 0 carries float32 rounding of ~1e-6 (a wrong fusion is off by O(1)).
    check_pass(*g, gemm_pass, 2, seed, 1e-5, 1e-5);
    EXPECT_EQ(count_op(*g, "Dropout"), mask_read ? 1 : 0);
    EXPECT_EQ(count_op(*g, "Add"), 0) << "bias and residual in the epilogues";
  }
  // Attention with Dropout between Softmax and the second MatMul.
  OnnxModelBuilder d(17);
  d.input("q", kF32, {2, 3, 6, 8});
  d.input("kt", kF32, {2, 3, 8, 5});
  d.input("v", kF32, {2, 3, 5, 4});
  d.node("MatMul", {"q", "kt"}, {"s"});
  d.node("Softmax", {"s"}, {"p"});
  d.node("Dropout", {"p"}, {"pd"});
  d.node("MatMul", {"pd", "v"}, {"y"});
  d.output("y", kF32);
  auto g = load(d);
  ASSERT_TRUE(g);
  check_pass(*g, gemm_pass, 1, seed);
  EXPECT_EQ(g->nodes().size(), 1u);
}

TEST(FuseGemm, GemmWithBiasAndTransB) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  for (float beta : {1.f, 0.5f})
    for (bool relu : {false, true}) {
      OnnxModelBuilder b;
      b.input("x", kF32, {6, 16});
      b.initializer("w", random_tensor(kF32, {8, 16}, rng));
      b.initializer("c", random_tensor(kF32, {8}, rng));
      auto& n = b.node("Gemm", {"x", "w", "c"}, {"h"});
      OnnxModelBuilder::attr(n, "transB", 1);
      OnnxModelBuilder::attr(n, "alpha", 0.75f);
      OnnxModelBuilder::attr(n, "beta", beta);
      if (relu) b.node("Relu", {"h"}, {"y"});
      b.output(relu ? "y" : "h", kF32);
      auto g = load(b);
      ASSERT_TRUE(g);
      // A Gemm that already has its bias and no activation has nothing to gain: left alone.
      check_pass(*g, gemm_pass, relu ? 1 : 0, seed);
      EXPECT_EQ(count_op(*g, "GraftGemm"), relu ? 1 : 0);
    }
  // Gemm without C followed by a bias Add.
  OnnxModelBuilder b;
  b.input("x", kF32, {6, 16});
  b.initializer("w", random_tensor(kF32, {16, 8}, rng));
  b.initializer("c", random_tensor(kF32, {1, 8}, rng));
  b.node("Gemm", {"x", "w"}, {"h"});
  b.node("Add", {"h", "c"}, {"y"});
  b.output("y", kF32);
  auto g = load(b);
  ASSERT_TRUE(g);
  check_pass(*g, gemm_pass, 1, seed);
  EXPECT_EQ(g->nodes().size(), 1u);
}

TEST(FuseGemm, PatternsThatMustNotFuse) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  {
    SCOPED_TRACE("MatMul output has another consumer");
    LinearSpec s;
    s.act = "Relu";
    s.extra_consumer = true;
    auto g = load(linear_model(s, rng));
    ASSERT_TRUE(g);
    check_pass(*g, gemm_pass, 0, seed);
    EXPECT_EQ(count_op(*g, "MatMul"), 1);
  }
  {
    SCOPED_TRACE("bias is not a constant");
    LinearSpec s;
    s.bias_input = true;
    auto g = load(linear_model(s, rng));
    ASSERT_TRUE(g);
    check_pass(*g, gemm_pass, 0, seed);
    EXPECT_EQ(count_op(*g, "Add"), 1);
  }
  {
    SCOPED_TRACE("bias broadcast along another axis ([5, 8])");
    LinearSpec s;
    s.bias_dims = {5, 8};
    auto g = load(linear_model(s, rng));
    ASSERT_TRUE(g);
    check_pass(*g, gemm_pass, 0, seed);
  }
  {
    SCOPED_TRACE("bias of rank above the output's ([1, 1, 1, 8])");
    LinearSpec s;
    s.bias_dims = {1, 1, 1, 8};
    auto g = load(linear_model(s, rng));
    ASSERT_TRUE(g);
    check_pass(*g, gemm_pass, 0, seed);
  }
  {
    SCOPED_TRACE("weight is not a constant");
    OnnxModelBuilder b;
    b.input("x", kF32, {4, 16});
    b.input("w", kF32, {16, 8});
    b.initializer("b", random_tensor(kF32, {8}, rng));
    b.node("MatMul", {"x", "w"}, {"h"});
    b.node("Add", {"h", "b"}, {"y"});
    b.output("y", kF32);
    auto g = load(b);
    ASSERT_TRUE(g);
    check_pass(*g, gemm_pass, 0, seed);
  }
  {
    SCOPED_TRACE("GELU-like pattern with a wrong constant keeps the bias fusion only");
    OnnxModelBuilder b;
    b.input("x", kF32, {4, 16});
    b.initializer("w", random_tensor(kF32, {16, 8}, rng));
    b.initializer("b", random_tensor(kF32, {8}, rng));
    b.initializer("sqrt2", scalar(1.5f));
    b.initializer("one", scalar(1.f));
    b.initializer("half", scalar(0.5f));
    b.node("MatMul", {"x", "w"}, {"mm"});
    b.node("Add", {"mm", "b"}, {"h"});
    b.node("Div", {"h", "sqrt2"}, {"g1"});
    b.node("Erf", {"g1"}, {"g2"});
    b.node("Add", {"g2", "one"}, {"g3"});
    b.node("Mul", {"h", "g3"}, {"g4"});
    b.node("Mul", {"g4", "half"}, {"y"});
    b.output("y", kF32);
    auto g = load(b);
    ASSERT_TRUE(g);
    check_pass(*g, gemm_pass, 1, seed);
    EXPECT_EQ(find_op(*g, "GraftGemm")->attrs.get_string("activation", "?").value(), "");
    EXPECT_EQ(count_op(*g, "Erf"), 1);
  }
}

TEST(FuseGemm, InferenceErrorsNameTheProblem) {
  testing::OneNode one("GraftGemm", {Tensor::empty(kF32, {3, 4}), Tensor::empty(kF32, {5, 6})});
  auto r = one.run();
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().to_string().find("inner dimensions"), std::string::npos) << r.status().to_string();
  testing::OneNode bad("GraftGemm", {Tensor::empty(kF32, {3, 4}), Tensor::empty(kF32, {4, 6})});
  bad.node->attrs.set("activation", std::string("Swish"));
  auto r2 = bad.run();
  ASSERT_FALSE(r2.is_ok());
  EXPECT_NE(r2.status().to_string().find("activation"), std::string::npos) << r2.status().to_string();
}

// ---- elementwise chains ----

TEST(FuseElementwise, LongChainWithImmediatesAndCasts) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  OnnxModelBuilder b;
  b.input("x", kF32, {2, 3, 7});
  b.input("z", kF32, {2, 3, 7});
  b.initializer("c3", scalar(3.f));
  b.initializer("c05", scalar(0.5f));
  b.initializer("two", Tensor::from_doubles(kF32, {1}, {2.0}));
  b.initializer("lo", scalar(-0.25f));
  b.initializer("hi", scalar(4.f));
  b.node("Add", {"x", "c3"}, {"a1"});             // x + 3
  b.node("Mul", {"c05", "a1"}, {"a2"});           // 0.5 * .
  b.node("Sigmoid", {"a2"}, {"a3"});
  b.node("Mul", {"a3", "z"}, {"a4"});             // second tensor input
  b.node("Sub", {"c3", "a4"}, {"a5"});            // immediate as first operand
  b.node("Abs", {"a5"}, {"a6"});
  b.node("Sqrt", {"a6"}, {"a7"});
  b.node("Pow", {"a7", "two"}, {"a8"});
  auto& hs = b.node("HardSigmoid", {"a8"}, {"a9"});
  OnnxModelBuilder::attr(hs, "alpha", 0.3f);
  b.node("Tanh", {"a9"}, {"a10"});
  b.node("Clip", {"a10", "lo", "hi"}, {"a11"});
  auto& c1 = b.node("Cast", {"a11"}, {"a12"});    // round to float16 and back: must be reproduced
  OnnxModelBuilder::attr(c1, "to", static_cast<int64_t>(DataType::kFloat16));
  auto& c2 = b.node("Cast", {"a12"}, {"a13"});
  OnnxModelBuilder::attr(c2, "to", static_cast<int64_t>(kF32));
  b.node("HardSwish", {"a13"}, {"a14"});
  b.node("Div", {"a14", "x"}, {"a15"});
  b.node("Erf", {"a15"}, {"a16"});
  b.node("Relu", {"a16"}, {"y"});
  b.output("y", kF32);
  auto g = load(b);
  ASSERT_TRUE(g);
  check_pass(*g, chain_pass, 1, seed);
  ASSERT_EQ(g->nodes().size(), 1u);
  const Node* n = find_op(*g, "GraftElementwise");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->inputs.size(), 2u);
}

// A Clip whose min is above its max makes every element the max (min(max(x, min), max)), fused or not.
TEST(FuseElementwise, ClipWithMinAboveMaxGivesTheMax) {
  const uint32_t seed = std::random_device{}();
  OnnxModelBuilder b;
  b.input("x", kF32, {3, 11});
  b.initializer("lo", scalar(0.75f));
  b.initializer("hi", scalar(-0.5f));
  b.node("Neg", {"x"}, {"a"});
  b.node("Clip", {"a", "lo", "hi"}, {"c"});
  b.node("Abs", {"c"}, {"y"});
  b.output("y", kF32);
  auto g = load(b);
  ASSERT_TRUE(g);
  std::mt19937 rng(seed);
  const std::map<std::string, Tensor> in{{"x", random_tensor(kF32, {3, 11}, rng)}};
  const Tensor unfused = run_graph(*g, in).at("y");
  for (int64_t i = 0; i < unfused.numel(); ++i) ASSERT_EQ(unfused.get(i), 0.5) << "index " << i;
  check_pass(*g, chain_pass, 1, seed);
  const Tensor fused = run_graph(*g, in).at("y");
  for (int64_t i = 0; i < fused.numel(); ++i) ASSERT_EQ(fused.get(i), 0.5) << "index " << i;
}

// Every op whose definition names its GraftElementwise instruction (OpEntry::elementwise_opcode,
// set with fuses_as where the op is registered) joins a chain, with the unfused graph's outputs.
TEST(FuseElementwise, EveryOpThatNamesItsInstructionJoinsAChain) {
  const uint32_t seed = std::random_device{}();
  int ops = 0;
  for (const OpEntry& def : builtin_ops()) {
    if (!def.elementwise_opcode) continue;
    ++ops;
    const int arity = ew_arity(*def.elementwise_opcode);
    ASSERT_TRUE(arity == 1 || arity == 2) << def.op_type << ": only one- and two-operand instructions are named";
    const std::string op = def.op_type;
    OnnxModelBuilder b;
    b.input("x", kF32, {2, 5});
    b.input("z", kF32, {2, 5});
    b.initializer("half", scalar(0.5f));
    b.initializer("two", scalar(2.f));
    b.node("Abs", {"x"}, {"a"});
    b.node("Add", {"a", "half"}, {"p"});  // positive, so Log, Sqrt, Reciprocal and Pow stay finite
    if (arity == 1) b.node(op, {"p"}, {"y"});
    else b.node(op, {"p", op == "Pow" ? "two" : "z"}, {"y"});  // Pow chains only with a constant exponent
    b.output("y", kF32);
    auto g = load(b);
    ASSERT_TRUE(g) << op;
    SCOPED_TRACE(op);
    check_pass(*g, chain_pass, 1, seed);
    EXPECT_EQ(g->nodes().size(), 1u) << op;
    EXPECT_EQ(count_op(*g, "GraftElementwise"), 1) << op;
  }
  EXPECT_GE(ops, 18) << "Relu, Sigmoid, Tanh, Erf, HardSwish, Exp, Log, Sqrt, Reciprocal, Neg, Abs and the 7 binary ops";
}

TEST(FuseElementwise, GeluChainAndMixedDtypeOutput) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  for (const char* approx : {"none", "tanh"}) {
    OnnxModelBuilder b(20);
    b.input("x", kF32, {3, 33});
    b.node("Neg", {"x"}, {"a"});
    auto& ge = b.node("Gelu", {"a"}, {"g"});
    OnnxModelBuilder::attr(ge, "approximate", approx);
    auto& c = b.node("Cast", {"g"}, {"y"});
    OnnxModelBuilder::attr(c, "to", static_cast<int64_t>(DataType::kFloat16));
    b.output("y", DataType::kFloat16);
    auto g = load(b);
    ASSERT_TRUE(g);
    // A float16 output: the fused chain rounds its float32 result once, the unfused Cast rounds the
    // Gelu node's output; the two may differ by one float16 ulp (2^-11 relative), as in ~1% of runs.
    check_pass(*g, chain_pass, 1, seed, 1e-3);
    ASSERT_EQ(g->nodes().size(), 1u);
    EXPECT_EQ(g->outputs()[0]->desc.dtype, DataType::kFloat16);
  }
}

TEST(FuseElementwise, ChainsStopAtSharedValuesBroadcastsAndUnsupportedNodes) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  OnnxModelBuilder b;
  b.input("x", kF32, {4, 6});
  b.initializer("row", random_tensor(kF32, {6}, rng));
  b.node("Relu", {"x"}, {"a"});
  b.node("Sigmoid", {"a"}, {"s"});     // chain 1: Relu -> Sigmoid; s has two consumers
  b.node("Tanh", {"s"}, {"t1"});
  b.node("Exp", {"s"}, {"t2"});
  b.node("Add", {"t1", "t2"}, {"u"});  // chain 2: Tanh, Exp, Add (s is its input)
  b.node("Add", {"u", "row"}, {"v"});  // broadcast operand: not a chain node
  b.node("Neg", {"v"}, {"w"});
  b.node("Abs", {"w"}, {"y"});         // chain 3: Neg -> Abs
  b.output("y", kF32);
  b.output("s", kF32);
  auto g = load(b);
  ASSERT_TRUE(g);
  check_pass(*g, chain_pass, 3, seed);
  EXPECT_EQ(count_op(*g, "GraftElementwise"), 3);
  EXPECT_EQ(count_op(*g, "Add"), 1);

  // A node the backend says it cannot run stays out of every chain.
  auto g2 = load(b);
  ASSERT_TRUE(g2);
  auto n = fuse_elementwise_chains(*g2, [](const Node& x) { return x.op_type != "Exp"; });
  ASSERT_TRUE(n.is_ok());
  EXPECT_EQ(n.value(), 3);  // Relu->Sigmoid, Tanh->Add (Exp's output is an input), Neg->Abs
  EXPECT_EQ(count_op(*g2, "Exp"), 1);
}

TEST(FuseElementwise, ProgramErrorsNameTheAttribute) {
  std::mt19937 rng(std::random_device{}());
  testing::OneNode one("GraftElementwise", {random_tensor(kF32, {3}, rng)});
  one.node->attrs.set("program", std::vector<int64_t>{99, 1, 0, 0, 0});
  one.node->attrs.set("output_register", int64_t{1});
  auto r = one.run();
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().to_string().find("program"), std::string::npos) << r.status().to_string();
  one.node->attrs.set("program", std::vector<int64_t>{static_cast<int64_t>(EwOp::kAdd), 1, 0, 5, 0});
  auto r2 = one.run();
  ASSERT_FALSE(r2.is_ok());
  EXPECT_NE(r2.status().to_string().find("not defined"), std::string::npos) << r2.status().to_string();
}

TEST(FuseAttention, ScalesWhereverTheExportersPutThem) {
  const uint32_t seed = std::random_device{}();
  for (std::string at : {"q", "qk", "scores", "none"}) {
    SCOPED_TRACE("scale at " + at);
    AttnSpec a;
    a.scale_at = at;
    auto g = load(attention_model(a));
    ASSERT_TRUE(g);
    check_pass(*g, gemm_pass, 1, seed);
    EXPECT_EQ(count_op(*g, "GraftAttention"), 1);
    EXPECT_EQ(count_op(*g, "Softmax") + count_op(*g, "MatMul") + count_op(*g, "Mul") + count_op(*g, "Div"), 0);
    EXPECT_EQ(count_op(*g, "Transpose"), 1);
    const float want = at == "none" ? 1.f : 1.f / 2.8284271f;
    EXPECT_NEAR(find_op(*g, "GraftAttention")->attrs.get_float("scale", 0).value(), want, 1e-6);
  }
  {
    SCOPED_TRACE("the Transpose's output is read elsewhere: K's scale stays in front of it");
    AttnSpec a;
    a.scale_at = "qk";
    a.transpose_shared = true;
    auto g = load(attention_model(a));
    ASSERT_TRUE(g);
    check_pass(*g, gemm_pass, 1, seed);
    EXPECT_EQ(count_op(*g, "Mul"), 1);
  }
  {
    SCOPED_TRACE("opset 11 Softmax on rank-2 scores: the default axis 1 is the last");
    OnnxModelBuilder b(11);
    b.input("q", kF32, {6, 8});
    b.input("kt", kF32, {8, 5});
    b.input("v", kF32, {5, 4});
    b.node("MatMul", {"q", "kt"}, {"s"});
    b.node("Softmax", {"s"}, {"p"});
    b.node("MatMul", {"p", "v"}, {"y"});
    b.output("y", kF32);
    auto g = load(b);
    ASSERT_TRUE(g);
    check_pass(*g, gemm_pass, 1, seed);
    EXPECT_EQ(g->nodes().size(), 1u);
  }
}

// Swin's window attention: a relative position bias [heads, S, S] added to the scores, then (in the
// shifted blocks) a mask [1, windows, 1, S, S] added through a [B, windows, heads, S, S] view of the
// [B * windows, heads, S, S] scores. Both fold into one [windows * heads, S, S] bias that batch
// entry b reads at b % (windows * heads); outputs unchanged. A second form: a bias [1, heads, S, S]
// as the Add's first operand with a scale after it (the bias is scaled too).
TEST(FuseAttention, SwinBiasAndShiftedWindowMaskBecomeOnePeriodicBias) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  const int64_t B = 2, W = 4, H = 3, S = 7, D = 8;
  auto ints = [](std::vector<int64_t> v) { return Tensor::vector_int64(v); };
  {
    SCOPED_TRACE("bias, then the mask through a view");
    OnnxModelBuilder b;
    for (const char* x : {"q", "k", "v"}) b.input(x, kF32, {B * W, H, S, D});
    b.initializer("rel", random_tensor(kF32, {H, S, S}, rng));
    Tensor mask = random_tensor(kF32, {1, W, 1, S, S}, rng);
    for (int64_t i = 0; i < mask.numel(); i += 3) mask.set(i, -100.0);  // masked pairs, as Swin's
    b.initializer("mask", mask);
    b.initializer("split", ints({B, W, H, S, S}));
    b.initializer("merge", ints({-1, H, S, S}));
    b.initializer("c", scalar(0.35f));
    OnnxModelBuilder::attr(b.node("Transpose", {"k"}, {"kt"}), "perm", std::vector<int64_t>{0, 1, 3, 2});
    b.node("Mul", {"q", "c"}, {"qs"});
    b.node("MatMul", {"qs", "kt"}, {"s"});
    b.node("Add", {"s", "rel"}, {"a1"});
    b.node("Reshape", {"a1", "split"}, {"r1"});
    b.node("Add", {"r1", "mask"}, {"a2"});
    b.node("Reshape", {"a2", "merge"}, {"r2"});
    OnnxModelBuilder::attr(b.node("Softmax", {"r2"}, {"p"}), "axis", int64_t{-1});
    b.node("MatMul", {"p", "v"}, {"y"});
    b.output("y", kF32);
    auto g = load(b);
    ASSERT_TRUE(g);
    check_pass(*g, gemm_pass, 1, seed);
    EXPECT_EQ(count_op(*g, "GraftAttention"), 1);
    EXPECT_EQ(count_op(*g, "Add") + count_op(*g, "Reshape") + count_op(*g, "Softmax") + count_op(*g, "Mul"), 0);
    const Node* at = find_op(*g, "GraftAttention");
    ASSERT_EQ(at->inputs.size(), 4u);
    ASSERT_TRUE(at->inputs[3] && at->inputs[3]->constant);
    EXPECT_EQ(at->inputs[3]->constant->dims(), (std::vector<int64_t>{W * H, S, S}));
  }
  {
    SCOPED_TRACE("bias first, a scale after it");
    OnnxModelBuilder b;
    b.input("q", kF32, {B, H, S, D});
    b.input("kt", kF32, {B, H, D, S});
    b.input("v", kF32, {B, H, S, D});
    b.initializer("rel", random_tensor(kF32, {1, H, S, S}, rng));
    b.initializer("two", scalar(2.f));
    b.node("MatMul", {"q", "kt"}, {"s"});
    b.node("Add", {"rel", "s"}, {"a"});
    b.node("Div", {"a", "two"}, {"d"});
    OnnxModelBuilder::attr(b.node("Softmax", {"d"}, {"p"}), "axis", int64_t{-1});
    b.node("MatMul", {"p", "v"}, {"y"});
    b.output("y", kF32);
    auto g = load(b);
    ASSERT_TRUE(g);
    check_pass(*g, gemm_pass, 1, seed);
    const Node* at = find_op(*g, "GraftAttention");
    ASSERT_TRUE(at);
    EXPECT_EQ(at->inputs[3]->constant->dims(), (std::vector<int64_t>{H, S, S}));
    EXPECT_NEAR(at->attrs.get_float("scale", 0).value(), 0.5f, 1e-7);
  }
  {
    SCOPED_TRACE("an Add of a tensor the model computes is not a constant bias: no fusion");
    OnnxModelBuilder b;
    for (const char* x : {"q", "kt", "v"}) b.input(x, kF32, {B, H, S, S});
    b.input("m", kF32, {B, H, S, S});
    b.node("MatMul", {"q", "kt"}, {"s"});
    b.node("Add", {"s", "m"}, {"a"});
    OnnxModelBuilder::attr(b.node("Softmax", {"a"}, {"p"}), "axis", int64_t{-1});
    b.node("MatMul", {"p", "v"}, {"y"});
    b.output("y", kF32);
    auto g = load(b);
    ASSERT_TRUE(g);
    check_pass(*g, gemm_pass, 0, seed);
  }
}

// Swin V2's cosine attention: the scores times a learned per-head scale [heads, 1, 1], plus the
// relative position bias, then Softmax and the value MatMul. (Q @ Kt) * c = (Q * c) @ Kt, so the
// scale becomes a Mul of Q and the rest one GraftAttention; a constant that varies along the
// scores' last axes stays where it is and blocks the fusion.
TEST(FuseAttention, PerHeadScaleOfTheScoresMovesOntoQ) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  const int64_t B = 3, H = 4, S = 6, D = 8;
  for (int c = 0; c < 3; ++c) {
    SCOPED_TRACE("case " + std::to_string(c));
    OnnxModelBuilder b;
    for (const char* x : {"q", "k", "v"}) b.input(x, kF32, {B, H, S, D});
    const std::vector<int64_t> scale_dims = c == 2 ? std::vector<int64_t>{1, S} : std::vector<int64_t>{H, 1, 1};
    b.initializer("logit_scale", random_tensor(kF32, scale_dims, rng, 1.0, 10.0));
    b.initializer("rel", random_tensor(kF32, {H, S, S}, rng));
    OnnxModelBuilder::attr(b.node("Transpose", {"k"}, {"kt"}), "perm", std::vector<int64_t>{0, 1, 3, 2});
    b.node("MatMul", {"q", "kt"}, {"s"});
    if (c == 1) b.node("Mul", {"logit_scale", "s"}, {"ss"});  // either operand order
    else b.node("Mul", {"s", "logit_scale"}, {"ss"});
    b.node("Add", {"ss", "rel"}, {"a"});
    OnnxModelBuilder::attr(b.node("Softmax", {"a"}, {"p"}), "axis", int64_t{-1});
    b.node("MatMul", {"p", "v"}, {"y"});
    b.output("y", kF32);
    auto g = load(b);
    ASSERT_TRUE(g);
    // Scaling Q before the product rounds differently from scaling the scores after it, and the
    // softmax of scores up to ten times larger amplifies that: float32 rounding, not a formula change.
    check_pass(*g, gemm_pass, c == 2 ? 0 : 1, seed, 5e-4, 1e-5);
    if (c == 2) {
      EXPECT_EQ(count_op(*g, "Softmax"), 1);
      continue;
    }
    EXPECT_EQ(count_op(*g, "Softmax") + count_op(*g, "Add"), 0);
    ASSERT_EQ(count_op(*g, "Mul"), 1);
    const Node* at = find_op(*g, "GraftAttention");
    ASSERT_TRUE(at);
    const Node* mul = find_op(*g, "Mul");
    EXPECT_EQ(at->inputs[0], mul->outputs[0]) << "the per-head scale multiplies Q";
    EXPECT_EQ(mul->inputs[1]->constant->dims(), (std::vector<int64_t>{H, 1, 1}));
    EXPECT_EQ(at->inputs[3]->constant->dims(), (std::vector<int64_t>{H, S, S})) << "the bias is not scaled";
  }
}

TEST(FuseAttention, PatternsThatMustNotFuse) {
  const uint32_t seed = std::random_device{}();
  for (int c = 0; c < 3; ++c) {
    SCOPED_TRACE("case " + std::to_string(c));
    AttnSpec a;
    if (c == 0) a.softmax_axis = 2;    // not the last axis
    if (c == 1) a.scores_output = true;
    if (c == 2) {                       // opset 11 default axis 1 on rank 4: not the last axis
      a.opset = 11;
      a.softmax_axis = -100;
    }
    auto g = load(attention_model(a));
    ASSERT_TRUE(g);
    check_pass(*g, gemm_pass, 0, seed);
    EXPECT_EQ(count_op(*g, "Softmax"), 1);
  }
}

// The CUDA builder's order on a transformer MLP block: GEMM epilogues, float16 (every node the
// policy accepts, so GraftGemm must infer and pass in float16), then chains across the Casts the
// float16 pass inserted. Compared with the float32 original at float16 tolerance.
TEST(FuseTransformer, BuilderOrderWithFloat16) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  OnnxModelBuilder b;
  b.input("x", kF32, {3, 7, 32});
  b.initializer("w1", random_tensor(kF32, {32, 64}, rng, -0.2, 0.2));
  b.initializer("b1", random_tensor(kF32, {64}, rng));
  b.initializer("w2", random_tensor(kF32, {64, 32}, rng, -0.2, 0.2));
  b.initializer("b2", random_tensor(kF32, {32}, rng));
  b.initializer("sqrt2", scalar(1.4142135623730951f));
  b.initializer("one", scalar(1.f));
  b.initializer("half", scalar(0.5f));
  b.initializer("three", scalar(3.f));
  b.node("MatMul", {"x", "w1"}, {"m1"});
  b.node("Add", {"b1", "m1"}, {"h"});
  b.node("Div", {"h", "sqrt2"}, {"g1"});
  b.node("Erf", {"g1"}, {"g2"});
  b.node("Add", {"g2", "one"}, {"g3"});
  b.node("Mul", {"h", "g3"}, {"g4"});
  b.node("Mul", {"g4", "half"}, {"g"});
  b.node("MatMul", {"g", "w2"}, {"m2"});
  b.node("Add", {"m2", "b2"}, {"a2"});
  b.node("Add", {"x", "a2"}, {"r"});        // residual
  b.node("Pow", {"r", "three"}, {"p"});     // kept float32 by the precision pass: Casts around it
  b.node("Tanh", {"p"}, {"t"});
  b.node("Mul", {"t", "half"}, {"y"});
  b.output("y", kF32);
  auto g = load(b);
  ASSERT_TRUE(g);
  auto feeds = feeds_for(*g, rng, -1, 1);
  auto before = run_graph(*g, feeds);
  auto gemms = fuse_gemm_epilogues(*g);
  ASSERT_TRUE(gemms.is_ok());
  EXPECT_EQ(gemms.value(), 2);
  ASSERT_TRUE(infer_shapes(*g).is_ok());
  PrecisionPolicy policy;
  policy.supports_fp16 = [](const Node&) { return true; };
  auto half = convert_to_fp16(*g, policy);
  ASSERT_TRUE(half.is_ok()) << half.status().to_string();
  for (const auto& n : g->nodes())
    if (n->op_type == "GraftGemm") EXPECT_EQ(n->outputs[0]->desc.dtype, DataType::kFloat16) << n->name;
  auto chains = chain_pass(*g);
  ASSERT_TRUE(chains.is_ok());
  EXPECT_EQ(chains.value(), 1);  // Cast -> Pow -> Cast -> Tanh -> Mul -> Cast
  ASSERT_TRUE(infer_shapes(*g).is_ok());
  EXPECT_EQ(count_op(*g, "GraftGemm"), 2);
  EXPECT_EQ(count_op(*g, "Cast"), 1);  // the input's
  auto after = run_graph(*g, feeds);
  expect_close(after.at("y"), before.at("y"), 2e-2, 2e-2);
}

// The fused graph survives the plan format (ONNX export + import) and still computes the same.
TEST(FuseTransformer, FusedGraphRoundTripsThroughOnnx) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  // GraftGemm with GELU; with bias and residual; with an omitted bias before the residual;
  // GraftAttention; GraftElementwise.
  for (int c = 0; c < 5; ++c) {
    SCOPED_TRACE("case " + std::to_string(c));
    OnnxModelBuilder b;
    if (c < 2) {
      LinearSpec s;
      s.act = c == 0 ? "GeluTorch" : "";
      s.residual = c;
      b = linear_model(s, rng);
    } else if (c == 2) {
      b.input("x", kF32, {4, 16});
      b.initializer("w", random_tensor(kF32, {16, 8}, rng));
      b.input("r", kF32, {4, 8});
      b.node("MatMul", {"x", "w"}, {"h"});
      b.node("Add", {"h", "r"}, {"y"});
      b.output("y", kF32);
    } else if (c == 3) {
      AttnSpec a;
      a.scale_at = "qk";
      b = attention_model(a);
    } else {
      b.input("x", kF32, {4, 16});
      b.initializer("half", scalar(0.5f));
      b.node("Mul", {"x", "half"}, {"a"});
      b.node("Tanh", {"a"}, {"y"});
      b.output("y", kF32);
    }
    auto g = load(b);
    ASSERT_TRUE(g);
    auto feeds = feeds_for(*g, rng);
    auto before = run_graph(*g, feeds);
    auto n = c < 4 ? fuse_gemm_epilogues(*g) : chain_pass(*g);
    ASSERT_TRUE(n.is_ok());
    EXPECT_EQ(n.value(), 1);
    ASSERT_TRUE(infer_shapes(*g).is_ok());
    onnx::ModelProto m;
    ASSERT_TRUE(export_onnx_model(*g, &m).is_ok());
    auto g2 = import_onnx_model(m, "roundtrip.onnx", "");
    ASSERT_TRUE(g2.is_ok()) << g2.status().to_string();
    ASSERT_TRUE(infer_shapes(*g2.value()).is_ok());
    const char* op = c < 3 ? "GraftGemm" : c == 3 ? "GraftAttention" : "GraftElementwise";
    EXPECT_EQ(count_op(*g2.value(), op), 1);
    auto after = run_graph(*g2.value(), feeds);
    for (auto& [name, t] : before) expect_close(after.at(name), t);
  }
}

}  // namespace
}  // namespace graft
