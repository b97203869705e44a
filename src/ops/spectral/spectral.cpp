// DFT (opset 17 with the axis attribute; opset 20 with the axis as input 2) and STFT (opset 17),
// which share one sum: their attribute readers and layouts (spectral.h), their CPU reference kernels,
// and their schema rows with inference. Their CUDA ops are in spectral.cu; MelWeightMatrix has files
// of its own (mel_weight_matrix.cpp and .cu).
#include "ops/spectral/spectral.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"
#include "core/checked_math.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- attributes and shapes (spectral.h) -----------------------------------------------------

namespace {

Result<bool> flag_attr(const AttributeMap& attrs, const char* name, int64_t def) {
  auto r = attrs.get_int(name, def);
  if (!r) return Status(r.status()).with_attribute(name);
  if (r.value() != 0 && r.value() != 1) return attr_error(name, "must be 0 or 1, got ", r.value());
  return r.value() == 1;
}

// a * b * ... with every step checked; nullopt on overflow.
std::optional<int64_t> product(std::initializer_list<int64_t> v) {
  int64_t p = 1;
  for (int64_t x : v)
    if (x < 0 || !checked_mul(p, x, &p)) return std::nullopt;
  return p;
}

// The work and output bounds every layout must meet before anything is allocated or summed.
Status check_work(const SpectralLayout& l, const char* op) {
  auto work = product({l.batch, l.frames, l.bins, l.inner, l.terms});
  if (!work || *work > kMaxSpectralTerms)
    return error(StatusCode::kUnsupported, op, " would take ",
                 work ? std::to_string(*work) : std::string("over 2^63"),
                 " complex multiply-adds (bins times samples per bin); graft's naive kernel stops at ",
                 kMaxSpectralTerms);
  if (!product({l.batch, l.frames, l.bins, l.inner, 2}))
    return error(StatusCode::kUnsupported, op, " output element count overflows int64");
  return Status::ok();
}

Status check_length(int64_t n, const char* what) {
  if (n > kMaxDftLength)
    return error(StatusCode::kUnsupported, what, " ", n, " exceeds the longest transform graft computes (",
                 kMaxDftLength, ")");
  return Status::ok();
}

}  // namespace

Result<DftAttrs> dft_attrs(const AttributeMap& attrs, int opset) {
  DftAttrs a;
  GRAFT_ASSIGN_OR_RETURN(a.inverse, flag_attr(attrs, "inverse", 0));
  GRAFT_ASSIGN_OR_RETURN(a.onesided, flag_attr(attrs, "onesided", 0));
  if (opset >= 20) {
    // Opset 20 moved the axis to an input with another default; an attribute left over from the
    // opset 17 form would silently transform a different axis if it were ignored.
    if (attrs.has("axis")) return attr_error("axis", "is input 2 of DFT from opset 20 on, not an attribute");
    a.axis = -2;
    a.axis_is_attribute = false;
  } else {
    auto ax = attrs.get_int("axis", 1);
    if (!ax) return Status(ax.status()).with_attribute("axis");
    a.axis = ax.value();
  }
  return a;
}

Result<int64_t> normalize_dft_axis(int64_t axis, int64_t rank) {
  if (axis >= 0 && axis <= rank - 2) return axis;
  if (axis < 0 && axis >= -rank && axis <= -2) return axis + rank;
  return error(StatusCode::kInvalidModel, "axis ", axis, " is outside [", -rank, ", -2] and [0, ", rank - 2,
               "] for an input of rank ", rank, " (the last axis holds the real and imaginary parts)");
}

