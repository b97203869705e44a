// The cuBLASLt and cuDNN handles the GPU tests hand to CUDA ops (CudaExec), made once per process the
// way an engine's execution context makes its own. Shared by the op-test harness's builtin runs
// (node_runs.cpp) and the CUDA kernel tests (tests/cuda_kernels).
#pragma once

#include <cublasLt.h>
#ifdef GRAFT_WITH_CUDNN
#include <cudnn.h>
#endif

#include "backends/cuda/cublaslt_loader.h"

namespace graft::testing {

struct GpuHandles {
  cublasLtHandle_t lt = nullptr;
  void* dnn = nullptr;  // cudnnHandle_t; nullptr without cuDNN
  GpuHandles() {
    // Through libgraft's loader: the test binaries do not link libcublasLt, whose static
    // initializers cost every process about 0.35 s at start, GPU or not.
    lt = static_cast<cublasLtHandle_t>(cuda::create_cublaslt_handle());
#ifdef GRAFT_WITH_CUDNN
    cudnnHandle_t h = nullptr;
    if (cudnnCreate(&h) == CUDNN_STATUS_SUCCESS) dnn = h;
#endif
  }
  static GpuHandles& get() {
    static GpuHandles h;
    return h;
  }
};

}  // namespace graft::testing
