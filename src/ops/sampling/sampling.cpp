// The sampling family's registration: one line per op file (see sampling.h).
#include "ops/sampling/sampling.h"

#include <vector>

#include "ops/operator.h"

namespace graft {

void append_sampling_ops(std::vector<OpEntry>& out) {
  append_grid_sample_ops(out);
  append_roi_align_ops(out);
}

}  // namespace graft
