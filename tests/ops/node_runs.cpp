// Builtin nodes run through the engines' op entries, guarded (node_runs.h).
#include "node_runs.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "build/build_graph.h"

#ifdef GRAFT_WITH_CUDA
#include <cuda_runtime.h>

#include "backends/cuda/cuda_ops.h"
#include "gpu_handles.h"
#endif

namespace graft::optest {

namespace {

// The guarded buffers as the tensors a kernel context holds (an omitted input stays undefined).
std::vector<Tensor> tensors_of(const std::vector<TensorView>& views) {
  std::vector<Tensor> out;
  for (const TensorView& v : views)
    out.push_back(v.data || !v.dims.empty() ? Tensor::wrap(v.data, v.dtype, v.dims, v.device) : Tensor());
  return out;
}

std::vector<const Tensor*> pointers_to(const std::vector<Tensor>& ts) {
  std::vector<const Tensor*> out;
  for (const Tensor& t : ts) out.push_back(t.defined() ? &t : nullptr);
  return out;
}

// The CPU kernel's call as the executor makes it: the node's context over `ins`, writing `outs`
// (an undefined output is the kernel's to make).
Status call_cpu_kernel(const OpEntry& entry, const Node& node, const std::vector<Tensor>& ins, std::vector<Tensor>& outs) {
  ExecContext ec;
  ec.node = &node;
  ec.attrs = &node.attrs;
  ec.opset = node.opset;
  ec.inputs = pointers_to(ins);
  for (Tensor& t : outs) ec.outputs.push_back(&t);
  return entry.cpu(ec);
}

Result<std::vector<Tensor>> run_on_cpu(testing::OneNode& n, const std::vector<OutSpec>& outs) {
  const OpEntry* entry = find_op_entry(*n.node);
  if (!entry) return error(StatusCode::kUnsupported, "no op entry for ", n.node->op_type);
  // An op that sizes its outputs itself (NonZero, Unique) finds them allocated with the case's dims,
  // and allocate_output refuses the run if its count disagrees, so every output stays guarded.
  return run_guarded(Backend::kCPU, n.inputs, outs, 0, {}, [&](const GuardedArgs& a) {
    std::vector<Tensor> os = tensors_of(a.outputs);
    return call_cpu_kernel(*entry, *n.node, tensors_of(a.inputs), os);
  });
}

#ifdef GRAFT_WITH_CUDA
// The buffers a counted op's outputs get (its bound's dims), and per output the axis the count
// replaces (-1: the dims are final), as the CUDA engine sizes them.
Result<std::vector<OutSpec>> counted_buffers(const cuda::CudaOp& op, testing::OneNode& n, const std::vector<OutSpec>& outs,
                                             std::vector<int>* count_axes) {
  const std::vector<const Tensor*> ins = pointers_to(n.inputs);
  std::vector<OutSpec> buffers;
  if (op.counted.outputs) {
    GRAFT_ASSIGN_OR_RETURN(std::vector<cuda::CountedDims> all, op.counted.outputs(*n.node, ins));
    if (all.size() != outs.size())
      return error(StatusCode::kInternal, "the op sized ", all.size(), " of its ", outs.size(), " outputs");
    for (size_t o = 0; o < all.size(); ++o) {
      buffers.push_back({outs[o].dtype, all[o].dims});
      count_axes->push_back(all[o].count_axis);
    }
    return buffers;
  }
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> bound, op.counted.bound(*n.node, ins));
  buffers.push_back({outs[0].dtype, std::move(bound)});
  count_axes->push_back(op.counted.count_axis);
  return buffers;
}

// A counted run's outputs as the engine reads them back: the count (the last buffer) replaces each
// output's count axis, and the output is the contiguous prefix of its buffer with those dims.
Result<std::vector<Tensor>> counted_prefixes(const cuda::CudaOp& op, std::vector<Tensor> buffers,
                                             const std::vector<int>& count_axes) {
  const int64_t count = buffers.back().data_as<int64_t>()[0];
  buffers.pop_back();
  if (count < 0)
    return error(StatusCode::kInvalidArgument, op.counted.invalid_data ? op.counted.invalid_data : "invalid input data");
  std::vector<Tensor> out;
  for (size_t o = 0; o < buffers.size(); ++o) {
    const int axis = o < count_axes.size() ? count_axes[o] : -1;
    std::vector<int64_t> dims = buffers[o].dims();
    if (axis >= 0) {
      const size_t a = static_cast<size_t>(axis);
      if (a >= dims.size()) return error(StatusCode::kInternal, "output ", o, "'s count axis ", axis, " is past its rank");
      if (count > dims[a])
        return error(StatusCode::kInternal, "the kernel counted ", count, " along axis ", axis, " of output ", o,
                     ", whose buffer has ", dims[a], " there");
      dims[a] = count;
    }
    Tensor t = Tensor::empty(buffers[o].dtype(), dims);
    if (t.nbytes()) std::memcpy(t.data(), buffers[o].data(), t.nbytes());
    out.push_back(std::move(t));
  }
  return out;
}

Result<std::vector<Tensor>> run_on_gpu(testing::OneNode& n, const std::vector<OutSpec>& outs) {
  const cuda::CudaOp* op = nullptr;
  std::string why;
  if (!cuda::gpu_supports(*n.node, &op, &why))
    return error(StatusCode::kUnsupported, "no CUDA kernel takes this ", n.node->op_type, " node: ", why);
  if (op->makes_outputs)
    return error(StatusCode::kUnsupported, n.node->op_type, "'s CUDA kernel makes its outputs itself: not run by the harness");
  // A counted op (NonZero, NonMaxSuppression, Unique) writes into buffers of its bound's dims and
  // reports the count in one more, poisoned, int64: the engine's protocol (cuda_ops.h).
  std::vector<OutSpec> buffers = outs;
  std::vector<int> count_axes;
  const bool counted = op->counted.is_counted();
  if (counted) {
    GRAFT_ASSIGN_OR_RETURN(buffers, counted_buffers(*op, n, outs, &count_axes));
    buffers.push_back({DataType::kInt64, {}});
  }
  const size_t n_out = outs.size();
  size_t workspace = 0;
  if (op->workspace_bytes) {
    std::vector<Tensor> shaped;  // host stand-ins: a workspace depends on shapes, not on data
    for (size_t o = 0; o < n_out; ++o) shaped.push_back(Tensor::empty(buffers[o].dtype, buffers[o].dims));
    workspace = op->workspace_bytes(*n.node, pointers_to(n.inputs), shaped);
    if (workspace == cuda::kUnknownWorkspace)
      return error(StatusCode::kInternal, n.node->op_type, "'s workspace is unknown with its outputs' shapes given");
  }
  testing::GpuHandles& handles = testing::GpuHandles::get();
  auto ran = run_guarded(Backend::kCUDA, n.inputs, buffers, workspace, op->host_inputs, [&](const GuardedArgs& a) -> Status {
    std::vector<Tensor> ins = tensors_of(a.inputs), os = tensors_of(a.outputs);
    os.resize(n_out);  // without the count
    ExecContext ec = cuda::exec_context_for(*n.node, pointers_to(ins), os, a.stream);
    cuda::CudaExec ex;
    ex.ctx = &ec;
    if (counted) ex.output_count = static_cast<int64_t*>(a.outputs.back().data);
    ex.workspace = a.workspace;
    ex.workspace_size = a.workspace_size;
    ex.cublaslt = handles.lt;
    ex.cudnn = handles.dnn;
#ifdef GRAFT_WITH_CUDNN
    // As an execution context does once per run: kernels never set the handle's stream themselves.
    if (handles.dnn && cudnnSetStream(static_cast<cudnnHandle_t>(handles.dnn), static_cast<cudaStream_t>(a.stream)) !=
                           CUDNN_STATUS_SUCCESS)
      return error(StatusCode::kRuntimeError, "cudnnSetStream failed");
#endif
    return op->run(ex);
  });
  if (!ran || !counted) return ran;
  return counted_prefixes(*op, std::move(ran).value(), count_axes);
}
#endif

}  // namespace

