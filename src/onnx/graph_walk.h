// Every graph of an ONNX model: the main graph, then, depth first, the subgraphs its nodes' GRAPH and
// GRAPHS attributes hold (If's branches, Loop's and Scan's bodies). fn(g) runs before g's nodes are
// walked, so it may rewrite them (the walk reads the node list fn left). The model-to-model steps
// before import use it: opset conversion's renames and DeformConv's rewrite.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>

namespace graft {

inline void for_each_graph(onnx::GraphProto* g, const std::function<void(onnx::GraphProto*)>& fn) {
  fn(g);
  for (auto& n : *g->mutable_node())
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) for_each_graph(a.mutable_g(), fn);
      for (auto& sg : *a.mutable_graphs()) for_each_graph(&sg, fn);
    }
}

// The same walk over a model only read (finding whether some graph holds a node of a kind).
inline void for_each_graph(const onnx::GraphProto& g, const std::function<void(const onnx::GraphProto&)>& fn) {
  fn(g);
  for (const auto& n : g.node())
    for (const auto& a : n.attribute()) {
      if (a.has_g()) for_each_graph(a.g(), fn);
      for (const auto& sg : a.graphs()) for_each_graph(sg, fn);
    }
}

}  // namespace graft
