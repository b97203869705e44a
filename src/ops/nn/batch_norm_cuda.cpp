// CUDA BatchNormalization (inference) on nn_kernels.cu's kernel; the nn family (nn.h).
#include <algorithm>
#include <string>
#include <vector>

#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/nn/nn_kernels.cuh"

namespace graft::cuda {
namespace {

using namespace util;

// The keys: X and scale (B, mean and var have scale's dtype) each a float type.
bool bn_supports(const Node& n, std::string* why) {
  for (size_t i = 0; i < 5; ++i)
    if (!has_input(n, i)) return reject(why, "BatchNormalization needs 5 inputs");
  for (size_t i = 2; i < 5; ++i)
    if (in_dtype(n, i) != in_dtype(n, 1)) return reject(why, "scale, B, mean and var must share one dtype");
  auto tm = n.attrs.get_int("training_mode", 0);
  if (!tm || tm.value() != 0) return reject(why, "training_mode is not handled (inference only)");
  if (n.outputs.size() > 1) return reject(why, "training outputs (running mean/var) are not handled");
  return true;
}

Status bn_run(CudaExec& ex) {
  const auto& in = ex.ctx->inputs;
  const Tensor& X = *in[0];
  Tensor& Y = *ex.ctx->outputs[0];
  GRAFT_ASSIGN_OR_RETURN(float eps, attrs_of(ex).get_float("epsilon", 1e-5f));
  if (X.rank() < 2) return fail(ex, StatusCode::kInvalidModel, "X must have rank >= 2");
  const int64_t N = X.dims()[0], C = X.dims()[1], inner = X.numel() / std::max<int64_t>(N * C, 1);
  for (size_t i = 1; i < 5; ++i)
    if (in[i]->numel() != C) return fail(ex, StatusCode::kInvalidModel, "parameter ", static_cast<int64_t>(i), " must have C elements");
  return launch_status(k::launch_batchnorm(ktype(X.dtype()), ktype(in[1]->dtype()), X.data(), in[1]->data(), in[2]->data(),
                                           in[3]->data(), in[4]->data(), Y.data(), N, C, inner, eps, stream_of(ex)), ex);
}

}  // namespace

void append_cuda_batch_norm_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats), input_dtypes(1, kGpuFloats)},
                              CudaOp{"BatchNormalization", &bn_supports, &bn_run, {}, nullptr}));
}

}  // namespace graft::cuda
