#include "backends/cuda/cuda_ops.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "graph/graph.h"
#include "ops/custom_kernel_call.h"

namespace graft::cuda {

// Every CUDA table function of the op folders, src/ops/<family>/ (in a .cu or *_cuda.cpp):
// append_cuda_<name>_ops appends a family's or one op's CUDA ops. CMake writes the list from the
// files' definitions (src/CMakeLists.txt), as it does the builtin table's.
#define GRAFT_CUDA_OP_TABLE(name) void append_cuda_##name##_ops(std::vector<CudaOp>& out);
#include "ops/cuda_op_tables.inc"
#undef GRAFT_CUDA_OP_TABLE

const std::vector<CudaOp>& cuda_ops() {
  static const std::vector<CudaOp> table = [] {
    std::vector<CudaOp> t;
#define GRAFT_CUDA_OP_TABLE(name) append_cuda_##name##_ops(t);
#include "ops/cuda_op_tables.inc"
#undef GRAFT_CUDA_OP_TABLE
    return t;
  }();
  return table;
}

namespace {

// The dtypes of a custom-op node as its OpDef's kernels are keyed: one per declared input (an
// omitted one undefined), then one per node output.
std::vector<DataType> dtype_combination(const Node& n) {
  std::vector<DataType> combo;
  for (size_t i = 0; i < n.custom_op->inputs().size(); ++i) {
    const Value* v = n.input(i);
    combo.push_back(v ? v->desc.dtype : DataType::kUndefined);
  }
  for (const Value* v : n.outputs) combo.push_back(v ? v->desc.dtype : DataType::kUndefined);
  return combo;
}

bool custom_supports(const Node& n, std::string* why) {
  const std::vector<DataType> combo = dtype_combination(n);
  if (n.custom_op->supports(Backend::kCUDA, combo)) return true;
  std::string c;
  for (DataType t : combo) c += (c.empty() ? "" : ", ") + std::string(dtype_name(t));
  *why = "custom op " + n.custom_op->name() + " has no CUDA kernel for dtypes (" + c + ")";
  return false;
}

Status custom_run(CudaExec& ex) {
  const ExecContext& ec = *ex.ctx;
  const OpDef& def = *ec.node->custom_op;
  CustomKernelCall call = custom_kernel_call(ec);
  call.context.workspace = ex.workspace;
  call.context.workspace_size = ex.workspace_size;
  return def.run(Backend::kCUDA, call.context);
}

size_t custom_workspace(const Node& n, const std::vector<const Tensor*>& inputs, const std::vector<Tensor>& outputs) {
  std::vector<ConcreteDesc> out;
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    const bool there = o < outputs.size() && outputs[o].defined();
    if (!there && n.outputs[o]) return kUnknownWorkspace;  // an output whose shape is not known yet
    out.push_back(there ? ConcreteDesc{outputs[o].dtype(), outputs[o].dims()} : ConcreteDesc{});
    if (there && o == 0 && channels_last_io(n)) out.back().dims = nchw_dims(out.back().dims);
  }
  return n.custom_op->workspace_size(custom_input_descs(n, inputs), out, n.attrs);
}

}  // namespace

const CudaOp& custom_cuda_op() {
  static const CudaOp op = [] {
    CudaOp c{"", &custom_supports, &custom_run, {}, &custom_workspace};
    c.checks_every_dtype = true;
    return c;
  }();
  return op;
}

const CudaOp* cuda_op_of(const OpEntry& op) {
  // Each CUDA row belongs to the builtin definition of its name (names are unique across the ONNX
  // and internal domains: CudaOpTable.EveryOpTypeOnceAndEachABuiltinOp); the custom-op entries
  // have the one CUDA op that calls the node's OpDef.
  static const std::unordered_map<const OpEntry*, const CudaOp*> by_entry = [] {
    std::unordered_map<const OpEntry*, const CudaOp*> m;
    for (const CudaOp& c : cuda_ops()) {
      const OpEntry* e = find_onnx_op(c.op_type);
      if (!e) e = find_builtin_op(kInternalDomain, c.op_type);
      if (e) m.emplace(e, &c);
    }
    for (const OpEntry* e : custom_op_entries()) m.emplace(e, &custom_cuda_op());
    return m;
  }();
  auto it = by_entry.find(&op);
  return it == by_entry.end() ? nullptr : it->second;
}

const CudaOp* cuda_op_for(const Node& n) {
  const OpEntry* e = find_op_entry(n);
  return e ? cuda_op_of(*e) : nullptr;
}

bool may_report_invalid_data(const Node& n) {
  if (const CudaOp* op = cuda_op_for(n); op && op->invalid_data) return true;
  for (const auto& [attr, g] : n.subgraphs)
    if (g)
      for (const auto& inner : g->nodes())
        if (may_report_invalid_data(*inner)) return true;
  return false;
}

