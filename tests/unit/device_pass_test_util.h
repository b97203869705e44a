// What the tests of the CUDA target's pass list share (device_passes_test.cpp,
// layer_precisions_test.cpp): a stand-in for the device's answers and a small conv + GEMM model.
#pragma once

#include <random>
#include <vector>

#include "build/device_passes.h"
#include "tests/unit/graph_pass_test_util.h"

namespace graft::testing {

// A device that runs every node and reads no input on the host.
inline DeviceQueries runs_everything() {
  DeviceQueries q;
  q.runs = [](const Node&) { return true; };
  q.host_inputs = [](const Node&) { return std::vector<int>{}; };
  return q;
}

// x [2, 8, 6, 5] -> conv0 (+bias) -> relu0 -> conv1 -> residual Add(relu0) -> relu1 -> flatten ->
// fc (MatMul) -> fc_bias -> y.
inline OnnxModelBuilder conv_gemm_model(std::mt19937& rng) {
  OnnxModelBuilder m;
  m.input("x", DataType::kFloat32, {2, 8, 6, 5});
  m.initializer("w0", random_tensor(DataType::kFloat32, {16, 8, 3, 3}, rng, -0.3, 0.3));
  m.initializer("b0", random_tensor(DataType::kFloat32, {16}, rng));
  m.initializer("w1", random_tensor(DataType::kFloat32, {16, 16, 1, 1}, rng, -0.3, 0.3));
  m.initializer("shape", Tensor::vector_int64({2, 16 * 6 * 5}));
  m.initializer("wf", random_tensor(DataType::kFloat32, {16 * 6 * 5, 10}, rng, -0.1, 0.1));
  m.initializer("bf", random_tensor(DataType::kFloat32, {10}, rng));
  OnnxModelBuilder::attr(m.node("Conv", {"x", "w0", "b0"}, {"c0"}, "conv0"), "pads", std::vector<int64_t>{1, 1, 1, 1});
  m.node("Relu", {"c0"}, {"r0"}, "relu0");
  m.node("Conv", {"r0", "w1"}, {"c1"}, "conv1");
  m.node("Add", {"c1", "r0"}, {"s"}, "residual");
  m.node("Relu", {"s"}, {"r1"}, "relu1");
  m.node("Reshape", {"r1", "shape"}, {"flat"}, "flatten");
  m.node("MatMul", {"flat", "wf"}, {"mm"}, "fc");
  m.node("Add", {"mm", "bf"}, {"y"}, "fc_bias");
  m.output("y", DataType::kFloat32);
  return m;
}

}  // namespace graft::testing
