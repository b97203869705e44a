// The control-flow family's definitions and CPU reference (control_flow.h): the attribute and value
// readers, HostDevice (the drivers over host tensors) and the CPU kernels, and the schemas.
#include "ops/control_flow/control_flow.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "graft/log.h"
#include "graph/subgraph.h"
#include "ops/infer_util.h"
#include "ops/operator.h"
#include "runtime/cpu_executor.h"

namespace graft {

// ---- Scan's attributes (control_flow.h) -----------------------------------------------------

Result<ScanLayout> scan_layout(const Node& node) {
  auto fail = [&](const char* attr, auto&&... parts) {
    return error(StatusCode::kInvalidModel, parts...).with_attribute(attr).with_node(node.name, node.op_type);
  };
  ScanLayout lay;
  auto m = node.attrs.require_int("num_scan_inputs");
  if (!m) return std::move(m).take_status().with_attribute("num_scan_inputs").with_node(node.name, node.op_type);
  const size_t explicit_in = node.explicit_inputs();
  if (*m < 1 || static_cast<uint64_t>(*m) > explicit_in)
    return fail("num_scan_inputs", "num_scan_inputs is ", *m, " but the node has ",
                static_cast<uint64_t>(explicit_in), " inputs");
  lay.m = static_cast<size_t>(*m);
  lay.n = explicit_in - lay.m;
  if (node.outputs.size() < lay.n)
    return fail("num_scan_inputs", "the node has ", static_cast<uint64_t>(node.outputs.size()),
                " outputs, fewer than its ", static_cast<uint64_t>(lay.n), " state inputs");
  lay.k = node.outputs.size() - lay.n;
  auto list = [&](const char* attr, size_t count, bool direction, std::vector<int64_t>* out) -> Status {
    auto v = node.attrs.get_ints(attr, std::vector<int64_t>(count, 0));
    if (!v) return std::move(v).take_status().with_attribute(attr).with_node(node.name, node.op_type);
    if (v->size() != count)
      return fail(attr, attr, " has ", static_cast<uint64_t>(v->size()), " entries; the node needs ",
                  static_cast<uint64_t>(count));
    for (int64_t x : *v)
      if (direction && x != 0 && x != 1) return fail(attr, attr, " holds ", x, "; a direction is 0 or 1");
    *out = std::move(v).value();
    return Status::ok();
  };
  GRAFT_RETURN_IF_ERROR(list("scan_input_axes", lay.m, false, &lay.in_axes));
  GRAFT_RETURN_IF_ERROR(list("scan_input_directions", lay.m, true, &lay.in_reverse));
  GRAFT_RETURN_IF_ERROR(list("scan_output_axes", lay.k, false, &lay.out_axes));
  GRAFT_RETURN_IF_ERROR(list("scan_output_directions", lay.k, true, &lay.out_reverse));
  return lay;
}

// ---- sequence and optional values (control_flow.h) ------------------------------------------

Result<int64_t> sequence_position(const Tensor& position, int64_t length, bool insert) {
  if ((position.dtype() != DataType::kInt32 && position.dtype() != DataType::kInt64) || position.numel() != 1)
    return error(StatusCode::kInvalidArgument, "the position must be one int32 or int64 element, not ",
                 desc_of_value(position).to_string());
  const int64_t p = load_as_int64(position.dtype(), position.data(), 0);
  const int64_t hi = insert ? length : length - 1;
  if (p < -length || p > hi) {
    if (length == 0 && !insert)
      return error(StatusCode::kInvalidArgument, "position ", p, " is out of range: the sequence is empty");
    return error(StatusCode::kInvalidArgument, "position ", p, " is out of range for a sequence of ", length,
                 " tensors (valid: ", -length, " to ", hi, ")");
  }
  return p < 0 ? p + length : p;
}

Result<std::vector<int64_t>> split_lengths(const Tensor* split, int64_t dim) {
  if (!split) return std::vector<int64_t>(static_cast<size_t>(dim), 1);
  if (split->dtype() != DataType::kInt32 && split->dtype() != DataType::kInt64)
    return error(StatusCode::kInvalidArgument, "split must be int32 or int64, not ", dtype_name(split->dtype()));
  if (split->rank() > 1)
    return error(StatusCode::kInvalidArgument, "split must be a scalar or 1-D, not ", desc_of_value(*split).to_string());
  const std::vector<int64_t> v = split->to_int64_vector();
  if (split->rank() == 0) {
    const int64_t chunk = v[0];
    if (chunk <= 0) return error(StatusCode::kInvalidArgument, "a scalar split must be positive, not ", chunk);
    std::vector<int64_t> out;
    for (int64_t at = 0; at < dim; at += chunk) out.push_back(std::min(chunk, dim - at));
    return out;
  }
  int64_t sum = 0;
  for (int64_t s : v) {
    if (s < 0) return error(StatusCode::kInvalidArgument, "split lengths must be non-negative, not ", s);
    sum += s;
  }
  if (sum != dim)
    return error(StatusCode::kInvalidArgument, "split lengths sum to ", sum, " but the axis has ", dim, " elements");
  return v;
}

Status optional_empty_error() {
  return error(StatusCode::kInvalidArgument, "the optional holds no value: check it with OptionalHasElement first");
}

Result<std::vector<int64_t>> concat_from_sequence_dims(const std::vector<Tensor>& items, int64_t axis, bool new_axis,
                                                       size_t* axis_out) {
  if (items.empty())
    return error(StatusCode::kInvalidArgument, "the sequence is empty: there is nothing to concatenate");
  const std::vector<int64_t>& first = items[0].dims();
  const int64_t rank = static_cast<int64_t>(first.size());
  const int64_t out_rank = new_axis ? rank + 1 : rank;
  if (axis < -out_rank || axis >= out_rank || out_rank == 0)
    return error(StatusCode::kInvalidArgument, "axis ", axis, " is out of range for ", new_axis ? "stacking " : "",
                 "tensors of rank ", rank, " (valid: ", -out_rank, " to ", out_rank - 1, ")");
  const size_t a = static_cast<size_t>(axis < 0 ? axis + out_rank : axis);
  std::vector<int64_t> out = first;
  if (new_axis) out.insert(out.begin() + static_cast<ptrdiff_t>(a), 0);
  else out[a] = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::vector<int64_t>& d = items[i].dims();
    bool same = d.size() == first.size();
    for (size_t k = 0; same && k < d.size(); ++k) same = d[k] == first[k] || (!new_axis && k == a);
    if (!same)
      return error(StatusCode::kInvalidArgument, "tensor ", static_cast<uint64_t>(i), " of the sequence is ",
                   desc_of_value(items[i]).to_string(), " but tensor 0 is ", desc_of_value(items[0]).to_string(),
                   new_axis ? "; stacked tensors must have the same shape"
                            : "; concatenated tensors must agree on every axis but " + std::to_string(a));
    out[a] += new_axis ? 1 : d[a];
  }
  *axis_out = a;
  return out;
}