int64_t SubgraphFaultTags::tag_for(const Node& node, const Node& parent, int64_t layer_tag, const char* what) {
  std::string key = parent.name;
  key.push_back('\0');
  key += node.name;
  key.push_back('\0');
  key += node.op_type;
  auto it = tags_.find(key);
  if (it != tags_.end()) return it->second;
  const int64_t tag = first_ + static_cast<int64_t>(named_.size());
  named_.push_back(Named{node.name, node.op_type, parent.name, parent.op_type, layer_tag, what});
  tags_.emplace(std::move(key), tag);
  return tag;
}

const SubgraphFaultTags::Named* SubgraphFaultTags::find(int64_t tag) const {
  if (tag < first_ || tag - first_ >= static_cast<int64_t>(named_.size())) return nullptr;
  return &named_[static_cast<size_t>(tag - first_)];
}

bool gpu_supports(const Node& n, const CudaOp** op_out, std::string* why) {
  *op_out = nullptr;
  const CudaOp* op = cuda_op_for(n);
  // An op whose output size is known only after its kernel has run (NonZero, NonMaxSuppression,
  // Unique) runs on the GPU only when its CUDA op reports that size through a device count
  // (CountedOutput, cuda_ops.h; how the engine runs such a layer: see CudaEngine::init), or makes
  // its outputs itself (If, Loop, Scan: CudaOp::makes_outputs). Otherwise
  // the CPU reference runs it and allocates that output after the fact. Either way the layers after
  // it read the real shape: their shapes are not memoized per input-shape set, and a buffer larger
  // than the shape set's plan is allocated and the plan redone.
  if (output_shape_from_kernel(n)) {
    if (!op || (!op->counted.is_counted() && !op->makes_outputs)) {
      *why = "its output shape depends on the data (known only after the kernel runs) and no CUDA kernel reports "
             "it, so the CPU reference runs it";
      return false;
    }
  }
  // int16, uint16, uint32 and uint64 are on the CPU reference only, except in the ops whose kernels
  // are instantiated for them (a key lists the dtype: the binary arithmetic and comparisons, whose
  // supports() requires every input to have input 0's dtype); any other op with such a value is
  // placed on the CPU before its kernel is asked.
  auto keyed = [op](DataType t) {
    if (!op) return false;
    for (const KernelDtypes& k : op->dtypes)
      if (std::find(k.dtypes.begin(), k.dtypes.end(), t) != k.dtypes.end()) return true;
    return false;
  };
  auto cpu_only = [&keyed](DataType t) {
    return (t == DataType::kInt16 || t == DataType::kUInt16 || t == DataType::kUInt32 || t == DataType::kUInt64) &&
           !keyed(t);
  };
  for (size_t i = 0; i < n.inputs.size() && !(op && op->checks_every_dtype); ++i) {
    const Value* v = n.inputs[i];
    if (v && cpu_only(v->desc.dtype)) {
      *why = "input " + std::to_string(i) + " ('" + v->name + "') has dtype " + dtype_name(v->desc.dtype) +
             ", which the CUDA backend does not support";
      return false;
    }
  }
  for (size_t i = 0; i < n.outputs.size() && !(op && op->checks_every_dtype); ++i) {
    const Value* v = n.outputs[i];
    if (v && cpu_only(v->desc.dtype)) {
      *why = "output " + std::to_string(i) + " ('" + v->name + "') has dtype " + dtype_name(v->desc.dtype) +
             ", which the CUDA backend does not support";
      return false;
    }
  }
  if (!op) {
    *why = "no CUDA kernel for op " + n.op_type;
    return false;
  }
  // Only the ops that make their outputs (the sequence, optional and control-flow ops, and Identity,
  // which passes one on) take or give sequences and optionals.
  if (!op->makes_outputs_for(n) && touches_containers(n)) {
    *why = "the CUDA " + n.op_type + " kernel takes tensors only, not sequences or optionals";
    return false;
  }
  if (std::string unmet = unmet_kernel_dtypes(n, op->dtypes, "CUDA"); !unmet.empty()) {
    *why = unmet;
    return false;
  }
  std::string reason;
  if (!op->supports(n, &reason)) {
    *why = op->checks_every_dtype ? reason
                                  : "the CUDA " + n.op_type + " kernel does not support this node" +
                                        (reason.empty() ? "" : ": " + reason);
    return false;
  }
  *op_out = op;
  return true;
}

const CudaOp* find_cuda_op(const std::string& op_type) {
  for (const auto& op : cuda_ops())
    if (op_type == op.op_type) return &op;
  return nullptr;
}

}  // namespace graft::cuda
