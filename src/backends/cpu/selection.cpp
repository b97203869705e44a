#include "backends/cpu/selection.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/element_traits.h"
#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"
#include "core/checked_math.h"

namespace graft::cpu {
namespace {

Tensor* output_or_null(const ExecContext& ctx, size_t i) {
  return i < ctx.outputs.size() ? ctx.outputs[i] : nullptr;
}

std::string dims_text(DataType t, const std::vector<int64_t>& d) {
  return TensorDesc(t, shape_from_values(d)).to_string();
}

// Three-way comparison of two elements under Unique's order: numbers by value (so -0 == 0), NaN
// after every number and equal to every NaN. A plain `<` would make NaN incomparable, and a sort
// over it is undefined behaviour.
template <typename C>
int compare_values(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    const bool na = std::isnan(a), nb = std::isnan(b);
    if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
  }
  return a < b ? -1 : (b < a ? 1 : 0);
}

}  // namespace

// ---- MaxUnpool --------------------------------------------------------------------------------

Status max_unpool(ExecContext& ctx) {
  const Tensor* x = input_or_null(ctx, 0);
  const Tensor* ind = input_or_null(ctx, 1);
  const Tensor* shape = input_or_null(ctx, 2);
  Tensor* y = output_or_null(ctx, 0);
  if (!x || !ind || !y || !y->defined())
    return error(StatusCode::kInternal, "MaxUnpool kernel called without X, I or its output");
  if (ind->dtype() != DataType::kInt64 || ind->dims() != x->dims())
    return error(StatusCode::kInvalidModel, "input 1 (I) must be int64 with X's dims ",
                 dims_text(x->dtype(), x->dims()), ", got ", dims_text(ind->dtype(), ind->dims()));
  if (x->rank() < 3)
    return error(StatusCode::kInvalidModel, "input 0 (X) must be (N, C, spatial...), got ",
                 dims_text(x->dtype(), x->dims()));
  GRAFT_ASSIGN_OR_RETURN(MaxUnpoolAttrs a, max_unpool_attrs(attrs_of(ctx), x->rank() - 2));
  std::optional<std::vector<int64_t>> os;
  if (shape) {
    if (shape->dtype() != DataType::kInt64 || shape->rank() != 1)
      return error(StatusCode::kInvalidModel, "input 2 (output_shape) must be a 1-D int64 tensor, got ",
                   dims_text(shape->dtype(), shape->dims()));
    os = shape->to_int64_vector();
  }
  GRAFT_ASSIGN_OR_RETURN(MaxUnpoolShape sh, max_unpool_shape(a, x->dims(), os));
  if (y->dims() != sh.out || y->dtype() != x->dtype())
    return error(StatusCode::kInternal, "MaxUnpool output was allocated as ",
                 dims_text(y->dtype(), y->dims()), " but the kernel computed ",
                 dims_text(x->dtype(), sh.out));
  const int64_t n = x->numel(), total = numel_of(sh.unpooled);
  const int64_t* idx = ind->data_as<const int64_t>();
  // Every index is checked before anything is written: a bad one leaves no half-scattered output.
  for (int64_t i = 0; i < n; ++i)
    if (idx[i] < 0 || idx[i] >= total)
      return error(StatusCode::kInvalidArgument, "input 1 (I) element ", i, " is ", idx[i],
                   ", outside the unpooled tensor's ", total, " elements ", ints_to_string(sh.unpooled));
  // All-zero bytes are +0 in every float type (and 0 in every integer one).
  const size_t es = dtype_size(x->dtype());
  if (y->numel() > 0) std::memset(y->data(), 0, y->nbytes());
  const auto* src = static_cast<const unsigned char*>(x->data());
  auto* dst = static_cast<unsigned char*>(y->data());
  const bool same = sh.out == sh.unpooled;
  std::vector<int64_t> pos;
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = idx[i];
    if (!same) {  // the same multi-index in the larger output
      unravel(idx[i], sh.unpooled, pos);
      off = 0;
      for (size_t d = 0; d < pos.size(); ++d) off = off * sh.out[d] + pos[d];
    }
    std::memcpy(dst + static_cast<size_t>(off) * es, src + static_cast<size_t>(i) * es, es);
  }
  return Status::ok();
}

// ---- Unique -----------------------------------------------------------------------------------

