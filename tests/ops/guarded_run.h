// One kernel call of the op-test harness with every buffer guarded: inputs copied into host or device
// memory with guard bytes around them, outputs poisoned (0xFF: NaN for every float type), a poisoned
// workspace, and afterwards checks that no guard was overwritten and no input changed. The call
// itself is the caller's, so a custom op's OpDef kernel and a builtin node's OpEntry or CudaOp run
// under the same checks (harness.cpp, node_runs.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "graft/op.h"
#include "graft/tensor.h"

namespace graft::optest {

struct OutSpec {
  DataType dtype;
  std::vector<int64_t> dims;
};

// Where the guarded copies are, as the kernel call sees them.
struct GuardedArgs {
  std::vector<TensorView> inputs;  // an omitted input: data == nullptr
  std::vector<TensorView> outputs;
  void* workspace = nullptr;
  size_t workspace_size = 0;
  void* stream = nullptr;  // a cudaStream_t made for the call on Backend::kCUDA, else nullptr
};
using GuardedCall = std::function<Status(const GuardedArgs&)>;

// Runs `call` on `backend` over guarded copies of `inputs` (undefined = omitted; the indices in
// `host_inputs` stay in host memory on CUDA too, as the engine passes shape inputs) and poisoned
// outputs of `outs`, then synchronizes and checks guards and inputs (non-fatal gtest failures). The
// outputs come back as host tensors.
Result<std::vector<Tensor>> run_guarded(Backend backend, const std::vector<Tensor>& inputs,
                                        const std::vector<OutSpec>& outs, size_t workspace_bytes,
                                        const std::vector<int>& host_inputs, const GuardedCall& call);

}  // namespace graft::optest
