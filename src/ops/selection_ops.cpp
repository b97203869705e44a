// Schemas of Unique and MaxUnpool (kernels: src/backends/cpu/selection.cpp, which also holds the
// attribute and shape readers both sides share, so errors read the same).
//
// Unique's output sizes depend on the data: the count of distinct elements is one fresh symbol
// (InferContext::unknown_dim) shared by Y, indices and counts, at build time and at run time alike;
// the kernel allocates those outputs once it has counted (OpEntry::output_shape_from_kernel), as
// NonZero does. MaxUnpool's output shape comes from the attributes or from its output_shape input,
// whose value run-time inference has, so it needs no such mechanism.
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/selection.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {
namespace {

using namespace infer;

// ---- MaxUnpool ---------------------------------------------------------------------------------

// MaxUnpool (opset 9/11): X (N, C, spatial...), I (int64, X's shape), optional output_shape (int64
// [rank]) -> Y of X's dtype.
Status infer_max_unpool(InferContext& ctx) {
  if (ctx.num_inputs() < 2 || ctx.num_inputs() > 3)
    return ctx.fail("takes 2 or 3 inputs (X, I, output_shape), got ",
                    static_cast<uint64_t>(ctx.num_inputs()));
  // bfloat16 joined the type list in opset 22.
  std::vector<DataType> types = {kF16, kF32, kF64};
  if (ctx.opset() >= 22) types.push_back(kBF16);
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, types));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, {kI64}));
  if (ctx.has_input(2)) GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 2, {kI64}));
  const TensorDesc& x = ctx.input(0);
  const TensorDesc& ind = ctx.input(1);

  // The number of spatial axes: X's rank - 2, or kernel_shape's length when the rank is unknown.
  int64_t spatial = -1;
  if (x.shape) {
    if (x.rank() < 3) return ctx.fail("input 0 (X) must be (N, C, spatial...), got ", x.to_string());
    spatial = x.rank() - 2;
  } else {
    auto k = ctx.attrs().get_ints("kernel_shape", {});
    if (!k) return Status(k.status()).with_attribute("kernel_shape");
    spatial = static_cast<int64_t>(k.value().size());
  }
  GRAFT_ASSIGN_OR_RETURN(MaxUnpoolAttrs a, max_unpool_attrs(ctx.attrs(), spatial));
  if (x.shape && ind.shape) {
    bool same = ind.rank() == x.rank();
    for (size_t d = 0; same && d < x.shape->size(); ++d) {
      const Dim &p = (*x.shape)[d], &q = (*ind.shape)[d];
      same = !(p.is_const() && q.is_const() && p.value() != q.value());
    }
    if (!same) return ctx.fail("input 1 (I) ", ind.to_string(), " must have X's shape ", x.to_string());
  }

  const int64_t rank = spatial + 2;
  Shape out;
  if (ctx.has_input(2)) {
    const TensorDesc& os = ctx.input(2);
    if (os.shape && (os.rank() != 1 || ((*os.shape)[0].is_const() && (*os.shape)[0].value() != rank)))
      return ctx.fail("input 2 (output_shape) must be a 1-D tensor of ", rank, " entries, got ",
                      os.to_string());
    if (auto v = ctx.input_dims_value(2)) {
      // Fully known: the shared reader checks it against X (rank, N, C, no negative entry).
      bool all_const = x.shape && shape_is_static(*x.shape);
      for (const Dim& d : *v) all_const = all_const && d.is_const();
      if (all_const) {
        std::vector<int64_t> o;
        for (const Dim& d : *v) o.push_back(d.value());
        auto dims = max_unpool_shape(a, shape_values(*x.shape), o);
        if (!dims) return dims.status();
      }
      if (static_cast<int64_t>(v->size()) != rank)
        return ctx.fail("input 2 (output_shape) has ", static_cast<uint64_t>(v->size()),
                        " entries, X has rank ", rank);
      out = *v;
    } else {
      for (int64_t d = 0; d < rank; ++d) out.push_back(ctx.unknown_dim());
    }
  } else if (x.shape) {
    out = {(*x.shape)[0], (*x.shape)[1]};
    for (int64_t d = 0; d < spatial; ++d) {
      const Dim& in = (*x.shape)[static_cast<size_t>(d + 2)];
      if (!in.is_const()) {
        out.push_back(ctx.unknown_dim());
        continue;
      }
      GRAFT_ASSIGN_OR_RETURN(int64_t e, max_unpool_extent(a, static_cast<size_t>(d), in.value()));
      out.push_back(Dim(e));
    }
  } else {
    for (int64_t d = 0; d < rank; ++d) out.push_back(ctx.unknown_dim());
  }
  ctx.set_output(0, desc_of(x.dtype, out));
  return Status::ok();
}

// ---- Unique ------------------------------------------------------------------------------------

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

void append_selection_ops(std::vector<OpEntry>& out) {
  const std::vector<OpEntry> ops = {
      keeps_float32({"Unique", 11, infer_unique, cpu::unique, /*output_shape_from_kernel=*/true}),
      {"MaxUnpool", 9, infer_max_unpool, cpu::max_unpool},
  };
  out.insert(out.end(), ops.begin(), ops.end());
}

}  // namespace graft
