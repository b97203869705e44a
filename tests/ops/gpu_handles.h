// The cuBLASLt and cuDNN handles the GPU tests hand to CUDA ops (CudaExec), made once per process the
// way an engine's execution context makes its own. Shared by the op-test harness's builtin runs
// (node_runs.cpp) and the CUDA kernel tests (tests/cuda_kernels).
#pragma once

#include <cublasLt.h>
#include <dlfcn.h>
#ifdef GRAFT_WITH_CUDNN
#include <cudnn.h>
#endif

#include <string>

namespace graft::testing {

// A cuBLASLt handle from the library loaded at run time, or nullptr. The test binaries do not link
// libcublasLt: its static initializers cost every process about 0.35 s at start, GPU or not, and
// CTest runs each of the harness's two thousand cases in a process of its own. libgraft loads the
// library the same way (src/backends/cuda/cublaslt_loader.cpp); both get the one loaded copy, so the
// handle is valid for graft's calls.
inline cublasLtHandle_t create_cublaslt_handle() {
  const std::string soname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
  void* lib = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);  // stays loaded for the process
  if (!lib) return nullptr;
  using Create = cublasStatus_t (*)(cublasLtHandle_t*);
  auto create = reinterpret_cast<Create>(dlsym(lib, "cublasLtCreate"));
  cublasLtHandle_t h = nullptr;
  return create && create(&h) == CUBLAS_STATUS_SUCCESS ? h : nullptr;
}

struct GpuHandles {
  cublasLtHandle_t lt = nullptr;
  void* dnn = nullptr;  // cudnnHandle_t; nullptr without cuDNN
  GpuHandles() {
    lt = create_cublaslt_handle();
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