// ---- CPU reference --------------------------------------------------------------------------
// The CPU reference's side of the shared drivers: subgraphs run node by node on host tensors through
// the same run_node_cpu as the engine, containers share the tensors put in (values are immutable once
// made, so nothing is copied), slices and stacks are host copies. If, Loop, Scan and SequenceMap
// allocate their outputs once they know them (allocate_output). A sequence is a Tensor of kind
// kSequence holding host tensors that share storage with the tensors put in.

namespace cpu {

class HostDevice final : public SubgraphDevice {
 public:
  explicit HostDevice(ExecContext& ctx) : ctx_(ctx) {}
  Result<std::vector<Tensor>> run_subgraph(const std::string& attr, const Graph& sub,
                                           const std::vector<Tensor>& inputs) override;
  Result<bool> read_bool(const Tensor& t) override { return t.get(0) != 0; }
  Result<Tensor> keep(const Tensor& t) override { return t; }
  Result<Tensor> slice(const Tensor& x, size_t axis, int64_t begin, int64_t len, bool drop) override;
  Status place(Tensor& y, size_t axis, int64_t offset, const Tensor& src) override;
  Result<Tensor*> allocate_output(size_t o, DataType dtype, std::vector<int64_t> dims) override;
  Status set_output(size_t o, Tensor value) override { return set_output_value(ctx_, o, std::move(value)); }

 private:
  ExecContext& ctx_;
};

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

// Rows and row bytes around `axis`: a tensor is [outer, dims[axis], inner] with inner in bytes.
void split_at(const std::vector<int64_t>& dims, size_t axis, size_t elem, int64_t* outer, size_t* inner_bytes) {
  *outer = 1;
  for (size_t i = 0; i < axis; ++i) *outer *= dims[i];
  size_t inner = elem;
  for (size_t i = axis + 1; i < dims.size(); ++i) inner *= static_cast<size_t>(dims[i]);
  *inner_bytes = inner;
}

// Copies `bytes` bytes of elements of `dtype`: element by element for strings (std::string objects
// must not be copied bytewise), else memcpy.
void copy_run(DataType dtype, char* dst, const char* src, size_t bytes) {
  if (dtype == DataType::kString) {
    std::copy_n(reinterpret_cast<const std::string*>(src), bytes / sizeof(std::string), reinterpret_cast<std::string*>(dst));
  } else {
    std::memcpy(dst, src, bytes);
  }
}

}  // namespace

Result<std::vector<Tensor>> HostDevice::run_subgraph(const std::string& attr, const Graph& sub,
                                                     const std::vector<Tensor>& inputs) {
  const std::vector<const Tensor*> captures(ctx_.inputs.begin() + static_cast<ptrdiff_t>(ctx_.node->explicit_inputs()),
                                            ctx_.inputs.end());
  return cpu::run_subgraph(*ctx_.node, attr, sub, inputs, captures);
}

Result<Tensor> HostDevice::slice(const Tensor& x, size_t axis, int64_t begin, int64_t len, bool drop) {
  const std::vector<int64_t>& dims = x.dims();
  int64_t outer;
  size_t inner;
  split_at(dims, axis, dtype_size(x.dtype()), &outer, &inner);
  std::vector<int64_t> out_dims = dims;
  out_dims[axis] = len;
  if (drop) out_dims.erase(out_dims.begin() + static_cast<ptrdiff_t>(axis));
  GRAFT_ASSIGN_OR_RETURN(Tensor y, Tensor::allocate(x.dtype(), out_dims));
  const size_t row = static_cast<size_t>(len) * inner;
  const char* src = static_cast<const char*>(x.data());
  char* dst = static_cast<char*>(y.data());
  for (int64_t o = 0; o < outer && row; ++o)
    copy_run(x.dtype(), dst + static_cast<size_t>(o) * row, src + (static_cast<size_t>(o * dims[axis] + begin)) * inner, row);
  return y;
}

Status HostDevice::place(Tensor& y, size_t axis, int64_t offset, const Tensor& src) {
  const int64_t extent = src.rank() == y.rank() ? src.dims()[axis] : 1;
  int64_t outer;
  size_t inner;
  split_at(y.dims(), axis, dtype_size(y.dtype()), &outer, &inner);
  const size_t row = static_cast<size_t>(extent) * inner;
  const char* s = static_cast<const char*>(src.data());
  char* d = static_cast<char*>(y.data());
  for (int64_t o = 0; o < outer && row; ++o)
    copy_run(y.dtype(), d + (static_cast<size_t>(o * y.dims()[axis] + offset)) * inner, s + static_cast<size_t>(o) * row, row);
  return Status::ok();
}

