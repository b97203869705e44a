// RNN, LSTM and GRU on CUDA (src/ops/recurrent/recurrent.cu) against the CPU reference
// (src/ops/recurrent/recurrent.cpp): every direction, with and without B, sequence_lens (int32 and
// int64, a length of 0 included) and initial states, LSTM peepholes and input_forget, layout 1,
// GRU's linear_before_reset, clip, non-default activation lists with their alpha / beta, fewer
// outputs and a left-out Y. float32, float16 and bfloat16; fresh random shapes and data each run.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cuda_kernel_harness.h"

namespace graft::testing {
namespace {

constexpr DataType kF32 = DataType::kFloat32;
constexpr DataType kI32 = DataType::kInt32;
constexpr DataType kI64 = DataType::kInt64;

struct Spec {
  explicit Spec(std::string o) : op(std::move(o)) {}
  std::string op;  // RNN, LSTM, GRU
  std::string direction = "forward";
  int64_t layout = 0;
  bool bias = false, lens = false, initial = false, peephole = false;  // peephole: LSTM's P
  double clip = 0;                                                     // 0: no clip attribute
  bool linear_before_reset = false, input_forget = false;
  std::vector<std::string> acts;  // empty: the defaults
  std::vector<float> alphas, betas;
  size_t outputs = 0;     // 0: every output the op has
  DataType lens_dt = kI32;
  bool zero_len = false;  // batch entry 1 gets length 0 (the batch is then at least 2)
  bool hidden_attr = true;
};

int64_t gates_of(const std::string& op) { return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1; }

int64_t draw(std::mt19937& rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

// A case of random extents (seq 1..7, batch 1..4, input 3..9, hidden 2..8) and random inputs.
KernelCase make_case(const Spec& s, std::mt19937& rng) {
  const int64_t S = draw(rng, 1, 7), N = draw(rng, s.zero_len ? 2 : 1, 4), I = draw(rng, 3, 9), H = draw(rng, 2, 8);
  const int64_t D = s.direction == "bidirectional" ? 2 : 1, G = gates_of(s.op);
  const bool lstm = s.op == "LSTM";
  KernelCase c;
  c.op = s.op;
  c.num_outputs = s.outputs ? s.outputs : lstm ? 3 : 2;
  Tensor X = rnd(rng, s.layout ? std::vector<int64_t>{N, S, I} : std::vector<int64_t>{S, N, I});
  Tensor W = rnd(rng, {D, G * H, I}, -0.7, 0.7);
  Tensor R = rnd(rng, {D, G * H, H}, -0.7, 0.7);
  Tensor B = s.bias ? rnd(rng, {D, 2 * G * H}, -0.5, 0.5) : Tensor();
  Tensor lens;
  std::string lens_text;
  if (s.lens) {
    std::vector<double> l;
    for (int64_t b = 0; b < N; ++b) {
      l.push_back(s.zero_len && b == 1 ? 0.0 : static_cast<double>(draw(rng, 1, S)));
      lens_text += (b ? "," : "") + std::to_string(static_cast<int64_t>(l.back()));
    }
    lens = Tensor::from_doubles(s.lens_dt, {N}, l);
  }
  const std::vector<int64_t> state = s.layout ? std::vector<int64_t>{N, D, H} : std::vector<int64_t>{D, N, H};
  Tensor h0 = s.initial ? rnd(rng, state) : Tensor();
  Tensor c0 = s.initial && lstm ? rnd(rng, state) : Tensor();
  Tensor P = s.peephole && lstm ? rnd(rng, {D, 3 * H}, -0.5, 0.5) : Tensor();
  c.inputs = {X, W, R, B, lens, h0};
  if (lstm) {
    c.inputs.push_back(c0);
    c.inputs.push_back(P);
  }
  while (!c.inputs.back().defined()) c.inputs.pop_back();

  if (s.hidden_attr) c.attrs.set("hidden_size", H);
  c.attrs.set("direction", s.direction);
  if (s.layout) c.attrs.set("layout", s.layout);
  if (s.clip > 0) c.attrs.set("clip", static_cast<float>(s.clip));
  if (s.op == "GRU") c.attrs.set("linear_before_reset", int64_t{s.linear_before_reset ? 1 : 0});
  if (lstm && s.input_forget) c.attrs.set("input_forget", int64_t{1});
  if (!s.acts.empty()) c.attrs.set("activations", s.acts);
  if (!s.alphas.empty()) c.attrs.set("activation_alpha", s.alphas);
  if (!s.betas.empty()) c.attrs.set("activation_beta", s.betas);

  c.label = s.direction + " layout " + std::to_string(s.layout) + (s.bias ? " B" : "") +
            (s.lens ? " lens [" + lens_text + "] " + dtype_name(s.lens_dt) : "") + (s.initial ? " initial" : "") +
            (s.peephole && lstm ? " P" : "") + (s.clip > 0 ? " clip " + std::to_string(s.clip) : "") +
            (s.linear_before_reset ? " linear_before_reset" : "") + (s.input_forget ? " input_forget" : "") +
            (s.acts.empty() ? "" : " custom activations") + " outputs " + std::to_string(c.num_outputs) + " seq " +
            std::to_string(S) + " batch " + std::to_string(N) + " input " + std::to_string(I) + " hidden " +
            std::to_string(H);
  return c;
}

// The case in float32, float16 and bfloat16, each on fresh shapes and data.
void run_spec(const Spec& s) {
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  run_float_dtypes(make_case(s, rng), seed, /*bf16=*/true);
}

// Every direction, bare and with B, sequence_lens and initial states (and P for LSTM).
void run_directions(const Spec& base) {
  for (const char* dir : {"forward", "reverse", "bidirectional"})
    for (bool full : {false, true}) {
      Spec s = base;
      s.direction = dir;
      s.bias = s.lens = s.initial = s.peephole = full;
      run_spec(s);
    }
}

// ---- RNN ----------------------------------------------------------------------------------------

TEST(CudaRecurrent, RnnDirections) {
  GRAFT_REQUIRE_GPU();
  ASSERT_NE(cuda::find_cuda_op("RNN"), nullptr);
  run_directions(Spec{"RNN"});
}

TEST(CudaRecurrent, RnnOptionalInputsOneByOne) {
  GRAFT_REQUIRE_GPU();
  for (int which = 0; which < 3; ++which) {
    Spec s{"RNN"};
    s.direction = which == 1 ? "reverse" : "forward";
    s.bias = which == 0;
    s.lens = which == 1;
    s.initial = which == 2;
    run_spec(s);
  }
}

TEST(CudaRecurrent, RnnLayout1ClipActivations) {
  GRAFT_REQUIRE_GPU();
  Spec s{"RNN"};
  s.direction = "bidirectional";
  s.layout = 1;
  s.bias = s.lens = s.initial = true;
  s.clip = 0.6;
  s.acts = {"Relu", "LeakyRelu"};
  s.alphas = {0.1f};
  run_spec(s);
  // One function for a bidirectional node (both directions use it), without hidden_size.
  Spec one{"RNN"};
  one.direction = "bidirectional";
  one.acts = {"Softsign"};
  one.hidden_attr = false;
  one.lens = true;
  run_spec(one);
}

TEST(CudaRecurrent, RnnEveryActivation) {
  GRAFT_REQUIRE_GPU();
  struct Fn {
    const char* name;
    std::vector<float> alpha, beta;
  };
  const std::vector<Fn> fns = {{"Relu", {}, {}},          {"Tanh", {}, {}},
                               {"Sigmoid", {}, {}},       {"Affine", {0.5f}, {0.1f}},
                               {"LeakyRelu", {0.2f}, {}}, {"ThresholdedRelu", {0.15f}, {}},
                               {"ScaledTanh", {0.9f}, {1.3f}}, {"HardSigmoid", {0.3f}, {0.4f}},
                               {"Elu", {0.7f}, {}},       {"Softsign", {}, {}},
                               {"Softplus", {}, {}},      {"hardsigmoid", {}, {}}};  // names are case-blind
  for (const Fn& f : fns) {
    Spec s{"RNN"};
    s.direction = "reverse";
    s.bias = s.initial = true;
    s.acts = {f.name};
    s.alphas = f.alpha;
    s.betas = f.beta;
    run_spec(s);
  }
}

// ---- LSTM ---------------------------------------------------------------------------------------

TEST(CudaRecurrent, LstmDirections) {
  GRAFT_REQUIRE_GPU();
  ASSERT_NE(cuda::find_cuda_op("LSTM"), nullptr);
  run_directions(Spec{"LSTM"});
}

TEST(CudaRecurrent, LstmPeepholesInputForgetClip) {
  GRAFT_REQUIRE_GPU();
  for (bool input_forget : {false, true})
    for (const char* dir : {"forward", "bidirectional"}) {
      Spec s{"LSTM"};
      s.direction = dir;
      s.peephole = true;
      s.initial = true;
      s.input_forget = input_forget;
      s.clip = 0.8;
      run_spec(s);
    }
}

TEST(CudaRecurrent, LstmLayout1) {
  GRAFT_REQUIRE_GPU();
  for (const char* dir : {"forward", "reverse", "bidirectional"}) {
    Spec s{"LSTM"};
    s.direction = dir;
    s.layout = 1;
    s.bias = s.lens = s.initial = s.peephole = true;
    run_spec(s);
  }
}

TEST(CudaRecurrent, LstmActivations) {
  GRAFT_REQUIRE_GPU();
  Spec s{"LSTM"};
  s.direction = "bidirectional";
  s.bias = s.lens = s.initial = s.peephole = true;
  s.acts = {"HardSigmoid", "ScaledTanh", "Softsign", "Sigmoid", "Elu", "Tanh"};
  s.alphas = {0.25f, 0.8f, 0.6f};  // HardSigmoid, ScaledTanh, Elu in turn
  s.betas = {0.45f, 1.2f};         // HardSigmoid, ScaledTanh
  run_spec(s);
}

TEST(CudaRecurrent, LstmFewerOutputs) {
  GRAFT_REQUIRE_GPU();
  for (size_t outputs : {size_t{1}, size_t{2}}) {
    Spec s{"LSTM"};
    s.direction = "bidirectional";
    s.bias = s.lens = s.initial = true;
    s.outputs = outputs;
    run_spec(s);
  }
}

// ---- GRU ----------------------------------------------------------------------------------------

TEST(CudaRecurrent, GruDirections) {
  GRAFT_REQUIRE_GPU();
  ASSERT_NE(cuda::find_cuda_op("GRU"), nullptr);
  run_directions(Spec{"GRU"});
}

TEST(CudaRecurrent, GruLinearBeforeReset) {
  GRAFT_REQUIRE_GPU();
  for (const char* dir : {"forward", "reverse", "bidirectional"})
    for (bool full : {false, true}) {
      Spec s{"GRU"};
      s.direction = dir;
      s.linear_before_reset = true;
      s.bias = s.lens = s.initial = full;
      run_spec(s);
    }
}

TEST(CudaRecurrent, GruLayout1ClipActivations) {
  GRAFT_REQUIRE_GPU();
  for (bool lbr : {false, true}) {
    Spec s{"GRU"};
    s.direction = "bidirectional";
    s.layout = 1;
    s.bias = s.lens = s.initial = true;
    s.linear_before_reset = lbr;
    s.clip = 0.7;
    s.acts = {"HardSigmoid", "Softsign", "Sigmoid", "Affine"};
    s.alphas = {0.3f, 0.9f};  // HardSigmoid, Affine
    s.betas = {0.5f, -0.2f};
    run_spec(s);
  }
}

// ---- all three ----------------------------------------------------------------------------------

// A sequence of length 0 (Y all 0, Y_h and Y_c 0 rather than the initial state) and int64 lengths.
TEST(CudaRecurrent, ZeroLengthAndInt64Lengths) {
  GRAFT_REQUIRE_GPU();
  for (const char* op : {"RNN", "LSTM", "GRU"})
    for (const char* dir : {"forward", "bidirectional"}) {
      Spec s{op};
      s.direction = dir;
      s.bias = s.lens = s.initial = s.peephole = true;
      s.zero_len = true;
      s.lens_dt = kI64;
      run_spec(s);
    }
}

// Y left out (an empty output name reaches the op as a null output): Y_h and Y_c still right.
void run_without_y(const KernelCase& c, uint32_t seed) {
  SCOPED_TRACE("op " + c.op + " " + c.label + " without Y, seed " + std::to_string(seed));
  const cuda::CudaOp* op = cuda::find_cuda_op(c.op);
  ASSERT_NE(op, nullptr);
  OneNode ref(c.op, c.inputs, c.num_outputs);
  ref.node->attrs = c.attrs;
  auto expect = ref.run(c.opset);
  ASSERT_TRUE(expect.is_ok()) << expect.status().to_string();

  OneNode gpu(c.op, c.inputs, c.num_outputs);
  gpu.node->attrs = c.attrs;
  gpu.node->opset = c.opset;
  for (size_t o = 1; o < c.num_outputs; ++o)
    gpu.node->outputs[o]->desc = TensorDesc(kF32, shape_from_values(expect.value()[o].dims()));
  gpu.node->outputs[0] = nullptr;
  std::string why;
  ASSERT_TRUE(op->supports(*gpu.node, &why)) << why;

  std::vector<std::unique_ptr<DevBuf>> bufs;
  auto upload = [&](const Tensor& t) {
    bufs.push_back(std::make_unique<DevBuf>(t.nbytes()));
    EXPECT_NE(bufs.back()->p, nullptr);
    EXPECT_EQ(cudaMemcpy(bufs.back()->p, t.data(), t.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
    return Tensor::wrap(bufs.back()->p, t.dtype(), t.dims(), DeviceType::kCUDA);
  };
  std::vector<Tensor> din;
  for (const Tensor& t : c.inputs) din.push_back(t.defined() ? upload(t) : Tensor());
  std::vector<Tensor> dout(c.num_outputs);
  for (size_t o = 1; o < c.num_outputs; ++o) {
    Tensor poison = Tensor::empty(kF32, expect.value()[o].dims());
    poison.poison();
    dout[o] = upload(poison);
  }
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  ExecContext ectx;
  ectx.node = gpu.node;
  ectx.attrs = &gpu.node->attrs;
  ectx.opset = c.opset;
  ectx.stream = stream;
  for (auto& t : din) ectx.inputs.push_back(t.defined() ? &t : nullptr);
  ectx.outputs.push_back(nullptr);
  for (size_t o = 1; o < c.num_outputs; ++o) ectx.outputs.push_back(&dout[o]);
  cuda::CudaExec ex;
  ex.ctx = &ectx;
  std::vector<const Tensor*> ins(ectx.inputs.begin(), ectx.inputs.end());
  ex.workspace_size = op->workspace_bytes(*gpu.node, ins, {});
  ASSERT_GT(ex.workspace_size, 0u);
  DevBuf ws(ex.workspace_size);
  ASSERT_NE(ws.p, nullptr);
  ASSERT_EQ(cudaMemset(ws.p, 0xFF, ex.workspace_size), cudaSuccess);
  ex.workspace = ws.p;
  const Status st = op->run(ex);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  cudaStreamDestroy(stream);
  for (size_t o = 1; o < c.num_outputs; ++o) {
    const Tensor& e = expect.value()[o];
    Tensor got = Tensor::empty(kF32, e.dims());
    ASSERT_EQ(cudaMemcpy(got.data(), dout[o].data(), got.nbytes(), cudaMemcpyDeviceToHost), cudaSuccess);
    double num = 0, den = 0;
    for (int64_t i = 0; i < e.numel(); ++i) {
      ASSERT_FALSE(std::isnan(got.get(i))) << "output " << o << " element " << i << " is NaN (unwritten?)";
      num += (got.get(i) - e.get(i)) * (got.get(i) - e.get(i));
      den += e.get(i) * e.get(i);
    }
    EXPECT_LE(std::sqrt(num), c.tol32 * std::max(std::sqrt(den), 1e-30)) << "output " << o;
  }
}

TEST(CudaRecurrent, LeftOutY) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (const char* op : {"RNN", "LSTM", "GRU"}) {
    Spec s{op};
    s.direction = "bidirectional";
    s.bias = s.lens = s.initial = s.peephole = true;
    run_without_y(make_case(s, rng), seed);
  }
}

}  // namespace
}  // namespace graft::testing
