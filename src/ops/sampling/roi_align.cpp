// RoiAlign's definition: its attribute reader, its naive CPU reference (each output element computed on
// its own, in double, from the definition) and its schema. The mmdeploy and TensorRT forms in
// ops/roi_align call the same reference with their own attributes and layouts.
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
#include "ops/sampling/sampling_util.h"

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

// ---- CPU reference --------------------------------------------------------------------------------

namespace cpu {

using sampling::check_view;
using sampling::dims_text;
using sampling::is_float;

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

}  // namespace cpu

// ---- schema ----------------------------------------------------------------------------------------

namespace {

using namespace infer;
using sampling::kSampleFloats;
using sampling::known_differ;

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

}  // namespace

void append_roi_align_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"RoiAlign", 10, infer_roi_align, cpu::roi_align});
}

}  // namespace graft
