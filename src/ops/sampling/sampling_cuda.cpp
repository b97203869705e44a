// The sampling family's CUDA registration: one line per op's .cu file.
#include <vector>

#include "backends/cuda/cuda_ops.h"

namespace graft::cuda {

void append_cuda_roi_align_ops(std::vector<CudaOp>& out);    // roi_align.cu
void append_cuda_grid_sample_ops(std::vector<CudaOp>& out);  // grid_sample.cu

void append_cuda_sampling_ops(std::vector<CudaOp>& out) {
  append_cuda_roi_align_ops(out);
  append_cuda_grid_sample_ops(out);
}

}  // namespace graft::cuda
