// CPU reference kernels for the ops of src/ops/selection_ops.cpp: Unique (its output sizes depend on
// the data, so it allocates them with allocate_output once it has counted) and MaxUnpool, whose
// attributes and shapes are read by src/ops/selection_attrs.h.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "graft/status.h"
#include "ops/operator.h"
#include "ops/selection_attrs.h"

namespace graft::cpu {

// ---- MaxUnpool --------------------------------------------------------------------------------

// Y = 0, then Y[position of unpooled flat index I[i]] = X.flat[i] in order (a repeated index keeps
// the last value written). An index outside [0, numel(unpooled)) is kInvalidArgument naming the
// element; nothing is written then.
Status max_unpool(ExecContext& ctx);

// ---- Unique -----------------------------------------------------------------------------------

// Unique (opset 11): the distinct elements of X (axis absent: X flattened) or its distinct slices
// along `axis`, ascending (sorted=1, the default; lexicographic for slices) or in order of first
// occurrence (sorted=0), with the optional outputs indices (first occurrence of each), inverse
// indices (for every element or slice of X, its position in Y) and counts. Floats compare by value
// (-0 equals 0, the first occurrence's bits are kept) and every NaN equals every other NaN and
// sorts after all numbers, as numpy.unique does.
Status unique(ExecContext& ctx);

}  // namespace graft::cpu
