#include "backends/cuda/cuda_ops.h"

namespace graft::cuda {

void append_cuda_reduce_norm_ops(std::vector<CudaOp>& out) {}

}  // namespace graft::cuda
