// ConvTranspose: its schema and CPU reference (the nn family, nn.h; CUDA: conv_transpose_cuda.cpp).
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

// ConvTranspose: the adjoint of Conv. Every input element scatters X[n, c, i] * W[c, m, k] to
// output position i*stride - pad_begin + k*dilation of channel m in c's group.

Status conv_transpose(ExecContext& ctx) {
  const Tensor* X = ctx.inputs.size() > 0 ? ctx.inputs[0] : nullptr;
  const Tensor* W = ctx.inputs.size() > 1 ? ctx.inputs[1] : nullptr;
  const Tensor* B = ctx.inputs.size() > 2 ? ctx.inputs[2] : nullptr;
  GRAFT_RETURN_IF_ERROR(require_float_tensor(X, "X"));
  GRAFT_RETURN_IF_ERROR(require_float_tensor(W, "W"));
  if (B) GRAFT_RETURN_IF_ERROR(require_float_tensor(B, "B"));
  Tensor& Y = *ctx.outputs[0];
  if (X->rank() < 3 || W->rank() != X->rank())
    return error(StatusCode::kInvalidModel, "ConvTranspose: X ", ints_to_string(X->dims()), " and W ",
                 ints_to_string(W->dims()), " must have the same rank >= 3");
  const size_t n = static_cast<size_t>(X->rank() - 2);
  std::vector<int64_t> wk = tail(W->dims(), 2);
  GRAFT_ASSIGN_OR_RETURN(ConvTransposeAttrs a, parse_conv_transpose_attrs(*ctx.attrs, n, &wk));
  const int64_t N = X->dims()[0], C = X->dims()[1], Mg = W->dims()[1], M = Mg * a.group;
  if (W->dims()[0] != C || C % a.group != 0)
    return error(StatusCode::kInvalidModel, "ConvTranspose: X ", ints_to_string(X->dims()), " has ", C,
                 " channels but W ", ints_to_string(W->dims()), " with group ", a.group, " expects ", W->dims()[0]);
  if (B && B->numel() != M)
    return error(StatusCode::kInvalidModel, "ConvTranspose: bias B has ", B->numel(), " elements; expected ", M);
  if (Y.rank() != X->rank() || Y.dims()[0] != N || Y.dims()[1] != M)
    return error(StatusCode::kInternal, "ConvTranspose: output shape ", ints_to_string(Y.dims()),
                 " inconsistent with inputs");
  const std::vector<int64_t> in_sp = tail(X->dims(), 2), out_sp = tail(Y.dims(), 2);
  const std::vector<int64_t> pb = conv_transpose_pad_begins(a, in_sp, out_sp);
  const std::vector<int64_t> out_strides = contiguous_strides(out_sp);
  const int64_t in_area = numel_of(in_sp), out_area = numel_of(out_sp), k_area = numel_of(wk);
  const int64_t Cg = C / a.group;
  std::vector<double> x = load_doubles(*X), wt = load_doubles(*W), y(static_cast<size_t>(Y.numel()), 0.0);
  std::vector<int64_t> ii, kk;
  for (int64_t p = 0; p < in_area; ++p) {
    unravel(p, in_sp, ii);
    for (int64_t k = 0; k < k_area; ++k) {
      unravel(k, wk, kk);
      int64_t off = 0;
      bool inside = true;
      for (size_t d = 0; d < n && inside; ++d) {
        int64_t o = ii[d] * a.window.strides[d] - pb[d] + kk[d] * a.window.dilations[d];
        inside = o >= 0 && o < out_sp[d];
        off += o * out_strides[d];
      }
      if (!inside) continue;
      for (int64_t b = 0; b < N; ++b)
        for (int64_t c = 0; c < C; ++c) {
          const int64_t g = c / Cg;
          const double xv = x[static_cast<size_t>((b * C + c) * in_area + p)];
          for (int64_t m = 0; m < Mg; ++m)
            y[static_cast<size_t>((b * M + g * Mg + m) * out_area + off)] +=
                xv * wt[static_cast<size_t>((c * Mg + m) * k_area + k)];
        }
    }
  }
  if (B)
    for (int64_t b = 0; b < N; ++b)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t q = 0; q < out_area; ++q) y[static_cast<size_t>((b * M + m) * out_area + q)] += B->get(m);
  store_doubles(Y, y);
  return Status::ok();
}

}  // namespace graft::cpu

namespace graft {

namespace {

Status infer_conv_transpose(InferContext& ctx) {
  Shape x, w;
  GRAFT_RETURN_IF_ERROR(infer_conv_operands(ctx, &x, &w));
  const size_t n = x.size() - 2;
  std::vector<int64_t> wk;
  for (size_t i = 2; i < w.size(); ++i) {
    if (!w[i].is_const())
      return error(StatusCode::kUnsupported, "weight W ", shape_to_string(w), " has symbolic spatial dims");
    wk.push_back(w[i].value());
  }
  GRAFT_ASSIGN_OR_RETURN(ConvTransposeAttrs a, parse_conv_transpose_attrs(ctx.attrs(), n, &wk));
  if (x[1].is_const() && w[0].is_const() && x[1].value() != w[0].value())
    return ctx.fail("channel mismatch: X ", shape_to_string(x), " has ", x[1].value(), " channels but W ",
                    shape_to_string(w), " expects ", w[0].value());
  if (w[0].is_const() && w[0].value() % a.group != 0)
    return attr_error("group", "W ", shape_to_string(w), " has ", w[0].value(), " input channels, not divisible by group ",
                      a.group);
  Dim M = w[1] * Dim(a.group);
  GRAFT_RETURN_IF_ERROR(check_conv_bias(ctx, M, w));
  Shape out{x[0], M};
  for (size_t i = 0; i < n; ++i) {
    Dim d = conv_transpose_output_dim(a, i, x[i + 2]);
    if (d.is_const() && d.value() < 1)
      return ctx.fail("output extent ", d.value(), " on spatial axis ", static_cast<int64_t>(i), " is < 1");
    out.push_back(d);
  }
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, out));
  return Status::ok();
}

}  // namespace

void append_conv_transpose_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"ConvTranspose", 11, infer_conv_transpose, cpu::conv_transpose});
}

}  // namespace graft
