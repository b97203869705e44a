// The sampling family's definition: RoiAlign's and GridSample's attribute readers, their naive CPU
// references (each output element computed on its own, in double, from the definition) and their
// schemas. The mmdeploy and TensorRT ops of ops/roi_align and ops/grid_sample call the same
// references with their own attributes and layouts.
#include "ops/sampling/sampling.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "graft/attribute.h"
#include "graft/status.h"
#include "graft/tensor.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- attributes -----------------------------------------------------------------------------------

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

// ---- CPU references -------------------------------------------------------------------------------

namespace cpu {

namespace {

bool is_float(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kFloat64;
}

// Common checks of a view: data present when it has elements, host memory.
Status check_view(const char* op, const char* what, const TensorView& t) {
  if (t.numel() > 0 && t.data == nullptr)
    return error(StatusCode::kInvalidArgument, op, ": ", what, " has no data");
  if (t.device != DeviceType::kCPU)
    return error(StatusCode::kInvalidArgument, op, ": ", what, " is in ", device_name(t.device),
                 " memory; the reference kernel needs host memory");
  return Status::ok();
}

std::string dims_text(const std::vector<int64_t>& d) { return ints_to_string(d); }

}  // namespace

// ================================================================================================
// RoiAlign
// ================================================================================================

namespace {

// One bilinear sample: the four corner offsets (within a H*W plane) and weights, or none when the
// point lies farther than one pixel outside the map (all weights 0, as in the ONNX definition).
struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
  bool inside = false;
};

Sample bilinear_sample(double y, double x, int64_t height, int64_t width) {
  Sample s;
  const double h = static_cast<double>(height), w = static_cast<double>(width);
  // The negated test also rejects NaN.
  if (!(y >= -1.0 && y <= h && x >= -1.0 && x <= w) || height <= 0 || width <= 0) return s;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  int64_t y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x), y1, x1;
  if (y0 >= height - 1) {
    y0 = y1 = height - 1;
    y = static_cast<double>(y0);
  } else {
    y1 = y0 + 1;
  }
  if (x0 >= width - 1) {
    x0 = x1 = width - 1;
    x = static_cast<double>(x0);
  } else {
    x1 = x0 + 1;
  }
  const double ly = y - static_cast<double>(y0), lx = x - static_cast<double>(x0);
  const double hy = 1.0 - ly, hx = 1.0 - lx;
  s.pos[0] = y0 * width + x0;
  s.pos[1] = y0 * width + x1;
  s.pos[2] = y1 * width + x0;
  s.pos[3] = y1 * width + x1;
  s.w[0] = hy * hx;
  s.w[1] = hy * lx;
  s.w[2] = ly * hx;
  s.w[3] = ly * lx;
  s.inside = true;
  return s;
}

constexpr double kMaxSamplesPerBin = 16777216.0;  // 2^24

}  // namespace

