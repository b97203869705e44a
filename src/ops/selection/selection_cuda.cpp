// The selection family's CUDA registration: one line per op's .cu file.
#include <vector>

#include "backends/cuda/cuda_ops.h"

namespace graft::cuda {

void append_cuda_arg_max_ops(std::vector<CudaOp>& out);  // arg_max.cu
void append_cuda_top_k_ops(std::vector<CudaOp>& out);    // top_k.cu

void append_cuda_selection_ops(std::vector<CudaOp>& out) {
  append_cuda_arg_max_ops(out);
  append_cuda_top_k_ops(out);
}

}  // namespace graft::cuda
