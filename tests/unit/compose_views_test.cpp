// compose_view_chains (src/graph/compose_views.cpp), GraftStridedCopy and GraftViewChain
// (src/ops/views/views.cpp): chains of Transpose / single-index Gather / Reshape-like nodes become one
// strided copy (static shapes) or one view chain (a dynamic batch) with the same outputs (checked on
// the CPU reference, fresh random inputs, several batches); static chains no strides can express
// are left alone, dynamic ones are planned as several copies; bad attributes are refused naming
// node and attribute.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "graft/engine.h"
#include "ops/views/views.h"
#include "tests/unit/graph_pass_test_util.h"
#include "tests/unit/head_split_model.h"

namespace graft {
namespace {

using testing::OnnxModelBuilder;
using namespace testing;  // NOLINT(build/namespaces): the graph-pass test helpers

constexpr DataType kF32 = DataType::kFloat32;

void ints_const(OnnxModelBuilder& m, const std::string& name, std::vector<int64_t> v) {
  m.initializer(name, Tensor::vector_int64(v));
}

Result<int> view_pass(Graph& g) { return compose_view_chains(g); }

// The head split (head_split_model.h) over static shapes.
void add_packed_head_split(OnnxModelBuilder& m, DataType dt, int64_t S, int64_t B, int64_t H, int64_t hd) {
  const int64_t E = H * hd;
  m.input("x", dt, {S, B, 3 * E});
  ints_const(m, "s4", {S, B, 3, E});
  ints_const(m, "sbh", {S, B * H, hd});
  ints_const(m, "bhsd", {B, H, S, hd});
  add_head_split_nodes(m);
}

// The dynamo export of nn.MultiheadAttention's packed projection split into heads, in small:
// [B, S, 3E] -> q, k, v each [B, H, S, hd] (k also transposed), read by non-view nodes; v's chain
// ends in a graph output.
TEST(ComposeViews, MultiHeadSplitBecomesThreeStridedCopies) {
  OnnxModelBuilder m;
  m.input("x", kF32, {2, 5, 12});  // B=2, S=5, E=4, H=2, hd=2
  ints_const(m, "s4", {2, 5, 3, 4});
  ints_const(m, "ax0", {0});
  ints_const(m, "ax3", {3});
  ints_const(m, "heads", {2, 5, 2, 2});
  m.node("Reshape", {"x", "s4"}, {"r"});
  m.node("Unsqueeze", {"r", "ax0"}, {"u"});
  OnnxModelBuilder::attr(m.node("Transpose", {"u"}, {"t"}), "perm", std::vector<int64_t>{3, 1, 2, 0, 4});
  m.node("Squeeze", {"t", "ax3"}, {"sq"});
  const char* names[] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    const std::string n = names[i];
    m.initializer("i" + n, Tensor::scalar_int64(i));
    OnnxModelBuilder::attr(m.node("Gather", {"sq", "i" + n}, {n + "0"}), "axis", int64_t{0});
    m.node("Reshape", {n + "0", "heads"}, {n + "1"});
    OnnxModelBuilder::attr(m.node("Transpose", {n + "1"}, {n + "2"}), "perm", std::vector<int64_t>{0, 2, 1, 3});
  }
  OnnxModelBuilder::attr(m.node("Transpose", {"k2"}, {"k3"}), "perm", std::vector<int64_t>{0, 1, 3, 2});
  m.node("Relu", {"q2"}, {"yq"});
  m.node("Sigmoid", {"k3"}, {"yk"});
  m.output("yq", kF32).output("yk", kF32).output("v2", kF32);
  auto g = load(m);
  ASSERT_TRUE(g);
  check_pass(*g, view_pass, 3, std::random_device{}(), 0.0);
  EXPECT_EQ(count_op(*g, "GraftStridedCopy"), 3);
  EXPECT_EQ(count_op(*g, "Transpose"), 0);
  EXPECT_EQ(count_op(*g, "Gather"), 0);
  EXPECT_EQ(count_op(*g, "Squeeze"), 0);
}

// nn.MultiheadAttention as torch.onnx's dynamo export writes it for batch > 1: the packed
// projection is [S, B, 3E]; q.view(S, B*H, hd) merges B and H, which are not adjacent in memory (no
// single stride), and only the later transpose + view(B, H, S, hd) makes it a strided view again.
TEST(ComposeViews, HeadSplitThroughAMergedAxisOfTwoStrides) {
  OnnxModelBuilder m;
  add_packed_head_split(m, kF32, /*S=*/5, /*B=*/3, /*H=*/2, /*hd=*/2);
  for (const char* n : {"q", "k", "v"}) {
    m.node("Relu", {std::string(n) + "3"}, {std::string("y") + n});
    m.output(std::string("y") + n, kF32);
  }
  auto g = load(m);
  ASSERT_TRUE(g);
  check_pass(*g, view_pass, 3, std::random_device{}(), 0.0);
  EXPECT_EQ(count_op(*g, "Transpose"), 0);
  EXPECT_EQ(count_op(*g, "Gather"), 0);
}

// Merging axes a Transpose interleaved cannot be a view: the chain stays (and stays correct).
TEST(ComposeViews, ReshapeAcrossTransposedAxesIsLeftAlone) {
  OnnxModelBuilder m;
  m.input("x", kF32, {4, 6, 2});
  ints_const(m, "flat", {24, 2});
  m.initializer("one", Tensor::scalar_int64(1));
  OnnxModelBuilder::attr(m.node("Transpose", {"x"}, {"t"}), "perm", std::vector<int64_t>{1, 0, 2});
  m.node("Reshape", {"t", "flat"}, {"r"});
  OnnxModelBuilder::attr(m.node("Gather", {"r", "one"}, {"gth"}), "axis", int64_t{1});
  m.node("Relu", {"gth"}, {"y"});
  m.output("y", kF32);
  auto g = load(m);
  ASSERT_TRUE(g);
  check_pass(*g, view_pass, 0, std::random_device{}(), 0.0);
  EXPECT_EQ(count_op(*g, "Transpose"), 1);
}

// A rank-1 index keeps its axis as 1; negative indices count from the end; a single copy (one
// Transpose) is not rewritten, two are.
TEST(ComposeViews, GatherKeepsAxisAndNegativeIndex) {
  OnnxModelBuilder m;
  m.input("x", kF32, {3, 4, 5});
  m.initializer("last", Tensor::vector_int64({-1}));
  OnnxModelBuilder::attr(m.node("Transpose", {"x"}, {"t"}), "perm", std::vector<int64_t>{2, 0, 1});
  OnnxModelBuilder::attr(m.node("Gather", {"t", "last"}, {"gth"}), "axis", int64_t{2});
  m.node("Relu", {"gth"}, {"y"});
  OnnxModelBuilder::attr(m.node("Transpose", {"x"}, {"single"}), "perm", std::vector<int64_t>{1, 0, 2});
  m.node("Neg", {"single"}, {"z"});
  m.output("y", kF32).output("z", kF32);
  auto g = load(m);
  ASSERT_TRUE(g);
  check_pass(*g, view_pass, 1, std::random_device{}(), 0.0);
  EXPECT_EQ(count_op(*g, "Transpose"), 1);  // the single one
}

// The head split over a dynamic batch (head_split_model.h). The attention's scale reads Shape(k3)
// (onnxscript's SDPA does), a value inside k's chain: the chain still composes past it, and the
// nodes that make k3 stay for the Shape.
OnnxModelBuilder dynamic_head_split(int64_t S, int64_t H, int64_t hd) {
  OnnxModelBuilder m;
  add_dynamic_head_split(m, kF32, S, H, hd);
  m.node("Shape", {"k3"}, {"k_shape"});  // read inside k's chain, which goes on:
  OnnxModelBuilder::attr(m.node("Transpose", {"k3"}, {"kt"}), "perm", std::vector<int64_t>{0, 1, 3, 2});
  m.node("Relu", {"q3"}, {"yq"});
  m.node("Sigmoid", {"kt"}, {"yk"});
  m.node("Neg", {"v3"}, {"yv"});
  m.output("yq", kF32).output("yk", kF32).output("yv", kF32).output("k_shape", DataType::kInt64);
  return m;
}

// Runs `g` and `ref` on the same fresh random inputs (each `x` of dtype `dt`) at each batch; the outputs must
// agree within rtol/atol (0: equal).
struct BatchFeed {
  std::string x = "x";
  DataType dt = kF32;
  std::vector<int64_t> dims_b0;  // the input's dims, the batch axis' entry ignored
  int batch_axis = 0;
};
void expect_same_outputs(const Graph& g, const Graph& ref, const std::vector<BatchFeed>& ins,
                         std::initializer_list<int64_t> batches, uint32_t seed, double rtol = 0.0, double atol = 0.0) {
  std::mt19937 rng(seed);
  for (int64_t b : batches) {
    SCOPED_TRACE("batch " + std::to_string(b) + ", seed " + std::to_string(seed));
    std::map<std::string, Tensor> feeds;
    for (const BatchFeed& in : ins) {
      std::vector<int64_t> dims = in.dims_b0;
      dims[static_cast<size_t>(in.batch_axis)] = b;
      feeds.emplace(in.x, random_tensor(in.dt, dims, rng));
    }
    auto want = run_graph(ref, feeds), got = run_graph(g, feeds);
    ASSERT_EQ(want.size(), got.size());
    for (auto& [name, t] : want) expect_close(got.at(name), t, rtol, atol);
  }
}

void expect_same_outputs(const Graph& g, const Graph& ref, const BatchFeed& in, std::initializer_list<int64_t> batches,
                         uint32_t seed, double rtol = 0.0, double atol = 0.0) {
  expect_same_outputs(g, ref, std::vector<BatchFeed>{in}, batches, seed, rtol, atol);
}

TEST(ComposeViews, DynamicBatchHeadSplitBecomesViewChains) {
  const auto m = dynamic_head_split(/*S=*/5, /*H=*/2, /*hd=*/3);
  auto g = load(m), ref = load(m);
  ASSERT_TRUE(g && ref);
  auto n = compose_view_chains(*g);
  ASSERT_TRUE(n.is_ok()) << n.status().to_string();
  EXPECT_EQ(n.value(), 3);
  ASSERT_TRUE(infer_shapes(*g).is_ok());
  EXPECT_EQ(count_op(*g, "GraftViewChain"), 3);
  EXPECT_EQ(count_op(*g, "GraftStridedCopy"), 0);
  // k's nodes up to k3 remain for Shape(k3) (a CUDA engine infers their dims only); q's and v's go.
  EXPECT_EQ(count_op(*g, "Gather"), 2);     // Shape(x)[1] and k's select
  EXPECT_EQ(count_op(*g, "Transpose"), 2);  // the shared one and k's
  // The output keeps its symbolic shape.
  const Value* yk = g->outputs()[1];
  ASSERT_TRUE(yk->desc.shape);
  EXPECT_EQ(shape_to_string(*yk->desc.shape), shape_to_string(*ref->outputs()[1]->desc.shape));
  expect_same_outputs(*g, *ref, {"x", kF32, {5, 0, 18}, 1}, {1, 2, 3, 7}, std::random_device{}());
}

// A Reshape that merges axes a Transpose interleaved cannot be a strided view; over a dynamic
// batch the chain is still composed, and each run plans it as two copies (the transposed tensor
// materialized first). Its outputs equal the unfused graph's.
TEST(ComposeViews, DynamicChainsNoStridesExpressRunAsSeveralCopies) {
  OnnxModelBuilder m;
  m.input("x", kF32, {"B", 6, 2});
  ints_const(m, "flat", {-1, 2});
  m.initializer("one", Tensor::scalar_int64(1));
  OnnxModelBuilder::attr(m.node("Transpose", {"x"}, {"t"}), "perm", std::vector<int64_t>{1, 0, 2});
  m.node("Reshape", {"t", "flat"}, {"r"});
  OnnxModelBuilder::attr(m.node("Gather", {"r", "one"}, {"gth"}), "axis", int64_t{1});
  m.node("Relu", {"gth"}, {"y"});
  m.output("y", kF32);
  auto g = load(m), ref = load(m);
  ASSERT_TRUE(g && ref);
  auto n = compose_view_chains(*g);
  ASSERT_TRUE(n.is_ok()) << n.status().to_string();
  EXPECT_EQ(n.value(), 1);
  const Node* chain = find_op(*g, "GraftViewChain");
  ASSERT_NE(chain, nullptr);
  auto steps = read_view_steps(chain->attrs);
  ASSERT_TRUE(steps.is_ok()) << steps.status().to_string();
  auto plan = plan_view_steps({4, 6, 2}, steps.value());
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  EXPECT_EQ(plan.value().size(), 2u);
  expect_same_outputs(*g, *ref, {"x", kF32, {0, 6, 2}, 0}, {1, 3, 4}, std::random_device{}());
}

// The planner on its own: one copy for a composable chain (whatever the batch), and the view it
// gives; a reshape that does not fit the dims is an error naming the step.
TEST(ViewSteps, PlanComposesAndNamesTheStepThatDoesNotFit) {
  const std::vector<ViewStep> steps = {
      {ViewStepKind::kReshape, {0, 0, 3, 4}},        // [S, B, 12] -> [S, B, 3, 4]
      {ViewStepKind::kPermute, {2, 1, 0, 3}},        // [3, B, S, 4]
      {ViewStepKind::kSelect, {0, -1, 0}},           // v: [B, S, 4]
  };
  for (int64_t b : {1, 2, 5}) {
    auto plan = plan_view_steps({7, b, 12}, steps);
    ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
    ASSERT_EQ(plan.value().size(), 1u);
    const StridedView& v = plan.value()[0];
    EXPECT_EQ(v.shape, (std::vector<int64_t>{b, 7, 4}));
    EXPECT_EQ(v.offset, 8);  // the third of three E-wide parts
    EXPECT_EQ(v.strides[1], b * 12);
    EXPECT_EQ(v.strides[2], 1);
    if (b > 1) EXPECT_EQ(v.strides[0], 12);
  }
  auto bad = plan_view_steps({7, 2, 10}, steps);  // 10 does not split into 3 x 4
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().to_string().find("view step 0 (reshape)"), std::string::npos) << bad.status().to_string();
  auto shape = view_steps_shape({Dim(7), Dim::symbol("B"), Dim(12)}, steps);
  ASSERT_TRUE(shape.is_ok()) << shape.status().to_string();
  EXPECT_EQ(shape_to_string(shape.value()), "[B,7,4]");
}