Result<SpectralLayout> dft_layout(const std::vector<int64_t>& x_dims, int64_t axis,
                                  std::optional<int64_t> dft_length, const DftAttrs& a) {
  const int64_t rank = static_cast<int64_t>(x_dims.size());
  if (rank < 2)
    return error(StatusCode::kInvalidModel, "input must be [signal dims..., 1 or 2] (rank >= 2), got ",
                 ints_to_string(x_dims));
  const int64_t c = x_dims.back();
  if (c != 1 && c != 2)
    return error(StatusCode::kInvalidModel, "input's last dim must be 1 (real) or 2 (complex), got ",
                 ints_to_string(x_dims));
  auto ax = normalize_dft_axis(axis, rank);
  if (!ax) {
    Status st = ax.status();
    if (a.axis_is_attribute) st.with_attribute("axis");
    return st;
  }
  const bool irfft = a.onesided && a.inverse;  // one-sided spectrum in, real signal out
  if (a.onesided && c == 2 && !irfft)
    return attr_error("onesided",
                      "is 1 but the input is complex (last dim 2); a onesided forward DFT takes real input");
  const int64_t len = x_dims[static_cast<size_t>(*ax)];
  int64_t n = len;
  if (irfft && !dft_length) {
    // numpy's irfft: an even signal of 2 * (bins - 1) samples unless dft_length says otherwise.
    if (len < 2)
      return error(StatusCode::kInvalidModel, "an inverse onesided DFT over ", len,
                   " bin(s) needs dft_length (2 * (bins - 1) samples would be none)");
    n = 2 * (len - 1);
  }
  if (dft_length) {
    n = *dft_length;
    if (n < 1) return error(StatusCode::kInvalidModel, "dft_length must be >= 1, got ", n);
    GRAFT_RETURN_IF_ERROR(check_length(n, "dft_length"));
  } else if (!irfft) {
    if (len < 1)
      return error(StatusCode::kInvalidModel, "the DFT axis ", *ax, " of input ", ints_to_string(x_dims),
                   " is empty and no dft_length is given");
    GRAFT_RETURN_IF_ERROR(check_length(n, "DFT length (the axis' extent)"));
  }
  SpectralLayout l;
  for (int64_t d = 0; d < rank - 1; ++d) {
    int64_t* p = d < *ax ? &l.batch : d > *ax ? &l.inner : nullptr;
    if (p && !checked_mul(*p, x_dims[static_cast<size_t>(d)], p))
      return error(StatusCode::kInvalidModel, "input ", ints_to_string(x_dims), " has too many elements");
  }
  l.n = n;
  l.bins = irfft ? n : a.onesided ? n / 2 + 1 : n;
  l.terms = irfft ? std::min(len, n / 2 + 1) : std::min(len, n);
  l.complex_input = c == 2;
  l.inverse = a.inverse;
  l.real_output = irfft;
  l.inner_stride = c;
  l.term_stride = l.inner * c;
  l.frame_stride = 0;
  auto bs = product({len, l.inner, c});
  if (!bs)
    return error(StatusCode::kInvalidModel, "input ", ints_to_string(x_dims), " has too many elements");
  l.batch_stride = *bs;
  GRAFT_RETURN_IF_ERROR(check_work(l, "DFT"));
  return l;
}

Result<bool> stft_onesided(const AttributeMap& attrs) { return flag_attr(attrs, "onesided", 1); }

