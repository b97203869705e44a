// AffineGrid's CUDA kernel and op: one thread per grid point, its base coordinates from the CPU
// reference's own formula (affine_grid_coordinate, sampling.h) and theta's row times them summed in
// double, rounded once, as the reference does (affine_grid.cpp). `size` is read on the host (it
// shapes the output).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/sampling/sampling.h"

namespace graft::cuda {

// ---- kernel -----------------------------------------------------------------------------------------

namespace k {

struct AffineGridArgs {
  int spatial = 2;               // 2 or 3
  int64_t extents[3] = {1, 1, 1};  // (H, W) or (D, H, W), outermost first
  int64_t per_image = 0;         // points per image
  int64_t points = 0;            // every image's
  bool align_corners = false;
};

namespace {

template <typename T>
__global__ void affine_grid_kernel(AffineGridArgs a, const T* __restrict__ theta, T* __restrict__ grid) {
  GRAFT_GRID_STRIDE(i, a.points) {
    const int k = a.spatial;
    const int64_t n = i / a.per_image;
    int64_t rem = i % a.per_image;
    double base[4] = {1.0, 1.0, 1.0, 1.0};  // (x, y[, z], 1): x along the last axis
    for (int ax = k - 1; ax >= 0; --ax) {  // innermost axis first: x, then y, then z
      const int64_t e = a.extents[ax];
      base[k - 1 - ax] = affine_grid_coordinate(rem % e, e, a.align_corners);
      rem /= e;
    }
    base[k] = 1.0;
    const T* t = theta + n * k * (k + 1);
    for (int r = 0; r < k; ++r) {
      double acc = 0.0;
      for (int c = 0; c <= k; ++c) acc += as_double(t[r * (k + 1) + c]) * base[c];
      store_double(grid, i * k + r, acc);
    }
  }
}

}  // namespace

cudaError_t launch_affine_grid(KType t, const AffineGridArgs& a, const void* theta, void* grid, cudaStream_t s) {
  if (a.points == 0) return cudaSuccess;
  GRAFT_FLOAT64_DISPATCH(t, (affine_grid_kernel<T><<<grid_for(a.points), kThreads, 0, s>>>(
                                a, static_cast<const T*>(theta), static_cast<T*>(grid))));
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA op ----------------------------------------------------------------------------------------

namespace {

using namespace util;

// The key: theta float32/float16/bfloat16/float64 (size, a host input, is checked per run).
bool affine_grid_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "needs theta and size");
  auto align = affine_grid_align_corners(n.attrs);
  if (!align) return reject(why, align.status().message());
  return true;
}

Status affine_grid_run(CudaExec& ex) {
  const Tensor& theta = *ex.ctx->inputs[0];
  const Tensor& size_t_ = *ex.ctx->inputs[1];
  Tensor& y = *ex.ctx->outputs[0];
  if (size_t_.device() != DeviceType::kCPU) return fail(ex, StatusCode::kInternal, "size must be a host input");
  if (size_t_.dtype() != DataType::kInt64)
    return fail(ex, StatusCode::kInvalidModel, "input 'size' must be int64, got ", dtype_name(size_t_.dtype()));
  auto align = affine_grid_align_corners(attrs_of(ex));
  if (!align) return with_node(ex, align.status());
  auto g = affine_grid_geometry(theta.dims(), size_t_.to_int64_vector());
  if (!g) return with_node(ex, g.status());
  if (y.numel() != g->points * g->spatial || y.dtype() != theta.dtype())
    return fail(ex, StatusCode::kInternal, "output ", dims_str(y.dims()), " does not match size ",
                dims_str(size_t_.to_int64_vector()));
  k::AffineGridArgs a;
  a.spatial = g->spatial;
  for (int ax = 0; ax < g->spatial; ++ax) a.extents[ax] = g->extents[static_cast<size_t>(ax)];
  a.per_image = g->batch ? g->points / g->batch : 0;
  a.points = g->points;
  a.align_corners = *align;
  return launch_status(k::launch_affine_grid(ktype(theta.dtype()), a, theta.data(), y.data(), stream_of(ex)), ex);
}

}  // namespace

void append_cuda_affine_grid_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats64)},
                              CudaOp{"AffineGrid", &affine_grid_supports, &affine_grid_run, {1}, nullptr}));
}

}  // namespace graft::cuda
