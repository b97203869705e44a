// Schemas of the data-movement ops the backend test suite exercises beyond the shape ops: OneHot,
// CumSum, Compress, DepthToSpace, SpaceToDepth, Trilu and Size. (The rest of this once larger file
// went to the elementwise, reduce-and-normalize, selection and gather-scatter families.)
#include <algorithm>
#include <string>

#include "backends/cpu/extra.h"
#include "core/checked_math.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {
namespace {

using namespace infer;

// ---- data movement ----------------------------------------------------------------------------

Status infer_trilu(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  auto upper = ctx.attrs().get_int("upper", 1);
  if (!upper) return Status(upper.status()).with_attribute("upper");
  if (ctx.has_input(1)) {
    if (ctx.input(1).dtype != kI64) return ctx.fail("input k must be int64, got ", dtype_name(ctx.input(1).dtype));
    if (ctx.input(1).shape && ctx.input(1).rank() != 0)
      return ctx.fail("input k must be a scalar, got ", ctx.input(1).to_string());
  }
  if (ctx.input(0).shape && ctx.input(0).rank() < 2)
    return ctx.fail("input 0 must have rank >= 2, got ", ctx.input(0).to_string());
  ctx.set_output(0, ctx.input(0));
  return Status::ok();
}

Status infer_size(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  ctx.set_output(0, desc_of(kI64, Shape{}));
  // The element count is shape arithmetic: keep it symbolic so shape subgraphs resolve.
  if (const auto& s = ctx.input(0).shape) {
    Dim n(1);
    for (const Dim& d : *s) n = n * d;
    ctx.set_output_sym_value(0, {n});
  }
  return Status::ok();
}

Status infer_one_hot(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kNumericTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, kNumericTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 2, kAllTypes));
  auto axis = ctx.attrs().get_int("axis", -1);
  if (!axis) return Status(axis.status()).with_attribute("axis");
  if (ctx.input(2).shape && ctx.input(2).rank() >= 0 &&
      !(ctx.input(2).rank() == 1 && (*ctx.input(2).shape)[0] == 2) && shape_is_static(*ctx.input(2).shape))
    return ctx.fail("input values must have shape [2] (off, on), got ", ctx.input(2).to_string());
  const TensorDesc& ind = ctx.input(0);
  if (!ind.shape) {
    ctx.set_output(0, desc_of(ctx.input(2).dtype, std::nullopt));
    return Status::ok();
  }
  auto a = normalize_axis(axis.value(), ind.rank() + 1);
  if (!a) return Status(a.status()).with_attribute("axis");
  Dim depth = ctx.unknown_dim();
  if (const Tensor* t = ctx.input_value(1)) {
    if (t->numel() != 1) return ctx.fail("input depth must hold one value, got ", t->numel());
    const double d = t->get(0);
    const auto dv = checked_int64(d);  // a float depth may be beyond int64's range: its cast would be UB
    if (!(d >= 1) || !dv) return ctx.fail("input depth must be a positive integer, got ", d);
    depth = Dim(*dv);
  } else if (auto dv = ctx.input_dims_value(1); dv && dv->size() == 1) {
    depth = (*dv)[0];
  }
  Shape s = *ind.shape;
  s.insert(s.begin() + a.value(), depth);
  ctx.set_output(0, desc_of(ctx.input(2).dtype, s));
  return Status::ok();
}

// DepthToSpace (to_space) and SpaceToDepth over NCHW.
Status infer_depth_space(InferContext& ctx, bool to_space) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  auto bs = ctx.attrs().get_int("blocksize", 0);
  if (!bs) return Status(bs.status()).with_attribute("blocksize");
  if (!ctx.attrs().find("blocksize")) return Status(ctx.fail("is required")).with_attribute("blocksize");
  if (bs.value() < 1) return Status(ctx.fail("must be >= 1, got ", bs.value())).with_attribute("blocksize");
  if (to_space) {
    auto mode = ctx.attrs().get_string("mode", "DCR");
    if (!mode) return Status(mode.status()).with_attribute("mode");
    if (mode.value() != "DCR" && mode.value() != "CRD")
      return Status(ctx.fail("must be DCR or CRD, got '", mode.value(), "'")).with_attribute("mode");
  }
  const TensorDesc& x = ctx.input(0);
  if (!x.shape) {
    ctx.set_output(0, x);
    return Status::ok();
  }
  if (x.rank() != 4) return ctx.fail("input must be 4-D NCHW, got ", x.to_string());
  const Shape& in = *x.shape;
  const Dim b(bs.value()), bb(bs.value() * bs.value());
  auto divisible = [&](const Dim& d, const Dim& by, const char* what) -> Status {
    if (d.is_const() && d.value() % by.value() != 0)
      return ctx.fail(what, " ", d.value(), " of ", x.to_string(), " is not divisible by ", by.value());
    return Status::ok();
  };
  Shape s;
  if (to_space) {
    GRAFT_RETURN_IF_ERROR(divisible(in[1], bb, "channels"));
    s = {in[0], floor_div(in[1], bb), in[2] * b, in[3] * b};
  } else {
    GRAFT_RETURN_IF_ERROR(divisible(in[2], b, "height"));
    GRAFT_RETURN_IF_ERROR(divisible(in[3], b, "width"));
    s = {in[0], in[1] * bb, floor_div(in[2], b), floor_div(in[3], b)};
  }
  ctx.set_output(0, desc_of(x.dtype, s));
  return Status::ok();
}
Status infer_depth_to_space(InferContext& ctx) { return infer_depth_space(ctx, true); }
Status infer_space_to_depth(InferContext& ctx) { return infer_depth_space(ctx, false); }

Status infer_compress(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, {kBool}));
  const TensorDesc& x = ctx.input(0);
  const TensorDesc& cond = ctx.input(1);
  if (cond.shape && cond.rank() != 1) return ctx.fail("condition must be 1-D, got ", cond.to_string());
  const AttrValue* axis_attr = ctx.attrs().find("axis");
  if (!x.shape) {
    ctx.set_output(0, desc_of(x.dtype, std::nullopt));
    return Status::ok();
  }
  Dim n = ctx.unknown_dim();
  if (const Tensor* c = ctx.input_value(1); c && c->device() == DeviceType::kCPU) {
    const auto v = c->to_int64_vector();
    n = Dim(static_cast<int64_t>(std::count_if(v.begin(), v.end(), [](int64_t e) { return e != 0; })));
  }
  if (!axis_attr) {  // no axis: the input is flattened first
    ctx.set_output(0, desc_of(x.dtype, Shape{n}));
    return Status::ok();
  }
  auto axis = ctx.attrs().get_int("axis", 0);
  if (!axis) return Status(axis.status()).with_attribute("axis");
  auto a = normalize_axis(axis.value(), x.rank());
  if (!a) return Status(a.status()).with_attribute("axis");
  Shape s = *x.shape;
  s[a.value()] = n;
  ctx.set_output(0, desc_of(x.dtype, s));
  return Status::ok();
}

}  // namespace

void append_extra_ops(std::vector<OpEntry>& out) {
  const std::vector<OpEntry> ops = {
      {"Trilu", 14, infer_trilu, cpu::trilu},
      keeps_float32({"Size", 1, infer_size, cpu::size}),
      {"OneHot", 11, infer_one_hot, cpu::one_hot},
      {"DepthToSpace", 11, infer_depth_to_space, cpu::depth_to_space},
      {"SpaceToDepth", 11, infer_space_to_depth, cpu::space_to_depth},
      {"Compress", 11, infer_compress, cpu::compress},
  };
  out.insert(out.end(), ops.begin(), ops.end());
}

}  // namespace graft