// A plan's graph with one view node `op` ("view_node") over x [2, 3], its attributes set by
// `set_attrs`: loading it must fail naming `attribute` and the node.
template <typename SetAttrs>
void expect_view_node_refused(const std::string& op, const char* attribute, SetAttrs set_attrs) {
  OnnxModelBuilder m;
  m.input("x", kF32, {2, 3});
  set_attrs(m.node(op, {"x"}, {"y"}, "view_node"));
  m.output("y", kF32);
  expect_refused(m, attribute, "view_node");
}

TEST(ComposeViews, BadViewChainAttributesAreNamed) {
  struct Case {
    std::vector<int64_t> kinds, args, counts;
    const char* attribute;
  };
  const Case cases[] = {
      {{}, {}, {}, "view_kinds"},                       // no step
      {{3}, {0}, {1}, "view_kinds"},                    // unknown kind
      {{0}, {0, 0}, {2}, "view_args"},                  // not a permutation
      {{0}, {1, 0}, {3}, "view_arg_counts"},            // more args than given
      {{0, 2}, {1, 0}, {2}, "view_arg_counts"},         // one count for two steps
      {{1}, {0, 5, 0}, {3}, "view_args"},               // index past the axis (dims 2 x 3)
      {{1}, {0, 0, 2}, {3}, "view_args"},               // keep must be 0 or 1
      {{2}, {-1, -1}, {2}, "view_args"},                // two dims to infer
      {{2}, {4, 2}, {2}, "view_args"},                  // 6 elements cannot become 8
      {{0}, {1, 0, 7}, {2}, "view_args"},               // an arg past the last step
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.attribute);
    expect_view_node_refused("GraftViewChain", c.attribute, [&](auto& n) {
      OnnxModelBuilder::attr(n, "view_kinds", c.kinds);
      OnnxModelBuilder::attr(n, "view_args", c.args);
      OnnxModelBuilder::attr(n, "view_arg_counts", c.counts);
    });
  }
}

