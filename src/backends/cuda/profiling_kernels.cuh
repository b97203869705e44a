// The per-layer profiler's gate (graft run --profile): a kernel that holds the stream until the host
// has enqueued a whole layer, so that the layer's CUDA events enclose only GPU time. Without it a
// layer whose host side is slow (cuDNN's legacy API spends up to a millisecond per call building
// descriptors and plans) would be charged for that host time while the GPU sat idle; the engine's
// CUDA graph replays never pay it.
#pragma once

#include <cstdint>

#include "backends/cuda/cuda_kernel_common.cuh"

namespace graft::cuda::k {

// Enqueues a one-thread kernel that waits until *flag (host memory mapped into the device, written
// by the host) reaches `generation`, or `timeout_ms` passed: a layer that itself waits for the GPU
// from the host (a host copy inside its launch) must not deadlock, its timing then includes the wait.
cudaError_t launch_profiling_gate(const volatile uint64_t* flag, uint64_t generation, uint32_t timeout_ms,
                                  cudaStream_t stream);

}  // namespace graft::cuda::k
