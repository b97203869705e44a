// The geometry of one sliced axis, shared by Slice's schema (src/ops/shape_ops.cpp), its CPU
// reference and its CUDA op, so every side clamps starts and ends the same way.
#pragma once

#include <cstdint>

namespace graft {

// One sliced axis after ONNX clamping: output element k reads input index start + k*step.
struct SliceAxis {
  int64_t start = 0;
  int64_t step = 1;
  int64_t length = 0;
};
// ONNX Slice semantics (opset 10+) for one axis of extent `dim`: negative indices count from the
// end, starts/ends clamp to [0,dim] (step > 0) or [0,dim-1] / [-1,dim-1] (step < 0). step != 0.
SliceAxis slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step);

}  // namespace graft
