// CUDA kernels of src/ops/data_dependent/ (non_max_suppression.cu, non_zero.cu, unique.cu) against the
// CPU reference (run_node_cpu), exactly: the same count and the same int64 elements. These ops
// write a prefix of a buffer sized by CountedOutput::bound and report the count on the device, so
// the runner here plays the engine's part: it allocates the bound, poisons the output, the count
// and the scratch (a kernel must not rely on zeroed memory), runs, reads back the count, compares
// the prefix and checks that everything after it still holds the poison. Fresh random data each
// run; the seed is printed on failure.
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>

#include "cuda_kernel_harness.h"
#include "ops/attr_util.h"
#include "runtime/cpu_executor.h"

namespace graft::testing {
namespace {

// A device buffer of `bytes` filled with the byte `fill` (a poison), kept alive in `owned`.
void* filled_device_buffer(std::vector<std::unique_ptr<DevBuf>>& owned, size_t bytes, int fill) {
  owned.push_back(std::make_unique<DevBuf>(bytes));
  EXPECT_NE(owned.back()->p, nullptr);
  EXPECT_EQ(cudaMemset(owned.back()->p, fill, bytes ? bytes : 1), cudaSuccess);
  return owned.back()->p;
}

constexpr DataType kF32 = DataType::kFloat32;
constexpr DataType kF16 = DataType::kFloat16;
constexpr DataType kI64 = DataType::kInt64;

struct CountedCase {
  std::string op;
  std::vector<Tensor> inputs;  // host; for NMS, boxes and scores are converted to the tested dtype
  AttributeMap attrs;
  int opset = 11;
  std::string label;
  // Inputs the CUDA op sees as computed tensors rather than constants: the host cannot read them,
  // so the op sizes for the worst case and the kernel reads the value on the device.
  std::set<int> computed;
  // Expect the kernel to refuse the data (count -1) where the CPU reference fails.
  bool expect_invalid = false;
};

// Runs `c` with the inputs listed in `lowered` turned into `dt` (the reference reads their exact
// values back in float32).
void run_counted_case(const CountedCase& c, DataType dt, const std::set<int>& lowered, uint32_t seed) {
  SCOPED_TRACE("op " + c.op + " " + c.label + " dtype " + dtype_name(dt) + " seed " + std::to_string(seed));
  const cuda::CudaOp* op = cuda::find_cuda_op(c.op);
  ASSERT_NE(op, nullptr);
  ASSERT_NE(op->counted.bound, nullptr) << c.op << " has no counted output";

  LoweredInputs in = lower_float_inputs(c.inputs, dt, [&](size_t i) { return lowered.count(static_cast<int>(i)) > 0; });
  ASSERT_EQ(in.device.size(), c.inputs.size());
  const std::vector<Tensor>& dev_in_host = in.device;
  const std::vector<Tensor>& ref_in = in.reference;
  OneNode ref(c.op, ref_in);
  ref.node->attrs = c.attrs;
  ref.node->opset = c.opset;
  std::vector<const Tensor*> ref_ptrs;
  for (const Tensor& t : ref.inputs) ref_ptrs.push_back(t.defined() ? &t : nullptr);
  auto want = run_node_cpu(*ref.node, ref_ptrs);
  if (c.expect_invalid) {
    ASSERT_FALSE(want.is_ok()) << "the CPU reference accepted data the case calls invalid";
  } else {
    ASSERT_TRUE(want.is_ok()) << "CPU reference failed: " << want.status().to_string();
  }

  OneNode gpu(c.op, dev_in_host);
  gpu.node->attrs = c.attrs;
  gpu.node->opset = c.opset;
  gpu.node->outputs[0]->desc = TensorDesc(kI64, Shape{Dim(1), Dim(1)});  // rank and dtype: what supports() reads
  for (int i : c.computed) gpu.node->inputs[static_cast<size_t>(i)]->constant.reset();
  std::string why;
  ASSERT_TRUE(op->supports(*gpu.node, &why)) << "supports() rejected: " << why;

  std::vector<std::unique_ptr<DevBuf>> owned;
  auto dalloc = [&](size_t bytes, int fill) { return filled_device_buffer(owned, bytes, fill); };
  std::vector<Tensor> din;
  for (const Tensor& t : dev_in_host) {
    if (!t.defined()) {
      din.emplace_back();
      continue;
    }
    void* p = dalloc(t.nbytes(), 0);
    EXPECT_EQ(cudaMemcpy(p, t.data(), t.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
    din.push_back(Tensor::wrap(p, t.dtype(), t.dims(), DeviceType::kCUDA));
  }
  std::vector<const Tensor*> ins;
  for (auto& t : din) ins.push_back(t.defined() ? &t : nullptr);
  auto bound = op->counted.bound(*gpu.node, ins);
  ASSERT_TRUE(bound.is_ok()) << bound.status().to_string();
  const size_t out_bytes = static_cast<size_t>(numel_of(*bound)) * sizeof(int64_t);
  std::vector<Tensor> dout = {Tensor::wrap(dalloc(out_bytes, 0xA5), kI64, *bound, DeviceType::kCUDA)};
  auto* count_dev = static_cast<int64_t*>(dalloc(sizeof(int64_t), 0x5A));

  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  ExecContext ectx = op_exec_context(gpu.node, c.opset, stream, din, dout);
  cuda::CudaExec ex;
  ex.ctx = &ectx;
  ex.output_count = count_dev;
  if (op->workspace_bytes) {
    ex.workspace_size = op->workspace_bytes(*gpu.node, ins, {});
    if (ex.workspace_size) ex.workspace = dalloc(ex.workspace_size, 0xFF);
  }
  Status st = op->run(ex);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  cudaStreamDestroy(stream);
  int64_t count = 0;
  ASSERT_EQ(cudaMemcpy(&count, count_dev, sizeof count, cudaMemcpyDeviceToHost), cudaSuccess);
  std::vector<unsigned char> got(out_bytes);
  if (out_bytes) {
    ASSERT_EQ(cudaMemcpy(got.data(), dout[0].data(), out_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  }
  owned.clear();

  if (c.expect_invalid) {
    EXPECT_EQ(count, -1) << "the kernel should report invalid data with a count of -1";
    return;
  }
  const Tensor& w = (*want)[0];
  const int axis = op->counted.count_axis;
  ASSERT_EQ(w.rank(), static_cast<int64_t>(bound->size()));
  ASSERT_EQ(count, w.dims()[static_cast<size_t>(axis)]) << "count";
  for (size_t a = 0; a < bound->size(); ++a) {
    if (static_cast<int>(a) != axis) {
      ASSERT_EQ(w.dims()[a], (*bound)[a]) << "axis " << a;
    }
  }
  const int64_t n = w.numel();
  const int64_t* g = reinterpret_cast<const int64_t*>(got.data());
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(g[i], w.data_as<int64_t>()[i]) << "element " << i << " of " << n << " (dims "
                                               << TensorDesc(kI64, shape_from_values(w.dims())).to_string() << ")";
  }
  for (size_t b = static_cast<size_t>(n) * sizeof(int64_t); b < out_bytes; ++b)
    ASSERT_EQ(got[b], 0xA5) << "byte " << b << " past the real output was written";
}

// ---- NonMaxSuppression ---------------------------------------------------------------------------

struct NmsSpec {
  int64_t batches = 1, classes = 1, boxes = 16;
  int center = 0;
  int64_t max_output = 10;
  bool omit_max_output = false;
  float iou = 0.5f;         // NaN: input omitted
  float score = 0.0f;       // NaN: input omitted
  int score_levels = 0;     // > 0: scores quantized to this many values (many ties)
  double extent = 1.0;      // boxes lie in [0, extent]^2; smaller boxes overlap less
  bool nan_and_degenerate = false;  // some NaN scores, zero-area boxes, signed zeros
  bool clustered = false;           // boxes jittered around a few centres (heavy suppression)
  std::set<int> computed;
  std::string label;
};

CountedCase nms_case(std::mt19937& rng, const NmsSpec& s) {
  CountedCase c;
  c.op = "NonMaxSuppression";
  c.opset = 11;
  c.label = s.label;
  c.computed = s.computed;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Tensor boxes = Tensor::empty(kF32, {s.batches, s.boxes, 4});
  float* b = boxes.data_as<float>();
  std::vector<std::pair<double, double>> centres;
  for (int k = 0; k < 6; ++k) centres.push_back({u(rng), u(rng)});
  for (int64_t i = 0; i < s.batches * s.boxes; ++i) {
    double y = u(rng), x = u(rng);
    if (s.clustered) {
      const auto& ct = centres[rng() % centres.size()];
      y = ct.first + 0.03 * (u(rng) - 0.5);
      x = ct.second + 0.03 * (u(rng) - 0.5);
    }
    const double h = 0.02 + 0.2 * u(rng), w = 0.02 + 0.2 * u(rng);
    float* r = b + i * 4;
    if (s.center == 1) {
      r[0] = static_cast<float>(x * s.extent);
      r[1] = static_cast<float>(y * s.extent);
      r[2] = static_cast<float>(w);
      r[3] = static_cast<float>(h);
    } else {
      // Either diagonal pair of corners: the reference takes min/max per axis.
      const bool flip = rng() & 1;
      r[0] = static_cast<float>(y * s.extent + (flip ? h : 0));
      r[1] = static_cast<float>(x * s.extent);
      r[2] = static_cast<float>(y * s.extent + (flip ? 0 : h));
      r[3] = static_cast<float>(x * s.extent + w);
    }
    if (s.nan_and_degenerate && rng() % 13 == 0) r[2] = r[0];  // zero area: never suppresses
  }
  Tensor scores = Tensor::empty(kF32, {s.batches, s.classes, s.boxes});
  float* sc = scores.data_as<float>();
  for (int64_t i = 0; i < scores.numel(); ++i) {
    sc[i] = s.score_levels > 0 ? static_cast<float>(rng() % s.score_levels) / s.score_levels
                               : static_cast<float>(u(rng));
    if (s.nan_and_degenerate) {
      const unsigned k = rng() % 17;
      if (k == 0) sc[i] = std::numeric_limits<float>::quiet_NaN();
      if (k == 1) sc[i] = -0.0f;  // ties with +0.0 by box index
      if (k == 2) sc[i] = 0.0f;
    }
  }
  c.inputs = {boxes, scores};
  c.inputs.push_back(s.omit_max_output ? Tensor() : Tensor::vector_int64({s.max_output}));
  auto scalar = [](float v) {
    Tensor t = Tensor::empty(kF32, {1});
    t.data_as<float>()[0] = v;
    return t;
  };
  c.inputs.push_back(std::isnan(s.iou) ? Tensor() : scalar(s.iou));
  c.inputs.push_back(std::isnan(s.score) ? Tensor() : scalar(s.score));
  while (!c.inputs.empty() && !c.inputs.back().defined()) c.inputs.pop_back();
  c.attrs = attrs_of({{"center_point_box", int64_t{s.center}}});
  return c;
}

void run_nms_dtypes(const CountedCase& c, uint32_t seed) {
  run_counted_case(c, kF32, {0, 1}, seed);
  run_counted_case(c, kF16, {0, 1}, seed);
}

TEST(CudaDataDependent, NonMaxSuppressionMatchesReference) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<NmsSpec> specs = {
      {.label = "one class, 16 boxes"},
      {.batches = 2, .classes = 3, .boxes = 50, .score = 0.3f, .label = "2 batches x 3 classes, corners"},
      {.batches = 2, .classes = 3, .boxes = 50, .center = 1, .score = 0.3f, .label = "2 x 3, centre boxes"},
      {.classes = 2, .boxes = 2000, .max_output = 1000000, .iou = 0.3f, .score_levels = 8, .clustered = true,
       .label = "many boxes, 8 score levels (ties), clustered"},
      {.classes = 2, .boxes = 2000, .center = 1, .max_output = 1000000, .iou = 0.3f, .score_levels = 8,
       .clustered = true, .label = "many boxes, ties, centre boxes"},
      {.classes = 4, .boxes = 300, .max_output = 300, .iou = 0.0f, .score_levels = 3, .extent = 3.0,
       .label = "iou 0: any overlap suppresses, 3 score levels"},
      {.classes = 4, .boxes = 300, .max_output = 300, .iou = 1.0f, .score_levels = 3, .extent = 3.0,
       .label = "iou 1: nothing suppresses"},
      {.classes = 3, .boxes = 200, .score = 2.0f, .label = "score threshold above every score: none selected"},
      {.classes = 3, .boxes = 200, .max_output = 0, .score = 0.5f, .label = "max_output 0"},
      {.classes = 3, .boxes = 200, .max_output = -3, .score = 0.5f, .label = "max_output negative"},
      {.classes = 3, .boxes = 200, .omit_max_output = true, .score = 0.5f, .label = "max_output omitted"},
      {.batches = 3, .classes = 2, .boxes = 120, .max_output = 50, .iou = nan, .score = nan,
       .label = "iou and score threshold omitted"},
      {.classes = 5, .boxes = 257, .max_output = 40, .iou = 0.45f, .score_levels = 16, .nan_and_degenerate = true,
       .label = "NaN scores, signed zeros, zero-area boxes"},
      {.boxes = 5000, .max_output = 300, .score = 0.05f, .extent = 4.0,
       .label = "5000 boxes, one class (torchvision's batched form)"},
      {.batches = 2, .classes = 80, .boxes = 300, .max_output = 100, .iou = 0.6f, .score = 0.2f, .label = "80 classes"},
      // 8192 boxes: 8 MiB of bit matrix per class, so 32 classes per chunk: two chunks.
      {.classes = 40, .boxes = 8192, .max_output = 100, .score = 0.5f, .extent = 6.0, .label = "chunks of classes"},
      {.batches = 2, .classes = 3, .boxes = 400, .max_output = 25, .iou = 0.4f, .score = 0.1f, .score_levels = 5,
       .clustered = true, .computed = {2, 3, 4}, .label = "computed max_output and thresholds (read on the device)"},
  };
  for (const NmsSpec& s : specs) run_nms_dtypes(nms_case(rng, s), seed);
}

// A computed iou_threshold outside [0, 1] cannot be refused on the host: the kernel reports -1.
TEST(CudaDataDependent, NonMaxSuppressionReportsInvalidComputedThreshold) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (float iou : {1.5f, -0.25f, std::numeric_limits<float>::quiet_NaN()}) {
    NmsSpec s;
    s.boxes = 40, s.classes = 2, s.computed = {3}, s.label = "iou " + std::to_string(iou);
    CountedCase c = nms_case(rng, s);
    c.inputs[3].data_as<float>()[0] = iou;  // nms_case omits a NaN threshold: set it afterwards
    c.expect_invalid = true;
    run_counted_case(c, kF32, {0, 1}, seed);
  }
}

// ---- NonZero -------------------------------------------------------------------------------------

// Elements that are zero, "sign bit only" (-0.0 for floats, the most negative value for signed
// integers: zero and nonzero respectively), or random, in proportions set by `density`.
Tensor sparse_tensor(std::mt19937& rng, DataType dt, const std::vector<int64_t>& dims, double density) {
  Tensor t = Tensor::empty(dt, dims);
  const size_t es = dtype_size(dt);
  std::memset(t.data(), 0, t.nbytes());
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double r = u(rng);
    if (r >= density) continue;
    unsigned char* p = static_cast<unsigned char*>(t.data()) + static_cast<size_t>(i) * es;
    if (r < density * 0.2 && dt != DataType::kBool) {
      p[es - 1] = 0x80;  // little-endian: the top bit alone
    } else if (dt == DataType::kBool) {
      p[0] = 1;
    } else if (dtype_is_float(dt) && r < density * 0.3) {
      t.set(i, r < density * 0.25 ? std::numeric_limits<double>::quiet_NaN() : 1e-30);  // NaN, tiny
    } else {
      for (size_t k = 0; k < es; ++k) p[k] = static_cast<unsigned char>(rng());
    }
  }
  return t;
}

TEST(CudaDataDependent, NonZeroMatchesReferenceForEveryDtype) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const std::vector<DataType> dtypes = {
      DataType::kFloat32, DataType::kFloat16, DataType::kFloat64, DataType::kBFloat16, DataType::kInt8,
      DataType::kUInt8,   DataType::kInt16,   DataType::kUInt16,  DataType::kInt32,    DataType::kUInt32,
      DataType::kInt64,   DataType::kUInt64,  DataType::kBool};
  const std::vector<std::vector<int64_t>> shapes = {
      {}, {0}, {7}, {3, 0, 2}, {5, 17}, {2, 3, 4, 5}, {1, 2, 1, 3, 1, 2, 1, 8}, {4096 * 3 + 5}, {300, 700}};
  for (DataType dt : dtypes)
    for (const auto& dims : shapes)
      for (double density : {0.0, 0.1, 0.6, 1.0}) {
        CountedCase c;
        c.op = "NonZero";
        c.opset = 13;
        c.inputs = {sparse_tensor(rng, dt, dims, density)};
        c.label = TensorDesc(dt, shape_from_values(dims)).to_string() + " density " + std::to_string(density);
        run_counted_case(c, dt, {}, seed);
      }
}

// ---- Unique --------------------------------------------------------------------------------------
//
// Unique has four outputs, three of them sized by the count (CountedOutput::outputs): the runner
// sizes each from the op's bounds, poisons all of them, and checks each real output (the bound
// with its count axis replaced by the count) byte for byte against the CPU reference, Y's bits
// included (a group keeps its first occurrence's -0 or NaN payload), and the bytes past it.

struct UniqueCase {
  Tensor x;
  int64_t sorted = 1;
  std::optional<int64_t> axis;
  size_t outputs = 4;
  int omit = -1;  // an optional output left out (empty name)
  std::string label;
};

void run_unique_case(const UniqueCase& c, uint32_t seed) {
  SCOPED_TRACE("Unique " + c.label + " " + TensorDesc(c.x.dtype(), shape_from_values(c.x.dims())).to_string() +
               " sorted " + std::to_string(c.sorted) + (c.axis ? " axis " + std::to_string(*c.axis) : " flattened") +
               " outputs " + std::to_string(c.outputs) + " omit " + std::to_string(c.omit) + " seed " +
               std::to_string(seed));
  const cuda::CudaOp* op = cuda::find_cuda_op("Unique");
  ASSERT_NE(op, nullptr);
  ASSERT_NE(op->counted.outputs, nullptr) << "Unique sizes every output";
  auto setup = [&](OneNode& n) {
    n.node->attrs.set("sorted", c.sorted);
    if (c.axis) n.node->attrs.set("axis", *c.axis);
    n.node->opset = 11;
    if (c.omit >= 0) n.node->outputs[static_cast<size_t>(c.omit)] = nullptr;
  };
  OneNode ref("Unique", {c.x}, c.outputs);
  setup(ref);
  auto want = run_node_cpu(*ref.node, {&ref.inputs[0]});
  ASSERT_TRUE(want.is_ok()) << "CPU reference failed: " << want.status().to_string();

  OneNode gpu("Unique", {c.x}, c.outputs);
  setup(gpu);
  for (size_t o = 0; o < c.outputs; ++o)
    if (gpu.node->outputs[o])
      gpu.node->outputs[o]->desc = TensorDesc(o == 0 ? c.x.dtype() : kI64, Shape{Dim(1)});  // dtypes: what supports() reads
  std::string why;
  ASSERT_TRUE(op->supports(*gpu.node, &why)) << "supports() rejected: " << why;

  std::vector<std::unique_ptr<DevBuf>> owned;
  auto dalloc = [&](size_t bytes, int fill) { return filled_device_buffer(owned, bytes, fill); };
  void* xp = dalloc(c.x.nbytes(), 0);
  ASSERT_EQ(cudaMemcpy(xp, c.x.data(), c.x.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
  std::vector<Tensor> din = {Tensor::wrap(xp, c.x.dtype(), c.x.dims(), DeviceType::kCUDA)};
  std::vector<const Tensor*> ins = {&din[0]};
  auto bounds = op->counted.outputs(*gpu.node, ins);
  ASSERT_TRUE(bounds.is_ok()) << bounds.status().to_string();
  ASSERT_EQ(bounds->size(), c.outputs);

  std::vector<Tensor> dout(c.outputs);
  std::vector<size_t> out_bytes(c.outputs, 0);
  for (size_t o = 0; o < c.outputs; ++o) {
    if (!gpu.node->outputs[o]) continue;
    const DataType dt = o == 0 ? c.x.dtype() : kI64;
    out_bytes[o] = static_cast<size_t>(numel_of((*bounds)[o].dims)) * dtype_size(dt);
    dout[o] = Tensor::wrap(dalloc(out_bytes[o], 0xA5), dt, (*bounds)[o].dims, DeviceType::kCUDA);
  }
  auto* count_dev = static_cast<int64_t*>(dalloc(sizeof(int64_t), 0x5A));
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  ExecContext ectx = op_exec_context(gpu.node, 11, stream, din, dout);
  for (size_t o = 0; o < c.outputs; ++o)
    if (!gpu.node->outputs[o]) ectx.outputs[o] = nullptr;
  cuda::CudaExec ex;
  ex.ctx = &ectx;
  ex.output_count = count_dev;
  ASSERT_NE(op->workspace_bytes, nullptr);
  ex.workspace_size = op->workspace_bytes(*gpu.node, ins, {});
  if (ex.workspace_size) ex.workspace = dalloc(ex.workspace_size, 0xFF);
  Status st = op->run(ex);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  cudaStreamDestroy(stream);
  int64_t count = 0;
  ASSERT_EQ(cudaMemcpy(&count, count_dev, sizeof count, cudaMemcpyDeviceToHost), cudaSuccess);
  std::vector<std::vector<unsigned char>> got(c.outputs);
  for (size_t o = 0; o < c.outputs; ++o) {
    got[o].resize(out_bytes[o]);
    if (out_bytes[o]) {
      ASSERT_EQ(cudaMemcpy(got[o].data(), dout[o].data(), out_bytes[o], cudaMemcpyDeviceToHost), cudaSuccess);
    }
  }
  owned.clear();

  for (size_t o = 0; o < c.outputs; ++o) {
    if (!gpu.node->outputs[o]) continue;
    SCOPED_TRACE("output " + std::to_string(o));
    const Tensor& w = (*want)[o];
    std::vector<int64_t> dims = (*bounds)[o].dims;
    if ((*bounds)[o].count_axis >= 0) dims[static_cast<size_t>((*bounds)[o].count_axis)] = count;
    ASSERT_EQ(dims, w.dims()) << "count " << count;
    const size_t n = w.nbytes();
    ASSERT_LE(n, out_bytes[o]);
    for (size_t b = 0; b < n; ++b) {
      ASSERT_EQ(got[o][b], static_cast<const unsigned char*>(w.data())[b])
          << "byte " << b << " (element " << b / dtype_size(w.dtype()) << ")";
    }
    for (size_t b = n; b < out_bytes[o]; ++b) ASSERT_EQ(got[o][b], 0xA5) << "byte " << b << " past the real output was written";
  }
}

// Values from a small set, so that groups form: for floats both zeros and NaNs of several bit
// patterns (one group each), infinities; for integers a few small values and the extremes.
void fill_few_values(std::mt19937& rng, Tensor& t, int64_t i, unsigned pick) {
  const DataType dt = t.dtype();
  if (dt == DataType::kBool) {
    static_cast<uint8_t*>(t.data())[i] = static_cast<uint8_t>(pick & 1);
    return;
  }
  if (dtype_is_float(dt)) {
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    const double vals[] = {-2.5, -1.0, 0.0, 0.5, 1.0, 3.0, nan, inf, -inf, 0.25};
    const double v = vals[pick % 10];
    t.set(i, v == 0.0 && (rng() & 1) ? -0.0 : v);
    if (std::isnan(v) && dt == DataType::kFloat32) {
      // Another NaN payload and sign: equal to every NaN, its own bits kept when first.
      static_cast<uint32_t*>(t.data())[i] = (rng() & 1 ? 0xFFC00000u : 0x7FC00000u) | (rng() & 0xFFu);
    }
    return;
  }
  if (dt == DataType::kInt64 && pick % 10 >= 8) {  // the extremes, beyond double's exact range
    t.data_as<int64_t>()[i] = pick % 10 == 8 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
    return;
  }
  const int64_t ivals[] = {-3, -1, 0, 1, 2, 7, 100, -100};
  int64_t v = ivals[pick % 8];
  if (dt == DataType::kUInt8 && v < 0) v = -v;
  t.set(i, static_cast<double>(v));
}

// Flattened: `vals` distinct candidates per element (duplicates for small `vals`).
Tensor few_values(std::mt19937& rng, DataType dt, const std::vector<int64_t>& dims, unsigned vals) {
  Tensor t = Tensor::empty(dt, dims);
  for (int64_t i = 0; i < t.numel(); ++i) fill_few_values(rng, t, i, static_cast<unsigned>(rng() % vals));
  return t;
}

// Along `axis`: each slice copies one of `protos` random slices (zeros with a random sign, so
// slices that differ only in -0 and +0 still group), so equal slices recur.
Tensor repeated_slices(std::mt19937& rng, DataType dt, const std::vector<int64_t>& dims, int64_t axis, int protos) {
  Tensor t = Tensor::empty(dt, dims);
  const AxisView v = axis_view(dims, axis, false);
  std::vector<unsigned> picks(static_cast<size_t>(protos * v.outer * v.inner));
  for (auto& p : picks) p = static_cast<unsigned>(rng() % 10);
  std::vector<int> proto_of(static_cast<size_t>(v.n));
  for (auto& p : proto_of) p = static_cast<int>(rng() % protos);
  for (int64_t e = 0; e < t.numel(); ++e) {
    const int64_t in = e % v.inner, s = (e / v.inner) % v.n, o = e / (v.inner * v.n);
    fill_few_values(rng, t, e, picks[static_cast<size_t>((proto_of[static_cast<size_t>(s)] * v.outer + o) * v.inner + in)]);
  }
  return t;
}

TEST(CudaDataDependent, UniqueFlattenedMatchesReference) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {1}, {7}, {50}, {3, 4, 5}, {2000}};
  for (DataType dt : {kF32, kF16, kI64})
    for (const auto& dims : shapes)
      for (int64_t sorted : {1, 0})
        for (unsigned vals : {3u, 10u}) {
          UniqueCase c;
          c.x = few_values(rng, dt, dims, vals);
          c.sorted = sorted;
          c.label = std::to_string(vals) + " values";
          run_unique_case(c, seed);
        }
}

TEST(CudaDataDependent, UniqueAlongAnAxisMatchesReference) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct AxisShape {
    std::vector<int64_t> dims;
    int64_t axis;
  };
  const std::vector<AxisShape> shapes = {{{6, 3}, 0},    {{6, 3}, 1},    {{4, 5, 2}, 1}, {{4, 5, 2}, -1},
                                         {{2, 9, 3}, 0}, {{3, 0, 2}, 0}, {{0, 4}, 0},    {{40, 2}, 0}};
  for (DataType dt : {kF32, kF16, kI64})
    for (const AxisShape& sh : shapes)
      for (int64_t sorted : {1, 0}) {
        UniqueCase c;
        const int64_t axis = sh.axis < 0 ? sh.axis + static_cast<int64_t>(sh.dims.size()) : sh.axis;
        c.x = repeated_slices(rng, dt, sh.dims, axis, 3);
        c.sorted = sorted;
        c.axis = sh.axis;
        c.label = "3 prototype slices";
        run_unique_case(c, seed);
      }
}

