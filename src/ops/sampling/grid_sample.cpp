// GridSample's definition: its attribute reader, its naive CPU reference (each output element computed
// on its own, in double, from the definition) and its schema. mmdeploy's grid_sampler in
// ops/grid_sample calls the same reference with its own attributes.
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

// ---- CPU reference --------------------------------------------------------------------------------

namespace cpu {

using sampling::check_view;
using sampling::dims_text;
using sampling::is_float;

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

// ---- schema ----------------------------------------------------------------------------------------

namespace {

using namespace infer;
using sampling::kSampleFloats;
using sampling::known_differ;

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

void append_grid_sample_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"GridSample", 16, infer_grid_sample, cpu::grid_sample});
}

}  // namespace graft
