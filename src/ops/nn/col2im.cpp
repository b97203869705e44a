// Col2Im (opset 18), what torch.nn.functional.fold exports to: the geometry reader declared in nn.h
// (shared with the CUDA op, col2im.cu), the naive CPU reference (every column value added into a
// double image, rounded once) and the schema.
#include <cstdint>
#include <optional>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"  // check_io
#include "core/checked_math.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/nn/nn.h"
#include "ops/operator.h"

namespace graft {

// ---- geometry (nn.h) --------------------------------------------------------------------------------

Result<Col2ImGeometry> col2im_geometry(const AttributeMap& attrs, const std::vector<int64_t>& input_dims,
                                       const std::vector<int64_t>& image_shape,
                                       const std::vector<int64_t>& block_shape) {
  Col2ImGeometry g;
  const size_t k = image_shape.size();
  if (k == 0) return error(StatusCode::kInvalidModel, "input 'image_shape' is empty");
  if (block_shape.size() != k)
    return error(StatusCode::kInvalidModel, "input 'block_shape' has ",
                 static_cast<int64_t>(block_shape.size()), " values for ", static_cast<int64_t>(k),
                 " image axes");
  auto read = [&](const char* name, size_t count, int64_t def,
                  int64_t least) -> Result<std::vector<int64_t>> {
    auto v = attrs.get_ints(name, std::vector<int64_t>(count, def));
    if (!v) return Status(v.status()).with_attribute(name);
    if (v->size() != count)
      return attr_error(name, "has ", static_cast<int64_t>(v->size()), " values, expected ",
                        static_cast<int64_t>(count));
    for (int64_t x : *v)
      if (x < least) return attr_error(name, "values must be >= ", least, ", got ", ints_to_string(*v));
    return *v;
  };
  GRAFT_ASSIGN_OR_RETURN(g.dilations, read("dilations", k, 1, 1));
  GRAFT_ASSIGN_OR_RETURN(g.strides, read("strides", k, 1, 1));
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> pads, read("pads", 2 * k, 0, 0));
  g.pads_begin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(k));
  g.image = image_shape;
  g.block = block_shape;
  int64_t positions = 1;
  for (size_t d = 0; d < k; ++d) {
    if (image_shape[d] < 1 || block_shape[d] < 1)
      return error(StatusCode::kInvalidModel, "image_shape ", ints_to_string(image_shape),
                   " and block_shape ", ints_to_string(block_shape), " must be positive");
    int64_t span = 0, pad = 0, padded = 0;
    if (!checked_mul(g.dilations[d], block_shape[d] - 1, &span) || !checked_add(pads[d], pads[k + d], &pad) ||
        !checked_add(image_shape[d], pad, &padded) || padded - span - 1 < 0)
      return error(StatusCode::kInvalidModel, "block ", block_shape[d], " (dilation ", g.dilations[d],
                   ") does not fit image axis ", static_cast<int64_t>(d), " of ", image_shape[d],
                   " with pads ", pads[d], "/", pads[k + d]);
    g.blocks.push_back((padded - span - 1) / g.strides[d] + 1);
    if (!checked_mul(positions, g.blocks.back(), &positions) ||
        !checked_mul(g.kernel_size, block_shape[d], &g.kernel_size))
      return error(StatusCode::kInvalidModel, "Col2Im's sizes overflow int64");
  }
  if (input_dims.size() != 3)
    return error(StatusCode::kInvalidModel, "input must be (N, C * prod(block_shape), L), got ",
                 ints_to_string(input_dims));
  if (input_dims[1] % g.kernel_size != 0)
    return error(StatusCode::kInvalidModel, "input's second dim ", input_dims[1],
                 " is not a multiple of prod(block_shape) ", g.kernel_size);
  if (input_dims[2] != positions)
    return error(StatusCode::kInvalidModel, "input has L = ", input_dims[2],
                 " columns; the image, block and attributes give ", positions);
  g.batch = input_dims[0];
  g.channels = input_dims[1] / g.kernel_size;
  return g;
}

// ---- CPU reference ----------------------------------------------------------------------------------

