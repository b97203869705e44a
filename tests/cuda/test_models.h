// Small ONNX models and comparison helpers shared by the CUDA runtime tests.
#pragma once

#include <cmath>
#include <random>
#include <string>

#include "graft/tensor.h"
#include "tests/unit/head_split_model.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/op_test_util.h"

namespace graft_cuda_test {

using graft::DataType;
using graft::Tensor;
using graft::testing::OnnxModelBuilder;

inline Tensor rand_t(std::vector<int64_t> dims, std::mt19937& rng, double lo = -1, double hi = 1) {
  return graft::testing::random_tensor(DataType::kFloat32, std::move(dims), rng, lo, hi);
}

// ||a - b|| / ||b|| over host float tensors (a NaN anywhere gives infinity).
inline double rel_err(const Tensor& a, const Tensor& b) {
  if (a.dims() != b.dims()) return INFINITY;
  double num = 0, den = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.get(i), y = b.get(i);
    if (std::isnan(x) || std::isnan(y)) return INFINITY;
    num += (x - y) * (x - y);
    den += y * y;
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

// x[4,16] -> CustomLayer -> Gemm(16x32) -> Relu -> Gemm(32x8) -> y
inline OnnxModelBuilder mlp_model(std::mt19937& rng) {
  OnnxModelBuilder m;
  m.opset("ai.onnx.contrib", 1);
  m.input("x", DataType::kFloat32, {4, 16});
  m.initializer("w1", rand_t({16, 32}, rng, -0.5, 0.5));
  m.initializer("b1", rand_t({32}, rng));
  m.initializer("w2", rand_t({32, 8}, rng, -0.5, 0.5));
  m.initializer("b2", rand_t({8}, rng));
  auto& c = m.node("CustomLayer", {"x"}, {"h0"}, "swish", "ai.onnx.contrib");
  OnnxModelBuilder::attr(c, "beta", 0.75f);
  m.node("Gemm", {"h0", "w1", "b1"}, {"h1"}, "fc1");
  m.node("Relu", {"h1"}, {"h2"}, "relu");
  m.node("Gemm", {"h2", "w2", "b2"}, {"y"}, "fc2");
  m.output("y", DataType::kFloat32, {4, 8});
  return m;
}

// x[2,3,16,16] -> Conv -> BN -> Relu -> MaxPool -> GlobalAveragePool -> Reshape -> Gemm -> y[2,5]
inline OnnxModelBuilder cnn_model(std::mt19937& rng) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2, 3, 16, 16});
  m.initializer("w", rand_t({8, 3, 3, 3}, rng, -0.5, 0.5));
  m.initializer("b", rand_t({8}, rng));
  m.initializer("scale", rand_t({8}, rng, 0.5, 1.5));
  m.initializer("bias", rand_t({8}, rng));
  m.initializer("mean", rand_t({8}, rng));
  m.initializer("var", rand_t({8}, rng, 0.5, 2.0));
  m.initializer("shape", Tensor::vector_int64({2, 8}));
  m.initializer("fw", rand_t({8, 5}, rng));
  m.initializer("fb", rand_t({5}, rng));
  auto& conv = m.node("Conv", {"x", "w", "b"}, {"c"}, "conv");
  OnnxModelBuilder::attr(conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
  m.node("BatchNormalization", {"c", "scale", "bias", "mean", "var"}, {"bn"}, "bn");
  m.node("Relu", {"bn"}, {"r"}, "relu");
  auto& mp = m.node("MaxPool", {"r"}, {"p"}, "pool");
  OnnxModelBuilder::attr(mp, "kernel_shape", std::vector<int64_t>{2, 2});
  OnnxModelBuilder::attr(mp, "strides", std::vector<int64_t>{2, 2});
  m.node("GlobalAveragePool", {"p"}, {"g"}, "gap");
  m.node("Reshape", {"g", "shape"}, {"f"}, "flatten");
  m.node("Gemm", {"f", "fw", "fb"}, {"y"}, "fc");
  m.output("y", DataType::kFloat32, {2, 5});
  return m;
}

