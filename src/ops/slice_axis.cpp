// See slice_axis.h.
#include "ops/slice_axis.h"

#include <algorithm>
#include <limits>

namespace graft {

SliceAxis slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step) {
  SliceAxis r;
  r.step = step;
  if (step > 0) {
    start = start < 0 ? std::max<int64_t>(start < -dim ? 0 : start + dim, 0) : std::min(start, dim);
    end = end < 0 ? std::max<int64_t>(end < -dim ? 0 : end + dim, 0) : std::min(end, dim);
    r.start = start;
    r.length = end > start ? 1 + (end - start - 1) / step : 0;
  } else {
    start = start < 0 ? (start < -dim ? 0 : start + dim) : std::min(start, dim - 1);
    end = end < 0 ? (end < -dim ? -1 : end + dim) : std::min(end, dim - 1);
    r.start = start;
    const int64_t s = step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step;
    r.length = start > end ? 1 + (start - end - 1) / s : 0;
  }
  if (dim == 0) r.length = 0;
  return r;
}

}  // namespace graft
