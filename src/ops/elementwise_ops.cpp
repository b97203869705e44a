#include "ops/operator.h"

namespace graft {

void append_elementwise_ops(std::vector<BuiltinOp>& out) {}

}  // namespace graft
