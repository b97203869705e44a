// Resize: the attribute reader and output-extent rule declared in resize_pad.h, the naive CPU
// reference (separable per-axis taps, computed in double) and the schema. The output shape is data
// dependent: when scales or sizes are not known at build time the resized extents become fresh
// unknown dims, and the run-time inference (with every input on the host) makes them concrete.
#include "ops/resize_pad/resize_pad.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "core/checked_math.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- attributes and inputs -------------------------------------------------------------------------

bool tensor_given(const Tensor* t) { return t != nullptr && t->defined() && t->numel() > 0; }

std::vector<double> tensor_doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get(i);
  return v;
}

Result<ResizeAttrs> parse_resize_attrs(const AttributeMap& attrs, int64_t rank) {
  ResizeAttrs a;
  GRAFT_ASSIGN_OR_RETURN(std::string mode, attrs.get_string("mode", "nearest"));
  if (mode == "nearest") a.mode = ResizeAttrs::Mode::kNearest;
  else if (mode == "linear" || mode == "bilinear" || mode == "trilinear") a.mode = ResizeAttrs::Mode::kLinear;
  else if (mode == "cubic" || mode == "bicubic") a.mode = ResizeAttrs::Mode::kCubic;
  else return attr_error("mode", "unknown value '", mode, "' (expected nearest, linear or cubic)");

  GRAFT_ASSIGN_OR_RETURN(a.coordinate_mode, attrs.get_string("coordinate_transformation_mode", "half_pixel"));
  static const char* kCoordModes[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                      "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  if (std::none_of(std::begin(kCoordModes), std::end(kCoordModes),
                   [&](const char* m) { return a.coordinate_mode == m; }))
    return attr_error("coordinate_transformation_mode", "unknown value '", a.coordinate_mode, "'");

  GRAFT_ASSIGN_OR_RETURN(a.nearest_mode, attrs.get_string("nearest_mode", "round_prefer_floor"));
  if (a.nearest_mode != "round_prefer_floor" && a.nearest_mode != "round_prefer_ceil" && a.nearest_mode != "floor" &&
      a.nearest_mode != "ceil")
    return attr_error("nearest_mode", "unknown value '", a.nearest_mode,
                      "' (expected round_prefer_floor, round_prefer_ceil, floor or ceil)");

  GRAFT_ASSIGN_OR_RETURN(float ca, attrs.get_float("cubic_coeff_a", -0.75f));
  a.cubic_coeff_a = ca;
  GRAFT_ASSIGN_OR_RETURN(int64_t eo, attrs.get_int("exclude_outside", 0));
  a.exclude_outside = eo != 0;
  GRAFT_ASSIGN_OR_RETURN(float ev, attrs.get_float("extrapolation_value", 0.0f));
  a.extrapolation_value = ev;
  GRAFT_ASSIGN_OR_RETURN(int64_t aa, attrs.get_int("antialias", 0));
  a.antialias = aa != 0;
  GRAFT_ASSIGN_OR_RETURN(a.keep_aspect_ratio, attrs.get_string("keep_aspect_ratio_policy", "stretch"));
  if (a.keep_aspect_ratio != "stretch" && a.keep_aspect_ratio != "not_larger" && a.keep_aspect_ratio != "not_smaller")
    return attr_error("keep_aspect_ratio_policy", "unknown value '", a.keep_aspect_ratio,
                      "' (expected stretch, not_larger or not_smaller)");

  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> axes, attrs.get_ints("axes", {}));
  for (int64_t ax : axes) {
    if (ax < -rank || ax >= rank) return attr_error("axes", "axis ", ax, " is out of range for rank ", rank);
    int64_t norm = ax < 0 ? ax + rank : ax;
    if (std::find(a.axes.begin(), a.axes.end(), norm) != a.axes.end())
      return attr_error("axes", "axis ", ax, " is repeated");
    a.axes.push_back(norm);
  }
  if (a.axes.empty())
    for (int64_t i = 0; i < rank; ++i) a.axes.push_back(i);
  return a;
}

