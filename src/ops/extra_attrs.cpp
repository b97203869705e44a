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

Status check_dropout_training(const AttributeMap& attrs, double ratio) {
  if (ratio == 0.0) return Status::ok();
  if (attrs.has("seed"))
    return Status(error(StatusCode::kUnsupported, "training_mode is true with ratio ", ratio,
                        ": the mask is a random draw, and even with a seed ONNX does not define the generator, so "
                        "graft cannot reproduce it (only ratio 0 runs in training mode)"))
        .with_attribute("seed");
  return error(StatusCode::kUnsupported, "training_mode is true with ratio ", ratio,
               ": the mask is a random draw graft cannot reproduce (only ratio 0 runs in training mode)");
}

}  // namespace graft
