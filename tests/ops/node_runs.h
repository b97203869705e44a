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

// Runs a sequence, optional or control-flow op's node (container inputs or outputs, or subgraphs:
// its kernel makes its outputs) through its CPU kernel: tensor outputs poisoned and preallocated with
// `outs`' dims where inference made them concrete, container outputs left to the kernel; afterwards
// every input must be unchanged.
Result<std::vector<Tensor>> run_container_node(testing::OneNode& n, const std::vector<TensorDesc>& outs);

// Runs the node as the only layer of an engine built for `backend` from a graph whose inputs are the
// node's (graph inputs, not constants, so nothing folds), the way these ops' CUDA kernels run: only
// inside an engine, whose plan holds their device pools. On CUDA the engine is built strictly (a
// layer the GPU does not take fails the build, naming it). Outputs come back as host values.
Result<std::vector<Tensor>> run_in_engine(Backend backend, testing::OneNode& n);

}  // namespace graft::optest
