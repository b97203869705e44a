// Pad's CUDA launchers (pad.cu), which CenterCropPad's op (center_crop_pad.cu) runs too: both map
// every output element to the input element `begin` before it on each axis.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/shape_kernels.cuh"  // k::AxisMap, which Tile shares

namespace graft::cuda::k {

// out[i] = in[i - begin] where inside the input along every axis, else *fill (one element on the
// device; nullptr: zero bytes).
cudaError_t launch_pad_constant(const void* in, void* out, int elem_size, const AxisMap& p, const void* fill,
                                int64_t n, cudaStream_t s);

// Pad's other modes: out[i] = in[the element that graft::pad_source (resize_pad.h, the CPU
// reference's own mapping) gives for i - begin along every axis]. `mode` is a graft::PadMode as an
// int, reflect, edge or wrap; every in_dims[a] must be positive.
cudaError_t launch_pad_mode(int mode, const void* in, void* out, int elem_size, const AxisMap& p, int64_t n,
                            cudaStream_t s);

}  // namespace graft::cuda::k
