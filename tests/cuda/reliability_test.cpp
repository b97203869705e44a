// Issue 19 on CUDA. Faults: a kernel that fails to launch makes the run fail with an error naming
// its layer, and the next run (on the same context and on a fresh one) is correct; so does input
// data the CPU reference refuses (an index out of range, a zero integer divisor). Concurrency: one
// engine run from 8 threads at once, each with its own context and its own stream, thousands of
// runs, every output bit-exact against the same engine run on one thread. GPU only; CUDA builds.
#ifdef GRAFT_WITH_CUDA

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <latch>
#include <mutex>
#include <thread>

#include "backends/cuda/cuda_ops.h"
#include "cuda_engine_fixture.h"
#include "fault_kernel.h"
#include "graft/registry.h"
#include "tests/unit/control_flow_models.h"

namespace {

using namespace graft_cuda_test;
using graft::Status;
using graft::StatusCode;

// ---- the fault switch ---------------------------------------------------------------------------
// While set, FaultyScale's CUDA kernel launches with an invalid configuration. kReportsError: the
// kernel returns the launch's error as its Status (a careful plugin); kSilent: it returns ok, as a
// plugin that never checks its launches would, so only the engine's own check after the layer can
// see it. Either way the error is left pending in the CUDA runtime for the engine to clear.
enum class Fault : int { kNone = 0, kReportsError = 1, kSilent = 2 };
std::atomic<int> g_fault{0};
std::atomic<int> g_failed_launches{0};

void set_fault(Fault f) { g_fault.store(static_cast<int>(f)); }

Status faulty_scale_cpu(const graft::KernelContext& c) {
  const float alpha = std::get<float>(*c.attrs->find("alpha"));
  const float* x = c.inputs[0].as<float>();
  float* y = c.outputs[0].as<float>();
  for (int64_t i = 0, n = c.inputs[0].numel(); i < n; ++i) y[i] = alpha * x[i];
  return Status::ok();
}

Status faulty_scale_cuda(const graft::KernelContext& c) {
  const float alpha = std::get<float>(*c.attrs->find("alpha"));
  const Fault f = static_cast<Fault>(g_fault.load());
  const cudaError_t e = launch_scale(c.inputs[0].as<float>(), c.outputs[0].as<float>(), c.inputs[0].numel(), alpha,
                                     f != Fault::kNone, static_cast<cudaStream_t>(c.stream));
  if (e != cudaSuccess) g_failed_launches.fetch_add(1);
  if (e != cudaSuccess && f == Fault::kReportsError)
    return graft::error(StatusCode::kRuntimeError, "FaultyScale: kernel launch failed: ", cudaGetErrorName(e));
  return Status::ok();
}

// FaultyScale (domain graft.test): y = alpha * x in float32, registered into the global registry
// once per process, beside graft's own ops, as a plugin library would.
void register_faulty_scale() {
  static std::once_flag once;
  std::call_once(once, [] {
    graft::OpDef def("FaultyScale");
    def.domain("graft.test").version("1")
        .doc("y = alpha * x; the CUDA kernel fails to launch while the test's fault switch is on")
        .attr_float("alpha", 2.0f)
        .input("x", {graft::DataType::kFloat32})
        .output("y")
        .shape_fn([](graft::ShapeContext& c) {
          c.set_output(0, c.input_shape(0));
          return Status::ok();
        })
        .kernel(graft::Backend::kCPU, faulty_scale_cpu)
        .kernel(graft::Backend::kCUDA, faulty_scale_cuda);
    Status st = graft::OpRegistry::global().add(std::move(def), "graft_cuda_tests");
    ASSERT_TRUE(st.is_ok()) << st.to_string();
  });
}

// x[4,16] -> Gemm "fc1" -> FaultyScale "faulty" -> Relu -> Gemm "fc2" -> y[4,8]: the failing layer
// sits between cuBLASLt layers, so a failed run has already queued work before it.
OnnxModelBuilder faulty_model(std::mt19937& rng) {
  OnnxModelBuilder m;
  m.opset("graft.test", 1);
  m.input("x", DataType::kFloat32, {4, 16});
  m.initializer("w1", rand_t({16, 32}, rng, -0.5, 0.5));
  m.initializer("b1", rand_t({32}, rng));
  m.initializer("w2", rand_t({32, 8}, rng, -0.5, 0.5));
  m.initializer("b2", rand_t({8}, rng));
  m.node("Gemm", {"x", "w1", "b1"}, {"h1"}, "fc1");
  auto& f = m.node("FaultyScale", {"h1"}, {"h2"}, "faulty", "graft.test");
  OnnxModelBuilder::attr(f, "alpha", 0.5f);
  m.node("Relu", {"h2"}, {"h3"}, "relu");
  m.node("Gemm", {"h3", "w2", "b2"}, {"y"}, "fc2");
  m.output("y", DataType::kFloat32, {4, 8});
  return m;
}

class CudaReliabilityTest : public CudaEngineTest {
 protected:
  void TearDown() override { set_fault(Fault::kNone); }

