// See resize_pad_attrs.h.
#include "ops/resize_pad_attrs.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "core/checked_math.h"
#include "ops/attr_util.h"
#include "ops/operator.h"

namespace graft {

bool tensor_given(const Tensor* t) { return t != nullptr && t->defined() && t->numel() > 0; }

std::vector<double> tensor_doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get(i);
  return v;
}

// ---------------------------------------------------------------------------------------------
// Resize

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

// ---------------------------------------------------------------------------------------------
// Pad

Result<PadMode> parse_pad_mode(const AttributeMap& attrs) {
  GRAFT_ASSIGN_OR_RETURN(std::string mode, attrs.get_string("mode", "constant"));
  if (mode == "constant") return PadMode::kConstant;
  if (mode == "reflect") return PadMode::kReflect;
  if (mode == "edge") return PadMode::kEdge;
  if (mode == "wrap") return PadMode::kWrap;
  return attr_error("mode", "unknown value '", mode, "' (expected constant, reflect, edge or wrap)");
}

Status pad_amounts(const std::vector<int64_t>& pads, const std::vector<int64_t>* axes, int64_t rank,
                   std::vector<int64_t>* begins, std::vector<int64_t>* ends) {
  std::vector<int64_t> ax;
  if (axes) {
    for (int64_t a : *axes) {
      if (a < -rank || a >= rank)
        return error(StatusCode::kInvalidModel, "input 'axes' has axis ", a, " out of range for rank ", rank);
      int64_t n = a < 0 ? a + rank : a;
      if (std::find(ax.begin(), ax.end(), n) != ax.end())
        return error(StatusCode::kInvalidModel, "input 'axes' repeats axis ", a);
      ax.push_back(n);
    }
  } else {
    for (int64_t i = 0; i < rank; ++i) ax.push_back(i);
  }
  if (pads.size() != 2 * ax.size())
    return error(StatusCode::kInvalidModel, "input 'pads' has ", pads.size(), " elements; expected ", 2 * ax.size(),
                 " (begins then ends for ", ax.size(), " axes)");
  begins->assign(static_cast<size_t>(rank), 0);
  ends->assign(static_cast<size_t>(rank), 0);
  for (size_t k = 0; k < ax.size(); ++k) {
    (*begins)[static_cast<size_t>(ax[k])] = pads[k];
    (*ends)[static_cast<size_t>(ax[k])] = pads[ax.size() + k];
  }
  return Status::ok();
}

}  // namespace graft