TEST(ComposeViews, BadStridedCopyAttributesAreNamed) {
  struct Case {
    std::vector<int64_t> shape, strides;
    int64_t offset;
    const char* attribute;
  };
  const Case cases[] = {
      {{2, 3}, {3, 1}, 1, "strides"},   // reads element 6 of 6
      {{2, 3}, {3, -1}, 0, "strides"},  // negative stride
      {{2, 3}, {3}, 0, "strides"},      // one stride per axis
      {{2, 3}, {3, 1}, -1, "offset"},
      {{2, 3}, {3, 1}, 6, "offset"},  // the offset alone is past the 6 elements
      {{3, 3}, {int64_t{1} << 62, 1}, 0, "strides"},  // the extent overflows int64 (a damaged plan)
  };
  for (const Case& c : cases) {
    expect_view_node_refused("GraftStridedCopy", c.attribute, [&](auto& n) {
      OnnxModelBuilder::attr(n, "shape", c.shape);
      OnnxModelBuilder::attr(n, "strides", c.strides);
      OnnxModelBuilder::attr(n, "offset", c.offset);
    });
  }
}

// fold_views_into_attention: the head split of a packed float16 projection and the attention's
// output permute disappear into GraftAttention's view attributes (the fused kernel reads and
// writes in place); the CPU reference of the viewed node gives the unfused graph's outputs. With
// a bias on the scores ([H, S, S], periodic over the batch) too, which stays the fourth input.
void check_packed_heads_fold(bool with_bias) {
  SCOPED_TRACE(with_bias ? "with a bias" : "no bias");
  constexpr DataType kF16 = DataType::kFloat16;
  std::mt19937 rng(std::random_device{}());
  OnnxModelBuilder m(17);
  add_packed_head_split(m, kF16, /*S=*/5, /*B=*/3, /*H=*/2, /*hd=*/8);
  if (with_bias) m.initializer("rel_bias", random_tensor(kF16, {2, 5, 5}, rng));
  add_attention_over_heads(m, kF16, "y", with_bias ? "rel_bias" : "");
  auto g = load(m);
  ASSERT_TRUE(g);
  auto passes = [](Graph& gr) -> Result<int> {
    GRAFT_ASSIGN_OR_RETURN(int fused, fuse_gemm_epilogues(gr));
    if (fused != 1) return error(StatusCode::kInternal, "expected one attention, fused ", fused);
    GRAFT_RETURN_IF_ERROR(infer_shapes(gr));
    GRAFT_ASSIGN_OR_RETURN(int chains, compose_view_chains(gr));
    if (chains != 3) return error(StatusCode::kInternal, "expected three composed chains, got ", chains);
    return fold_views_into_attention(gr);
  };
  // The unfused float16 graph rounds scores and probabilities to float16; the fused reference does
  // not: differences of a few float16 ulps of the O(1) outputs.
  check_pass(*g, passes, 1, std::random_device{}(), 2e-2, 1e-2);
  EXPECT_EQ(count_op(*g, "GraftStridedCopy"), 0);
  EXPECT_EQ(count_op(*g, "Transpose"), 0);
  const Node* at = find_op(*g, "GraftAttention");
  ASSERT_NE(at, nullptr);
  EXPECT_EQ(at->inputs[0], at->inputs[1]);  // Q and K read from the same packed tensor
  EXPECT_EQ(at->inputs.size(), with_bias ? 4u : 3u);
}

