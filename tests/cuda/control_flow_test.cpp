// If, Loop and Scan in a CUDA engine (src/ops/control_flow/control_flow_cuda.cpp): their subgraphs run
// on the GPU, so a strict build (no layer on the CPU reference) accepts them. Each model runs on
// fresh random data against the CPU engine, with host and device inputs and poisoned device outputs:
// a branch chosen by a condition the GPU computes, every Loop form (a condition the body computes on
// the GPU, a for loop reading its iteration number, a dynamic batch), Scan with axes and directions,
// a Loop nested in an If, a body with sequence ops, a body's large constant read on the loop's
// first iteration, the FP16 build around them. A body with a dtype
// the CUDA backend lacks cannot run on the GPU: the build says which node, and a strict build
// refuses it.
#ifdef GRAFT_WITH_CUDA

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cuda_engine_fixture.h"
#include "tests/unit/control_flow_models.h"

namespace graft_cuda_test {
namespace {

using graft::testing::graph_attr;

// y = sigmoid(If(sum(x) > 0, relu(x + w), x * w)), w read by both branches from the main graph.
OnnxModelBuilder if_model() {
  OnnxModelBuilder m(17);
  m.input("x", DataType::kFloat32, {4, 6});
  m.input("w", DataType::kFloat32, {6});
  auto& r = m.node("ReduceSum", {"x"}, {"s"});
  OnnxModelBuilder::attr(r, "keepdims", int64_t{0});
  m.constant("zero", Tensor::from_doubles(DataType::kFloat32, {}, {0.0}));
  m.node("Greater", {"s", "zero"}, {"c"});
  auto& n = m.node("If", {"c"}, {"b"}, "choose");
  graph_attr(n, "then_branch").node("Add", {"x", "w"}, {"xw"}).node("Relu", {"xw"}, {"t"}).output("t");
  graph_attr(n, "else_branch").node("Mul", {"x", "w"}, {"e"}).output("e");
  m.node("Sigmoid", {"b"}, {"y"});
  m.output("y", DataType::kFloat32, {4, 6});
  return m;
}

// A while loop with a trip limit: acc = 0.5 * acc + x until max(acc) >= limit or M iterations; the
// condition is computed on the GPU by the body. Outputs: the final acc and every iteration's acc.
OnnxModelBuilder while_model() {
  OnnxModelBuilder m(17);
  m.input("x", DataType::kFloat32, {"batch", 8});
  m.input("limit", DataType::kFloat32, {});
  m.constant("M", Tensor::scalar_int64(7));
  m.constant("go", Tensor::from_doubles(DataType::kBool, {}, {1.0}));
  m.node("Neg", {"x"}, {"acc0"});
  auto& loop = m.node("Loop", {"M", "go", "acc0"}, {"acc", "trace"}, "while_loop");
  graph_attr(loop, "body")
      .input("i", DataType::kInt64).input("c_in", DataType::kBool).input("acc_in", DataType::kFloat32)
      .constant("half", Tensor::from_doubles(DataType::kFloat32, {}, {0.5}))
      .node("Mul", {"acc_in", "half"}, {"h"})
      .node("Add", {"h", "x"}, {"acc_out"})
      .node("ReduceMax", {"acc_out"}, {"mx"}, {{"keepdims", 0}})
      .node("Less", {"mx", "limit"}, {"c_out"})
      .node("Identity", {"acc_out"}, {"t"})
      .output("c_out").output("acc_out").output("t");
  m.node("Relu", {"acc"}, {"y"});
  m.output("y", DataType::kFloat32);
  m.output("trace", DataType::kFloat32);
  return m;
}

// A for loop (M only) whose body reads its iteration number: acc += x * i; i itself is host data
// that a GPU layer reads (Cast, then Mul).
OnnxModelBuilder for_model() {
  OnnxModelBuilder m(17);
  m.input("x", DataType::kFloat32, {3, 5});
  m.input("M", DataType::kInt64, {});
  m.node("Abs", {"x"}, {"acc0"});
  auto& loop = m.node("Loop", {"M", "", "acc0"}, {"acc", "trace"}, "for_loop");
  graph_attr(loop, "body")
      .input("i", DataType::kInt64).input("c_in", DataType::kBool).input("acc_in", DataType::kFloat32)
      .node("Cast", {"i"}, {"fi"}, {{"to", static_cast<int64_t>(DataType::kFloat32)}})
      .node("Mul", {"x", "fi"}, {"xi"})
      .node("Add", {"acc_in", "xi"}, {"acc_out"})
      .node("Identity", {"c_in"}, {"c_out"})
      .node("Sin", {"acc_out"}, {"t"})
      .output("c_out").output("acc_out").output("t");
  m.output("acc", DataType::kFloat32, {3, 5});
  m.output("trace", DataType::kFloat32);
  return m;
}

// for_model with M a constant: a fixed trip count, which the CUDA passes unroll.
OnnxModelBuilder fixed_for_model(int64_t trips) {
  OnnxModelBuilder m = for_model();
  auto* inputs = m.model().mutable_graph()->mutable_input();
  for (int k = 0; k < inputs->size(); ++k)
    if (inputs->Get(k).name() == "M") inputs->erase(inputs->begin() + k);
  m.initializer("M", Tensor::scalar_int64(trips));
  return m;
}

// A Loop nested in an If's branch; the loop body reads x through two scopes.
OnnxModelBuilder nested_model() {
  OnnxModelBuilder m(17);
  m.input("x", DataType::kFloat32, {6});
  m.input("c", DataType::kBool, {});
  m.constant("M", Tensor::scalar_int64(3));
  auto& n = m.node("If", {"c"}, {"r"}, "outer_if");
  auto then_b = graph_attr(n, "then_branch");
  then_b.node("Identity", {"x"}, {"x0"});
  auto* loop = then_b.g->add_node();
  loop->set_op_type("Loop");
  loop->set_name("inner_loop");
  for (const char* in : {"M", "", "x0"}) loop->add_input(in);
  loop->add_output("looped");
  graph_attr(*loop, "body")
      .input("i", DataType::kInt64).input("c_in", DataType::kBool).input("v_in", DataType::kFloat32)
      .node("Mul", {"v_in", "x"}, {"v_out"})
      .node("Identity", {"c_in"}, {"c_out"})
      .output("c_out").output("v_out");
  then_b.output("looped");
  graph_attr(n, "else_branch").node("Neg", {"x"}, {"nx"}).output("nx");
  m.node("Tanh", {"r"}, {"y"});
  m.output("y", DataType::kFloat32, {6});
  return m;
}

// A loop whose body builds a sequence and takes its tensor back out.
// M is an input, so the Loop stays one (a constant M would be unrolled).
OnnxModelBuilder sequence_body_model() {
  OnnxModelBuilder m(17);
  m.input("x", DataType::kFloat32, {4});
  m.input("M", DataType::kInt64, {});
  auto& loop = m.node("Loop", {"M", "", "x"}, {"y"}, "seq_loop");
  graph_attr(loop, "body")
      .input("i", DataType::kInt64).input("c_in", DataType::kBool).input("v", DataType::kFloat32)
      .constant("zero", Tensor::scalar_int64(0))
      .node("Sin", {"v"}, {"sv"})
      .node("SequenceConstruct", {"sv", "v"}, {"sq"})
      .node("SequenceAt", {"sq", "zero"}, {"back"})
      .node("Identity", {"c_in"}, {"c_out"})
      .output("c_out").output("back");
  m.output("y", DataType::kFloat32, {4});
  return m;
}

// A for loop whose body slices rows of a large constant of its own, last row first: acc += table[R-1-i].
// The body's weights are uploaded on the loop's first iteration, and that iteration's Slice must
// read the whole upload. ONNX's test_loop11 (the same Slice of a body constant) summed 0 for x[0]
// on the GPU while the upload went through cudaMemcpy on the legacy stream, which the engine's
// non-blocking stream does not wait for; the last rows of a large table are the last to land.
OnnxModelBuilder body_table_model(const Tensor& table) {
  const int64_t rows = table.dims()[0], cols = table.dims()[1];
  OnnxModelBuilder m(17);
  m.input("acc0", DataType::kFloat32, {1, cols});
  m.input("M", DataType::kInt64, {});
  auto& loop = m.node("Loop", {"M", "", "acc0"}, {"acc"}, "table_loop");
  graph_attr(loop, "body")
      .input("i", DataType::kInt64).input("c_in", DataType::kBool).input("acc_in", DataType::kFloat32)
      .constant("table", table)
      .constant("last", Tensor::scalar_int64(rows - 1))
      .constant("axis0", Tensor::vector_int64({0}))
      .constant("one", Tensor::vector_int64({1}))
      .node("Sub", {"last", "i"}, {"r"})
      .node("Unsqueeze", {"r", "axis0"}, {"start"})
      .node("Add", {"start", "one"}, {"end"})
      .node("Slice", {"table", "start", "end"}, {"row"})
      .node("Add", {"acc_in", "row"}, {"acc_out"})
      .node("Identity", {"c_in"}, {"c_out"})
      .output("c_out").output("acc_out");
  m.output("acc", DataType::kFloat32, {1, cols});
  return m;
}

// A loop whose body holds an int16 value, a dtype the CUDA backend does not have.
OnnxModelBuilder int16_body_model() {
  OnnxModelBuilder m(17);
  m.input("x", DataType::kFloat32, {4});
  m.input("M", DataType::kInt64, {});
  auto& loop = m.node("Loop", {"M", "", "x"}, {"y"}, "int16_loop");
  graph_attr(loop, "body")
      .input("i", DataType::kInt64).input("c_in", DataType::kBool).input("v", DataType::kFloat32)
      .node("Cast", {"v"}, {"v16"}, {{"to", static_cast<int64_t>(DataType::kInt16)}})
      .node("Cast", {"v16"}, {"back"}, {{"to", static_cast<int64_t>(DataType::kFloat32)}})
      .node("Identity", {"c_in"}, {"c_out"})
      .output("c_out").output("back");
  m.output("y", DataType::kFloat32, {4});
  return m;
}

class CudaControlFlowTest : public CudaEngineTest {
 protected:
  // Built strictly: no layer may run on the CPU reference.
  void expect_all_on_gpu(const OnnxModelBuilder& m, std::map<std::string, graft::ProfileRange> profile = {}) {
    graft::BuilderConfig strict;
    strict.device = graft::DeviceType::kCUDA;
    strict.strict_device = true;
    strict.profile = std::move(profile);
    auto e = graft::Engine::build_from_onnx_bytes(m.bytes(), strict, "cf.onnx");
    EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  }
};

TEST_F(CudaControlFlowTest, IfOnAConditionTheGpuComputes) {
  REQUIRE_GPU();
  expect_all_on_gpu(if_model());
  for (double shift : {0.6, -0.6}) {  // both branches
    SCOPED_TRACE("shift " + std::to_string(shift));
    Tensor x = rand_t({4, 6}, rng_, -1 + shift, 1 + shift);
    for (bool fp16 : {false, true}) compare_with_cpu(if_model(), {{"x", x}, {"w", rand_t({6}, rng_)}}, fp16);
  }
}

TEST_F(CudaControlFlowTest, WhileLoopWithAGpuConditionAndADynamicBatch) {
  REQUIRE_GPU();
  std::map<std::string, graft::ProfileRange> profile = {{"x", {{1, 8}, {4, 8}, {8, 8}}}};
  expect_all_on_gpu(while_model(), profile);
  // Limits that end the loop early, late and never (M ends it).
  for (double limit : {0.2, 1.2, 100.0})
    for (int64_t batch : {2, 5}) {
      SCOPED_TRACE("limit " + std::to_string(limit) + " batch " + std::to_string(batch));
      compare_with_cpu(while_model(),
                       {{"x", rand_t({batch, 8}, rng_, 0.0, 1.0)},
                        {"limit", Tensor::from_doubles(DataType::kFloat32, {}, {limit})}},
                       false, profile);
    }
}

TEST_F(CudaControlFlowTest, ForLoopReadingItsIterationNumber) {
  REQUIRE_GPU();
  expect_all_on_gpu(for_model());
  for (int64_t trips : {4, 1, 0}) {
    SCOPED_TRACE("M " + std::to_string(trips));
    compare_with_cpu(for_model(), {{"x", rand_t({3, 5}, rng_)}, {"M", Tensor::scalar_int64(trips)}}, false);
  }
}

TEST_F(CudaControlFlowTest, FirstIterationReadsTheWholeBodyConstant) {
  REQUIRE_GPU();
  const int64_t rows = 4, cols = int64_t{1} << 21;  // 32 MB of float32: several staging chunks
  const Tensor table = rand_t({rows, cols}, rng_);
  expect_all_on_gpu(body_table_model(table));
  for (int rep = 0; rep < 3; ++rep) {  // each build uploads the table again
    SCOPED_TRACE("repeat " + std::to_string(rep));
    compare_with_cpu(body_table_model(table), {{"acc0", rand_t({1, cols}, rng_)}, {"M", Tensor::scalar_int64(rows)}}, false);
  }
}

// A for loop with a constant trip count is unrolled by the CUDA passes (src/graph/unroll_loops.cpp):
// no Loop layer is left, the whole engine replays from one CUDA graph, and the values are the CPU
// engine's (which runs the Loop as it is), in FP32 and FP16.
TEST_F(CudaControlFlowTest, FixedTripCountLoopIsUnrolledAndCaptured) {
  REQUIRE_GPU();
  for (int64_t trips : {1, 4}) {
    SCOPED_TRACE("M " + std::to_string(trips));
    expect_all_on_gpu(fixed_for_model(trips));
    auto gpu = build(fixed_for_model(trips), graft::DeviceType::kCUDA);
    ASSERT_TRUE(gpu);
    const nlohmann::json info = nlohmann::json::parse(gpu->describe_json());
    for (const auto& layer : info.at("layers")) EXPECT_NE(layer.value("op_type", ""), "Loop");
    auto ctx = gpu->create_context();
    ASSERT_TRUE(ctx.is_ok());
    auto* cuda_ctx = dynamic_cast<graft::CudaExecutionContext*>(ctx->get());
    ASSERT_NE(cuda_ctx, nullptr);
    bool replayed = false;
    for (int rep = 0; rep < 3; ++rep) {
      (void)run(*cuda_ctx, {{"x", rand_t({3, 5}, rng_)}});
      replayed |= cuda_ctx->last_run_used_cuda_graph();
    }
    // As a Loop layer, second of the engine's, it would leave no leading part worth a graph.
    EXPECT_TRUE(replayed) << "the unrolled loop should replay from a CUDA graph";
    for (bool fp16 : {false, true}) compare_with_cpu(fixed_for_model(trips), {{"x", rand_t({3, 5}, rng_)}}, fp16);
  }
}

TEST_F(CudaControlFlowTest, ScanWithAxesAndDirections) {
  REQUIRE_GPU();
  for (int64_t len : {5, 1}) {
    SCOPED_TRACE("length " + std::to_string(len));
    expect_all_on_gpu(graft::testing::scan_axes_and_directions_model(len));
    compare_with_cpu(graft::testing::scan_axes_and_directions_model(len),
                     {{"s0", rand_t({2}, rng_)}, {"a", rand_t({2, len}, rng_)}, {"b", rand_t({len, 2}, rng_)},
                      {"w", rand_t({2}, rng_)}},
                     false);
  }
}

TEST_F(CudaControlFlowTest, LoopNestedInAnIf) {
  REQUIRE_GPU();
  expect_all_on_gpu(nested_model());
  for (bool c : {true, false}) {
    SCOPED_TRACE(c ? "then" : "else");
    compare_with_cpu(nested_model(),
                     {{"x", rand_t({6}, rng_)}, {"c", Tensor::from_doubles(DataType::kBool, {}, {c ? 1.0 : 0.0})}},
                     false);
  }
}

TEST_F(CudaControlFlowTest, BodyWithSequenceOps) {
  REQUIRE_GPU();
  expect_all_on_gpu(sequence_body_model());
  compare_with_cpu(sequence_body_model(), {{"x", rand_t({4}, rng_)}, {"M", Tensor::scalar_int64(2)}}, false);
}

// A body the GPU cannot run keeps the whole loop on the CPU reference, and the build names the
// inner node; a strict build refuses it.
// A custom op with a CUDA kernel runs inside a GPU subgraph like a builtin op (custom_cuda_op).
TEST_F(CudaControlFlowTest, CustomOpInALoopBodyRunsOnTheGpu) {
  REQUIRE_GPU();
  expect_all_on_gpu(graft::testing::custom_op_loop_model());
  for (int64_t trips : {3, 1, 0}) {
    SCOPED_TRACE("M " + std::to_string(trips));
    compare_with_cpu(graft::testing::custom_op_loop_model(),
                     {{"x", rand_t({2, 5}, rng_, -3, 3)}, {"w", rand_t({5}, rng_)}, {"M", Tensor::scalar_int64(trips)}},
                     false);
  }
}

TEST_F(CudaControlFlowTest, BodyTheGpuCannotRunStaysOnTheCpuAndSaysWhy) {
  REQUIRE_GPU();
  std::vector<std::string> warnings;
  auto gpu = build(int16_body_model(), graft::DeviceType::kCUDA, false, {}, &warnings);
  ASSERT_TRUE(gpu);
  bool named = false;
  // Placement goes from the last node back: the first refused is the Cast back from int16.
  for (const auto& w : warnings)
    named |= w.find("int16_loop") != std::string::npos && w.find("(Cast)") != std::string::npos &&
             w.find("int16") != std::string::npos;
  EXPECT_TRUE(named) << "no build warning names the body's int16 node";
  compare_with_cpu(int16_body_model(), {{"x", rand_t({4}, rng_, -100, 100)}, {"M", Tensor::scalar_int64(2)}}, false);
  graft::BuilderConfig strict;
  strict.device = graft::DeviceType::kCUDA;
  strict.strict_device = true;
  auto refused = graft::Engine::build_from_onnx_bytes(int16_body_model().bytes(), strict, "int16.onnx");
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), graft::StatusCode::kUnsupported);
}

}  // namespace
}  // namespace graft_cuda_test

#endif  // GRAFT_WITH_CUDA
