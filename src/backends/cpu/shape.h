// CPU reference kernels for the ONNX data-movement ("shape") ops. They move bytes only, so every
// dtype is handled by copying dtype_size() bytes per element. Output tensors arrive allocated to the
// shapes inference produced; kernels recompute their own parameters from attributes and input values
// and fail (rather than write out of bounds) when those disagree with the allocated outputs.
#pragma once

#include <cstdint>
#include <vector>

#include "graft/attribute.h"
#include "graft/status.h"
#include "graft/tensor.h"
#include "ops/operator.h"

namespace graft::cpu {

// One sliced axis after ONNX clamping: output element k reads input index start + k*step.
struct SliceAxis {
  int64_t start = 0;
  int64_t step = 1;
  int64_t length = 0;
};
// ONNX Slice semantics (opset 10+) for one axis of extent `dim`: negative indices count from the
// end, starts/ends clamp to [0,dim] (step > 0) or [0,dim-1] / [-1,dim-1] (step < 0). step != 0.
SliceAxis slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step);

// The tensor a Constant node produces, from whichever value attribute it carries.
Result<Tensor> constant_node_value(const AttributeMap& attrs);

// Contents of a (host) integer tensor input as int64; error names the input.
Result<std::vector<int64_t>> int_input(const ExecContext& ctx, size_t i, const char* what);

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

}  // namespace graft::cpu