  // The FaultyScale model built for CUDA, one input and its CPU reference output.
  void make_faulty_engine() {
    register_faulty_scale();
    const auto m = faulty_model(rng_);
    auto cpu = build(m, graft::DeviceType::kCPU);
    gpu_ = build(m, graft::DeviceType::kCUDA);
    ASSERT_TRUE(cpu && gpu_);
    auto cctx = cpu->create_context();
    ASSERT_TRUE(cctx.is_ok());
    x_ = rand_t({4, 16}, rng_, -2, 2);
    want_ = run(**cctx, {{"x", x_}}).at("y");
  }
  std::shared_ptr<graft::Engine> gpu_;
  Tensor x_, want_;

  // A run with the fault switch on must fail, name the layer and leave no CUDA error behind.
  void expect_injected_failure(graft::ExecutionContext& ctx, const Tensor& x, Fault f) {
    const int before = g_failed_launches.load();
    set_fault(f);
    std::map<std::string, Tensor> out;
    const Status st = ctx.run({{"x", x}}, out);
    set_fault(Fault::kNone);
    EXPECT_GT(g_failed_launches.load(), before) << "the faulty kernel was never launched";
    ASSERT_FALSE(st.is_ok()) << "a run whose kernel failed to launch reported success";
    std::printf("[ fault    ] %s\n", st.to_string().c_str());
    EXPECT_EQ(st.code(), StatusCode::kRuntimeError) << st.to_string();
    EXPECT_EQ(st.node_name(), "faulty") << st.to_string();
    EXPECT_EQ(st.op_type(), "FaultyScale") << st.to_string();
    // The runtime's name for a 2048-thread block depends on its version: cudaErrorInvalidConfiguration
    // in the CUDA 12 documentation, cudaErrorInvalidValue from CUDA 13.0 on the H200 (driver 580).
    EXPECT_TRUE(st.message().find("cudaErrorInvalidConfiguration") != std::string::npos ||
                st.message().find("cudaErrorInvalidValue") != std::string::npos)
        << st.to_string();
    // The engine cleared the launch error: nothing pending, nothing sticky.
    EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }

