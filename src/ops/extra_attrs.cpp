// See extra_attrs.h.
#include "ops/extra_attrs.h"

#include <cmath>

#include "ops/attr_util.h"

namespace graft {

Result<float> celu_alpha(const AttributeMap& attrs) {
  auto a = attrs.get_float("alpha", 1.0f);
  if (!a) return Status(a.status()).with_attribute("alpha");
  if (!std::isfinite(a.value()) || a.value() == 0.0f)
    return attr_error("alpha", "must be finite and nonzero (Celu divides by it), got ", static_cast<double>(a.value()));
  return a.value();
}

}  // namespace graft