Status resize_output(const ResizeAttrs& a, const std::vector<int64_t>& in, const Tensor* roi, const Tensor* scales,
                     const Tensor* sizes, std::vector<int64_t>* out, std::vector<double>* scale) {
  const size_t r = in.size(), na = a.axes.size();
  *out = in;
  scale->assign(r, 1.0);
  const bool has_scales = tensor_given(scales), has_sizes = tensor_given(sizes);
  if (has_scales == has_sizes)
    return error(StatusCode::kInvalidModel, "exactly one of the inputs 'scales' and 'sizes' must be given (",
                 has_scales ? "both are" : "neither is", ")");
  if (has_scales) {
    std::vector<double> s = tensor_doubles(*scales);
    if (s.size() != na)
      return error(StatusCode::kInvalidModel, "input 'scales' has ", s.size(), " elements; expected ", na);
    std::vector<double> roi_v = tensor_given(roi) ? tensor_doubles(*roi) : std::vector<double>();
    for (size_t k = 0; k < na; ++k) {
      size_t ax = static_cast<size_t>(a.axes[k]);
      if (!(s[k] > 0.0)) return error(StatusCode::kInvalidModel, "input 'scales' must be positive, got ", s[k]);
      double extent = static_cast<double>(in[ax]);
      // tf_crop_and_resize samples only the roi window, so the output covers that fraction.
      if (a.coordinate_mode == "tf_crop_and_resize" && roi_v.size() == 2 * na)
        extent *= roi_v[na + k] - roi_v[k];
      // From the file's scales and roi: may be huge, negative or NaN (its cast would be UB).
      const double v = std::floor(extent * s[k]);
      const auto dim = checked_int64(v);
      if (!dim || *dim < 0)
        return error(StatusCode::kInvalidModel, "axis ", static_cast<int64_t>(ax), " would resize to an extent of ", v,
                     " (scales and roi out of range)");
      (*out)[ax] = *dim;
      (*scale)[ax] = s[k];
    }
    return Status::ok();
  }
  std::vector<int64_t> sz = sizes->to_int64_vector();
  if (sz.size() != na)
    return error(StatusCode::kInvalidModel, "input 'sizes' has ", sz.size(), " elements; expected ", na);
  for (size_t k = 0; k < na; ++k) {
    if (sz[k] < 0) return error(StatusCode::kInvalidModel, "input 'sizes' has a negative entry ", ints_to_string(sz));
    if (in[static_cast<size_t>(a.axes[k])] == 0 && sz[k] != 0)
      return error(StatusCode::kInvalidModel, "cannot resize an empty axis to ", sz[k]);
  }
  if (a.keep_aspect_ratio == "stretch") {
    for (size_t k = 0; k < na; ++k) {
      size_t ax = static_cast<size_t>(a.axes[k]);
      (*out)[ax] = sz[k];
      (*scale)[ax] = in[ax] ? static_cast<double>(sz[k]) / static_cast<double>(in[ax]) : 1.0;
    }
    return Status::ok();
  }
  // not_larger / not_smaller: one scale for every listed axis, the min / max of the per-axis ones.
  double common = a.keep_aspect_ratio == "not_larger" ? INFINITY : 0.0;
  for (size_t k = 0; k < na; ++k) {
    double s = static_cast<double>(sz[k]) / static_cast<double>(in[static_cast<size_t>(a.axes[k])]);
    common = a.keep_aspect_ratio == "not_larger" ? std::min(common, s) : std::max(common, s);
  }
  for (size_t k = 0; k < na; ++k) {
    size_t ax = static_cast<size_t>(a.axes[k]);
    const double v = std::round(common * static_cast<double>(in[ax]));  // 0/0 for empty axes: NaN
    const auto dim = checked_int64(v);
    if (!dim || *dim < 0)
      return error(StatusCode::kInvalidModel, "axis ", static_cast<int64_t>(ax), " would resize to an extent of ", v);
    (*out)[ax] = *dim;
    (*scale)[ax] = common;
  }
  return Status::ok();
}

Status check_antialias_taps(const ResizeAttrs& a, const std::vector<double>& scale,
                            const std::vector<int64_t>& out_dims) {
  if (!a.antialias || a.mode == ResizeAttrs::Mode::kNearest) return Status::ok();
  for (size_t ax = 0; ax < scale.size() && ax < out_dims.size(); ++ax) {
    if (scale[ax] >= 1.0) continue;
    // Each output sample reads about 2 / scale (linear) or 4 / scale (cubic) inputs on this axis.
    const long double taps = (a.mode == ResizeAttrs::Mode::kCubic ? 4.0L : 2.0L) / scale[ax] + 2.0L;
    if (taps * static_cast<long double>(out_dims[ax]) > static_cast<long double>(kMaxAntialiasTaps)) {
      Status st = error(StatusCode::kUnsupported, "antialiased downsampling of axis ", ax, " by a scale of ",
                        scale[ax], " to ", out_dims[ax], " samples would read more than ", kMaxAntialiasTaps,
                        " input samples");
      st.with_attribute("antialias");
      return st;
    }
  }
  return Status::ok();
}