Result<Tensor*> HostDevice::allocate_output(size_t o, DataType dtype, std::vector<int64_t> dims) {
  if (o >= ctx_.outputs.size() || !ctx_.outputs[o]) return nullptr;
  return graft::allocate_output(ctx_, o, dtype, std::move(dims));
}

Status if_op(ExecContext& ctx) {
  HostDevice dev(ctx);
  return run_if(ctx, dev);
}

Status loop_op(ExecContext& ctx) {
  HostDevice dev(ctx);
  return run_loop(ctx, dev);
}

Status scan_op(ExecContext& ctx) {
  HostDevice dev(ctx);
  return run_scan(ctx, dev);
}

Status sequence_map_op(ExecContext& ctx) {
  HostDevice dev(ctx);
  return run_sequence_map(ctx, dev);
}

namespace {

template <Status (*Drive)(const ExecContext&, ContainerDevice&)>
Status on_host(ExecContext& ctx) {
  HostDevice dev(ctx);
  return Drive(ctx, dev);
}

}  // namespace

Status sequence_empty(ExecContext& ctx) { return on_host<run_sequence_empty>(ctx); }
Status sequence_construct(ExecContext& ctx) { return on_host<run_sequence_construct>(ctx); }
Status sequence_insert(ExecContext& ctx) { return on_host<run_sequence_insert>(ctx); }
Status sequence_at(ExecContext& ctx) { return on_host<run_sequence_at>(ctx); }
Status sequence_erase(ExecContext& ctx) { return on_host<run_sequence_erase>(ctx); }
Status sequence_length(ExecContext& ctx) { return on_host<run_sequence_length>(ctx); }
Status split_to_sequence(ExecContext& ctx) { return on_host<run_split_to_sequence>(ctx); }
Status concat_from_sequence(ExecContext& ctx) { return on_host<run_concat_from_sequence>(ctx); }
Status optional(ExecContext& ctx) { return on_host<run_optional>(ctx); }
Status optional_has_element(ExecContext& ctx) { return on_host<run_optional_has_element>(ctx); }
Status optional_get_element(ExecContext& ctx) { return on_host<run_optional_get_element>(ctx); }

}  // namespace cpu

// ---- schema: If, Loop, Scan -----------------------------------------------------------------
// Schemas of ONNX control flow: If (then_branch / else_branch), Loop (body; opsets 11 to 21 share
// its semantics: trip count M and condition both optional, N loop-carried values, K scan outputs
// stacked along a new first axis) and Scan (opset 9+: num_scan_inputs, per-input and per-output
// axes and directions). Subgraphs live in Node::subgraphs; what they read from enclosing graphs
// arrives as the node's implicit inputs (graph.h). Inference runs the subgraph's own inference
// (graph/subgraph.h). Their outputs may depend on data (which branch, how many iterations), so the
// kernels allocate them (OpEntry::output_shape_from_kernel).

namespace {

using namespace infer;

InferContext::InputInfo input_info(const InferContext& ctx, size_t i) {
  InferContext::InputInfo info;
  if (!ctx.has_input(i)) return info;
  info.desc = &ctx.input(i);
  info.value = ctx.input_value(i);
  info.sym_value = ctx.input_sym_value(i);
  return info;
}

// The node's implicit inputs, bound to every subgraph's captures in order.
std::vector<InferContext::InputInfo> capture_infos(const InferContext& ctx) {
  std::vector<InferContext::InputInfo> out;
  for (size_t i = ctx.node().explicit_inputs(); i < ctx.num_inputs(); ++i) out.push_back(input_info(ctx, i));
  return out;
}

// A scalar-like control input (If's cond, Loop's M and cond): dtype `want`, one element when known.
Status check_control_input(const InferContext& ctx, size_t i, const char* what, DataType want) {
  if (!ctx.has_input(i)) return Status::ok();
  const TensorDesc& d = ctx.input(i);
  if (!d.is_tensor())
    return ctx.fail(what, " ('", ctx.node().inputs[i]->name, "') must be a tensor, not a ", value_kind_name(d.kind));
  if (d.dtype != want)
    return ctx.fail(what, " ('", ctx.node().inputs[i]->name, "') must be ", dtype_name(want), ", not ",
                    dtype_name(d.dtype));
  if (d.shape && shape_is_static(*d.shape) && numel_of(shape_values(*d.shape)) != 1)
    return ctx.fail(what, " ('", ctx.node().inputs[i]->name, "') must hold one element, not shape ",
                    shape_to_string(*d.shape));
  return Status::ok();
}

const TensorDesc kScalarI64(DataType::kInt64, Shape{});
const TensorDesc kScalarBool(DataType::kBool, Shape{});

Status infer_if(InferContext& ctx) {
  const Node& node = ctx.node();
  GRAFT_ASSIGN_OR_RETURN(const Graph* then_g, node_subgraph(node, "then_branch"));
  GRAFT_ASSIGN_OR_RETURN(const Graph* else_g, node_subgraph(node, "else_branch"));
  if (node.explicit_inputs() != 1)
    return ctx.fail("takes one input (cond), the node has ", static_cast<uint64_t>(node.explicit_inputs()));
  GRAFT_RETURN_IF_ERROR(require_input(ctx, 0));
  GRAFT_RETURN_IF_ERROR(check_control_input(ctx, 0, "cond", DataType::kBool));
  const auto caps = capture_infos(ctx);
  std::vector<SubgraphInfo> then_out, else_out;
  for (auto [attr, g, out] : {std::tuple{"then_branch", then_g, &then_out}, std::tuple{"else_branch", else_g, &else_out}}) {
    if (g->outputs().size() != node.outputs.size())
      return ctx.fail(attr, " has ", static_cast<uint64_t>(g->outputs().size()), " outputs but the node has ",
                      static_cast<uint64_t>(node.outputs.size()))
          .with_attribute(attr);
  }
  // A known condition picks the branch: its shapes are exact, and only its errors count. It is known
  // from a constant, from any run, or as shape arithmetic that inference resolved (a comparison of
  // dims: Equal(Size(x), 4) on an x of static shape, as ONNX's expanded functions test their
  // input's rank).
  std::optional<bool> cond;
  if (const Tensor* t = ctx.input_value(0); t && t->numel() == 1) {
    cond = t->get(0) != 0;
  } else if (auto d = ctx.input_dims_value(0); d && d->size() == 1 && (*d)[0].is_const()) {
    cond = (*d)[0].value() != 0;
  }
  const bool known = cond.has_value();
  Status then_st = Status::ok(), else_st = Status::ok();
  if (!known || *cond) then_st = infer_subgraph(node, "then_branch", *then_g, {}, caps, &then_out);
  if (!known || !*cond) else_st = infer_subgraph(node, "else_branch", *else_g, {}, caps, &else_out);
  if (known || (!then_st && !else_st)) {
    GRAFT_RETURN_IF_ERROR(then_st);
    GRAFT_RETURN_IF_ERROR(else_st);
  } else if (!then_st || !else_st) {
    // Not known until the model runs, and one branch cannot be inferred for these input shapes: a
    // branch the condition never selects (a function body's path for the other rank, as ONNX's
    // expanded AffineGrid has) must not stop the build, as ONNX Runtime runs such models. The other
    // branch gives the outputs' types; each run infers the branch it takes, and one that cannot be
    // inferred then fails that run with this error.
    const Status& bad = then_st ? else_st : then_st;
    log_warning_once("If '" + node.name + "': " + bad.to_string() +
                     "; the model builds, and a run whose condition selects that branch will fail");
    (then_st ? else_out : then_out).clear();
  }
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    if (then_out.empty()) { ctx.set_output(o, else_out[o].desc); continue; }
    if (else_out.empty()) { ctx.set_output(o, then_out[o].desc); continue; }
    const TensorDesc& a = then_out[o].desc;
    const TensorDesc& b = else_out[o].desc;
    // Named by dtype, or by the whole type when one branch returns a sequence or optional and the other not.
    auto what = [&](const TensorDesc& d) { return a.kind == b.kind ? std::string(dtype_name(d.dtype)) : d.to_string(); };
    if (a.dtype != b.dtype || a.kind != b.kind)
      return ctx.fail("output ", static_cast<uint64_t>(o), " is ", what(a), " in then_branch but ", what(b),
                      " in else_branch");
    TensorDesc merged = desc_of(a.dtype, merge_shapes(a.shape, b.shape, [&] { return ctx.unknown_dim(); }));
    merged.kind = a.kind;
    ctx.set_output(o, merged);
  }
  return Status::ok();
}

