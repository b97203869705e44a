// Engines with a layer whose output size is known only after its kernel runs (NonZero,
// NonMaxSuppression, Unique: a "counted" layer on the GPU, CountedOutput in src/backends/cuda/cuda_ops.h).
// Against the CPU engine, exactly: the layers after the counted one see the real shape (Gather,
// Squeeze, Shape), the count changes from run to run within one input-shape set, limits given as
// graph inputs are read on the device, the build summary says why CUDA graphs are off (or hold only
// the layers before the counted one, replayed per shape set), and profiling does not wait on itself. The FP16 pass test needs no GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "graft/engine.h"
#include "graph/passes.h"
#include "graph/precision.h"
#include "onnx/importer.h"
#include "test_models.h"

#ifdef GRAFT_WITH_CUDA
#include <cuda_runtime.h>
#include <nlohmann/json.hpp>

#include "graft/cuda_engine.h"
#endif

namespace {

using namespace graft_cuda_test;
using graft::DeviceType;

// x[n] -> NonZero -> [1, k] -> Squeeze -> [k] -> Gather(x) -> Mul 2 -> y[k]; Shape(y) -> count[1].
OnnxModelBuilder nonzero_gather_model(int64_t n) {
  OnnxModelBuilder m(13);
  m.input("x", DataType::kFloat32, {n});
  m.initializer("axis0", Tensor::vector_int64({0}));
  Tensor two = Tensor::empty(DataType::kFloat32, {});
  two.data_as<float>()[0] = 2.0f;
  m.initializer("two", two);
  m.node("NonZero", {"x"}, {"nz"}, "nonzero");
  m.node("Squeeze", {"nz", "axis0"}, {"idx"}, "squeeze");
  m.node("Gather", {"x", "idx"}, {"picked"}, "gather");
  m.node("Mul", {"picked", "two"}, {"y"}, "double");
  m.node("Shape", {"y"}, {"count"}, "shape");
  m.output("y", DataType::kFloat32);
  m.output("count", DataType::kInt64);
  return m;
}

// A leading part before the counted layer: x[n] -> ReduceMax -> Mul 0.5 -> Sub(x, .) -> Relu -> r;
// Shape(x) -> sx (a host shape value, a graph output). Then NonZero(r) -> Squeeze -> idx[k], and
// Gather(x, idx) + Gather(r, idx) -> y[k] read the input and a device value of the leading part.
// Every step is exact in float32 (a max, a halving, one rounded subtraction), so CPU and GPU agree
// bit for bit.
[[maybe_unused]] OnnxModelBuilder leading_part_model(int64_t n) {  // used by the GPU-only tests
  OnnxModelBuilder m(13);
  m.input("x", DataType::kFloat32, {n});
  m.initializer("axis0", Tensor::vector_int64({0}));
  Tensor half = Tensor::empty(DataType::kFloat32, {});
  half.data_as<float>()[0] = 0.5f;
  m.initializer("half", half);
  auto& rm = m.node("ReduceMax", {"x"}, {"mx"}, "max");
  OnnxModelBuilder::attr(rm, "axes", std::vector<int64_t>{0});
  OnnxModelBuilder::attr(rm, "keepdims", int64_t{1});
  m.node("Mul", {"mx", "half"}, {"t"}, "halve");
  m.node("Sub", {"x", "t"}, {"d"}, "sub");
  m.node("Relu", {"d"}, {"r"}, "relu");
  m.node("Shape", {"x"}, {"sx"}, "shape_x");
  m.node("NonZero", {"r"}, {"nz"}, "nonzero");
  m.node("Squeeze", {"nz", "axis0"}, {"idx"}, "squeeze");
  m.node("Gather", {"x", "idx"}, {"px"}, "gather_x");
  m.node("Gather", {"r", "idx"}, {"pr"}, "gather_r");
  m.node("Add", {"px", "pr"}, {"y"}, "add");
  m.output("y", DataType::kFloat32);
  m.output("sx", DataType::kInt64);
  return m;
}

// The FP16 pass keeps NonZero in float32 (a zero test in float16 would flush tiny values) while
// the Gather and Mul after it become float16.
TEST(CountedOutputFp16Pass, KeepsNonZeroInFloat32) {
  auto g = graft::import_onnx_bytes(nonzero_gather_model(32).bytes(), "nonzero.onnx");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  ASSERT_TRUE(graft::infer_shapes(**g).is_ok());
  graft::PrecisionPolicy policy;
  policy.supports_fp16 = [](const graft::Node&) { return true; };
  auto converted = graft::convert_to_fp16(**g, policy);
  ASSERT_TRUE(converted.is_ok()) << converted.status().to_string();
  bool saw_nonzero = false, saw_fp16_mul = false;
  for (const auto& n : (*g)->nodes()) {
    if (n->op_type == "NonZero") {
      saw_nonzero = true;
      EXPECT_EQ(n->inputs[0]->desc.dtype, DataType::kFloat32);
    }
    if (n->op_type == "Mul") saw_fp16_mul = n->outputs[0]->desc.dtype == DataType::kFloat16;
  }
  EXPECT_TRUE(saw_nonzero);
  EXPECT_TRUE(saw_fp16_mul) << "the layers after NonZero should still become float16";
}

#ifdef GRAFT_WITH_CUDA

bool have_gpu() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return n > 0;
}

