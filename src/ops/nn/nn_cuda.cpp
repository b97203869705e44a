// The nn family's CUDA registration: one line per op file (<op>_cuda.cpp; see nn.h).
#include <vector>

#include "backends/cuda/cuda_ops.h"

namespace graft::cuda {

void append_cuda_batch_norm_ops(std::vector<CudaOp>& out);      // batch_norm_cuda.cpp
void append_cuda_conv_ops(std::vector<CudaOp>& out);            // conv_cuda.cpp
void append_cuda_conv_transpose_ops(std::vector<CudaOp>& out);  // conv_transpose_cuda.cpp
void append_cuda_matmul_ops(std::vector<CudaOp>& out);          // matmul_cuda.cpp
void append_cuda_pool_ops(std::vector<CudaOp>& out);            // pool_cuda.cpp

void append_cuda_nn_ops(std::vector<CudaOp>& out) {
  append_cuda_batch_norm_ops(out);
  append_cuda_conv_ops(out);
  append_cuda_conv_transpose_ops(out);
  append_cuda_matmul_ops(out);
  append_cuda_pool_ops(out);
}

}  // namespace graft::cuda