// A shape whose rank is kept where a loop may change its dims: `a` and `b` merged, else `b`'s (or
// `a`'s) rank with unknown dims.
std::optional<Shape> loop_shape(InferContext& ctx, const std::optional<Shape>& a, const std::optional<Shape>& b) {
  auto fresh = [&] { return ctx.unknown_dim(); };
  if (auto m = merge_shapes(a, b, fresh)) return m;
  const std::optional<Shape>& r = b ? b : a;
  if (!r) return std::nullopt;
  Shape s;
  for (size_t i = 0; i < r->size(); ++i) s.push_back(fresh());
  return s;
}

Status infer_loop(InferContext& ctx) {
  const Node& node = ctx.node();
  GRAFT_ASSIGN_OR_RETURN(const Graph* body, node_subgraph(node, "body"));
  const size_t explicit_in = node.explicit_inputs();
  if (explicit_in < 2)
    return ctx.fail("takes the inputs M, cond and the loop-carried values; the node has ",
                    static_cast<uint64_t>(explicit_in));
  const size_t n = explicit_in - 2;
  if (body->inputs().size() != n + 2)
    return ctx.fail("body has ", static_cast<uint64_t>(body->inputs().size()), " inputs; it must take ",
                    static_cast<uint64_t>(n + 2), " (iteration number, condition and ", static_cast<uint64_t>(n),
                    " loop-carried values)")
        .with_attribute("body");
  if (body->outputs().size() < n + 1)
    return ctx.fail("body has ", static_cast<uint64_t>(body->outputs().size()), " outputs; it must return at least ",
                    static_cast<uint64_t>(n + 1), " (condition and ", static_cast<uint64_t>(n), " loop-carried values)")
        .with_attribute("body");
  const size_t k = body->outputs().size() - 1 - n;
  if (node.outputs.size() != n + k)
    return ctx.fail("has ", static_cast<uint64_t>(node.outputs.size()), " outputs but its body returns ",
                    static_cast<uint64_t>(n), " loop-carried values and ", static_cast<uint64_t>(k), " scan outputs");
  GRAFT_RETURN_IF_ERROR(check_control_input(ctx, 0, "the trip count M", DataType::kInt64));
  GRAFT_RETURN_IF_ERROR(check_control_input(ctx, 1, "cond", DataType::kBool));
  std::vector<InferContext::InputInfo> ins(n + 2);
  ins[0].desc = &kScalarI64;
  ins[1].desc = &kScalarBool;
  for (size_t j = 0; j < n; ++j) {
    if (!ctx.has_input(j + 2)) return ctx.fail("loop-carried input ", static_cast<uint64_t>(j), " is missing");
    ins[j + 2] = input_info(ctx, j + 2);
    ins[j + 2].value = nullptr;  // it changes from one iteration to the next
    ins[j + 2].sym_value = nullptr;
  }
  std::vector<SubgraphInfo> outs;
  GRAFT_RETURN_IF_ERROR(infer_subgraph(node, "body", *body, ins, capture_infos(ctx), &outs));
  if (outs[0].desc.dtype != DataType::kBool)
    return ctx.fail("body returns its condition as ", dtype_name(outs[0].desc.dtype), "; it must be bool")
        .with_attribute("body");
  for (size_t j = 0; j < n; ++j) {
    const TensorDesc& in = ctx.input(j + 2);
    const TensorDesc& out = outs[1 + j].desc;
    // An optional may enter and what it holds come back (ONNX's test_loop16_seq_none does).
    if (in.dtype != out.dtype || (in.kind != out.kind && optional_content(in.kind) != out.kind)) {
      auto what = [&](const TensorDesc& d) { return in.kind == out.kind ? std::string(dtype_name(d.dtype)) : d.to_string(); };
      return ctx.fail("loop-carried value ", static_cast<uint64_t>(j), " ('", node.inputs[j + 2]->name,
                      "') enters the body as ", what(in), " but the body returns ", what(out))
          .with_attribute("body");
    }
    TensorDesc carried = desc_of(in.dtype, loop_shape(ctx, in.shape, out.shape));
    carried.kind = out.kind;
    ctx.set_output(j, carried);
  }
  // Iterations: M itself when it is known and no condition can stop the loop early.
  Dim trips = ctx.unknown_dim();
  if (const Tensor* m = ctx.input_value(0); m && m->numel() == 1 && !ctx.has_input(1))
    trips = Dim(std::max<int64_t>(static_cast<int64_t>(m->get(0)), 0));
  for (size_t s = 0; s < k; ++s) {
    const TensorDesc& d = outs[1 + n + s].desc;
    if (!d.is_tensor())
      return ctx.fail("scan output ", static_cast<uint64_t>(s), " of the body is a ", value_kind_name(d.kind),
                      "; scan outputs are stacked tensors")
          .with_attribute("body");
    std::optional<Shape> shape;
    if (d.shape) {
      shape = Shape{trips};
      shape->insert(shape->end(), d.shape->begin(), d.shape->end());
    }
    ctx.set_output(n + s, desc_of(d.dtype, std::move(shape)));
  }
  return Status::ok();
}

