// The data-dependent family's CUDA registration: one line per op's .cu file.
#include <vector>

#include "backends/cuda/cuda_ops.h"

namespace graft::cuda {

void append_cuda_non_max_suppression_ops(std::vector<CudaOp>& out);  // non_max_suppression.cu
void append_cuda_non_zero_ops(std::vector<CudaOp>& out);             // non_zero.cu
void append_cuda_unique_ops(std::vector<CudaOp>& out);               // unique.cu

void append_cuda_data_dependent_ops(std::vector<CudaOp>& out) {
  append_cuda_non_max_suppression_ops(out);
  append_cuda_non_zero_ops(out);
  append_cuda_unique_ops(out);
}

}  // namespace graft::cuda
