#include "backends/cuda/cuda_ops.h"

#include <algorithm>

namespace graft::cuda {

const std::vector<CudaOp>& cuda_ops() {
  static const std::vector<CudaOp> table = [] {
    std::vector<CudaOp> t;
    append_cuda_elementwise_ops(t);
    append_cuda_reduce_norm_ops(t);
    append_cuda_shape_ops(t);
    append_cuda_nn_ops(t);
    append_cuda_conv_ops(t);
    append_cuda_conv_transpose_ops(t);
    append_cuda_fused_transformer_ops(t);
    append_cuda_extra_ops(t);
    append_cuda_sampling_ops(t);
    append_cuda_misc_ops(t);
    append_cuda_spectral_ops(t);
    append_cuda_selection_ops(t);
    append_cuda_data_dependent_ops(t);
    append_cuda_random_ops(t);
    append_cuda_loss_ops(t);
    append_cuda_recurrent_ops(t);
    append_cuda_integer_ops(t);
    append_cuda_tfidf_ops(t);
    return t;
  }();
  return table;
}

const CudaOp* find_cuda_op(const std::string& op_type) {
  for (const auto& op : cuda_ops())
    if (op_type == op.op_type) return &op;
  return nullptr;
}

}  // namespace graft::cuda
