#include "backends/cpu/control_flow.h"

#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "graph/subgraph.h"
#include "ops/control_flow_attrs.h"
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

// `dims` with `len` inserted at `axis`.
std::vector<int64_t> with_axis(std::vector<int64_t> dims, size_t axis, int64_t len) {
  dims.insert(dims.begin() + static_cast<ptrdiff_t>(axis), len);
  return dims;
}

// The dtype and dims a scan output of zero iterations gets: what inference says one iteration would
// return (a dimension known only by running is taken as 0, since there is no element either way).
Status desc_without_running(const Node& node, const Graph& body, const std::vector<Tensor>& inputs,
                            const std::vector<const Tensor*>& captures, size_t out, DataType* dtype,
                            std::vector<int64_t>* dims) {
  std::vector<TensorDesc> descs;
  for (const Tensor& t : inputs) descs.emplace_back(t.dtype(), shape_from_values(t.dims()));
  std::vector<TensorDesc> cap_descs(captures.size());
  std::vector<InferContext::InputInfo> ins(inputs.size()), caps(captures.size());
  for (size_t i = 0; i < inputs.size(); ++i) ins[i].desc = &descs[i];
  for (size_t i = 0; i < captures.size(); ++i) {
    if (!captures[i]) continue;
    cap_descs[i] = TensorDesc(captures[i]->dtype(), shape_from_values(captures[i]->dims()));
    caps[i].desc = &cap_descs[i];
    caps[i].value = captures[i];
  }
  std::vector<SubgraphInfo> outs;
  GRAFT_RETURN_IF_ERROR(infer_subgraph(node, "body", body, ins, caps, &outs));
  *dtype = outs[out].desc.dtype;
  dims->clear();
  if (outs[out].desc.shape)
    for (const Dim& d : *outs[out].desc.shape) dims->push_back(d.is_const() ? d.value() : 0);
  return Status::ok();
}

bool truthy(const Tensor& t) { return t.get(0) != 0; }

}  // namespace

Status if_op(ExecContext& ctx) {
  const Node& node = *ctx.node;
  const Tensor* cond = ctx.inputs.empty() ? nullptr : ctx.inputs[0];
  if (!cond || cond->dtype() != DataType::kBool || cond->numel() != 1)
    return error(StatusCode::kInvalidArgument, "cond must be one bool element");
  const std::string attr = truthy(*cond) ? "then_branch" : "else_branch";
  GRAFT_ASSIGN_OR_RETURN(const Graph* branch, node_subgraph(node, attr));
  GRAFT_ASSIGN_OR_RETURN(std::vector<Tensor> outs, run_subgraph(node, attr, *branch, {}, captures_of(ctx)));
  if (outs.size() != ctx.outputs.size())
    return error(StatusCode::kInvalidModel, attr, " returns ", static_cast<uint64_t>(outs.size()),
                 " values but the node has ", static_cast<uint64_t>(ctx.outputs.size()), " outputs")
        .with_attribute(attr);
  for (size_t o = 0; o < outs.size(); ++o) GRAFT_RETURN_IF_ERROR(set_output_value(ctx, o, outs[o]));
  return Status::ok();
}

