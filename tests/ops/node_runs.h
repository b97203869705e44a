// A builtin op's node (an ONNX op, or one of graft's internal ops) run by the op-test harness the way
// the engines run it: inference through the node's OpEntry, the CPU kernel through OpEntry::cpu, the
// GPU kernel through the CudaOp that cuda::gpu_supports picks for the node, each call guarded
// (guarded_run.h). The node is tests/unit/op_test_util.h's OneNode: one node over constant inputs.
#pragma once

#include <vector>

#include "guarded_run.h"
#include "tests/unit/op_test_util.h"

namespace graft::optest {

// The output dtypes and dims inference gives for the node's concrete inputs at `opset` (also set on
// the node's outputs, as the builder leaves them for the kernels' supports checks).
Result<std::vector<OutSpec>> infer_node_outputs(testing::OneNode& n, int opset);

// Runs the node on `backend` with outputs of `outs` (tensors: the harness makes no sequence or
// optional inputs); kUnsupported, saying why, where the backend has no kernel that takes the node,
// or where its kernel sizes or makes its outputs itself (not run by the harness).
Result<std::vector<Tensor>> run_node_guarded(Backend backend, testing::OneNode& n, const std::vector<OutSpec>& outs);

// Runs a sequence or optional op's node (container inputs or outputs: its kernel makes them) on the
// CPU: tensor outputs poisoned and preallocated with `outs`' dims where inference made them
// concrete, container outputs left to the kernel; afterwards every input must be unchanged. The CUDA
// backend runs these ops only inside an engine (their device pools live in its plan): kUnsupported.
Result<std::vector<Tensor>> run_container_node(Backend backend, testing::OneNode& n, const std::vector<TensorDesc>& outs);

}  // namespace graft::optest
