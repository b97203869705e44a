// cuBLASLt, loaded the first time graft calls it. libgraft does not link libcublasLt: that library is
// over 500 MB, and mapping and relocating it cost about 0.4 s at the start of every process that
// loads libgraft (each `graft` command, each test), whether or not the process ever builds a CUDA
// engine. The cuBLASLt functions graft calls are defined here, hidden inside libgraft, and each
// forwards to the library's own, found with dlopen by its soname the way the dynamic linker would
// have found it (LD_LIBRARY_PATH, libgraft's RUNPATH, the system's library paths) and reused if the
// process (PyTorch, say) has loaded it already.
//
// When the library cannot be loaded, every call returns CUBLAS_STATUS_NOT_INITIALIZED, and the status
// text says why (dlopen's message); the CUDA engine's first call is cublasLtCreate, so building or
// loading a CUDA engine fails there with that text.
#pragma GCC visibility push(hidden)
#include <cublasLt.h>
#pragma GCC visibility pop

#include "backends/cuda/cublaslt_loader.h"

#include <dlfcn.h>

#include <string>

namespace {

struct LtLibrary {
  void* handle = nullptr;
  std::string error;  // why it could not be loaded
};

const LtLibrary& lt_library() {
  static const LtLibrary lib = [] {
    LtLibrary l;
    const std::string soname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
    l.handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!l.handle) {
      const char* e = dlerror();
      l.error = "the cuBLASLt library could not be loaded (" + (e ? std::string(e) : soname) + ")";
    }
    return l;
  }();
  return lib;
}

template <typename Fn>
Fn lt_symbol(const char* name) {
  const LtLibrary& lib = lt_library();
  return lib.handle ? reinterpret_cast<Fn>(dlsym(lib.handle, name)) : nullptr;
}

// Why a function could not be called: the library's load error, or the function is missing from it.
const char* lt_missing_text() {
  const LtLibrary& lib = lt_library();
  return lib.handle ? "the loaded cuBLASLt library lacks a function graft calls" : lib.error.c_str();
}

}  // namespace

// One forwarding definition per function graft calls (nm -D --undefined-only on a libgraft linked
// against libcublasLt lists them), returning `fallback` when the function cannot be called. A
// function missing from the library behaves as an unloaded one.
#define GRAFT_LT_FORWARD_OR(ret, fallback, name, params, args)      \
  extern "C" ret CUBLASWINAPI name params {                         \
    static const auto fn = lt_symbol<ret(CUBLASWINAPI*) params>(#name); \
    return fn ? fn args : (fallback);                               \
  }
#define GRAFT_LT_FORWARD(name, params, args) \
  GRAFT_LT_FORWARD_OR(cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, name, params, args)

GRAFT_LT_FORWARD(cublasLtCreate, (cublasLtHandle_t * handle), (handle))
GRAFT_LT_FORWARD(cublasLtDestroy, (cublasLtHandle_t handle), (handle))
GRAFT_LT_FORWARD(cublasLtMatmul,
                 (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* a,
                  cublasLtMatrixLayout_t a_desc, const void* b, cublasLtMatrixLayout_t b_desc, const void* beta,
                  const void* c, cublasLtMatrixLayout_t c_desc, void* d, cublasLtMatrixLayout_t d_desc,
                  const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_size, cudaStream_t stream),
                 (handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc, algo, workspace,
                  workspace_size, stream))
GRAFT_LT_FORWARD(cublasLtMatmulAlgoGetHeuristic,
                 (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a_desc,
                  cublasLtMatrixLayout_t b_desc, cublasLtMatrixLayout_t c_desc, cublasLtMatrixLayout_t d_desc,
                  cublasLtMatmulPreference_t preference, int requested, cublasLtMatmulHeuristicResult_t results[],
                  int* returned),
                 (handle, desc, a_desc, b_desc, c_desc, d_desc, preference, requested, results, returned))
GRAFT_LT_FORWARD(cublasLtMatmulDescCreate,
                 (cublasLtMatmulDesc_t * desc, cublasComputeType_t compute, cudaDataType_t scale),
                 (desc, compute, scale))
GRAFT_LT_FORWARD(cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc), (desc))
GRAFT_LT_FORWARD(cublasLtMatmulDescSetAttribute,
                 (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const void* buf, size_t size),
                 (desc, attr, buf, size))
GRAFT_LT_FORWARD(cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t * pref), (pref))
GRAFT_LT_FORWARD(cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t pref), (pref))
GRAFT_LT_FORWARD(cublasLtMatmulPreferenceSetAttribute,
                 (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                  size_t size),
                 (pref, attr, buf, size))
GRAFT_LT_FORWARD(cublasLtMatrixLayoutCreate,
                 (cublasLtMatrixLayout_t * layout, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld),
                 (layout, type, rows, cols, ld))
GRAFT_LT_FORWARD(cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t layout), (layout))
GRAFT_LT_FORWARD(cublasLtMatrixLayoutSetAttribute,
                 (cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr, const void* buf, size_t size),
                 (layout, attr, buf, size))

GRAFT_LT_FORWARD_OR(const char*, "CUBLAS_STATUS_NOT_INITIALIZED", cublasLtGetStatusName, (cublasStatus_t status),
                    (status))
GRAFT_LT_FORWARD_OR(const char*, lt_missing_text(), cublasLtGetStatusString, (cublasStatus_t status), (status))
GRAFT_LT_FORWARD_OR(size_t, 0, cublasLtGetVersion, (void), ())

#undef GRAFT_LT_FORWARD
#undef GRAFT_LT_FORWARD_OR

namespace graft::cuda {

void* create_cublaslt_handle() {
  cublasLtHandle_t h = nullptr;
  return cublasLtCreate(&h) == CUBLAS_STATUS_SUCCESS ? h : nullptr;
}

}  // namespace graft::cuda
