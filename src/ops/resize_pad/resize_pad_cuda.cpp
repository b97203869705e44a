// The resize-and-pad family's CUDA registration: one line per op's .cu file.
#include <vector>

#include "backends/cuda/cuda_ops.h"

namespace graft::cuda {

void append_cuda_pad_ops(std::vector<CudaOp>& out);     // pad.cu
void append_cuda_resize_ops(std::vector<CudaOp>& out);  // resize.cu

void append_cuda_resize_pad_ops(std::vector<CudaOp>& out) {
  append_cuda_pad_ops(out);
  append_cuda_resize_ops(out);
}

}  // namespace graft::cuda
