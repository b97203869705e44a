// CenterCropPad's CUDA op: Pad's constant kernel with zero fill, each axis's offset from the CPU
// reference's own geometry (center_crop_pad_geometry, resize_pad.h); a negative offset crops. The
// `shape` input is read on the host (it sizes the output).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/resize_pad/pad_cuda.cuh"
#include "ops/resize_pad/resize_pad.h"

namespace graft::cuda {

namespace {

using namespace util;

bool center_crop_pad_supports(const Node& n, std::string* why) {
  if (!same_bytes_ok(n, why) || !rank_fits(n, 0, why)) return false;
  if (!has_input(n, 1)) return reject(why, "input 1 (shape) is missing");
  return true;
}

Status center_crop_pad_run(CudaExec& ex) {
  const ExecContext& ctx = *ex.ctx;
  const Tensor* X = ctx.inputs.empty() ? nullptr : ctx.inputs[0];
  const Tensor* S = ctx.inputs.size() > 1 ? ctx.inputs[1] : nullptr;
  if (!X || !S) return fail(ex, StatusCode::kInvalidModel, "inputs 'input_data' and 'shape' are required");
  if (!dtype_is_integer(S->dtype()))
    return fail(ex, StatusCode::kInvalidModel, "input 'shape' must be int32 or int64, got ", dtype_name(S->dtype()));
  std::vector<int64_t> out_dims, begin;
  GRAFT_RETURN_IF_ERROR(
      with_node(ex, graft::center_crop_pad_geometry(*ctx.attrs, X->dims(), S->to_int64_vector(), &out_dims, &begin)));
  Tensor& Y = *ctx.outputs[0];
  GRAFT_RETURN_IF_ERROR(check_same_dtype(ex, *X, Y));
  if (Y.dims() != out_dims)
    return fail(ex, StatusCode::kInternal, "output shape ", dims_str(Y.dims()), " differs from ", dims_str(out_dims));
  const int64_t r = X->rank();
  if (r > k::kMaxRank) return fail(ex, StatusCode::kUnsupported, "rank ", r, " exceeds ", k::kMaxRank);
  const auto is = contiguous_strides(X->dims());
  k::AxisMap p;
  p.rank = static_cast<int>(r);
  for (int64_t a = 0; a < r; ++a) {
    p.out_dims[a] = out_dims[a];
    p.in_dims[a] = X->dims()[a];
    p.in_strides[a] = is[a];
    p.begin[a] = begin[a];
  }
  if (Y.numel() == 0) return Status::ok();
  return launch_status(k::launch_pad_constant(X->data(), Y.data(), esize(*X), p, nullptr, Y.numel(), stream_of(ex)), ex);
}

}  // namespace

void append_cuda_center_crop_pad_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuEveryDtype)},
                              CudaOp{"CenterCropPad", &center_crop_pad_supports, &center_crop_pad_run, {1}, nullptr}));
}

}  // namespace graft::cuda
