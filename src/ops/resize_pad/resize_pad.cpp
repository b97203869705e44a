// The resize-and-pad family's registration: one line per op file (resize.cpp, pad.cpp; each holds its
// op's attribute reader, CPU reference and schema; see resize_pad.h).
#include "ops/resize_pad/resize_pad.h"

#include <vector>

#include "ops/operator.h"

namespace graft {

void append_resize_pad_ops(std::vector<OpEntry>& out) {
  append_pad_ops(out);
  append_resize_ops(out);
}

}  // namespace graft