namespace cpu {

// Scatter: every column value, at kernel offset kk and sliding position l, is added at image position
// l * stride - pad_begin + kk * dilation (skipped where that is in the padding).
Status col2im(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 3));
  const Tensor& x = *ctx.inputs[0];
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> image, int_input(ctx, 1, "image_shape"));
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> block, int_input(ctx, 2, "block_shape"));
  GRAFT_ASSIGN_OR_RETURN(Col2ImGeometry g, col2im_geometry(*ctx.attrs, x.dims(), image, block));
  Tensor& y = *ctx.outputs[0];
  std::vector<int64_t> want{g.batch, g.channels};
  want.insert(want.end(), g.image.begin(), g.image.end());
  if (y.dims() != want || y.dtype() != x.dtype())
    return error(StatusCode::kInternal, "Col2Im: output ", ints_to_string(y.dims()), " differs from ",
                 ints_to_string(want));
  const std::vector<double> xv = load_doubles(x);
  std::vector<double> yv(static_cast<size_t>(y.numel()), 0.0);
  const size_t k = g.image.size();
  const int64_t image_area = numel_of(g.image), positions = numel_of(g.blocks);
  std::vector<int64_t> kk, l;
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t c = 0; c < g.channels; ++c)
      for (int64_t kf = 0; kf < g.kernel_size; ++kf) {
        unravel(kf, g.block, kk);
        for (int64_t lf = 0; lf < positions; ++lf) {
          unravel(lf, g.blocks, l);
          int64_t at = 0;
          bool inside = true;
          for (size_t d = 0; d < k && inside; ++d) {
            const int64_t p = l[d] * g.strides[d] - g.pads_begin[d] + kk[d] * g.dilations[d];
            inside = p >= 0 && p < g.image[d];
            at = at * g.image[d] + p;
          }
          if (!inside) continue;
          yv[static_cast<size_t>((n * g.channels + c) * image_area + at)] +=
              xv[static_cast<size_t>(((n * g.channels + c) * g.kernel_size + kf) * positions + lf)];
        }
      }
  store_doubles(y, yv);
  return Status::ok();
}

}  // namespace cpu

// ---- schema -----------------------------------------------------------------------------------------

namespace {

using namespace infer;

// input (N, C * prod(block_shape), L), image_shape and block_shape (int64, one value per image axis)
// -> (N, C, image_shape...): the dims from the two inputs' values when they are known.
Status infer_col2im(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kNumericTypes));
  for (size_t i : {size_t{1}, size_t{2}}) {
    GRAFT_RETURN_IF_ERROR(require_input(ctx, i));
    GRAFT_RETURN_IF_ERROR(check_dtype(ctx, i, {kI64}));
  }
  const TensorDesc& x = ctx.input(0);
  if (x.shape && x.rank() != 3)
    return ctx.fail("input must be (N, C * prod(block_shape), L), got ", x.to_string());
  const Tensor* image_t = ctx.input_value(1);
  const Tensor* block_t = ctx.input_value(2);
  if (x.shape && shape_is_static(*x.shape) && image_t && block_t) {
    GRAFT_ASSIGN_OR_RETURN(Col2ImGeometry g,
                           col2im_geometry(ctx.attrs(), shape_values(*x.shape), image_t->to_int64_vector(),
                                           block_t->to_int64_vector()));
    std::vector<int64_t> out{g.batch, g.channels};
    out.insert(out.end(), g.image.begin(), g.image.end());
    ctx.set_output(0, TensorDesc(x.dtype, shape_from_values(out)));
    return Status::ok();
  }
  // A dynamic batch, or values known only at run time: what is known now.
  std::optional<int64_t> axes;
  if (image_t)
    axes = image_t->numel();
  else if (ctx.input(1).shape && ctx.input(1).rank() == 1 && (*ctx.input(1).shape)[0].is_const())
    axes = (*ctx.input(1).shape)[0].value();
  if (!axes) {
    ctx.set_output(0, desc_of(x.dtype, std::nullopt));
    return Status::ok();
  }
  Shape out{x.shape ? (*x.shape)[0] : ctx.unknown_dim(), ctx.unknown_dim()};
  if (x.shape && block_t) {
    int64_t kernel = 1;
    for (int64_t b : block_t->to_int64_vector()) kernel *= b > 0 ? b : 1;
    if ((*x.shape)[1].is_const()) out[1] = Dim((*x.shape)[1].value() / kernel);
  }
  const std::vector<int64_t> image = image_t ? image_t->to_int64_vector() : std::vector<int64_t>();
  for (int64_t a = 0; a < *axes; ++a)
    out.push_back(image_t ? Dim(image[static_cast<size_t>(a)]) : ctx.unknown_dim());
  ctx.set_output(0, desc_of(x.dtype, out));
  return Status::ok();
}

}  // namespace

void append_col2im_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"Col2Im", 18, infer_col2im, cpu::col2im});
}

}  // namespace graft
