// CUDA Conv through graft's one cuDNN convolution (GraftConv's, src/ops/fused_conv/graft_conv_cuda.cpp)
// where that takes the node, else a direct kernel (1-D, 3-D, asymmetric pads, no cuDNN) of
// nn_kernels.cu; the nn family (nn.h).
#include <algorithm>
#include <string>
#include <vector>

#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/nn/nn_kernels.cuh"
#include "ops/nn/window_plan_cuda.h"
#include "ops/window_attrs.h"

namespace graft::cuda {
namespace {

using namespace util;

bool conv_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "Conv needs X and W");
  if (!inputs_share_dtype(n, {1, 2}, why)) return false;  // W and B have X's dtype (its key)
  const Value* x = n.input(0);
  if (x->desc.rank() < 3 || x->desc.rank() > 5)
    return reject(why, "only 1-D, 2-D and 3-D convolutions are handled (rank 3 to 5)");
  return true;
}

// What cudnn_conv_run needs where it takes the problem; the direct kernel needs no scratch.
size_t conv_workspace(const Node& n, const std::vector<const Tensor*>& ins, const std::vector<Tensor>& outs) {
  return n.input(0)->desc.rank() == 4 && cudnn_conv_supports(n, nullptr) ? cudnn_conv_workspace(n, ins, outs) : 0;
}

Status conv_run(CudaExec& ex) {
  const Tensor& X = *ex.ctx->inputs[0];
  const Tensor& W = *ex.ctx->inputs[1];
  const Tensor* B = ex.ctx->inputs.size() > 2 ? ex.ctx->inputs[2] : nullptr;
  Tensor& Y = *ex.ctx->outputs[0];
  if (X.rank() != W.rank() || X.rank() != Y.rank()) return fail(ex, StatusCode::kInvalidModel, "X, W and Y ranks differ");
  std::vector<int64_t> wk(W.dims().begin() + 2, W.dims().end());
  if (X.rank() == 5) {  // 3-D: the direct kernel (cuDNN's N-d convolution is not wired in)
    k::Window3d g;
    GRAFT_RETURN_IF_ERROR(plan_window3d(ex, X.dims(), Y.dims(), &wk, false, &g));
    GRAFT_ASSIGN_OR_RETURN(int64_t group, attrs_of(ex).get_int("group", 1));
    const int64_t M = W.dims()[0];
    if (group < 1 || M % group != 0 || W.dims()[1] * group != X.dims()[1] || Y.dims()[1] != M)
      return fail(ex, StatusCode::kInvalidModel, "channels of X, W and group disagree");
    if (B && B->numel() != M) return fail(ex, StatusCode::kInvalidModel, "bias has the wrong length");
    return launch_status(k::launch_conv3d_direct(ktype(X.dtype()), X.data(), W.data(), B ? B->data() : nullptr, Y.data(),
                                                 g, M, group, stream_of(ex)),
                         ex);
  }
  WindowPlan p;
  GRAFT_RETURN_IF_ERROR(plan_window(ex, X.dims(), Y.dims(), &wk, false, &p));
  GRAFT_ASSIGN_OR_RETURN(p.group, attrs_of(ex).get_int("group", 1));
  p.M = W.dims()[0];
  if (p.group < 1 || p.M % p.group != 0 || W.dims()[1] * p.group != X.dims()[1] || Y.dims()[1] != p.M)
    return fail(ex, StatusCode::kInvalidModel, "channels of X, W and group disagree");
  if (B && B->numel() != p.M) return fail(ex, StatusCode::kInvalidModel, "bias has the wrong length");
  if (Y.numel() == 0) return Status::ok();
  // The backend's one cuDNN convolution (GraftConv's) takes every problem it can; where cuDNN offers
  // no algorithm (kUnsupported, nothing launched), the direct kernel runs it, as before.
  if (ex.cudnn && X.rank() == 4 && cudnn_conv_supports(*ex.ctx->node, nullptr)) {
    Status st = cudnn_conv_run(ex);
    if (st.code() != StatusCode::kUnsupported) return st;
  }
  return launch_status(k::launch_conv2d_direct(ktype(X.dtype()), X.data(), W.data(), B ? B->data() : nullptr, Y.data(), p.g, p.M,
                                               p.group, stream_of(ex)), ex);
}

}  // namespace

void append_cuda_conv_ops(std::vector<CudaOp>& out) {
  out.push_back(
      kernel_dtypes({input_dtypes(0, kGpuFloats)}, CudaOp{"Conv", &conv_supports, &conv_run, {}, &conv_workspace}));
}

}  // namespace graft::cuda