Status loop_op(ExecContext& ctx) {
  const Node& node = *ctx.node;
  GRAFT_ASSIGN_OR_RETURN(const Graph* body, node_subgraph(node, "body"));
  const size_t n = node.explicit_inputs() - 2;
  const size_t k = body->outputs().size() - 1 - n;
  const Tensor* m = ctx.inputs[0];
  const Tensor* c = ctx.inputs[1];
  if (!m && !c)
    return error(StatusCode::kInvalidModel, "neither the trip count M nor cond is given: the loop would never end");
  if (m && (m->dtype() != DataType::kInt64 || m->numel() != 1))
    return error(StatusCode::kInvalidArgument, "the trip count M must be one int64 element");
  if (c && (c->dtype() != DataType::kBool || c->numel() != 1))
    return error(StatusCode::kInvalidArgument, "cond must be one bool element");
  const int64_t trips = m ? m->data_as<int64_t>()[0] : std::numeric_limits<int64_t>::max();
  bool go = c ? truthy(*c) : true;
  const auto caps = captures_of(ctx);

  std::vector<Tensor> state(n + 2);
  for (size_t j = 0; j < n; ++j) state[j + 2] = *ctx.inputs[j + 2];
  std::vector<std::vector<Tensor>> scans(k);
  int64_t i = 0;
  for (; i < trips && go; ++i) {
    state[0] = Tensor::scalar_int64(i);
    state[1] = Tensor::from_doubles(DataType::kBool, {}, {go ? 1.0 : 0.0});
    GRAFT_ASSIGN_OR_RETURN(std::vector<Tensor> outs, run_subgraph(node, "body", *body, state, caps));
    if (outs.size() != 1 + n + k || outs[0].dtype() != DataType::kBool || outs[0].numel() != 1)
      return error(StatusCode::kInvalidModel, "iteration ", i, ": the body's condition is not one bool element")
          .with_attribute("body");
    // Without a cond input the loop is a for loop: the body's condition is ignored (ONNX Loop).
    if (c) go = truthy(outs[0]);
    for (size_t j = 0; j < n; ++j) {
      if (outs[1 + j].dtype() != state[j + 2].dtype() ||
          (outs[1 + j].kind() != state[j + 2].kind() && optional_content(state[j + 2].kind()) != outs[1 + j].kind()))
        return error(StatusCode::kInvalidModel, "iteration ", i, ": loop-carried value ", static_cast<uint64_t>(j),
                     " changes from ", desc_of_value(state[j + 2]).to_string(), " to ", desc_of_value(outs[1 + j]).to_string())
            .with_attribute("body");
      state[j + 2] = std::move(outs[1 + j]);
    }
    for (size_t s = 0; s < k; ++s) {
      Tensor& t = outs[1 + n + s];
      if (!scans[s].empty() && (t.dims() != scans[s][0].dims() || t.dtype() != scans[s][0].dtype()))
        return error(StatusCode::kInvalidModel, "scan output ", static_cast<uint64_t>(s), " is ",
                     TensorDesc(t.dtype(), shape_from_values(t.dims())).to_string(), " in iteration ", i, " but ",
                     TensorDesc(scans[s][0].dtype(), shape_from_values(scans[s][0].dims())).to_string(),
                     " in iteration 0; scan outputs are stacked, so every iteration must agree")
            .with_attribute("body");
      scans[s].push_back(std::move(t));
    }
  }
  for (size_t j = 0; j < n; ++j) GRAFT_RETURN_IF_ERROR(set_output_value(ctx, j, state[j + 2]));
  for (size_t s = 0; s < k; ++s) {
    if (!ctx.outputs[n + s]) continue;
    std::vector<int64_t> item;
    DataType dt = DataType::kUndefined;
    if (!scans[s].empty()) {
      item = scans[s][0].dims();
      dt = scans[s][0].dtype();
    } else {
      state[0] = Tensor::scalar_int64(0);
      state[1] = Tensor::from_doubles(DataType::kBool, {}, {1.0});
      GRAFT_RETURN_IF_ERROR(desc_without_running(node, *body, state, caps, 1 + n + s, &dt, &item));
    }
    GRAFT_ASSIGN_OR_RETURN(Tensor * out, allocate_output(ctx, n + s, dt, with_axis(item, 0, i)));
    for (int64_t t = 0; t < i; ++t) put_slice(*out, 0, t, scans[s][static_cast<size_t>(t)]);
  }
  return Status::ok();
}

