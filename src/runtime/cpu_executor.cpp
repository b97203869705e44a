#include "runtime/cpu_executor.h"

#include <new>
#include <string>
#include <vector>

#include "graph/passes.h"
#include "ops/operator.h"

namespace graft {

bool outputs_all_empty(const Node& node, const std::vector<Tensor>& outs) {
  bool any = false;
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    if (!node.outputs[o]) continue;
    if (o >= outs.size() || !outs[o].defined() || !outs[o].is_tensor() || outs[o].numel() != 0) return false;
    any = true;
  }
  return any;
}

Result<std::vector<Tensor>> run_node_cpu(const Node& node, const std::vector<const Tensor*>& inputs) {
  auto descs = infer_node_concrete(node, inputs);
  if (!descs) return std::move(descs).take_status();
  std::vector<Tensor> outs(node.outputs.size());
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    if (!node.outputs[o]) continue;
    const TensorDesc& d = (*descs)[o];
    // Data-dependent shape: the kernel allocates this output once it knows the size ("allocation
    // after the fact"); it reaches the kernel as an undefined tensor. So does a sequence or optional.
    if (!d.is_tensor() || !d.shape || !shape_is_static(*d.shape)) continue;
    // Output sizes come from the model and the inputs: a failed allocation is an error naming the
    // node and the output, never a NULL buffer handed to the kernel.
    auto t = Tensor::allocate(d.dtype, shape_values(*d.shape));
    if (!t) {
      Status st = std::move(t).take_status();
      return Status(st.code(), "output " + std::to_string(o) + " ('" + node.outputs[o]->name + "'): " + st.message())
          .with_node(node.name, node.op_type);
    }
    outs[o] = std::move(t).value();
    outs[o].poison();
  }
  Status st;
  if (outputs_all_empty(node, outs)) {
    // nothing to write; the output checks below still run
  } else {
    const OpEntry* op = find_op_entry(node);
    if (!op || !op->cpu)
      return error(StatusCode::kUnsupported, "no CPU kernel").with_node(node.name, node.op_type);
    ExecContext ec;
    ec.node = &node;
    ec.attrs = &node.attrs;
    ec.opset = node.opset;
    ec.inputs = inputs;
    // nullptr only for an output the node omits; a data-dependent one arrives undefined.
    for (size_t o = 0; o < outs.size(); ++o) ec.outputs.push_back(node.outputs[o] ? &outs[o] : nullptr);
    try {
      st = op->cpu(ec);
    } catch (const std::bad_alloc&) {
      // Kernels allocate scratch tensors with Tensor::empty, which throws rather than return NULL.
      st = error(StatusCode::kOutOfMemory, "out of memory in the kernel");
    } catch (const std::exception& e) {
      st = error(StatusCode::kRuntimeError, "kernel threw an exception: ", e.what());
    }
  }
  if (!st) return st.with_node(node.name, node.op_type);
  // Every output the node has must now exist, with the inferred dtype, rank and constant dims.
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    if (!node.outputs[o]) continue;
    const TensorDesc& d = (*descs)[o];
    const Tensor& t = outs[o];
    bool ok = t.defined() && t.kind() == d.kind && t.dtype() == d.dtype &&
              (!d.is_tensor() || !d.shape || t.rank() == static_cast<int64_t>(d.shape->size()));
    for (size_t k = 0; ok && d.is_tensor() && d.shape && k < d.shape->size(); ++k)
      ok = !(*d.shape)[k].is_const() || (*d.shape)[k].value() == t.dims()[k];
    if (!ok)
      return error(StatusCode::kInternal, "the kernel left output ", static_cast<uint64_t>(o), " ('",
                   node.outputs[o]->name, "') ",
                   t.defined() ? "as " + desc_of_value(t).to_string() : std::string("unallocated"),
                   ", but inference says ", d.to_string())
          .with_node(node.name, node.op_type);
  }
  return outs;
}

Status check_input_names(const Graph& g, const std::map<std::string, Tensor>& inputs) {
  for (const auto& [name, t] : inputs) {
    bool known = false;
    for (const Value* v : g.inputs()) known |= v->name == name;
    if (!known) {
      std::string names;
      for (const Value* v : g.inputs()) names += (names.empty() ? "" : ", ") + v->name;
      return error(StatusCode::kInvalidArgument, "'", name, "' is not an input of this engine (inputs: ", names, ")");
    }
  }
  return Status::ok();
}

}  // namespace graft
