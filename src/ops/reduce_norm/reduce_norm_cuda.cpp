// The reduce-and-normalize family's CUDA registration: one line per op's .cu file.
#include <vector>

#include "backends/cuda/cuda_ops.h"

namespace graft::cuda {

void append_cuda_reduce_ops(std::vector<CudaOp>& out);        // reduce.cu
void append_cuda_softmax_ops(std::vector<CudaOp>& out);       // softmax.cu
void append_cuda_layer_norm_ops(std::vector<CudaOp>& out);    // layer_norm.cu
void append_cuda_cumsum_ops(std::vector<CudaOp>& out);        // cumsum.cu
void append_cuda_l2_normalize_ops(std::vector<CudaOp>& out);  // l2_normalize.cu

void append_cuda_reduce_norm_ops(std::vector<CudaOp>& out) {
  append_cuda_l2_normalize_ops(out);
  append_cuda_cumsum_ops(out);
  append_cuda_softmax_ops(out);
  append_cuda_layer_norm_ops(out);
  append_cuda_reduce_ops(out);
}

}  // namespace graft::cuda
