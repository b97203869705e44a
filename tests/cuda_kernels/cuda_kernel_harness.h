// One harness for every CUDA kernel test: build a one-node graph, run the CPU reference kernel on
// the (dtype-rounded) inputs, run the CUDA op on device copies with poisoned outputs, and compare
// by relative error norm. Fresh random data each run; the seed is printed on failure.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>
#ifdef GRAFT_WITH_CUDNN
#include <cudnn.h>
#endif
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cuda/cuda_ops.h"
#include "gpu_handles.h"
#include "ops/nn/nn_kernels.cuh"
#include "op_test_util.h"
#include "plan/tactics.h"
#include "runtime/tactic_timing.h"

namespace graft::testing {

inline bool gpu_present() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

#define GRAFT_REQUIRE_GPU() \
  if (!::graft::testing::gpu_present()) GTEST_SKIP() << "no CUDA GPU visible: CUDA kernel tests skipped"

inline uint32_t fresh_seed() { return std::random_device{}(); }

// A device buffer freed with its scope (p is null when cudaMalloc failed).
struct DevBuf {
  void* p = nullptr;
  explicit DevBuf(size_t bytes) {
    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) p = nullptr;
  }
  ~DevBuf() {
    if (p) cudaFree(p);
  }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
};

struct KernelCase {
  std::string op;
  std::vector<Tensor> inputs;  // host; float32 inputs are converted to the tested float dtype
  AttributeMap attrs;
  int opset = 17;
  size_t num_outputs = 1;
  double tol32 = 1e-5;
  double tol16 = 1e-2;
  // An absolute error per element that always passes: only for outputs whose exact value is 0 by
  // the formula (a one-point Blackman window), where a relative norm compares rounding noise.
  double atol = 0;
  std::string label;  // printed on failure
  std::set<int> keep_f32;  // float32 inputs that stay float32 (e.g. Resize scales)
  // The engine's tactic table and the builder's tuning state as the op sees them: with `tuning` the
  // op times its tactics and records its choice in `tactics`; with `tactics` alone it runs what the
  // table names (a test can name a tactic the timing would not pick).
  TacticTable* tactics = nullptr;
  TacticTuning* tuning = nullptr;
  // Bytes by which input 0's device copy starts past its allocation (a caller's view at an odd
  // element offset): kernels with alignment needs must still be right.
  size_t input0_offset = 0;
};

inline std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get(i);
  return v;
}

// Inputs for a CUDA op tested in `dt`: each float32 input that `lower(i)` accepts becomes `dt` on
// the device side, and the reference reads its exact values back in float32; others stay as given.
struct LoweredInputs {
  std::vector<Tensor> device, reference;
};
template <typename Lower>
LoweredInputs lower_float_inputs(const std::vector<Tensor>& in, DataType dt, Lower&& lower) {
  LoweredInputs r;
  for (size_t i = 0; i < in.size(); ++i) {
    const Tensor& t = in[i];
    if (t.defined() && t.dtype() == DataType::kFloat32 && dt != DataType::kFloat32 && lower(i)) {
      auto low = t.cast(dt);
      auto back = low.is_ok() ? low.value().cast(DataType::kFloat32) : low;
      EXPECT_TRUE(low.is_ok() && back.is_ok()) << "casting input " << i << " to " << dtype_name(dt);
      if (!low.is_ok() || !back.is_ok()) return {};
      r.device.push_back(low.value());
      r.reference.push_back(back.value());
    } else {
      r.device.push_back(t);
      r.reference.push_back(t);
    }
  }
  return r;
}

// What the engine hands a CUDA op: the node's attributes and opset, device tensors, the stream.
inline ExecContext op_exec_context(const Node* node, int opset, cudaStream_t stream, std::vector<Tensor>& inputs,
                                   std::vector<Tensor>& outputs) {
  ExecContext ectx;
  ectx.node = node;
  ectx.attrs = &node->attrs;
  ectx.opset = opset;
  ectx.stream = stream;
  for (auto& t : inputs) ectx.inputs.push_back(t.defined() ? &t : nullptr);
  for (auto& t : outputs) ectx.outputs.push_back(&t);
  return ectx;
}

