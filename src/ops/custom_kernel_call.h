// The call of a custom op's kernel (an OpDef's, graft's own or a plugin's) on a node's tensors, in
// one form for every engine: the CPU executor and the CUDA engine build it the same way.
#pragma once

#include <vector>

#include "graft/op.h"
#include "graft/tensor.h"
#include "graph/graph.h"

namespace graft {

struct CustomKernelCall {
  KernelContext context;  // attrs, a view per declared input (empty when absent), a view per node output
  std::vector<ConcreteDesc> inputs, outputs;  // what the op's workspace_fn reads
};

// Stream and workspace are left for the caller to set. `outputs` may hold undefined tensors (outputs
// the node leaves out, or that the kernel allocates itself).
CustomKernelCall custom_kernel_call(const Node& node, const std::vector<const Tensor*>& inputs,
                                    const std::vector<Tensor>& outputs);

}  // namespace graft