// x[n] with zeros where a uniform draw falls below `zeros` (the rest in [0.5, 1.5] or its negative).
Tensor sparse_vector(std::mt19937& rng, int64_t n, double zeros) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Tensor t = Tensor::empty(DataType::kFloat32, {n});
  for (int64_t i = 0; i < n; ++i) {
    const double v = 0.5 + u(rng);
    t.data_as<float>()[i] = u(rng) < zeros ? 0.0f : static_cast<float>(rng() & 1 ? v : -v);
  }
  return t;
}

#define SKIP_WITHOUT_GPU() \
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU visible: skipped"

// boxes [1, n, 4] and scores [1, classes, n] -> NonMaxSuppression -> selected [k, 3]; the kept
// boxes gathered from it -> kept_boxes [1, k, 4]. max_output and iou_threshold are initializers
// (`max_output` >= 0) or graph inputs (max_output < 0), which the host cannot read.
OnnxModelBuilder nms_gather_model(int64_t n, int64_t classes, int64_t max_output, float iou, float score) {
  OnnxModelBuilder m(13);
  m.input("boxes", DataType::kFloat32, {1, n, 4});
  m.input("scores", DataType::kFloat32, {1, classes, n});
  auto scalar = [](float v) {
    Tensor t = Tensor::empty(DataType::kFloat32, {1});
    t.data_as<float>()[0] = v;
    return t;
  };
  if (max_output >= 0) {
    m.initializer("max_output", Tensor::vector_int64({max_output}));
    m.initializer("iou", scalar(iou));
  } else {
    m.input("max_output", DataType::kInt64, {1});
    m.input("iou", DataType::kFloat32, {1});
  }
  m.initializer("score", scalar(score));
  m.initializer("box_column", Tensor::scalar_int64(2));
  m.node("NonMaxSuppression", {"boxes", "scores", "max_output", "iou", "score"}, {"selected"}, "nms");
  auto& col = m.node("Gather", {"selected", "box_column"}, {"box_index"}, "box_index");
  OnnxModelBuilder::attr(col, "axis", int64_t{1});
  auto& pick = m.node("Gather", {"boxes", "box_index"}, {"kept_boxes"}, "kept_boxes");
  OnnxModelBuilder::attr(pick, "axis", int64_t{1});
  m.output("selected", DataType::kInt64);
  m.output("kept_boxes", DataType::kFloat32);
  return m;
}

