// See quantize_attrs.h.
#include "ops/quantize_attrs.h"

#include "ops/attr_util.h"
#include "ops/operator.h"

namespace graft {

Status check_no_block_size(const AttributeMap& attrs) {
  auto bs = attrs.get_int("block_size", 0);
  if (!bs) return Status(bs.status()).with_attribute("block_size");
  if (bs.value() != 0) {
    Status st = error(StatusCode::kUnsupported, "blocked quantization (block_size ", bs.value(), ") is not supported");
    st.with_attribute("block_size");
    return st;
  }
  return Status::ok();
}

Result<QuantLayout> quant_layout(const AttributeMap& attrs, const std::vector<int64_t>& x_dims,
                                 const std::vector<int64_t>& scale_dims, const std::vector<int64_t>* zp_dims) {
  auto axis_attr = attrs.get_int("axis", 1);
  if (!axis_attr) return Status(axis_attr.status()).with_attribute("axis");
  if (scale_dims.size() > 1)
    return error(StatusCode::kInvalidModel, "the scale must be a scalar or 1-D, got ", ints_to_string(scale_dims));
  if (zp_dims && *zp_dims != scale_dims)
    return error(StatusCode::kInvalidModel, "the zero point ", ints_to_string(*zp_dims), " must have the scale's shape ",
                 ints_to_string(scale_dims));
  QuantLayout l;
  const int64_t n = scale_dims.empty() ? 1 : scale_dims[0];
  if (n == 1) return l;  // per-tensor (a one-element 1-D scale included, as ONNX Runtime reads it)
  auto axis = normalize_axis(axis_attr.value(), static_cast<int64_t>(x_dims.size()));
  if (!axis) return Status(axis.status()).with_attribute("axis");
  l.axis = axis.value();
  if (x_dims[static_cast<size_t>(l.axis)] != n)
    return error(StatusCode::kInvalidModel, "the per-axis scale ", ints_to_string(scale_dims), " must have one entry per index of axis ",
                 l.axis, " of ", ints_to_string(x_dims));
  l.channels = n;
  for (size_t d = static_cast<size_t>(l.axis) + 1; d < x_dims.size(); ++d) l.inner *= x_dims[d];
  return l;
}

}  // namespace graft