Status scan_op(ExecContext& ctx) {
  const Node& node = *ctx.node;
  GRAFT_ASSIGN_OR_RETURN(const Graph* body, node_subgraph(node, "body"));
  GRAFT_ASSIGN_OR_RETURN(ScanLayout lay, scan_layout(node));
  const auto caps = captures_of(ctx);
  std::vector<size_t> in_axis(lay.m), out_axis(lay.k);
  int64_t length = -1;
  for (size_t j = 0; j < lay.m; ++j) {
    const Tensor& x = *ctx.inputs[lay.n + j];
    GRAFT_ASSIGN_OR_RETURN(int64_t a, normalize_axis(lay.in_axes[j], x.rank()));
    in_axis[j] = static_cast<size_t>(a);
    if (length >= 0 && x.dims()[in_axis[j]] != length)
      return error(StatusCode::kInvalidArgument, "scan input ", static_cast<uint64_t>(j), " has ", x.dims()[in_axis[j]],
                   " elements along axis ", a, " but an earlier scan input has ", length);
    length = x.dims()[in_axis[j]];
  }
  std::vector<Tensor> args(lay.n + lay.m);
  for (size_t j = 0; j < lay.n; ++j) args[j] = *ctx.inputs[j];
  auto set_slices = [&](int64_t t) {
    for (size_t j = 0; j < lay.m; ++j)
      args[lay.n + j] = take_slice(*ctx.inputs[lay.n + j], in_axis[j], lay.in_reverse[j] ? length - 1 - t : t);
  };
  std::vector<Tensor*> outs_k(lay.k, nullptr);
  for (int64_t t = 0; t < length; ++t) {
    set_slices(t);
    GRAFT_ASSIGN_OR_RETURN(std::vector<Tensor> outs, run_subgraph(node, "body", *body, args, caps));
    for (size_t j = 0; j < lay.n; ++j) {
      if (outs[j].dtype() != args[j].dtype())
        return error(StatusCode::kInvalidModel, "iteration ", t, ": state ", static_cast<uint64_t>(j),
                     " changes dtype from ", dtype_name(args[j].dtype()), " to ", dtype_name(outs[j].dtype()))
            .with_attribute("body");
      args[j] = std::move(outs[j]);
    }
    for (size_t s = 0; s < lay.k; ++s) {
      const Tensor& y = outs[lay.n + s];
      if (!outs_k[s]) {
        GRAFT_ASSIGN_OR_RETURN(int64_t a, normalize_axis(lay.out_axes[s], y.rank() + 1));
        out_axis[s] = static_cast<size_t>(a);
        if (!ctx.outputs[lay.n + s]) continue;
        GRAFT_ASSIGN_OR_RETURN(outs_k[s], allocate_output(ctx, lay.n + s, y.dtype(), with_axis(y.dims(), out_axis[s], length)));
      }
      std::vector<int64_t> expect = outs_k[s]->dims();
      expect.erase(expect.begin() + static_cast<ptrdiff_t>(out_axis[s]));
      if (y.dims() != expect || y.dtype() != outs_k[s]->dtype())
        return error(StatusCode::kInvalidModel, "iteration ", t, ": scan output ", static_cast<uint64_t>(s), " is ",
                     TensorDesc(y.dtype(), shape_from_values(y.dims())).to_string(),
                     ", unlike iteration 0; scan outputs are stacked, so every iteration must agree")
            .with_attribute("body");
      put_slice(*outs_k[s], out_axis[s], lay.out_reverse[s] ? length - 1 - t : t, y);
    }
  }
  for (size_t j = 0; j < lay.n; ++j) GRAFT_RETURN_IF_ERROR(set_output_value(ctx, j, args[j]));
  if (length == 0) {
    // No iteration ran: each scan output is empty, with the dims one iteration would have given.
    for (size_t j = 0; j < lay.m; ++j) {
      std::vector<int64_t> d = ctx.inputs[lay.n + j]->dims();
      d.erase(d.begin() + static_cast<ptrdiff_t>(in_axis[j]));
      args[lay.n + j] = Tensor::empty(ctx.inputs[lay.n + j]->dtype(), d);
    }
    for (size_t s = 0; s < lay.k; ++s) {
      if (!ctx.outputs[lay.n + s]) continue;
      DataType dt;
      std::vector<int64_t> item;
      GRAFT_RETURN_IF_ERROR(desc_without_running(node, *body, args, caps, lay.n + s, &dt, &item));
      GRAFT_ASSIGN_OR_RETURN(int64_t a, normalize_axis(lay.out_axes[s], static_cast<int64_t>(item.size()) + 1));
      GRAFT_RETURN_IF_ERROR(allocate_output(ctx, lay.n + s, dt, with_axis(item, static_cast<size_t>(a), 0)).status());
    }
  }
  return Status::ok();
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
