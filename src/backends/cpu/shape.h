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
#include "ops/attr_util.h"  // int_input
#include "ops/operator.h"
#include "ops/slice_axis.h"

namespace graft::cpu {

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

}  // namespace graft::cpu