namespace {

// What RoiAlign's forward and backward share: the checks (`y` is the output or its gradient, of the
// output's dims), then, for every roi and output bin, its image and the bilinear samples of the bin
// (the same for every channel): bin(k, b, ph, pw, samples, count), count being the average's divisor.
template <typename BinFn>
Status for_each_roi_bin(const char* op, const RoiAlignParams& p, const TensorView& x, const TensorView& rois,
                        const TensorView* batch_indices, const TensorView& y, const char* y_name, BinFn&& bin) {
  const bool packed = batch_indices == nullptr;  // mmcv: (K, 5) with the batch index first
  const int64_t cols = packed ? 5 : 4;
  auto bad = [&](const char* what, auto&&... parts) {
    return error(StatusCode::kInvalidArgument, op, ": input '", what, "' ", parts...);
  };
  if (x.rank() != 4) return bad("X", "must have rank 4 (N, C, H, W), got ", dims_text(x.dims));
  if (!is_float(x.dtype)) return bad("X", "must be float16, float32 or float64, got ", dtype_name(x.dtype));
  if (rois.rank() != 2 || rois.dims[1] != cols)
    return bad("rois", "must have shape (num_rois, ", cols, "), got ", dims_text(rois.dims));
  if (rois.dtype != x.dtype)
    return bad("rois", "must have the dtype of X (", dtype_name(x.dtype), "), got ", dtype_name(rois.dtype));
  const int64_t k_rois = rois.dims[0];
  if (!packed) {
    const TensorView& bi = *batch_indices;
    if (bi.rank() != 1 || bi.dims[0] != k_rois)
      return bad("batch_indices", "must have shape (num_rois) = (", k_rois, "), got ", dims_text(bi.dims));
    if (bi.dtype != DataType::kInt64 && bi.dtype != DataType::kInt32)
      return bad("batch_indices", "must be int64 or int32, got ", dtype_name(bi.dtype));
    GRAFT_RETURN_IF_ERROR(check_view(op, "input 'batch_indices'", bi));
  }
  const int64_t n = x.dims[0], c = x.dims[1], height = x.dims[2], width = x.dims[3];
  const int64_t oh = p.output_height, ow = p.output_width;
  const std::vector<int64_t> want = {k_rois, c, oh, ow};
  if (y.dims != want || y.dtype != x.dtype)
    return error(StatusCode::kInvalidArgument, op, ": ", y_name, " must be ", dtype_name(x.dtype), " ",
                 dims_text(want), ", got ", dtype_name(y.dtype), " ", dims_text(y.dims));
  GRAFT_RETURN_IF_ERROR(check_view(op, "input 'X'", x));
  GRAFT_RETURN_IF_ERROR(check_view(op, "input 'rois'", rois));
  GRAFT_RETURN_IF_ERROR(check_view(op, y_name, y));
  if (y.numel() == 0) return Status::ok();

  const double offset = p.half_pixel ? 0.5 : 0.0;
  std::vector<Sample> samples;
  for (int64_t k = 0; k < k_rois; ++k) {
    // Batch index.
    int64_t b = 0;
    if (packed) {
      const double bv = load_as_double(rois.dtype, rois.data, k * cols);
      if (!(bv > -1.0 && bv < static_cast<double>(n)))
        return error(StatusCode::kInvalidArgument, op, ": roi ", k, " has batch index ", bv,
                     " (column 0 of 'rois'), outside [0, ", n, ")");
      b = static_cast<int64_t>(bv);
    } else {
      const TensorView& bi = *batch_indices;
      b = bi.dtype == DataType::kInt64 ? bi.as<int64_t>()[k] : static_cast<int64_t>(bi.as<int32_t>()[k]);
      if (b < 0 || b >= n)
        return error(StatusCode::kInvalidArgument, op, ": roi ", k, " has batch index ", b,
                     " (input 'batch_indices'), outside [0, ", n, ")");
    }
    double box[4];
    for (int j = 0; j < 4; ++j) {
      box[j] = load_as_double(rois.dtype, rois.data, k * cols + (packed ? 1 : 0) + j);
      if (!std::isfinite(box[j]))
        return error(StatusCode::kInvalidArgument, op, ": roi ", k, " has a non-finite coordinate (", box[j], ")");
    }
    const double x1 = box[0] * p.spatial_scale - offset, y1 = box[1] * p.spatial_scale - offset;
    const double x2 = box[2] * p.spatial_scale - offset, y2 = box[3] * p.spatial_scale - offset;
    double roi_w = x2 - x1, roi_h = y2 - y1;
    if (!p.half_pixel) {  // legacy: a malformed roi becomes 1x1
      roi_w = std::max(roi_w, 1.0);
      roi_h = std::max(roi_h, 1.0);
    }
    const double bin_h = roi_h / static_cast<double>(oh), bin_w = roi_w / static_cast<double>(ow);
    // Samples per bin and axis; a roi of negative extent (half_pixel, x2 < x1) has none.
    const double gh = p.sampling_ratio > 0 ? static_cast<double>(p.sampling_ratio) : std::ceil(bin_h);
    const double gw = p.sampling_ratio > 0 ? static_cast<double>(p.sampling_ratio) : std::ceil(bin_w);
    // Each factor is bounded on its own too: with the other axis empty (a negative extent) the product
    // is 0 however large this one is, and converting a count past int64's range is undefined (a fuzzed
    // plan had 1.08e19 samples along one axis).
    if (!std::isfinite(gh) || !std::isfinite(gw) || gh > kMaxSamplesPerBin || gw > kMaxSamplesPerBin ||
        std::max(gh, 0.0) * std::max(gw, 0.0) > kMaxSamplesPerBin)
      return error(StatusCode::kInvalidArgument, op, ": roi ", k, " (", box[0], ", ", box[1], ", ", box[2], ", ",
                   box[3], ") needs ", gh, " x ", gw, " samples per output bin, more than 2^24 (lower "
                   "'sampling_ratio' or check the roi coordinates and 'spatial_scale')");
    const int64_t grid_h = gh > 0.0 ? static_cast<int64_t>(gh) : 0;
    const int64_t grid_w = gw > 0.0 ? static_cast<int64_t>(gw) : 0;
    const double count = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));

