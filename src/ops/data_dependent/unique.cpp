// Unique's definition and CPU reference (CUDA: unique.cu). Its count of distinct elements is one
// symbol shared by Y, indices and counts; the CPU kernel allocates its outputs once it has counted.
#include "ops/data_dependent/data_dependent.h"

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
#include "graph/graph.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- CPU reference --------------------------------------------------------------------------
// The kernel allocates its outputs with allocate_output once it has counted.

namespace cpu {

namespace {

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

// Unique (opset 11): the distinct elements of X (axis absent: X flattened) or its distinct slices
// along `axis`, ascending (sorted=1, the default; lexicographic for slices) or in order of first
// occurrence (sorted=0), with the optional outputs indices (first occurrence of each), inverse
// indices (for every element or slice of X, its position in Y) and counts. Floats compare by value
// (-0 equals 0, the first occurrence's bits are kept) and every NaN equals every other NaN and
// sorts after all numbers, as numpy.unique does.
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

}  // namespace cpu

// ---- schema ---------------------------------------------------------------------------------

namespace {

using namespace infer;

// Unique (opset 11): X of any type -> Y (X's dtype), indices, inverse_indices, counts (int64, 1-D);
// every output after Y is optional.
Status infer_unique(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  if (ctx.num_outputs() < 1 || ctx.num_outputs() > 4)
    return ctx.fail("has 1 to 4 outputs (Y, indices, inverse_indices, counts), got ",
                    static_cast<uint64_t>(ctx.num_outputs()));
  auto sorted = ctx.attrs().get_int("sorted", 1);
  if (!sorted) return Status(sorted.status()).with_attribute("sorted");
  if (sorted.value() != 0 && sorted.value() != 1)
    return Status(ctx.fail("must be 0 or 1, got ", sorted.value())).with_attribute("sorted");
  const TensorDesc& x = ctx.input(0);
  const bool has_axis = ctx.attrs().has("axis");
  int64_t axis = 0;
  if (has_axis) {
    auto a = ctx.attrs().get_int("axis", 0);
    if (!a) return Status(a.status()).with_attribute("axis");
    axis = a.value();
  }
  if (!x.shape) {
    // Rank unknown: Y's rank is known only when flattened.
    const Dim u = ctx.unknown_dim();
    ctx.set_output(0, desc_of(x.dtype, has_axis ? std::nullopt : std::optional<Shape>(Shape{u})));
    ctx.set_output(1, desc_of(kI64, Shape{u}));
    ctx.set_output(2, desc_of(kI64, Shape{ctx.unknown_dim()}));
    ctx.set_output(3, desc_of(kI64, Shape{u}));
    return Status::ok();
  }
  const Shape& s = *x.shape;
  // n: how many elements (flattened) or slices (along the axis) are compared. None at all means no
  // distinct one; otherwise the count is known only once the kernel has looked at the data.
  Dim n(1);
  if (has_axis) {
    auto na = normalize_axis(axis, x.rank());
    if (!na) return Status(na.status()).with_attribute("axis");
    axis = na.value();
    n = s[static_cast<size_t>(axis)];
  } else {
    bool known = true;
    int64_t total = 1;
    for (const Dim& d : s) {
      known = known && d.is_const();
      if (known) total *= d.value();  // a static shape's element count, checked when it was made
      if (d.is_const() && d.value() == 0) {
        known = true;
        total = 0;
        break;
      }
    }
    n = known ? Dim(total) : ctx.unknown_dim();
  }
  const Dim u = n.is_const() && n.value() == 0 ? Dim(0) : ctx.unknown_dim();
  Shape y = has_axis ? s : Shape{u};
  if (has_axis) y[static_cast<size_t>(axis)] = u;
  ctx.set_output(0, desc_of(x.dtype, y));
  ctx.set_output(1, desc_of(kI64, Shape{u}));
  ctx.set_output(2, desc_of(kI64, Shape{n}));
  ctx.set_output(3, desc_of(kI64, Shape{u}));
  return Status::ok();
}

}  // namespace

void append_unique_ops(std::vector<OpEntry>& out) {
  out.push_back(keeps_float32({"Unique", 11, infer_unique, cpu::unique, /*output_shape_from_kernel=*/true}));
}

}  // namespace graft
