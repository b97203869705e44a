// CUDA kernels of the transformer fusions' internal ops.
#include "backends/cuda/cuda_ops.h"

namespace graft::cuda {

void append_cuda_fused_transformer_ops(std::vector<CudaOp>& out) { (void)out; }

}  // namespace graft::cuda
