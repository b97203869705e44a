// Small graph queries that several of the builder's passes (src/graph/<pass>.cpp) share.
#pragma once

#include <initializer_list>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <vector>

#include "graph/graph.h"
#include "ops/operator.h"

namespace graft {

using Consumers = std::map<const Value*, std::vector<Node*>>;  // Graph::consumers()

// The single node reading `v`, when exactly one node reads it, once, and it is not a graph output;
// else nullptr.
inline Node* single_use_reader(const Consumers& consumers, const Value* v) {
  if (!v || v->is_graph_output) return nullptr;
  auto it = consumers.find(v);
  if (it == consumers.end() || it->second.size() != 1) return nullptr;
  Node* c = it->second[0];
  int uses = 0;
  for (const Value* in : c->inputs) uses += in == v;
  return uses == 1 ? c : nullptr;
}

// The node that reads `v` (possibly more than once), when it is the only reader and `v` is not a
// graph output; else nullptr.
inline Node* only_reader(const Consumers& consumers, const Value* v) {
  if (!v || v->is_graph_output) return nullptr;
  auto it = consumers.find(v);
  if (it == consumers.end() || it->second.empty()) return nullptr;
  Node* n = it->second.front();
  for (Node* c : it->second)
    if (c != n) return nullptr;
  return n;
}

// A node made from others, or in their place (a fusion, a lowering), is held to their precision
// (Node::precision): float32 where any of them is, else float16 where any of them is.
inline DataType strictest_precision(DataType a, DataType b) {
  if (a == DataType::kFloat32 || b == DataType::kFloat32) return DataType::kFloat32;
  return a == DataType::kFloat16 ? a : b;
}
inline void inherit_precision(Node* to, std::initializer_list<const Node*> from) {
  for (const Node* f : from)
    if (f) to->precision = strictest_precision(to->precision, f->precision);
}

// is_onnx (ops/operator.h) for a node that may be absent.
inline bool is_onnx_op(const Node* n, const char* op_type) { return n && is_onnx(*n, op_type); }

// only_reader(v) when it is the ONNX op `op_type` with one output.
inline Node* consumer_of_type(const Consumers& consumers, const Value* v, const char* op_type) {
  Node* n = only_reader(consumers, v);
  return is_onnx_op(n, op_type) && n->outputs.size() == 1 && n->outputs[0] ? n : nullptr;
}

// For a two-input node reading `v`, the other operand (nullptr unless exactly one side is `v`).
inline Value* other_operand(const Node* n, const Value* v) {
  if (n->inputs.size() != 2 || n->outputs.size() != 1) return nullptr;
  if (n->inputs[0] == v && n->inputs[1] != v) return n->inputs[1];
  if (n->inputs[1] == v && n->inputs[0] != v) return n->inputs[0];
  return nullptr;
}

// A Transpose node's perm for an input of `rank` axes: its attribute, or ONNX's default (the axes
// reversed); nullopt when the attribute is unreadable or has another length.
inline std::optional<std::vector<int64_t>> transpose_perm(const Node& t, size_t rank) {
  std::vector<int64_t> reversed(rank);
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  auto perm = t.attrs.get_ints("perm", reversed);
  if (!perm || perm->size() != rank) return std::nullopt;
  return std::move(perm).value();
}

inline bool is_float_io(DataType t) { return t == DataType::kFloat32 || t == DataType::kFloat16; }

inline bool is_removed(const std::set<const Node*>& dead, const Node* n) { return dead.count(n) != 0; }

// A constant holding one value, or nullptr.
inline const Tensor* scalar_constant(const Value* v) {
  return v && v->constant && v->constant->numel() == 1 ? &*v->constant : nullptr;
}

// Every node that reads `from` reads `to` instead (a subgraph's outer reads included: they are the
// node's implicit inputs).
inline void replace_reads(Graph& graph, const Value* from, Value* to) {
  for (const auto& n : graph.nodes())
    for (Value*& in : n->inputs)
      if (in == from) in = to;
}

// A pass's last step: the nodes it replaced go, the graph is sorted again and the values nothing
// produces or reads any more are dropped.
inline Status remove_replaced_nodes(Graph& graph, const std::set<const Node*>& dead) {
  graph.remove_nodes_if([&](const Node* n) { return is_removed(dead, n); });
  GRAFT_RETURN_IF_ERROR(graph.topological_sort());
  graph.prune_values();
  return Status::ok();
}

}  // namespace graft