    // The sampling points do not depend on the channel: compute them once per roi and bin.
    samples.assign(static_cast<size_t>(grid_h * grid_w), Sample{});
    for (int64_t ph = 0; ph < oh; ++ph)
      for (int64_t pw = 0; pw < ow; ++pw) {
        for (int64_t iy = 0; iy < grid_h; ++iy) {
          const double sy = y1 + static_cast<double>(ph) * bin_h +
                            (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
          for (int64_t ix = 0; ix < grid_w; ++ix) {
            const double sx = x1 + static_cast<double>(pw) * bin_w +
                              (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
            samples[static_cast<size_t>(iy * grid_w + ix)] = bilinear_sample(sy, sx, height, width);
          }
        }
        bin(k, b, ph, pw, samples, count);
      }
  }
  return Status::ok();
}

// One bin's pooled value from its samples' corner values v[4 * sample + corner]. For max pooling,
// `winner` receives the sample (and, for ONNX's weighted-corner max, the corner; else -1) that gave
// it, the first one among equals, or stays (-1, -1) when no sample does.
double pool_bin(const RoiAlignParams& p, const std::vector<Sample>& samples, const double* v, double count,
                std::pair<int64_t, int>* winner = nullptr) {
  double acc = 0.0;
  bool first = true;
  for (size_t i = 0; i < samples.size(); ++i) {
    const Sample& s = samples[i];
    const double* sv = v + 4 * i;
    if (p.pool == RoiAlignParams::Pool::kAvg) {
      acc += s.w[0] * sv[0] + s.w[1] * sv[1] + s.w[2] * sv[2] + s.w[3] * sv[3];
      continue;
    }
    if (p.max_of_weighted_corners) {
      for (int t = 0; t < 4; ++t)
        if (first || s.w[t] * sv[t] > acc) {
          acc = s.w[t] * sv[t];
          first = false;
          if (winner) *winner = {static_cast<int64_t>(i), t};
        }
    } else {
      const double val = s.w[0] * sv[0] + s.w[1] * sv[1] + s.w[2] * sv[2] + s.w[3] * sv[3];
      if (first || val > acc) {
        acc = val;
        first = false;
        if (winner) *winner = {static_cast<int64_t>(i), -1};
      }
    }
  }
  return p.pool == RoiAlignParams::Pool::kAvg ? acc / count : acc;
}

// The corner values of every sample of a bin in one channel plane (0 for a sample outside the map).
void load_corners(const TensorView& x, int64_t base, const std::vector<Sample>& samples, std::vector<double>& v) {
  v.assign(4 * samples.size(), 0.0);
  for (size_t i = 0; i < samples.size(); ++i)
    if (samples[i].inside)
      for (int t = 0; t < 4; ++t) v[4 * i + t] = load_as_double(x.dtype, x.data, base + samples[i].pos[t]);
}

}  // namespace

Status roi_align_run(const char* op, const RoiAlignParams& p, const TensorView& x, const TensorView& rois,
                     const TensorView* batch_indices, const TensorView& y) {
  const int64_t c = x.rank() == 4 ? x.dims[1] : 0, plane = x.rank() == 4 ? x.dims[2] * x.dims[3] : 0;
  const int64_t oh = p.output_height, ow = p.output_width;
  std::vector<double> v;
  return for_each_roi_bin(op, p, x, rois, batch_indices, y, "the output",
                          [&](int64_t k, int64_t b, int64_t ph, int64_t pw, const std::vector<Sample>& samples,
                              double count) {
                            for (int64_t ch = 0; ch < c; ++ch) {
                              load_corners(x, (b * c + ch) * plane, samples, v);
                              store_from_double(y.dtype, y.data, ((k * c + ch) * oh + ph) * ow + pw,
                                                pool_bin(p, samples, v.data(), count));
                            }
                          });
}

Status roi_align_backward_run(const char* op, const RoiAlignParams& p, const TensorView& x, const TensorView& rois,
                              const TensorView* batch_indices, const TensorView& dy, const TensorView& dx) {
  if (dx.dims != x.dims || dx.dtype != x.dtype)
    return error(StatusCode::kInvalidArgument, op, ": backward: the input's gradient must be ", dtype_name(x.dtype),
                 " ", dims_text(x.dims), ", got ", dtype_name(dx.dtype), " ", dims_text(dx.dims));
  GRAFT_RETURN_IF_ERROR(check_view(op, "the input's gradient", dx));
  const int64_t c = x.rank() == 4 ? x.dims[1] : 0, plane = x.rank() == 4 ? x.dims[2] * x.dims[3] : 0;
  const int64_t oh = p.output_height, ow = p.output_width;
  // Samples of several bins and rois share pixels: the gradient adds up in double, rounded once.
  std::vector<double> gx(static_cast<size_t>(std::max<int64_t>(x.numel(), 0)), 0.0), v;
  Status st = for_each_roi_bin(
      op, p, x, rois, batch_indices, dy, "the output's gradient",
      [&](int64_t k, int64_t b, int64_t ph, int64_t pw, const std::vector<Sample>& samples, double count) {
        for (int64_t ch = 0; ch < c; ++ch) {
          const double g = load_as_double(dy.dtype, dy.data, ((k * c + ch) * oh + ph) * ow + pw);
          const int64_t base = (b * c + ch) * plane;
          auto add = [&](const Sample& s, int t, double share) {
            if (s.inside) gx[static_cast<size_t>(base + s.pos[t])] += s.w[t] * share;
          };
          if (p.pool == RoiAlignParams::Pool::kAvg) {
            for (const Sample& s : samples)
              for (int t = 0; t < 4; ++t) add(s, t, g / count);
            continue;
          }
          // Max: the gradient goes to the sample (or corner) that won, as mmcv's and ONNX Runtime's do.
          load_corners(x, base, samples, v);
          std::pair<int64_t, int> winner{-1, -1};
          pool_bin(p, samples, v.data(), count, &winner);
          if (winner.first < 0) continue;
          const Sample& s = samples[static_cast<size_t>(winner.first)];
          if (winner.second >= 0) {
            add(s, winner.second, g);
          } else {
            for (int t = 0; t < 4; ++t) add(s, t, g);
          }
        }
      });
  GRAFT_RETURN_IF_ERROR(st);
  for (size_t i = 0; i < gx.size(); ++i) store_from_double(dx.dtype, dx.data, static_cast<int64_t>(i), gx[i]);
  return Status::ok();
}

