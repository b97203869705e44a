#include "ops/operator.h"
namespace graft {
void append_fused_conv_ops(std::vector<BuiltinOp>& out) { (void)out; }
}  // namespace graft
