// Helpers of the graph-pass tests: import a built ONNX model (identities removed, shapes inferred,
// constants folded), run a graph node by node on the CPU reference, and check that a pass keeps
// the outputs on fresh random inputs.
#pragma once

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "graft/engine.h"
#include "graph/passes.h"
#include "onnx/importer.h"
#include "plan/plan.h"
#include "runtime/cpu_engine.h"
#include "runtime/cpu_executor.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/op_test_util.h"

namespace graft::testing {

// Uniform int8 values over [lo, hi] (quantized weights and activations).
inline Tensor random_int8(std::vector<int64_t> dims, std::mt19937& rng, int lo = -128, int hi = 127) {
  Tensor t = Tensor::empty(DataType::kInt8, std::move(dims));
  std::uniform_int_distribution<int> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, d(rng));
  return t;
}

inline std::unique_ptr<Graph> load(const OnnxModelBuilder& b) {
  auto g = import_onnx_bytes(b.bytes(), "pass_test.onnx");
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  if (!g.is_ok()) return nullptr;
  std::unique_ptr<Graph> graph = std::move(g).value();
  remove_identities(*graph);
  EXPECT_TRUE(infer_shapes(*graph).is_ok());
  auto folded = fold_constants(*graph, run_node_cpu);
  EXPECT_TRUE(folded.is_ok()) << folded.status().to_string();
  EXPECT_TRUE(infer_shapes(*graph).is_ok());
  return graph;
}

// Runs the graph node by node on the CPU reference; returns its outputs by name.
inline std::map<std::string, Tensor> run_graph(const Graph& g, const std::map<std::string, Tensor>& feeds) {
  std::map<const Value*, Tensor> vals;
  for (const Value* v : g.inputs()) vals[v] = feeds.at(v->name);
  for (const auto& n : g.nodes()) {
    std::vector<const Tensor*> ins;
    for (const Value* v : n->inputs) ins.push_back(!v ? nullptr : v->constant ? &*v->constant : &vals.at(v));
    auto outs = run_node_cpu(*n, ins);
    EXPECT_TRUE(outs.is_ok()) << outs.status().to_string();
    if (!outs.is_ok()) return {};
    for (size_t i = 0; i < n->outputs.size(); ++i)
      if (n->outputs[i]) vals[n->outputs[i]] = outs.value()[i];
  }
  std::map<std::string, Tensor> out;
  for (const Value* v : g.outputs()) out[v->name] = v->constant ? *v->constant : vals.at(v);
  return out;
}

inline int count_op(const Graph& g, const std::string& op) {
  int k = 0;
  for (const auto& n : g.nodes()) k += n->op_type == op;
  return k;
}

inline const Node* find_op(const Graph& g, const std::string& op) {
  for (const auto& n : g.nodes())
    if (n->op_type == op) return n.get();
  return nullptr;
}

inline void expect_close(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-6) {
  ASSERT_EQ(a.dims(), b.dims());
  for (int64_t i = 0; i < a.numel(); ++i)
    ASSERT_NEAR(a.get(i), b.get(i), atol + rtol * std::fabs(b.get(i))) << "element " << i;
}

// Fresh random feeds for every graph input (static shapes).
inline std::map<std::string, Tensor> feeds_for(const Graph& g, std::mt19937& rng, double lo = -2, double hi = 2) {
  std::map<std::string, Tensor> f;
  for (const Value* v : g.inputs()) f[v->name] = random_tensor(v->desc.dtype, shape_values(*v->desc.shape), rng, lo, hi);
  return f;
}

// Runs `pass` on `g`; checks it made `expect` fusions and that outputs agree with the original.
inline void check_pass(Graph& g, const std::function<Result<int>(Graph&)>& pass, int expect, uint32_t seed,
                double rtol = 1e-5, double atol = 1e-6) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  auto feeds = feeds_for(g, rng);
  auto before = run_graph(g, feeds);
  auto n = pass(g);
  ASSERT_TRUE(n.is_ok()) << n.status().to_string();
  EXPECT_EQ(n.value(), expect);
  ASSERT_TRUE(infer_shapes(g).is_ok());
  auto after = run_graph(g, feeds);
  ASSERT_EQ(before.size(), after.size());
  for (auto& [name, t] : before) expect_close(after.at(name), t, rtol, atol);
}

// Building an engine from `m` must fail with one error naming `attribute` and the node `node`.
// A graph that names graft's internal ops, imported as a plan's graph is (import_onnx_model): a
// user's model may not name them (import_onnx_bytes refuses it), a damaged plan may.
inline Result<std::unique_ptr<Graph>> import_plan_graph(const std::string& bytes) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) return error(StatusCode::kInvalidModel, "the test model does not parse");
  move_internal_ops_to_their_domain(model.mutable_graph());  // the tests name them as format 4 did
  return import_onnx_model(model, "plan_graph.onnx", ".");
}

// What loading such a graph says: its shape inference (where internal ops check their attributes),
// then the CPU engine over it.
inline Status load_plan_graph(const std::string& bytes) {
  GRAFT_ASSIGN_OR_RETURN(std::unique_ptr<Graph> g, import_plan_graph(bytes));
  GRAFT_RETURN_IF_ERROR(infer_shapes(*g));
  EngineState st;
  st.graph = std::move(g);
  GRAFT_ASSIGN_OR_RETURN(std::shared_ptr<Engine> eng, make_cpu_engine(std::move(st)));
  return eng ? Status::ok() : error(StatusCode::kInternal, "no engine");
}

// An internal node with a bad attribute, as a damaged plan would carry it: refused, naming the
// attribute and the node.
inline void expect_refused(const OnnxModelBuilder& m, const std::string& attribute, const std::string& node) {
  Status s = load_plan_graph(m.bytes());
  ASSERT_FALSE(s.is_ok()) << attribute;
  const std::string msg = s.to_string();
  EXPECT_NE(msg.find(attribute), std::string::npos) << msg;
  EXPECT_NE(msg.find(node), std::string::npos) << msg;
}

}  // namespace graft::testing