Status resize_roi(const ResizeAttrs& a, const Tensor* roi, size_t rank, std::vector<double>* start,
                  std::vector<double>* end) {
  start->assign(rank, 0.0);
  end->assign(rank, 1.0);
  if (a.coordinate_mode != "tf_crop_and_resize") return Status::ok();
  if (!tensor_given(roi) || roi->numel() != static_cast<int64_t>(2 * a.axes.size()))
    return error(StatusCode::kInvalidModel, "Resize: tf_crop_and_resize needs 'roi' with ", 2 * a.axes.size(),
                 " elements");
  const std::vector<double> rv = tensor_doubles(*roi);
  for (size_t k = 0; k < a.axes.size(); ++k) {
    (*start)[static_cast<size_t>(a.axes[k])] = rv[k];
    (*end)[static_cast<size_t>(a.axes[k])] = rv[a.axes.size() + k];
  }
  return Status::ok();
}

// ---- CPU reference ---------------------------------------------------------------------------------

namespace cpu {

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

// Antialiased linear or cubic taps when downsampling (opset 18), as ONNX's reference computes them:
// the filter stretched by 1 / scale, so each output averages every input sample under it. With
// r = x - floor(x) taken in (0, 1] (an integral x counts as r = 1 from the sample below it), tap i
// reads input floor(x) + i (edge values beyond the input) with weight f(scale * (i - r)), f the
// triangle 1 - |t| (linear, i from floor(-1/scale) + 1) or Keys' cubic (cubic, i from
// floor(-2/scale) + 1), symmetric about r, and the weights are normalized to sum to 1.
// exclude_outside then drops the taps outside the input and normalizes again.
AxisTaps antialias_taps(const ResizeAttrs& a, double x, int64_t in, double scale) {
  AxisTaps t;
  double f = std::floor(x), ratio = x - f;
  if (ratio == 0.0) {
    ratio = 1.0;
    f -= 1.0;
  }
  const bool cubic = a.mode == ResizeAttrs::Mode::kCubic;
  const int64_t start = saturating_int64(std::floor((cubic ? -2.0 : -1.0) / scale)) + 1;
  const int64_t end = 2 - start;  // exclusive: the taps are symmetric about the sample
  const int64_t base = std::clamp<int64_t>(saturating_int64(f), -in - 4, 2 * in + 4);
  double total = 0.0;
  for (int64_t i = start; i < end; ++i) {
    const double arg = scale * (static_cast<double>(i) - ratio);
    const double w = cubic ? cubic_weight(arg, a.cubic_coeff_a) : std::clamp(1.0 - std::fabs(arg), 0.0, 1.0);
    t.index.push_back(std::clamp<int64_t>(base + i, 0, in - 1));
    t.weight.push_back(w);
    total += w;
  }
  if (total != 0.0)
    for (double& w : t.weight) w /= total;
  if (a.exclude_outside) {
    double kept = 0.0;
    for (size_t k = 0; k < t.weight.size(); ++k) {
      const int64_t i = base + start + static_cast<int64_t>(k);
      if (i < 0 || i >= in) t.weight[k] = 0.0;
      kept += t.weight[k];
    }
    if (kept != 0.0)
      for (double& w : t.weight) w /= kept;
  }
  return t;
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
  if (a.antialias && scale < 1.0 && a.mode != ResizeAttrs::Mode::kNearest)
    return antialias_taps(a, x, in, scale);
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
  GRAFT_RETURN_IF_ERROR(check_antialias_taps(a, scale, out_dims));
  const size_t r = out_dims.size();
  std::vector<double> roi_start, roi_end;
  GRAFT_RETURN_IF_ERROR(resize_roi(a, input_at(1), r, &roi_start, &roi_end));
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

}  // namespace cpu

// ---- schema ----------------------------------------------------------------------------------------

namespace {

// floor(in * s) over a symbolic extent, when expressible exactly in the Dim algebra.
// Scales come from the model: an extent out of int64's range is left unknown here (the kernel's
// concrete rule refuses it) rather than converted with undefined behaviour.
std::optional<Dim> scaled_dim(const Dim& in, double s) {
  if (in.is_const()) {
    const auto v = checked_int64(std::floor(static_cast<double>(in.value()) * s));
    if (!v || *v < 0) return std::nullopt;
    return Dim(*v);
  }
  // A zero, negative or NaN scale has no symbolic form (the kernel's concrete rule refuses it).
  if (!(s > 0.0)) return std::nullopt;
  if (s >= 1.0 && s == std::floor(s)) {
    const auto k = checked_int64(s);
    if (!k) return std::nullopt;
    return in * Dim(*k);
  }
  // Reciprocals of powers of two are exact in binary, so floor(in * s) == in floor-div 1/s. The
  // range check comes before any conversion: a huge reciprocal would not fit in int64 (UB).
  const double inv = 1.0 / s;
  if (!(inv >= 1.0 && inv <= 1024.0) || inv != std::floor(inv)) return std::nullopt;
  const auto k = static_cast<int64_t>(inv);
  if ((k & (k - 1)) == 0) return floor_div(in, Dim(k));
  return std::nullopt;
}

Status infer_resize(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Shape x, ctx.input_shape(0));
  const int64_t rank = static_cast<int64_t>(x.size());
  GRAFT_ASSIGN_OR_RETURN(ResizeAttrs a, parse_resize_attrs(ctx.attrs(), rank));
  if (a.mode != ResizeAttrs::Mode::kNearest && !dtype_is_float(ctx.input(0).dtype))
    return error(StatusCode::kUnsupported, "linear/cubic Resize needs a floating input, got ",
                 dtype_name(ctx.input(0).dtype));
  const bool has_scales = infer::input_given(ctx, 2), has_sizes = infer::input_given(ctx, 3);
  if (has_scales && has_sizes)
    return ctx.fail("only one of the inputs 'scales' and 'sizes' may be given");
  if (!has_scales && !has_sizes) return ctx.fail("one of the inputs 'scales' and 'sizes' is required");

