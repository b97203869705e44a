// Attribute readers of the ops of src/ops/extra_ops.cpp that the schemas, the CPU references and
// the CUDA ops share.
#pragma once

#include "graft/attribute.h"
#include "graft/status.h"

namespace graft {

// Celu's alpha (default 1), which must be finite and nonzero; the error names the attribute.
Result<float> celu_alpha(const AttributeMap& attrs);

// Dropout (opset 12) with training_mode true: only ratio 0 has a defined result (Y = X, mask all
// true); any other ratio draws a random mask that ONNX leaves to the runtime's generator (the seed
// attribute too), so graft cannot reproduce it and refuses, saying so.
Status check_dropout_training(const AttributeMap& attrs, double ratio);

}  // namespace graft
