// Device memory for the CUDA runtime: the graft::cuda_alloc hooks Tensor::empty uses for
// DeviceType::kCUDA, and checked allocations that name what they were for.
#pragma once

#include <string>

#include "graft/tensor.h"

namespace graft::cuda {

// Installs the cudaMalloc/cudaFree hooks (idempotent, thread-safe). Called when a CUDA engine is
// made; explicit, no static initializer.
void init_cuda_backend();

// A device tensor, or kOutOfMemory naming `what` and the bytes asked for (with free/total memory).
Result<Tensor> device_empty(DataType dtype, std::vector<int64_t> dims, const std::string& what);
// Raw device bytes owned by the returned tensor (uint8).
Result<Tensor> device_bytes(size_t bytes, const std::string& what);

// A sequence or optional whose tensors are copies on `to` (the host or the GPU), made on `stream`
// (a cudaStream_t; copies to the host are waited for). Tensors already there are copied too, so the
// result owns its tensors: the engine may reuse the memory of the values they came from.
Result<Tensor> container_to(const Tensor& container, DeviceType to, void* stream);

// Number of visible GPUs, or an error saying why there are none.
Result<int> visible_gpus();

}  // namespace graft::cuda
