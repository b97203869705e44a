// CenterCropPad (opset 18): each listed axis cropped or zero-padded to its target extent, centred.
// Cropping drops floor((in - out) / 2) elements at the front, padding adds floor((out - in) / 2)
// zeros there (ONNX's reference implementation; the odd element goes to the back either way). The
// geometry reader declared in resize_pad.h is shared with the CUDA op (center_crop_pad.cu), which runs
// Pad's constant kernel with these offsets.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"  // check_io
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/operator.h"
#include "ops/resize_pad/resize_pad.h"

namespace graft {

// ---- attributes and geometry (resize_pad.h) ---------------------------------------------------------

Result<std::vector<int64_t>> center_crop_pad_axes(const AttributeMap& attrs, int64_t rank) {
  std::vector<int64_t> axes;
  if (!attrs.has("axes")) {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
    return axes;
  }
  auto listed = attrs.get_ints("axes", {});
  if (!listed) return Status(listed.status()).with_attribute("axes");
  for (int64_t a : *listed) {
    auto n = normalize_axis(a, rank);
    if (!n) return Status(n.status()).with_attribute("axes");
    if (std::find(axes.begin(), axes.end(), *n) != axes.end())
      return attr_error("axes", "lists axis ", a, " twice: ", ints_to_string(*listed));
    axes.push_back(*n);
  }
  return axes;
}

Status center_crop_pad_geometry(const AttributeMap& attrs, const std::vector<int64_t>& in,
                                const std::vector<int64_t>& shape, std::vector<int64_t>* out,
                                std::vector<int64_t>* begin) {
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                         center_crop_pad_axes(attrs, static_cast<int64_t>(in.size())));
  if (shape.size() != axes.size())
    return error(StatusCode::kInvalidModel, "input 'shape' has ", static_cast<int64_t>(shape.size()),
                 " values for ", static_cast<int64_t>(axes.size()), " axes");
  *out = in;
  begin->assign(in.size(), 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    const size_t a = static_cast<size_t>(axes[k]);
    if (shape[k] < 0)
      return error(StatusCode::kInvalidModel, "input 'shape' asks for extent ", shape[k], " on axis ",
                   axes[k]);
    (*out)[a] = shape[k];
    (*begin)[a] = shape[k] >= in[a] ? (shape[k] - in[a]) / 2 : -((in[a] - shape[k]) / 2);
  }
  return Status::ok();
}

// ---- CPU reference ----------------------------------------------------------------------------------

namespace cpu {

// Every output element reads the input element `begin` before it on each axis, or is zero where that
// lies outside the input: bytes copied, so every dtype. Row by row along the last axis, as Pad's
// reference: the outer indices are resolved once per row, and a row's in-range middle is one copy.
Status center_crop_pad(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  const Tensor& x = *ctx.inputs[0];
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> shape, int_input(ctx, 1, "shape"));
  std::vector<int64_t> out_dims, begin;
  GRAFT_RETURN_IF_ERROR(center_crop_pad_geometry(*ctx.attrs, x.dims(), shape, &out_dims, &begin));
  Tensor& y = *ctx.outputs[0];
  if (y.dims() != out_dims || y.dtype() != x.dtype())
    return error(StatusCode::kInternal, "CenterCropPad: output ", ints_to_string(y.dims()), " differs from ",
                 ints_to_string(out_dims));
  const size_t es = dtype_size(x.dtype());
  const size_t r = out_dims.size();
  const std::vector<int64_t> in_strides = contiguous_strides(x.dims());
  const int64_t out_row = r ? out_dims[r - 1] : 1, in_row = r ? x.dims()[r - 1] : 1;
  const int64_t row_begin = r ? begin[r - 1] : 0;
  // The part of each output row that reads the input: [lo, hi), from input element lo - row_begin.
  const int64_t lo = std::clamp<int64_t>(row_begin, 0, out_row);
  const int64_t hi = std::clamp<int64_t>(row_begin + in_row, lo, out_row);
  const int64_t rows = out_row == 0 ? 0 : y.numel() / out_row;
  const std::vector<int64_t> outer(out_dims.begin(), out_dims.end() - (r ? 1 : 0));
  std::vector<int64_t> o;
  for (int64_t row = 0; row < rows; ++row) {
    unravel(row, outer, o);
    int64_t off = 0;
    bool inside = true;
    for (size_t a = 0; a + 1 < r && inside; ++a) {
      const int64_t q = o[a] - begin[a];
      inside = q >= 0 && q < x.dims()[a];
      off += q * in_strides[a];
    }
    char* dst = static_cast<char*>(y.data()) + static_cast<size_t>(row * out_row) * es;
    if (!inside || hi <= lo) {
      std::memset(dst, 0, static_cast<size_t>(out_row) * es);
      continue;
    }
    std::memset(dst, 0, static_cast<size_t>(lo) * es);
    std::memcpy(dst + static_cast<size_t>(lo) * es,
                static_cast<const char*>(x.data()) + static_cast<size_t>(off + lo - row_begin) * es,
                static_cast<size_t>(hi - lo) * es);
    std::memset(dst + static_cast<size_t>(hi) * es, 0, static_cast<size_t>(out_row - hi) * es);
  }
  return Status::ok();
}

}  // namespace cpu

// ---- schema -----------------------------------------------------------------------------------------

namespace {

using namespace infer;

// input_data (any type), shape (int32/int64, one value per listed axis) -> output_data: the input's
// shape with each listed axis replaced by its value (a fresh unknown dim where the value is not
// known at build time).
Status infer_center_crop_pad(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  GRAFT_RETURN_IF_ERROR(require_input(ctx, 1));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, {kI32, kI64}));
  const TensorDesc& x = ctx.input(0);
  if (ctx.input(1).shape && ctx.input(1).rank() != 1)
    return ctx.fail("input 'shape' must be 1-D, got ", ctx.input(1).to_string());
  if (!x.shape) {  // the axes are read against the rank at run time
    ctx.set_output(0, desc_of(x.dtype, std::nullopt));
    return Status::ok();
  }
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> axes, center_crop_pad_axes(ctx.attrs(), x.rank()));
  Shape out = *x.shape;
  const std::optional<std::vector<Dim>> values = ctx.input_dims_value(1);
  if (values && values->size() != axes.size())
    return ctx.fail("input 'shape' has ", static_cast<int64_t>(values->size()), " values for ",
                    static_cast<int64_t>(axes.size()), " axes");
  for (size_t k = 0; k < axes.size(); ++k) {
    Dim d = values ? (*values)[k] : ctx.unknown_dim();
    if (d.is_const() && d.value() < 0)
      return ctx.fail("input 'shape' asks for extent ", d.value(), " on axis ", axes[k]);
    out[static_cast<size_t>(axes[k])] = d;
  }
  ctx.set_output(0, desc_of(x.dtype, out));
  return Status::ok();
}

}  // namespace

void append_center_crop_pad_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"CenterCropPad", 18, infer_center_crop_pad, cpu::center_crop_pad});
}

}  // namespace graft