TEST(FoldAttentionViews, PackedHeadsReadAndWrittenInPlace) {
  check_packed_heads_fold(false);
  check_packed_heads_fold(true);
}

// The CUDA target's transformer passes in their order over `g`, each expected to change `n` nodes:
// fuse_gemm_epilogues, move_transposes_behind_gemms (skipped when `moved` < 0), compose_view_chains,
// fold_views_into_attention.
void run_attention_passes(Graph& g, int gemms, int moved, int chains, int folded) {
  auto fused = fuse_gemm_epilogues(g);
  ASSERT_TRUE(fused.is_ok()) << fused.status().to_string();
  EXPECT_EQ(fused.value(), gemms);
  ASSERT_TRUE(infer_shapes(g).is_ok());
  if (moved >= 0) {
    auto m = move_transposes_behind_gemms(g);
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    EXPECT_EQ(m.value(), moved);
  }
  auto c = compose_view_chains(g);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c.value(), chains);
  auto f = fold_views_into_attention(g);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f.value(), folded);
  ASSERT_TRUE(infer_shapes(g).is_ok());
}

// The head split over "x" [S, B, 3E] with constant Reshape targets: [S, 0, 3, E], [S, -1, hd] and
// [-1, H, S, hd].
void add_constant_head_split(OnnxModelBuilder& m, int64_t S, int64_t H, int64_t hd) {
  ints_const(m, "s4", {S, 0, 3, H * hd});
  ints_const(m, "sbh", {S, -1, hd});
  ints_const(m, "bhsd", {-1, H, S, hd});
  add_head_split_nodes(m);
}

// Over a dynamic batch the head split's view chains and the output permute fold into GraftAttention's
// chain form: the three GraftViewChain nodes and the Transpose go, and the viewed node's CPU
// reference gives the unfused graph's outputs at every batch.
void check_dynamic_chains_fold(bool with_bias) {
  SCOPED_TRACE(with_bias ? "with a bias" : "no bias");
  constexpr DataType kF16 = DataType::kFloat16;
  const int64_t S = 5, H = 2, hd = 8, E = H * hd;
  std::mt19937 rng(std::random_device{}());
  OnnxModelBuilder m(17);
  m.input("x", kF16, {S, "B", 3 * E});
  add_constant_head_split(m, S, H, hd);
  if (with_bias) m.initializer("rel_bias", random_tensor(kF16, {H, S, S}, rng));
  add_attention_over_heads(m, kF16, "y", with_bias ? "rel_bias" : "");
  auto g = load(m), ref = load(m);
  ASSERT_TRUE(g && ref);
  ASSERT_NO_FATAL_FAILURE(run_attention_passes(*g, /*gemms=*/1, /*moved=*/-1, /*chains=*/3, /*folded=*/1));
  EXPECT_EQ(count_op(*g, "GraftViewChain"), 0);
  EXPECT_EQ(count_op(*g, "Transpose"), 0);
  const Node* at = find_op(*g, "GraftAttention");
  ASSERT_NE(at, nullptr);
  EXPECT_EQ(at->inputs[0], at->inputs[1]);  // Q and K read from the same packed tensor
  EXPECT_TRUE(at->attrs.has("y_perm"));
  EXPECT_EQ(shape_to_string(*g->outputs()[0]->desc.shape), shape_to_string(*ref->outputs()[0]->desc.shape));
  // The unfused float16 graph rounds scores and probabilities to float16; the fused reference
  // does not: differences of a few float16 ulps of the O(1) outputs.
  EXPECT_EQ(at->inputs.size(), with_bias ? 4u : 3u);
  expect_same_outputs(*g, *ref, {"x", kF16, {S, 0, 3 * E}, 1}, {1, 2, 3}, std::random_device{}(), 2e-2, 1e-2);
}

