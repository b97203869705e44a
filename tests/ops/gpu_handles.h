// The cuBLASLt and cuDNN handles the GPU tests hand to CUDA ops (CudaExec), made once per process the
// way an engine's execution context makes its own. Shared by the op-test harness's builtin runs
// (node_runs.cpp) and the CUDA kernel tests (tests/cuda_kernels).
#pragma once

#include <cublasLt.h>
#ifdef GRAFT_WITH_CUDNN
#include <cudnn.h>
#endif

namespace graft::testing {

struct GpuHandles {
  cublasLtHandle_t lt = nullptr;
  void* dnn = nullptr;  // cudnnHandle_t; nullptr without cuDNN
  GpuHandles() {
    if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) lt = nullptr;
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