// Boxes clustered around a few centres (so suppression happens) with scores on 6 levels (so ties
// happen), corners as [y1, x1, y2, x2].
std::map<std::string, Tensor> nms_inputs(std::mt19937& rng, int64_t n, int64_t classes) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Tensor boxes = Tensor::empty(DataType::kFloat32, {1, n, 4});
  float* b = boxes.data_as<float>();
  for (int64_t i = 0; i < n; ++i) {
    const double cy = 0.2 * static_cast<double>(rng() % 5) + 0.05 * u(rng), cx = 0.2 * static_cast<double>(rng() % 5);
    const double h = 0.05 + 0.1 * u(rng), w = 0.05 + 0.1 * u(rng);
    b[i * 4 + 0] = static_cast<float>(cy);
    b[i * 4 + 1] = static_cast<float>(cx);
    b[i * 4 + 2] = static_cast<float>(cy + h);
    b[i * 4 + 3] = static_cast<float>(cx + w);
  }
  Tensor scores = Tensor::empty(DataType::kFloat32, {1, classes, n});
  for (int64_t i = 0; i < scores.numel(); ++i) scores.data_as<float>()[i] = static_cast<float>(rng() % 6) / 6.0f;
  return {{"boxes", boxes}, {"scores", scores}};
}

std::shared_ptr<graft::Engine> build(const OnnxModelBuilder& m, DeviceType dev, bool fp16 = false,
                                     std::string* summary = nullptr) {
  graft::BuilderConfig cfg;
  cfg.device = dev;
  cfg.fp16 = fp16;
  cfg.progress = [summary](const std::string& stage, const std::string& detail) {
    if (summary && stage == "cuda") *summary += detail + "\n";
  };
  auto e = graft::Engine::build_from_onnx_bytes(m.bytes(), cfg, "counted.onnx");
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  return e.is_ok() ? *e : nullptr;
}

// Same dtype, dims and bytes (on the host).
void expect_same(const Tensor& got_any, const Tensor& want, const std::string& what) {
  auto got = got_any.to_host();
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  ASSERT_EQ(got->dtype(), want.dtype()) << what;
  ASSERT_EQ(got->dims(), want.dims()) << what;
  EXPECT_EQ(std::memcmp(got->data(), want.data(), want.nbytes()), 0) << what << ": values differ";
}

// Runs `in` through both engines' contexts and compares every output exactly.
void compare_run(graft::ExecutionContext& cpu, graft::ExecutionContext& gpu, const std::map<std::string, Tensor>& in,
                 const std::string& what) {
  std::map<std::string, Tensor> want, got;
  auto cs = cpu.run(in, want);
  ASSERT_TRUE(cs.is_ok()) << cs.to_string();
  auto gs = gpu.run(in, got);
  ASSERT_TRUE(gs.is_ok()) << what << ": " << gs.to_string();
  for (const auto& [name, w] : want) {
    ASSERT_TRUE(got.count(name)) << name;
    expect_same(got.at(name), w, what + ", output " + name);
  }
}

// Runs host input `x` on the CPU context and its device copy on the GPU context (outputs allocated
// by the engines).
void run_device_input(graft::ExecutionContext& cpu, graft::ExecutionContext& gpu, const Tensor& x,
                      std::map<std::string, Tensor>* want, std::map<std::string, Tensor>* got) {
  auto dx = x.to_device();
  ASSERT_TRUE(dx.is_ok()) << dx.status().to_string();
  auto cs = cpu.run({{"x", x}}, *want);
  ASSERT_TRUE(cs.is_ok()) << cs.to_string();
  auto gs = gpu.run({{"x", *dx}}, *got);
  ASSERT_TRUE(gs.is_ok()) << gs.to_string();
}

class CountedOutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = std::random_device{}();
    rng_.seed(seed_);
  }
  uint32_t seed_ = 0;
  std::mt19937 rng_;
};

