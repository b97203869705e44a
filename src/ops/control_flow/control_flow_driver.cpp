// The control-flow family's shared drivers (control_flow.h): what the sequence and optional ops and
// If, Loop, Scan and SequenceMap mean, for every backend.
#include "ops/control_flow/control_flow.h"

#include <limits>
#include <vector>

#include "graph/subgraph.h"

namespace graft {

// ---- sequences and optionals ----------------------------------------------------------------

namespace {

// Input i as a sequence (inference has checked the kind; a direct call is checked again).
Result<const Tensor*> sequence_input(const ExecContext& ctx, size_t i) {
  const Tensor* s = i < ctx.inputs.size() ? ctx.inputs[i] : nullptr;
  if (!s || s->kind() != ValueKind::kSequence)
    return error(StatusCode::kInvalidArgument, "input ", static_cast<uint64_t>(i), " must be a sequence");
  return s;
}

const Tensor* optional_input(const ExecContext& ctx, size_t i) { return i < ctx.inputs.size() ? ctx.inputs[i] : nullptr; }

// A position or split input, which the backends pass on the host.
Result<const Tensor*> host_input(const ExecContext& ctx, size_t i, const char* what) {
  const Tensor* t = optional_input(ctx, i);
  if (t && t->device() != DeviceType::kCPU)
    return error(StatusCode::kInternal, what, " (input ", static_cast<uint64_t>(i), ") is not on the host");
  return t;
}

Status store_sequence(ContainerDevice& dev, DataType dtype, std::vector<Tensor> items) {
  GRAFT_ASSIGN_OR_RETURN(Tensor seq, Tensor::sequence(dtype, std::move(items)));
  return dev.set_output(0, std::move(seq));
}

}  // namespace

Status run_sequence_empty(const ExecContext& ctx, ContainerDevice& dev) {
  GRAFT_ASSIGN_OR_RETURN(int64_t onnx_type, ctx.attrs->get_int("dtype", static_cast<int64_t>(DataType::kFloat32)));
  DataType dt;
  if (!dtype_from_onnx_numeric(static_cast<int32_t>(onnx_type), &dt))
    return error(StatusCode::kInvalidModel, "dtype ", onnx_type, " is not an element type graft supports")
        .with_attribute("dtype");
  return store_sequence(dev, dt, {});
}

Status run_sequence_construct(const ExecContext& ctx, ContainerDevice& dev) {
  std::vector<Tensor> items;
  for (const Tensor* t : ctx.inputs) {
    if (!t) return error(StatusCode::kInvalidModel, "SequenceConstruct takes no omitted inputs");
    GRAFT_ASSIGN_OR_RETURN(Tensor kept, dev.keep(*t));
    items.push_back(std::move(kept));
  }
  if (items.empty()) return error(StatusCode::kInvalidModel, "SequenceConstruct takes at least one tensor");
  const DataType dtype = items[0].dtype();
  return store_sequence(dev, dtype, std::move(items));
}

Status run_sequence_insert(const ExecContext& ctx, ContainerDevice& dev) {
  GRAFT_ASSIGN_OR_RETURN(const Tensor* seq, sequence_input(ctx, 0));
  const Tensor* x = optional_input(ctx, 1);
  if (!x) return error(StatusCode::kInvalidModel, "the tensor to insert (input 1) is missing");
  std::vector<Tensor> items = seq->items();
  int64_t at = static_cast<int64_t>(items.size());
  GRAFT_ASSIGN_OR_RETURN(const Tensor* pos, host_input(ctx, 2, "the position"));
  if (pos) {
    GRAFT_ASSIGN_OR_RETURN(at, sequence_position(*pos, static_cast<int64_t>(items.size()), true));
  }
  GRAFT_ASSIGN_OR_RETURN(Tensor kept, dev.keep(*x));
  items.insert(items.begin() + at, std::move(kept));
  // Tensor::sequence names a tensor whose dtype differs from the sequence's.
  return store_sequence(dev, seq->dtype(), std::move(items));
}

Status run_sequence_at(const ExecContext& ctx, ContainerDevice& dev) {
  GRAFT_ASSIGN_OR_RETURN(const Tensor* seq, sequence_input(ctx, 0));
  GRAFT_ASSIGN_OR_RETURN(const Tensor* pos, host_input(ctx, 1, "the position"));
  if (!pos) return error(StatusCode::kInvalidModel, "the position (input 1) is missing");
  GRAFT_ASSIGN_OR_RETURN(int64_t at, sequence_position(*pos, static_cast<int64_t>(seq->items().size()), false));
  return dev.set_output(0, seq->items()[static_cast<size_t>(at)]);
}

Status run_sequence_erase(const ExecContext& ctx, ContainerDevice& dev) {
  GRAFT_ASSIGN_OR_RETURN(const Tensor* seq, sequence_input(ctx, 0));
  std::vector<Tensor> items = seq->items();
  if (items.empty()) return error(StatusCode::kInvalidArgument, "the sequence is empty: there is no tensor to erase");
  int64_t at = static_cast<int64_t>(items.size()) - 1;
  GRAFT_ASSIGN_OR_RETURN(const Tensor* pos, host_input(ctx, 1, "the position"));
  if (pos) {
    GRAFT_ASSIGN_OR_RETURN(at, sequence_position(*pos, static_cast<int64_t>(items.size()), false));
  }
  items.erase(items.begin() + at);
  return store_sequence(dev, seq->dtype(), std::move(items));
}

Status run_sequence_length(const ExecContext& ctx, ContainerDevice& dev) {
  GRAFT_ASSIGN_OR_RETURN(const Tensor* seq, sequence_input(ctx, 0));
  return dev.set_output(0, Tensor::scalar_int64(static_cast<int64_t>(seq->items().size())));
}

Status run_split_to_sequence(const ExecContext& ctx, ContainerDevice& dev) {
  const Tensor* x = optional_input(ctx, 0);
  if (!x || !x->is_tensor()) return error(StatusCode::kInvalidArgument, "input 0 must be a tensor");
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, ctx.attrs->get_int("axis", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t keepdims, ctx.attrs->get_int("keepdims", 1));
  auto axis = normalize_axis(axis_attr, x->rank());
  if (!axis) return Status(axis.status()).with_attribute("axis");
  const size_t a = static_cast<size_t>(*axis);
  GRAFT_ASSIGN_OR_RETURN(const Tensor* split, host_input(ctx, 1, "split"));
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> lengths, split_lengths(split, x->dims()[a]));
  // keepdims applies only without `split` (ONNX SplitToSequence).
  const bool drop = !split && keepdims == 0;
  std::vector<Tensor> items;
  int64_t begin = 0;
  for (int64_t len : lengths) {
    GRAFT_ASSIGN_OR_RETURN(Tensor item, dev.slice(*x, a, begin, len, drop));
    items.push_back(std::move(item));
    begin += len;
  }
  return store_sequence(dev, x->dtype(), std::move(items));
}