Status infer_scan(InferContext& ctx) {
  const Node& node = ctx.node();
  GRAFT_ASSIGN_OR_RETURN(const Graph* body, node_subgraph(node, "body"));
  GRAFT_ASSIGN_OR_RETURN(ScanLayout lay, scan_layout(node));
  std::vector<InferContext::InputInfo> ins;
  std::vector<TensorDesc> slices(lay.m);
  for (size_t j = 0; j < lay.n; ++j) {
    GRAFT_RETURN_IF_ERROR(require_input(ctx, j));
    ins.push_back(input_info(ctx, j));
  }
  std::optional<Dim> length;
  for (size_t j = 0; j < lay.m; ++j) {
    GRAFT_ASSIGN_OR_RETURN(Shape s, ctx.input_shape(lay.n + j));
    GRAFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(lay.in_axes[j], static_cast<int64_t>(s.size())));
    const Dim len = s[static_cast<size_t>(axis)];
    if (length && length->is_const() && len.is_const() && length->value() != len.value())
      return ctx.fail("scan input ", static_cast<uint64_t>(j), " ('", node.inputs[lay.n + j]->name, "') has ",
                      len.value(), " elements along axis ", axis, " but an earlier scan input has ", length->value());
    if (!length || !length->is_const()) length = len;
    s.erase(s.begin() + axis);
    slices[j] = TensorDesc(ctx.input(lay.n + j).dtype, std::move(s));
    InferContext::InputInfo info;
    info.desc = &slices[j];
    ins.push_back(info);
  }
  if (body->outputs().size() != node.outputs.size())
    return ctx.fail("body returns ", static_cast<uint64_t>(body->outputs().size()), " values but the node has ",
                    static_cast<uint64_t>(node.outputs.size()), " outputs")
        .with_attribute("body");
  std::vector<SubgraphInfo> outs;
  GRAFT_RETURN_IF_ERROR(infer_subgraph(node, "body", *body, ins, capture_infos(ctx), &outs));
  for (size_t j = 0; j < lay.n; ++j) {
    const TensorDesc& in = ctx.input(j);
    const TensorDesc& out = outs[j].desc;
    if (in.dtype != out.dtype)
      return ctx.fail("state ", static_cast<uint64_t>(j), " ('", node.inputs[j]->name, "') enters the body as ",
                      dtype_name(in.dtype), " but the body returns ", dtype_name(out.dtype))
          .with_attribute("body");
    ctx.set_output(j, desc_of(in.dtype, loop_shape(ctx, in.shape, out.shape)));
  }
  for (size_t s = 0; s < lay.k; ++s) {
    const TensorDesc& d = outs[lay.n + s].desc;
    if (!d.shape) {
      ctx.set_output(lay.n + s, d);
      continue;
    }
    Shape shape = *d.shape;
    GRAFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(lay.out_axes[s], static_cast<int64_t>(shape.size()) + 1));
    shape.insert(shape.begin() + axis, length ? *length : ctx.unknown_dim());
    ctx.set_output(lay.n + s, TensorDesc(d.dtype, std::move(shape)));
  }
  return Status::ok();
}