Status roi_align(ExecContext& ctx) {
  if (ctx.inputs.size() != 3 || !ctx.inputs[0] || !ctx.inputs[1] || !ctx.inputs[2])
    return error(StatusCode::kInvalidModel, "RoiAlign takes 3 inputs (X, rois, batch_indices)");
  if (ctx.outputs.empty() || !ctx.outputs[0])
    return error(StatusCode::kInvalidModel, "RoiAlign: output Y is missing");
  GRAFT_ASSIGN_OR_RETURN(RoiAlignParams p, parse_roi_align_attrs(*ctx.attrs, ctx.opset));
  const TensorView bi = ctx.inputs[2]->view();
  return roi_align_run("RoiAlign", p, ctx.inputs[0]->view(), ctx.inputs[1]->view(), &bi, ctx.outputs[0]->view());
}

// ================================================================================================
// GridSample
// ================================================================================================

namespace {

// Keys' cubic convolution kernel with a = -0.75 (as PyTorch and ONNX use), at distance d >= 0.
double keys_cubic(double d) {
  constexpr double a = -0.75;
  d = std::fabs(d);
  if (d <= 1.0) return ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0;
  if (d < 2.0) return ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a;
  return 0.0;
}

// d/dd of keys_cubic(d), for the backward.
double keys_cubic_slope(double d) {
  constexpr double a = -0.75;
  const double m = std::fabs(d), sign = d < 0.0 ? -1.0 : 1.0;
  if (m <= 1.0) return sign * (3.0 * (a + 2.0) * m - 2.0 * (a + 3.0)) * m;
  if (m < 2.0) return sign * ((3.0 * a * m - 10.0 * a) * m + 8.0 * a);
  return 0.0;
}

// Reflects v into [lo, hi] (a mirror at each end, repeatedly). lo == hi gives lo. `slope`, when
// given, receives d(result)/dv: 1 inside, -1 or 1 after an odd or even count of mirrors outside
// (0 for lo == hi).
double reflect(double v, double lo, double hi, double* slope = nullptr) {
  const double span = hi - lo;
  if (slope) *slope = 1.0;
  if (!(span > 0.0)) {
    if (slope) *slope = 0.0;
    return lo;
  }
  if (v >= lo && v <= hi) return v;
  const double d = v < lo ? lo - v : v - hi;
  const double q = std::floor(d / span);
  const double r = d - q * span;
  const bool even = std::fmod(q, 2.0) == 0.0;
  if (slope) *slope = even ? -1.0 : 1.0;
  if (v < lo) return even ? lo + r : hi - r;
  return even ? hi - r : lo + r;
}

// std::clamp(u, lo, hi) and its slope (0 where clamped, at the bounds too, as PyTorch's backward).
double clamp_with_slope(double u, double lo, double hi, double* slope) {
  if (u <= lo || u >= hi) *slope = 0.0;
  return std::clamp(u, lo, hi);
}

// Per spatial axis: the taps (index into the axis, or -1 for a zero), their weights, and each
// weight's derivative with respect to the normalized grid coordinate (the backward's).
struct AxisTaps {
  int n = 0;
  int64_t idx[4] = {-1, -1, -1, -1};
  double w[4] = {0, 0, 0, 0};
  double dw[4] = {0, 0, 0, 0};
};

struct AxisGeom {
  int64_t size = 1;
  double lo = 0, hi = 0;  // the coordinate range the padding keeps values in
};

// The spatial axes of x (N, C, spatial...): their sizes and the ranges the padding keeps values in.
std::vector<AxisGeom> axis_geometry(const GridSampleParams& p, const std::vector<int64_t>& x_dims) {
  std::vector<AxisGeom> geom(x_dims.size() - 2);
  for (size_t a = 0; a < geom.size(); ++a) {
    AxisGeom& g = geom[a];
    g.size = x_dims[2 + a];
    g.lo = p.align_corners ? 0.0 : -0.5;
    g.hi = p.align_corners ? static_cast<double>(g.size) - 1.0 : static_cast<double>(g.size) - 0.5;
  }
  return geom;
}

// Index of a tap at (integer-valued) coordinate t after the padding, or -1 for a zero.
int64_t tap_index(double t, const AxisGeom& g, GridSampleParams::Padding pad) {
  const double last = static_cast<double>(g.size - 1);
  switch (pad) {
    case GridSampleParams::Padding::kZeros:
      return (t >= 0.0 && t <= last) ? static_cast<int64_t>(t) : -1;
    case GridSampleParams::Padding::kBorder:
      return static_cast<int64_t>(std::clamp(t, 0.0, last));
    case GridSampleParams::Padding::kReflection:
      // Truncation toward zero as the ONNX definition does; the clamp only guards rounding.
      return static_cast<int64_t>(std::clamp(std::trunc(reflect(t, g.lo, g.hi)), 0.0, last));
  }
  return -1;
}

// The taps of one axis for normalized coordinate `gv`. False when the coordinate is not finite.
bool axis_taps(double gv, const AxisGeom& g, const GridSampleParams& p, bool round_half_even, AxisTaps& out) {
  const double size = static_cast<double>(g.size);
  double v = p.align_corners ? (gv + 1.0) / 2.0 * (size - 1.0) : ((gv + 1.0) * size - 1.0) / 2.0;
  if (!std::isfinite(v)) return false;
  // dv/dgv, times the padding's slope wherever the coordinate is padded.
  double slope = p.align_corners ? (size - 1.0) / 2.0 : size / 2.0;
  using Mode = GridSampleParams::Mode;
  using Pad = GridSampleParams::Padding;
  auto pad_coordinate = [&](double u) {
    if (p.padding == Pad::kBorder) return clamp_with_slope(u, 0.0, size - 1.0, &slope);
    if (p.padding == Pad::kReflection) {
      double mirror = 1.0;
      u = reflect(u, g.lo, g.hi, &mirror);
      slope *= mirror;
      // PyTorch clips the reflected coordinate to the pixel range; ONNX keeps it (its taps pad again).
      return p.torch_order ? clamp_with_slope(u, 0.0, size - 1.0, &slope) : u;
    }
    return u;
  };
  auto round_nearest = [&](double u) { return round_half_even ? std::nearbyint(u) : std::round(u); };
  // Far outside with zero padding: every tap would read zero (and the casts below stay in range).
  const double margin = 4.0;
  switch (p.mode) {
    case Mode::kNearest: {
      double u;
      if (p.torch_order) {
        u = round_nearest(pad_coordinate(v));
      } else {
        u = round_nearest(v);
        if (u < g.lo || u > g.hi) u = pad_coordinate(u);
      }
      out.n = 1;
      out.w[0] = 1.0;
      out.idx[0] = (u < -margin || u > size + margin) && p.padding == Pad::kZeros ? -1 : tap_index(u, g, p.padding);
      return true;
    }
    case Mode::kLinear: {
      if (v < g.lo || v > g.hi) v = pad_coordinate(v);
      if (p.padding == Pad::kZeros && (v < -margin || v > size + margin)) {
        out.n = 0;
        return true;
      }
      const double f = std::floor(v), t = v - f;
      out.n = 2;
      out.idx[0] = tap_index(f, g, p.padding);
      out.idx[1] = tap_index(f + 1.0, g, p.padding);
      out.w[0] = 1.0 - t;
      out.w[1] = t;
      out.dw[0] = -slope;
      out.dw[1] = slope;
      return true;
    }
    case Mode::kCubic: {
      if (!p.torch_order && (v < g.lo || v > g.hi)) v = pad_coordinate(v);
      if (p.padding == Pad::kZeros && (v < -margin || v > size + margin)) {
        out.n = 0;
        return true;
      }
      // Without coordinate padding (PyTorch) v may be far outside: border/reflection taps are
      // computed in double before any cast, so that stays defined.
      const double f = std::floor(v), t = v - f;
      out.n = 4;
      for (int k = 0; k < 4; ++k) {
        out.idx[k] = tap_index(f - 1.0 + k, g, p.padding);
        out.w[k] = keys_cubic(t - (k - 1.0));
        out.dw[k] = keys_cubic_slope(t - (k - 1.0)) * slope;
      }
      return true;
    }
  }
  return false;
}

}  // namespace