Result<SpectralLayout> stft_layout(const std::vector<int64_t>& signal_dims, int64_t frame_step,
                                   std::optional<int64_t> window_length, std::optional<int64_t> frame_length,
                                   bool onesided) {
  if (signal_dims.size() != 3 || (signal_dims[2] != 1 && signal_dims[2] != 2))
    return error(StatusCode::kInvalidModel, "signal must be [batch, length, 1 (real) or 2 (complex)], got ",
                 ints_to_string(signal_dims));
  const int64_t batch = signal_dims[0], len = signal_dims[1], c = signal_dims[2];
  if (onesided && c == 2)
    return attr_error("onesided",
                      "is 1 (the default) but the signal is complex (last dim 2); a onesided STFT "
                      "takes a real signal, set onesided=0");
  if (frame_step < 1) return error(StatusCode::kInvalidModel, "frame_step must be >= 1, got ", frame_step);
  if (window_length && frame_length && *window_length != *frame_length)
    return error(StatusCode::kInvalidModel, "window has ", *window_length, " samples but frame_length is ",
                 *frame_length, "; they must agree");
  const int64_t fl = frame_length ? *frame_length : window_length ? *window_length : len;
  const char* what = frame_length    ? "frame_length"
                     : window_length ? "window length"
                                     : "frame length (signal length)";
  if (fl < 1) return error(StatusCode::kInvalidModel, what, " must be >= 1, got ", fl);
  GRAFT_RETURN_IF_ERROR(check_length(fl, what));
  if (fl > len)
    return error(StatusCode::kInvalidModel, what, " ", fl, " exceeds the signal length ", len, " (signal ",
                 ints_to_string(signal_dims), "): not one frame fits");
  SpectralLayout l;
  l.batch = batch;
  l.frames = (len - fl) / frame_step + 1;
  l.bins = onesided ? fl / 2 + 1 : fl;
  l.inner = 1;
  l.n = fl;
  l.terms = fl;
  l.complex_input = c == 2;
  l.inverse = false;
  l.term_stride = c;
  l.inner_stride = 0;
  auto fs = product({frame_step, c});
  auto bs = product({len, c});
  if (!fs || !bs)
    return error(StatusCode::kInvalidModel, "frame_step ", frame_step, " overflows int64 offsets");
  l.frame_stride = *fs;
  l.batch_stride = *bs;
  GRAFT_RETURN_IF_ERROR(check_work(l, "STFT"));
  return l;
}

Result<int64_t> integer_scalar(const Tensor& t, const char* what) {
  if (t.numel() != 1 || t.rank() > 1 || (t.dtype() != DataType::kInt32 && t.dtype() != DataType::kInt64))
    return error(StatusCode::kInvalidModel, "input ", what, " must be one int32 or int64 value, got ",
                 dtype_name(t.dtype()), " ", ints_to_string(t.dims()));
  if (t.device() != DeviceType::kCPU)
    return error(StatusCode::kInternal, "input ", what, " must be a host tensor");
  return t.to_int64_vector()[0];
}

// ---- CPU reference --------------------------------------------------------------------------
// DFT and STFT are one naive O(n^2) sum per output bin, accumulated in double and rounded once into
// the output dtype, over the layouts of spectral.h.

