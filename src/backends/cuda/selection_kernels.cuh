// Launchers for the CUDA kernels of MaxUnpool and Celu (CPU references: src/backends/cpu/selection.cpp
// and src/backends/cpu/extra.cpp). Plain device pointers; each returns the launch's cudaError_t
// (cudaErrorInvalidValue for an element size or rank the launcher does not handle). Unique has no
// kernel here: its output sizes depend on the data, and the CUDA engine runs such ops on the CPU
// reference.
#pragma once

#include "backends/cuda/cuda_kernel_common.cuh"

namespace graft::cuda::k {

// y (y_numel elements of elem_size bytes: 2, 4 or 8) = 0, then for each i < n whose index
// ind[i] lies in [0, unpooled_numel): y[strided_offset(map, ind[i])] = x[i]. `map` takes a flat
// index of the unpooled tensor to its offset in y (dims: the unpooled dims; strides: y's strides).
// An index outside the range is skipped: the CPU reference refuses it, and a kernel cannot report
// it without a synchronization, so it must at least never write outside y. Repeated indices with
// different values (which MaxPool never produces) leave one of them, unspecified which.
cudaError_t launch_max_unpool(int elem_size, const void* x, const int64_t* ind, int64_t n, const Strided& map,
                              int64_t unpooled_numel, void* y, int64_t y_numel, cudaStream_t s);

// Float32 y = x > 0 ? x : alpha * expm1(x / alpha) (alpha finite and nonzero, checked by the caller).
cudaError_t launch_celu(const float* x, float* y, int64_t n, float alpha, cudaStream_t s);

}  // namespace graft::cuda::k
