// AffineGrid (opset 20): the sampling grid GridSample reads, made from a batch of affine matrices,
// as torch.nn.functional.affine_grid exports it. Its geometry reader (declared in sampling.h and
// shared with the CUDA op, affine_grid.cu), the naive CPU reference (each point in double, rounded
// once) and the schema. Base coordinates follow ONNX's reference implementation: with align_corners
// the i-th of S positions is -1 + i * (2 / (S - 1)) (an axis of one position is -1), without it
// (-1 + 1 / S) + i * (2 / S).
#include <cstdint>
#include <optional>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"  // check_io
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/operator.h"
#include "ops/sampling/sampling.h"

namespace graft {

// ---- attributes and geometry (sampling.h) -----------------------------------------------------------

Result<bool> affine_grid_align_corners(const AttributeMap& attrs) {
  auto a = attrs.get_int("align_corners", 0);
  if (!a) return Status(a.status()).with_attribute("align_corners");
  if (*a != 0 && *a != 1) return attr_error("align_corners", "must be 0 or 1, got ", *a);
  return *a == 1;
}

Result<AffineGridGeometry> affine_grid_geometry(const std::vector<int64_t>& theta_dims,
                                                const std::vector<int64_t>& size) {
  AffineGridGeometry g;
  if (size.size() != 4 && size.size() != 5)
    return error(StatusCode::kInvalidModel,
                 "input 'size' must hold 4 values (N, C, H, W) or 5 (N, C, D, H, W), got ",
                 ints_to_string(size));
  for (int64_t v : size)
    if (v < 0)
      return error(StatusCode::kInvalidModel, "input 'size' ", ints_to_string(size),
                   " has a negative extent");
  g.spatial = static_cast<int>(size.size()) - 2;
  g.batch = size[0];
  g.extents.assign(size.begin() + 2, size.end());
  const std::vector<int64_t> want{g.batch, g.spatial, g.spatial + 1};
  if (theta_dims != want)
    return error(StatusCode::kInvalidModel, "input 'theta' must be ", ints_to_string(want), " for size ",
                 ints_to_string(size), ", got ", ints_to_string(theta_dims));
  g.points = g.batch;
  for (int64_t e : g.extents) g.points *= e;
  return g;
}

// ---- CPU reference ----------------------------------------------------------------------------------

namespace cpu {

// Point p of image n at base coordinates (x, y[, z], 1), x along the last axis: grid = theta[n] times
// that column, summed in double.
Status affine_grid(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  const Tensor& theta = *ctx.inputs[0];
  GRAFT_ASSIGN_OR_RETURN(bool align, affine_grid_align_corners(*ctx.attrs));
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> size, int_input(ctx, 1, "size"));
  GRAFT_ASSIGN_OR_RETURN(AffineGridGeometry g, affine_grid_geometry(theta.dims(), size));
  Tensor& y = *ctx.outputs[0];
  if (y.numel() != g.points * g.spatial || y.dtype() != theta.dtype())
    return error(StatusCode::kInternal, "AffineGrid: output ", ints_to_string(y.dims()),
                 " does not match size ", ints_to_string(size));
  const std::vector<double> t = load_doubles(theta);
  std::vector<double> out(static_cast<size_t>(y.numel()));
  const int k = g.spatial;
  const int64_t per_image = g.batch ? g.points / g.batch : 0;
  std::vector<int64_t> idx(static_cast<size_t>(k));
  std::vector<double> base(static_cast<size_t>(k) + 1, 1.0);  // (x, y[, z], 1)
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t p = 0; p < per_image; ++p) {
      unravel(p, g.extents, idx);
      // Extents are (H, W) or (D, H, W); the column is (x = W index, y = H index[, z = D index]).
      for (int a = 0; a < k; ++a)
        base[static_cast<size_t>(a)] = affine_grid_coordinate(
            idx[static_cast<size_t>(k - 1 - a)], g.extents[static_cast<size_t>(k - 1 - a)], align);
      for (int r = 0; r < k; ++r) {
        double acc = 0.0;
        for (int c = 0; c <= k; ++c)
          acc += t[static_cast<size_t>((n * k + r) * (k + 1) + c)] * base[static_cast<size_t>(c)];
        out[static_cast<size_t>((n * per_image + p) * k + r)] = acc;
      }
    }
  }
  store_doubles(y, out);
  return Status::ok();
}

}  // namespace cpu

// ---- schema -----------------------------------------------------------------------------------------

namespace {

using namespace infer;

// theta (N, 2, 3) or (N, 3, 4) of a float type, size int64 (N, C, H, W) or (N, C, D, H, W) ->
// grid (N, H, W, 2) or (N, D, H, W, 3) of theta's type; dims from size's values when known.
Status infer_affine_grid(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  GRAFT_RETURN_IF_ERROR(require_input(ctx, 1));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, {kI64}));
  GRAFT_RETURN_IF_ERROR(affine_grid_align_corners(ctx.attrs()).status());
  const TensorDesc& theta = ctx.input(0);
  const TensorDesc& size = ctx.input(1);
  if (size.shape && size.rank() != 1) return ctx.fail("input 'size' must be 1-D, got ", size.to_string());
  std::optional<int64_t> len;
  if (size.shape && (*size.shape)[0].is_const()) len = (*size.shape)[0].value();
  const std::optional<std::vector<Dim>> values = ctx.input_dims_value(1);
  if (values) len = static_cast<int64_t>(values->size());
  if (len && *len != 4 && *len != 5) return ctx.fail("input 'size' must hold 4 or 5 values, got ", *len);
  if (theta.shape && len) {
    const int64_t k = *len - 2;
    const Shape& t = *theta.shape;
    if (t.size() != 3 || (t[1].is_const() && t[1].value() != k) || (t[2].is_const() && t[2].value() != k + 1))
      return ctx.fail("input 'theta' must be (N, ", k, ", ", k + 1, ") for a ", *len, "-value size, got ",
                      theta.to_string());
  }
  if (!len) {
    ctx.set_output(0, desc_of(theta.dtype, std::nullopt));
    return Status::ok();
  }
  const int64_t k = *len - 2;
  Shape out;
  out.push_back(values ? (*values)[0] : (theta.shape ? (*theta.shape)[0] : ctx.unknown_dim()));
  for (int64_t a = 0; a < k; ++a)
    out.push_back(values ? (*values)[static_cast<size_t>(2 + a)] : ctx.unknown_dim());
  out.push_back(Dim(k));
  ctx.set_output(0, desc_of(theta.dtype, out));
  return Status::ok();
}

}  // namespace

void append_affine_grid_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"AffineGrid", 20, infer_affine_grid, cpu::affine_grid});
}

}  // namespace graft