Status grid_sample_run(const char* op, const GridSampleParams& p, const TensorView& x, const TensorView& grid,
                       const TensorView& y) {
  auto bad = [&](const char* what, auto&&... parts) {
    return error(StatusCode::kInvalidArgument, op, ": input '", what, "' ", parts...);
  };
  const int64_t r = x.rank();
  if (r != 4 && r != 5) return bad("X", "must have rank 4 (N, C, H, W) or 5 (N, C, D, H, W), got ", dims_text(x.dims));
  if (!is_float(x.dtype)) return bad("X", "must be float16, float32 or float64, got ", dtype_name(x.dtype));
  const int64_t k = r - 2;
  if (grid.rank() != r || grid.dims[0] != x.dims[0] || grid.dims[static_cast<size_t>(r - 1)] != k)
    return bad("grid", "must have shape (N, ", k == 2 ? "H_out, W_out" : "D_out, H_out, W_out", ", ", k,
               ") with N = ", x.dims[0], ", got ", dims_text(grid.dims));
  if (!is_float(grid.dtype)) return bad("grid", "must be float16, float32 or float64, got ", dtype_name(grid.dtype));
  std::vector<int64_t> want = {x.dims[0], x.dims[1]};
  for (int64_t a = 1; a <= k; ++a) want.push_back(grid.dims[static_cast<size_t>(a)]);
  if (y.dims != want || y.dtype != x.dtype)
    return error(StatusCode::kInvalidArgument, op, ": the output must be ", dtype_name(x.dtype), " ",
                 dims_text(want), ", got ", dtype_name(y.dtype), " ", dims_text(y.dims));
  GRAFT_RETURN_IF_ERROR(check_view(op, "input 'X'", x));
  GRAFT_RETURN_IF_ERROR(check_view(op, "input 'grid'", grid));
  GRAFT_RETURN_IF_ERROR(check_view(op, "the output", y));
  if (y.numel() == 0) return Status::ok();

  const int64_t n = x.dims[0], c = x.dims[1];
  const std::vector<AxisGeom> geom = axis_geometry(p, x.dims);
  int64_t in_plane = 1;
  for (const AxisGeom& g : geom) in_plane *= g.size;
  int64_t out_plane = 1;
  for (int64_t a = 1; a <= k; ++a) out_plane *= grid.dims[static_cast<size_t>(a)];
  // An empty input map: every sample reads padding, i.e. zero.
  const bool empty_map = in_plane == 0;
  // PyTorch rounds with nearbyint in 2-D and std::round in 3-D; ONNX's definition follows it.
  const bool half_even = k == 2;

  std::vector<AxisTaps> taps(static_cast<size_t>(k));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < out_plane; ++o) {
      bool valid = !empty_map;
      // grid's last axis lists (x, y[, z]): component j addresses spatial axis k-1-j.
      for (int64_t j = 0; j < k && valid; ++j) {
        const double gv = load_as_double(grid.dtype, grid.data, (b * out_plane + o) * k + j);
        valid = axis_taps(gv, geom[static_cast<size_t>(k - 1 - j)], p, half_even, taps[static_cast<size_t>(k - 1 - j)]);
      }
      for (int64_t ch = 0; ch < c; ++ch) {
        double acc = 0.0;
        if (valid) {
          const int64_t base = (b * c + ch) * in_plane;
          if (k == 2) {
            const AxisTaps &ty = taps[0], &tx = taps[1];
            for (int i = 0; i < ty.n; ++i) {
              if (ty.idx[i] < 0) continue;
              for (int j = 0; j < tx.n; ++j) {
                if (tx.idx[j] < 0) continue;
                acc += ty.w[i] * tx.w[j] *
                       load_as_double(x.dtype, x.data, base + ty.idx[i] * geom[1].size + tx.idx[j]);
              }
            }
          } else {
            const AxisTaps &tz = taps[0], &ty = taps[1], &tx = taps[2];
            for (int h = 0; h < tz.n; ++h) {
              if (tz.idx[h] < 0) continue;
              for (int i = 0; i < ty.n; ++i) {
                if (ty.idx[i] < 0) continue;
                for (int j = 0; j < tx.n; ++j) {
                  if (tx.idx[j] < 0) continue;
                  const int64_t at = (tz.idx[h] * geom[1].size + ty.idx[i]) * geom[2].size + tx.idx[j];
                  acc += tz.w[h] * ty.w[i] * tx.w[j] * load_as_double(x.dtype, x.data, base + at);
                }
              }
            }
          }
        }
        store_from_double(y.dtype, y.data, (b * c + ch) * out_plane + o, acc);
      }
    }
  return Status::ok();
}

