// GraftStridedCopy(X) -> Y: the internal op that replaces a chain of pure data-movement nodes
// (Transpose, Gather of one constant index, Reshape/Squeeze/Unsqueeze/Flatten) with one strided
// gather (src/graph/compose_views.cpp builds it).
//
//   attrs: shape (ints, Y's dims), strides (ints, one per Y axis, in elements of X, >= 0),
//          offset (int, elements of X).
//   Y[i0, .., ik] = X.flat[offset + sum_d i_d * strides[d]]
//
// Every element Y can address must lie inside X: inference checks it against X's static shape and
// the kernels again against the concrete tensor, so a damaged plan cannot read out of bounds.
#include <cstring>
#include <string>
#include <vector>

#include "ops/operator.h"
#include "ops/view_ops.h"

namespace graft {

namespace {

struct StridedView {
  std::vector<int64_t> shape, strides;
  int64_t offset = 0;
};

Result<StridedView> read_view(const AttributeMap& a) {
  StridedView v;
  GRAFT_ASSIGN_OR_RETURN(v.shape, a.get_ints("shape", {}));
  GRAFT_ASSIGN_OR_RETURN(v.strides, a.get_ints("strides", {}));
  GRAFT_ASSIGN_OR_RETURN(v.offset, a.get_int("offset", 0));
  if (v.strides.size() != v.shape.size())
    return Status(error(StatusCode::kInvalidModel, "strides has ", v.strides.size(), " entries but shape has ",
                        v.shape.size()))
        .with_attribute("strides");
  for (size_t d = 0; d < v.shape.size(); ++d) {
    if (v.shape[d] < 0)
      return Status(error(StatusCode::kInvalidModel, "negative dimension ", v.shape[d])).with_attribute("shape");
    if (v.strides[d] < 0)
      return Status(error(StatusCode::kInvalidModel, "negative stride ", v.strides[d])).with_attribute("strides");
  }
  if (v.offset < 0) return Status(error(StatusCode::kInvalidModel, "negative offset ", v.offset)).with_attribute("offset");
  return v;
}

// The largest flat index of X the view reads (-1 for an empty view); an error naming `strides`
// when that index does not fit in 64 bits.
Result<int64_t> last_index(const StridedView& v) {
  auto last = view_last_index(v.offset, v.shape, v.strides);
  if (!last)
    return Status(error(StatusCode::kInvalidModel, "the view's extent overflows 64-bit indices")).with_attribute("strides");
  return *last;
}

Status infer_strided_copy(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(StridedView v, read_view(ctx.attrs()));
  const TensorDesc& x = ctx.input(0);
  if (x.shape) {
    GRAFT_ASSIGN_OR_RETURN(int64_t last, last_index(v));
    const int64_t numel = shape_is_static(*x.shape) ? numel_of(shape_values(*x.shape)) : -1;
    if (numel >= 0 && last >= numel)
      return Status(ctx.fail("the view reads element ", last, " of X ", x.to_string(), " (", numel,
                             " elements)"))
          .with_attribute("strides");
  }
  ctx.set_output(0, TensorDesc(x.dtype, shape_from_values(v.shape)));
  return Status::ok();
}

Status strided_copy_cpu(ExecContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(StridedView v, read_view(*ctx.attrs));
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  if (y.dims() != v.shape) return error(StatusCode::kInternal, "output dims differ from the shape attribute");
  GRAFT_ASSIGN_OR_RETURN(int64_t last, last_index(v));
  if (last >= x.numel())
    return Status(error(StatusCode::kInvalidModel, "the view reads element ", last, " of X with ", x.numel(),
                        " elements"))
        .with_attribute("strides");
  const size_t es = dtype_size(x.dtype());
  const auto* src = static_cast<const char*>(x.data());
  auto* dst = static_cast<char*>(y.data());
  const size_t rank = v.shape.size();
  std::vector<int64_t> idx(rank, 0);
  for (int64_t o = 0; o < y.numel(); ++o) {
    int64_t off = v.offset;
    for (size_t d = 0; d < rank; ++d) off += idx[d] * v.strides[d];
    std::memcpy(dst + o * es, src + off * es, es);
    for (size_t d = rank; d-- > 0;) {  // odometer increment, last axis fastest
      if (++idx[d] < v.shape[d]) break;
      idx[d] = 0;
    }
  }
  return Status::ok();
}

}  // namespace

std::optional<int64_t> view_last_index(int64_t offset, const std::vector<int64_t>& sizes,
                                       const std::vector<int64_t>& strides) {
  int64_t last = offset;
  for (size_t d = 0; d < sizes.size() && d < strides.size(); ++d) {
    if (sizes[d] == 0) return -1;
    int64_t step = 0;
    if (__builtin_mul_overflow(sizes[d] - 1, strides[d], &step) || __builtin_add_overflow(last, step, &last))
      return std::nullopt;
  }
  return last;
}

void append_view_ops(std::vector<BuiltinOp>& out) {
  out.push_back(BuiltinOp{"GraftStridedCopy", 11, infer_strided_copy, strided_copy_cpu});
}

}  // namespace graft