Result<std::vector<OutSpec>> infer_node_outputs(testing::OneNode& n, int opset) {
  GRAFT_ASSIGN_OR_RETURN(std::vector<TensorDesc> descs, n.infer(opset));
  std::vector<OutSpec> out;
  for (const TensorDesc& d : descs) out.push_back({d.dtype, shape_values(*d.shape)});
  return out;
}

Result<std::vector<Tensor>> run_container_node(testing::OneNode& n, const std::vector<TensorDesc>& outs) {
  const OpEntry* entry = find_op_entry(*n.node);
  if (!entry) return error(StatusCode::kUnsupported, "no op entry for ", n.node->op_type);
  std::vector<Tensor> ins;  // deep copies (containers item by item), so that a kernel writing into an input is caught
  for (const Tensor& t : n.inputs) ins.push_back(t.defined() ? t.clone() : t);
  std::vector<Tensor> os(outs.size());
  for (size_t o = 0; o < outs.size(); ++o)
    if (outs[o].is_tensor() && outs[o].shape && shape_is_static(*outs[o].shape)) {
      os[o] = Tensor::empty(outs[o].dtype, shape_values(*outs[o].shape));
      os[o].poison();
    }
  GRAFT_RETURN_IF_ERROR(call_cpu_kernel(*entry, *n.node, ins, os));
  for (size_t i = 0; i < ins.size(); ++i)
    EXPECT_TRUE(!ins[i].defined() || ins[i].same_contents(n.inputs[i])) << "the kernel modified input " << i;
  return os;
}

