// MaxRoiPool's CUDA kernel and CUDA op (definition and CPU reference: roi_pool.cpp). The bins come
// from roi_pool.h's roi_window and roi_bin, the functions the CPU reference calls, so the two pool
// the same pixels; the maximum itself is exact.
#include "ops/roi_pool/roi_pool.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"

namespace graft::cuda {

// ---- kernel ------------------------------------------------------------------------------------

namespace k {
namespace {

struct RoiPoolArgs {
  int64_t n = 0, c = 0, h = 0, w = 0, rois = 0, pooled_h = 1, pooled_w = 1;
  float scale = 1.0f;
};

// One thread per output element. A RoI whose batch index is not an image of X gets NaN (the CPU
// reference fails the run instead).
template <typename T>
__global__ void max_roi_pool_kernel(RoiPoolArgs a, const T* x, const T* rois, T* y) {
  GRAFT_GRID_STRIDE(o, a.rois * a.c * a.pooled_h * a.pooled_w) {
    const int64_t j = o % a.pooled_w, i = o / a.pooled_w % a.pooled_h, ch = o / (a.pooled_w * a.pooled_h) % a.c;
    const int64_t k = o / (a.pooled_w * a.pooled_h * a.c);
    const T* row = rois + k * 5;
    const double batch = load_double(row, 0);
    double best = 0.0;  // an empty bin
    if (!roi_batch_valid(batch, a.n)) {
      best = NAN;
    } else {
      const RoiWindow win =
          roi_window(static_cast<float>(load_double(row, 1)), static_cast<float>(load_double(row, 2)),
                     static_cast<float>(load_double(row, 3)), static_cast<float>(load_double(row, 4)), a.scale,
                     a.pooled_h, a.pooled_w);
      int64_t h0, h1, w0, w1;
      roi_bin(i, win.bin_h, win.start_h, a.h, &h0, &h1);
      roi_bin(j, win.bin_w, win.start_w, a.w, &w0, &w1);
      if (h1 > h0 && w1 > w0) {
        best = -INFINITY;
        const T* plane = x + (static_cast<int64_t>(batch) * a.c + ch) * a.h * a.w;
        for (int64_t yy = h0; yy < h1; ++yy)
          for (int64_t xx = w0; xx < w1; ++xx) best = fmax(best, load_double(plane, yy * a.w + xx));
      }
    }
    store_double(y, o, best);
  }
}

// x, rois and y of float type t (f32, f16, bf16, f64); cudaErrorInvalidValue for another.
cudaError_t launch_max_roi_pool(KType t, const RoiPoolArgs& a, const void* x, const void* rois, void* y,
                                cudaStream_t s) {
  const int64_t count = a.rois * a.c * a.pooled_h * a.pooled_w;
  if (count == 0) return cudaSuccess;
  GRAFT_FLOAT64_DISPATCH(t, (max_roi_pool_kernel<T><<<grid_for(count), kThreads, 0, s>>>(
                                a, static_cast<const T*>(x), static_cast<const T*>(rois), static_cast<T*>(y))));
  return cudaGetLastError();
}

}  // namespace
}  // namespace k

// ---- CUDA op -----------------------------------------------------------------------------------

namespace {

using namespace util;

// The key: X float32/float16/bfloat16/float64; rois have X's dtype.
bool max_roi_pool_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "needs X and rois");
  if (in_dtype(n, 1) != in_dtype(n, 0)) return reject(why, "rois and X have different dtypes");
  auto a = roi_pool_attrs(n.attrs);
  if (!a) return reject(why, a.status().message());
  return true;
}

Status max_roi_pool_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  const Tensor* rois = input_or_null(ex, 1);
  if (!x || !rois) return fail(ex, StatusCode::kInvalidModel, "needs X and rois");
  auto attrs = roi_pool_attrs(attrs_of(ex));
  if (!attrs) return with_node(ex, attrs.status());
  if (x->rank() != 4 || rois->rank() != 2 || rois->dims()[1] != 5 || rois->dtype() != x->dtype())
    return fail(ex, StatusCode::kInvalidModel, "X must be [N, C, H, W] and rois [num_rois, 5] of X's dtype");
  k::RoiPoolArgs a;
  a.n = x->dims()[0];
  a.c = x->dims()[1];
  a.h = x->dims()[2];
  a.w = x->dims()[3];
  a.rois = rois->dims()[0];
  a.pooled_h = attrs->pooled_h;
  a.pooled_w = attrs->pooled_w;
  a.scale = attrs->spatial_scale;
  Tensor& y = *ex.ctx->outputs[0];
  if (y.dtype() != x->dtype() || y.numel() != a.rois * a.c * a.pooled_h * a.pooled_w)
    return fail(ex, StatusCode::kInternal, "output was allocated with other dims or dtype than the op computes");
  return launch_status(k::launch_max_roi_pool(ktype(x->dtype()), a, x->data(), rois->data(), y.data(), stream_of(ex)),
                       ex);
}

}  // namespace

void append_cuda_roi_pool_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats64)},
                              CudaOp{"MaxRoiPool", &max_roi_pool_supports, &max_roi_pool_run, {}}));
}

}  // namespace graft::cuda