TEST_F(CountedOutputTest, NonZeroThenGatherUsesTheRealShape) {
  SKIP_WITHOUT_GPU();
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const int64_t n = 5000;
  auto model = nonzero_gather_model(n);
  std::string summary;
  auto cpu = build(model, DeviceType::kCPU);
  auto gpu = build(model, DeviceType::kCUDA, false, &summary);
  ASSERT_TRUE(cpu && gpu);
  std::printf("[ build    ] %s", summary.c_str());
  // Said once, in the build summary: CUDA graphs are off, and which layer is why.
  EXPECT_NE(summary.find("CUDA graphs off"), std::string::npos) << summary;
  EXPECT_NE(summary.find("'nonzero' (NonZero)"), std::string::npos) << summary;
  auto j = nlohmann::json::parse(gpu->describe_json());
  for (const auto& l : j["cuda"]["layers"])
    if (l["op_type"] == "NonZero") {
      EXPECT_EQ(l["device"], "cuda") << l.dump();
    }
  EXPECT_EQ(j["cuda"]["cuda_graphs"], false);

  auto cctx = cpu->create_context();
  auto gctx = gpu->create_context();
  ASSERT_TRUE(cctx.is_ok() && gctx.is_ok());
  // One input-shape set, counts that shrink and grow: later layers outgrow the first run's plan.
  for (double zeros : {0.8, 0.05, 1.0, 0.5, 0.0, 0.8})
    compare_run(**cctx, **gctx, {{"x", sparse_vector(rng_, n, zeros)}}, "zeros " + std::to_string(zeros));

  // Device input, no preallocated outputs: the outputs come back on the GPU with the real dims.
  std::map<std::string, Tensor> want, got;
  ASSERT_NO_FATAL_FAILURE(run_device_input(**cctx, **gctx, sparse_vector(rng_, n, 0.3), &want, &got));
  EXPECT_EQ(got.at("y").device(), DeviceType::kCUDA);
  expect_same(got.at("y"), want.at("y"), "device input, y");
  auto* cuda_ctx = dynamic_cast<graft::CudaExecutionContext*>(gctx->get());
  ASSERT_NE(cuda_ctx, nullptr);
  EXPECT_FALSE(cuda_ctx->last_run_used_cuda_graph());
  EXPECT_EQ(cuda_ctx->captured_graphs(), 0u);
}

// The layers before the first counted one are replayed from a CUDA graph per shape set (a
// detector's backbone before its NonMaxSuppression); the rest run eagerly after the replay, on the
// values the graph left (device buffers, host shape values, the input). Counts that grow make the
// later layers outgrow the plan: the plan is made again and the leading part captured again.
TEST_F(CountedOutputTest, LeadingLayersReplayFromACudaGraph) {
  SKIP_WITHOUT_GPU();
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const int64_t n = 4096;
  auto model = leading_part_model(n);
  std::string summary;
  auto cpu = build(model, DeviceType::kCPU);
  auto gpu = build(model, DeviceType::kCUDA, false, &summary);
  ASSERT_TRUE(cpu && gpu);
  EXPECT_NE(summary.find("CUDA graphs for the first"), std::string::npos) << summary;
  EXPECT_NE(summary.find("'nonzero' (NonZero)"), std::string::npos) << summary;
  auto j = nlohmann::json::parse(gpu->describe_json());
  const size_t graph_layers = j["cuda"]["cuda_graph_layers"].get<size_t>();
  const size_t n_layers = j["cuda"]["layers"].size();
  EXPECT_GT(graph_layers, 0u);
  EXPECT_LT(graph_layers, n_layers);
  auto cctx = cpu->create_context();
  auto gctx = gpu->create_context();
  ASSERT_TRUE(cctx.is_ok() && gctx.is_ok());
  auto* cuda_ctx = dynamic_cast<graft::CudaExecutionContext*>(gctx->get());
  ASSERT_NE(cuda_ctx, nullptr);
  int replays = 0;
  for (double zeros : {0.5, 0.9, 0.2, 0.0, 0.95, 0.5, 0.7, 0.1}) {
    compare_run(**cctx, **gctx, {{"x", sparse_vector(rng_, n, zeros)}}, "zeros " + std::to_string(zeros));
    const size_t replayed = cuda_ctx->last_run_graph_layers();
    EXPECT_TRUE(replayed == 0 || replayed == graph_layers) << replayed;
    replays += replayed == graph_layers;
  }
  // The first run plans; a grown count plans again; the rest replay.
  EXPECT_GE(replays, 4) << "the leading part was replayed in too few runs";
  EXPECT_EQ(cuda_ctx->captured_graphs(), 1u);
  // Device input, outputs allocated by the engine.
  std::map<std::string, Tensor> want, got;
  ASSERT_NO_FATAL_FAILURE(run_device_input(**cctx, **gctx, sparse_vector(rng_, n, 0.3), &want, &got));
  expect_same(got.at("y"), want.at("y"), "device input, y");
  expect_same(got.at("sx"), want.at("sx"), "device input, sx");
  EXPECT_EQ(cuda_ctx->last_run_graph_layers(), graph_layers);
  // Graphs off: the same results, eagerly.
  cuda_ctx->set_cuda_graphs(false);
  compare_run(**cctx, **gctx, {{"x", sparse_vector(rng_, n, 0.4)}}, "graphs off");
  EXPECT_EQ(cuda_ctx->last_run_graph_layers(), 0u);
}