// A small ResNet/MobileNet mix: conv+relu, max pool, a bottleneck with a projected residual add, a
// squeeze-excitation branch (global pool, 1x1 conv, HardSigmoid, broadcast Mul), a strided conv
// followed by a per-channel constant add (which must end an NHWC region), and an intermediate
// value that is also a graph output.
inline OnnxModelBuilder residual_se_cnn_model(std::mt19937& rng) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2, 3, 9, 8});
  auto conv = [&](const std::string& x, const std::string& y, int64_t cin, int64_t cout, int64_t k, int64_t stride,
                  bool bias) {
    m.initializer(y + "_w", graft::testing::random_tensor(DataType::kFloat32, {cout, cin, k, k}, rng, -0.5, 0.5));
    std::vector<std::string> ins{x, y + "_w"};
    if (bias) {
      m.initializer(y + "_b", graft::testing::random_tensor(DataType::kFloat32, {cout}, rng));
      ins.push_back(y + "_b");
    }
    auto& n = m.node("Conv", ins, {y}, y + "_conv");
    const int64_t p = k / 2;
    OnnxModelBuilder::attr(n, "pads", std::vector<int64_t>{p, p, p, p});
    OnnxModelBuilder::attr(n, "strides", std::vector<int64_t>{stride, stride});
  };
  conv("x", "c1", 3, 8, 3, 1, true);
  m.node("Relu", {"c1"}, {"r1"}, "relu1");
  auto& mp = m.node("MaxPool", {"r1"}, {"p"}, "pool");
  OnnxModelBuilder::attr(mp, "kernel_shape", std::vector<int64_t>{3, 3});
  OnnxModelBuilder::attr(mp, "strides", std::vector<int64_t>{2, 2});
  OnnxModelBuilder::attr(mp, "pads", std::vector<int64_t>{1, 1, 1, 1});
  conv("p", "c2", 8, 8, 3, 1, true);
  m.node("HardSwish", {"c2"}, {"r2"}, "hswish2");  // MobileNetV3's conv activation: graft's epilogue
  conv("r2", "c3", 8, 8, 1, 1, false);
  // A projection shortcut after c3 in node order, as PyTorch exports ResNet's downsample branch:
  // either conv may absorb the residual Add, never both.
  conv("p", "d3", 8, 8, 1, 1, true);
  m.node("Add", {"c3", "d3"}, {"a3"}, "residual");
  m.node("Relu", {"a3"}, {"feat"}, "relu3");
  m.node("GlobalAveragePool", {"feat"}, {"g"}, "gap");
  conv("g", "c4", 8, 8, 1, 1, true);
  m.node("HardSigmoid", {"c4"}, {"s"}, "gate");
  m.node("Mul", {"feat", "s"}, {"scaled"}, "excite");
  conv("scaled", "c5", 8, 4, 3, 2, true);
  m.initializer("shift", graft::testing::random_tensor(DataType::kFloat32, {4, 1, 1}, rng));
  m.node("Add", {"c5", "shift"}, {"y"}, "shift_add");
  m.output("y", DataType::kFloat32);
  m.output("feat", DataType::kFloat32);
  return m;
}


// x[2,6,16] -> LayerNorm -> MatMul -> Softmax -> Add(x) -> y
inline OnnxModelBuilder attention_block_model(std::mt19937& rng) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2, 6, 16});
  m.initializer("gamma", rand_t({16}, rng, 0.5, 1.5));
  m.initializer("beta", rand_t({16}, rng));
  m.initializer("w", rand_t({16, 16}, rng, -0.5, 0.5));
  auto& ln = m.node("LayerNormalization", {"x", "gamma", "beta"}, {"n"}, "ln");
  OnnxModelBuilder::attr(ln, "axis", int64_t{-1});
  m.node("MatMul", {"n", "w"}, {"mm"}, "proj");
  auto& sm = m.node("Softmax", {"mm"}, {"s"}, "softmax");
  OnnxModelBuilder::attr(sm, "axis", int64_t{-1});
  m.node("Add", {"s", "x"}, {"y"}, "residual");
  m.output("y", DataType::kFloat32, {2, 6, 16});
  return m;
}

// x[batch,4,6] -> Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [24])) -> Relu -> y[batch,24]
inline OnnxModelBuilder shape_subgraph_model() {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {"batch", 4, 6});
  m.initializer("zero", Tensor::scalar_int64(0));
  m.initializer("axes", Tensor::vector_int64({0}));
  m.initializer("rest", Tensor::vector_int64({24}));
  m.node("Shape", {"x"}, {"shp"}, "shape");
  auto& ga = m.node("Gather", {"shp", "zero"}, {"b"}, "gather");
  OnnxModelBuilder::attr(ga, "axis", int64_t{0});
  m.node("Unsqueeze", {"b", "axes"}, {"b1"}, "unsqueeze");
  auto& cc = m.node("Concat", {"b1", "rest"}, {"target"}, "concat");
  OnnxModelBuilder::attr(cc, "axis", int64_t{0});
  m.node("Reshape", {"x", "target"}, {"r"}, "reshape");
  m.node("Relu", {"r"}, {"y"}, "relu");
  m.output("y", DataType::kFloat32);
  return m;
}

