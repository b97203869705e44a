// Internal ops of the transformer fusions (GEMM epilogues, elementwise chains, attention).
#include "ops/operator.h"

namespace graft {

void append_fused_transformer_ops(std::vector<BuiltinOp>& out) { (void)out; }

}  // namespace graft