  // A run with host I/O and one with device I/O into poisoned device outputs, both against the CPU.
  void expect_correct(graft::ExecutionContext& ctx, const Tensor& x, const Tensor& want, const char* what) {
    auto host = run(ctx, {{"x", x}});
    ASSERT_TRUE(host.count("y")) << what;
    EXPECT_LT(rel_err(to_host(host.at("y")), want), 1e-4) << what << ", host I/O, seed " << seed_;
    std::map<std::string, Tensor> dout{{"y", poisoned_device(DataType::kFloat32, want.dims())}};
    const Status st = ctx.run({{"x", to_device(x)}}, dout);
    ASSERT_TRUE(st.is_ok()) << what << ": " << st.to_string();
    EXPECT_LT(rel_err(to_host(dout.at("y")), want), 1e-4) << what << ", device I/O, seed " << seed_;
  }
};

// Eager runs (no CUDA graph): the failing run is reported whether the kernel reports its error or
// not, on the first run of a context and on a later one; afterwards the same context and a fresh
// one run correctly.
TEST_F(CudaReliabilityTest, InjectedKernelFailureIsReportedAndContextsRecover) {
  REQUIRE_GPU();
  make_faulty_engine();
  if (HasFatalFailure()) return;

  for (Fault f : {Fault::kReportsError, Fault::kSilent}) {
    SCOPED_TRACE(f == Fault::kSilent ? "kernel returns ok" : "kernel returns the error");
    auto made = gpu_->create_context();
    ASSERT_TRUE(made.is_ok()) << made.status().to_string();
    auto& ctx = **made;
    dynamic_cast<graft::CudaExecutionContext&>(ctx).set_cuda_graphs(false);
    expect_injected_failure(ctx, x_, f);  // the context's very first run
    expect_correct(ctx, x_, want_, "same context after a failed first run");
    expect_correct(ctx, x_, want_, "same context, second run");
    expect_injected_failure(ctx, x_, f);  // a planned run, after successful ones
    expect_correct(ctx, x_, want_, "same context after a failed later run");
    auto fresh = gpu_->create_context();
    ASSERT_TRUE(fresh.is_ok()) << fresh.status().to_string();
    expect_correct(**fresh, x_, want_, "fresh context");
  }
}

// With CUDA graphs on, the failure strikes on a context's first run, which launches every kernel
// whether it is captured (a static-shape engine plans its memory when the context is made) or runs
// eagerly: a failed capture is given up, the eager retry fails as well, and the run reports the
// layer. That context then runs correctly (eagerly for good if its capture failed); a fresh context
// captures and replays a graph again.
TEST_F(CudaReliabilityTest, InjectedFailureWithCudaGraphsOn) {
  REQUIRE_GPU();
  if (std::getenv("GRAFT_CUDA_GRAPHS") != nullptr) GTEST_SKIP() << "CUDA graphs are switched by the environment";
  make_faulty_engine();
  if (HasFatalFailure()) return;

  for (Fault f : {Fault::kReportsError, Fault::kSilent}) {
    SCOPED_TRACE(f == Fault::kSilent ? "kernel returns ok" : "kernel returns the error");
    auto made = gpu_->create_context();
    ASSERT_TRUE(made.is_ok());
    auto& ctx = dynamic_cast<graft::CudaExecutionContext&>(**made);
    ctx.set_cuda_graphs(true);
    expect_injected_failure(ctx, x_, f);
    EXPECT_FALSE(ctx.last_run_used_cuda_graph());
    for (int rep = 0; rep < 3; ++rep) expect_correct(ctx, x_, want_, "same context after the failed run");
  }
  auto fresh = gpu_->create_context();
  ASSERT_TRUE(fresh.is_ok());
  auto& f = dynamic_cast<graft::CudaExecutionContext&>(**fresh);
  f.set_cuda_graphs(true);
  for (int rep = 0; rep < 3; ++rep) expect_correct(f, x_, want_, "fresh context");
  EXPECT_TRUE(f.last_run_used_cuda_graph()) << "a fresh context should capture and replay again";
}

// ---- invalid input data -----------------------------------------------------------------------
// Data the CPU reference refuses (an index out of range, an integer divisor of zero) fails a CUDA
// run too, naming the layer whose kernel found it (CudaOp::invalid_data): at the end of a run that
// waits, or at the next call after one that did not. The runs after it are correct again. (The
// other reporting ops, GatherElements to the losses, share this path through k::DataFault.)

// x [4, 3] gathered by idx [2] along axis 0 (then Relu), and a / b in int32, element by element.
OnnxModelBuilder invalid_data_model() {
  OnnxModelBuilder m(13);
  m.input("x", DataType::kFloat32, {4, 3});
  m.input("idx", DataType::kInt64, {2});
  m.input("a", DataType::kInt32, {5});
  m.input("b", DataType::kInt32, {5});
  m.node("Gather", {"x", "idx"}, {"g"}, "pick_rows");
  m.node("Relu", {"g"}, {"y"});
  m.node("Div", {"a", "b"}, {"q"}, "divide");
  m.output("y", DataType::kFloat32, {2, 3});
  m.output("q", DataType::kInt32, {5});
  return m;
}

Tensor int_tensor(DataType dt, const std::vector<int64_t>& v) {
  return Tensor::from_doubles(dt, {static_cast<int64_t>(v.size())}, std::vector<double>(v.begin(), v.end()));
}

// A run the GPU found invalid data in: failed, naming `node` and saying `words`, with no CUDA error
// left pending.
void expect_refused(const Status& st, const char* node, const char* words, const char* what) {
  ASSERT_FALSE(st.is_ok()) << what << ": the run reported success";
  std::printf("[ invalid  ] %s\n", st.to_string().c_str());
  EXPECT_EQ(st.node_name(), node) << what << ": " << st.to_string();
  EXPECT_NE(st.message().find(words), std::string::npos) << what << ": " << st.to_string();
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess) << what;
}

