// CPU reference kernels for the ops of src/ops/selection_ops.cpp: Unique (its output sizes depend on
// the data, so it allocates them with allocate_output once it has counted) and MaxUnpool. The
// attribute and shape readers here are shared by the schemas and the CUDA op, so an error reads
// the same whichever side finds it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "graft/status.h"
#include "ops/operator.h"

namespace graft::cpu {

// ---- MaxUnpool --------------------------------------------------------------------------------

// kernel_shape (required), strides (default 1s) and pads (default 0s, [begins..., ends...]) for
// `spatial` spatial axes; errors name the attribute.
struct MaxUnpoolAttrs {
  std::vector<int64_t> kernel, strides, pads;
};
Result<MaxUnpoolAttrs> max_unpool_attrs(const AttributeMap& attrs, int64_t spatial);

// The unpooled extent of spatial axis `d` for an input extent `in`: (in - 1) * stride + kernel -
// pad_begin - pad_end (0 for an empty axis). Checked arithmetic; a negative or overflowing extent
// is an error naming the attribute.
Result<int64_t> max_unpool_extent(const MaxUnpoolAttrs& a, size_t d, int64_t in);

// MaxUnpool's two shapes over input X of dims `x`. `unpooled`: N, C and max_unpool_extent per
// spatial axis; the indices I address this tensor (flat, N and C included). `out`: the output,
// which is `unpooled` unless `output_shape` (the optional third input's contents) is given; that
// one must keep X's rank, N and C and be at least `unpooled` along every spatial axis, and the
// unpooled tensor sits at its origin with zeros after it (the ONNX reference implementation's
// reading, which the backend tests check). Errors name the attribute or the input.
struct MaxUnpoolShape {
  std::vector<int64_t> unpooled, out;
};
Result<MaxUnpoolShape> max_unpool_shape(const MaxUnpoolAttrs& a, const std::vector<int64_t>& x,
                                        const std::optional<std::vector<int64_t>>& output_shape);

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
