// DynamicQuantizeLinear's CUDA kernels and CUDA op (definition and CPU reference:
// dynamic_quantize_linear.cpp): min/max in per-block partials, then the scale and zero point, then
// y through quantize_cuda.cuh's quantize_one, bit-exact with the CPU reference.
#include "ops/quantize/quantize.h"

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/quantize/quantize_cuda.cuh"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------

namespace k {

// DynamicQuantizeLinear (float32 -> uint8): min/max over x (with 0, NaN skipped) in per-block
// partials, then scale/zero point, then y. `partials` is device scratch of
// dynamic_quantize_workspace_bytes().
size_t dynamic_quantize_workspace_bytes();
cudaError_t launch_dynamic_quantize_linear(const float* x, int64_t n, uint8_t* y, float* y_scale, uint8_t* y_zp,
                                           void* partials, cudaStream_t s);

namespace {

constexpr int kDqBlocks = 256;

// Min and max of x with 0 (the CPU starts its scan at 0); fminf/fmaxf skip NaN as std::fmin does,
// and min/max do not depend on the order, so the result is exactly the CPU's.
__global__ void dq_minmax_kernel(const float* x, int64_t n, float* partials) {
  __shared__ float sh[32];
  float lo = 0.0f, hi = 0.0f;
  GRAFT_GRID_STRIDE(i, n) {
    lo = fminf(lo, x[i]);
    hi = fmaxf(hi, x[i]);
  }
  lo = -block_max(-lo, sh);
  hi = block_max(hi, sh);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = lo;
    partials[kDqBlocks + blockIdx.x] = hi;
  }
}

__global__ void dq_params_kernel(const float* partials, int blocks, float* y_scale, uint8_t* y_zp) {
  __shared__ float sh[32];
  float lo = 0.0f, hi = 0.0f;
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) {
    lo = fminf(lo, partials[b]);
    hi = fmaxf(hi, partials[kDqBlocks + b]);
  }
  lo = -block_max(-lo, sh);
  hi = block_max(hi, sh);
  if (threadIdx.x == 0) {
    const float scale = __fdiv_rn(__fsub_rn(hi, lo), 255.0f);
    // Scale 0 (an all-zero input): zero point 0, as the CPU gives, rather than 0 / 0.
    const float zp = scale == 0.0f ? 0.0f : quantize_one(__fdiv_rn(__fsub_rn(0.0f, lo), scale), 0.0f, 0.0f, 255.0f);
    *y_scale = scale;
    *y_zp = static_cast<uint8_t>(zp);
  }
}

__global__ void dq_apply_kernel(const float* x, int64_t n, const float* y_scale, const uint8_t* y_zp, uint8_t* y) {
  const float scale = *y_scale;
  const float zp = static_cast<float>(*y_zp);
  GRAFT_GRID_STRIDE(i, n) {
    y[i] = scale == 0.0f ? uint8_t{0}
                         : static_cast<uint8_t>(quantize_one(__fdiv_rn(x[i], scale), zp, 0.0f, 255.0f));
  }
}

}  // namespace

// ---- launchers ----------------------------------------------------------------------------------

size_t dynamic_quantize_workspace_bytes() { return 2 * kDqBlocks * sizeof(float); }

cudaError_t launch_dynamic_quantize_linear(const float* x, int64_t n, uint8_t* y, float* y_scale, uint8_t* y_zp,
                                           void* partials, cudaStream_t s) {
  if (!partials) return cudaErrorInvalidValue;
  float* part = static_cast<float*>(partials);
  unsigned blocks = grid_for(n);
  if (blocks > static_cast<unsigned>(kDqBlocks)) blocks = kDqBlocks;
  // Even an empty x gets its scale (0) and zero point (0) written.
  dq_minmax_kernel<<<blocks, kThreads, 0, s>>>(x, n, part);
  dq_params_kernel<<<1, kThreads, 0, s>>>(part, static_cast<int>(blocks), y_scale, y_zp);
  if (n > 0) dq_apply_kernel<<<grid_for(n), kThreads, 0, s>>>(x, n, y_scale, y_zp, y);
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA op --------------------------------------------------------------------------------

namespace {

using namespace util;

// The dtypes (x float32; y uint8, y_scale float32, y_zero_point uint8) are the row's keys.
bool dynamic_quantize_supports(const Node& n, std::string* why) {
  if (!input0_given(n, why)) return false;
  if (n.outputs.size() != 3 || !n.output(0) || !n.output(1) || !n.output(2))
    return reject(why, "needs its three outputs (y, y_scale, y_zero_point)");
  return true;
}

size_t dynamic_quantize_workspace(const Node&, const std::vector<const Tensor*>&, const std::vector<Tensor>&) {
  return k::dynamic_quantize_workspace_bytes();
}

Status dynamic_quantize_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  const auto& outs = ex.ctx->outputs;
  if (!x || x->dtype() != DataType::kFloat32) return fail(ex, StatusCode::kInvalidModel, "x must be float32");
  if (outs.size() < 3 || !outs[0] || !outs[1] || !outs[2])
    return fail(ex, StatusCode::kInternal, "needs its three outputs (y, y_scale, y_zero_point)");
  Tensor& y = *outs[0];
  Tensor& ys = *outs[1];
  Tensor& yz = *outs[2];
  if (y.numel() != x->numel() || y.dtype() != DataType::kUInt8 || ys.numel() != 1 || ys.dtype() != DataType::kFloat32 ||
      yz.numel() != 1 || yz.dtype() != DataType::kUInt8)
    return fail(ex, StatusCode::kInternal, "outputs must be uint8 [x's shape], float32 [] and uint8 []");
  if (!ex.workspace || ex.workspace_size < k::dynamic_quantize_workspace_bytes())
    return fail(ex, StatusCode::kInternal, "workspace too small");
  return launch_status(k::launch_dynamic_quantize_linear(static_cast<const float*>(x->data()), x->numel(),
                                                         static_cast<uint8_t*>(y.data()), static_cast<float*>(ys.data()),
                                                         static_cast<uint8_t*>(yz.data()), ex.workspace, stream_of(ex)),
                       ex);
}

}  // namespace

void append_cuda_dynamic_quantize_linear_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, {DataType::kFloat32}), output_dtypes(0, {DataType::kUInt8}),
                               output_dtypes(1, {DataType::kFloat32}), output_dtypes(2, {DataType::kUInt8})},
                              CudaOp{"DynamicQuantizeLinear", &dynamic_quantize_supports, &dynamic_quantize_run, {},
                                     &dynamic_quantize_workspace}));
}

}  // namespace graft::cuda
