// CPU reference kernels for Resize and Pad. See resize_pad.h.
//
// Resize is separable: every output coordinate along an axis maps (through the coordinate
// transformation) to a few input taps with weights (1 for nearest, 2 for linear, 4 for cubic).
// An output element is the sum over the product of its per-axis taps, so the kernel interpolates
// one axis at a time, for every mode and rank; "bilinear" is simply linear taps on H and W and
// identity elsewhere.
#include "backends/cpu/resize_pad.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "backends/cpu/kernel_util.h"
#include "backends/cpu/nn.h"
#include "core/checked_math.h"

namespace graft::cpu {

namespace {

// Keys' cubic convolution weight at distance x with parameter a.
double cubic_weight(double x, double a) {
  x = std::fabs(x);
  if (x <= 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
  return 0.0;
}

struct AxisTaps {
  bool outside = false;        // tf_crop_and_resize sample outside the input: extrapolate
  std::vector<int64_t> index;  // input indices (clamped to the edge)
  std::vector<double> weight;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Resize

namespace {

// Input coordinate sampled by output coordinate x along one axis.
// `resized` is the real-valued resized length (input extent * scale), which the ONNX test data uses
// for align_corners, pytorch_half_pixel and tf_crop_and_resize, rather than the floored output extent.
double source_coordinate(const ResizeAttrs& a, double x, int64_t in, int64_t out, double resized,
                         double scale, double roi_start, double roi_end) {
  const std::string& m = a.coordinate_mode;
  const double din = static_cast<double>(in), dout = resized;
  if (m == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (m == "half_pixel_symmetric") {
    double adjustment = static_cast<double>(out) / (scale * din);
    double offset = din / 2.0 * (1.0 - adjustment);
    return offset + (x + 0.5) / scale - 0.5;
  }
  if (m == "pytorch_half_pixel") return dout > 1.0 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (m == "align_corners") return dout == 1.0 ? 0.0 : x * (din - 1.0) / (dout - 1.0);
  if (m == "asymmetric") return x / scale;
  if (m == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  // tf_crop_and_resize
  return dout > 1.0 ? roi_start * (din - 1.0) + x * (roi_end - roi_start) * (din - 1.0) / (dout - 1.0)
                    : 0.5 * (roi_start + roi_end) * (din - 1.0);
}

// Saturating: the caller clamps the index into the input, and a coordinate from extreme scales or a
// NaN roi must not be converted with undefined behaviour on the way.
int64_t nearest_index(const std::string& mode, double x) {
  if (mode == "round_prefer_floor") return saturating_int64(std::ceil(x - 0.5));
  if (mode == "round_prefer_ceil") return saturating_int64(std::floor(x + 0.5));
  if (mode == "floor") return saturating_int64(std::floor(x));
  return saturating_int64(std::ceil(x));
}

AxisTaps taps_for(const ResizeAttrs& a, int64_t o, int64_t in, int64_t out, double resized, double scale,
                  double rs, double re, bool identity) {
  AxisTaps t;
  if (identity) {
    t.index = {o};
    t.weight = {1.0};
    return t;
  }
  const double x = source_coordinate(a, static_cast<double>(o), in, out, resized, scale, rs, re);
  if (a.coordinate_mode == "tf_crop_and_resize" && (x < 0.0 || x > static_cast<double>(in - 1))) {
    t.outside = true;
    return t;
  }
  auto clamp = [in](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
  switch (a.mode) {
    case ResizeAttrs::Mode::kNearest:
      t.index = {clamp(nearest_index(a.nearest_mode, x))};
      t.weight = {1.0};
      break;
    case ResizeAttrs::Mode::kLinear: {
      // Neighbours beyond the edge repeat the edge value.
      double f = std::floor(x), frac = x - f;
      // Clamped first: x from extreme scales may be huge or NaN (every tap clamps to an edge anyway).
      int64_t i0 = std::clamp<int64_t>(saturating_int64(f), -4, in + 4);
      t.index = {clamp(i0), clamp(i0 + 1)};
      t.weight = {1.0 - frac, frac};
      break;
    }
    case ResizeAttrs::Mode::kCubic: {
      double f = std::floor(x), frac = x - f;
      int64_t i0 = std::clamp<int64_t>(saturating_int64(f), -4, in + 4);
      double total = 0.0;
      for (int64_t k = -1; k <= 2; ++k) {
        int64_t i = i0 + k;
        double w = cubic_weight(static_cast<double>(k) - frac, a.cubic_coeff_a);
        // exclude_outside drops taps outside the input and renormalizes the rest.
        if (a.exclude_outside && (i < 0 || i >= in)) w = 0.0;
        t.index.push_back(clamp(i));
        t.weight.push_back(w);
        total += w;
      }
      if (a.exclude_outside && total != 0.0)
        for (double& w : t.weight) w /= total;
      break;
    }
  }
  return t;
}

}  // namespace

Status resize(ExecContext& ctx) {
  const Tensor* X = ctx.inputs.empty() ? nullptr : ctx.inputs[0];
  if (!X) return error(StatusCode::kInvalidModel, "Resize: input X is missing");
  auto input_at = [&](size_t i) -> const Tensor* { return i < ctx.inputs.size() ? ctx.inputs[i] : nullptr; };
  GRAFT_ASSIGN_OR_RETURN(ResizeAttrs a, parse_resize_attrs(*ctx.attrs, X->rank()));
  std::vector<int64_t> out_dims;
  std::vector<double> scale;
  GRAFT_RETURN_IF_ERROR(
      resize_output(a, X->dims(), input_at(1), input_at(2), input_at(3), &out_dims, &scale));
  Tensor& Y = *ctx.outputs[0];
  if (Y.dims() != out_dims)
    return error(StatusCode::kInternal, "Resize: output shape ", ints_to_string(Y.dims()), " differs from ",
                 ints_to_string(out_dims));
  // Nothing to write. (An empty output may still have a huge extent on another axis: a scale of 1e9
  // there and of 1e-17 here. The per-axis tap tables below would be built for it, gigabytes of them.)
  if (Y.numel() == 0) return Status::ok();
  if (a.antialias)
    for (size_t ax = 0; ax < scale.size(); ++ax)
      if (scale[ax] < 1.0 && a.mode != ResizeAttrs::Mode::kNearest) {
        Status st = error(StatusCode::kUnsupported, "antialiased downsampling is not supported");
        st.with_attribute("antialias");
        return st;
      }
  const size_t r = out_dims.size();
  std::vector<double> roi_start(r, 0.0), roi_end(r, 1.0);
  if (a.coordinate_mode == "tf_crop_and_resize") {
    const Tensor* roi = input_at(1);
    if (!tensor_given(roi) || roi->numel() != static_cast<int64_t>(2 * a.axes.size()))
      return error(StatusCode::kInvalidModel, "Resize: tf_crop_and_resize needs 'roi' with ",
                   2 * a.axes.size(), " elements");
    std::vector<double> rv = tensor_doubles(*roi);
    for (size_t k = 0; k < a.axes.size(); ++k) {
      roi_start[static_cast<size_t>(a.axes[k])] = rv[k];
      roi_end[static_cast<size_t>(a.axes[k])] = rv[a.axes.size() + k];
    }
  }
  // Per-axis taps for every output coordinate. An axis not listed in `axes`, or left at scale 1 by
  // a non-cropping transform, maps each coordinate to itself.
  std::vector<std::vector<AxisTaps>> taps(r);
  std::vector<bool> identity_axis(r);
  for (size_t ax = 0; ax < r; ++ax) {
    bool listed = std::find(a.axes.begin(), a.axes.end(), static_cast<int64_t>(ax)) != a.axes.end();
    const bool identity = identity_axis[ax] =
        !listed || (scale[ax] == 1.0 && out_dims[ax] == X->dims()[ax] &&
                    a.coordinate_mode != "tf_crop_and_resize" && a.coordinate_mode != "tf_half_pixel_for_nn");
    // Sizes with "stretch" fix the resized length exactly; otherwise it is input extent * scale.
    const bool exact = !tensor_given(input_at(2)) && a.keep_aspect_ratio == "stretch";
    const double resized =
        exact ? static_cast<double>(out_dims[ax]) : static_cast<double>(X->dims()[ax]) * scale[ax];
    for (int64_t o = 0; o < out_dims[ax]; ++o)
      taps[ax].push_back(taps_for(a, o, X->dims()[ax], out_dims[ax], resized, scale[ax], roi_start[ax],
                                  roi_end[ax], identity));
  }
  const std::vector<int64_t> in_strides = contiguous_strides(X->dims());
  // An output element with a tf_crop_and_resize sample outside the input on any axis.
  auto outside_at = [&](const std::vector<int64_t>& oi) {
    for (size_t ax = 0; ax < r; ++ax)
      if (taps[ax][static_cast<size_t>(oi[ax])].outside) return true;
    return false;
  };
  std::vector<int64_t> oi;
  if (a.mode == ResizeAttrs::Mode::kNearest) {
    // One tap per axis: a byte copy, exact for every dtype (int64 too).
    const size_t es = dtype_size(X->dtype());
    for (int64_t f = 0; f < Y.numel(); ++f) {
      unravel(f, out_dims, oi);
      if (outside_at(oi)) {
        Y.set(f, a.extrapolation_value);
        continue;
      }
      int64_t off = 0;
      for (size_t ax = 0; ax < r; ++ax)
        off += taps[ax][static_cast<size_t>(oi[ax])].index[0] * in_strides[ax];
      std::memcpy(static_cast<char*>(Y.data()) + static_cast<size_t>(f) * es,
                  static_cast<const char*>(X->data()) + static_cast<size_t>(off) * es, es);
    }
    return Status::ok();
  }
  // Linear and cubic weights are a product of per-axis weights, so the sum over the product of the
  // per-axis taps is the per-axis sums nested: interpolate along one axis at a time, in float64
  // (2 or 4 taps per element and axis instead of 2^rank or 4^rank per element). Axes that shrink go
  // first, so no intermediate holds more elements than the larger of the input and the output. A
  // zero weight is skipped, not multiplied, so an infinite or NaN input that only a zero weight
  // reaches does not turn the sum into NaN.
  std::vector<size_t> order;
  for (size_t ax = 0; ax < r; ++ax)
    if (!identity_axis[ax]) order.push_back(ax);
  std::stable_sort(order.begin(), order.end(), [&](size_t p, size_t q) {
    // out_p / in_p < out_q / in_q without dividing (every extent here is positive).
    return static_cast<long double>(out_dims[p]) * static_cast<long double>(X->dims()[q]) <
           static_cast<long double>(out_dims[q]) * static_cast<long double>(X->dims()[p]);
  });
  std::vector<int64_t> cur_dims = X->dims();
  std::vector<double> cur(static_cast<size_t>(X->numel())), next;
  for (int64_t i = 0; i < X->numel(); ++i) cur[static_cast<size_t>(i)] = X->get(i);
  for (size_t ax : order) {
    int64_t outer = 1, inner = 1;
    for (size_t k = 0; k < ax; ++k) outer *= cur_dims[k];
    for (size_t k = ax + 1; k < r; ++k) inner *= cur_dims[k];
    const int64_t in_len = cur_dims[ax], out_len = out_dims[ax];
    next.assign(static_cast<size_t>(outer * out_len * inner), 0.0);
    for (int64_t b = 0; b < outer; ++b)
      for (int64_t o = 0; o < out_len; ++o) {
        const AxisTaps& t = taps[ax][static_cast<size_t>(o)];
        double* dst = next.data() + (b * out_len + o) * inner;
        for (size_t k = 0; k < t.index.size(); ++k) {
          const double w = t.weight[k];
          if (w == 0.0) continue;
          const double* src = cur.data() + (b * in_len + t.index[k]) * inner;
          for (int64_t i = 0; i < inner; ++i) dst[i] += w * src[i];
        }
      }
    cur.swap(next);
    cur_dims[ax] = out_len;
  }
  const bool may_fall_outside = a.coordinate_mode == "tf_crop_and_resize";
  for (int64_t f = 0; f < Y.numel(); ++f) {
    if (may_fall_outside) {
      unravel(f, out_dims, oi);
      if (outside_at(oi)) {
        Y.set(f, a.extrapolation_value);
        continue;
      }
    }
    Y.set(f, cur[static_cast<size_t>(f)]);
  }
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// Pad

Status pad(ExecContext& ctx) {
  const Tensor* X = ctx.inputs.empty() ? nullptr : ctx.inputs[0];
  const Tensor* P = ctx.inputs.size() > 1 ? ctx.inputs[1] : nullptr;
  if (!X || !P) return error(StatusCode::kInvalidModel, "Pad: inputs 'data' and 'pads' are required");
  if (!dtype_is_integer(P->dtype()))
    return error(StatusCode::kInvalidModel, "Pad: input 'pads' must be int64, got ", dtype_name(P->dtype()));
  GRAFT_ASSIGN_OR_RETURN(PadMode mode, parse_pad_mode(*ctx.attrs));
  const Tensor* V = ctx.inputs.size() > 2 ? ctx.inputs[2] : nullptr;
  const Tensor* A = ctx.inputs.size() > 3 ? ctx.inputs[3] : nullptr;
  std::vector<int64_t> axes_v;
  if (A) axes_v = A->to_int64_vector();
  std::vector<int64_t> pb, pe;
  GRAFT_RETURN_IF_ERROR(pad_amounts(P->to_int64_vector(), A ? &axes_v : nullptr, X->rank(), &pb, &pe));
  const size_t r = static_cast<size_t>(X->rank());
  std::vector<int64_t> out_dims(r);
  for (size_t a = 0; a < r; ++a) {
    out_dims[a] = X->dims()[a] + pb[a] + pe[a];
    if (out_dims[a] < 0)
      return error(StatusCode::kInvalidModel, "Pad: negative pads crop axis ", static_cast<int64_t>(a),
                   " below zero (extent ", X->dims()[a], ")");
    if (mode != PadMode::kConstant && X->dims()[a] == 0 && out_dims[a] > 0)
      return error(StatusCode::kInvalidModel, "Pad: cannot pad empty axis ", static_cast<int64_t>(a),
                   " in this mode");
  }
  Tensor& Y = *ctx.outputs[0];
  if (Y.dims() != out_dims)
    return error(StatusCode::kInternal, "Pad: output shape ", ints_to_string(Y.dims()), " differs from ",
                 ints_to_string(out_dims));
  const size_t es = dtype_size(X->dtype());
  // The fill value's bytes: constant_value when given (same dtype as data), else zero bytes.
  std::vector<char> fill(es, 0);
  if (V && V->defined() && V->numel() > 0) {
    if (V->dtype() != X->dtype())
      return error(StatusCode::kInvalidModel, "Pad: constant_value has dtype ", dtype_name(V->dtype()),
                   " but data has ", dtype_name(X->dtype()));
    std::memcpy(fill.data(), V->data(), es);
  }
  // Row by row along the last axis: the outer indices are resolved once per row (not per element:
  // a fuzzed plan padding to tens of millions of elements spent most of a minute in the per-element
  // index arithmetic), and a row's in-range middle is one copy.
  const std::vector<int64_t> in_strides = contiguous_strides(X->dims());
  const int64_t out_row = r ? out_dims[r - 1] : 1, in_row = r ? X->dims()[r - 1] : 1;
  const int64_t rb = r ? pb[r - 1] : 0;
  const int64_t rows = out_row == 0 ? 0 : Y.numel() / out_row;
  const char* xs = static_cast<const char*>(X->data());
  std::vector<int64_t> oi;
  const std::vector<int64_t> outer(out_dims.begin(), out_dims.end() - (r ? 1 : 0));
  for (int64_t row = 0; row < rows; ++row) {
    unravel(row, outer, oi);
    int64_t off = 0;
    bool constant = false;
    for (size_t a = 0; a + 1 < r && !constant; ++a) {
      const int64_t src = pad_source(mode, oi[a] - pb[a], X->dims()[a]);
      if (src < 0)
        constant = true;
      else
        off += src * in_strides[a];
    }
    char* dst = static_cast<char*>(Y.data()) + static_cast<size_t>(row * out_row) * es;
    for (int64_t j = 0; j < out_row; ++j) {
      const int64_t src = constant ? -1 : pad_source(mode, j - rb, in_row);
      if (src < 0) {
        std::memcpy(dst + static_cast<size_t>(j) * es, fill.data(), es);
        continue;
      }
      // The run of output elements whose sources are consecutive: one copy.
      int64_t len = 1;
      if (j - rb == src) len = std::min<int64_t>(out_row - j, in_row - src);
      std::memcpy(dst + static_cast<size_t>(j) * es, xs + static_cast<size_t>(off + src) * es,
                  static_cast<size_t>(len) * es);
      j += len - 1;
    }
  }
  return Status::ok();
}

}  // namespace graft::cpu