  // Fully concrete: the kernel's own rule decides.
  const Tensor* scales_v = has_scales ? ctx.input_value(2) : nullptr;
  const Tensor* sizes_v = has_sizes ? ctx.input_value(3) : nullptr;
  if (shape_is_static(x) && (scales_v || sizes_v)) {
    std::vector<int64_t> out;
    std::vector<double> scale;
    GRAFT_RETURN_IF_ERROR(resize_output(a, shape_values(x), ctx.has_input(1) ? ctx.input_value(1) : nullptr,
                                             scales_v, sizes_v, &out, &scale));
    ctx.set_output(0, TensorDesc(ctx.input(0).dtype, shape_from_values(out)));
    return Status::ok();
  }
  Shape out = x;
  if (has_sizes && a.keep_aspect_ratio == "stretch") {
    if (auto sizes = ctx.input_dims_value(3)) {
      if (sizes->size() != a.axes.size())
        return ctx.fail("input 'sizes' has ", static_cast<int64_t>(sizes->size()), " elements; expected ",
                        static_cast<int64_t>(a.axes.size()));
      for (size_t k = 0; k < a.axes.size(); ++k) out[static_cast<size_t>(a.axes[k])] = (*sizes)[k];
      ctx.set_output(0, TensorDesc(ctx.input(0).dtype, out));
      return Status::ok();
    }
  }
  std::vector<double> s;
  if (scales_v && a.coordinate_mode != "tf_crop_and_resize")
    for (int64_t i = 0; i < scales_v->numel(); ++i) s.push_back(scales_v->get(i));
  if (!s.empty() && s.size() != a.axes.size())
    return ctx.fail("input 'scales' has ", static_cast<int64_t>(s.size()), " elements; expected ",
                    static_cast<int64_t>(a.axes.size()));
  for (size_t k = 0; k < a.axes.size(); ++k) {
    Dim& d = out[static_cast<size_t>(a.axes[k])];
    std::optional<Dim> known = s.empty() ? std::nullopt : scaled_dim(d, s[k]);
    d = known ? *known : ctx.unknown_dim();
  }
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, out));
  return Status::ok();
}

}  // namespace

void append_resize_ops(std::vector<OpEntry>& out) { out.push_back(OpEntry{"Resize", 11, infer_resize, cpu::resize}); }

}  // namespace graft
