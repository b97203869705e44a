// Attribute readers of the ops of src/ops/extra_ops.cpp that the schemas, the CPU references and
// the CUDA ops share.
#pragma once

#include "graft/attribute.h"
#include "graft/status.h"

namespace graft {

// Celu's alpha (default 1), which must be finite and nonzero; the error names the attribute.
Result<float> celu_alpha(const AttributeMap& attrs);

}  // namespace graft