TEST(CudaDataDependent, UniqueOptionalOutputsAndOtherDtypes) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  // Fewer outputs, and one left out in the middle.
  for (size_t outputs : {1, 2, 3}) {
    UniqueCase c;
    c.x = few_values(rng, kF32, {30}, 6);
    c.outputs = outputs;
    c.label = "fewer outputs";
    run_unique_case(c, seed);
  }
  for (int omit : {1, 2, 3}) {
    UniqueCase c;
    c.x = repeated_slices(rng, kI64, {5, 7}, 1, 3);
    c.axis = 1;
    c.omit = omit;
    c.label = "one output omitted";
    run_unique_case(c, seed);
  }
  for (DataType dt : {DataType::kFloat64, DataType::kBFloat16, DataType::kInt32, DataType::kInt8, DataType::kUInt8,
                      DataType::kBool})
    for (int64_t sorted : {1, 0}) {
      UniqueCase c;
      c.x = few_values(rng, dt, {3, 11}, 6);
      c.sorted = sorted;
      c.label = "other dtypes";
      run_unique_case(c, seed);
      UniqueCase a = c;
      a.x = repeated_slices(rng, dt, {3, 11}, 0, 2);
      a.axis = 0;
      run_unique_case(a, seed);
    }
}

// Many elements over few values (large groups) and many distinct ones (few duplicates).
TEST(CudaDataDependent, UniqueLargeInputs) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (DataType dt : {kF32, kI64})
    for (int64_t sorted : {1, 0}) {
      UniqueCase c;
      c.x = few_values(rng, dt, {30000}, 10);
      c.sorted = sorted;
      c.label = "30000 elements, 10 values";
      run_unique_case(c, seed);
      UniqueCase d;
      d.x = Tensor::empty(dt, {20000});
      for (int64_t i = 0; i < d.x.numel(); ++i) d.x.set(i, static_cast<double>(rng() % 15000) - 7000.0);
      d.sorted = sorted;
      d.label = "20000 elements over 15000 values";
      run_unique_case(d, seed);
    }
}

// A static input past the pairwise bound stays on the CPU reference, and supports() says why.
TEST(CudaDataDependent, UniqueRefusesInputsPastItsBound) {
  const cuda::CudaOp* op = cuda::find_cuda_op("Unique");
  ASSERT_NE(op, nullptr);
  OneNode n("Unique", {Tensor::empty(kF32, {300000})}, 4);
  n.node->outputs[0]->desc = TensorDesc(kF32, Shape{Dim(1)});
  for (size_t o = 1; o < 4; ++o) n.node->outputs[o]->desc = TensorDesc(kI64, Shape{Dim(1)});
  std::string why;
  EXPECT_FALSE(op->supports(*n.node, &why));
  EXPECT_NE(why.find("the CPU reference runs larger inputs"), std::string::npos) << why;
}

}  // namespace
}  // namespace graft::testing
