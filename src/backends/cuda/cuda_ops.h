// The CUDA backend's builtin-op kernels: the contract between the CUDA runtime (executor, memory,
// graphs) and the kernel files. Compiled only with GRAFT_ENABLE_CUDA.
//
// A CudaOp runs one node on the GPU. Its ExecContext holds device tensors (DeviceType::kCUDA) for
// every input and output, except the inputs listed in `host_inputs` (shape-like int64 tensors such
// as Reshape's shape or Slice's starts), which the runtime passes as host tensors; ctx.stream is the
// cudaStream_t to enqueue on. Kernels never allocate device memory on the enqueue path: scratch
// comes from `workspace` (sized by `workspace_bytes` at build time) and never synchronize.
#pragma once

#include <string>
#include <vector>

#include "ops/operator.h"

namespace graft {
class TacticTable;
struct TacticTuning;
}  // namespace graft

namespace graft::cuda {

struct CudaExec {
  ExecContext* ctx = nullptr;       // node, attrs, opset, inputs, outputs, stream
  void* workspace = nullptr;        // device scratch of workspace_bytes(...) bytes
  size_t workspace_size = 0;
  void* cublaslt = nullptr;         // cublasLtHandle_t owned by the execution context
  void* cudnn = nullptr;            // cudnnHandle_t owned by the execution context (nullptr if none)
  TacticTable* tactics = nullptr;   // the engine's chosen tactics (src/build/tactics.h)
  TacticTuning* tuning = nullptr;   // set only while the builder times tactics (may synchronize)
};

struct CudaOp {
  const char* op_type;
  // Whether this node (its attributes and input/output dtypes, known at build time) is handled;
  // when not, `why` says what is missing, so the builder can name it.
  bool (*supports)(const Node& node, std::string* why);
  Status (*run)(CudaExec& exec);
  std::vector<int> host_inputs;  // input indices read on the host
  // Device scratch needed for these concrete input shapes (nullptr: none).
  size_t (*workspace_bytes)(const Node& node, const std::vector<const Tensor*>& inputs) = nullptr;
};

// The explicit table (src/backends/cuda/cuda_ops.cpp) and its per-group parts.
const std::vector<CudaOp>& cuda_ops();
const CudaOp* find_cuda_op(const std::string& op_type);
void append_cuda_elementwise_ops(std::vector<CudaOp>& out);  // unary, binary broadcast, Where, Cast, Clip...
void append_cuda_reduce_norm_ops(std::vector<CudaOp>& out);  // Softmax, LayerNormalization, Reduce*
void append_cuda_shape_ops(std::vector<CudaOp>& out);        // Transpose, Concat, Slice, Gather, Expand, Tile, Pad, Resize, Reshape-like copies
void append_cuda_nn_ops(std::vector<CudaOp>& out);           // MatMul/Gemm (cuBLASLt), Conv/pools (cuDNN), BatchNormalization
void append_cuda_conv_ops(std::vector<CudaOp>& out);         // GraftConv, GraftPool (cuDNN, NCHW/NHWC, fused epilogues)
void append_cuda_fused_transformer_ops(std::vector<CudaOp>& out);  // GEMM epilogues, elementwise chains, attention

}  // namespace graft::cuda