// Runs `c` with float32 inputs turned into `dt`; reports failures with `seed`.
inline void run_kernel_case(const KernelCase& c, DataType dt, uint32_t seed) {
  SCOPED_TRACE("op " + c.op + " " + c.label + " dtype " + dtype_name(dt) + " seed " + std::to_string(seed));
  const cuda::CudaOp* op = cuda::find_cuda_op(c.op);
  ASSERT_NE(op, nullptr) << "no CUDA op " << c.op;
  const std::set<int> host(op->host_inputs.begin(), op->host_inputs.end());

  // Inputs in the tested dtype and their exact values back in float32 for the reference.
  LoweredInputs lowered =
      lower_float_inputs(c.inputs, dt, [&](size_t i) { return !c.keep_f32.count(static_cast<int>(i)); });
  ASSERT_EQ(lowered.device.size(), c.inputs.size());
  std::vector<Tensor>& dev_in_host = lowered.device;
  std::vector<Tensor>& ref_in = lowered.reference;
  OneNode ref(c.op, ref_in, c.num_outputs);
  ref.node->attrs = c.attrs;
  auto ref_out = ref.run(c.opset);
  ASSERT_TRUE(ref_out.is_ok()) << "CPU reference failed: " << ref_out.status().to_string();

  // The node the CUDA op sees carries the tested dtypes.
  OneNode gpu(c.op, dev_in_host, c.num_outputs);
  gpu.node->attrs = c.attrs;
  gpu.node->opset = c.opset;
  std::vector<DataType> out_dt;
  for (size_t i = 0; i < c.num_outputs; ++i) {
    DataType d = ref_out.value()[i].dtype();
    if (d == DataType::kFloat32 && dt != DataType::kFloat32) d = dt;
    out_dt.push_back(d);
    gpu.node->outputs[i]->desc = TensorDesc(d, shape_from_values(ref_out.value()[i].dims()));
  }
  std::string why;
  ASSERT_TRUE(op->supports(*gpu.node, &why)) << "supports() rejected: " << why;

  std::vector<void*> allocs;
  auto dalloc = [&](size_t bytes) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, bytes ? bytes : 1), cudaSuccess);
    allocs.push_back(p);
    return p;
  };
  std::vector<Tensor> din;
  for (size_t i = 0; i < dev_in_host.size(); ++i) {
    const Tensor& t = dev_in_host[i];
    if (!t.defined() || host.count(static_cast<int>(i))) {
      din.push_back(t);
      continue;
    }
    const size_t offset = i == 0 ? c.input0_offset : 0;
    void* p = static_cast<char*>(dalloc(t.nbytes() + offset)) + offset;
    EXPECT_EQ(cudaMemcpy(p, t.data(), t.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
    din.push_back(Tensor::wrap(p, t.dtype(), t.dims(), DeviceType::kCUDA));
  }
  std::vector<Tensor> dout;
  for (size_t i = 0; i < c.num_outputs; ++i) {
    const Tensor& r = ref_out.value()[i];
    size_t bytes = static_cast<size_t>(r.numel()) * dtype_size(out_dt[i]);
    void* p = dalloc(bytes);
    EXPECT_EQ(cudaMemset(p, 0xFF, bytes ? bytes : 1), cudaSuccess);  // poison: NaN / -1 everywhere
    dout.push_back(Tensor::wrap(p, out_dt[i], r.dims(), DeviceType::kCUDA));
  }
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  ExecContext ectx = op_exec_context(gpu.node, c.opset, stream, din, dout);
  cuda::CudaExec ex;
  ex.ctx = &ectx;
  ex.cublaslt = GpuHandles::get().lt;
  ex.cudnn = GpuHandles::get().dnn;
  ex.tactics = c.tactics;
  ex.tuning = c.tuning;
  // As the execution context does once per run: kernels never set the cuDNN handle's stream
  // themselves (that is not allowed inside a CUDA graph capture).
#ifdef GRAFT_WITH_CUDNN
  if (ex.cudnn) ASSERT_EQ(cudnnSetStream(static_cast<cudnnHandle_t>(ex.cudnn), stream), CUDNN_STATUS_SUCCESS);
#endif
  if (op->workspace_bytes) {
    std::vector<const Tensor*> ins;
    for (auto& t : din) ins.push_back(t.defined() ? &t : nullptr);
    ex.workspace_size = op->workspace_bytes(*gpu.node, ins, {});
    if (ex.workspace_size) {
      // Poisoned like the outputs: a kernel that reads scratch it never wrote and uses the value
      // gets NaNs, which the comparison catches. (compute-sanitizer initcheck reported such a read
      // inside cuDNN, in a tensor transform of IMPLICIT_PRECOMP_GEMM on a grouped float16 NHWC
      // convolution, with every output right; on poisoned scratch, a read that mattered fails.)
      ex.workspace = dalloc(ex.workspace_size);
      EXPECT_EQ(cudaMemset(ex.workspace, 0xFF, ex.workspace_size), cudaSuccess);
    }
  }
  Status st = op->run(ex);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  cudaStreamDestroy(stream);

  for (size_t i = 0; i < c.num_outputs; ++i) {
    const Tensor& r = ref_out.value()[i];
    Tensor got = Tensor::empty(out_dt[i], r.dims());
    ASSERT_EQ(cudaMemcpy(got.data(), dout[i].data(), got.nbytes(), cudaMemcpyDeviceToHost), cudaSuccess);
    std::vector<double> g = to_doubles(got), e = to_doubles(r);
    if (!dtype_is_float(r.dtype())) {
      for (size_t j = 0; j < e.size(); ++j) ASSERT_EQ(g[j], e[j]) << "output " << i << " element " << j;
      continue;
    }
    double num = 0, den = 0;
    for (size_t j = 0; j < e.size(); ++j) {
      ASSERT_FALSE(std::isnan(g[j]) && !std::isnan(e[j])) << "output " << i << " element " << j << " is NaN (unwritten?)";
      if (std::isnan(e[j]) || std::isinf(e[j])) continue;
      num += (g[j] - e[j]) * (g[j] - e[j]);
      den += e[j] * e[j];
    }
    const double floor = c.atol * std::sqrt(static_cast<double>(g.size()));
    const double rel = std::sqrt(num) / std::max({std::sqrt(den), floor, 1e-30});
    const double tol = dt == DataType::kFloat32 ? c.tol32 : c.tol16;
    EXPECT_LE(rel, tol) << "output " << i << " relative error norm " << rel << " (tolerance " << tol << ")";
  }
  for (void* p : allocs) cudaFree(p);
}

// Runs the case in float32 and float16 (and bfloat16 when asked).
inline void run_float_dtypes(const KernelCase& c, uint32_t seed, bool bf16 = false) {
  run_kernel_case(c, DataType::kFloat32, seed);
  run_kernel_case(c, DataType::kFloat16, seed);
  if (bf16) {
    KernelCase b = c;
    b.tol16 = std::max(c.tol16, 2e-2);
    run_kernel_case(b, DataType::kBFloat16, seed);
  }
}

// GraftConv's attributes for a k x k filter with one stride, pad (every side) and dilation.
inline void set_graft_conv_attrs(KernelCase& c, const char* layout, const char* act, int64_t group, int64_t k,
                                 int64_t stride, int64_t pad, int64_t dilation = 1) {
  c.attrs.set("layout", std::string(layout));
  c.attrs.set("activation", std::string(act));
  c.attrs.set("group", group);
  c.attrs.set("kernel_shape", std::vector<int64_t>{k, k});
  c.attrs.set("strides", std::vector<int64_t>{stride, stride});
  c.attrs.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
  c.attrs.set("dilations", std::vector<int64_t>{dilation, dilation});
}

// Runs a one-problem case in `dt` twice: first timed, so whichever tactic wins must be right, then
// with the tactic table forced to (algo, variant), one the timing might not pick. The forced problem
// is the table's only one (GraftConv), or the only one whose key starts with `key_prefix`
// (GraftAttention: timing its unfused path also times that path's two cuBLASLt matmuls).
inline void run_timed_then_forced(const KernelCase& c, DataType dt, uint32_t seed, int algo, int variant,
                                  const std::string& key_prefix = "") {
  TacticTable table;
  TacticTuning tuning;
  KernelCase timed = c;
  timed.tactics = &table;
  timed.tuning = &tuning;
  run_kernel_case(timed, dt, seed);
  std::vector<std::string> keys;
  for (const auto& [key, tactic] : table.snapshot())
    if (key.rfind(key_prefix, 0) == 0) keys.push_back(key);
  ASSERT_EQ(keys.size(), 1u) << "one problem whose tactic key starts with '" << key_prefix << "'";
  table.put(keys.front(), Tactic{algo, variant, 0});
  KernelCase forced = c;
  forced.tactics = &table;
  forced.label += " (algo " + std::to_string(algo) + ", variant " + std::to_string(variant) + ")";
  run_kernel_case(forced, dt, seed);
}

inline Tensor rnd(std::mt19937& rng, std::vector<int64_t> dims, double lo = -1, double hi = 1,
                  DataType dt = DataType::kFloat32) {
  // `dims` are dims, never values: a negative one (index values passed by mistake) would make a
  // tensor of negative numel that fails far away with an unnamed std::length_error.
  for (int64_t d : dims)
    if (d < 0) throw std::invalid_argument("rnd(): negative dim " + std::to_string(d) + " (values passed as dims?)");
  return random_tensor(dt, std::move(dims), rng, lo, hi);
}

// The 2-D window of a convolution kernel test's case (its fields n, h, w, c, kh, kw, sh, sw, ph, pw,
// dh, dw; the pads on both sides), with the output extents Conv gives.
template <typename Case>
cuda::k::Window2d conv_window_of(const Case& t) {
  cuda::k::Window2d g;
  g.n = t.n; g.c = t.c; g.h = t.h; g.w = t.w;
  g.kh = t.kh; g.kw = t.kw; g.sh = t.sh; g.sw = t.sw; g.dh = t.dh; g.dw = t.dw;
  g.ph = g.peh = t.ph; g.pw = g.pew = t.pw;
  g.oh = (t.h + 2 * t.ph - t.dh * (t.kh - 1) - 1) / t.sh + 1;
  g.ow = (t.w + 2 * t.pw - t.dw * (t.kw - 1) - 1) / t.sw + 1;
  return g;
}

inline Tensor rnd_bool(std::mt19937& rng, std::vector<int64_t> dims) {
  Tensor t = Tensor::empty(DataType::kBool, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, (rng() & 1) ? 1.0 : 0.0);
  return t;
}

}  // namespace graft::testing
