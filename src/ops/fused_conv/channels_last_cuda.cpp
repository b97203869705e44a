// GraftChannelsLast's CUDA op (channels_last.cpp defines it): one copy kernel, padded channels-last
// or space to depth (the nn family's nn_kernels.cu).
#include "backends/cuda/cuda_ops.h"

#include <string>

#include "backends/cuda/cuda_op_util.h"
#include "ops/nn/nn_kernels.cuh"
#include "ops/layout.h"

namespace graft::cuda {

using namespace util;  // NOLINT(build/namespaces)

namespace {

// ---- GraftChannelsLast ----

Status graft_channels_last_run(CudaExec& ex) {
  const Tensor& X = *ex.ctx->inputs[0];
  Tensor& Y = *ex.ctx->outputs[0];
  if (X.rank() != 4 || Y.rank() != 4 || X.dims()[0] != Y.dims()[0] || X.dims()[1] > Y.dims()[3])
    return fail(ex, StatusCode::kInvalidModel, "X [N, C, H, W] and Y [N, H, W, channels >= C] do not match");
  const auto& d = X.dims();
  GRAFT_ASSIGN_OR_RETURN(ChannelsLastAttrs a, read_channels_last(*ex.ctx->attrs));
  if (a.block > 1)
    return launch_status(k::launch_space_to_depth(ktype(X.dtype()), ktype(Y.dtype()), X.data(), Y.data(), d[0], d[1],
                                                  d[2], d[3], a.block, a.pads[0], a.pads[1], Y.dims()[1], Y.dims()[2],
                                                  Y.dims()[3], stream_of(ex)),
                         ex, "space-to-depth copy");
  return launch_status(k::launch_channels_last_padded(ktype(X.dtype()), ktype(Y.dtype()), X.data(), Y.data(), d[0], d[1],
                                                      d[2] * d[3], Y.dims()[3], stream_of(ex)),
                       ex, "channels-last copy");
}

}  // namespace

void append_cuda_channels_last_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats)},
                              CudaOp{"GraftChannelsLast", &rank4_input0, &graft_channels_last_run, {}, nullptr}));
}

}  // namespace graft::cuda
