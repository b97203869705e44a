// CUDA BatchNormalization: inference on nn_kernels.cu's kernel, training mode (opset 14) on
// batch_norm_training.cu's; the nn family (nn.h).
#include <algorithm>
#include <string>
#include <vector>

#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/nn/nn_kernels.cuh"

namespace graft::cuda {
namespace {

using namespace util;

// The keys: X and scale (B, mean and var have scale's dtype) each a float type; float64 for the
// training kernel only, which computes in double as the CPU reference does.
bool bn_supports(const Node& n, std::string* why) {
  for (size_t i = 0; i < 5; ++i)
    if (!has_input(n, i)) return reject(why, "BatchNormalization needs 5 inputs");
  for (size_t i = 2; i < 5; ++i)
    if (in_dtype(n, i) != in_dtype(n, 1)) return reject(why, "scale, B, mean and var must share one dtype");
  auto tm = n.attrs.get_int("training_mode", 0);
  if (!tm || (tm.value() != 0 && tm.value() != 1)) return reject(why, "training_mode must be 0 or 1");
  if (tm.value() == 0 && n.outputs.size() > 1) return reject(why, "outputs past Y exist only in training mode");
  if (tm.value() == 0 && (in_dtype(n, 0) == DataType::kFloat64 || in_dtype(n, 1) == DataType::kFloat64))
    return reject(why, "inference in float64 is not handled (the inference kernel computes in float)");
  if (tm.value() == 1 && n.outputs.size() > 3) return reject(why, "training mode has at most 3 outputs");
  for (size_t o = 1; o < n.outputs.size(); ++o)
    if (n.output(o) && out_dtype(n, o) != in_dtype(n, 1))
      return reject(why, "the running statistics must have the parameters' dtype");
  return true;
}

Status bn_run(CudaExec& ex) {
  const auto& in = ex.ctx->inputs;
  const Tensor& X = *in[0];
  Tensor& Y = *ex.ctx->outputs[0];
  GRAFT_ASSIGN_OR_RETURN(float eps, attrs_of(ex).get_float("epsilon", 1e-5f));
  GRAFT_ASSIGN_OR_RETURN(int64_t training, attrs_of(ex).get_int("training_mode", 0));
  if (X.rank() < 2) return fail(ex, StatusCode::kInvalidModel, "X must have rank >= 2");
  const int64_t N = X.dims()[0], C = X.dims()[1], inner = X.numel() / std::max<int64_t>(N * C, 1);
  for (size_t i = 1; i < 5; ++i)
    if (in[i]->numel() != C) return fail(ex, StatusCode::kInvalidModel, "parameter ", static_cast<int64_t>(i), " must have C elements");
  if (training == 1) {
    GRAFT_ASSIGN_OR_RETURN(float momentum, attrs_of(ex).get_float("momentum", 0.9f));
    k::BatchNormTraining a;
    a.x = X.data();
    a.scale = in[1]->data();
    a.bias = in[2]->data();
    a.mean = in[3]->data();
    a.var = in[4]->data();
    a.y = Y.data();
    for (size_t o = 1; o < 3 && o < ex.ctx->outputs.size(); ++o) {  // running_mean, running_var where the node has them
      Tensor* t = ex.ctx->outputs[o];
      if (!t) continue;
      if (t->numel() != C) return fail(ex, StatusCode::kInternal, "output ", static_cast<int64_t>(o), " must have C elements");
      (o == 1 ? a.running_mean : a.running_var) = t->data();
    }
    a.n = N;
    a.c = C;
    a.inner = inner;
    a.eps = eps;  // the attributes as float, widened as the CPU reference widens them
    a.momentum = momentum;
    return launch_status(k::launch_batchnorm_training(ktype(X.dtype()), ktype(in[1]->dtype()), a, stream_of(ex)), ex);
  }
  return launch_status(k::launch_batchnorm(ktype(X.dtype()), ktype(in[1]->dtype()), X.data(), in[1]->data(), in[2]->data(),
                                           in[3]->data(), in[4]->data(), Y.data(), N, C, inner, eps, stream_of(ex)), ex);
}

}  // namespace

void append_cuda_batch_norm_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats64), input_dtypes(1, kGpuFloats64)},
                              CudaOp{"BatchNormalization", &bn_supports, &bn_run, {}, nullptr}));
}

}  // namespace graft::cuda
