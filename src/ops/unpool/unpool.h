// The unpool family: MaxUnpool, the scatter that undoes a MaxPool from its indices. Definition and
// CPU reference: unpool.cpp; CUDA kernel and op: unpool.cu. This header holds its attributes and
// shapes, read one way by the schema, the CPU reference and the CUDA op, so that an error reads the
// same whichever side finds it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "graft/attribute.h"
#include "graft/status.h"

namespace graft {

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

}  // namespace graft
