// CustomLayer: y = x * sigmoid(beta * x) (SiLU/Swish with a fixed slope), graft's first custom op.
// See README.md in this folder for the math, inputs, outputs and attributes.
#pragma once

#include "graft/op.h"

namespace graft {

// The complete definition: identity ai.onnx.contrib::CustomLayer version "1" namespace "",
// attribute `beta`, CPU kernels for float64/float32/float16 and, when built with CUDA, CUDA kernels
// for float32/float16; forward and backward (gradient for x only).
OpDef define_custom_layer();

}  // namespace graft