// x[batch,16] -> Gemm(16x8) -> Relu -> y[batch,8]: every layer on the GPU, Gemm with a cuBLASLt
// workspace, shapes known only at run time.
inline OnnxModelBuilder dynamic_gemm_model(std::mt19937& rng) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {"batch", 16});
  m.initializer("w", rand_t({16, 8}, rng, -0.5, 0.5));
  m.initializer("b", rand_t({8}, rng));
  m.node("Gemm", {"x", "w", "b"}, {"h"}, "fc");
  m.node("Relu", {"h"}, {"y"}, "relu");
  m.output("y", DataType::kFloat32);
  return m;
}

// A dynamic-batch CNN as exporters write it: x[batch,3,12,12] -> Conv(3x3, pad 1) -> Relu ->
// Conv(3x3, stride 2) -> GlobalAveragePool -> Reshape to [Gather(Shape(x), 0), -1] -> Gemm -> y[batch,5].
// cuDNN convolutions and a host shape subgraph whose values depend on the batch alone.
// nn.MultiheadAttention's head split as the dynamo export writes it, over a dynamic batch:
// x [7, batch, 48] (S, B, 3E with E = 16) -> Reshape [7, batch, 3, 16] (target from Shape(x)) ->
// Unsqueeze -> Transpose -> Squeeze -> Gather(q/k/v) -> Reshape [7, -1, 8] -> Transpose ->
// Reshape [batch, 2, 7, 8]; K transposed. The scale is sqrt of Shape(k)[0], read inside k's chain
// (onnxscript's SDPA reads Shape(key)). Outputs: q * scale, K^T and v, each through a non-view op.
inline OnnxModelBuilder dynamic_head_split_model() {
  OnnxModelBuilder m;
  graft::testing::add_dynamic_head_split(m, DataType::kFloat32, /*S=*/7, /*H=*/2, /*hd=*/8);
  m.initializer("zero", Tensor::scalar_int64(0));
  m.node("Shape", {"k3"}, {"k_shape"});
  // Shape(k3)[0], the batch: not known at build time, so the Shape stays (its [3] would fold).
  OnnxModelBuilder::attr(m.node("Gather", {"k_shape", "zero"}, {"kb"}), "axis", int64_t{0});
  OnnxModelBuilder::attr(m.node("Cast", {"kb"}, {"kb_f"}), "to", int64_t{1});
  m.node("Sqrt", {"kb_f"}, {"scale"});
  m.node("Mul", {"q3", "scale"}, {"yq"});
  OnnxModelBuilder::attr(m.node("Transpose", {"k3"}, {"kt"}), "perm", std::vector<int64_t>{0, 1, 3, 2});
  m.node("Relu", {"kt"}, {"yk"});
  m.node("Neg", {"v3"}, {"yv"});
  m.output("yq", DataType::kFloat32).output("yk", DataType::kFloat32).output("yv", DataType::kFloat32);
  return m;
}

// dynamic_head_split_model's q, k and v into an attention (MatMul, scale, Softmax, MatMul) whose
// output is permuted back to [7, batch, 2, 8] (as nn.MultiheadAttention's dynamo export does).
inline OnnxModelBuilder dynamic_attention_model() {
  OnnxModelBuilder m = dynamic_head_split_model();
  graft::testing::add_attention_over_heads(m, DataType::kFloat32, "att");
  return m;
}

