// The nn family's registration: one line per op file (each file holds its ops' schemas and CPU
// references; see nn.h).
#include "ops/nn/nn.h"

#include <vector>

#include "ops/operator.h"

namespace graft {

void append_nn_ops(std::vector<OpEntry>& out) {
  append_batch_norm_ops(out);
  append_conv_ops(out);
  append_conv_transpose_ops(out);
  append_matmul_ops(out);
  append_pool_ops(out);
}

}  // namespace graft
