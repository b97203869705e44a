#include "backends/cpu/control_flow.h"

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "graph/subgraph.h"
#include "ops/control_flow_driver.h"
#include "runtime/cpu_executor.h"

namespace graft::cpu {
namespace {

// Runs subgraph `attr` of `node` on host tensors. Values live in a table of this call, never in the
// subgraph, which every run of the node shares.
Result<std::vector<Tensor>> run_subgraph(const Node& node, const std::string& attr, const Graph& sub,
                                         const std::vector<Tensor>& inputs, const std::vector<const Tensor*>& captures) {
  std::map<const Value*, Tensor> live;
  for (size_t i = 0; i < inputs.size() && i < sub.inputs().size(); ++i) live[sub.inputs()[i]] = inputs[i];
  for (size_t i = 0; i < captures.size() && i < sub.captures.size(); ++i)
    if (captures[i]) live[sub.captures[i]] = *captures[i];
  auto lookup = [&](const Value* v) -> const Tensor* {
    if (v->constant) return &*v->constant;
    auto it = live.find(v);
    return it == live.end() ? nullptr : &it->second;
  };
  for (const auto& up : sub.nodes()) {
    const Node& n = *up;
    std::vector<const Tensor*> ins;
    for (const Value* v : n.inputs) {
      if (!v) { ins.push_back(nullptr); continue; }
      const Tensor* t = lookup(v);
      if (!t)
        return subgraph_error(node, attr, error(StatusCode::kInternal, "value '", v->name, "' was not computed before use")
                                              .with_node(n.name, n.op_type));
      ins.push_back(t);
    }
    auto outs = run_node_cpu(n, ins);
    if (!outs) return subgraph_error(node, attr, outs.status());
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o]) live[n.outputs[o]] = std::move((*outs)[o]);
  }
  std::vector<Tensor> result;
  for (const Value* v : sub.outputs()) {
    const Tensor* t = lookup(v);
    if (!t) return error(StatusCode::kInternal, "subgraph '", attr, "' output '", v->name, "' was not computed")
                   .with_node(node.name, node.op_type);
    result.push_back(*t);
  }
  return result;
}

std::vector<const Tensor*> captures_of(const ExecContext& ctx) {
  return std::vector<const Tensor*>(ctx.inputs.begin() + static_cast<ptrdiff_t>(ctx.node->explicit_inputs()),
                                    ctx.inputs.end());
}


// Rows and row bytes around `axis`: a tensor is [outer, dims[axis], inner] in bytes.
void split_at(const std::vector<int64_t>& dims, size_t axis, size_t elem, int64_t* outer, size_t* inner_bytes) {
  *outer = 1;
  for (size_t i = 0; i < axis; ++i) *outer *= dims[i];
  size_t inner = elem;
  for (size_t i = axis + 1; i < dims.size(); ++i) inner *= static_cast<size_t>(dims[i]);
  *inner_bytes = inner;
}

// x[..., index, ...] along `axis`, with that axis removed.
Tensor take_slice(const Tensor& x, size_t axis, int64_t index) {
  std::vector<int64_t> dims = x.dims();
  const int64_t len = dims[axis];
  int64_t outer;
  size_t inner;
  split_at(dims, axis, dtype_size(x.dtype()), &outer, &inner);
  dims.erase(dims.begin() + static_cast<ptrdiff_t>(axis));
  Tensor s = Tensor::empty(x.dtype(), dims);
  const char* src = static_cast<const char*>(x.data());
  char* dst = static_cast<char*>(s.data());
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + static_cast<size_t>(o) * inner, src + (static_cast<size_t>(o * len + index)) * inner, inner);
  return s;
}

// y[..., index, ...] = s along `axis` (s has y's dims without that axis).
void put_slice(Tensor& y, size_t axis, int64_t index, const Tensor& s) {
  const int64_t len = y.dims()[axis];
  int64_t outer;
  size_t inner;
  split_at(y.dims(), axis, dtype_size(y.dtype()), &outer, &inner);
  const char* src = static_cast<const char*>(s.data());
  char* dst = static_cast<char*>(y.data());
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + (static_cast<size_t>(o * len + index)) * inner, src + static_cast<size_t>(o) * inner, inner);
}

