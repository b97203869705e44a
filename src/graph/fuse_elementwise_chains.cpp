// The CUDA builder's "fuse elementwise" pass (ops: src/ops/transformer/transformer.h).
//
// fuse_elementwise_chains runs last (after float16 and layout passes): connected groups of
// elementwise nodes whose non-scalar operands all have the output's shape, linked through values
// with a single consumer, become one GraftElementwise executing a small program per element.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>

#include "core/index_math.h"
#include "graph/pass_util.h"
#include "graph/passes.h"
#include "ops/transformer/transformer.h"
#include "ops/internal_ops.h"
#include "ops/operator.h"

namespace graft {

// ---- elementwise chains -------------------------------------------------------------------------

namespace {

// How one node becomes instructions: which inputs are full-shape tensors, which must be scalar
// constants (immediates), and the opcode.
struct EwNodeInfo {
  EwOp op = EwOp::kCopy;
  // Operand sources in input order; an extra immediate (alpha/beta, clip bounds) follows.
  std::vector<int> tensor_inputs;   // indices of inputs that may be tensors (or scalars)
  std::vector<float> extra_imm;     // immediates appended as further operands
};

// Whether operand `i` of a chain node becomes an immediate (the same test as ew_info's).
bool is_scalar_operand(const Node& n, int i) {
  const Value* v = n.inputs[static_cast<size_t>(i)];
  return v->constant && v->constant->numel() == 1 &&
         (dtype_is_float(v->constant->dtype()) || (n.op_type == "Pow" && i == 1));
}

// nullopt when the node cannot join a chain.
std::optional<EwNodeInfo> ew_info(const Node& n) {
  if (!is_onnx(n) || n.outputs.size() != 1 || !n.outputs[0]) return std::nullopt;
  const Value* y = n.outputs[0];
  if (!is_float_io(y->desc.dtype) || !y->desc.shape) return std::nullopt;
  EwNodeInfo info;
  const std::string& t = n.op_type;
  // Ops that are one instruction whatever their attributes say so in their definition
  // (OpEntry::elementwise_opcode); the ones below depend on attributes.
  const OpEntry* def = find_onnx_op(t);
  if (def && def->elementwise_opcode) {
    const int arity = ew_arity(*def->elementwise_opcode);  // 1 or 2: no op names a three-operand one
    if (n.inputs.size() != static_cast<size_t>(arity)) return std::nullopt;
    info.op = *def->elementwise_opcode;
    info.tensor_inputs = arity == 1 ? std::vector<int>{0} : std::vector<int>{0, 1};
    // Pow: only a constant exponent (a tensor exponent would need its own dtype rules).
    if (t == "Pow") {
      const Value* e = n.inputs[1];
      if (!e || !e->constant || e->constant->numel() != 1) return std::nullopt;
    }
  } else if (t == "HardSigmoid") {
    if (n.inputs.size() != 1) return std::nullopt;
    auto a = n.attrs.get_float("alpha", 0.2f);
    auto b = n.attrs.get_float("beta", 0.5f);
    if (!a || !b) return std::nullopt;
    info.op = EwOp::kHardSigmoid;
    info.tensor_inputs = {0};
    info.extra_imm = {a.value(), b.value()};
  } else if (t == "Gelu") {
    auto approx = n.attrs.get_string("approximate", "none");
    if (!approx || n.inputs.size() != 1) return std::nullopt;
    if (approx.value() == "none") info.op = EwOp::kGeluErf;
    else if (approx.value() == "tanh") info.op = EwOp::kGeluTanh;
    else return std::nullopt;
    info.tensor_inputs = {0};
  } else if (t == "Clip") {
    float lo = 0, hi = 0;
    if (n.inputs.empty() || n.inputs.size() > 3 || !clip_bounds(n, &lo, &hi)) return std::nullopt;
    info.op = EwOp::kClip;
    info.tensor_inputs = {0};
    info.extra_imm = {lo, hi};
  } else if (t == "Cast") {
    if (n.inputs.size() != 1 || !n.inputs[0] || !is_float_io(n.inputs[0]->desc.dtype)) return std::nullopt;
    const bool narrowing = n.inputs[0]->desc.dtype == DataType::kFloat32 && y->desc.dtype == DataType::kFloat16;
    info.op = narrowing ? EwOp::kRoundHalf : EwOp::kCopy;
    info.tensor_inputs = {0};
  } else {
    return std::nullopt;
  }
  // Every operand: a scalar constant (immediate; Pow's exponent may be integer), or a float
  // tensor of exactly the output's shape. At least one must be a tensor.
  bool any_tensor = false;
  for (int i : info.tensor_inputs) {
    const Value* v = n.inputs[static_cast<size_t>(i)];
    if (!v) return std::nullopt;
    if (is_scalar_operand(n, i)) {
      // A scalar of higher rank than the output would broadcast the output up: not a chain node.
      if (v->constant->rank() > static_cast<int64_t>(y->desc.shape->size())) return std::nullopt;
      continue;
    }
    if (!is_float_io(v->desc.dtype) || !v->desc.shape || !shapes_same(*v->desc.shape, *y->desc.shape)) return std::nullopt;
    any_tensor = true;
  }
  if (!any_tensor) return std::nullopt;
  return info;
}

}  // namespace

Result<int> fuse_elementwise_chains(Graph& graph, const std::function<bool(const Node&)>& supported) {
  Consumers cons = graph.consumers();
  std::vector<Node*> order;
  for (const auto& n : graph.nodes()) order.push_back(n.get());
  std::map<const Node*, EwNodeInfo> infos;
  for (Node* n : order) {
    auto info = ew_info(*n);
    if (info && (!supported || supported(*n))) infos.emplace(n, *info);
  }
  // Union-find over chain edges: producer -> its only consumer, both chain nodes. Each node has at
  // most one outgoing edge, so every group is an in-tree with one sink (its output).
  std::map<const Node*, const Node*> parent;
  std::function<const Node*(const Node*)> root = [&](const Node* x) {
    const Node* p = parent.count(x) ? parent[x] : x;
    if (p == x) return x;
    const Node* r = root(p);
    parent[x] = r;
    return r;
  };
  for (Node* n : order) {
    if (!infos.count(n)) continue;
    for (int i : infos[n].tensor_inputs) {
      Value* v = n->inputs[static_cast<size_t>(i)];
      Node* p = v->producer;
      if (!p || !infos.count(p) || only_reader(cons, v) != n) continue;
      const Node* a = root(p);
      const Node* b = root(n);
      if (a != b) parent[a] = b;
    }
  }
  std::map<const Node*, std::vector<Node*>> groups;  // root -> members in graph order
  for (Node* n : order)
    if (infos.count(n)) groups[root(n)].push_back(n);

  NodeNamer namer(graph);
  std::set<const Node*> dead;
  int fused = 0;
  for (auto& [r, members] : groups) {
    (void)r;
    if (members.size() < 2) continue;
    std::set<const Node*> in_group(members.begin(), members.end());
    // The sink: the member whose output no member reads.
    Node* sink = nullptr;
    for (Node* m : members) {
      Node* c = only_reader(cons, m->outputs[0]);
      if (!c || !in_group.count(c)) sink = m;
    }
    if (!sink) continue;
    std::vector<Value*> inputs;
    std::map<const Value*, int64_t> reg;
    std::vector<int64_t> code;
    std::vector<float> imm;
    // External tensor inputs first (registers 0..k-1), in order of first use.
    for (Node* m : members)
      for (int i : infos[m].tensor_inputs) {
        Value* v = m->inputs[static_cast<size_t>(i)];
        if (is_scalar_operand(*m, i) || (v->producer && in_group.count(v->producer)) || reg.count(v)) continue;
        reg[v] = static_cast<int64_t>(inputs.size());
        inputs.push_back(v);
      }
    if (inputs.empty() || inputs.size() > static_cast<size_t>(kEwMaxInputs) ||
        members.size() > static_cast<size_t>(kEwMaxInstr))
      continue;
    bool ok = true;
    auto immediate = [&](float f) -> int64_t {
      imm.push_back(f);
      return -static_cast<int64_t>(imm.size());
    };
    for (Node* m : members) {
      const EwNodeInfo& info = infos[m];
      int64_t f[kEwFields] = {static_cast<int64_t>(info.op), static_cast<int64_t>(inputs.size()) + static_cast<int64_t>(code.size()) / kEwFields, 0, 0, 0};
      int k = 2;
      for (int i : info.tensor_inputs) {
        const Value* v = m->inputs[static_cast<size_t>(i)];
        f[k++] = is_scalar_operand(*m, i) ? immediate(static_cast<float>(v->constant->get(0))) : reg.at(v);
      }
      for (float e : info.extra_imm) f[k++] = immediate(e);
      code.insert(code.end(), f, f + kEwFields);
      reg[m->outputs[0]] = f[1];
    }
    if (imm.size() > static_cast<size_t>(kEwMaxImm)) ok = false;
    if (!ok) continue;
    Value* out = sink->outputs[0];
    Node* ew = graph.add_node(namer(sink->name + "_chain"), "GraftElementwise", kInternalDomain);
    ew->opset = sink->opset;
    ew->attrs.set("program", code);
    ew->attrs.set("immediates", imm);
    ew->attrs.set("output_register", reg.at(out));
    ew->attrs.set("to", static_cast<int64_t>(out->desc.dtype));
    ew->inputs = inputs;
    ew->outputs = {out};
    out->producer = ew;
    for (Node* m : members) dead.insert(m);
    ++fused;
  }
  if (fused == 0) return 0;
  GRAFT_RETURN_IF_ERROR(remove_replaced_nodes(graph, dead));
  return fused;
}

}  // namespace graft
