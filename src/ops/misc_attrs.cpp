// See misc_attrs.h.
#include "ops/misc_attrs.h"

#include <algorithm>
#include <cmath>

#include "ops/attr_util.h"
#include "ops/operator.h"

namespace graft {

namespace {

Result<float> float_attr(const AttributeMap& attrs, const char* name, float def) {
  auto r = attrs.get_float(name, def);
  if (!r) return Status(r.status()).with_attribute(name);
  if (!std::isfinite(r.value())) return attr_error(name, "must be finite, got ", static_cast<double>(r.value()));
  return r.value();
}

}  // namespace

Result<float> instance_norm_epsilon(const AttributeMap& attrs) {
  GRAFT_ASSIGN_OR_RETURN(float eps, float_attr(attrs, "epsilon", 1e-5f));
  if (!(eps >= 0.0f)) return attr_error("epsilon", "must be >= 0, got ", static_cast<double>(eps));
  return eps;
}

Result<LrnAttrs> lrn_attrs(const AttributeMap& attrs) {
  LrnAttrs a;
  auto size = attrs.require_int("size");
  if (!size) return Status(size.status()).with_attribute("size");
  if (size.value() < 1) return attr_error("size", "must be >= 1, got ", size.value());
  a.size = size.value();
  GRAFT_ASSIGN_OR_RETURN(a.alpha, float_attr(attrs, "alpha", 1e-4f));
  GRAFT_ASSIGN_OR_RETURN(a.beta, float_attr(attrs, "beta", 0.75f));
  GRAFT_ASSIGN_OR_RETURN(a.bias, float_attr(attrs, "bias", 1.0f));
  return a;
}

Result<std::vector<int64_t>> mvn_axes(const AttributeMap& attrs, int64_t rank) {
  auto r = attrs.get_ints("axes", {0, 2, 3});
  if (!r) return Status(r.status()).with_attribute("axes");
  std::vector<int64_t> axes;
  for (int64_t a : r.value()) {
    auto n = normalize_axis(a, rank);
    if (!n) return Status(n.status()).with_attribute("axes");
    if (std::find(axes.begin(), axes.end(), n.value()) != axes.end())
      return attr_error("axes", "lists axis ", a, " twice: ", ints_to_string(r.value()));
    axes.push_back(n.value());
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

Result<bool> bit_shift_left(const AttributeMap& attrs) {
  if (!attrs.has("direction")) return attr_error("direction", "is required (LEFT or RIGHT)");
  auto d = attrs.get_string("direction", "");
  if (!d) return Status(d.status()).with_attribute("direction");
  if (d.value() != "LEFT" && d.value() != "RIGHT")
    return attr_error("direction", "must be LEFT or RIGHT, got '", d.value(), "'");
  return d.value() == "LEFT";
}

Result<std::pair<int64_t, int64_t>> reverse_sequence_axes(const AttributeMap& attrs) {
  auto b = attrs.get_int("batch_axis", 1);
  if (!b) return Status(b.status()).with_attribute("batch_axis");
  auto t = attrs.get_int("time_axis", 0);
  if (!t) return Status(t.status()).with_attribute("time_axis");
  if (b.value() != 0 && b.value() != 1) return attr_error("batch_axis", "must be 0 or 1, got ", b.value());
  if (t.value() != 0 && t.value() != 1) return attr_error("time_axis", "must be 0 or 1, got ", t.value());
  if (b.value() == t.value())
    return attr_error("time_axis", "must differ from batch_axis (both are ", b.value(), ")");
  return std::make_pair(b.value(), t.value());
}

}  // namespace graft