// SequenceMap (opset 17): the body runs once per tensor of the input sequence; each additional
// input is a sequence of the same length (its i-th tensor is passed) or a tensor (passed whole).
// Each body output is collected into an output sequence.
Status infer_sequence_map(InferContext& ctx) {
  const Node& node = ctx.node();
  GRAFT_ASSIGN_OR_RETURN(const Graph* body, node_subgraph(node, "body"));
  const size_t m = node.explicit_inputs();
  if (m < 1) return ctx.fail("takes an input sequence");
  if (body->inputs().size() != m)
    return ctx.fail("body has ", static_cast<uint64_t>(body->inputs().size()), " inputs but the node passes it ",
                    static_cast<uint64_t>(m))
        .with_attribute("body");
  if (body->outputs().size() != node.outputs.size())
    return ctx.fail("body returns ", static_cast<uint64_t>(body->outputs().size()), " values but the node has ",
                    static_cast<uint64_t>(node.outputs.size()), " outputs")
        .with_attribute("body");
  std::vector<TensorDesc> items(m);
  std::vector<InferContext::InputInfo> ins(m);
  for (size_t j = 0; j < m; ++j) {
    GRAFT_RETURN_IF_ERROR(require_input(ctx, j));
    const TensorDesc& d = ctx.input(j);
    if (j == 0 && d.kind != ValueKind::kSequence)
      return ctx.fail("input 0 ('", node.inputs[0]->name, "') must be a sequence, not ", d.to_string());
    if (d.kind == ValueKind::kSequence) {
      // One tensor of the sequence: at run time the first one (every iteration is inferred again).
      const Tensor* seq = ctx.input_value(j);
      items[j] = seq && !seq->items().empty() ? desc_of_value(seq->items()[0]) : desc_of(d.dtype, d.shape);
      ins[j].desc = &items[j];
    } else if (d.is_tensor()) {
      ins[j] = input_info(ctx, j);
    } else {
      return ctx.fail("input ", static_cast<uint64_t>(j), " ('", node.inputs[j]->name, "') is a ",
                      value_kind_name(d.kind), "; SequenceMap takes sequences and tensors");
    }
  }
  std::vector<SubgraphInfo> outs;
  GRAFT_RETURN_IF_ERROR(infer_subgraph(node, "body", *body, ins, capture_infos(ctx), &outs));
  for (size_t o = 0; o < outs.size(); ++o) {
    const TensorDesc& d = outs[o].desc;
    if (!d.is_tensor())
      return ctx.fail("body output ", static_cast<uint64_t>(o), " is a ", value_kind_name(d.kind),
                      "; SequenceMap collects tensors")
          .with_attribute("body");
    TensorDesc seq = desc_of(d.dtype, ctx.input_value(0) ? std::nullopt : d.shape);  // shapes may vary per tensor
    seq.kind = ValueKind::kSequence;
    ctx.set_output(o, seq);
  }
  return Status::ok();
}

}  // namespace

static void append_subgraph_ops(std::vector<OpEntry>& out) {
  const std::vector<OpEntry> ops = {
      {"If", 1, infer_if, cpu::if_op, /*output_shape_from_kernel=*/true, /*takes_containers=*/true},
      {"Loop", 1, infer_loop, cpu::loop_op, /*output_shape_from_kernel=*/true, /*takes_containers=*/true},
      {"Scan", 9, infer_scan, cpu::scan_op, /*output_shape_from_kernel=*/true},
      {"SequenceMap", 17, infer_sequence_map, cpu::sequence_map_op, /*output_shape_from_kernel=*/true,
       /*takes_containers=*/true},
  };
  out.insert(out.end(), ops.begin(), ops.end());
}

// ---- schema: sequences and optionals --------------------------------------------------------
// Schemas of ONNX's sequence and optional ops (opset 11+: SequenceEmpty, SequenceConstruct,
// SequenceInsert, SequenceAt, SequenceErase, SequenceLength, SplitToSequence, ConcatFromSequence;
// opset 15+: Optional, OptionalHasElement, OptionalGetElement, which take plain tensors and
// sequences too, as opset 18 allows). SequenceMap, which runs a subgraph, is with If, Loop and Scan.
//
// A sequence's desc (TensorDesc with kind kSequence) carries the dtype of its tensors and the shape
// they share, when inference knows one. At build time that is all there is; at run time inference
// also sees the sequence itself (InferContext::input_value), so SequenceAt and ConcatFromSequence
// infer exact shapes.

namespace {

using namespace infer;

TensorDesc container_desc(ValueKind kind, DataType dtype, std::optional<Shape> shape) {
  TensorDesc d = desc_of(dtype, std::move(shape));
  d.kind = kind;
  return d;
}

// Input i, required, of kind `want`; the error names the input and what it is instead.
Result<const TensorDesc*> input_of_kind(const InferContext& ctx, size_t i, ValueKind want) {
  GRAFT_RETURN_IF_ERROR(require_input(ctx, i));
  const TensorDesc& d = ctx.input(i);
  if (d.kind != want)
    return ctx.fail("input ", static_cast<uint64_t>(i), " ('", ctx.node().inputs[i]->name, "') must be a ",
                    value_kind_name(want), ", not a ", value_kind_name(d.kind), " (", d.to_string(), ")");
  return &d;
}

// The sequence itself when inference runs at run time (every host value is known then).
const Tensor* known_sequence(const InferContext& ctx, size_t i) {
  const Tensor* t = ctx.input_value(i);
  return t && t->kind() == ValueKind::kSequence ? t : nullptr;
}

// A tensor that goes into a sequence of `seq`'s dtype.
Status check_item_dtype(const InferContext& ctx, size_t i, DataType seq) {
  GRAFT_ASSIGN_OR_RETURN(const TensorDesc* d, input_of_kind(ctx, i, ValueKind::kTensor));
  if (d->dtype != seq)
    return ctx.fail("input ", static_cast<uint64_t>(i), " ('", ctx.node().inputs[i]->name, "') is ",
                    dtype_name(d->dtype), " but the sequence holds ", dtype_name(seq));
  return Status::ok();
}

// A position input (optional where `required` is false): one int32/int64 element.
Status check_position_input(const InferContext& ctx, size_t i, bool required) {
  if (!ctx.has_input(i)) return required ? require_input(ctx, i) : Status::ok();
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, i, {kI32, kI64}));
  const TensorDesc& d = ctx.input(i);
  if (d.shape && shape_is_static(*d.shape) && numel_of(shape_values(*d.shape)) != 1)
    return ctx.fail("the position ('", ctx.node().inputs[i]->name, "') must hold one element, not shape ",
                    shape_to_string(*d.shape));
  return Status::ok();
}

