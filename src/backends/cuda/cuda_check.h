// Every CUDA runtime call in the runtime goes through these: a failure becomes a graft::Status that
// names what was being done (the layer, the allocation) and the CUDA error's name and text.
#pragma once

#include <cuda_runtime.h>

#include "graft/status.h"

namespace graft::cuda {

// kOutOfMemory for allocation failures, kRuntimeError for the rest. Clears the (non-sticky) error
// so the context stays usable.
template <typename... Args>
Status cuda_status(cudaError_t e, Args&&... what) {
  (void)cudaGetLastError();
  StatusCode code = e == cudaErrorMemoryAllocation ? StatusCode::kOutOfMemory : StatusCode::kRuntimeError;
  return error(code, std::forward<Args>(what)..., ": ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ")");
}

}  // namespace graft::cuda

// GRAFT_CUDA_RETURN(cudaMemcpyAsync(...), "copying input '", name, "' to the GPU");
#define GRAFT_CUDA_RETURN(call, ...)                                       \
  do {                                                                     \
    cudaError_t graft_cuda_e_ = (call);                                    \
    if (graft_cuda_e_ != cudaSuccess)                                      \
      return ::graft::cuda::cuda_status(graft_cuda_e_, __VA_ARGS__);       \
  } while (0)
