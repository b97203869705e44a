// cuBLASLt as libgraft loads it (cublaslt_loader.cpp): when first called, by soname, so that nothing
// linking libgraft pays the library's start-up cost unless it uses it.
#pragma once

namespace graft::cuda {

// A new cuBLASLt handle (a cublasLtHandle_t), made by cublasLtCreate through libgraft's loader, or
// nullptr when that fails (no GPU, or the library cannot be loaded). For code outside libgraft that
// must not link libcublasLt itself: the GPU test binaries, whose cases CTest starts as processes of
// their own. The handle serves every cuBLASLt call graft makes. No cuBLAS type appears in the
// signature: the loader declares them hidden, and a function taking one would be hidden too.
void* create_cublaslt_handle();

}  // namespace graft::cuda