Status run_concat_from_sequence(const ExecContext& ctx, ContainerDevice& dev) {
  GRAFT_ASSIGN_OR_RETURN(const Tensor* seq, sequence_input(ctx, 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, ctx.attrs->get_int("axis", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t new_axis, ctx.attrs->get_int("new_axis", 0));
  size_t a;
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> dims, concat_from_sequence_dims(seq->items(), axis, new_axis == 1, &a));
  GRAFT_ASSIGN_OR_RETURN(Tensor * y, dev.allocate_output(0, seq->dtype(), dims));
  if (!y) return Status::ok();
  // Item i fills [offset, offset + its extent) along the axis.
  int64_t offset = 0;
  for (const Tensor& t : seq->items()) {
    GRAFT_RETURN_IF_ERROR(dev.place(*y, a, offset, t));
    offset += new_axis == 1 ? 1 : t.dims()[a];
  }
  return Status::ok();
}

Status run_optional(const ExecContext& ctx, ContainerDevice& dev) {
  const Tensor* x = optional_input(ctx, 0);
  if (x) {
    if (is_optional_kind(x->kind())) return error(StatusCode::kInvalidArgument, "input 0 is already an optional");
    GRAFT_ASSIGN_OR_RETURN(Tensor kept, dev.keep(*x));
    GRAFT_ASSIGN_OR_RETURN(Tensor o, Tensor::optional(x->is_tensor() ? ValueKind::kOptionalTensor
                                                                      : ValueKind::kOptionalSequence,
                                                      x->dtype(), std::move(kept)));
    return dev.set_output(0, std::move(o));
  }
  // An empty optional of the type inference read from the attribute.
  auto type = ctx.attrs->get_ints("type", {});
  if (!type || type->size() < 2) return error(StatusCode::kInvalidModel, "the attribute 'type' is missing").with_attribute("type");
  DataType dt;
  if (!dtype_from_onnx_numeric(static_cast<int32_t>((*type)[1]), &dt))
    return error(StatusCode::kInvalidModel, "the attribute 'type' names no dtype graft supports").with_attribute("type");
  GRAFT_ASSIGN_OR_RETURN(Tensor o, Tensor::optional((*type)[0] == kOptionalTypeSequence ? ValueKind::kOptionalSequence
                                                                                          : ValueKind::kOptionalTensor,
                                                    dt));
  return dev.set_output(0, std::move(o));
}

Status run_optional_has_element(const ExecContext& ctx, ContainerDevice& dev) {
  // Since opset 18 a tensor or a sequence (always present) and an omitted input (never) are allowed too.
  const Tensor* x = optional_input(ctx, 0);
  const bool has = x && (!is_optional_kind(x->kind()) || x->has_element());
  return dev.set_output(0, Tensor::from_doubles(DataType::kBool, {}, {has ? 1.0 : 0.0}));
}

Status run_optional_get_element(const ExecContext& ctx, ContainerDevice& dev) {
  const Tensor* x = optional_input(ctx, 0);
  if (!x) return error(StatusCode::kInvalidModel, "input 0 is missing");
  if (!is_optional_kind(x->kind())) return dev.set_output(0, *x);
  if (!x->has_element()) return optional_empty_error();
  return dev.set_output(0, x->items()[0]);
}

// ---- If, Loop, Scan, SequenceMap ------------------------------------------------------------

namespace {

std::vector<const Tensor*> captures_of(const ExecContext& ctx) {
  return std::vector<const Tensor*>(ctx.inputs.begin() + static_cast<ptrdiff_t>(ctx.node->explicit_inputs()),
                                    ctx.inputs.end());
}

// `dims` with `len` inserted at `axis`.
std::vector<int64_t> with_axis(std::vector<int64_t> dims, size_t axis, int64_t len) {
  dims.insert(dims.begin() + static_cast<ptrdiff_t>(axis), len);
  return dims;
}

// The dtype and dims a scan output of zero iterations gets: what inference says one iteration would
// return (a dimension known only by running is taken as 0, since there is no element either way).
// Inference sees the inputs' descs only, and the contents of the captured values on the host.
Status desc_without_running(const ExecContext& ctx, const Graph& body, const std::vector<Tensor>& inputs, size_t out,
                            DataType* dtype, std::vector<int64_t>* dims) {
  const auto captures = captures_of(ctx);
  std::vector<TensorDesc> descs;
  for (const Tensor& t : inputs) descs.emplace_back(t.dtype(), shape_from_values(t.dims()));
  std::vector<TensorDesc> cap_descs(captures.size());
  std::vector<InferContext::InputInfo> ins(inputs.size()), caps(captures.size());
  for (size_t i = 0; i < inputs.size(); ++i) ins[i].desc = &descs[i];
  for (size_t i = 0; i < captures.size(); ++i) {
    if (!captures[i]) continue;
    cap_descs[i] = TensorDesc(captures[i]->dtype(), shape_from_values(captures[i]->dims()));
    caps[i].desc = &cap_descs[i];
    if (captures[i]->device() == DeviceType::kCPU) caps[i].value = captures[i];
  }
  std::vector<SubgraphInfo> outs;
  GRAFT_RETURN_IF_ERROR(infer_subgraph(*ctx.node, "body", body, ins, caps, &outs));
  *dtype = outs[out].desc.dtype;
  dims->clear();
  if (outs[out].desc.shape)
    for (const Dim& d : *outs[out].desc.shape) dims->push_back(d.is_const() ? d.value() : 0);
  return Status::ok();
}

std::string desc_text(const Tensor& t) { return TensorDesc(t.dtype(), shape_from_values(t.dims())).to_string(); }

}  // namespace

Status run_if(const ExecContext& ctx, SubgraphDevice& dev) {
  const Node& node = *ctx.node;
  const Tensor* cond = ctx.inputs.empty() ? nullptr : ctx.inputs[0];
  if (!cond || cond->dtype() != DataType::kBool || cond->numel() != 1)
    return error(StatusCode::kInvalidArgument, "cond must be one bool element");
  GRAFT_ASSIGN_OR_RETURN(bool go, dev.read_bool(*cond));
  const std::string attr = go ? "then_branch" : "else_branch";
  GRAFT_ASSIGN_OR_RETURN(const Graph* branch, node_subgraph(node, attr));
  GRAFT_ASSIGN_OR_RETURN(std::vector<Tensor> outs, dev.run_subgraph(attr, *branch, {}));
  if (outs.size() != ctx.outputs.size())
    return error(StatusCode::kInvalidModel, attr, " returns ", static_cast<uint64_t>(outs.size()),
                 " values but the node has ", static_cast<uint64_t>(ctx.outputs.size()), " outputs")
        .with_attribute(attr);
  for (size_t o = 0; o < outs.size(); ++o) GRAFT_RETURN_IF_ERROR(dev.set_output(o, std::move(outs[o])));
  return Status::ok();
}

Status run_loop(const ExecContext& ctx, SubgraphDevice& dev) {
  const Node& node = *ctx.node;
  GRAFT_ASSIGN_OR_RETURN(const Graph* body, node_subgraph(node, "body"));
  const size_t n = node.explicit_inputs() - 2;
  const size_t k = body->outputs().size() - 1 - n;
  const Tensor* m = ctx.inputs[0];
  const Tensor* c = ctx.inputs[1];
  if (!m && !c)
    return error(StatusCode::kInvalidModel, "neither the trip count M nor cond is given: the loop would never end");
  if (m && (m->dtype() != DataType::kInt64 || m->numel() != 1 || m->device() != DeviceType::kCPU))
    return error(StatusCode::kInvalidArgument, "the trip count M must be one int64 element");
  if (c && (c->dtype() != DataType::kBool || c->numel() != 1))
    return error(StatusCode::kInvalidArgument, "cond must be one bool element");
  const int64_t trips = m ? m->data_as<int64_t>()[0] : std::numeric_limits<int64_t>::max();
  bool go = true;
  if (c) {
    GRAFT_ASSIGN_OR_RETURN(go, dev.read_bool(*c));
  }

  std::vector<Tensor> state(n + 2);
  for (size_t j = 0; j < n; ++j) state[j + 2] = *ctx.inputs[j + 2];
  std::vector<std::vector<Tensor>> scans(k);
  int64_t i = 0;
  for (; i < trips && go; ++i) {
    state[0] = Tensor::scalar_int64(i);
    state[1] = Tensor::from_doubles(DataType::kBool, {}, {go ? 1.0 : 0.0});
    GRAFT_ASSIGN_OR_RETURN(std::vector<Tensor> outs, dev.run_subgraph("body", *body, state));
    if (outs.size() != 1 + n + k || outs[0].dtype() != DataType::kBool || outs[0].numel() != 1)
      return error(StatusCode::kInvalidModel, "iteration ", i, ": the body's condition is not one bool element")
          .with_attribute("body");
    // Without a cond input the loop is a for loop: the body's condition is ignored (ONNX Loop), and
    // a device need not read it back.
    if (c) {
      GRAFT_ASSIGN_OR_RETURN(go, dev.read_bool(outs[0]));
    }
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
        return error(StatusCode::kInvalidModel, "scan output ", static_cast<uint64_t>(s), " is ", desc_text(t),
                     " in iteration ", i, " but ", desc_text(scans[s][0]),
                     " in iteration 0; scan outputs are stacked, so every iteration must agree")
            .with_attribute("body");
      scans[s].push_back(std::move(t));
    }
  }
  for (size_t j = 0; j < n; ++j) GRAFT_RETURN_IF_ERROR(dev.set_output(j, state[j + 2]));
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
      GRAFT_RETURN_IF_ERROR(desc_without_running(ctx, *body, state, 1 + n + s, &dt, &item));
    }
    GRAFT_ASSIGN_OR_RETURN(Tensor * out, dev.allocate_output(n + s, dt, with_axis(item, 0, i)));
    for (int64_t t = 0; t < i; ++t) GRAFT_RETURN_IF_ERROR(dev.place(*out, 0, t, scans[s][static_cast<size_t>(t)]));
  }
  return Status::ok();
}

