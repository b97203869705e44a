#include "ops/operator.h"

namespace graft {

void append_resize_pad_ops(std::vector<BuiltinOp>& out) {}

}  // namespace graft
