// Control-flow models shared by the CPU tests (tests/unit/control_flow_test.cpp) and the CUDA engine
// tests (tests/cuda/control_flow_test.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "onnx_model_builder.h"

namespace graft::testing {

// Scan: state s [2]; scan inputs a [2, len] along axis 1 (forward) and b [len, 2] along axis 0
// (reversed); s' = s + a_t * b_t * w (w from the main graph); outputs: s' stacked along axis 1,
// reversed, and a_t - b_t stacked along axis 0.
inline OnnxModelBuilder scan_axes_and_directions_model(int64_t len) {
  OnnxModelBuilder m(17);
  m.input("s0", DataType::kFloat32, {2});
  m.input("a", DataType::kFloat32, {2, len});
  m.input("b", DataType::kFloat32, {len, 2});
  m.input("w", DataType::kFloat32, {2});
  auto& n = m.node("Scan", {"s0", "a", "b"}, {"s", "ys", "ds"}, "scan");
  OnnxModelBuilder::attr(n, "num_scan_inputs", int64_t{2});
  OnnxModelBuilder::attr(n, "scan_input_axes", std::vector<int64_t>{1, 0});
  OnnxModelBuilder::attr(n, "scan_input_directions", std::vector<int64_t>{0, 1});
  OnnxModelBuilder::attr(n, "scan_output_axes", std::vector<int64_t>{-1, 0});
  OnnxModelBuilder::attr(n, "scan_output_directions", std::vector<int64_t>{1, 0});
  graph_attr(n, "body")
      .input("s_in").input("at").input("bt")
      .node("Mul", {"at", "bt"}, {"ab"})
      .node("Mul", {"ab", "w"}, {"abw"})
      .node("Add", {"s_in", "abw"}, {"s_out"})
      .node("Sub", {"at", "bt"}, {"d"})
      .node("Identity", {"s_out"}, {"y"})
      .output("s_out").output("y").output("d");
  m.output("s", DataType::kFloat32);
  m.output("ys", DataType::kFloat32);
  m.output("ds", DataType::kFloat32);
  return m;
}

// A Loop whose body calls a custom op: v <- CustomLayer(v) + w, M times (M an input, so the loop is
// not unrolled). CustomLayer is y = v * sigmoid(beta v) with its default beta of 1, named in the
// default domain as TensorRT plugins are; w is read from the main graph.
inline OnnxModelBuilder custom_op_loop_model() {
  OnnxModelBuilder m(17);
  m.input("x", DataType::kFloat32, {2, 5});
  m.input("w", DataType::kFloat32, {5});
  m.input("M", DataType::kInt64, {});
  auto& loop = m.node("Loop", {"M", "", "x"}, {"y"}, "custom_loop");
  graph_attr(loop, "body")
      .input("i", DataType::kInt64).input("c_in", DataType::kBool).input("v", DataType::kFloat32)
      .node("CustomLayer", {"v"}, {"g"})
      .node("Add", {"g", "w"}, {"next"})
      .node("Identity", {"c_in"}, {"c_out"})
      .output("c_out").output("next");
  m.output("y", DataType::kFloat32, {2, 5});
  return m;
}

}  // namespace graft::testing