Status run_scan(const ExecContext& ctx, SubgraphDevice& dev) {
  const Node& node = *ctx.node;
  GRAFT_ASSIGN_OR_RETURN(const Graph* body, node_subgraph(node, "body"));
  GRAFT_ASSIGN_OR_RETURN(ScanLayout lay, scan_layout(node));
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
  std::vector<Tensor*> outs_k(lay.k, nullptr);
  std::vector<bool> sized(lay.k, false);
  for (int64_t t = 0; t < length; ++t) {
    for (size_t j = 0; j < lay.m; ++j) {
      GRAFT_ASSIGN_OR_RETURN(args[lay.n + j], dev.slice(*ctx.inputs[lay.n + j], in_axis[j],
                                                        lay.in_reverse[j] ? length - 1 - t : t, 1, true));
    }
    GRAFT_ASSIGN_OR_RETURN(std::vector<Tensor> outs, dev.run_subgraph("body", *body, args));
    for (size_t j = 0; j < lay.n; ++j) {
      if (outs[j].dtype() != args[j].dtype())
        return error(StatusCode::kInvalidModel, "iteration ", t, ": state ", static_cast<uint64_t>(j),
                     " changes dtype from ", dtype_name(args[j].dtype()), " to ", dtype_name(outs[j].dtype()))
            .with_attribute("body");
      args[j] = std::move(outs[j]);
    }
    for (size_t s = 0; s < lay.k; ++s) {
      const Tensor& y = outs[lay.n + s];
      if (!sized[s]) {
        sized[s] = true;
        GRAFT_ASSIGN_OR_RETURN(int64_t a, normalize_axis(lay.out_axes[s], y.rank() + 1));
        out_axis[s] = static_cast<size_t>(a);
        if (!ctx.outputs[lay.n + s]) continue;
        GRAFT_ASSIGN_OR_RETURN(outs_k[s], dev.allocate_output(lay.n + s, y.dtype(), with_axis(y.dims(), out_axis[s], length)));
      }
      if (!outs_k[s]) continue;
      std::vector<int64_t> expect = outs_k[s]->dims();
      expect.erase(expect.begin() + static_cast<ptrdiff_t>(out_axis[s]));
      if (y.dims() != expect || y.dtype() != outs_k[s]->dtype())
        return error(StatusCode::kInvalidModel, "iteration ", t, ": scan output ", static_cast<uint64_t>(s), " is ",
                     desc_text(y), ", unlike iteration 0; scan outputs are stacked, so every iteration must agree")
            .with_attribute("body");
      GRAFT_RETURN_IF_ERROR(dev.place(*outs_k[s], out_axis[s], lay.out_reverse[s] ? length - 1 - t : t, y));
    }
  }
  for (size_t j = 0; j < lay.n; ++j) GRAFT_RETURN_IF_ERROR(dev.set_output(j, args[j]));
  if (length == 0) {
    // No iteration ran: each scan output is empty, with the dims one iteration would have given.
    for (size_t j = 0; j < lay.m; ++j) {
      std::vector<int64_t> d = ctx.inputs[lay.n + j]->dims();
      d.erase(d.begin() + static_cast<ptrdiff_t>(in_axis[j]));
      args[lay.n + j] = Tensor::wrap(nullptr, ctx.inputs[lay.n + j]->dtype(), d);
    }
    for (size_t s = 0; s < lay.k; ++s) {
      if (!ctx.outputs[lay.n + s]) continue;
      DataType dt;
      std::vector<int64_t> item;
      GRAFT_RETURN_IF_ERROR(desc_without_running(ctx, *body, args, lay.n + s, &dt, &item));
      GRAFT_ASSIGN_OR_RETURN(int64_t a, normalize_axis(lay.out_axes[s], static_cast<int64_t>(item.size()) + 1));
      GRAFT_RETURN_IF_ERROR(dev.allocate_output(lay.n + s, dt, with_axis(item, static_cast<size_t>(a), 0)).status());
    }
  }
  return Status::ok();
}

