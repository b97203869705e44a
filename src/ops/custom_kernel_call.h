// The call of a custom op's kernel (an OpDef's, graft's own or a plugin's) on a node's tensors, in
// one form for every engine: the CPU entry (custom_op_entry, src/ops/custom_op_entry.cpp) and the
// CUDA one (custom_cuda_op, src/backends/cuda/cuda_ops.cpp) build it the same way.
#pragma once

#include <vector>

#include "graft/op.h"
#include "graft/tensor.h"
#include "ops/operator.h"

namespace graft {

// The node attribute (int 1) by which graft's CUDA builder marks a node of a channels_last_io() op
// kept inside a channels-last region (src/graph/nhwc_regions.cpp): its input 0 and output 0 values
// are then (N, H, W, C), and inference and the kernel call present them to the op as (N, C, H, W)
// with KernelContext::channels_last_io set. Plans keep it; a user's model that names it is refused
// at import (src/onnx/importer.cpp).
inline constexpr const char* kChannelsLastIoAttr = "graft_channels_last_io";
bool channels_last_io(const Node& node);
// (N, H, W, C) dims as the op sees them, (N, C, H, W); other ranks unchanged.
std::vector<int64_t> nchw_dims(std::vector<int64_t> nhwc);

struct CustomKernelCall {
  KernelContext context;  // attrs, a view per declared input (empty when absent), a view per node output
  std::vector<ConcreteDesc> inputs, outputs;  // what the op's workspace_fn reads
};

// What an OpDef's workspace_fn and kernel see of a node's inputs: one desc per declared input (past
// the node's own inputs, or omitted by it: empty), and one per further input the node has.
std::vector<ConcreteDesc> custom_input_descs(const Node& node, const std::vector<const Tensor*>& inputs);

// Stream and workspace are left for the caller to set. An output the node leaves out (a null
// pointer) or that is not allocated yet reaches the kernel as an empty view.
CustomKernelCall custom_kernel_call(const ExecContext& ec);

}  // namespace graft
