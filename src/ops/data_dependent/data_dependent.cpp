// The data-dependent family's registration: one line per op file (see data_dependent.h).
#include "ops/data_dependent/data_dependent.h"

#include <vector>

#include "ops/operator.h"

namespace graft {

void append_data_dependent_ops(std::vector<OpEntry>& out) {
  append_non_zero_ops(out);
  append_non_max_suppression_ops(out);
  append_unique_ops(out);
}

}  // namespace graft