Status unique(ExecContext& ctx) {
  const Tensor* x = input_or_null(ctx, 0);
  if (!x || ctx.outputs.empty() || !ctx.outputs[0])
    return error(StatusCode::kInternal, "Unique kernel called without X or its output Y");
  const AttributeMap& attrs = attrs_of(ctx);
  GRAFT_ASSIGN_OR_RETURN(int64_t sorted, attrs.get_int("sorted", 1));
  if (sorted != 0 && sorted != 1) return attr_error("sorted", "must be 0 or 1, got ", sorted);
  // The view [outer, n, inner]: n "slices" (elements when flattened), each of outer * inner
  // elements, compared lexicographically in row-major order of the remaining axes (numpy's order).
  const bool has_axis = attrs.has("axis");
  int64_t axis = 0;
  AxisView v;
  if (has_axis) {
    GRAFT_ASSIGN_OR_RETURN(int64_t a, attrs.get_int("axis", 0));
    auto na = normalize_axis(a, x->rank());
    if (!na) return Status(na.status()).with_attribute("axis");
    axis = na.value();
    v = axis_view(x->dims(), axis, false);
  } else {
    v.n = x->numel();
  }
  const int64_t n = v.n, outer = v.outer, inner = v.inner, slice = outer * inner;

  // cmp(a, b): three-way comparison of slices a and b.
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::vector<int64_t> group_of(static_cast<size_t>(n));  // slice -> its group in sorted order
  std::vector<int64_t> first;                             // per group (sorted order): first slice
  std::vector<int64_t> count;                             // per group: how many slices
  Status st = visit_all(
      x->dtype(),
      [&](auto tr) -> Status {
        using Tr = decltype(tr);
        const void* data = x->data();
        auto cmp = [&](int64_t a, int64_t b) {
          for (int64_t k = 0; k < slice; ++k) {
            const int64_t o = k / inner, i = k % inner;
            const int c = compare_values(Tr::load(data, (o * n + a) * inner + i),
                                         Tr::load(data, (o * n + b) * inner + i));
            if (c != 0) return c;
          }
          return 0;
        };
        // Stable, so within a group of equal slices the first occurrence comes first.
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
        for (size_t r = 0; r < order.size(); ++r) {
          if (r == 0 || cmp(order[r - 1], order[r]) != 0) {
            first.push_back(order[r]);
            count.push_back(0);
          }
          group_of[static_cast<size_t>(order[r])] = static_cast<int64_t>(first.size()) - 1;
          ++count.back();
        }
        return Status::ok();
      },
      [&](DataType t) { return bad_dtype(ctx, t); });
  GRAFT_RETURN_IF_ERROR(st);

  // Output position of each group: sorted order as it is, or by first occurrence.
  const int64_t u = static_cast<int64_t>(first.size());
  std::vector<int64_t> pos_of_group(static_cast<size_t>(u));
  std::vector<int64_t> group_at(static_cast<size_t>(u));  // output position -> group
  std::iota(group_at.begin(), group_at.end(), 0);
  if (!sorted)
    std::sort(group_at.begin(), group_at.end(), [&](int64_t a, int64_t b) {
      return first[static_cast<size_t>(a)] < first[static_cast<size_t>(b)];
    });
  for (int64_t p = 0; p < u; ++p) pos_of_group[static_cast<size_t>(group_at[static_cast<size_t>(p)])] = p;

  // Y: X's dims with the axis (or the flattened length) replaced by u; slices copied bytewise so
  // the first occurrence's exact bits (-0, NaN payloads) are kept.
  std::vector<int64_t> y_dims = has_axis ? x->dims() : std::vector<int64_t>{u};
  if (has_axis) y_dims[static_cast<size_t>(axis)] = u;
  GRAFT_ASSIGN_OR_RETURN(Tensor * y, allocate_output(ctx, 0, x->dtype(), y_dims));
  const size_t es = dtype_size(x->dtype());
  const auto* src = static_cast<const unsigned char*>(x->data());
  auto* dst = static_cast<unsigned char*>(y->data());
  const size_t block = static_cast<size_t>(inner) * es;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t p = 0; p < u; ++p) {
      const int64_t s = first[static_cast<size_t>(group_at[static_cast<size_t>(p)])];
      if (block)
        std::memcpy(dst + static_cast<size_t>(o * u + p) * block,
                    src + static_cast<size_t>(o * n + s) * block, block);
    }

  auto write_i64 = [&](size_t i, int64_t len, auto value_at) -> Status {
    if (!output_or_null(ctx, i)) return Status::ok();  // omitted optional output
    GRAFT_ASSIGN_OR_RETURN(Tensor * t, allocate_output(ctx, i, DataType::kInt64, {len}));
    int64_t* out = t->data_as<int64_t>();
    for (int64_t k = 0; k < len; ++k) out[k] = value_at(k);
    return Status::ok();
  };
  GRAFT_RETURN_IF_ERROR(write_i64(
      1, u, [&](int64_t p) { return first[static_cast<size_t>(group_at[static_cast<size_t>(p)])]; }));
  GRAFT_RETURN_IF_ERROR(write_i64(
      2, n, [&](int64_t s) { return pos_of_group[static_cast<size_t>(group_of[static_cast<size_t>(s)])]; }));
  GRAFT_RETURN_IF_ERROR(write_i64(
      3, u, [&](int64_t p) { return count[static_cast<size_t>(group_at[static_cast<size_t>(p)])]; }));
  return Status::ok();
}

}  // namespace graft::cpu