// A valid run on `ctx` against the CPU engine's on the same inputs, outputs poisoned first: the
// float32 output `f` within `tol` (relative), the int32 output `q` to the bit.
void expect_valid_run(graft::ExecutionContext& ctx, graft::ExecutionContext& cpu,
                      const std::map<std::string, Tensor>& in, const std::string& f, const std::string& q, double tol,
                      const char* what) {
  const auto want = CudaEngineTest::run(cpu, in);
  std::map<std::string, Tensor> got{{f, CudaEngineTest::poisoned_device(DataType::kFloat32, want.at(f).dims())},
                                    {q, CudaEngineTest::poisoned_device(DataType::kInt32, want.at(q).dims())}};
  std::map<std::string, Tensor> din;
  for (const auto& [k, v] : in) din[k] = CudaEngineTest::to_device(v);
  const Status st = ctx.run(din, got);
  ASSERT_TRUE(st.is_ok()) << what << ": " << st.to_string();
  EXPECT_LE(rel_err(CudaEngineTest::to_host(got.at(f)), want.at(f)), tol) << what;
  const Tensor t = CudaEngineTest::to_host(got.at(q));
  EXPECT_EQ(std::memcmp(t.data(), want.at(q).data(), t.nbytes()), 0) << what;
}

TEST_F(CudaEngineTest, InvalidInputDataFailsTheRunNamingTheLayer) {
  REQUIRE_GPU();
  const auto m = invalid_data_model();
  auto cpu = build(m, graft::DeviceType::kCPU);
  auto gpu = build(m, graft::DeviceType::kCUDA);
  ASSERT_TRUE(cpu && gpu);
  auto cctx = cpu->create_context();
  ASSERT_TRUE(cctx.is_ok());
  std::uniform_int_distribution<int> div(-9, 9);
  auto valid = [&] {
    std::map<std::string, Tensor> in{{"x", rand_t({4, 3}, rng_)}, {"idx", int_tensor(DataType::kInt64, {3, -4})}};
    std::vector<int64_t> a, b;
    for (int i = 0; i < 5; ++i) {
      a.push_back(div(rng_) * 7);
      int d = div(rng_);
      b.push_back(d == 0 ? 3 : d);
    }
    in["a"] = int_tensor(DataType::kInt32, a);
    in["b"] = int_tensor(DataType::kInt32, b);
    return in;
  };
  auto bad_index = valid();
  bad_index["idx"] = int_tensor(DataType::kInt64, {1, 4});
  auto zero_divisor = valid();
  zero_divisor["b"] = int_tensor(DataType::kInt32, {2, 1, 0, -1, 5});
  // The CPU reference refuses both.
  for (const auto* in : {&bad_index, &zero_divisor}) {
    std::map<std::string, Tensor> out;
    EXPECT_FALSE((*cctx)->run(*in, out).is_ok());
  }
  auto expect_valid = [&](graft::ExecutionContext& ctx, const char* what) {
    expect_valid_run(ctx, **cctx, valid(), "y", "q", 0.0, what);
  };
  for (bool graphs : {false, true}) {
    SCOPED_TRACE(graphs ? "CUDA graphs on" : "CUDA graphs off");
    auto made = gpu->create_context();
    ASSERT_TRUE(made.is_ok()) << made.status().to_string();
    auto& ctx = dynamic_cast<graft::CudaExecutionContext&>(**made);
    ctx.set_cuda_graphs(graphs);
    for (int rep = 0; rep < 3; ++rep) expect_valid(ctx, "before");  // with graphs on: captured, replayed
    std::map<std::string, Tensor> out;
    expect_refused(ctx.run(bad_index, out), "pick_rows", "an index is out of range", "index out of range");
    expect_valid(ctx, "after the index out of range");
    out.clear();
    expect_refused(ctx.run(zero_divisor, out), "divide", "an integer divisor is zero", "zero divisor");
    expect_valid(ctx, "after the zero divisor");
    // A run not waited for: reported by the next call, which does not start.
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    std::map<std::string, Tensor> din, dout;
    for (const auto& [k, v] : bad_index) din[k] = to_device(v);
    ASSERT_TRUE(ctx.enqueue(din, dout, stream).is_ok());
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    out.clear();
    const Status late = ctx.run(valid(), out);
    expect_refused(late, "pick_rows", "an index is out of range", "an earlier enqueued run");
    EXPECT_NE(late.message().find("earlier run"), std::string::npos) << late.to_string();
    expect_valid(ctx, "after the late report");
    expect_valid(ctx, "after the late report, again");
    ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  }
}