TEST(FoldAttentionViews, DynamicBatchChainsFoldIntoTheAttention) {
  check_dynamic_chains_fold(false);
  check_dynamic_chains_fold(true);
}

// nn.MultiheadAttention with batch_first (dynamo export): [B, S, E] -> Transpose -> [S, B, E] -> the
// packed q/k/v projection -> the head split. The Transpose moves behind the projection's GEMM
// (move_transposes_behind_gemms) into the head split's chains, which fold into the attention: no
// Transpose is left, and the outputs equal the unfused graph's at every batch.
TEST(FoldAttentionViews, BatchFirstTransposeMovesBehindTheProjection) {
  constexpr DataType kF16 = DataType::kFloat16;
  const int64_t S = 5, H = 2, hd = 8, E = H * hd;
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  OnnxModelBuilder m(17);
  m.input("xb", kF16, {"B", S, E});
  OnnxModelBuilder::attr(m.node("Transpose", {"xb"}, {"xt"}), "perm", std::vector<int64_t>{1, 0, 2});
  m.initializer("w_in", random_tensor(kF16, {E, 3 * E}, rng, -0.3, 0.3));
  m.initializer("b_in", random_tensor(kF16, {3 * E}, rng));
  m.node("MatMul", {"xt", "w_in"}, {"proj"});
  m.node("Add", {"proj", "b_in"}, {"x"});
  add_constant_head_split(m, S, H, hd);
  add_attention_over_heads(m, kF16, "y");
  auto g = load(m), ref = load(m);
  ASSERT_TRUE(g && ref);
  // Two GEMMs fused: the projection and the attention.
  ASSERT_NO_FATAL_FAILURE(run_attention_passes(*g, /*gemms=*/2, /*moved=*/1, /*chains=*/3, /*folded=*/1));
  EXPECT_EQ(count_op(*g, "Transpose"), 0);
  EXPECT_EQ(count_op(*g, "GraftViewChain"), 0);
  const Node* gemm = find_op(*g, "GraftGemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->inputs[0]->name, "xb");  // the GEMM reads the batch-first input as it is
  expect_same_outputs(*g, *ref, {"xb", kF16, {0, S, E}, 0}, {1, 2, 3}, seed, 2e-2, 1e-2);
}

// The graph's one GraftGemm takes `residual` as its C matrix (input 3: X, W, bias, residual).
void expect_gemm_reads_residual(const Graph& g, const std::string& residual) {
  const Node* gemm = find_op(g, "GraftGemm");
  ASSERT_NE(gemm, nullptr);
  ASSERT_EQ(gemm->inputs.size(), 4u);
  EXPECT_EQ(gemm->inputs[3]->name, residual);
}

// The same attention's end (dynamo export): [S, B, H, hd] -> Reshape [S*B, E] -> out_proj (Gemm) ->
// Reshape [S, B, E] -> Transpose -> [B, S, E] -> the residual Add. The Transpose moves ahead of the
// GEMM (move_transposes_ahead_of_gemms) and merges with the attention's output permute, and the Add
// becomes the GEMM's C matrix: no Transpose, Add or view chain is left, and the outputs equal the
// unfused graph's at every batch.
TEST(FoldAttentionViews, OutProjectionTransposeMovesAheadOfTheGemm) {
  constexpr DataType kF16 = DataType::kFloat16;
  const int64_t S = 5, H = 2, hd = 8, E = H * hd;
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  OnnxModelBuilder m(17);
  m.input("x", kF16, {S, "B", 3 * E});
  m.input("xb", kF16, {"B", S, E});
  add_constant_head_split(m, S, H, hd);
  add_attention_heads(m, kF16);
  ints_const(m, "rows", {-1, E});
  ints_const(m, "sbe", {S, -1, E});
  m.initializer("w_out", random_tensor(kF16, {E, E}, rng, -0.3, 0.3));
  m.initializer("b_out", random_tensor(kF16, {E}, rng));
  m.node("Reshape", {"att_sbhd", "rows"}, {"o_rows"});
  OnnxModelBuilder::attr(m.node("Gemm", {"o_rows", "w_out", "b_out"}, {"o_proj"}), "transB", int64_t{1});
  m.node("Reshape", {"o_proj", "sbe"}, {"o_sbe"});
  OnnxModelBuilder::attr(m.node("Transpose", {"o_sbe"}, {"o_bse"}), "perm", std::vector<int64_t>{1, 0, 2});
  m.node("Add", {"xb", "o_bse"}, {"y"});
  m.output("y", kF16);
  auto g = load(m), ref = load(m);
  ASSERT_TRUE(g && ref);
  auto ahead = move_transposes_ahead_of_gemms(*g);
  ASSERT_TRUE(ahead.is_ok()) << ahead.status().to_string();
  EXPECT_EQ(ahead.value(), 1);
  // Two GEMMs fused (out_proj with its residual, and the attention); the head split's three chains
  // fold into the attention, and the moved Transpose, composed with the attention's output permute, is
  // one Transpose that the attention writes through.
  ASSERT_NO_FATAL_FAILURE(run_attention_passes(*g, /*gemms=*/2, /*moved=*/0, /*chains=*/3, /*folded=*/1));
  EXPECT_EQ(count_op(*g, "Transpose"), 0);
  EXPECT_EQ(count_op(*g, "Add"), 0);
  EXPECT_EQ(count_op(*g, "GraftViewChain"), 0);
  ASSERT_NO_FATAL_FAILURE(expect_gemm_reads_residual(*g, "xb"));
  expect_same_outputs(*g, *ref, std::vector<BatchFeed>{{"x", kF16, {S, 0, 3 * E}, 1}, {"xb", kF16, {0, S, E}, 0}},
                      {1, 2, 3}, seed, 2e-2, 1e-2);
}

// A GEMM whose input is no fold of the rows' axes (a plain [M, K] input): the Transpose reads that
// input split into the rows' axes. Moved where K > N too, since it unlocks the residual Add, which
// the GEMM's epilogue then takes; the outputs equal the unmoved graph's.
TEST(MoveTransposesAheadOfGemms, SplitsAPlainInputAndUnlocksTheResidual) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  OnnxModelBuilder m;
  m.input("a", kF32, {6, 8});
  m.input("r", kF32, {3, 2, 4});
  m.initializer("w", random_tensor(kF32, {8, 4}, rng));
  m.initializer("b", random_tensor(kF32, {4}, rng));
  ints_const(m, "s3", {2, 3, 4});
  OnnxModelBuilder::attr(m.node("Gemm", {"a", "w", "b"}, {"g0"}), "alpha", 0.5f);
  m.node("Reshape", {"g0", "s3"}, {"g1"});
  OnnxModelBuilder::attr(m.node("Transpose", {"g1"}, {"g2"}), "perm", std::vector<int64_t>{1, 0, 2});
  m.node("Add", {"r", "g2"}, {"y"});
  m.output("y", kF32);
  auto g = load(m);
  ASSERT_TRUE(g);
  check_pass(*g, move_transposes_ahead_of_gemms, 1, seed);
  check_pass(*g, fuse_gemm_epilogues, 1, seed);
  ASSERT_NO_FATAL_FAILURE(expect_gemm_reads_residual(*g, "r"));
  EXPECT_EQ(count_op(*g, "Add"), 0);
}

