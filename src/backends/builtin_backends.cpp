// The device backends compiled into this libgraft, added to the runtime's registry
// (runtime/device_engine.h) by one explicit call. This file is the one place that knows which
// backends a build has, so the runtime includes none of them. The CPU engine is the runtime's own.
#include "runtime/device_engine.h"

#ifdef GRAFT_WITH_CUDA
#include "backends/cuda/cuda_engine.h"
#include "backends/cuda/cuda_ops.h"
#endif

namespace graft {

void register_builtin_backends(DeviceBackendRegistry& registry) {
#ifdef GRAFT_WITH_CUDA
  DeviceBackend cuda;
  cuda.make_engine = cuda::make_cuda_engine;
  cuda.query_device = cuda::query_cuda_device;
  cuda.select_device = cuda::select_device;
  cuda.builtin_kernel_dtypes = [](const std::string& op_type) -> const std::vector<KernelDtypes>* {
    const cuda::CudaOp* op = cuda::find_cuda_op(op_type);
    return op ? &op->dtypes : nullptr;
  };
  registry.add(DeviceType::kCUDA, cuda);
#else
  (void)registry;  // a graft without CUDA: the runtime reports "built without CUDA" for a CUDA engine
#endif
}

}  // namespace graft
