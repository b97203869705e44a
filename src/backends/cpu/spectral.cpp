#include "backends/cpu/spectral.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "backends/cpu/nn.h"
#include "backends/cpu/unary_kernel.h"
#include "core/checked_math.h"

namespace graft::cpu {
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
            if (table) {
              c = cs[static_cast<size_t>(j)];
              s = sn[static_cast<size_t>(j)];
            } else {
              const double t = 2 * kPi * static_cast<double>(j) / static_cast<double>(l.n);
              c = std::cos(t);
              s = std::sin(t);
            }
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

}  // namespace graft::cpu