// The shape two sets of tensors share: equal dims kept, others unknown, a rank difference unknown.
std::optional<Shape> shared_shape(InferContext& ctx, const std::optional<Shape>& a, const std::optional<Shape>& b) {
  return merge_shapes(a, b, [&] { return ctx.unknown_dim(); });
}

Status infer_sequence_empty(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(int64_t onnx_type, ctx.attrs().get_int("dtype", static_cast<int64_t>(DataType::kFloat32)));
  DataType dt;
  if (!dtype_from_onnx_numeric(static_cast<int32_t>(onnx_type), &dt))
    return ctx.fail("dtype ", onnx_type, " is not an element type graft supports").with_attribute("dtype");
  ctx.set_output(0, container_desc(ValueKind::kSequence, dt, std::nullopt));
  return Status::ok();
}

Status infer_sequence_construct(InferContext& ctx) {
  if (ctx.num_inputs() == 0) return ctx.fail("takes at least one tensor");
  GRAFT_ASSIGN_OR_RETURN(const TensorDesc* first, input_of_kind(ctx, 0, ValueKind::kTensor));
  std::optional<Shape> shape = first->shape;
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    GRAFT_RETURN_IF_ERROR(check_item_dtype(ctx, i, first->dtype));
    shape = shared_shape(ctx, shape, ctx.input(i).shape);
  }
  ctx.set_output(0, container_desc(ValueKind::kSequence, first->dtype, shape));
  return Status::ok();
}

Status infer_sequence_insert(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(const TensorDesc* seq, input_of_kind(ctx, 0, ValueKind::kSequence));
  GRAFT_RETURN_IF_ERROR(check_item_dtype(ctx, 1, seq->dtype));
  GRAFT_RETURN_IF_ERROR(check_position_input(ctx, 2, false));
  // An empty sequence's shape is unknown, and so stays the shape of what it holds after an insert:
  // the sequence may have held tensors of other shapes.
  std::optional<Shape> shape = shared_shape(ctx, seq->shape, ctx.input(1).shape);
  if (const Tensor* s = known_sequence(ctx, 0)) {
    if (const Tensor* pos = ctx.input_value(2))
      GRAFT_RETURN_IF_ERROR(sequence_position(*pos, static_cast<int64_t>(s->items().size()), true).status());
    if (s->items().empty()) shape = ctx.input(1).shape;
  }
  ctx.set_output(0, container_desc(ValueKind::kSequence, seq->dtype, shape));
  return Status::ok();
}

Status infer_sequence_at(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(const TensorDesc* seq, input_of_kind(ctx, 0, ValueKind::kSequence));
  GRAFT_RETURN_IF_ERROR(check_position_input(ctx, 1, true));
  const Tensor* s = known_sequence(ctx, 0);
  const Tensor* pos = ctx.input_value(1);
  if (s && pos) {
    GRAFT_ASSIGN_OR_RETURN(int64_t p, sequence_position(*pos, static_cast<int64_t>(s->items().size()), false));
    ctx.set_output(0, desc_of_value(s->items()[static_cast<size_t>(p)]));
    return Status::ok();
  }
  ctx.set_output(0, desc_of(seq->dtype, seq->shape));
  return Status::ok();
}

Status infer_sequence_erase(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(const TensorDesc* seq, input_of_kind(ctx, 0, ValueKind::kSequence));
  GRAFT_RETURN_IF_ERROR(check_position_input(ctx, 1, false));
  if (const Tensor* s = known_sequence(ctx, 0)) {
    const int64_t n = static_cast<int64_t>(s->items().size());
    if (const Tensor* pos = ctx.input_value(1)) GRAFT_RETURN_IF_ERROR(sequence_position(*pos, n, false).status());
    else if (n == 0) return error(StatusCode::kInvalidArgument, "the sequence is empty: there is no tensor to erase");
  }
  ctx.set_output(0, *seq);
  return Status::ok();
}

Status infer_sequence_length(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(input_of_kind(ctx, 0, ValueKind::kSequence).status());
  ctx.set_output(0, desc_of(kI64, Shape{}));
  return Status::ok();
}

Status infer_split_to_sequence(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(const TensorDesc* x, input_of_kind(ctx, 0, ValueKind::kTensor));
  if (ctx.has_input(1)) GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, {kI32, kI64}));
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, ctx.attrs().get_int("axis", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t keepdims, ctx.attrs().get_int("keepdims", 1));
  if (!x->shape) {
    ctx.set_output(0, container_desc(ValueKind::kSequence, x->dtype, std::nullopt));
    return Status::ok();
  }
  Shape shape = *x->shape;
  auto axis = normalize_axis(axis_attr, static_cast<int64_t>(shape.size()));
  if (!axis) return Status(axis.status()).with_attribute("axis");
  const size_t a = static_cast<size_t>(*axis);
  const Dim dim = shape[a];
  if (!ctx.has_input(1)) {
    // Chunks of one element; keepdims=0 drops the axis.
    if (keepdims == 0) shape.erase(shape.begin() + static_cast<ptrdiff_t>(a));
    else shape[a] = Dim(1);
  } else if (const Tensor* split = ctx.input_value(1); split && dim.is_const()) {
    GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> lengths, split_lengths(split, dim.value()));
    bool equal = !lengths.empty();
    for (int64_t l : lengths) equal = equal && l == lengths[0];
    shape[a] = equal ? Dim(lengths[0]) : ctx.unknown_dim();
  } else {
    shape[a] = ctx.unknown_dim();
  }
  ctx.set_output(0, container_desc(ValueKind::kSequence, x->dtype, std::move(shape)));
  return Status::ok();
}

