// LpPool and GlobalLpPool: the order reader both they and LpNormalization use, the pools' attribute
// reader (lp_norm.h), their CPU reference and schemas. CUDA: lp_pool.cu.
#include "ops/lp_norm/lp_norm.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"
#include "core/checked_math.h"
#include "core/index_math.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- attributes and geometry (lp_norm.h) -------------------------------------------------------

Result<int64_t> lp_order(const AttributeMap& attrs, bool one_or_two) {
  auto p = attrs.get_int("p", 2);
  if (!p) return Status(p.status()).with_attribute("p");
  if (one_or_two && p.value() != 1 && p.value() != 2) return attr_error("p", "must be 1 or 2, got ", p.value());
  if (!one_or_two && p.value() < 1) return attr_error("p", "must be >= 1, got ", p.value());
  return p.value();
}

Result<LpPoolAttrs> lp_pool_attrs(const AttributeMap& attrs, size_t spatial) {
  LpPoolAttrs a;
  GRAFT_ASSIGN_OR_RETURN(a.window, parse_window_attrs(attrs, spatial, nullptr, /*pool=*/true));
  GRAFT_ASSIGN_OR_RETURN(a.p, lp_order(attrs, false));
  return a;
}

Result<LpPoolGeometry> lp_pool_geometry(const AttributeMap& attrs, const std::vector<int64_t>& x,
                                        const std::vector<int64_t>& y, bool global) {
  if (x.size() < 3)
    return error(StatusCode::kInvalidModel, "input X must have rank >= 3 (N, C, spatial...), got ", ints_to_string(x));
  if (y.size() != x.size() || y[0] != x[0] || y[1] != x[1])
    return error(StatusCode::kInternal, "output Y ", ints_to_string(y), " does not fit input X ", ints_to_string(x));
  const size_t n = x.size() - 2;
  LpPoolGeometry g;
  if (!checked_mul(x[0], x[1], &g.planes))
    return error(StatusCode::kInvalidModel, "input X ", ints_to_string(x), " is too large");
  g.in.assign(x.begin() + 2, x.end());
  g.out.assign(y.begin() + 2, y.end());
  if (global) {
    GRAFT_ASSIGN_OR_RETURN(g.p, lp_order(attrs, false));
    g.kernel = g.in;
    g.stride.assign(n, 1);
    g.pad.assign(n, 0);
    g.dilation.assign(n, 1);
    return g;
  }
  GRAFT_ASSIGN_OR_RETURN(LpPoolAttrs a, lp_pool_attrs(attrs, n));
  std::vector<int64_t> ends;
  resolve_pads(a.window, g.in, &g.pad, &ends);
  g.kernel = a.window.kernel;
  g.stride = a.window.strides;
  g.dilation = a.window.dilations;
  g.p = a.p;
  return g;
}

// ---- CPU reference -----------------------------------------------------------------------------
// Every value is loaded as double, sums are accumulated in double and rounded once into the output
// dtype.

namespace cpu {
namespace {

Status lp_pool_run(ExecContext& ctx, bool global) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  GRAFT_RETURN_IF_ERROR(require_float_tensor(ctx.inputs[0], "X"));
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  GRAFT_CHECK(y.dtype() == x.dtype());
  GRAFT_ASSIGN_OR_RETURN(LpPoolGeometry g, lp_pool_geometry(attrs_of(ctx), x.dims(), y.dims(), global));
  const size_t n = g.in.size();
  int64_t in_plane = 1, out_plane = 1;
  for (size_t a = 0; a < n; ++a) {
    in_plane *= g.in[a];
    out_plane *= g.out[a];
  }
  const std::vector<double> xv = load_doubles(x);
  std::vector<double> yv(static_cast<size_t>(y.numel()));
  std::vector<int64_t> o(n), first(n), last(n), t(n);
  for (int64_t op = 0; op < out_plane; ++op) {
    unravel(op, g.out, o);
    bool empty = false;
    for (size_t a = 0; a < n; ++a) {
      lp_taps_inside(o[a] * g.stride[a] - g.pad[a], g.dilation[a], g.kernel[a], g.in[a], &first[a], &last[a]);
      empty = empty || first[a] == last[a];
    }
    for (int64_t plane = 0; plane < g.planes; ++plane) {
      double sum = 0;
      // An odometer over the taps inside the input (none: the window lies in the padding).
      t = first;
      while (!empty) {
        int64_t off = 0;
        for (size_t a = 0; a < n; ++a) off = off * g.in[a] + o[a] * g.stride[a] - g.pad[a] + t[a] * g.dilation[a];
        sum += lp_abs_pow(xv[static_cast<size_t>(plane * in_plane + off)], g.p);
        size_t a = n;
        while (a-- > 0 && ++t[a] == last[a]) t[a] = first[a];
        if (a == static_cast<size_t>(-1)) break;
      }
      yv[static_cast<size_t>(plane * out_plane + op)] = lp_root(sum, g.p);
    }
  }
  store_doubles(y, yv);
  return Status::ok();
}

Status lp_pool(ExecContext& ctx) { return lp_pool_run(ctx, false); }
Status global_lp_pool(ExecContext& ctx) { return lp_pool_run(ctx, true); }

}  // namespace
}  // namespace cpu

// ---- schema ------------------------------------------------------------------------------------

namespace {

using namespace infer;

Status infer_lp_pool(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  GRAFT_ASSIGN_OR_RETURN(Shape x, ctx.input_shape(0));
  if (x.size() < 3) return ctx.fail("input X must have rank >= 3 (N, C, spatial...), got ", shape_to_string(x));
  GRAFT_ASSIGN_OR_RETURN(LpPoolAttrs a, lp_pool_attrs(ctx.attrs(), x.size() - 2));
  GRAFT_ASSIGN_OR_RETURN(Shape out, window_output_shape(x, x[1], a.window));
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, out));
  return Status::ok();
}

Status infer_global_lp_pool(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  GRAFT_ASSIGN_OR_RETURN(Shape x, ctx.input_shape(0));
  GRAFT_ASSIGN_OR_RETURN(Shape out, global_pool_shape(ctx, x));
  GRAFT_RETURN_IF_ERROR(lp_order(ctx.attrs(), false).status());
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, out));
  return Status::ok();
}

}  // namespace

void append_lp_pool_ops(std::vector<OpEntry>& out) {
  // As LpNormalization: the powers are summed in float64, so a float16 engine may keep them.
  out.push_back(OpEntry{"LpPool", 11, infer_lp_pool, cpu::lp_pool});
  out.push_back(OpEntry{"GlobalLpPool", 11, infer_global_lp_pool, cpu::global_lp_pool});
}

}  // namespace graft
