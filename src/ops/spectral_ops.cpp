// Schemas of the spectral ops: DFT (opset 17 with the axis attribute; opset 20 with the axis as
// input 2) and STFT (opset 17). Kernels: src/backends/cpu/spectral.cpp, which also holds the
// attribute readers and layout checks both sides share (errors name the attribute or input).
//
// The lengths (dft_length, frame_step, frame_length, DFT-20's axis) are input values: known at
// build time when they are constants, otherwise the dims they decide are fresh symbols that the
// run-time inference (every input value on the host) resolves.
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/spectral.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {
namespace {

using namespace infer;

// Input i is a scalar (rank 0 or [1]) when its shape is known.
Status require_scalar_shape(const InferContext& ctx, size_t i, const char* what) {
  const TensorDesc& d = ctx.input(i);
  if (d.shape && !(d.rank() == 0 || (d.rank() == 1 && (*d.shape)[0] == 1)))
    return ctx.fail("input ", what, " must be a scalar, got ", d.to_string());
  return Status::ok();
}

// The value of scalar input i: nullopt when unknown at this point, an error when it holds other
// than one value.
Result<std::optional<Dim>> scalar_value(const InferContext& ctx, size_t i, const char* what) {
  auto v = ctx.input_dims_value(i);
  if (!v) return std::optional<Dim>();
  if (v->size() != 1)
    return ctx.fail("input ", what, " must hold one value, got ", static_cast<int64_t>(v->size()));
  return std::optional<Dim>((*v)[0]);
}

// A length that must be in [1, kMaxDftLength] when it is a number.
Status check_length_dim(const InferContext& ctx, const Dim& d, const char* what) {
  if (!d.is_const()) return Status::ok();
  if (d.value() < 1) return ctx.fail(what, " must be >= 1, got ", d.value());
  if (d.value() > kMaxDftLength)
    return error(StatusCode::kUnsupported, what, " ", d.value(),
                 " exceeds the longest transform graft computes (", kMaxDftLength, ")");
  return Status::ok();
}

// Last dim 1 (real) or 2 (complex) when it is a number; onesided only for real input.
Status check_complex_dim(const InferContext& ctx, const Dim& c, bool onesided, const char* what) {
  if (!c.is_const()) return Status::ok();
  if (c.value() != 1 && c.value() != 2)
    return ctx.fail(what, "'s last dim must be 1 (real) or 2 (complex), got ", c.value());
  if (onesided && c.value() == 2)
    return Status(
               ctx.fail("is 1 but the ", what, " is complex (last dim 2); onesided output needs real input"))
        .with_attribute("onesided");
  return Status::ok();
}

Status infer_dft(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  GRAFT_ASSIGN_OR_RETURN(DftAttrs a, dft_attrs(ctx.attrs(), ctx.opset()));
  const DataType dt = ctx.input(0).dtype;
  std::optional<Dim> n;  // the transform length, when dft_length is given and known
  bool n_unknown = false;
  if (ctx.has_input(1)) {
    GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, {kI32, kI64}));
    GRAFT_RETURN_IF_ERROR(require_scalar_shape(ctx, 1, "dft_length"));
    GRAFT_ASSIGN_OR_RETURN(n, scalar_value(ctx, 1, "dft_length"));
    if (n) GRAFT_RETURN_IF_ERROR(check_length_dim(ctx, *n, "dft_length"));
    n_unknown = !n;
  }
  int64_t axis = a.axis;
  bool axis_known = true;
  if (ctx.has_input(2)) {
    if (ctx.opset() < 20)
      return ctx.fail("takes the axis as input 2 only from opset 20 on (this model is opset ", ctx.opset(),
                      ", where axis is an attribute)");
    GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 2, {kI64}));
    GRAFT_RETURN_IF_ERROR(require_scalar_shape(ctx, 2, "axis"));
    GRAFT_ASSIGN_OR_RETURN(std::optional<Dim> v, scalar_value(ctx, 2, "axis"));
    axis_known = v && v->is_const();
    if (axis_known) axis = v->value();
  }
  const TensorDesc& x = ctx.input(0);
  if (!x.shape) {
    ctx.set_output(0, desc_of(dt, std::nullopt));
    return Status::ok();
  }
  const int64_t rank = x.rank();
  if (rank < 2) return ctx.fail("input must be [signal dims..., 1 or 2] (rank >= 2), got ", x.to_string());
  GRAFT_RETURN_IF_ERROR(check_complex_dim(ctx, x.shape->back(), a.onesided, "input"));
  Shape out = *x.shape;
  out.back() = Dim(2);
  if (!axis_known) {
    // Any signal axis may be the transformed one: only the rank and the re/im axis are known.
    for (int64_t d = 0; d < rank - 1; ++d) out[static_cast<size_t>(d)] = ctx.unknown_dim();
    ctx.set_output(0, desc_of(dt, out));
    return Status::ok();
  }
  auto ax = normalize_dft_axis(axis, rank);
  if (!ax) {
    Status st = ctx.fail(ax.status().message());
    if (a.axis_is_attribute) st.with_attribute("axis");
    return st;
  }
  const Dim& len = (*x.shape)[static_cast<size_t>(*ax)];
  if (!ctx.has_input(1)) {
    if (len.is_const() && len.value() == 0)
      return ctx.fail("the DFT axis ", *ax, " of input ", x.to_string(),
                      " is empty and no dft_length is given");
    GRAFT_RETURN_IF_ERROR(check_length_dim(ctx, len, "DFT length (the axis' extent)"));
  }
  Dim bins;
  if (n_unknown) {
    bins = ctx.unknown_dim();
  } else {
    const Dim nn = n ? *n : len;
    bins = a.onesided ? floor_div(nn, Dim(2)) + Dim(1) : nn;
  }
  out[static_cast<size_t>(*ax)] = bins;
  // With every number known, the kernel's own checks (work bound included) run here already.
  if (shape_is_static(*x.shape) && !n_unknown && (!n || n->is_const())) {
    auto l = dft_layout(shape_values(*x.shape), *ax,
                             n ? std::optional<int64_t>(n->value()) : std::nullopt, a);
    if (!l) return l.status();
  }
  ctx.set_output(0, desc_of(dt, out));
  return Status::ok();
}

