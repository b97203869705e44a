// MaxRoiPool, defined whole here: its attributes (roi_pool.h), its CPU reference kernel and its
// schema row with inference. The CUDA op is in roi_pool.cu.
#include "ops/roi_pool/roi_pool.h"

#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- attributes (roi_pool.h) -------------------------------------------------------------------

Result<RoiPoolAttrs> roi_pool_attrs(const AttributeMap& attrs) {
  RoiPoolAttrs a;
  if (!attrs.has("pooled_shape")) return attr_error("pooled_shape", "is required");
  auto shape = attrs.get_ints("pooled_shape", {});
  if (!shape) return Status(shape.status()).with_attribute("pooled_shape");
  if (shape.value().size() != 2 || shape.value()[0] < 1 || shape.value()[1] < 1)
    return attr_error("pooled_shape", "must be two extents >= 1 (height, width), got ", ints_to_string(shape.value()));
  // Each output plane is pooled_h x pooled_w: bounded like any other extent the output allocation
  // checks, but kept below 2^24 so the float32 bin arithmetic can still tell bins apart.
  constexpr int64_t kMaxPooled = int64_t{1} << 24;
  if (shape.value()[0] > kMaxPooled || shape.value()[1] > kMaxPooled)
    return attr_error("pooled_shape", "extents must be at most ", kMaxPooled, ", got ", ints_to_string(shape.value()));
  a.pooled_h = shape.value()[0];
  a.pooled_w = shape.value()[1];
  auto scale = attrs.get_float("spatial_scale", 1.0f);
  if (!scale) return Status(scale.status()).with_attribute("spatial_scale");
  if (!std::isfinite(scale.value())) return attr_error("spatial_scale", "must be finite, got ", scale.value());
  a.spatial_scale = scale.value();
  return a;
}

// ---- CPU reference -----------------------------------------------------------------------------

namespace cpu {
namespace {

Status max_roi_pool(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  GRAFT_RETURN_IF_ERROR(require_float_tensor(ctx.inputs[0], "X"));
  GRAFT_RETURN_IF_ERROR(require_float_tensor(ctx.inputs[1], "rois"));
  const Tensor& x = *ctx.inputs[0];
  const Tensor& rois = *ctx.inputs[1];
  GRAFT_ASSIGN_OR_RETURN(RoiPoolAttrs a, roi_pool_attrs(attrs_of(ctx)));
  if (x.rank() != 4)
    return error(StatusCode::kInvalidModel, "MaxRoiPool: input X must be [N, C, H, W], got ", ints_to_string(x.dims()));
  if (rois.rank() != 2 || rois.dims()[1] != 5)
    return error(StatusCode::kInvalidModel, "MaxRoiPool: input rois must be [num_rois, 5], got ",
                 ints_to_string(rois.dims()));
  const int64_t n = x.dims()[0], c = x.dims()[1], h = x.dims()[2], w = x.dims()[3], r = rois.dims()[0];
  Tensor& y = *ctx.outputs[0];
  GRAFT_CHECK(y.numel() == r * c * a.pooled_h * a.pooled_w && y.dtype() == x.dtype());
  const std::vector<double> xv = load_doubles(x), rv = load_doubles(rois);
  std::vector<double> yv(static_cast<size_t>(y.numel()));
  for (int64_t k = 0; k < r; ++k) {
    const double* row = rv.data() + k * 5;
    const double batch = row[0];
    if (!roi_batch_valid(batch, n))
      return error(StatusCode::kRuntimeError, "MaxRoiPool: RoI ", k, " has batch index ", batch,
                   ", which is not an image of X (N = ", n, ")");
    const RoiWindow win = roi_window(static_cast<float>(row[1]), static_cast<float>(row[2]), static_cast<float>(row[3]),
                                     static_cast<float>(row[4]), a.spatial_scale, a.pooled_h, a.pooled_w);
    const double* image = xv.data() + static_cast<int64_t>(batch) * c * h * w;
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < a.pooled_h; ++i)
        for (int64_t j = 0; j < a.pooled_w; ++j) {
          int64_t h0, h1, w0, w1;
          roi_bin(i, win.bin_h, win.start_h, h, &h0, &h1);
          roi_bin(j, win.bin_w, win.start_w, w, &w0, &w1);
          double best = 0.0;  // an empty bin
          if (h1 > h0 && w1 > w0) {
            best = -std::numeric_limits<double>::infinity();
            for (int64_t yy = h0; yy < h1; ++yy)
              for (int64_t xx = w0; xx < w1; ++xx) best = std::fmax(best, image[(ch * h + yy) * w + xx]);
          }
          yv[static_cast<size_t>(((k * c + ch) * a.pooled_h + i) * a.pooled_w + j)] = best;
        }
  }
  store_doubles(y, yv);
  return Status::ok();
}

}  // namespace
}  // namespace cpu

// ---- schema: inference and the table row -------------------------------------------------------

namespace {

using namespace infer;

Status infer_max_roi_pool(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  if (ctx.input(1).dtype != ctx.input(0).dtype)
    return ctx.fail("rois has dtype ", dtype_name(ctx.input(1).dtype), " but X has ", dtype_name(ctx.input(0).dtype));
  GRAFT_ASSIGN_OR_RETURN(RoiPoolAttrs a, roi_pool_attrs(ctx.attrs()));
  GRAFT_ASSIGN_OR_RETURN(Shape x, ctx.input_shape(0));
  GRAFT_ASSIGN_OR_RETURN(Shape rois, ctx.input_shape(1));
  if (x.size() != 4) return ctx.fail("input X must be [N, C, H, W], got ", shape_to_string(x));
  if (rois.size() != 2 || (rois[1].is_const() && rois[1].value() != 5))
    return ctx.fail("input rois must be [num_rois, 5], got ", shape_to_string(rois));
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, Shape{rois[0], x[1], Dim(a.pooled_h), Dim(a.pooled_w)}));
  return Status::ok();
}

}  // namespace

void append_roi_pool_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"MaxRoiPool", 11, infer_max_roi_pool, cpu::max_roi_pool});
}

}  // namespace graft