namespace cpu {

namespace {

constexpr double kPi = 3.14159265358979323846;
// Twiddles are tabulated up to this length (16 MiB of cos/sin); longer transforms, which the work
// bound keeps sparse, evaluate them per term instead of allocating a table as large as the output.
constexpr int64_t kMaxTwiddleTable = int64_t{1} << 20;

}  // namespace

// ---- the sum --------------------------------------------------------------------------------------

Status spectral_sum(const SpectralLayout& l, const Tensor& x, const Tensor* window, Tensor& y) {
  if (y.numel() != l.out_numel() || y.dtype() != x.dtype())
    return error(StatusCode::kInternal, "output has ", dtype_name(y.dtype()), " ", ints_to_string(y.dims()),
                 ", the transform makes ", l.out_numel(), " values of ", dtype_name(x.dtype()));
  if (window && window->numel() < l.terms)
    return error(StatusCode::kInternal, "window has ", window->numel(), " samples, frames have ", l.terms);
  // Loaded once as double: the twiddle loop reads every sample bins times.
  std::vector<double> xs(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) xs[static_cast<size_t>(i)] = x.get(i);
  std::vector<double> ws;
  if (window) {
    ws.resize(static_cast<size_t>(l.terms));
    for (int64_t m = 0; m < l.terms; ++m) ws[static_cast<size_t>(m)] = window->get(m);
  }
  const bool table = l.n <= kMaxTwiddleTable;
  std::vector<double> cs, sn;
  if (table) {
    cs.resize(static_cast<size_t>(l.n));
    sn.resize(static_cast<size_t>(l.n));
    for (int64_t j = 0; j < l.n; ++j) {
      const double t = 2 * kPi * static_cast<double>(j) / static_cast<double>(l.n);
      cs[static_cast<size_t>(j)] = std::cos(t);
      sn[static_cast<size_t>(j)] = std::sin(t);
    }
  }
  auto twiddle = [&](int64_t j, double* c, double* s) {
    if (table) {
      *c = cs[static_cast<size_t>(j)];
      *s = sn[static_cast<size_t>(j)];
    } else {
      const double t = 2 * kPi * static_cast<double>(j) / static_cast<double>(l.n);
      *c = std::cos(t);
      *s = std::sin(t);
    }
  };
  if (l.real_output) {  // irfft (spectral.h): one real value per output sample
    int64_t o = 0;
    for (int64_t a = 0; a < l.batch; ++a)
      for (int64_t t = 0; t < l.bins; ++t)
        for (int64_t i = 0; i < l.inner; ++i, ++o) {
          const int64_t base = a * l.batch_stride + i * l.inner_stride;
          double sum = 0;
          int64_t j = 0;  // k * t mod n
          for (int64_t k = 0; k < l.terms; ++k) {
            const int64_t off = base + k * l.term_stride;
            const double xr = xs[static_cast<size_t>(off)];
            const double xi = l.complex_input ? xs[static_cast<size_t>(off + 1)] : 0.0;
            const double weight = k == 0 || 2 * k == l.n ? 1.0 : 2.0;
            double c, s;
            twiddle(j, &c, &s);
            sum += weight * (xr * c - xi * s);
            j += t;
            if (j >= l.n) j -= l.n;
          }
          y.set(o, sum / static_cast<double>(l.n));
        }
    return Status::ok();
  }
  const double sign = l.inverse ? 1.0 : -1.0;
  const double scale = l.inverse ? 1.0 / static_cast<double>(l.n) : 1.0;
  int64_t o = 0;
  for (int64_t a = 0; a < l.batch; ++a)
    for (int64_t f = 0; f < l.frames; ++f)
      for (int64_t k = 0; k < l.bins; ++k)
        for (int64_t i = 0; i < l.inner; ++i, o += 2) {
          const int64_t base = a * l.batch_stride + f * l.frame_stride + i * l.inner_stride;
          double re = 0, im = 0;
          int64_t j = 0;  // k * m mod n, advanced by k each term (k < n, so one subtraction wraps it)
          for (int64_t m = 0; m < l.terms; ++m) {
            const int64_t off = base + m * l.term_stride;
            double xr = xs[static_cast<size_t>(off)];
            double xi = l.complex_input ? xs[static_cast<size_t>(off + 1)] : 0.0;
            if (window) {
              xr *= ws[static_cast<size_t>(m)];
              xi *= ws[static_cast<size_t>(m)];
            }
            double c, s;
            twiddle(j, &c, &s);
            s *= sign;
            re += xr * c - xi * s;
            im += xr * s + xi * c;
            j += k;
            if (j >= l.n) j -= l.n;
          }
          y.set(o, re * scale);
          y.set(o + 1, im * scale);
        }
  return Status::ok();
}

// ---- kernels --------------------------------------------------------------------------------------

Status dft(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  GRAFT_RETURN_IF_ERROR(require_float_tensor(ctx.inputs[0], "input"));
  const Tensor& x = *ctx.inputs[0];
  GRAFT_ASSIGN_OR_RETURN(DftAttrs a, dft_attrs(attrs_of(ctx), ctx.opset));
  std::optional<int64_t> n;
  if (ctx.inputs.size() > 1 && ctx.inputs[1]) {
    GRAFT_ASSIGN_OR_RETURN(int64_t v, integer_scalar(*ctx.inputs[1], "dft_length"));
    n = v;
  }
  if (ctx.inputs.size() > 2 && ctx.inputs[2]) {
    if (ctx.opset < 20)
      return error(StatusCode::kInvalidModel, "DFT takes the axis as input 2 only from opset 20 on (opset ",
                   ctx.opset, " has the axis attribute)");
    if (ctx.inputs[2]->dtype() != DataType::kInt64)
      return error(StatusCode::kInvalidModel, "input axis must be int64, got ",
                   dtype_name(ctx.inputs[2]->dtype()));
    GRAFT_ASSIGN_OR_RETURN(a.axis, integer_scalar(*ctx.inputs[2], "axis"));
  }
  GRAFT_ASSIGN_OR_RETURN(SpectralLayout l, dft_layout(x.dims(), a.axis, n, a));
  return spectral_sum(l, x, nullptr, *ctx.outputs[0]);
}

Status stft(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  GRAFT_RETURN_IF_ERROR(require_float_tensor(ctx.inputs[0], "signal"));
  const Tensor& x = *ctx.inputs[0];
  GRAFT_ASSIGN_OR_RETURN(bool onesided, stft_onesided(attrs_of(ctx)));
  GRAFT_ASSIGN_OR_RETURN(int64_t step, integer_scalar(*ctx.inputs[1], "frame_step"));
  const Tensor* window = ctx.inputs.size() > 2 ? ctx.inputs[2] : nullptr;
  std::optional<int64_t> wlen, flen;
  if (window) {
    if (window->dtype() != x.dtype() || window->rank() != 1)
      return error(StatusCode::kInvalidModel, "window must be 1-D of the signal's dtype ",
                   dtype_name(x.dtype()), ", got ", dtype_name(window->dtype()), " ",
                   ints_to_string(window->dims()));
    wlen = window->dims()[0];
  }
  if (ctx.inputs.size() > 3 && ctx.inputs[3]) {
    GRAFT_ASSIGN_OR_RETURN(int64_t v, integer_scalar(*ctx.inputs[3], "frame_length"));
    flen = v;
  }
  GRAFT_ASSIGN_OR_RETURN(SpectralLayout l, stft_layout(x.dims(), step, wlen, flen, onesided));
  return spectral_sum(l, x, window, *ctx.outputs[0]);
}

}  // namespace cpu