Status run_sequence_map(const ExecContext& ctx, SubgraphDevice& dev) {
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
  std::vector<std::vector<Tensor>> collected(node.outputs.size());
  std::vector<Tensor> args(m);
  for (size_t i = 0; i < length; ++i) {
    for (size_t j = 0; j < m; ++j) {
      const Tensor& in = *ctx.inputs[j];
      args[j] = in.kind() == ValueKind::kSequence ? in.items()[i] : in;
    }
    GRAFT_ASSIGN_OR_RETURN(std::vector<Tensor> outs, dev.run_subgraph("body", *body, args));
    for (size_t o = 0; o < outs.size() && o < collected.size(); ++o) {
      GRAFT_ASSIGN_OR_RETURN(Tensor kept, dev.keep(outs[o]));
      collected[o].push_back(std::move(kept));
    }
  }
  for (size_t o = 0; o < collected.size(); ++o) {
    if (o >= ctx.outputs.size() || !ctx.outputs[o]) continue;
    // The dtype of what the body returns; with no tensor to map, inference's (the node's output desc).
    DataType dt = collected[o].empty() ? node.outputs[o]->desc.dtype : collected[o][0].dtype();
    GRAFT_ASSIGN_OR_RETURN(Tensor out, Tensor::sequence(dt, std::move(collected[o])));
    GRAFT_RETURN_IF_ERROR(dev.set_output(o, std::move(out)));
  }
  return Status::ok();
}

}  // namespace graft
