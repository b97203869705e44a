// Launchers for the data-movement CUDA kernels: a strided gather out[i] = in[offset(p, i)] that
// serves Transpose (and any permutation/stride view), by element size.
#pragma once

#include "backends/cuda/cuda_kernel_common.cuh"

namespace graft::cuda::k {

cudaError_t launch_strided_gather(const void* in, void* out, int elem_size, const Strided& p, int64_t n, cudaStream_t s);

}  // namespace graft::cuda::k
