// graft's internal ops: the fused and layout forms its optimization passes make (GraftConv,
// GraftGemm, GraftStridedCopy, ...; the append_fused_* and append_view_ops tables of
// ops/operator.h). They are builtin ops with CPU references, but not ONNX ops: `graft ops` lists
// them apart.
#pragma once

#include <string>

namespace graft {

bool is_internal_op(const std::string& op_type);

}  // namespace graft
