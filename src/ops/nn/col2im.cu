// Col2Im's CUDA kernel and op: one thread per image element gathers the column values that land on
// it (the CPU reference, col2im.cpp, scatters them; the sums agree up to the order of double
// additions), summed in double and rounded once. The geometry is the reference's own reader (nn.h);
// image_shape and block_shape are read on the host (they shape the output). Up to three image axes.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/nn/nn.h"

namespace graft::cuda {

// ---- kernel -----------------------------------------------------------------------------------------

namespace k {

constexpr int kCol2ImMaxAxes = 3;

struct Col2ImArgs {
  int axes = 0;
  int64_t image[kCol2ImMaxAxes] = {}, block[kCol2ImMaxAxes] = {}, blocks[kCol2ImMaxAxes] = {};
  int64_t dilation[kCol2ImMaxAxes] = {}, stride[kCol2ImMaxAxes] = {}, pad_begin[kCol2ImMaxAxes] = {};
  int64_t image_area = 1, kernel_size = 1, positions = 1;
  int64_t total = 0;  // N * C * image_area
};

namespace {

template <typename T>
__global__ void col2im_kernel(Col2ImArgs a, const T* __restrict__ x, T* __restrict__ y) {
  GRAFT_GRID_STRIDE(i, a.total) {
    const int64_t nc = i / a.image_area;
    int64_t rem = i % a.image_area;
    int64_t pos[kCol2ImMaxAxes];
    for (int d = a.axes - 1; d >= 0; --d) {
      pos[d] = rem % a.image[d];
      rem /= a.image[d];
    }
    double acc = 0.0;
    for (int64_t kf = 0; kf < a.kernel_size; ++kf) {
      // Kernel offset kk (row-major over block) and the sliding position l that puts it on pos.
      int64_t krem = kf, lf = 0, lscale = 1;
      bool hit = true;
      for (int d = a.axes - 1; d >= 0 && hit; --d) {
        const int64_t kk = krem % a.block[d];
        krem /= a.block[d];
        const int64_t t = pos[d] + a.pad_begin[d] - kk * a.dilation[d];
        if (t < 0 || t % a.stride[d] != 0 || t / a.stride[d] >= a.blocks[d]) {
          hit = false;
        } else {
          lf += (t / a.stride[d]) * lscale;
          lscale *= a.blocks[d];
        }
      }
      if (hit) acc += as_double(x[(nc * a.kernel_size + kf) * a.positions + lf]);
    }
    store_double(y, i, acc);
  }
}

}  // namespace

cudaError_t launch_col2im(KType t, const Col2ImArgs& a, const void* x, void* y, cudaStream_t s) {
  if (a.total == 0) return cudaSuccess;
  GRAFT_FLOAT64_DISPATCH(t, (col2im_kernel<T><<<grid_for(a.total), kThreads, 0, s>>>(a, static_cast<const T*>(x),
                                                                                     static_cast<T*>(y))));
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA op ----------------------------------------------------------------------------------------

namespace {

using namespace util;

bool col2im_supports(const Node& n, std::string* why) {
  for (size_t i = 0; i < 3; ++i)
    if (!has_input(n, i)) return reject(why, "needs input, image_shape and block_shape");
  const Value* image = n.input(1);
  if (image->desc.shape && image->desc.rank() == 1 && (*image->desc.shape)[0].is_const() &&
      (*image->desc.shape)[0].value() > k::kCol2ImMaxAxes)
    return reject(why, "more than " + std::to_string(k::kCol2ImMaxAxes) + " image axes");
  return true;
}

Status col2im_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  const Tensor& image_t = *ex.ctx->inputs[1];
  const Tensor& block_t = *ex.ctx->inputs[2];
  Tensor& y = *ex.ctx->outputs[0];
  if (image_t.device() != DeviceType::kCPU || block_t.device() != DeviceType::kCPU)
    return fail(ex, StatusCode::kInternal, "image_shape and block_shape must be host inputs");
  auto g = col2im_geometry(attrs_of(ex), x.dims(), image_t.to_int64_vector(), block_t.to_int64_vector());
  if (!g) return with_node(ex, g.status());
  const size_t axes = g->image.size();
  if (axes > static_cast<size_t>(k::kCol2ImMaxAxes))
    return fail(ex, StatusCode::kUnsupported, "more than ", k::kCol2ImMaxAxes, " image axes");
  std::vector<int64_t> want{g->batch, g->channels};
  want.insert(want.end(), g->image.begin(), g->image.end());
  if (y.dims() != want || y.dtype() != x.dtype())
    return fail(ex, StatusCode::kInternal, "output ", dims_str(y.dims()), " differs from ", dims_str(want));
  k::Col2ImArgs a;
  a.axes = static_cast<int>(axes);
  for (size_t d = 0; d < axes; ++d) {
    a.image[d] = g->image[d];
    a.block[d] = g->block[d];
    a.blocks[d] = g->blocks[d];
    a.dilation[d] = g->dilations[d];
    a.stride[d] = g->strides[d];
    a.pad_begin[d] = g->pads_begin[d];
    a.image_area *= g->image[d];
    a.positions *= g->blocks[d];
  }
  a.kernel_size = g->kernel_size;
  a.total = y.numel();
  return launch_status(k::launch_col2im(ktype(x.dtype()), a, x.data(), y.data(), stream_of(ex)), ex);
}

}  // namespace

void append_cuda_col2im_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats64)},
                              CudaOp{"Col2Im", &col2im_supports, &col2im_run, {1, 2}, nullptr}));
}

}  // namespace graft::cuda