Status infer_concat_from_sequence(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(const TensorDesc* seq, input_of_kind(ctx, 0, ValueKind::kSequence));
  if (!ctx.attrs().has("axis")) return ctx.fail("the attribute 'axis' is required").with_attribute("axis");
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().get_int("axis", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t new_axis, ctx.attrs().get_int("new_axis", 0));
  if (new_axis != 0 && new_axis != 1) return ctx.fail("new_axis must be 0 or 1, not ", new_axis).with_attribute("new_axis");
  if (const Tensor* s = known_sequence(ctx, 0)) {
    size_t a;
    GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> dims, concat_from_sequence_dims(s->items(), axis, new_axis == 1, &a));
    ctx.set_output(0, desc_of(seq->dtype, shape_from_values(dims)));
    return Status::ok();
  }
  if (!seq->shape) {
    ctx.set_output(0, desc_of(seq->dtype, std::nullopt));
    return Status::ok();
  }
  // How many tensors the sequence holds is known only at run time: the concatenated axis is unknown.
  Shape shape = *seq->shape;
  auto a = normalize_axis(axis, static_cast<int64_t>(shape.size()) + new_axis);
  if (!a) return Status(a.status()).with_attribute("axis");
  if (new_axis == 1) shape.insert(shape.begin() + *a, ctx.unknown_dim());
  else shape[static_cast<size_t>(*a)] = ctx.unknown_dim();
  ctx.set_output(0, desc_of(seq->dtype, std::move(shape)));
  return Status::ok();
}

Status infer_optional(InferContext& ctx) {
  if (ctx.has_input(0)) {
    const TensorDesc& in = ctx.input(0);
    if (is_optional_kind(in.kind))
      return ctx.fail("input 0 ('", ctx.node().inputs[0]->name, "') is already an optional (", in.to_string(), ")");
    ctx.set_output(0, container_desc(in.is_tensor() ? ValueKind::kOptionalTensor : ValueKind::kOptionalSequence,
                                     in.dtype, in.shape));
    return Status::ok();
  }
  // No input: an empty optional of the type the attribute names (see control_flow.h).
  if (!ctx.attrs().has("type"))
    return ctx.fail("an Optional without input needs the attribute 'type'").with_attribute("type");
  auto type = ctx.attrs().get_ints("type", {});
  if (!type) return Status(type.status()).with_attribute("type");
  const std::vector<int64_t>& t = *type;
  DataType dt;
  if (t.size() < 3 || (t[0] != kOptionalTypeTensor && t[0] != kOptionalTypeSequence) ||
      !dtype_from_onnx_numeric(static_cast<int32_t>(t[1]), &dt) || t[2] < -1 ||
      (t[2] >= 0 && t.size() != static_cast<size_t>(3 + t[2])))
    return ctx.fail("the attribute 'type' does not describe a tensor or a sequence of a dtype graft supports")
        .with_attribute("type");
  std::optional<Shape> shape;
  if (t[2] >= 0) {
    shape = Shape{};
    for (size_t i = 3; i < t.size(); ++i) shape->push_back(t[i] >= 0 ? Dim(t[i]) : ctx.unknown_dim());
  }
  ctx.set_output(0, container_desc(t[0] == kOptionalTypeTensor ? ValueKind::kOptionalTensor : ValueKind::kOptionalSequence,
                                   dt, std::move(shape)));
  return Status::ok();
}

Status infer_optional_has_element(InferContext& ctx) {
  ctx.set_output(0, desc_of(kBool, Shape{}));
  return Status::ok();
}

Status infer_optional_get_element(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(require_input(ctx, 0));
  TensorDesc d = ctx.input(0);
  d.kind = optional_content(d.kind);  // a plain tensor or sequence passes through (opset 18)
  if (const Tensor* o = ctx.input_value(0); o && is_optional_kind(o->kind())) {
    if (!o->has_element()) return optional_empty_error();
    d = desc_of_value(o->items()[0]);
  }
  ctx.set_output(0, d);
  return Status::ok();
}

}  // namespace

static void append_sequence_ops(std::vector<OpEntry>& out) {
  constexpr bool kFromKernel = false, kContainers = true;
  const std::vector<OpEntry> ops = {
      {"SequenceEmpty", 11, infer_sequence_empty, cpu::sequence_empty, kFromKernel, kContainers},
      {"SequenceConstruct", 11, infer_sequence_construct, cpu::sequence_construct, kFromKernel, kContainers},
      {"SequenceInsert", 11, infer_sequence_insert, cpu::sequence_insert, kFromKernel, kContainers},
      {"SequenceAt", 11, infer_sequence_at, cpu::sequence_at, kFromKernel, kContainers},
      {"SequenceErase", 11, infer_sequence_erase, cpu::sequence_erase, kFromKernel, kContainers},
      {"SequenceLength", 11, infer_sequence_length, cpu::sequence_length, kFromKernel, kContainers},
      {"SplitToSequence", 11, infer_split_to_sequence, cpu::split_to_sequence, kFromKernel, kContainers},
      {"ConcatFromSequence", 11, infer_concat_from_sequence, cpu::concat_from_sequence, kFromKernel, kContainers},
      {"Optional", 15, infer_optional, cpu::optional, kFromKernel, kContainers},
      {"OptionalHasElement", 15, infer_optional_has_element, cpu::optional_has_element, kFromKernel, kContainers},
      {"OptionalGetElement", 15, infer_optional_get_element, cpu::optional_get_element, kFromKernel, kContainers},
  };
  out.insert(out.end(), ops.begin(), ops.end());
}

// The family's rows: the ops with subgraphs, then the sequence and optional ops.
void append_control_flow_ops(std::vector<OpEntry>& out) {
  append_subgraph_ops(out);
  append_sequence_ops(out);
}

}  // namespace graft
