// See sampling_attrs.h.
#include "ops/sampling_attrs.h"

#include <cmath>
#include <limits>
#include <string>

#include "ops/attr_util.h"

namespace graft {

Result<RoiAlignParams> parse_roi_align_attrs(const AttributeMap& attrs, int opset) {
  RoiAlignParams p;
  GRAFT_ASSIGN_OR_RETURN(std::string mode, attrs.get_string("mode", "avg"));
  if (mode == "avg") p.pool = RoiAlignParams::Pool::kAvg;
  else if (mode == "max") p.pool = RoiAlignParams::Pool::kMax;
  else return attr_error("mode", "unknown value '", mode, "' (expected avg or max)");
  p.max_of_weighted_corners = true;

  GRAFT_ASSIGN_OR_RETURN(p.output_height, attrs.get_int("output_height", 1));
  if (p.output_height < 1 || p.output_height > std::numeric_limits<int32_t>::max())
    return attr_error("output_height", "must be in [1, 2^31-1], got ", p.output_height);
  GRAFT_ASSIGN_OR_RETURN(p.output_width, attrs.get_int("output_width", 1));
  if (p.output_width < 1 || p.output_width > std::numeric_limits<int32_t>::max())
    return attr_error("output_width", "must be in [1, 2^31-1], got ", p.output_width);
  GRAFT_ASSIGN_OR_RETURN(p.sampling_ratio, attrs.get_int("sampling_ratio", 0));
  if (p.sampling_ratio < 0 || p.sampling_ratio > std::numeric_limits<int32_t>::max())
    return attr_error("sampling_ratio", "must be in [0, 2^31-1] (0: adaptive), got ", p.sampling_ratio);
  GRAFT_ASSIGN_OR_RETURN(float scale, attrs.get_float("spatial_scale", 1.0f));
  if (!std::isfinite(scale) || !(scale > 0.0f))
    return attr_error("spatial_scale", "must be a finite positive number, got ", scale);
  p.spatial_scale = scale;

  // Opset 10 has no such attribute and behaves as output_half_pixel; opset 16 added it with the
  // default half_pixel.
  const char* def = opset >= 16 ? "half_pixel" : "output_half_pixel";
  GRAFT_ASSIGN_OR_RETURN(std::string ctm, attrs.get_string("coordinate_transformation_mode", def));
  if (ctm == "half_pixel") p.half_pixel = true;
  else if (ctm == "output_half_pixel") p.half_pixel = false;
  else
    return attr_error("coordinate_transformation_mode", "unknown value '", ctm,
                      "' (expected half_pixel or output_half_pixel)");
  return p;
}

Result<GridSampleParams> parse_grid_sample_attrs(const AttributeMap& attrs, int opset) {
  GridSampleParams p;
  const bool v20 = opset >= 20;
  GRAFT_ASSIGN_OR_RETURN(std::string mode, attrs.get_string("mode", v20 ? "linear" : "bilinear"));
  if (mode == (v20 ? "linear" : "bilinear")) p.mode = GridSampleParams::Mode::kLinear;
  else if (mode == "nearest") p.mode = GridSampleParams::Mode::kNearest;
  else if (mode == (v20 ? "cubic" : "bicubic")) p.mode = GridSampleParams::Mode::kCubic;
  else
    return attr_error("mode", "unknown value '", mode, "' at opset ", opset, " (expected ",
                      v20 ? "linear, nearest or cubic" : "bilinear, nearest or bicubic; opset 20 renamed them linear and cubic", ")");
  GRAFT_ASSIGN_OR_RETURN(std::string pad, attrs.get_string("padding_mode", "zeros"));
  if (pad == "zeros") p.padding = GridSampleParams::Padding::kZeros;
  else if (pad == "border") p.padding = GridSampleParams::Padding::kBorder;
  else if (pad == "reflection") p.padding = GridSampleParams::Padding::kReflection;
  else return attr_error("padding_mode", "unknown value '", pad, "' (expected zeros, border or reflection)");
  GRAFT_ASSIGN_OR_RETURN(int64_t ac, attrs.get_int("align_corners", 0));
  if (ac != 0 && ac != 1) return attr_error("align_corners", "must be 0 or 1, got ", ac);
  p.align_corners = ac != 0;
  return p;
}

}  // namespace graft