// A Transpose of a wider GEMM input (K > N) stays behind the GEMM unless it unlocks a residual Add;
// one that moves the last axis, or follows a GEMM whose C has a row per row, stays too.
TEST(MoveTransposesAheadOfGemms, OnlyWhereItPays) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  OnnxModelBuilder m;
  m.input("a", kF32, {6, 8});
  m.initializer("w_narrow", random_tensor(kF32, {8, 4}, rng));
  m.initializer("w", random_tensor(kF32, {8, 8}, rng));
  m.initializer("c_rows", random_tensor(kF32, {6, 8}, rng));
  ints_const(m, "s3", {2, 3, 4});
  ints_const(m, "s3w", {2, 3, 8});
  m.node("MatMul", {"a", "w_narrow"}, {"n0"});  // K 8 > N 4, read by a Neg: stays
  m.node("Reshape", {"n0", "s3"}, {"n1"});
  OnnxModelBuilder::attr(m.node("Transpose", {"n1"}, {"n2"}), "perm", std::vector<int64_t>{1, 0, 2});
  m.node("Neg", {"n2"}, {"y1"});
  m.node("MatMul", {"a", "w"}, {"l0"});  // the permutation moves the last axis: stays
  m.node("Reshape", {"l0", "s3w"}, {"l1"});
  OnnxModelBuilder::attr(m.node("Transpose", {"l1"}, {"l2"}), "perm", std::vector<int64_t>{0, 2, 1});
  m.node("Neg", {"l2"}, {"y2"});
  m.node("Gemm", {"a", "w", "c_rows"}, {"c0"});  // C with a row per row: stays
  m.node("Reshape", {"c0", "s3w"}, {"c1"});
  OnnxModelBuilder::attr(m.node("Transpose", {"c1"}, {"c2"}), "perm", std::vector<int64_t>{1, 0, 2});
  m.node("Neg", {"c2"}, {"y3"});
  m.output("y1", kF32).output("y2", kF32).output("y3", kF32);
  auto g = load(m);
  ASSERT_TRUE(g);
  auto moved = move_transposes_ahead_of_gemms(*g);
  ASSERT_TRUE(moved.is_ok()) << moved.status().to_string();
  EXPECT_EQ(moved.value(), 0);
  EXPECT_EQ(count_op(*g, "Transpose"), 3);
}

// A Transpose whose GEMM output is read by a computing node stays before the GEMM (behind it, it
// would still copy, and more: the output is wider); one that moves the last axis stays too.
TEST(MoveTransposesBehindGemms, OnlyIntoViewChains) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  OnnxModelBuilder m;
  m.input("a", kF32, {"B", 3, 4});
  m.initializer("w", random_tensor(kF32, {4, 8}, rng));
  m.initializer("w2", random_tensor(kF32, {3, 8}, rng));
  m.initializer("bias", random_tensor(kF32, {8}, rng));
  OnnxModelBuilder::attr(m.node("Transpose", {"a"}, {"at"}), "perm", std::vector<int64_t>{1, 0, 2});
  m.node("MatMul", {"at", "w"}, {"p0"});
  m.node("Add", {"p0", "bias"}, {"p"});
  m.node("Neg", {"p"}, {"y1"});  // a computing reader: the Transpose stays
  OnnxModelBuilder::attr(m.node("Transpose", {"a"}, {"al"}), "perm", std::vector<int64_t>{0, 2, 1});
  m.node("MatMul", {"al", "w2"}, {"q0"});
  m.node("Add", {"q0", "bias"}, {"q"});
  ints_const(m, "flat", {-1, 8});
  m.node("Reshape", {"q", "flat"}, {"r"});  // a view reader, but the Transpose moves the last axis
  m.node("Neg", {"r"}, {"y2"});
  m.output("y1", kF32).output("y2", kF32);
  auto g = load(m);
  ASSERT_TRUE(g);
  auto fused = fuse_gemm_epilogues(*g);
  ASSERT_TRUE(fused.is_ok()) << fused.status().to_string();
  ASSERT_EQ(count_op(*g, "GraftGemm"), 2);
  ASSERT_TRUE(infer_shapes(*g).is_ok());
  auto moved = move_transposes_behind_gemms(*g);
  ASSERT_TRUE(moved.is_ok()) << moved.status().to_string();
  EXPECT_EQ(moved.value(), 0);
  EXPECT_EQ(count_op(*g, "Transpose"), 2);
}