// An empty result (nothing passes, NonZero counts 0) must not make the plan dirty: the same input
// replays the graph run after run instead of planning and capturing again, as Faster R-CNN did when
// an FPN level got no boxes (GRAFT_CUDA_GRAPH_TRACE says which happened).
TEST_F(CountedOutputTest, EmptyCountReplaysWithoutPlanningAgain) {
  SKIP_WITHOUT_GPU();
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const int64_t n = 1024;
  auto model = leading_part_model(n);
  auto cpu = build(model, DeviceType::kCPU);
  auto gpu = build(model, DeviceType::kCUDA);
  ASSERT_TRUE(cpu && gpu);
  setenv("GRAFT_CUDA_GRAPH_TRACE", "1", 1);  // read when the context is made
  auto gctx = gpu->create_context();
  unsetenv("GRAFT_CUDA_GRAPH_TRACE");
  auto cctx = cpu->create_context();
  ASSERT_TRUE(cctx.is_ok() && gctx.is_ok());
  // Every element negative: Relu(x - max / 2) is all zero, so y is empty.
  Tensor x = Tensor::empty(DataType::kFloat32, {n});
  std::uniform_real_distribution<float> u(-3.0f, -1.0f);
  for (int64_t i = 0; i < n; ++i) x.data_as<float>()[i] = u(rng_);
  testing::internal::CaptureStderr();
  for (int rep = 0; rep < 3; ++rep) compare_run(**cctx, **gctx, {{"x", x}}, "warm-up " + std::to_string(rep));
  (void)testing::internal::GetCapturedStderr();
  testing::internal::CaptureStderr();
  for (int rep = 0; rep < 3; ++rep) compare_run(**cctx, **gctx, {{"x", x}}, "run " + std::to_string(rep));
  const std::string trace = testing::internal::GetCapturedStderr();
  EXPECT_EQ(trace.find("memory plan made again"), std::string::npos) << trace;
  EXPECT_NE(trace.find("run replayed"), std::string::npos) << trace;
}

TEST_F(CountedOutputTest, NonMaxSuppressionThenGatherMatchesCpu) {
  SKIP_WITHOUT_GPU();
  SCOPED_TRACE("seed " + std::to_string(seed_));
  struct Case {
    int64_t n, classes, max_output;
    float iou, score;
    const char* label;
  };
  const Case cases[] = {
      {500, 3, 20, 0.5f, 0.2f, "3 classes, max 20"},
      {2000, 1, 1000, 0.4f, 0.0f, "one class, many kept"},
      {300, 2, 0, 0.5f, 0.0f, "max_output 0"},
      {300, 2, 50, 0.5f, 2.0f, "score threshold selects none"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    auto model = nms_gather_model(c.n, c.classes, c.max_output, c.iou, c.score);
    std::string summary;
    auto cpu = build(model, DeviceType::kCPU);
    auto gpu = build(model, DeviceType::kCUDA, false, &summary);
    ASSERT_TRUE(cpu && gpu);
    EXPECT_NE(summary.find("'nms' (NonMaxSuppression)"), std::string::npos) << summary;
    auto cctx = cpu->create_context();
    auto gctx = gpu->create_context();
    ASSERT_TRUE(cctx.is_ok() && gctx.is_ok());
    for (int rep = 0; rep < 3; ++rep)
      compare_run(**cctx, **gctx, nms_inputs(rng_, c.n, c.classes), "run " + std::to_string(rep));
  }
}

// max_output_boxes_per_class and iou_threshold as graph inputs: the engine cannot read them without
// copying tensor data to the host, so the output is sized for every box and the kernel reads the
// limits on the GPU. An iou_threshold outside [0, 1] comes back as a clear error, and the context
// stays usable.
TEST_F(CountedOutputTest, NonMaxSuppressionWithComputedLimits) {
  SKIP_WITHOUT_GPU();
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const int64_t n = 400, classes = 3;
  auto model = nms_gather_model(n, classes, -1, 0.0f, 0.1f);
  auto cpu = build(model, DeviceType::kCPU);
  auto gpu = build(model, DeviceType::kCUDA);
  ASSERT_TRUE(cpu && gpu);
  auto cctx = cpu->create_context();
  auto gctx = gpu->create_context();
  ASSERT_TRUE(cctx.is_ok() && gctx.is_ok());
  auto iou = [](float v) {
    Tensor t = Tensor::empty(DataType::kFloat32, {1});
    t.data_as<float>()[0] = v;
    return t;
  };
  for (int64_t max_output : {5, 0, 1000, -2, 60}) {
    auto in = nms_inputs(rng_, n, classes);
    in["max_output"] = Tensor::vector_int64({max_output});
    in["iou"] = iou(0.45f);
    compare_run(**cctx, **gctx, in, "max_output " + std::to_string(max_output));
  }
  auto in = nms_inputs(rng_, n, classes);
  in["max_output"] = Tensor::vector_int64({10});
  in["iou"] = iou(1.5f);
  std::map<std::string, Tensor> out;
  auto st = (*gctx)->run(in, out);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), graft::StatusCode::kInvalidArgument) << st.to_string();
  EXPECT_NE(st.to_string().find("iou_threshold"), std::string::npos) << st.to_string();
  in["iou"] = iou(0.5f);
  compare_run(**cctx, **gctx, in, "after the error");
}