bool truthy(const Tensor& t) { return t.get(0) != 0; }

// The CPU reference's side of the control-flow drivers (ops/control_flow_driver.h): subgraphs run
// node by node on host tensors.
class CpuSubgraphDevice final : public SubgraphDevice {
 public:
  explicit CpuSubgraphDevice(ExecContext& ctx) : ctx_(ctx) {}
  Result<std::vector<Tensor>> run_subgraph(const std::string& attr, const Graph& sub,
                                           const std::vector<Tensor>& inputs) override {
    return cpu::run_subgraph(*ctx_.node, attr, sub, inputs, captures_of(ctx_));
  }
  Result<bool> read_bool(const Tensor& t) override { return truthy(t); }
  Result<Tensor> take_slice(const Tensor& x, size_t axis, int64_t index) override {
    return cpu::take_slice(x, axis, index);
  }
  Status put_slice(Tensor& y, size_t axis, int64_t index, const Tensor& s) override {
    cpu::put_slice(y, axis, index, s);
    return Status::ok();
  }
  Result<Tensor*> allocate_output(size_t o, DataType dtype, std::vector<int64_t> dims) override {
    return graft::allocate_output(ctx_, o, dtype, std::move(dims));
  }
  Status set_output(size_t o, Tensor value) override { return set_output_value(ctx_, o, std::move(value)); }

 private:
  ExecContext& ctx_;
};

}  // namespace

Status if_op(ExecContext& ctx) {
  CpuSubgraphDevice dev(ctx);
  return run_if(ctx, dev);
}

Status loop_op(ExecContext& ctx) {
  CpuSubgraphDevice dev(ctx);
  return run_loop(ctx, dev);
}

Status scan_op(ExecContext& ctx) {
  CpuSubgraphDevice dev(ctx);
  return run_scan(ctx, dev);
}

Status sequence_map_op(ExecContext& ctx) {
  const Node& node = *ctx.node;
  GRAFT_ASSIGN_OR_RETURN(const Graph* body, node_subgraph(node, "body"));
  const size_t m = node.explicit_inputs();
  const Tensor* seq = m ? ctx.inputs[0] : nullptr;
  if (!seq || seq->kind() != ValueKind::kSequence)
    return error(StatusCode::kInvalidArgument, "input 0 must be a sequence");
  const size_t length = seq->items().size();
  for (size_t j = 1; j < m; ++j) {
    const Tensor* in = ctx.inputs[j];
    if (!in) return error(StatusCode::kInvalidModel, "input ", static_cast<uint64_t>(j), " is missing");
    if (in->kind() == ValueKind::kSequence && in->items().size() != length)
      return error(StatusCode::kInvalidArgument, "input ", static_cast<uint64_t>(j), " is a sequence of ",
                   static_cast<uint64_t>(in->items().size()), " tensors but input 0 has ", static_cast<uint64_t>(length),
                   "; SequenceMap's sequences must have the same length");
  }
  const auto caps = captures_of(ctx);
  std::vector<std::vector<Tensor>> collected(node.outputs.size());
  std::vector<Tensor> args(m);
  for (size_t i = 0; i < length; ++i) {
    for (size_t j = 0; j < m; ++j) {
      const Tensor& in = *ctx.inputs[j];
      args[j] = in.kind() == ValueKind::kSequence ? in.items()[i] : in;
    }
    GRAFT_ASSIGN_OR_RETURN(std::vector<Tensor> outs, run_subgraph(node, "body", *body, args, caps));
    for (size_t o = 0; o < outs.size() && o < collected.size(); ++o) collected[o].push_back(std::move(outs[o]));
  }
  for (size_t o = 0; o < collected.size(); ++o) {
    if (!ctx.outputs[o]) continue;
    // The dtype of what the body returns; with no tensor to map, inference's (the node's output desc).
    DataType dt = collected[o].empty() ? node.outputs[o]->desc.dtype : collected[o][0].dtype();
    GRAFT_ASSIGN_OR_RETURN(Tensor out, Tensor::sequence(dt, std::move(collected[o])));
    GRAFT_RETURN_IF_ERROR(set_output_value(ctx, o, std::move(out)));
  }
  return Status::ok();
}

}  // namespace graft::cpu