// A convolution (so the build times tactics) beside an integer Div by an input: the builder's timing
// inputs are zero integers, which the Div refuses. The build still succeeds, saying why the timing
// stopped, and the engine is correct on valid data and refuses the zero divisor as before.
TEST_F(CudaEngineTest, ModelRefusingTheTimingInputsStillBuilds) {
  REQUIRE_GPU();
  OnnxModelBuilder m(13);
  m.input("x", DataType::kFloat32, {2, 8, 6, 6});
  m.input("a", DataType::kInt32, {5});
  m.input("b", DataType::kInt32, {5});
  m.initializer("w", rand_t({16, 8, 3, 3}, rng_));
  auto& conv = m.node("Conv", {"x", "w"}, {"c"}, "conv");
  OnnxModelBuilder::attr(conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
  m.node("Relu", {"c"}, {"y"});
  m.node("Div", {"a", "b"}, {"q"}, "divide");
  m.output("y", DataType::kFloat32, {2, 16, 6, 6});
  m.output("q", DataType::kInt32, {5});
  auto cpu = build(m, graft::DeviceType::kCPU);
  std::vector<std::string> warnings;
  auto gpu = build(m, graft::DeviceType::kCUDA, false, {}, &warnings);
  ASSERT_TRUE(cpu && gpu);
  bool told = false;
  for (const auto& w : warnings) told = told || (w.find("tactic timing") != std::string::npos &&
                                                 w.find("divide") != std::string::npos);
  EXPECT_TRUE(told) << "no warning names the timing run's failure";
  auto cctx = cpu->create_context();
  auto gctx = gpu->create_context();
  ASSERT_TRUE(cctx.is_ok() && gctx.is_ok());
  std::map<std::string, Tensor> in{{"x", rand_t({2, 8, 6, 6}, rng_)},
                                   {"a", int_tensor(DataType::kInt32, {35, -14, 9, 0, -100})},
                                   {"b", int_tensor(DataType::kInt32, {5, 3, -2, 7, 9})}};
  expect_valid_run(**gctx, **cctx, in, "y", "q", 1e-4, "valid data");
  in["b"] = int_tensor(DataType::kInt32, {5, 3, 0, 7, 9});
  std::map<std::string, Tensor> out;
  expect_refused((*gctx)->run(in, out), "divide", "an integer divisor is zero", "zero divisor");
}

// The same reports from nodes inside subgraphs: a Gather in a Loop's body, and an integer Div in
// the body of a Loop nested in an If's branch, reading the main graph's values through two scopes.
// M and c are inputs, so neither the Loop nor the If is unrolled or inlined at build time.
OnnxModelBuilder subgraph_invalid_data_model() {
  using graft::testing::graph_attr;
  OnnxModelBuilder m(17);
  m.input("x", DataType::kFloat32, {4, 3});
  m.input("idx", DataType::kInt64, {2});
  m.input("acc0", DataType::kFloat32, {2, 3});
  m.input("M", DataType::kInt64, {});
  m.input("c", DataType::kBool, {});
  m.input("a", DataType::kInt32, {5});
  m.input("b", DataType::kInt32, {5});
  auto& loop = m.node("Loop", {"M", "", "acc0"}, {"acc"}, "gather_loop");
  graph_attr(loop, "body")
      .input("i", DataType::kInt64).input("c_in", DataType::kBool).input("acc_in", DataType::kFloat32)
      .node("Gather", {"x", "idx"}, {"g"}, {}, "pick_in_loop")
      .node("Add", {"acc_in", "g"}, {"acc_out"})
      .node("Identity", {"c_in"}, {"c_out"})
      .output("c_out").output("acc_out");
  auto& n = m.node("If", {"c"}, {"r"}, "outer_if");
  auto then_b = graph_attr(n, "then_branch");
  auto* inner = then_b.g->add_node();
  inner->set_op_type("Loop");
  inner->set_name("inner_loop");
  for (const char* in : {"M", "", "a"}) inner->add_input(in);
  inner->add_output("looped");
  graph_attr(*inner, "body")
      .input("i", DataType::kInt64).input("c_in", DataType::kBool).input("v_in", DataType::kInt32)
      .node("Div", {"a", "b"}, {"q"}, {}, "divide_in_body")
      .node("Add", {"v_in", "q"}, {"v_out"})
      .node("Identity", {"c_in"}, {"c_out"})
      .output("c_out").output("v_out");
  then_b.output("looped");
  graph_attr(n, "else_branch").node("Neg", {"a"}, {"na"}).output("na");
  m.output("acc", DataType::kFloat32, {2, 3});
  m.output("r", DataType::kInt32, {5});
  return m;
}

TEST_F(CudaEngineTest, InvalidInputDataInASubgraphFailsTheRunNamingTheNode) {
  const auto m = subgraph_invalid_data_model();
  auto cpu = build(m, graft::DeviceType::kCPU);
  ASSERT_TRUE(cpu);
  auto cctx = cpu->create_context();
  ASSERT_TRUE(cctx.is_ok());
  std::uniform_int_distribution<int> small(-9, 9);
  auto valid = [&] {
    std::map<std::string, Tensor> in{{"x", rand_t({4, 3}, rng_)}, {"idx", int_tensor(DataType::kInt64, {2, -1})},
                                     {"acc0", rand_t({2, 3}, rng_)}, {"M", Tensor::scalar_int64(3)},
                                     {"c", Tensor::from_doubles(DataType::kBool, {}, {1.0})}};
    std::vector<int64_t> a, b;
    for (int i = 0; i < 5; ++i) {
      a.push_back(small(rng_) * 5);
      const int d = small(rng_);
      b.push_back(d == 0 ? -2 : d);
    }
    in["a"] = int_tensor(DataType::kInt32, a);
    in["b"] = int_tensor(DataType::kInt32, b);
    return in;
  };
  auto bad_index = valid();
  bad_index["idx"] = int_tensor(DataType::kInt64, {0, -5});
  auto zero_divisor = valid();
  zero_divisor["b"] = int_tensor(DataType::kInt32, {3, 0, 1, -1, 7});
  // The CPU reference refuses both (this half runs without a GPU too).
  for (const auto* in : {&bad_index, &zero_divisor}) {
    std::map<std::string, Tensor> out;
    const Status st = (*cctx)->run(*in, out);
    EXPECT_FALSE(st.is_ok());
    std::printf("[ cpu      ] %s\n", st.to_string().c_str());
  }
  REQUIRE_GPU();
  auto gpu = build(m, graft::DeviceType::kCUDA);
  ASSERT_TRUE(gpu);
  auto expect_valid = [&](graft::ExecutionContext& ctx, const char* what) {
    expect_valid_run(ctx, **cctx, valid(), "acc", "r", 1e-6, what);
  };
  for (bool graphs : {false, true}) {
    SCOPED_TRACE(graphs ? "CUDA graphs on" : "CUDA graphs off");
    auto made = gpu->create_context();
    ASSERT_TRUE(made.is_ok()) << made.status().to_string();
    auto& ctx = dynamic_cast<graft::CudaExecutionContext&>(**made);
    ctx.set_cuda_graphs(graphs);
    for (int rep = 0; rep < 2; ++rep) expect_valid(ctx, "before");
    std::map<std::string, Tensor> out;
    const Status st_index = ctx.run(bad_index, out);
    // Named as the CPU reference names it: the engine layer, and inside it the node that found it.
    expect_refused(st_index, "gather_loop", "an index is out of range", "index out of range in a Loop body");
    EXPECT_NE(st_index.message().find("'pick_in_loop'"), std::string::npos) << st_index.to_string();
    expect_valid(ctx, "after the index out of range");
    out.clear();
    const Status st_div = ctx.run(zero_divisor, out);
    expect_refused(st_div, "outer_if", "an integer divisor is zero", "zero divisor in a nested body");
    EXPECT_NE(st_div.message().find("'divide_in_body' (Div) of a subgraph of node 'inner_loop'"), std::string::npos)
        << st_div.to_string();
    expect_valid(ctx, "after the zero divisor");
  }
}

// The tags themselves, no GPU needed: one tag per subgraph node (by its and its parent's names),
// past the engine's layers, stable across runs, and none for a tag outside them.
TEST(SubgraphFaultTags, OneStableTagPerNodePastTheLayers) {
  graft::Node loop, inner, other;
  loop.name = "loop";
  loop.op_type = "Loop";
  inner.name = "pick";
  inner.op_type = "Gather";
  other.name = "divide";
  other.op_type = "Div";
  graft::cuda::SubgraphFaultTags tags;
  tags.reset(8);  // 7 engine layers
  const int64_t a = tags.tag_for(inner, loop, 3, "an index is out of range");
  const int64_t b = tags.tag_for(other, loop, 3, "an integer divisor is zero");
  EXPECT_EQ(a, 8);
  EXPECT_EQ(b, 9);
  EXPECT_EQ(tags.tag_for(inner, loop, 3, "an index is out of range"), a);
  const auto* n = tags.find(b);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->node, "divide");
  EXPECT_EQ(n->parent, "loop");
  EXPECT_EQ(n->parent_type, "Loop");
  EXPECT_EQ(n->layer_tag, 3);
  EXPECT_EQ(tags.find(7), nullptr);
  EXPECT_EQ(tags.find(10), nullptr);
  tags.reset(8);
  EXPECT_EQ(tags.find(8), nullptr);
}