// ---- schema: inference and the table rows ---------------------------------------------------
// The lengths (dft_length, frame_step, frame_length, DFT-20's axis) are input values: known at
// build time when they are constants, otherwise the dims they decide are fresh symbols that the
// run-time inference (every input value on the host) resolves.

namespace {

using namespace infer;

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
    GRAFT_RETURN_IF_ERROR(require_scalar(ctx, 1, "dft_length"));
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
    GRAFT_RETURN_IF_ERROR(require_scalar(ctx, 2, "axis"));
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
  const bool irfft = a.onesided && a.inverse;  // spectral.h: a real signal out
  GRAFT_RETURN_IF_ERROR(check_complex_dim(ctx, x.shape->back(), a.onesided && !irfft, "input"));
  Shape out = *x.shape;
  out.back() = Dim(irfft ? 1 : 2);
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
  if (!ctx.has_input(1) && !irfft) {
    if (len.is_const() && len.value() == 0)
      return ctx.fail("the DFT axis ", *ax, " of input ", x.to_string(),
                      " is empty and no dft_length is given");
    GRAFT_RETURN_IF_ERROR(check_length_dim(ctx, len, "DFT length (the axis' extent)"));
  }
  Dim bins;
  if (n_unknown) {
    bins = ctx.unknown_dim();
  } else {
    if (irfft) {
      bins = n ? *n : (len - Dim(1)) * Dim(2);
    } else {
      const Dim nn = n ? *n : len;
      bins = a.onesided ? floor_div(nn, Dim(2)) + Dim(1) : nn;
    }
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
  GRAFT_RETURN_IF_ERROR(require_scalar(ctx, 1, "frame_step"));
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
    GRAFT_RETURN_IF_ERROR(require_scalar(ctx, 3, "frame_length"));
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
