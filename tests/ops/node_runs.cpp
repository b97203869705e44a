// Builtin nodes run through the engines' op entries, guarded (node_runs.h).
#include "node_runs.h"

#include <string>

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

Result<std::vector<Tensor>> run_on_cpu(testing::OneNode& n, const std::vector<OutSpec>& outs) {
  const OpEntry* entry = find_op_entry(*n.node);
  if (!entry) return error(StatusCode::kUnsupported, "no op entry for ", n.node->op_type);
  if (entry->output_shape_from_kernel)
    return error(StatusCode::kUnsupported, n.node->op_type, "'s CPU kernel sizes its outputs itself: not run by the harness");
  return run_guarded(Backend::kCPU, n.inputs, outs, 0, {}, [&](const GuardedArgs& a) {
    std::vector<Tensor> ins = tensors_of(a.inputs), os = tensors_of(a.outputs);
    ExecContext ec;
    ec.node = n.node;
    ec.attrs = &n.node->attrs;
    ec.opset = n.node->opset;
    ec.inputs = pointers_to(ins);
    for (Tensor& t : os) ec.outputs.push_back(&t);
    return entry->cpu(ec);
  });
}

#ifdef GRAFT_WITH_CUDA
Result<std::vector<Tensor>> run_on_gpu(testing::OneNode& n, const std::vector<OutSpec>& outs) {
  const cuda::CudaOp* op = nullptr;
  std::string why;
  if (!cuda::gpu_supports(*n.node, &op, &why))
    return error(StatusCode::kUnsupported, "no CUDA kernel takes this ", n.node->op_type, " node: ", why);
  if (op->counted.is_counted() || op->makes_outputs)
    return error(StatusCode::kUnsupported, n.node->op_type,
                 "'s CUDA kernel sizes or makes its outputs itself: not run by the harness");
  size_t workspace = 0;
  if (op->workspace_bytes) {
    std::vector<Tensor> shaped;  // host stand-ins: a workspace depends on shapes, not on data
    for (const OutSpec& o : outs) shaped.push_back(Tensor::empty(o.dtype, o.dims));
    workspace = op->workspace_bytes(*n.node, pointers_to(n.inputs), shaped);
    if (workspace == cuda::kUnknownWorkspace)
      return error(StatusCode::kInternal, n.node->op_type, "'s workspace is unknown with its outputs' shapes given");
  }
  testing::GpuHandles& handles = testing::GpuHandles::get();
  return run_guarded(Backend::kCUDA, n.inputs, outs, workspace, op->host_inputs, [&](const GuardedArgs& a) -> Status {
    std::vector<Tensor> ins = tensors_of(a.inputs), os = tensors_of(a.outputs);
    ExecContext ec = cuda::exec_context_for(*n.node, pointers_to(ins), os, a.stream);
    cuda::CudaExec ex;
    ex.ctx = &ec;
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
}
#endif

}  // namespace

Result<std::vector<OutSpec>> infer_node_outputs(testing::OneNode& n, int opset) {
  GRAFT_ASSIGN_OR_RETURN(std::vector<TensorDesc> descs, n.infer(opset));
  std::vector<OutSpec> out;
  for (const TensorDesc& d : descs) out.push_back({d.dtype, shape_values(*d.shape)});
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
