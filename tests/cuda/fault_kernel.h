// Launcher of the test op FaultyScale's CUDA kernel (fault_kernel.cu); no framework types.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace graft_cuda_test {

// y[i] = a * x[i] for n floats on `stream`. With invalid_configuration the launch asks for more
// threads per block than any GPU has and fails with cudaErrorInvalidConfiguration, leaving that
// error pending (cudaPeekAtLastError) and y unwritten. Returns the launch's error.
cudaError_t launch_scale(const float* x, float* y, int64_t n, float a, bool invalid_configuration,
                         cudaStream_t stream);

}  // namespace graft_cuda_test
