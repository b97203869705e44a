// A plan of plan_view_steps (src/ops/views/views.h) on the GPU: its strided views as gather launches,
// the intermediate results (a plan of several copies) in two scratch buffers that alternate.
// Used by GraftViewChain and by GraftAttention's chain form.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "graft/status.h"
#include "ops/views/views.h"

namespace graft::cuda {

struct GpuViewPlan {
  std::vector<StridedView> views;
  std::vector<k::Strided> params;  // per copy, its axes merged
  size_t buffer_bytes = 0;         // one intermediate buffer, aligned (0: a single copy)
  // Scratch the intermediate results need: none, one buffer, or two alternating.
  size_t scratch_bytes() const { return (views.size() <= 1 ? 0 : views.size() == 2 ? 1 : 2) * buffer_bytes; }
};

// Checks each view against its source (the input's `source_numel` elements for the first, the
// previous copy's for the others: a damaged plan file reaches here too) and merges its axes.
Result<GpuViewPlan> make_gpu_view_plan(std::vector<StridedView> views, int64_t source_numel, size_t elem_size);

// src -> dst (the last view's elements, contiguous), through `scratch` (scratch_bytes()).
cudaError_t launch_view_plan(const GpuViewPlan& p, const void* src, void* dst, void* scratch, size_t elem_size,
                             cudaStream_t stream);

}  // namespace graft::cuda
