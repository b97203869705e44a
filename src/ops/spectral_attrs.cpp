// See spectral_attrs.h.
#include "ops/spectral_attrs.h"

#include <algorithm>
#include <initializer_list>
#include <string>

#include "core/checked_math.h"
#include "ops/attr_util.h"
#include "ops/operator.h"

namespace graft {

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
  if (a.onesided && c == 2)
    return attr_error("onesided",
                      "is 1 but the input is complex (last dim 2); a onesided DFT takes real input");
  const int64_t len = x_dims[static_cast<size_t>(*ax)];
  int64_t n = len;
  if (dft_length) {
    n = *dft_length;
    if (n < 1) return error(StatusCode::kInvalidModel, "dft_length must be >= 1, got ", n);
    GRAFT_RETURN_IF_ERROR(check_length(n, "dft_length"));
  } else {
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
  l.bins = a.onesided ? n / 2 + 1 : n;
  l.terms = std::min(len, n);
  l.complex_input = c == 2;
  l.inverse = a.inverse;
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

}  // namespace graft
