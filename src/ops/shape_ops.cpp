#include "ops/operator.h"

namespace graft {

void append_shape_ops(std::vector<BuiltinOp>& out) {}

}  // namespace graft
