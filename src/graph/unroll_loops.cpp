// Loop nodes whose trip count is known at build time and that cannot stop early become copies of
// their body, one per iteration, in the main graph. A Loop runs its body step by step, deciding on
// the host, so a CUDA engine cannot capture it in a CUDA graph and its body's layers get none of
// the fusion passes; unrolled, the iterations are ordinary layers that do.
//
// A Loop is unrolled when:
// - its trip count M is a one-element integer constant with 1 <= M <= kMaxTrips (M = 0 runs no
//   iteration but its scan outputs still need a per-iteration shape, so it stays a Loop);
// - it cannot stop before M: it has no cond input (a for loop: ONNX ignores the body's condition
//   then), or its cond input is a constant true and the body hands its condition input through
//   unchanged (directly or through Identity nodes) or returns a constant true;
// - its body holds no node with subgraphs of its own (nested control flow stays as it is);
// - M times the body's node count is at most kMaxUnrolledNodes.
//
// Iteration i binds the body's inputs to a constant iteration number i, a constant true and the
// loop-carried values of iteration i - 1 (the Loop's inputs for i = 0); the body's captured values to
// the Loop's implicit inputs; its initializers to constants of the main graph. A scan output
// becomes the Concat of every iteration's value, each Unsqueezed on a new axis 0. The Loop's outputs
// keep their values (names, readers): an Identity from what the last iteration made, which
// remove_identities then folds away.
#include <map>
#include <set>

#include "graph/pass_util.h"
#include "graph/passes.h"
#include "graph/subgraph.h"

