// The selection family's registration: one line per op file (arg_max.cpp: ArgMax, ArgMin and
// Hardmax; top_k.cpp: TopK; see selection.h).
#include "ops/selection/selection.h"

#include <vector>

#include "ops/operator.h"

namespace graft {

void append_selection_ops(std::vector<OpEntry>& out) {
  append_arg_max_ops(out);
  append_top_k_ops(out);
}

}  // namespace graft
