// The shape family: ONNX's data-movement ops, Flatten, Reshape, Squeeze, Unsqueeze, Transpose,
// Concat, Split, Slice, Gather, Expand, Tile, Shape, Constant, ConstantOfShape and Range. Their
// CPU references move bytes only (every dtype by copying dtype_size() bytes per element) and fail,
// rather than write out of bounds, when the allocated outputs disagree with what they recompute.
// Their schemas also propagate the symbolic contents of small integer tensors, so PyTorch's
// dynamic reshapes (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) keep symbolic shapes.
// shape.cpp: Slice's axis geometry, CPU references, schemas; shape_cuda.cpp: the CUDA ops, over
// the data-movement kernels of src/backends/cuda/shape_kernels.cu, which other ops share.
#pragma once

#include <cstdint>

#include "graft/attribute.h"
#include "graft/status.h"
#include "graft/tensor.h"
#include "ops/operator.h"

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

// ---- CPU references (shape.cpp) --------------------------------------------------------------------
namespace cpu {

// The tensor a Constant node produces, from whichever value attribute it carries.
Result<Tensor> constant_node_value(const AttributeMap& attrs);

Status reshape_like(ExecContext& ctx);  // Reshape, Flatten, Squeeze, Unsqueeze: a plain byte copy
Status transpose(ExecContext& ctx);
Status concat(ExecContext& ctx);
Status split(ExecContext& ctx);
Status slice(ExecContext& ctx);
Status gather(ExecContext& ctx);
Status expand(ExecContext& ctx);
Status shape(ExecContext& ctx);
Status constant(ExecContext& ctx);
Status constant_of_shape(ExecContext& ctx);
Status range(ExecContext& ctx);
Status tile(ExecContext& ctx);

}  // namespace cpu
}  // namespace graft
