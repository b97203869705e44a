// LpNormalization's CUDA kernel and op (definition and CPU reference: lp_normalization.cpp; the
// geometry from lp_norm.h's reader, so a bad node fails with the same words on both backends). Each thread sums the powers of one output's inputs in double, as the CPU
// reference does, and rounds once into the output dtype: these ops are rare in models, and the
// kernels are written to agree with the reference, not to be fast.
#include "ops/lp_norm/lp_norm.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"

namespace graft::cuda {

// ---- kernels -----------------------------------------------------------------------------------

namespace k {
namespace {

// One thread per (outer, inner) column: its norm along the axis, then every element over it.
template <typename T>
__global__ void lp_normalization_kernel(const T* x, T* y, int64_t outer, int64_t len, int64_t inner, int64_t p) {
  GRAFT_GRID_STRIDE(c, outer * inner) {
    const int64_t base = c / inner * len * inner + c % inner;
    double sum = 0.0;
    for (int64_t l = 0; l < len; ++l) sum += lp_abs_pow(load_double(x, base + l * inner), p);
    const double norm = lp_root(sum, p);
    for (int64_t l = 0; l < len; ++l) store_double(y, base + l * inner, load_double(x, base + l * inner) / norm);
  }
}

// x and y of float type t (f32, f16, bf16, f64); cudaErrorInvalidValue for another.
cudaError_t launch_lp_normalization(KType t, const void* x, void* y, int64_t outer, int64_t len, int64_t inner,
                                    int64_t p, cudaStream_t s) {
  const int64_t columns = outer * inner;
  if (columns == 0) return cudaSuccess;
  GRAFT_FLOAT64_DISPATCH(t, (lp_normalization_kernel<T><<<grid_for(columns), kThreads, 0, s>>>(
                                static_cast<const T*>(x), static_cast<T*>(y), outer, len, inner, p)));
  return cudaGetLastError();
}

}  // namespace
}  // namespace k

// ---- CUDA ops ----------------------------------------------------------------------------------

namespace {

using namespace util;

bool lp_normalization_supports(const Node& n, std::string* why) {
  if (!input0_given(n, why)) return false;
  auto p = lp_order(n.attrs, true);
  if (!p) return reject(why, p.status().message());
  return true;
}

Status lp_normalization_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  if (!x) return fail(ex, StatusCode::kInvalidModel, "input 0 is missing");
  auto g = lp_norm_geometry(attrs_of(ex), x->dims());
  if (!g) return with_node(ex, g.status());
  Tensor& y = *ex.ctx->outputs[0];
  if (y.dtype() != x->dtype() || y.numel() != x->numel())
    return fail(ex, StatusCode::kInternal, "output was allocated with other dims or dtype than the input");
  return launch_status(k::launch_lp_normalization(ktype(x->dtype()), x->data(), y.data(), g->outer, g->len, g->inner,
                                                  g->p, stream_of(ex)),
                       ex);
}

}  // namespace

void append_cuda_lp_normalization_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats64)},
                              CudaOp{"LpNormalization", &lp_normalization_supports, &lp_normalization_run, {}}));
}

}  // namespace graft::cuda