// A whole batch-first attention block's end over x [7, batch, 48] (dynamo's nn.MultiheadAttention):
// the attention's [7, batch, 2, 8] output -> Reshape [7*batch, 16] -> out_proj (Gemm) -> Reshape
// [7, batch, 16] -> Transpose -> [batch, 7, 16] -> + a residual (from x's first 16 channels).
inline OnnxModelBuilder dynamic_attention_block_model(std::mt19937& rng) {
  OnnxModelBuilder m;
  graft::testing::add_dynamic_head_split(m, DataType::kFloat32, /*S=*/7, /*H=*/2, /*hd=*/8);
  graft::testing::add_attention_heads(m, DataType::kFloat32);
  m.initializer("rows", Tensor::vector_int64({-1, 16}));
  m.initializer("sbe", Tensor::vector_int64({7, -1, 16}));
  m.initializer("w_out", rand_t({16, 16}, rng, -0.3, 0.3));
  m.initializer("b_out", rand_t({16}, rng));
  m.initializer("lo", Tensor::vector_int64({0}));
  m.initializer("hi", Tensor::vector_int64({16}));
  m.initializer("ax2", Tensor::vector_int64({2}));
  m.node("Slice", {"x", "lo", "hi", "ax2"}, {"x16"});
  OnnxModelBuilder::attr(m.node("Transpose", {"x16"}, {"x16b"}), "perm", std::vector<int64_t>{1, 0, 2});
  m.node("Neg", {"x16b"}, {"res"});
  m.node("Reshape", {"att_sbhd", "rows"}, {"o_rows"});
  OnnxModelBuilder::attr(m.node("Gemm", {"o_rows", "w_out", "b_out"}, {"o_proj"}), "transB", int64_t{1});
  m.node("Reshape", {"o_proj", "sbe"}, {"o_sbe"});
  OnnxModelBuilder::attr(m.node("Transpose", {"o_sbe"}, {"o_bse"}), "perm", std::vector<int64_t>{1, 0, 2});
  m.node("Add", {"res", "o_bse"}, {"blk"});
  m.output("blk", DataType::kFloat32);
  return m;
}

inline OnnxModelBuilder dynamic_cnn_model(std::mt19937& rng) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {"batch", 3, 12, 12});
  m.initializer("w1", rand_t({8, 3, 3, 3}, rng, -0.5, 0.5));
  m.initializer("b1", rand_t({8}, rng));
  m.initializer("w2", rand_t({6, 8, 3, 3}, rng, -0.5, 0.5));
  m.initializer("zero", Tensor::scalar_int64(0));
  m.initializer("axes", Tensor::vector_int64({0}));
  m.initializer("rest", Tensor::vector_int64({-1}));
  m.initializer("fw", rand_t({6, 5}, rng));
  m.initializer("fb", rand_t({5}, rng));
  auto& c1 = m.node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1");
  OnnxModelBuilder::attr(c1, "pads", std::vector<int64_t>{1, 1, 1, 1});
  m.node("Relu", {"c1"}, {"r1"}, "relu1");
  auto& c2 = m.node("Conv", {"r1", "w2"}, {"c2"}, "conv2");
  OnnxModelBuilder::attr(c2, "strides", std::vector<int64_t>{2, 2});
  m.node("GlobalAveragePool", {"c2"}, {"g"}, "gap");
  m.node("Shape", {"x"}, {"shp"}, "shape");
  auto& ga = m.node("Gather", {"shp", "zero"}, {"n"}, "gather");
  OnnxModelBuilder::attr(ga, "axis", int64_t{0});
  m.node("Unsqueeze", {"n", "axes"}, {"n1"}, "unsqueeze");
  auto& cc = m.node("Concat", {"n1", "rest"}, {"target"}, "concat");
  OnnxModelBuilder::attr(cc, "axis", int64_t{0});
  m.node("Reshape", {"g", "target"}, {"f"}, "flatten");
  m.node("Gemm", {"f", "fw", "fb"}, {"y"}, "fc");
  m.output("y", DataType::kFloat32);
  return m;
}

// x[64,256] -> CustomLayer x `n` (every layer has a CUDA kernel).
inline OnnxModelBuilder custom_chain_model(int n) {
  OnnxModelBuilder m;
  m.opset("ai.onnx.contrib", 1);
  m.input("x", DataType::kFloat32, {64, 256});
  for (int i = 0; i < n; ++i) {
    std::string in = i ? "h" + std::to_string(i - 1) : "x", out = i + 1 == n ? "y" : "h" + std::to_string(i);
    auto& c = m.node("CustomLayer", {in}, {out}, "swish" + std::to_string(i), "ai.onnx.contrib");
    OnnxModelBuilder::attr(c, "beta", 0.5f + 0.1f * static_cast<float>(i));
  }
  m.output("y", DataType::kFloat32, {64, 256});
  return m;
}

}  // namespace graft_cuda_test