Status infer_stft(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  GRAFT_ASSIGN_OR_RETURN(bool onesided, stft_onesided(ctx.attrs()));
  const DataType dt = ctx.input(0).dtype;
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, {kI32, kI64}));
  GRAFT_RETURN_IF_ERROR(require_scalar_shape(ctx, 1, "frame_step"));
  GRAFT_ASSIGN_OR_RETURN(std::optional<Dim> step, scalar_value(ctx, 1, "frame_step"));
  if (step && step->is_const() && step->value() < 1)
    return ctx.fail("frame_step must be >= 1, got ", step->value());
  std::optional<Dim> wlen;
  if (ctx.has_input(2)) {
    const TensorDesc& w = ctx.input(2);
    if (w.dtype != dt)
      return ctx.fail("window has dtype ", dtype_name(w.dtype), " but signal has ", dtype_name(dt));
    if (w.shape && w.rank() != 1) return ctx.fail("window must be 1-D, got ", w.to_string());
    if (w.shape) wlen = (*w.shape)[0];
  }
  std::optional<Dim> flen;
  bool flen_given = ctx.has_input(3);
  if (flen_given) {
    GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 3, {kI32, kI64}));
    GRAFT_RETURN_IF_ERROR(require_scalar_shape(ctx, 3, "frame_length"));
    GRAFT_ASSIGN_OR_RETURN(flen, scalar_value(ctx, 3, "frame_length"));
    if (flen) GRAFT_RETURN_IF_ERROR(check_length_dim(ctx, *flen, "frame_length"));
  }
  if (flen && wlen && flen->is_const() && wlen->is_const() && flen->value() != wlen->value())
    return ctx.fail("window has ", wlen->value(), " samples but frame_length is ", flen->value(),
                    "; they must agree");
  const TensorDesc& x = ctx.input(0);
  if (!x.shape) {
    ctx.set_output(0, desc_of(dt, Shape{ctx.unknown_dim(), ctx.unknown_dim(), ctx.unknown_dim(), Dim(2)}));
    return Status::ok();
  }
  if (x.rank() != 3) return ctx.fail("signal must be [batch, length, 1 or 2], got ", x.to_string());
  GRAFT_RETURN_IF_ERROR(check_complex_dim(ctx, (*x.shape)[2], onesided, "signal"));
  const Dim& len = (*x.shape)[1];
  // The frame length: frame_length, else the window's length, else the whole signal.
  std::optional<Dim> fl = flen_given ? flen : ctx.has_input(2) ? wlen : std::optional<Dim>(len);
  if (fl && !flen_given) GRAFT_RETURN_IF_ERROR(check_length_dim(ctx, *fl, "frame length"));
  if (fl && fl->is_const() && len.is_const() && fl->value() > len.value())
    return ctx.fail("frame length ", fl->value(), " exceeds the signal length ", len.value(), " (signal ",
                    x.to_string(), "): not one frame fits");
  Dim frames = fl && step ? floor_div(len - *fl, *step) + Dim(1) : ctx.unknown_dim();
  Dim bins = !fl ? ctx.unknown_dim() : onesided ? floor_div(*fl, Dim(2)) + Dim(1) : *fl;
  if (shape_is_static(*x.shape) && step && step->is_const() && fl && fl->is_const() &&
      (!wlen || wlen->is_const())) {
    auto l = stft_layout(shape_values(*x.shape), step->value(),
                              wlen ? std::optional<int64_t>(wlen->value()) : std::nullopt,
                              flen ? std::optional<int64_t>(flen->value()) : std::nullopt, onesided);
    if (!l) return l.status();
  }
  ctx.set_output(0, desc_of(dt, Shape{(*x.shape)[0], frames, bins, Dim(2)}));
  return Status::ok();
}

}  // namespace

void append_spectral_ops(std::vector<OpEntry>& out) {
  const std::vector<OpEntry> ops = {
      {"DFT", 17, infer_dft, cpu::dft},
      {"STFT", 17, infer_stft, cpu::stft},
  };
  out.insert(out.end(), ops.begin(), ops.end());
}

}  // namespace graft
