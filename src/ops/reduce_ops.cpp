#include "ops/operator.h"

namespace graft {

void append_reduce_ops(std::vector<BuiltinOp>& out) {}

}  // namespace graft
