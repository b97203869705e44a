// GraftGemm, the GEMM with its epilogue (bias, residual, Relu or erf GELU) that
// src/graph/fuse_gemm_epilogues.cpp and fold_gemm_scales.cpp make: its attributes, schema and CPU
// reference. Encoding: transformer.h; CUDA: gemm_epilogue_cuda.cpp.
#include "ops/transformer/transformer.h"

#include <string>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "ops/operator.h"

namespace graft {

namespace {

// ---- GraftGemm ----

struct GemmAttrs {
  bool trans_b = false;
  float alpha = 1.f;
  std::string activation;
};

Result<GemmAttrs> gemm_attrs(const AttributeMap& at) {
  GemmAttrs g;
  GRAFT_ASSIGN_OR_RETURN(int64_t tb, at.get_int("transB", 0));
  if (tb != 0 && tb != 1) {
    Status st = error(StatusCode::kInvalidModel, "transB must be 0 or 1, got ", tb);
    st.with_attribute("transB");
    return st;
  }
  g.trans_b = tb == 1;
  GRAFT_ASSIGN_OR_RETURN(g.alpha, at.get_float("alpha", 1.f));
  GRAFT_ASSIGN_OR_RETURN(g.activation, at.get_string("activation", ""));
  if (g.activation != "" && g.activation != "Relu" && g.activation != "Gelu") {
    Status st = error(StatusCode::kInvalidModel, "activation must be \"\", \"Relu\" or \"Gelu\", got \"",
                      g.activation, "\"");
    st.with_attribute("activation");
    return st;
  }
  return g;
}

Status infer_graft_gemm(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(GemmAttrs a, gemm_attrs(ctx.attrs()));
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.fail("GraftGemm needs X and W");
  GRAFT_ASSIGN_OR_RETURN(Shape x, ctx.input_shape(0));
  GRAFT_ASSIGN_OR_RETURN(Shape w, ctx.input_shape(1));
  const DataType dt = ctx.input(0).dtype;
  if (!float16_or_32(dt)) return ctx.fail("X has dtype ", dtype_name(dt), "; expected a floating type");
  if (ctx.input(1).dtype != dt) return ctx.fail("W has dtype ", dtype_name(ctx.input(1).dtype), ", X has ", dtype_name(dt));
  if (x.empty()) return ctx.fail("X must have rank >= 1, got a scalar");
  if (w.size() != 2) return ctx.fail("W must be 2-D, got ", shape_to_string(w));
  const Dim& kw = a.trans_b ? w[1] : w[0];
  const Dim& n = a.trans_b ? w[0] : w[1];
  if (x.back().is_const() && kw.is_const() && x.back().value() != kw.value())
    return ctx.fail("inner dimensions differ: X ", shape_to_string(x), ", W ", shape_to_string(w),
                    a.trans_b ? " (transB)" : "");
  if (ctx.has_input(2)) {
    GRAFT_ASSIGN_OR_RETURN(Shape b, ctx.input_shape(2));
    if (ctx.input(2).dtype != dt) return ctx.fail("bias has dtype ", dtype_name(ctx.input(2).dtype), ", X has ", dtype_name(dt));
    bool ok = !b.empty() && (!b.back().is_const() || !n.is_const() || b.back().value() == n.value());
    for (size_t i = 0; i + 1 < b.size(); ++i) ok &= b[i] == 1;
    if (!ok) return ctx.fail("bias must have shape [N] or [1, ..., N] with N = ", n.to_string(), ", got ", shape_to_string(b));
  }
  Shape out(x.begin(), x.end() - 1);
  out.push_back(n);
  if (ctx.has_input(3)) {
    GRAFT_ASSIGN_OR_RETURN(Shape r, ctx.input_shape(3));
    if (ctx.input(3).dtype != dt) return ctx.fail("residual has dtype ", dtype_name(ctx.input(3).dtype), ", X has ", dtype_name(dt));
    bool ok = r.size() == out.size();
    for (size_t i = 0; ok && i < r.size(); ++i) ok = !r[i].is_const() || !out[i].is_const() || r[i].value() == out[i].value();
    if (!ok) return ctx.fail("residual must have the output's shape ", shape_to_string(out), ", got ", shape_to_string(r));
  }
  ctx.set_output(0, TensorDesc(dt, out));
  return Status::ok();
}

// Reference: double accumulation, bias and activation in double, one rounding into Y's dtype.
Status cpu_graft_gemm(ExecContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(GemmAttrs a, gemm_attrs(*ctx.attrs));
  const Tensor* X = ctx.inputs.size() > 0 ? ctx.inputs[0] : nullptr;
  const Tensor* W = ctx.inputs.size() > 1 ? ctx.inputs[1] : nullptr;
  const Tensor* B = ctx.inputs.size() > 2 ? ctx.inputs[2] : nullptr;
  const Tensor* R = ctx.inputs.size() > 3 ? ctx.inputs[3] : nullptr;
  GRAFT_RETURN_IF_ERROR(cpu::require_float_tensor(X, "X"));
  if (R) GRAFT_RETURN_IF_ERROR(cpu::require_float_tensor(R, "residual"));
  GRAFT_RETURN_IF_ERROR(cpu::require_float_tensor(W, "W"));
  if (B) GRAFT_RETURN_IF_ERROR(cpu::require_float_tensor(B, "bias"));
  if (X->rank() < 1 || W->rank() != 2) return error(StatusCode::kInvalidModel, "GraftGemm: X must have rank >= 1 and W rank 2");
  const int64_t K = X->dims().back();
  const int64_t N = a.trans_b ? W->dims()[0] : W->dims()[1];
  if ((a.trans_b ? W->dims()[1] : W->dims()[0]) != K)
    return error(StatusCode::kInvalidModel, "GraftGemm: inner dimensions of X and W differ");
  if (B && B->numel() != N) return error(StatusCode::kInvalidModel, "GraftGemm: bias has ", B->numel(), " elements, N = ", N);
  const int64_t M = numel_of(std::vector<int64_t>(X->dims().begin(), X->dims().end() - 1));
  Tensor& Y = *ctx.outputs[0];
  if (Y.numel() != M * N) return error(StatusCode::kInternal, "GraftGemm: output size inconsistent with inputs");
  std::vector<double> x = cpu::load_doubles(*X), w = cpu::load_doubles(*W), y(static_cast<size_t>(M * N));
  if (R && R->numel() != M * N) return error(StatusCode::kInvalidModel, "GraftGemm: residual has ", R->numel(), " elements, the output ", M * N);
  std::vector<double> b = B ? cpu::load_doubles(*B) : std::vector<double>(static_cast<size_t>(N), 0.0);
  std::vector<double> res = R ? cpu::load_doubles(*R) : std::vector<double>();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0.0;
      for (int64_t k = 0; k < K; ++k)
        acc += x[static_cast<size_t>(i * K + k)] * w[static_cast<size_t>(a.trans_b ? j * K + k : k * N + j)];
      double v = static_cast<double>(a.alpha) * acc + b[static_cast<size_t>(j)];
      if (R) v += res[static_cast<size_t>(i * N + j)];
      if (a.activation == "Relu") v = v > 0 ? v : 0.0;
      else if (a.activation == "Gelu") v = gelu_erf(v);
      y[static_cast<size_t>(i * N + j)] = v;
    }
  cpu::store_doubles(Y, y);
  return Status::ok();
}

}  // namespace

void append_gemm_epilogue_ops(std::vector<OpEntry>& out) {
  out.push_back(internal_op(OpEntry{"GraftGemm", 1, infer_graft_gemm, cpu_graft_gemm}));
}

}  // namespace graft