TEST(FoldAttentionViews, BadChainAttributesAreNamed) {
  constexpr DataType kF16 = DataType::kFloat16;
  struct Case {
    const char* attr;
    std::vector<int64_t> value;
  };
  const Case cases[] = {
      {"y_perm", {0, 2, 1}},     // moves the last axis
      {"y_perm", {0, 0, 2}},     // not a permutation
      {"y_perm", {1, 0, 2, 3}},  // four axes for Y's three
      {"q_view_args", {2, 0, 1, 5}},  // a permutation of rank 3 given 4 entries... with count 4
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.attr);
    OnnxModelBuilder m(17);
    for (const char* in : {"q", "kt", "v"}) m.input(in, kF16, {2, 8, 8});
    auto& n = m.node("GraftAttention", {"q", "kt", "v"}, {"y"}, "chained_attention");
    if (std::string(c.attr) == "y_perm") {
      OnnxModelBuilder::attr(n, "y_perm", c.value);
    } else {
      OnnxModelBuilder::attr(n, "q_view_kinds", std::vector<int64_t>{0});
      OnnxModelBuilder::attr(n, "q_view_args", c.value);
      OnnxModelBuilder::attr(n, "q_view_arg_counts", std::vector<int64_t>{4});
    }
    m.output("y", kF16);
    expect_refused(m, c.attr, "chained_attention");
  }
}

TEST(FoldAttentionViews, BadViewAttributesAreNamed) {
  constexpr DataType kF16 = DataType::kFloat16;
  struct Case {
    const char* attr;
    std::vector<int64_t> value;
  };
  const Case cases[] = {
      {"q_view", {0, 0, 64, 8, 1, 9}},  // six entries
      {"q_view", {1, 0, 64, 8, 1}},     // reads past the end of Q
      {"y_view", {0, 0, 64, 16, 1}},    // leaves output elements unwritten
      {"dims", {1, 2, 8, 8, 8}},        // five entries
      {"kt_view", {0, 0, int64_t{1} << 62, 8, 1}},  // the extent overflows int64 (a damaged plan)
  };
  for (const Case& c : cases) {
    OnnxModelBuilder m(17);
    for (const char* in : {"q", "kt", "v"}) m.input(in, kF16, {2, 8, 8});
    auto& n = m.node("GraftAttention", {"q", "kt", "v"}, {"y"}, "viewed_attention");
    OnnxModelBuilder::attr(n, "dims", std::string(c.attr) == "dims" ? c.value : std::vector<int64_t>{1, 2, 8, 8, 8, 8});
    for (const char* v : {"q_view", "kt_view", "v_view", "y_view"})
      OnnxModelBuilder::attr(n, v, std::string(c.attr) == v ? c.value : std::vector<int64_t>{0, 0, 64, 8, 1});
    OnnxModelBuilder::attr(n, "y_shape", std::vector<int64_t>{2, 8, 8});
    m.output("y", kF16);
    expect_refused(m, c.attr, "viewed_attention");
  }
}

// A Transpose that only moves unit axes ([1, S, E] -> [S, 1, E], vit at batch 1) becomes a Reshape;
// one that moves data stays.
TEST(UnitAxisTransposes, BecomeReshapes) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {1, 5, 6});
  OnnxModelBuilder::attr(m.node("Transpose", {"x"}, {"t"}), "perm", std::vector<int64_t>{1, 0, 2});
  OnnxModelBuilder::attr(m.node("Transpose", {"t"}, {"moved"}), "perm", std::vector<int64_t>{2, 1, 0});
  m.node("Relu", {"moved"}, {"y"});
  m.output("y", DataType::kFloat32);
  auto g = load(m);
  ASSERT_TRUE(g);
  check_pass(*g, [](Graph& gr) { return unit_axis_transposes_to_reshapes(gr); }, 1, std::random_device{}(), 0.0);
  EXPECT_EQ(count_op(*g, "Transpose"), 1);
  EXPECT_EQ(count_op(*g, "Reshape"), 1);
}

// vit's out_proj at batch 1: Gemm [S, E] -> Reshape [S, 1, E] -> Transpose to [1, S, E] (unit axes
// only) -> Add(residual). The Transpose becomes a Reshape, the two Reshapes merge, and the residual
// Add joins the GEMM's epilogue (read through a Reshape) with the Reshape moved behind the GEMM.
TEST(UnitAxisTransposes, ResidualAddBehindReshapesJoinsTheGemm) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  OnnxModelBuilder m;
  m.input("x", kF32, {5, 8});
  m.input("res", kF32, {1, 5, 6});
  m.initializer("w", random_tensor(kF32, {6, 8}, rng));
  m.initializer("b", random_tensor(kF32, {6}, rng));
  ints_const(m, "s3", {5, 1, 6});
  OnnxModelBuilder::attr(m.node("Gemm", {"x", "w", "b"}, {"y"}), "transB", int64_t{1});
  m.node("Reshape", {"y", "s3"}, {"y3"});
  OnnxModelBuilder::attr(m.node("Transpose", {"y3"}, {"yt"}), "perm", std::vector<int64_t>{1, 0, 2});
  m.node("Add", {"yt", "res"}, {"out"});
  m.output("out", kF32);
  auto g = load(m);
  ASSERT_TRUE(g);
  auto passes = [](Graph& gr) -> Result<int> {
    GRAFT_ASSIGN_OR_RETURN(int t, unit_axis_transposes_to_reshapes(gr));
    GRAFT_ASSIGN_OR_RETURN(int r, merge_reshape_chains(gr));
    if (t != 1 || r != 1) return error(StatusCode::kInternal, "transposes ", t, ", merged reshapes ", r);
    GRAFT_RETURN_IF_ERROR(infer_shapes(gr));
    return fuse_gemm_epilogues(gr);
  };
  check_pass(*g, passes, 1, seed);
  EXPECT_EQ(count_op(*g, "Add"), 0);
  EXPECT_EQ(count_op(*g, "Transpose"), 0);
  const Node* gg = find_op(*g, "GraftGemm");
  ASSERT_NE(gg, nullptr);
  EXPECT_EQ(gg->inputs.size(), 4u);  // X, W, bias, residual
}