Status grid_sample_backward_run(const char* op, const GridSampleParams& p, const TensorView& x, const TensorView& grid,
                                const TensorView& dy, const TensorView& dx, const TensorView& dgrid) {
  auto bad = [&](const char* what, const TensorView& t, const std::vector<int64_t>& want, DataType dt) {
    return error(StatusCode::kInvalidArgument, op, ": backward: ", what, " must be ", dtype_name(dt), " ",
                 dims_text(want), ", got ", dtype_name(t.dtype), " ", dims_text(t.dims));
  };
  if (x.rank() != 4 || !is_float(x.dtype))
    return error(StatusCode::kInvalidArgument, op, ": backward: input must be a float (N, C, H, W) tensor, got ",
                 dtype_name(x.dtype), " ", dims_text(x.dims));
  const int64_t n = x.dims[0], c = x.dims[1];
  if (grid.rank() != 4 || grid.dims[0] != n || grid.dims[3] != 2 || !is_float(grid.dtype))
    return error(StatusCode::kInvalidArgument, op, ": backward: grid must be a float (N, H_out, W_out, 2) tensor with N = ",
                 n, ", got ", dtype_name(grid.dtype), " ", dims_text(grid.dims));
  const std::vector<int64_t> out_dims = {n, c, grid.dims[1], grid.dims[2]};
  if (dy.dims != out_dims || dy.dtype != x.dtype) return bad("the output's gradient", dy, out_dims, x.dtype);
  if (dx.dims != x.dims || dx.dtype != x.dtype) return bad("the input's gradient", dx, x.dims, x.dtype);
  if (dgrid.dims != grid.dims || dgrid.dtype != grid.dtype) return bad("the grid's gradient", dgrid, grid.dims, grid.dtype);
  for (const auto& [what, t] : {std::pair<const char*, const TensorView*>{"input 'input'", &x}, {"input 'grid'", &grid},
                                {"the output's gradient", &dy}, {"the input's gradient", &dx},
                                {"the grid's gradient", &dgrid}})
    GRAFT_RETURN_IF_ERROR(check_view(op, what, *t));

  const std::vector<AxisGeom> geom = axis_geometry(p, x.dims);
  const int64_t in_plane = geom[0].size * geom[1].size, out_plane = grid.dims[1] * grid.dims[2];
  // The input's gradient adds up in double (several samples read one pixel), rounded once at the end.
  std::vector<double> gx(static_cast<size_t>(x.numel()), 0.0);
  AxisTaps taps[2];
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < out_plane; ++o) {
      // grid's last axis lists (x, y): component j addresses spatial axis 1 - j, as in the forward.
      bool valid = in_plane > 0;
      for (int64_t j = 0; j < 2 && valid; ++j)
        valid = axis_taps(load_as_double(grid.dtype, grid.data, (b * out_plane + o) * 2 + j), geom[1 - j], p,
                          /*round_half_even=*/true, taps[1 - j]);
      double gg[2] = {0.0, 0.0};  // d loss / d (grid x, grid y)
      if (valid) {
        const AxisTaps &ty = taps[0], &tx = taps[1];
        for (int64_t ch = 0; ch < c; ++ch) {
          const double g = load_as_double(dy.dtype, dy.data, (b * c + ch) * out_plane + o);
          const int64_t base = (b * c + ch) * in_plane;
          for (int i = 0; i < ty.n; ++i) {
            if (ty.idx[i] < 0) continue;
            for (int j = 0; j < tx.n; ++j) {
              if (tx.idx[j] < 0) continue;
              const int64_t at = base + ty.idx[i] * geom[1].size + tx.idx[j];
              const double xv = load_as_double(x.dtype, x.data, at);
              gx[static_cast<size_t>(at)] += ty.w[i] * tx.w[j] * g;
              gg[0] += ty.w[i] * tx.dw[j] * xv * g;
              gg[1] += ty.dw[i] * tx.w[j] * xv * g;
            }
          }
        }
      }
      for (int64_t j = 0; j < 2; ++j) store_from_double(dgrid.dtype, dgrid.data, (b * out_plane + o) * 2 + j, gg[j]);
    }
  for (size_t i = 0; i < gx.size(); ++i) store_from_double(dx.dtype, dx.data, static_cast<int64_t>(i), gx[i]);
  return Status::ok();
}

