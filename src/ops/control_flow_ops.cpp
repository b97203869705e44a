// Schemas of ONNX control flow: If (then_branch / else_branch), Loop (body; opsets 11 to 21 share
// its semantics: trip count M and condition both optional, N loop-carried values, K scan outputs
// stacked along a new first axis) and Scan (opset 9+: num_scan_inputs, per-input and per-output
// axes and directions). Subgraphs live in Node::subgraphs; what they read from enclosing graphs
// arrives as the node's implicit inputs (graph.h). Inference runs the subgraph's own inference
// (graph/subgraph.h). Their outputs may depend on data (which branch, how many iterations), so the
// kernels (src/backends/cpu/control_flow.cpp) allocate them (OpEntry::output_shape_from_kernel).
#include <string>

#include "backends/cpu/control_flow.h"
#include "ops/control_flow_attrs.h"
#include "graph/subgraph.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {
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
  // A known condition (a constant, or any run) picks the branch: its shapes are exact.
  const Tensor* cond = ctx.input_value(0);
  if (!cond || cond->numel() != 1 || cond->get(0) != 0)
    GRAFT_RETURN_IF_ERROR(infer_subgraph(node, "then_branch", *then_g, {}, caps, &then_out));
  if (!cond || cond->numel() != 1 || cond->get(0) == 0)
    GRAFT_RETURN_IF_ERROR(infer_subgraph(node, "else_branch", *else_g, {}, caps, &else_out));
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

void append_control_flow_ops(std::vector<OpEntry>& out) {
  const std::vector<OpEntry> ops = {
      {"If", 1, infer_if, cpu::if_op, /*output_shape_from_kernel=*/true, /*takes_containers=*/true},
      {"Loop", 1, infer_loop, cpu::loop_op, /*output_shape_from_kernel=*/true, /*takes_containers=*/true},
      {"Scan", 9, infer_scan, cpu::scan_op, /*output_shape_from_kernel=*/true},
      {"SequenceMap", 17, infer_sequence_map, cpu::sequence_map_op, /*output_shape_from_kernel=*/true,
       /*takes_containers=*/true},
  };
  out.insert(out.end(), ops.begin(), ops.end());
}

}  // namespace graft
