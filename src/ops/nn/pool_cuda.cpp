// CUDA pools: MaxPool and AveragePool over 1 to 3 spatial axes (MaxPool's Indices for any rank),
// GlobalAveragePool and GlobalMaxPool, on the kernels of nn_kernels.cu; the nn family (nn.h).
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

bool is_8bit(DataType t) { return t == DataType::kInt8 || t == DataType::kUInt8; }

// X given, of 3 to 5 axes (the keys: X a float type, MaxPool's also int8 and uint8; MaxPool's
// Indices output int64, of a float X only).
bool pool_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input X is missing");
  const int64_t r = n.input(0)->desc.rank();
  if (r < 3 || r > 5) return reject(why, "only 1-D, 2-D and 3-D pools are handled (rank 3 to 5)");
  if (is_8bit(in_dtype(n, 0)) && n.outputs.size() > 1 && n.output(1))
    return reject(why, "the Indices output of an int8 or uint8 MaxPool is not handled");
  return true;
}

template <k::PoolKind kKind>
Status pool_run(CudaExec& ex) {
  const Tensor& X = *ex.ctx->inputs[0];
  Tensor& Y = *ex.ctx->outputs[0];
  if (X.rank() != Y.rank() || X.rank() < 3) return fail(ex, StatusCode::kInvalidModel, "X and Y ranks differ");
  k::PoolKind kind = kKind;
  if (kKind == k::PoolKind::kAverage) {
    GRAFT_ASSIGN_OR_RETURN(int64_t include_pad, attrs_of(ex).get_int("count_include_pad", 0));
    if (include_pad) kind = k::PoolKind::kAverageIncludePad;
  }
  Tensor* I = kKind == k::PoolKind::kMax && ex.ctx->outputs.size() > 1 ? ex.ctx->outputs[1] : nullptr;
  if (I) {  // the Indices output: one kernel for every rank, picking taps as the CPU reference does
    GRAFT_ASSIGN_OR_RETURN(int64_t storage_order, attrs_of(ex).get_int("storage_order", 0));
    if (storage_order != 0 && storage_order != 1)
      return with_node(ex, Status(error(StatusCode::kInvalidModel, "storage_order must be 0 (row major) or 1 (column "
                                                                   "major), got ", storage_order))
                               .with_attribute("storage_order"));
    if (I->dtype() != DataType::kInt64 || I->dims() != Y.dims())
      return fail(ex, StatusCode::kInternal, "the Indices output must be int64 shaped like Y");
    k::Window3d g;
    GRAFT_RETURN_IF_ERROR(plan_window3d(ex, X.dims(), Y.dims(), nullptr, true, &g));
    return launch_status(k::launch_max_pool_indices(ktype(X.dtype()), X.data(), Y.data(), I->data_as<int64_t>(), g,
                                                    storage_order == 1, stream_of(ex)),
                         ex);
  }
  if (X.rank() == 5 || is_8bit(X.dtype())) {  // 3-D, and 8-bit MaxPool of any rank: the window kernel
    k::Window3d g;
    GRAFT_RETURN_IF_ERROR(plan_window3d(ex, X.dims(), Y.dims(), nullptr, true, &g));
    return launch_status(k::launch_pool3d(ktype(X.dtype()), kind, X.data(), Y.data(), g, stream_of(ex)), ex);
  }
  WindowPlan p;
  GRAFT_RETURN_IF_ERROR(plan_window(ex, X.dims(), Y.dims(), nullptr, true, &p));
  return launch_status(k::launch_pool2d(ktype(X.dtype()), kind, X.data(), Y.data(), p.g, stream_of(ex)), ex);
}

bool global_pool_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input X is missing");
  if (n.input(0)->desc.rank() >= 0 && n.input(0)->desc.rank() < 3) return reject(why, "X must have rank >= 3");
  return true;
}

template <bool kMax>
Status global_pool_run(CudaExec& ex) {
  const Tensor& X = *ex.ctx->inputs[0];
  Tensor& Y = *ex.ctx->outputs[0];
  if (X.rank() < 3) return fail(ex, StatusCode::kInvalidModel, "X must have rank >= 3");
  const int64_t rows = X.dims()[0] * X.dims()[1], area = X.numel() / std::max<int64_t>(rows, 1);
  if (Y.numel() != rows) return fail(ex, StatusCode::kInternal, "output shape inconsistent with input");
  return launch_status(k::launch_global_pool(ktype(X.dtype()), kMax, X.data(), Y.data(), rows, area, stream_of(ex)), ex);
}

}  // namespace

void append_cuda_pool_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kInt8,
                                                DataType::kUInt8}),
                               output_dtypes(1, {DataType::kInt64})},
                              CudaOp{"MaxPool", &pool_supports, &pool_run<k::PoolKind::kMax>, {}, nullptr}));
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats)},
                              CudaOp{"AveragePool", &pool_supports, &pool_run<k::PoolKind::kAverage>, {}, nullptr}));
  out.push_back(
      kernel_dtypes({input_dtypes(0, kGpuFloats)},
                    CudaOp{"GlobalAveragePool", &global_pool_supports, &global_pool_run<false>, {}, nullptr}));
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats)},
                              CudaOp{"GlobalMaxPool", &global_pool_supports, &global_pool_run<true>, {}, nullptr}));
}

}  // namespace graft::cuda