Status grid_sample(ExecContext& ctx) {
  if (ctx.inputs.size() != 2 || !ctx.inputs[0] || !ctx.inputs[1])
    return error(StatusCode::kInvalidModel, "GridSample takes 2 inputs (X, grid)");
  if (ctx.outputs.empty() || !ctx.outputs[0])
    return error(StatusCode::kInvalidModel, "GridSample: output Y is missing");
  GRAFT_ASSIGN_OR_RETURN(GridSampleParams p, parse_grid_sample_attrs(*ctx.attrs, ctx.opset));
  if (ctx.inputs[0]->rank() == 5 && ctx.opset < 20)
    return error(StatusCode::kInvalidModel, "GridSample: 5-D input (volumetric sampling) needs opset 20, the model has ",
                 ctx.opset);
  return grid_sample_run("GridSample", p, ctx.inputs[0]->view(), ctx.inputs[1]->view(), ctx.outputs[0]->view());
}

}  // namespace cpu

// ---- schemas: inference and the table rows -------------------------------------------------------

namespace {

using namespace infer;
const std::vector<DataType> kSampleFloats{kF32, kF16, kF64};

// Constant dims that disagree are an error; symbolic ones are checked by the kernel.
bool known_differ(const Dim& a, const Dim& b) { return a.is_const() && b.is_const() && a.value() != b.value(); }

// RoiAlign: X (N, C, H, W), rois (num_rois, 4), batch_indices (num_rois) int64 ->
// Y (num_rois, C, output_height, output_width).
Status infer_roi_align(InferContext& ctx) {
  if (ctx.num_inputs() != 3)
    return ctx.fail("takes 3 inputs (X, rois, batch_indices), got ", static_cast<uint64_t>(ctx.num_inputs()));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kSampleFloats));
  GRAFT_RETURN_IF_ERROR(require_input(ctx, 1));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 2, {kI64, kI32}));
  const DataType t = ctx.input(0).dtype;
  if (ctx.input(1).dtype != t)
    return ctx.fail("input 'rois' ('", ctx.node().inputs[1]->name, "') has dtype ", dtype_name(ctx.input(1).dtype),
                    " but X has ", dtype_name(t), "; they must match");
  GRAFT_ASSIGN_OR_RETURN(RoiAlignParams p, parse_roi_align_attrs(ctx.attrs(), ctx.opset()));
  GRAFT_ASSIGN_OR_RETURN(Shape x, ctx.input_shape(0));
  GRAFT_ASSIGN_OR_RETURN(Shape rois, ctx.input_shape(1));
  GRAFT_ASSIGN_OR_RETURN(Shape bi, ctx.input_shape(2));
  if (x.size() != 4) return ctx.fail("input X must have rank 4 (N, C, H, W), got ", shape_to_string(x));
  if (rois.size() != 2 || known_differ(rois[1], Dim(4)))
    return ctx.fail("input 'rois' must have shape (num_rois, 4), got ", shape_to_string(rois));
  if (bi.size() != 1) return ctx.fail("input 'batch_indices' must have shape (num_rois), got ", shape_to_string(bi));
  if (known_differ(rois[0], bi[0]))
    return ctx.fail("inputs 'rois' ", shape_to_string(rois), " and 'batch_indices' ", shape_to_string(bi),
                    " disagree on num_rois");
  // num_rois from whichever input knows it.
  const Dim k = rois[0].is_const() ? rois[0] : bi[0];
  ctx.set_output(0, TensorDesc(t, Shape{k, x[1], Dim(p.output_height), Dim(p.output_width)}));
  return Status::ok();
}

