// Conv: its schema and CPU reference (the nn family, nn.h).
#include "ops/nn/nn.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "ops/attr_util.h"
#include "ops/nn/nn_util.h"
#include "ops/operator.h"
#include "ops/window_attrs.h"

namespace graft::cpu {

// Conv: Y[n, m, o] = B[m] + sum_{c in group(m), k} X[n, c, o*stride - pad_begin + k*dilation] * W[m, c, k]

Status conv(ExecContext& ctx) {
  const Tensor* X = ctx.inputs.size() > 0 ? ctx.inputs[0] : nullptr;
  const Tensor* W = ctx.inputs.size() > 1 ? ctx.inputs[1] : nullptr;
  const Tensor* B = ctx.inputs.size() > 2 ? ctx.inputs[2] : nullptr;
  GRAFT_RETURN_IF_ERROR(require_float_tensor(X, "X"));
  GRAFT_RETURN_IF_ERROR(require_float_tensor(W, "W"));
  if (B) GRAFT_RETURN_IF_ERROR(require_float_tensor(B, "B"));
  if (ctx.outputs.empty() || !ctx.outputs[0]) return error(StatusCode::kInternal, "Conv: output Y missing");
  Tensor& Y = *ctx.outputs[0];
  if (X->rank() < 3 || W->rank() != X->rank())
    return error(StatusCode::kInvalidModel, "Conv: X ", ints_to_string(X->dims()), " and W ",
                 ints_to_string(W->dims()), " must have the same rank >= 3");
  const size_t n = static_cast<size_t>(X->rank() - 2);
  std::vector<int64_t> wk = tail(W->dims(), 2);
  GRAFT_ASSIGN_OR_RETURN(WindowAttrs w, parse_window_attrs(*ctx.attrs, n, &wk, false));
  GRAFT_ASSIGN_OR_RETURN(int64_t group, ctx.attrs->get_int("group", 1));
  const int64_t N = X->dims()[0], C = X->dims()[1], M = W->dims()[0], Cg = W->dims()[1];
  if (group < 1 || M % group != 0 || Cg * group != C)
    return error(StatusCode::kInvalidModel, "Conv: X ", ints_to_string(X->dims()), " has ", C,
                 " channels but W ", ints_to_string(W->dims()), " with group ", group, " expects ", Cg * group);
  if (B && B->numel() != M)
    return error(StatusCode::kInvalidModel, "Conv: bias B has ", B->numel(), " elements; expected ", M);
  if (Y.rank() != X->rank() || Y.dims()[0] != N || Y.dims()[1] != M)
    return error(StatusCode::kInternal, "Conv: output shape ", ints_to_string(Y.dims()), " inconsistent with inputs");

  WindowWalker walker(w, tail(X->dims(), 2), tail(Y.dims(), 2));
  const int64_t in_area = walker.in_area(), out_area = walker.out_area(), k_area = walker.kernel_area();
  const int64_t Mg = M / group;
  std::vector<double> x = load_doubles(*X), wt = load_doubles(*W), y(static_cast<size_t>(Y.numel()));
  std::vector<double> bias = B ? load_doubles(*B) : std::vector<double>(static_cast<size_t>(M), 0.0);
  WindowTaps taps;
  for (int64_t p = 0; p < out_area; ++p) {
    walker.taps_at(p, taps);
    for (int64_t b = 0; b < N; ++b) {
      for (int64_t m = 0; m < M; ++m) {
        const int64_t g = m / Mg;
        double acc = bias[static_cast<size_t>(m)];
        for (int64_t c = 0; c < Cg; ++c) {
          const double* xp = x.data() + static_cast<size_t>((b * C + g * Cg + c) * in_area);
          const double* wp = wt.data() + static_cast<size_t>((m * Cg + c) * k_area);
          for (const auto& [ko, io] : taps.kernel_and_input) acc += xp[io] * wp[ko];
        }
        y[static_cast<size_t>((b * M + m) * out_area + p)] = acc;
      }
    }
  }
  store_doubles(Y, y);
  return Status::ok();
}

}  // namespace graft::cpu

namespace graft {

namespace {

Status infer_conv(InferContext& ctx) {
  Shape x, w;
  GRAFT_RETURN_IF_ERROR(infer_conv_operands(ctx, &x, &w));
  const size_t n = x.size() - 2;
  std::vector<int64_t> wk;
  bool weight_kernel_known = true;
  for (size_t i = 2; i < w.size(); ++i) {
    if (!w[i].is_const()) weight_kernel_known = false;
    else wk.push_back(w[i].value());
  }
  if (!weight_kernel_known && !ctx.attrs().has("kernel_shape"))
    return error(StatusCode::kUnsupported, "the kernel shape is unknown: weight W ", shape_to_string(w),
                 " has symbolic spatial dims and kernel_shape is absent");
  GRAFT_ASSIGN_OR_RETURN(WindowAttrs wa,
                         parse_window_attrs(ctx.attrs(), n, weight_kernel_known ? &wk : nullptr, false));
  GRAFT_ASSIGN_OR_RETURN(int64_t group, ctx.attrs().get_int("group", 1));
  if (group < 1) return attr_error("group", "must be >= 1, got ", group);
  const Dim& C = x[1];
  const Dim& M = w[0];
  if (C.is_const() && w[1].is_const() && C.value() != w[1].value() * group)
    return ctx.fail("channel mismatch: X ", shape_to_string(x), " has ", C.value(), " channels but W ",
                    shape_to_string(w), " with group ", group, " expects ", w[1].value() * group);
  if (M.is_const() && M.value() % group != 0)
    return attr_error("group", "W ", shape_to_string(w), " has ", M.value(), " output channels, not divisible by group ", group);
  GRAFT_RETURN_IF_ERROR(check_conv_bias(ctx, M, w));
  GRAFT_ASSIGN_OR_RETURN(Shape out, window_output_shape(x, M, wa));
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, out));
  return Status::ok();
}

}  // namespace

void append_conv_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"Conv", 11, infer_conv, cpu::conv});
}

}  // namespace graft
