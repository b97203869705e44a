// nn.MultiheadAttention's head split as torch.onnx's dynamo export writes it, shared by the
// view-composition tests (tests/unit/compose_views_test.cpp) and the CUDA engine's
// (tests/cuda/test_models.h).
#pragma once

#include <string>
#include <vector>

#include "tests/unit/onnx_model_builder.h"

namespace graft::testing {

// From "x" [S, B, 3E]: Reshape("s4": [S, B, 3, E]) -> Unsqueeze -> Transpose -> Squeeze ->
// Gather(i) -> Reshape("sbh": [S, B*H, hd]) -> Transpose -> Reshape("bhsd": [B, H, S, hd]), for
// i = q, k, v; the results are "q3", "k3", "v3". The caller declares "x" and the three shape
// values (constants, or computed from Shape(x) as the exporter does over a dynamic batch).
inline void add_head_split_nodes(OnnxModelBuilder& m) {
  m.initializer("ax0", Tensor::vector_int64({0}));
  m.initializer("ax3", Tensor::vector_int64({3}));
  m.node("Reshape", {"x", "s4"}, {"r"});
  m.node("Unsqueeze", {"r", "ax0"}, {"u"});
  OnnxModelBuilder::attr(m.node("Transpose", {"u"}, {"t"}), "perm", std::vector<int64_t>{3, 1, 2, 0, 4});
  m.node("Squeeze", {"t", "ax3"}, {"sq"});
  for (int i = 0; i < 3; ++i) {
    const std::string n = std::string(1, "qkv"[i]);
    m.initializer("i" + n, Tensor::scalar_int64(i));
    OnnxModelBuilder::attr(m.node("Gather", {"sq", "i" + n}, {n + "0"}), "axis", int64_t{0});
    m.node("Reshape", {n + "0", "sbh"}, {n + "1"});
    OnnxModelBuilder::attr(m.node("Transpose", {n + "1"}, {n + "2"}), "perm", std::vector<int64_t>{1, 0, 2});
    m.node("Reshape", {n + "2", "bhsd"}, {n + "3"});
  }
}

// The head split over a dynamic batch: "x" [S, batch, 3E] declared here, its Reshape targets
// computed from Shape(x) at run time ([S, batch, 3, E] and [batch, H, S, hd]) or written with -1
// ([S, -1, hd]), as the dynamo export does.
inline void add_dynamic_head_split(OnnxModelBuilder& m, DataType dt, int64_t S, int64_t H, int64_t hd) {
  const int64_t E = H * hd;
  m.input("x", dt, {S, "batch", 3 * E});
  m.initializer("one", Tensor::vector_int64({1}));
  m.initializer("s_", Tensor::vector_int64({S}));
  m.initializer("tail4", Tensor::vector_int64({3, E}));
  m.initializer("sbh", Tensor::vector_int64({S, -1, hd}));
  m.initializer("hsd", Tensor::vector_int64({H, S, hd}));
  m.node("Shape", {"x"}, {"xs"});
  OnnxModelBuilder::attr(m.node("Gather", {"xs", "one"}, {"b"}), "axis", int64_t{0});
  OnnxModelBuilder::attr(m.node("Concat", {"s_", "b", "tail4"}, {"s4"}), "axis", int64_t{0});
  OnnxModelBuilder::attr(m.node("Concat", {"b", "hsd"}, {"bhsd"}), "axis", int64_t{0});
  add_head_split_nodes(m);
}

// softmax(0.35 q3.k3^T [+ bias]).v3 permuted back to [S, B, H, hd] (as nn.MultiheadAttention's
// export does) into "att_sbhd". `bias`: the name of an initializer the caller declared, added to the
// scores [B, H, S, S] (Swin's relative position bias is [H, S, S]).
inline void add_attention_heads(OnnxModelBuilder& m, DataType dt, const std::string& bias = "") {
  OnnxModelBuilder::attr(m.node("Transpose", {"k3"}, {"att_kt"}), "perm", std::vector<int64_t>{0, 1, 3, 2});
  m.node("MatMul", {"q3", "att_kt"}, {"att_scores"});
  m.initializer("att_scale", Tensor::from_doubles(dt, {}, {0.35}));
  m.node("Mul", {"att_scores", "att_scale"}, {bias.empty() ? "att_scaled" : "att_unbiased"});
  if (!bias.empty()) m.node("Add", {"att_unbiased", bias}, {"att_scaled"});
  OnnxModelBuilder::attr(m.node("Softmax", {"att_scaled"}, {"att_p"}), "axis", int64_t{-1});
  m.node("MatMul", {"att_p", "v3"}, {"att_o"});
  OnnxModelBuilder::attr(m.node("Transpose", {"att_o"}, {"att_sbhd"}), "perm", std::vector<int64_t>{2, 0, 1, 3});
}

// add_attention_heads, then a Relu into the graph output `y`.
inline void add_attention_over_heads(OnnxModelBuilder& m, DataType dt, const std::string& y,
                                     const std::string& bias = "") {
  add_attention_heads(m, dt, bias);
  m.node("Relu", {"att_sbhd"}, {y});
  m.output(y, dt);
}

}  // namespace graft::testing