// A counted layer synchronizes inside the run, so the profiler times it on the host instead of
// holding the stream behind its gate (which would wait for the host forever).
TEST_F(CountedOutputTest, ProfilingTimesTheCountedLayer) {
  SKIP_WITHOUT_GPU();
  auto gpu = build(nonzero_gather_model(1000), DeviceType::kCUDA);
  ASSERT_TRUE(gpu);
  auto gctx = gpu->create_context();
  ASSERT_TRUE(gctx.is_ok());
  auto* ctx = dynamic_cast<graft::CudaExecutionContext*>(gctx->get());
  ASSERT_NE(ctx, nullptr);
  ctx->set_profiling(true);
  std::map<std::string, Tensor> out;
  auto st = ctx->run({{"x", sparse_vector(rng_, 1000, 0.5)}}, out);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  bool timed = false;
  for (const auto& t : ctx->layer_timings())
    if (t.op_type == "NonZero") {
      timed = true;
      EXPECT_EQ(t.device, "cuda");
      EXPECT_GE(t.ms, 0.0);
    }
  EXPECT_TRUE(timed);
}

// In a float16 engine NonZero stays float32 (the count matches the CPU exactly); the Gather and
// Mul after it run in float16.
TEST_F(CountedOutputTest, Fp16EngineCountsInFloat32) {
  SKIP_WITHOUT_GPU();
  SCOPED_TRACE("seed " + std::to_string(seed_));
  auto model = nonzero_gather_model(3000);
  auto cpu = build(model, DeviceType::kCPU);
  auto gpu = build(model, DeviceType::kCUDA, true);
  ASSERT_TRUE(cpu && gpu);
  auto cctx = cpu->create_context();
  auto gctx = gpu->create_context();
  ASSERT_TRUE(cctx.is_ok() && gctx.is_ok());
  for (double zeros : {0.3, 0.9}) {
    Tensor x = sparse_vector(rng_, 3000, zeros);
    x.data_as<float>()[7] = 1e-30f;  // nonzero in float32, zero in float16
    std::map<std::string, Tensor> want, got;
    ASSERT_TRUE((*cctx)->run({{"x", x}}, want).is_ok());
    auto st = (*gctx)->run({{"x", x}}, got);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    expect_same(got.at("count"), want.at("count"), "count");
    auto y = got.at("y").to_host();
    ASSERT_TRUE(y.is_ok());
    EXPECT_LT(rel_err(*y, want.at("y")), 1e-2);
  }
}

