// GroupNorm: group normalization (Wu & He, arXiv 1803.08494) as a graft custom op.
// See README.md in this folder for the math, inputs, outputs and attributes.
#pragma once

#include "graft/op.h"

namespace graft {

// The complete definition: identity ai.onnx.contrib::GroupNorm version "1" namespace "",
// attributes `num_groups` (required) and `epsilon`, CPU kernels for float64/float32/float16 and,
// when built with CUDA, CUDA kernels for float32/float16 (FP32 accumulation); forward and backward
// (gradients for x, scale and bias).
OpDef define_group_norm();

}  // namespace graft
