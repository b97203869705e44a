// The reduce-and-normalize family's registration: one line per op file (see reduce_norm.h).
#include "ops/reduce_norm/reduce_norm.h"

#include <vector>

#include "ops/operator.h"

namespace graft {

void append_reduce_norm_ops(std::vector<OpEntry>& out) {
  append_reduce_ops(out);
  append_softmax_ops(out);
  append_layer_norm_ops(out);
  append_cumsum_ops(out);
  append_l2_normalize_ops(out);
}

}  // namespace graft
