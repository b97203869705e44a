// See selection_attrs.h.
#include "ops/selection_attrs.h"

#include <string>

#include "core/checked_math.h"
#include "ops/attr_util.h"

namespace graft {

Result<MaxUnpoolAttrs> max_unpool_attrs(const AttributeMap& attrs, int64_t spatial) {
  MaxUnpoolAttrs a;
  if (!attrs.has("kernel_shape")) return attr_error("kernel_shape", "is required");
  auto k = attrs.get_ints("kernel_shape", {});
  if (!k) return Status(k.status()).with_attribute("kernel_shape");
  a.kernel = k.value();
  if (static_cast<int64_t>(a.kernel.size()) != spatial)
    return attr_error("kernel_shape", "must have one entry per spatial axis (", spatial, "), got ",
                      ints_to_string(a.kernel));
  for (int64_t v : a.kernel)
    if (v <= 0) return attr_error("kernel_shape", "entries must be positive, got ", ints_to_string(a.kernel));
  auto s = attrs.get_ints("strides", std::vector<int64_t>(static_cast<size_t>(spatial), 1));
  if (!s) return Status(s.status()).with_attribute("strides");
  a.strides = s.value();
  if (static_cast<int64_t>(a.strides.size()) != spatial)
    return attr_error("strides", "must have one entry per spatial axis (", spatial, "), got ",
                      ints_to_string(a.strides));
  for (int64_t v : a.strides)
    if (v <= 0) return attr_error("strides", "entries must be positive, got ", ints_to_string(a.strides));
  auto p = attrs.get_ints("pads", std::vector<int64_t>(static_cast<size_t>(2 * spatial), 0));
  if (!p) return Status(p.status()).with_attribute("pads");
  a.pads = p.value();
  if (static_cast<int64_t>(a.pads.size()) != 2 * spatial)
    return attr_error("pads", "must have two entries per spatial axis (", 2 * spatial, "), got ",
                      ints_to_string(a.pads));
  for (int64_t v : a.pads)
    if (v < 0) return attr_error("pads", "entries must be >= 0, got ", ints_to_string(a.pads));
  return a;
}

Result<int64_t> max_unpool_extent(const MaxUnpoolAttrs& a, size_t d, int64_t in) {
  if (in <= 0) return int64_t{0};  // nothing to unpool along an empty axis
  const size_t spatial = a.kernel.size();
  int64_t v = 0;
  if (!checked_mul(in - 1, a.strides[d], &v) || !checked_add(v, a.kernel[d], &v) ||
      !checked_sub(v, a.pads[d], &v) || !checked_sub(v, a.pads[d + spatial], &v))
    return attr_error("strides", "the unpooled extent of spatial axis ", static_cast<uint64_t>(d), " (input ",
                      in, ", stride ", a.strides[d], ") overflows int64");
  if (v < 0)
    return attr_error("pads", "pads ", ints_to_string(a.pads), " exceed the unpooled extent of spatial axis ",
                      static_cast<uint64_t>(d), " (input ", in, ", kernel ", a.kernel[d], ", stride ",
                      a.strides[d], ")");
  return v;
}

Result<MaxUnpoolShape> max_unpool_shape(const MaxUnpoolAttrs& a, const std::vector<int64_t>& x,
                                        const std::optional<std::vector<int64_t>>& output_shape) {
  const size_t spatial = a.kernel.size();
  if (x.size() != spatial + 2)
    return error(StatusCode::kInvalidModel, "X must be (N, C, spatial...) with ",
                 static_cast<uint64_t>(spatial), " spatial axes for this kernel_shape, got dims ",
                 ints_to_string(x));
  MaxUnpoolShape r;
  r.unpooled = {x[0], x[1]};
  for (size_t d = 0; d < spatial; ++d) {
    GRAFT_ASSIGN_OR_RETURN(int64_t v, max_unpool_extent(a, d, x[d + 2]));
    r.unpooled.push_back(v);
  }
  if (!checked_numel(r.unpooled))
    return error(StatusCode::kInvalidModel, "the unpooled dims ", ints_to_string(r.unpooled),
                 " have too many elements");
  if (!output_shape) {
    r.out = r.unpooled;
    return r;
  }
  const std::vector<int64_t>& o = *output_shape;
  bool ok = o.size() == x.size() && o[0] == x[0] && o[1] == x[1];
  for (size_t d = 2; ok && d < o.size(); ++d) ok = o[d] >= r.unpooled[d];
  if (!ok)
    return error(StatusCode::kInvalidModel, "input 2 (output_shape) ", ints_to_string(o),
                 " must have X's rank, N and C and at least the unpooled extent along every spatial axis ",
                 ints_to_string(r.unpooled), " (X dims ", ints_to_string(x), ")");
  if (!checked_numel(o))
    return error(StatusCode::kInvalidModel, "input 2 (output_shape) ", ints_to_string(o),
                 " has too many elements");
  r.out = o;
  return r;
}

}  // namespace graft