// GridSample: X (N, C, H, W) and grid (N, H_out, W_out, 2) -> Y (N, C, H_out, W_out); from opset 20
// also X (N, C, D, H, W) and grid (N, D_out, H_out, W_out, 3).
Status infer_grid_sample(InferContext& ctx) {
  if (ctx.num_inputs() != 2)
    return ctx.fail("takes 2 inputs (X, grid), got ", static_cast<uint64_t>(ctx.num_inputs()));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kSampleFloats));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, kSampleFloats));
  GRAFT_ASSIGN_OR_RETURN(GridSampleParams p, parse_grid_sample_attrs(ctx.attrs(), ctx.opset()));
  (void)p;
  GRAFT_ASSIGN_OR_RETURN(Shape x, ctx.input_shape(0));
  GRAFT_ASSIGN_OR_RETURN(Shape grid, ctx.input_shape(1));
  if (x.size() == 5 && ctx.opset() < 20)
    return ctx.fail("a 5-D input (volumetric sampling) needs opset 20; the model has opset ", ctx.opset());
  if (x.size() != 4 && x.size() != 5)
    return ctx.fail("input X must have rank 4 (N, C, H, W)", ctx.opset() >= 20 ? " or 5 (N, C, D, H, W)" : "",
                    ", got ", shape_to_string(x));
  const int64_t k = static_cast<int64_t>(x.size()) - 2;
  if (grid.size() != x.size() || known_differ(grid.back(), Dim(k)) || known_differ(grid[0], x[0]))
    return ctx.fail("input 'grid' must have shape (N, ", k == 2 ? "H_out, W_out" : "D_out, H_out, W_out", ", ", k,
                    ") with X's N; got grid ", shape_to_string(grid), " for X ", shape_to_string(x));
  Shape out{x[0].is_const() ? x[0] : grid[0], x[1]};
  for (size_t a = 1; a + 1 < grid.size(); ++a) out.push_back(grid[a]);
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, out));
  return Status::ok();
}

}  // namespace

void append_sampling_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"GridSample", 16, infer_grid_sample, cpu::grid_sample});
  out.push_back(OpEntry{"RoiAlign", 10, infer_roi_align, cpu::roi_align});
}

}  // namespace graft
