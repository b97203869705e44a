// mmdeploy's grid_sampler (PyTorch's grid_sampler exported by mmdeploy) as a graft custom op. ONNX's
// own GridSample is a builtin op (src/ops/sampling); both run the kernel in
// src/ops/sampling/grid_sample.cpp. README.md in this folder has the math and the differences.
#pragma once

#include "graft/op.h"

namespace graft {

// mmdeploy::grid_sampler version "1": input (N, C, H, W), grid (N, H_out, W_out, 2) holding (x, y)
// in [-1, 1] -> output (N, C, H_out, W_out). Integer attributes as PyTorch numbers them:
// interpolation_mode 0 bilinear, 1 nearest, 2 bicubic; padding_mode 0 zeros, 1 border,
// 2 reflection; align_corners 0 | 1. float32/float16/float64 on the CPU.
OpDef define_grid_sampler();

}  // namespace graft