namespace graft {

namespace {

constexpr int64_t kMaxTrips = 64;
constexpr int64_t kMaxUnrolledNodes = 4096;

// The integer of a one-element integer constant.
std::optional<int64_t> constant_int(const Value* v) {
  if (!v || !v->constant || v->constant->numel() != 1 || !dtype_is_integer(v->constant->dtype()) ||
      !v->constant->is_tensor())
    return std::nullopt;
  return v->constant->to_int64_vector()[0];
}

bool constant_true(const Value* v) { return constant_bool(v) == true; }

// The trip count when `loop` runs exactly that many iterations, else nullopt.
std::optional<int64_t> fixed_trip_count(const Node& loop, const Graph& body) {
  const std::optional<int64_t> m = constant_int(loop.input(0));
  if (!m || *m < 1 || *m > kMaxTrips) return std::nullopt;
  // The body's signature against the node's (inference has checked it; a mismatch is left for the
  // Loop's own kernel to report): (i, cond, carried...) -> (cond, carried..., scans...).
  const size_t carried = loop.explicit_inputs() - 2;
  if (body.inputs().size() != carried + 2 || body.outputs().size() < 1 + carried ||
      loop.outputs.size() != body.outputs().size() - 1)
    return std::nullopt;
  if (loop.explicit_inputs() >= 2 && loop.inputs[1]) {
    if (!constant_true(loop.inputs[1])) return std::nullopt;
    // Through Identity nodes (PyTorch's exporters hand the condition on through one).
    const Value* cond_out = body.outputs()[0];
    while (cond_out && cond_out->producer && cond_out->producer->op_type == "Identity" &&
           cond_out->producer->domain.empty() && cond_out->producer->inputs.size() == 1)
      cond_out = cond_out->producer->inputs[0];
    if (cond_out != body.inputs()[1] && !constant_true(cond_out)) return std::nullopt;
  }
  // Every value the body reads is one of its inputs, captures or initializers, or made by an earlier
  // node of it (so each iteration's copy can be wired as it is added); no nested subgraphs.
  if (!copyable_subgraph(body)) return std::nullopt;
  if (*m * static_cast<int64_t>(body.nodes().size()) > kMaxUnrolledNodes) return std::nullopt;
  return m;
}

Tensor bool_scalar(bool b) {
  Tensor t = Tensor::empty(DataType::kBool, {});
  t.set(0, b ? 1.0 : 0.0);
  return t;
}

// Unrolls `loop` (fixed_trip_count said `trips`) into `g`: adds the iterations' nodes and, for every
// output of the Loop, a node writing it. The Loop node itself is left for the caller to remove.
Status unroll(Graph& g, Node& loop, const Graph& body, int64_t trips, NodeNamer& namer) {
  const size_t carried = loop.explicit_inputs() - 2;
  const size_t scans = body.outputs().size() - 1 - carried;
  const int opset = default_domain_opset(g);

  // Values every iteration shares: captured values and the body's initializers.
  const std::map<const Value*, Value*> shared = outer_bindings(g, loop, body);

  std::vector<Value*> state(loop.inputs.begin() + 2, loop.inputs.begin() + 2 + static_cast<std::ptrdiff_t>(carried));
  std::vector<std::vector<Value*>> scanned(scans);
  for (int64_t i = 0; i < trips; ++i) {
    const std::string suffix = "_iter" + std::to_string(i);
    std::map<const Value*, Value*> map = shared;
    map[body.inputs()[0]] = g.new_constant(loop.name + "_i" + suffix, Tensor::scalar_int64(i));
    map[body.inputs()[1]] = g.new_constant(loop.name + "_cond" + suffix, bool_scalar(true));
    for (size_t k = 0; k < carried; ++k) map[body.inputs()[2 + k]] = state[k];
    GRAFT_RETURN_IF_ERROR(copy_subgraph_nodes(g, loop, body, suffix, map, namer));
    const auto bound = [&](const Value* v) -> Value* { return v ? map.at(v) : nullptr; };
    // copyable_subgraph checked that every output is bound by now.
    for (size_t k = 0; k < carried; ++k) state[k] = bound(body.outputs()[1 + k]);
    for (size_t k = 0; k < scans; ++k) scanned[k].push_back(bound(body.outputs()[1 + carried + k]));
  }

  // The Loop's outputs, written by new nodes (the Loop's own node is about to go).
  const auto write = [&](const std::string& op, std::vector<Value*> inputs, Value* out) {
    Node* n = g.add_node(namer(loop.name + "/" + op), op);
    n->opset = opset;
    n->inputs = std::move(inputs);
    n->outputs = {out};
    out->producer = n;
    n->precision = loop.precision;
    return n;
  };
  for (size_t k = 0; k < carried; ++k)
    if (Value* out = loop.outputs[k]) write("Identity", {state[k]}, out);
  for (size_t k = 0; k < scans; ++k) {
    Value* out = loop.outputs[carried + k];
    if (!out) continue;
    std::vector<Value*> rows;
    for (Value* v : scanned[k]) {
      Value* row = trips == 1 ? out : g.new_value(out->name + "_row");
      Node* u = write("Unsqueeze", {v}, row);
      if (opset >= 13) u->inputs.push_back(g.new_constant(out->name + "_axes", Tensor::vector_int64({0})));
      else u->attrs.set("axes", std::vector<int64_t>{0});
      rows.push_back(row);
    }
    if (trips > 1) write("Concat", rows, out)->attrs.set("axis", int64_t{0});
  }
  return Status::ok();
}

}  // namespace

Result<int> unroll_fixed_loops(Graph& graph) {
  std::vector<Node*> loops;
  for (const auto& n : graph.nodes())
    if (n->op_type == "Loop" && n->domain.empty() && n->explicit_inputs() >= 2) loops.push_back(n.get());
  NodeNamer namer(graph);
  std::set<const Node*> done;
  for (Node* loop : loops) {
    auto body = node_subgraph(*loop, "body");
    if (!body) continue;
    const std::optional<int64_t> trips = fixed_trip_count(*loop, **body);
    if (!trips) continue;
    GRAFT_RETURN_IF_ERROR(unroll(graph, *loop, **body, *trips, namer));
    done.insert(loop);
  }
  return remove_copied_nodes(graph, done);
}

}  // namespace graft
