// Shared by the ops that read strided views of their inputs (GraftStridedCopy, GraftAttention's
// view attributes) on the CPU and on CUDA: the bounds check of a view.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace graft {

// The largest flat index a view reads: offset + sum over axes of (size - 1) * stride, for sizes and
// strides >= 0 (the callers check the signs); -1 when an axis is empty (nothing is read); nullopt
// when the sum overflows int64, which only a damaged model or plan can ask for.
std::optional<int64_t> view_last_index(int64_t offset, const std::vector<int64_t>& sizes,
                                       const std::vector<int64_t>& strides);

}  // namespace graft