// ---- concurrency ----------------------------------------------------------------------------------
struct ConcurrencyCase {
  std::string name;
  OnnxModelBuilder model;
  bool fp16 = false;
  std::map<std::string, graft::ProfileRange> profile;
  std::vector<std::vector<int64_t>> shapes;  // of input x, one per distinct input (cycled)
};

std::vector<uint8_t> bytes_of(const Tensor& host) {
  const auto* p = static_cast<const uint8_t*>(host.data());
  return std::vector<uint8_t>(p, p + host.nbytes());
}

// One engine, 8 threads started together, each with its own context and its own non-blocking
// stream: 7 of 8 runs enqueue device inputs into preallocated device outputs on the thread's stream,
// every 8th runs host I/O on the context's own stream (so each context also switches streams).
// Every output is compared byte for byte with the same engine's single-threaded result.
TEST_F(CudaReliabilityTest, EightContextsOnEightStreamsAreBitExact) {
  REQUIRE_GPU();
  constexpr int kThreads = 8, kRunsPerThread = 256, kInputs = 12;
  std::vector<ConcurrencyCase> cases;
  cases.push_back({"mlp with CustomLayer, fp32", mlp_model(rng_), false, {}, {{4, 16}}});
  cases.push_back({"cnn, fp16", cnn_model(rng_), true, {}, {{2, 3, 16, 16}}});
  cases.push_back({"dynamic-batch cnn, fp32", dynamic_cnn_model(rng_), false,
                   {{"x", {{1, 3, 12, 12}, {4, 3, 12, 12}, {16, 3, 12, 12}}}},
                   {{1, 3, 12, 12}, {3, 3, 12, 12}, {8, 3, 12, 12}, {16, 3, 12, 12}}});
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name + ", seed " + std::to_string(seed_));
    auto gpu = build(c.model, graft::DeviceType::kCUDA, c.fp16, c.profile);
    ASSERT_TRUE(gpu);
    // The inputs (host and device copies) and the single-threaded reference, per output name.
    std::vector<Tensor> xs, dxs;
    std::vector<std::map<std::string, std::vector<uint8_t>>> want(kInputs);
    std::vector<std::map<std::string, Tensor>> out_shapes(kInputs);
    {
      auto ref = gpu->create_context();
      ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
      for (int i = 0; i < kInputs; ++i) {
        xs.push_back(rand_t(c.shapes[i % c.shapes.size()], rng_, -2, 2));
        dxs.push_back(to_device(xs.back()));
        for (const auto& [name, t] : run(**ref, {{"x", xs.back()}})) {
          const Tensor h = to_host(t);
          want[i][name] = bytes_of(h);
          out_shapes[i][name] = h;
        }
      }
    }
    std::vector<std::string> errors(kThreads);
    std::vector<int> mismatches(kThreads, 0), runs(kThreads, 0);
    std::latch start(kThreads);
    auto worker = [&](int t) {
      // Context, stream and this thread's output buffers (one set per input: shapes differ with the
      // batch) are made before the threads start together, so the runs overlap.
      auto made = gpu->create_context();
      cudaStream_t stream = nullptr;
      std::vector<std::map<std::string, Tensor>> douts(kInputs);
      if (!made.is_ok()) {
        errors[t] = made.status().to_string();
      } else if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
        errors[t] = "cudaStreamCreateWithFlags failed";
      } else {
        for (int i = 0; i < kInputs; ++i)
          for (const auto& [name, h] : out_shapes[i])
            douts[i][name] = Tensor::empty(h.dtype(), h.dims(), graft::DeviceType::kCUDA);
      }
      start.arrive_and_wait();
      if (!errors[t].empty()) return;
      auto& ctx = dynamic_cast<graft::CudaExecutionContext&>(**made);
      for (int rep = 0; rep < kRunsPerThread && errors[t].empty(); ++rep) {
        const int i = (rep * 5 + t * 7) % kInputs;
        std::map<std::string, Tensor> got;
        Status st;
        if (rep % 8 == 7) {
          st = ctx.run({{"x", xs[i]}}, got);
        } else {
          got = douts[i];
          st = ctx.enqueue({{"x", dxs[i]}}, got, stream);
          std::map<std::string, Tensor> host;
          for (const auto& [name, d] : got) {
            Tensor h = Tensor::empty(d.dtype(), d.dims());
            if (st.is_ok() && cudaMemcpyAsync(h.data(), d.data(), d.nbytes(), cudaMemcpyDeviceToHost, stream) != cudaSuccess)
              st = graft::error(StatusCode::kRuntimeError, "copying output '", name, "' back");
            host[name] = h;
          }
          if (st.is_ok() && cudaStreamSynchronize(stream) != cudaSuccess)
            st = graft::error(StatusCode::kRuntimeError, "cudaStreamSynchronize failed");
          got = std::move(host);
        }
        if (!st.is_ok()) {
          errors[t] = "run " + std::to_string(rep) + ": " + st.to_string();
          break;
        }
        ++runs[t];
        for (const auto& [name, bytes] : want[i]) {
          auto it = got.find(name);
          if (it == got.end() || bytes_of(to_host(it->second)) != bytes) ++mismatches[t];
        }
      }
      if (stream) (void)cudaStreamDestroy(stream);
    };
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < kThreads; ++t) pool.emplace_back(worker, t);
    for (auto& th : pool) th.join();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    int total = 0, bad = 0;
    for (int t = 0; t < kThreads; ++t) {
      EXPECT_TRUE(errors[t].empty()) << "thread " << t << ": " << errors[t];
      total += runs[t];
      bad += mismatches[t];
    }
    std::printf("[ threads  ] %s: %d threads x %d runs, %d runs done in %.2f s, %d outputs not bit-exact %s\n",
                c.name.c_str(), kThreads, kRunsPerThread, total, secs, bad, bad == 0 ? "PASS" : "FAIL");
    EXPECT_EQ(total, kThreads * kRunsPerThread);
    EXPECT_EQ(bad, 0) << "outputs that differ from the single-threaded run";
  }
}

