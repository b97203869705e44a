// CUDA RoiAlign and GridSample (kernels: sampling_kernels.cu). Attributes are read by the CPU
// reference's own parsers (src/backends/cpu/sampling.h), so both backends interpret a node alike.
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/sampling_kernels.cuh"
#include "ops/sampling_attrs.h"

namespace graft::cuda {
namespace {

using namespace util;

// float32 only: in float16 a roi corner beyond 1024 pixels loses its fraction and beyond 2048 whole
// pixels, so the fp16 pass keeps RoiAlign in float32 (it asks supports() with float16 inputs).
bool roi_align_supports(const Node& n, std::string* why) {
  if (!require_dtype(n, 0, {DataType::kFloat32}, why)) return false;
  if (in_dtype(n, 1) != in_dtype(n, 0)) return reject(why, "rois must have X's dtype");
  if (!require_dtype(n, 2, {DataType::kInt64, DataType::kInt32}, why)) return false;
  auto p = graft::parse_roi_align_attrs(n.attrs, n.opset);
  if (!p) return reject(why, p.status().message());
  return true;
}

Status roi_align_run(CudaExec& ex) {
  const ExecContext& ctx = *ex.ctx;
  const Tensor &x = *ctx.inputs[0], &rois = *ctx.inputs[1], &bi = *ctx.inputs[2];
  Tensor& y = *ctx.outputs[0];
  auto p = graft::parse_roi_align_attrs(*ctx.attrs, ctx.opset);
  if (!p) return fail(ex, StatusCode::kInvalidModel, p.status().message());
  if (x.rank() != 4 || rois.rank() != 2 || rois.dims()[1] != 4 || bi.rank() != 1 || bi.dims()[0] != rois.dims()[0])
    return fail(ex, StatusCode::kInvalidArgument, "X must be (N, C, H, W), rois (K, 4) and batch_indices (K)");
  k::RoiAlignArgs a;
  a.n = x.dims()[0], a.c = x.dims()[1], a.h = x.dims()[2], a.w = x.dims()[3], a.k = rois.dims()[0];
  a.oh = p->output_height, a.ow = p->output_width, a.sampling_ratio = p->sampling_ratio;
  a.spatial_scale = static_cast<float>(p->spatial_scale);
  a.half_pixel = p->half_pixel;
  a.max_mode = p->pool == graft::RoiAlignParams::Pool::kMax;
  a.max_of_weighted_corners = p->max_of_weighted_corners;
  if (y.dims() != std::vector<int64_t>{a.k, a.c, a.oh, a.ow})
    return fail(ex, StatusCode::kInternal, "output shape differs from (K, C, output_height, output_width)");
  return launch_status(k::launch_roi_align(ktype(x.dtype()), x.data(), rois.data(), bi.data(),
                                           bi.dtype() == DataType::kInt64, y.data(), a, stream_of(ex)),
                       ex);
}

bool grid_sample_supports(const Node& n, std::string* why) {
  if (!require_dtype(n, 0, {DataType::kFloat32, DataType::kFloat16}, why)) return false;
  if (in_dtype(n, 1) != in_dtype(n, 0)) return reject(why, "grid must have X's dtype");
  auto p = graft::parse_grid_sample_attrs(n.attrs, n.opset);
  if (!p) return reject(why, p.status().message());
  return true;
}

Status grid_sample_run(CudaExec& ex) {
  const ExecContext& ctx = *ex.ctx;
  const Tensor &x = *ctx.inputs[0], &grid = *ctx.inputs[1];
  Tensor& y = *ctx.outputs[0];
  auto p = graft::parse_grid_sample_attrs(*ctx.attrs, ctx.opset);
  if (!p) return fail(ex, StatusCode::kInvalidModel, p.status().message());
  const int64_t r = x.rank();
  if ((r != 4 && r != 5) || grid.rank() != r || grid.dims()[0] != x.dims()[0] || grid.dims()[r - 1] != r - 2)
    return fail(ex, StatusCode::kInvalidArgument, "X must be (N, C, spatial...) and grid (N, out..., ", r - 2, ")");
  k::GridSampleArgs a;
  a.nd = static_cast<int>(r - 2);
  a.n = x.dims()[0], a.c = x.dims()[1];
  for (int d = 0; d < a.nd; ++d) {
    a.in[d] = x.dims()[2 + d];
    a.out[d] = grid.dims()[1 + d];
  }
  a.mode = p->mode == graft::GridSampleParams::Mode::kLinear ? 0 : p->mode == graft::GridSampleParams::Mode::kNearest ? 1 : 2;
  a.padding = p->padding == graft::GridSampleParams::Padding::kZeros    ? 0
              : p->padding == graft::GridSampleParams::Padding::kBorder ? 1
                                                                       : 2;
  a.align_corners = p->align_corners;
  a.torch_order = p->torch_order;
  return launch_status(k::launch_grid_sample(ktype(x.dtype()), x.data(), grid.data(), y.data(), a, stream_of(ex)),
                       ex);
}

}  // namespace

void append_cuda_sampling_ops(std::vector<CudaOp>& out) {
  out.push_back(CudaOp{"RoiAlign", &roi_align_supports, &roi_align_run, {}, nullptr});
  out.push_back(CudaOp{"GridSample", &grid_sample_supports, &grid_sample_run, {}, nullptr});
}

}  // namespace graft::cuda