Result<std::vector<Tensor>> run_in_engine(Backend backend, testing::OneNode& n) {
  auto g = std::make_unique<Graph>();
  const int opset = n.node->opset > 0 ? n.node->opset : 17;
  g->opset_imports[""] = opset;
  g->ir_version = 8;
  Node* node = g->add_node(n.node->name, n.node->op_type, n.node->domain);
  node->opset = opset;
  node->attrs = n.node->attrs;
  node->subgraphs = n.node->subgraphs;
  node->implicit_inputs = n.node->implicit_inputs;
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (!n.inputs[i].defined()) {
      node->inputs.push_back(nullptr);
      continue;
    }
    Value* v = g->add_value("in" + std::to_string(i));
    v->desc = desc_of_value(n.inputs[i]);
    v->is_graph_input = true;
    g->inputs().push_back(v);
    node->inputs.push_back(v);
    feeds[v->name] = n.inputs[i];
  }
  for (size_t o = 0; o < n.node->outputs.size(); ++o) {
    Value* v = g->add_value("out" + std::to_string(o));
    v->producer = node;
    v->is_graph_output = true;
    node->outputs.push_back(v);
    g->outputs().push_back(v);
  }
  BuilderConfig config;
  config.device = backend == Backend::kCUDA ? DeviceType::kCUDA : DeviceType::kCPU;
  config.strict_device = backend == Backend::kCUDA;
  GRAFT_ASSIGN_OR_RETURN(std::shared_ptr<Engine> engine,
                         build_engine_from_graph(std::move(g), config, "one " + n.node->op_type + " node"));
  GRAFT_ASSIGN_OR_RETURN(std::unique_ptr<ExecutionContext> ctx, engine->create_context());
  std::map<std::string, Tensor> results;
  GRAFT_RETURN_IF_ERROR(ctx->run(feeds, results));
  std::vector<Tensor> out;
  for (size_t o = 0; o < n.node->outputs.size(); ++o) {
    auto it = results.find("out" + std::to_string(o));
    if (it == results.end()) return error(StatusCode::kInternal, "the engine did not return output ", o);
    out.push_back(it->second);
  }
  return out;
}

Result<std::vector<Tensor>> run_node_guarded(Backend backend, testing::OneNode& n, const std::vector<OutSpec>& outs) {
  if (backend == Backend::kCPU) return run_on_cpu(n, outs);
#ifdef GRAFT_WITH_CUDA
  return run_on_gpu(n, outs);
#else
  return error(StatusCode::kUnsupported, "graft was built without CUDA");
#endif
}

}  // namespace graft::optest