// Fuzz finding FZ19's pattern on CUDA: a Resize whose scales leave no channels and make the spatial
// axes huge (x [1, 2, 4, 4] by (1, 1.2e-38, 3e13, 3e13)), into an AveragePool. Both outputs are
// empty, so the engine runs no kernel for either (runtime/cpu_executor.h, outputs_all_empty): a
// kernel that walked the 1e14-long axes first would never finish. The build and a run must succeed,
// fast, with an empty output of the inferred shape.
TEST_F(CudaEngineTest, EmptyOutputsWithHugeAxesRunNoKernel) {
  REQUIRE_GPU();
  OnnxModelBuilder m(13);
  m.input("x", DataType::kFloat32, {1, 2, 4, 4});
  m.initializer("roi", Tensor::from_doubles(DataType::kFloat32, {0}, {}));
  m.initializer("scales", Tensor::from_doubles(DataType::kFloat32, {4}, {1.0, 1.2e-38, 3e13, 3e13}));
  m.node("Resize", {"x", "roi", "scales"}, {"r"});
  auto& pool = m.node("AveragePool", {"r"}, {"y"});
  OnnxModelBuilder::attr(pool, "kernel_shape", std::vector<int64_t>{3, 3});
  m.output("y", DataType::kFloat32);
  const auto t0 = std::chrono::steady_clock::now();
  auto e = build(m, graft::DeviceType::kCUDA);
  ASSERT_TRUE(e);
  auto ctx = e->create_context();
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
  std::map<std::string, Tensor> in{{"x", Tensor::from_doubles(DataType::kFloat32, {1, 2, 4, 4},
                                                              std::vector<double>(32, 0.5))}};
  auto out = run(**ctx, in);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(out.count("y"));
  const Tensor& y = out.at("y");
  ASSERT_EQ(y.rank(), 4);
  EXPECT_EQ(y.dims()[1], 0);
  EXPECT_EQ(y.numel(), 0);
  EXPECT_GT(y.dims()[2], int64_t{1} << 40) << "the spatial axes should stay huge";
  EXPECT_LT(secs, 30.0) << "building and running an empty-output model took " << secs << " s";
}

}  // namespace

#endif  // GRAFT_WITH_CUDA
