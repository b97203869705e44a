// LpPool's and GlobalLpPool's CUDA kernel and ops (definition and CPU reference: lp_pool.cpp; the
// window from lp_norm.h's reader, so a bad node fails with the same words on both backends). Each thread sums the powers of one output's inputs in double, as the CPU
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

constexpr int kMaxPoolAxes = 6;  // spatial axes the pool kernel takes (inputs up to rank 8)

// LpPool/GlobalLpPool over planes of in[] into planes of out[] (lp_norm.h, LpPoolGeometry).
struct PoolArgs {
  int axes = 0;
  int64_t planes = 0, in_plane = 1, out_plane = 1, p = 2;
  int64_t in[kMaxPoolAxes] = {}, out[kMaxPoolAxes] = {}, kernel[kMaxPoolAxes] = {};
  int64_t stride[kMaxPoolAxes] = {}, pad[kMaxPoolAxes] = {}, dilation[kMaxPoolAxes] = {};
};


// One thread per output element: the taps of its window that fall inside the input, axis by axis
// (a tap in the padding adds nothing), walked as an odometer.
template <typename T>
__global__ void lp_pool_kernel(PoolArgs a, const T* x, T* y) {
  GRAFT_GRID_STRIDE(idx, a.planes * a.out_plane) {
    int64_t rem = idx % a.out_plane;
    int64_t start[kMaxPoolAxes], first[kMaxPoolAxes], last[kMaxPoolAxes], t[kMaxPoolAxes];
    bool empty = false;
    for (int ax = a.axes - 1; ax >= 0; --ax) {
      const int64_t o = rem % a.out[ax];
      rem /= a.out[ax];
      start[ax] = o * a.stride[ax] - a.pad[ax];
      lp_taps_inside(start[ax], a.dilation[ax], a.kernel[ax], a.in[ax], &first[ax], &last[ax]);
      empty = empty || first[ax] == last[ax];
      t[ax] = first[ax];
    }
    const T* xp = x + idx / a.out_plane * a.in_plane;
    double sum = 0.0;
    while (!empty) {
      int64_t off = 0;
      for (int ax = 0; ax < a.axes; ++ax) off = off * a.in[ax] + start[ax] + t[ax] * a.dilation[ax];
      sum += lp_abs_pow(load_double(xp, off), a.p);
      int ax = a.axes - 1;
      while (ax >= 0 && ++t[ax] == last[ax]) {
        t[ax] = first[ax];
        --ax;
      }
      if (ax < 0) break;
    }
    store_double(y, idx, lp_root(sum, a.p));
  }
}


cudaError_t launch_lp_pool(KType t, const PoolArgs& a, const void* x, void* y, cudaStream_t s) {
  const int64_t count = a.planes * a.out_plane;
  if (count == 0) return cudaSuccess;
  GRAFT_FLOAT64_DISPATCH(t, (lp_pool_kernel<T><<<grid_for(count), kThreads, 0, s>>>(a, static_cast<const T*>(x),
                                                                                   static_cast<T*>(y))));
  return cudaGetLastError();
}


}  // namespace
}  // namespace k

// ---- CUDA ops ----------------------------------------------------------------------------------

namespace {

using namespace util;

// The pools need the rank at build time (their inference does too) and at most kMaxPoolAxes
// spatial axes.
bool pool_supports(const Node& n, bool global, std::string* why) {
  if (!input0_given(n, why)) return false;
  const TensorDesc& x = n.input(0)->desc;
  if (!x.shape) return reject(why, "input X's rank is unknown");
  if (x.rank() < 3 || x.rank() - 2 > k::kMaxPoolAxes)
    return reject(why, "the CUDA kernel takes 1 to " + std::to_string(k::kMaxPoolAxes) +
                           " spatial axes, input X has rank " + std::to_string(x.rank()));
  Status st = global ? lp_order(n.attrs, false).status() : lp_pool_attrs(n.attrs, x.rank() - 2).status();
  if (!st.is_ok()) return reject(why, st.message());
  return true;
}
bool lp_pool_supports(const Node& n, std::string* why) { return pool_supports(n, false, why); }
bool global_lp_pool_supports(const Node& n, std::string* why) { return pool_supports(n, true, why); }

Status pool_run(CudaExec& ex, bool global) {
  const Tensor* x = input_or_null(ex, 0);
  if (!x) return fail(ex, StatusCode::kInvalidModel, "input X is missing");
  Tensor& y = *ex.ctx->outputs[0];
  if (y.dtype() != x->dtype()) return fail(ex, StatusCode::kInternal, "output was allocated with another dtype");
  auto g = lp_pool_geometry(attrs_of(ex), x->dims(), y.dims(), global);
  if (!g) return with_node(ex, g.status());
  if (g->in.size() > static_cast<size_t>(k::kMaxPoolAxes))
    return fail(ex, StatusCode::kUnsupported, "more spatial axes than the kernel takes");
  k::PoolArgs a;
  a.axes = static_cast<int>(g->in.size());
  a.planes = g->planes;
  a.p = g->p;
  for (size_t ax = 0; ax < g->in.size(); ++ax) {
    a.in[ax] = g->in[ax];
    a.out[ax] = g->out[ax];
    a.kernel[ax] = g->kernel[ax];
    a.stride[ax] = g->stride[ax];
    a.pad[ax] = g->pad[ax];
    a.dilation[ax] = g->dilation[ax];
    // Both planes hold at most the tensors' element counts, which fit.
    a.in_plane *= g->in[ax];
    a.out_plane *= g->out[ax];
  }
  return launch_status(k::launch_lp_pool(ktype(x->dtype()), a, x->data(), y.data(), stream_of(ex)), ex);
}
Status lp_pool_run(CudaExec& ex) { return pool_run(ex, false); }
Status global_lp_pool_run(CudaExec& ex) { return pool_run(ex, true); }

}  // namespace

void append_cuda_lp_pool_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats64)}, CudaOp{"LpPool", &lp_pool_supports, &lp_pool_run, {}}));
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats64)},
                              CudaOp{"GlobalLpPool", &global_lp_pool_supports, &global_lp_pool_run, {}}));
}

}  // namespace graft::cuda
