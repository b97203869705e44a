#include "ops/operator.h"

namespace graft {

void append_nn_ops(std::vector<BuiltinOp>& out) {}

}  // namespace graft