// Unique sizes three of its four outputs by its count (CountedOutput::outputs) and one
// (inverse_indices) by the input: x[n] -> Unique -> y, idx, inv, cnt; Gather(y, inv) rebuilds x;
// Shape(cnt) is the count. Along an axis, with indices omitted: x[n, 3] -> Unique(axis 0,
// first-occurrence order) -> y, inv; Gather(y, inv, axis 0) rebuilds x.
OnnxModelBuilder unique_model(int64_t n, bool along_axis) {
  OnnxModelBuilder m(13);
  if (along_axis) {
    m.input("x", DataType::kFloat32, {n, 3});
    auto& u = m.node("Unique", {"x"}, {"y", "", "inv"}, "unique");
    OnnxModelBuilder::attr(u, "axis", int64_t{0});
    OnnxModelBuilder::attr(u, "sorted", int64_t{0});
    auto& g = m.node("Gather", {"y", "inv"}, {"recon"}, "rebuild");
    OnnxModelBuilder::attr(g, "axis", int64_t{0});
    m.output("y", DataType::kFloat32);
    m.output("inv", DataType::kInt64);
    m.output("recon", DataType::kFloat32);
    return m;
  }
  m.input("x", DataType::kFloat32, {n});
  m.node("Unique", {"x"}, {"y", "idx", "inv", "cnt"}, "unique");
  m.node("Gather", {"y", "inv"}, {"recon"}, "rebuild");
  m.node("Shape", {"cnt"}, {"u"}, "count");
  m.output("y", DataType::kFloat32);
  m.output("idx", DataType::kInt64);
  m.output("inv", DataType::kInt64);
  m.output("cnt", DataType::kInt64);
  m.output("recon", DataType::kFloat32);
  m.output("u", DataType::kInt64);
  return m;
}

// Values from `levels` choices (integers, so every level is exact), as many rows of 3 as `rows`.
Tensor few_levels(std::mt19937& rng, const std::vector<int64_t>& dims, int levels) {
  Tensor t = Tensor::empty(DataType::kFloat32, dims);
  const int64_t row = dims.size() > 1 ? dims[1] : 1;
  std::vector<float> protos(static_cast<size_t>(levels * row));
  for (auto& p : protos) p = static_cast<float>(static_cast<int>(rng() % 7) - 3);
  for (int64_t r = 0; r < t.numel() / row; ++r) {
    const int64_t p = static_cast<int64_t>(rng() % static_cast<unsigned>(levels));
    for (int64_t k = 0; k < row; ++k)
      t.data_as<float>()[r * row + k] = row > 1 ? protos[static_cast<size_t>(p * row + k)] : static_cast<float>(p) - 5.0f;
  }
  return t;
}

TEST_F(CountedOutputTest, UniqueSizesEveryOutputFromItsCount) {
  SKIP_WITHOUT_GPU();
  SCOPED_TRACE("seed " + std::to_string(seed_));
  for (bool along_axis : {false, true}) {
    SCOPED_TRACE(along_axis ? "along axis 0" : "flattened");
    const int64_t n = 3000;
    auto model = unique_model(n, along_axis);
    auto cpu = build(model, DeviceType::kCPU);
    auto gpu = build(model, DeviceType::kCUDA);
    ASSERT_TRUE(cpu && gpu);
    auto j = nlohmann::json::parse(gpu->describe_json());
    for (const auto& l : j["cuda"]["layers"])
      if (l["op_type"] == "Unique") {
        EXPECT_EQ(l["device"], "cuda") << l.dump();
      }
    auto cctx = cpu->create_context();
    auto gctx = gpu->create_context();
    ASSERT_TRUE(cctx.is_ok() && gctx.is_ok());
    // One input-shape set, counts that shrink and grow from run to run.
    for (int levels : {4, 60, 1, 2000, 9}) {
      const std::vector<int64_t> dims = along_axis ? std::vector<int64_t>{n, 3} : std::vector<int64_t>{n};
      compare_run(**cctx, **gctx, {{"x", few_levels(rng_, dims, levels)}}, std::to_string(levels) + " levels");
    }
  }
}

#endif  // GRAFT_WITH_CUDA

}  // namespace