// A damaged plan's GraftConcatSlices: each bad attribute is named (one input x [2, 3]).
TEST(ConcatSlices, BadAttributesAreNamed) {
  expect_view_node_refused("GraftConcatSlices", "starts", [](auto& n) {
    OnnxModelBuilder::attr(n, "axis", int64_t{1});
    OnnxModelBuilder::attr(n, "starts", std::vector<int64_t>{0, 1});  // two entries, one input
    OnnxModelBuilder::attr(n, "ends", std::vector<int64_t>{2});
  });
  expect_view_node_refused("GraftConcatSlices", "ends", [](auto& n) {
    OnnxModelBuilder::attr(n, "axis", int64_t{1});
    OnnxModelBuilder::attr(n, "starts", std::vector<int64_t>{0});
  });
  expect_view_node_refused("GraftConcatSlices", "axis", [](auto& n) {
    OnnxModelBuilder::attr(n, "axis", int64_t{2});  // rank 2
    OnnxModelBuilder::attr(n, "starts", std::vector<int64_t>{0});
    OnnxModelBuilder::attr(n, "ends", std::vector<int64_t>{2});
  });
}

// torch.roll as exported (Slice, Slice, Concat per axis; Swin rolls two axes) becomes one
// GraftConcatSlices per axis reading the input in place; a Concat of a Slice and a plain input also
// fuses. A Slice with step 2, one read twice and one along another axis do not. Outputs unchanged
// (GraftConcatSlices' CPU reference against the builtin Slice and Concat).
TEST(ConcatSlices, RollAndMixedConcatsReadTheirSlicesInPlace) {
  const uint32_t seed = std::random_device{}();
  const int64_t big = std::numeric_limits<int64_t>::max();
  auto ints = [](std::vector<int64_t> v) { return Tensor::vector_int64(v); };
  OnnxModelBuilder b;
  b.input("x", DataType::kFloat32, {2, 6, 5, 4});
  b.input("u", DataType::kFloat32, {2, 6, 3, 4});
  for (auto& [name, v] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
           {"m2", {-2}}, {"end", {big}}, {"zero", {0}}, {"a1", {1}}, {"a2", {2}}, {"m1", {-1}}, {"two", {2}},
           {"three", {3}}, {"one", {1}}})
    b.initializer(name, ints(v));
  // roll by 2 along axis 1, then by 1 along axis 2
  b.node("Slice", {"x", "m2", "end", "a1"}, {"s1a"});
  b.node("Slice", {"x", "zero", "m2", "a1"}, {"s1b"});
  OnnxModelBuilder::attr(b.node("Concat", {"s1a", "s1b"}, {"r1"}), "axis", int64_t{1});
  b.node("Slice", {"r1", "m1", "end", "a2"}, {"s2a"});
  b.node("Slice", {"r1", "zero", "m1", "a2"}, {"s2b"});
  OnnxModelBuilder::attr(b.node("Concat", {"s2a", "s2b"}, {"y1"}), "axis", int64_t{-2});
  // a slice and a plain input
  b.node("Slice", {"x", "one", "three", "a2"}, {"s3"});
  OnnxModelBuilder::attr(b.node("Concat", {"u", "s3"}, {"y2"}), "axis", int64_t{2});
  // not fused: step 2; a slice read twice; a slice along another axis
  b.node("Slice", {"x", "zero", "end", "a2", "two"}, {"s4"});
  OnnxModelBuilder::attr(b.node("Concat", {"s4", "u"}, {"y3"}), "axis", int64_t{2});
  b.node("Slice", {"x", "zero", "three", "a2"}, {"s5"});
  OnnxModelBuilder::attr(b.node("Concat", {"s5", "u"}, {"y4"}), "axis", int64_t{2});
  b.node("Relu", {"s5"}, {"y5"});
  b.node("Slice", {"u", "zero", "m1", "a1"}, {"s6"});
  b.node("Slice", {"x", "zero", "m1", "a1"}, {"s7"});
  OnnxModelBuilder::attr(b.node("Concat", {"s6", "s7"}, {"y6"}), "axis", int64_t{2});
  for (const char* y : {"y1", "y2", "y3", "y4", "y5", "y6"}) b.output(y, DataType::kFloat32);
  auto g = load(b);
  ASSERT_TRUE(g);
  check_pass(*g, fuse_concat_slices, 3, seed, 0, 0);  // copies: bit-exact
  EXPECT_EQ(count_op(*g, "GraftConcatSlices"), 3);
  EXPECT_EQ(count_op(*g, "Concat"), 3);
  EXPECT_EQ(count_op(*g, "Slice"), 4) << "s4 (step 2), s5 (read twice), s6 and s7 (another axis) stay";
}

}  // namespace
}  // namespace graft
