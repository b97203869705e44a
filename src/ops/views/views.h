// Shared by the ops that read strided views of their inputs (GraftStridedCopy, GraftViewChain,
// GraftAttention's view attributes) on the CPU and on CUDA, and by the pass that makes them
// (src/graph/compose_views.cpp): the bounds check of a view, and the composition of a chain of
// re-indexing steps into strided views.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graft/attribute.h"
#include "graft/dim.h"
#include "graft/status.h"

namespace graft {

class AttributeMap;

// The largest flat index a view reads: offset + sum over axes of (size - 1) * stride, for sizes and
// strides >= 0 (the callers check the signs); -1 when an axis is empty (nothing is read); nullopt
// when the sum overflows int64, which only a damaged model or plan can ask for.
std::optional<int64_t> view_last_index(int64_t offset, const std::vector<int64_t>& sizes,
                                       const std::vector<int64_t>& strides);

// Y[i0, .., ik] = X.flat[offset + sum_d i_d * strides[d]].
struct StridedView {
  std::vector<int64_t> shape, strides;
  int64_t offset = 0;
};

// One re-indexing step of a chain of data-movement nodes, in a form that does not depend on the
// concrete dims (so a chain over a dynamic batch is planned again per input shape):
//   kPermute: args = perm (Transpose);
//   kSelect:  args = {axis >= 0, index (< 0 counts from the end), keep (1: the axis stays as 1)}
//             (Gather of one constant index);
//   kReshape: args = the target dims, 0 copying the step input's dim at that position and one -1
//             inferred from the element count (Reshape, Flatten, Squeeze, Unsqueeze, Identity).
enum class ViewStepKind : int64_t { kPermute = 0, kSelect = 1, kReshape = 2 };
struct ViewStep {
  ViewStepKind kind = ViewStepKind::kReshape;
  std::vector<int64_t> args;
};

// GraftViewChain's attributes: view_kinds (one per step), view_args (every step's args, in order)
// and view_arg_counts (how many args each step has), each name after `prefix` (GraftAttention keeps
// one chain per operand, "q_", "kt_" and "v_"). Reading checks the encoding (not the dims).
void write_view_steps(const std::vector<ViewStep>& steps, AttributeMap* attrs, const std::string& prefix = "");
Result<std::vector<ViewStep>> read_view_steps(const AttributeMap& attrs, const std::string& prefix = "");

// Y = the view of `src` (elements of `elem_size` bytes), contiguous; the caller checked the bounds.
void gather_view(const char* src, char* dst, size_t elem_size, const StridedView& v);
// Runs a plan of plan_view_steps over `src` into `dst` (the last view's elements, contiguous).
void run_view_plan(const char* src, char* dst, size_t elem_size, const std::vector<StridedView>& plan);

// The shape after the steps (symbolic dims allowed: what shape inference gives); the error names
// the step that does not fit the shape it meets.
Result<Shape> view_steps_shape(const Shape& in, const std::vector<ViewStep>& steps);

// Whether the step moves data when run on its own (a Gather, a Transpose of more than unit axes)
// over an input of shape `in` (a symbolic dim counts as more than 1).
bool view_step_copies(const ViewStep& step, const Shape& in);

// The steps over concrete input dims as strided copies, each reading the contiguous result of the
// one before (the first reads the input; the last one's shape is the chain's output): one copy when
// the whole chain is a strided view of its input, more only where a Reshape merges axes that no
// strides can express and the running result must be materialized first.
Result<std::vector<StridedView>> plan_view_steps(const std::vector<int64_t>& in_dims,
                                                 const std::vector<ViewStep>& steps);

// GraftConcatSlices's attributes: the concatenation axis (normalized to the rank) and each input's
// Slice range; errors name the attribute.
struct ConcatSlices {
  int64_t axis = 0;
  std::vector<int64_t> starts, ends;
};
Result<ConcatSlices> read_concat_slices(const AttributeMap& attrs, size_t inputs, size_t rank);

// Slice's [start, end) over an extent: negative values count from the end, both clamp to
// [0, extent], an empty range is (b, b).
std::pair<int64_t, int64_t> slice_range(int64_t start, int64_t end, int64_t extent);

}  // namespace graft
