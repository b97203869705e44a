// The op entry every custom-op node resolves to (operator.h): its inference and CPU kernel are the
// node's OpDef's, called through the same OpEntry functions as a builtin op's, so the shape
// inference and the CPU executor have one path for both.
#include <limits>

#include "graph/dim_expr_builder.h"
#include "ops/custom_kernel_call.h"
#include "ops/operator.h"

namespace graft {

namespace {

// The OpDef's shape function over interned symbolic dims, then its dtype function.
Status infer_custom(InferContext& ctx) {
  const Node& node = ctx.node();
  const OpDef& def = *node.custom_op;
  DimExprBuilder builder;
  // A node kept channels-last (custom_kernel_call.h): the op sees input 0 and output 0 as NCHW.
  const bool nhwc = channels_last_io(node);
  std::vector<std::optional<std::vector<const void*>>> in_shapes;
  std::vector<DataType> in_dtypes;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) {
      in_shapes.push_back(std::nullopt);
      in_dtypes.push_back(DataType::kUndefined);
      continue;
    }
    const TensorDesc& d = ctx.input(i);
    if (!d.shape)
      return error(StatusCode::kUnsupported, "the rank of input ", static_cast<int64_t>(i), " ('",
                   node.inputs[i]->name, "') is unknown");
    std::vector<const void*> exprs;
    for (const Dim& dim : *d.shape) exprs.push_back(builder.intern(dim));
    if (nhwc && i == 0) {
      if (exprs.size() != 4)
        return error(StatusCode::kInternal, "a channels-last node's input 0 ('", node.inputs[0]->name,
                     "') has rank ", static_cast<int64_t>(exprs.size()), ", not 4");
      exprs = {exprs[0], exprs[3], exprs[1], exprs[2]};
    }
    in_shapes.push_back(std::move(exprs));
    in_dtypes.push_back(d.dtype);
  }
  // Declared inputs the node leaves out are absent optional inputs.
  while (in_shapes.size() < def.inputs().size()) {
    in_shapes.push_back(std::nullopt);
    in_dtypes.push_back(DataType::kUndefined);
  }
  ShapeContext shapes(&builder, &node.attrs, in_shapes, static_cast<int>(node.outputs.size()));
  GRAFT_RETURN_IF_ERROR(def.infer_shapes(shapes));
  auto dtypes = def.infer_dtypes(in_dtypes, node.attrs);
  if (!dtypes) return std::move(dtypes).take_status();
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    if (o >= shapes.outputs().size() || !shapes.outputs()[o])
      return error(StatusCode::kInternal, "the shape function of ", def.name(), " did not set output ",
                   static_cast<uint64_t>(o));
    if (o >= dtypes->size())
      return error(StatusCode::kInternal, "the dtype function of ", def.name(), " gave no dtype for output ",
                   static_cast<uint64_t>(o));
    Shape s;
    for (const void* e : *shapes.outputs()[o]) {
      if (!e) return error(StatusCode::kInternal, "the shape function of ", def.name(), " returned a null dimension");
      s.push_back(*DimExprBuilder::as_dim(e));
    }
    if (nhwc && o == 0) {
      if (s.size() != 4)
        return error(StatusCode::kInternal, "the shape function of ", def.name(), " gave a channels-last node's output 0 rank ",
                     static_cast<int64_t>(s.size()), ", not 4");
      s = Shape{s[0], s[2], s[3], s[1]};
    }
    ctx.set_output(o, TensorDesc((*dtypes)[o], std::move(s)));
  }
  return Status::ok();
}

// OpDef::run on the CPU, with a host workspace of the size the op's workspace_fn asks for these
// shapes. The executor catches what the kernel throws.
Status run_custom_cpu(ExecContext& ec) {
  const Node& node = *ec.node;
  const OpDef& def = *node.custom_op;
  CustomKernelCall call = custom_kernel_call(ec);
  KernelContext& kc = call.context;
  const size_t ws = def.workspace_size(call.inputs, call.outputs, node.attrs);
  Tensor workspace;
  if (ws) {
    if (ws > static_cast<size_t>(std::numeric_limits<int64_t>::max()))
      return error(StatusCode::kOutOfMemory, "the kernel asks for a workspace of ", static_cast<uint64_t>(ws),
                   " bytes");
    auto w = Tensor::allocate(DataType::kUInt8, {static_cast<int64_t>(ws)});
    if (!w) return std::move(w).take_status();
    workspace = std::move(w).value();
    kc.workspace = workspace.data();
    kc.workspace_size = ws;
  }
  return def.run(Backend::kCPU, kc);
}

// The functions read the node's OpDef; the layout trait is the one thing that differs by op.
const OpEntry& entry_with_layout(bool channels_last_io) {
  static const OpEntry fixed{"", 1, &infer_custom, &run_custom_cpu};
  static const OpEntry nhwc = [] {
    OpEntry e{"", 1, &infer_custom, &run_custom_cpu};
    e.layout = LayoutTrait::kChannelsLastIo;
    return e;
  }();
  return channels_last_io ? nhwc : fixed;
}

}  // namespace

const OpEntry& custom_op_entry(const OpDef& def) { return entry_with_layout(def.supports_channels_last_io()); }

std::vector<const OpEntry*> custom_op_entries() { return {&entry_with_layout(false), &entry_with_layout(true)}; }

}  // namespace graft
