// Internal ops of the transformer fusions (GEMM epilogues, elementwise chains): schemas and CPU
// reference kernels. The encodings are described in src/ops/transformer/transformer.h.
#include "ops/transformer/transformer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "ops/attr_util.h"
#include "ops/operator.h"
#include "ops/views/views.h"

namespace graft {

namespace {

bool float16_or_32(DataType t) { return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16; }

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

// 1 + erf(z) as erfc(-z): for negative z the sum cancels, erfc keeps full precision there.
double gelu_erf(double v) { return 0.5 * v * std::erfc(v * -0.70710678118654752440); }

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

// ---- GraftAttention ----

Status infer_graft_attention(InferContext& ctx) {
  if (ctx.num_inputs() < 3 || ctx.num_inputs() > 4 || !ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(2))
    return ctx.fail("GraftAttention needs Q, Kt and V (and an optional bias)");
  GRAFT_ASSIGN_OR_RETURN(float scale, ctx.attrs().get_float("scale", 1.f));
  (void)scale;
  GRAFT_ASSIGN_OR_RETURN(Shape q, ctx.input_shape(0));
  GRAFT_ASSIGN_OR_RETURN(Shape kt, ctx.input_shape(1));
  GRAFT_ASSIGN_OR_RETURN(Shape v, ctx.input_shape(2));
  const DataType dt = ctx.input(0).dtype;
  if (!float16_or_32(dt)) return ctx.fail("Q has dtype ", dtype_name(dt), "; expected a floating type");
  if (ctx.input(1).dtype != dt || ctx.input(2).dtype != dt) return ctx.fail("Q, Kt and V must have one dtype");
  bool has_views = false, has_chains = false;
  AttentionViews w;
  AttentionChains chains;
  GRAFT_RETURN_IF_ERROR(read_attention_views(ctx.attrs(), &has_views, &w));
  GRAFT_RETURN_IF_ERROR(read_attention_chains(ctx.attrs(), &has_chains, &chains));
  if (has_views && has_chains) return ctx.fail("has both view attributes (dims) and view chains");
  const bool bias = ctx.num_inputs() == 4 && ctx.has_input(3);
  if (has_chains) {  // the operands as their chains give them
    Shape* operands[3] = {&q, &kt, &v};
    for (int k = 0; k < 3; ++k) {
      if (!chains.steps[k]) continue;
      auto logical = view_steps_shape(*operands[k], *chains.steps[k]);
      if (!logical) return Status(logical.status()).with_attribute(std::string(kAttentionChainPrefixes[k]) + "view_args");
      *operands[k] = std::move(logical).value();
    }
  }
  auto differ = [](const Dim& a, const Dim& b) { return a.is_const() && b.is_const() && a.value() != b.value(); };
  // The bias [P, S, S2] (batch entry b's scores get bias[b % P]), in Q's dtype.
  auto check_bias = [&](const Dim& S, const Dim& S2, const Dim& batch) -> Status {
    GRAFT_ASSIGN_OR_RETURN(Shape bs, ctx.input_shape(3));
    if (ctx.input(3).dtype != dt || bs.size() != 3 || differ(bs[1], S) || differ(bs[2], S2) ||
        (bs[0].is_const() && batch.is_const() && (bs[0].value() < 1 || batch.value() % bs[0].value() != 0)))
      return ctx.fail("bias ", shape_to_string(bs), " (", dtype_name(ctx.input(3).dtype), ") must be [P, S, S2] with S ",
                      shape_to_string({S}), ", S2 ", shape_to_string({S2}), " and P dividing the batch of ",
                      shape_to_string({batch}), ", in Q's dtype");
    return Status::ok();
  };
  if (has_views) {
    if (shape_is_static(q) && shape_is_static(kt) && shape_is_static(v))
      GRAFT_RETURN_IF_ERROR(check_attention_views(w, numel_of(shape_values(q)), numel_of(shape_values(kt)),
                                                  numel_of(shape_values(v)), numel_of(w.y_shape)));
    if (bias) GRAFT_RETURN_IF_ERROR(check_bias(Dim(w.S), Dim(w.S2), Dim(w.outer * w.inner)));
    ctx.set_output(0, TensorDesc(dt, shape_from_values(w.y_shape)));
    return Status::ok();
  }
  const size_t r = q.size();
  bool ok = r >= 2 && kt.size() == r && v.size() == r;
  for (size_t i = 0; ok && i + 2 < r; ++i) ok = !differ(q[i], kt[i]) && !differ(q[i], v[i]);
  ok = ok && !differ(q[r - 1], kt[r - 2]) && !differ(kt[r - 1], v[r - 2]);
  if (!ok)
    return ctx.fail("Q ", shape_to_string(q), ", Kt ", shape_to_string(kt), " and V ", shape_to_string(v),
                    " must be [..., S, D], [..., D, S2], [..., S2, Dv] with equal leading dimensions");
  if (bias) {
    Dim batch(1);
    for (size_t i = 0; i + 2 < r; ++i) batch = batch * q[i];
    GRAFT_RETURN_IF_ERROR(check_bias(q[r - 2], kt[r - 1], batch));
  }
  Shape out(q.begin(), q.end() - 1);
  out.push_back(v.back());
  if (!chains.y_perm.empty()) {
    const auto& perm = chains.y_perm;
    if (perm.size() != out.size() || perm.back() != static_cast<int64_t>(out.size()) - 1)
      return Status(ctx.fail("y_perm must permute the ", out.size(), " axes of Y and keep the last one last"))
          .with_attribute("y_perm");
    Shape permuted;
    for (int64_t p : perm) permuted.push_back(out[static_cast<size_t>(p)]);  // read_attention_chains checked p
    out = std::move(permuted);
  }
  ctx.set_output(0, TensorDesc(dt, out));
  return Status::ok();
}

// softmax(scale q kt) v for contiguous [B, S, D] x [B, D, S2] x [B, S2, Dv] in double.
std::vector<double> attention_core(const std::vector<double>& q, const std::vector<double>& k,
                                   const std::vector<double>& v, int64_t B, int64_t S, int64_t D, int64_t S2,
                                   int64_t Dv, float scale, const std::vector<double>* bias, int64_t period) {
  std::vector<double> y(static_cast<size_t>(B * S * Dv)), p(static_cast<size_t>(S2));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < S; ++i) {
      double m = -INFINITY;
      for (int64_t j = 0; j < S2; ++j) {
        double acc = 0.0;
        for (int64_t d = 0; d < D; ++d)
          acc += q[static_cast<size_t>((b * S + i) * D + d)] * k[static_cast<size_t>((b * D + d) * S2 + j)];
        p[static_cast<size_t>(j)] = static_cast<double>(scale) * acc;
        if (bias) p[static_cast<size_t>(j)] += (*bias)[static_cast<size_t>(((b % period) * S + i) * S2 + j)];
        m = std::max(m, p[static_cast<size_t>(j)]);
      }
      double sum = 0.0;
      for (double& e : p) sum += (e = std::exp(e - m));
      for (int64_t d = 0; d < Dv; ++d) {
        double acc = 0.0;
        for (int64_t j = 0; j < S2; ++j) acc += p[static_cast<size_t>(j)] * v[static_cast<size_t>((b * S2 + j) * Dv + d)];
        y[static_cast<size_t>((b * S + i) * Dv + d)] = acc / sum;
      }
    }
  return y;
}

// Gathers a strided view [outer, inner, rows, cols] of `t` into a contiguous vector.
std::vector<double> gather_view(const Tensor& t, const std::array<int64_t, 5>& w, int64_t outer, int64_t inner,
                                int64_t rows, int64_t cols) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(outer * inner * rows * cols));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) out.push_back(t.get(w[0] + o * w[1] + i * w[2] + r * w[3] + c * w[4]));
  return out;
}

Status attention_reference(const Tensor& Q, const Tensor& Kt, const Tensor& V, const Tensor* bias, float scale,
                           const std::vector<int64_t>& y_perm, Tensor& Y);

// Reference: scores, softmax and the weighted sum in double, one rounding into Y's dtype.
Status cpu_graft_attention(ExecContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(float scale, ctx.attrs->get_float("scale", 1.f));
  if (ctx.inputs.size() < 3 || ctx.inputs.size() > 4)
    return error(StatusCode::kInvalidModel, "GraftAttention: needs Q, Kt and V (and an optional bias)");
  for (const Tensor* t : ctx.inputs)
    if (t) GRAFT_RETURN_IF_ERROR(cpu::require_float_tensor(t, "input"));
  const Tensor &Q = *ctx.inputs[0], &Kt = *ctx.inputs[1], &V = *ctx.inputs[2];
  const Tensor* bias = ctx.inputs.size() > 3 ? ctx.inputs[3] : nullptr;
  bool has_views = false;
  AttentionViews w;
  GRAFT_RETURN_IF_ERROR(read_attention_views(*ctx.attrs, &has_views, &w));
  if (has_views) {
    Tensor& Y = *ctx.outputs[0];
    GRAFT_RETURN_IF_ERROR(check_attention_views(w, Q.numel(), Kt.numel(), V.numel(), Y.numel()));
    const int64_t B = w.outer * w.inner;
    std::vector<double> bias_values;
    int64_t period = 1;
    if (bias) {  // [P, S, S2] with P dividing the logical batch (outer * inner)
      const auto& bd = bias->dims();
      if (bd.size() != 3 || bd[0] < 1 || bd[1] != w.S || bd[2] != w.S2 || B % bd[0] != 0)
        return error(StatusCode::kInvalidModel, "GraftAttention: bias ", ints_to_string(bd), " is not [P, ", w.S, ", ",
                     w.S2, "] with P dividing the batch of ", B);
      bias_values = cpu::load_doubles(*bias);
      period = bd[0];
    }
    std::vector<double> y = attention_core(gather_view(Q, w.q, w.outer, w.inner, w.S, w.D),
                                           gather_view(Kt, w.kt, w.outer, w.inner, w.D, w.S2),
                                           gather_view(V, w.v, w.outer, w.inner, w.S2, w.Dv), B, w.S, w.D, w.S2, w.Dv,
                                           scale, bias ? &bias_values : nullptr, period);
    size_t e = 0;
    for (int64_t o = 0; o < w.outer; ++o)
      for (int64_t i = 0; i < w.inner; ++i)
        for (int64_t r = 0; r < w.S; ++r)
          for (int64_t c = 0; c < w.Dv; ++c) Y.set(w.y[0] + o * w.y[1] + i * w.y[2] + r * w.y[3] + c * w.y[4], y[e++]);
    return Status::ok();
  }
  // The chain form: each operand materialized through its plan, Y written through y_perm.
  bool has_chains = false;
  AttentionChains chains;
  GRAFT_RETURN_IF_ERROR(read_attention_chains(*ctx.attrs, &has_chains, &chains));
  if (has_chains) {
    Tensor logical[3];
    for (int k = 0; k < 3; ++k) {
      const Tensor& in = *ctx.inputs[static_cast<size_t>(k)];
      if (!chains.steps[k]) {
        logical[k] = in;
        continue;
      }
      auto plan = plan_view_steps(in.dims(), *chains.steps[k]);
      if (!plan) return Status(plan.status()).with_attribute(std::string(kAttentionChainPrefixes[k]) + "view_args");
      logical[k] = Tensor::empty(in.dtype(), plan.value().back().shape);
      run_view_plan(static_cast<const char*>(in.data()), static_cast<char*>(logical[k].data()), dtype_size(in.dtype()),
                    plan.value());
    }
    return attention_reference(logical[0], logical[1], logical[2], bias, scale, chains.y_perm, *ctx.outputs[0]);
  }
  return attention_reference(Q, Kt, V, bias, scale, {}, *ctx.outputs[0]);
}

// Contiguous Q, Kt, V; Y written through y_perm (empty: contiguous).
Status attention_reference(const Tensor& Q, const Tensor& Kt, const Tensor& V, const Tensor* bias, float scale,
                           const std::vector<int64_t>& y_perm, Tensor& Y) {
  const size_t r = static_cast<size_t>(Q.rank());
  if (r < 2 || Kt.rank() != Q.rank() || V.rank() != Q.rank())
    return error(StatusCode::kInvalidModel, "GraftAttention: Q, Kt and V must have one rank >= 2");
  const int64_t S = Q.dims()[r - 2], D = Q.dims()[r - 1], S2 = Kt.dims()[r - 1], Dv = V.dims()[r - 1];
  if (Kt.dims()[r - 2] != D || V.dims()[r - 2] != S2 || Q.numel() / std::max<int64_t>(S * D, 1) * S2 * D != Kt.numel() ||
      Q.numel() / std::max<int64_t>(S * D, 1) * S2 * Dv != V.numel())
    return error(StatusCode::kInvalidModel, "GraftAttention: Q, Kt and V shapes do not match");
  const int64_t B = numel_of(std::vector<int64_t>(Q.dims().begin(), Q.dims().end() - 2));
  if (Y.numel() != B * S * Dv) return error(StatusCode::kInternal, "GraftAttention: output size inconsistent with inputs");
  std::vector<double> bias_values;
  int64_t period = 1;
  if (bias) {  // [P, S, S2] with P dividing the batch
    const auto& bd = bias->dims();
    if (bd.size() != 3 || bd[0] < 1 || bd[1] != S || bd[2] != S2 || B % bd[0] != 0)
      return error(StatusCode::kInvalidModel, "GraftAttention: bias ", ints_to_string(bd), " is not [P, ", S, ", ", S2,
                   "] with P dividing the batch of ", B);
    bias_values = cpu::load_doubles(*bias);
    period = bd[0];
  }
  std::vector<double> y = attention_core(cpu::load_doubles(Q), cpu::load_doubles(Kt), cpu::load_doubles(V), B, S, D,
                                         S2, Dv, scale, bias ? &bias_values : nullptr, period);
  if (y_perm.empty()) {
    cpu::store_doubles(Y, y);
    return Status::ok();
  }
  std::vector<int64_t> y_dims(Q.dims().begin(), Q.dims().end() - 1), out_dims, strides;
  y_dims.push_back(Dv);
  GRAFT_RETURN_IF_ERROR(attention_output_layout(y_dims, y_perm, &out_dims, &strides));
  if (Y.dims() != out_dims) return error(StatusCode::kInternal, "GraftAttention: output dims differ from y_perm's");
  std::vector<int64_t> idx(y_dims.size(), 0);
  for (double value : y) {  // Y's elements in order, each to its place in the output
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * strides[d];
    Y.set(off, value);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < y_dims[d]) break;
      idx[d] = 0;
    }
  }
  return Status::ok();
}

// ---- GraftElementwise ----

struct EwProgram {
  std::vector<int64_t> code;
  std::vector<float> imm;
  int64_t out_reg = 0;
  DataType to = DataType::kFloat32;
};

template <typename... Args>
Status program_error(Args&&... parts) {
  Status st = error(StatusCode::kInvalidModel, std::forward<Args>(parts)...);
  st.with_attribute("program");
  return st;
}

// Checks the program against `num_inputs`: opcodes known, every operand defined before use,
// destinations fresh registers in order, the output register written. Errors name the attribute.
Result<EwProgram> ew_program(const AttributeMap& at, size_t num_inputs) {
  EwProgram p;
  GRAFT_ASSIGN_OR_RETURN(p.code, at.get_ints("program", {}));
  GRAFT_ASSIGN_OR_RETURN(p.imm, at.get_floats("immediates", {}));
  GRAFT_ASSIGN_OR_RETURN(p.out_reg, at.get_int("output_register", -1));
  GRAFT_ASSIGN_OR_RETURN(int64_t to, at.get_int("to", static_cast<int64_t>(DataType::kFloat32)));
  p.to = static_cast<DataType>(to);
  if (p.to != DataType::kFloat32 && p.to != DataType::kFloat16) {
    Status st = error(StatusCode::kInvalidModel, "'to' must be float32 or float16, got ", to);
    st.with_attribute("to");
    return st;
  }
  if (p.code.empty() || p.code.size() % kEwFields != 0)
    return program_error("program must hold ", kEwFields, " ints per instruction, got ", p.code.size());
  const int64_t n_instr = static_cast<int64_t>(p.code.size()) / kEwFields;
  if (p.imm.size() > static_cast<size_t>(kEwMaxImm)) {
    Status st = error(StatusCode::kInvalidModel, "at most ", kEwMaxImm, " immediates, got ", p.imm.size());
    st.with_attribute("immediates");
    return st;
  }
  if (num_inputs < 1 || num_inputs > static_cast<size_t>(kEwMaxInputs) || n_instr > kEwMaxInstr)
    return program_error("program exceeds the limits (", kEwMaxInputs, " inputs, ", kEwMaxInstr, " instructions, ",
                         kEwMaxImm, " immediates): ", num_inputs, " inputs, ", n_instr, " instructions, ",
                         p.imm.size(), " immediates");
  const int64_t n_in = static_cast<int64_t>(num_inputs);
  for (int64_t i = 0; i < n_instr; ++i) {
    const int64_t* f = &p.code[static_cast<size_t>(i * kEwFields)];
    if (f[0] < 0 || f[0] >= static_cast<int64_t>(EwOp::kCount)) return program_error("instruction ", i, ": unknown opcode ", f[0]);
    if (f[1] != n_in + i) return program_error("instruction ", i, ": destination must be register ", n_in + i, ", got ", f[1]);
    const int arity = ew_arity(static_cast<EwOp>(f[0]));
    for (int k = 0; k < arity; ++k) {
      const int64_t r = f[2 + k];
      if (r >= 0 ? r >= n_in + i : -r - 1 >= static_cast<int64_t>(p.imm.size()))
        return program_error("instruction ", i, ": operand ", k, " (", r, ") is not defined");
    }
  }
  if (p.out_reg < 0 || p.out_reg >= n_in + n_instr) {
    Status st = error(StatusCode::kInvalidModel, "output_register ", p.out_reg, " is not a register of the program");
    st.with_attribute("output_register");
    return st;
  }
  return p;
}

Status infer_graft_elementwise(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(EwProgram p, ew_program(ctx.attrs(), ctx.num_inputs()));
  GRAFT_ASSIGN_OR_RETURN(Shape s, ctx.input_shape(0));
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.fail("input ", i, " is missing");
    const DataType t = ctx.input(i).dtype;
    if (t != DataType::kFloat32 && t != DataType::kFloat16)
      return ctx.fail("input ", i, " has dtype ", dtype_name(t), "; expected float32 or float16");
    GRAFT_ASSIGN_OR_RETURN(Shape si, ctx.input_shape(i));
    if (si.size() != s.size()) return ctx.fail("input ", i, " has shape ", shape_to_string(si), ", input 0 ", shape_to_string(s));
    for (size_t d = 0; d < s.size(); ++d)
      if (si[d].is_const() && s[d].is_const() && si[d].value() != s[d].value())
        return ctx.fail("input ", i, " has shape ", shape_to_string(si), ", input 0 ", shape_to_string(s));
  }
  ctx.set_output(0, TensorDesc(p.to, s));
  return Status::ok();
}

float round_f32(double v) { return static_cast<float>(v); }

// One instruction in double, rounded to float32 (the unfused float32 node's result).
float ew_apply(EwOp op, double a, double b, double c) {
  switch (op) {
    case EwOp::kCopy: return round_f32(a);
    case EwOp::kAdd: return round_f32(a + b);
    case EwOp::kSub: return round_f32(a - b);
    case EwOp::kMul: return round_f32(a * b);
    case EwOp::kDiv: return round_f32(a / b);
    case EwOp::kPow: return round_f32(std::pow(a, b));
    case EwOp::kRelu: return round_f32(a > 0 ? a : 0.0);
    case EwOp::kSigmoid: return round_f32(1.0 / (1.0 + std::exp(-a)));
    case EwOp::kTanh: return round_f32(std::tanh(a));
    case EwOp::kErf: return round_f32(std::erf(a));
    case EwOp::kSqrt: return round_f32(std::sqrt(a));
    case EwOp::kNeg: return round_f32(-a);
    case EwOp::kAbs: return round_f32(std::fabs(a));
    case EwOp::kExp: return round_f32(std::exp(a));
    case EwOp::kLog: return round_f32(std::log(a));
    case EwOp::kReciprocal: return round_f32(1.0 / a);
    case EwOp::kHardSigmoid: return round_f32(std::max(0.0, std::min(1.0, b * a + c)));
    case EwOp::kHardSwish: return round_f32(a * std::max(0.0, std::min(1.0, a / 6.0 + 0.5)));
    case EwOp::kClip: return round_f32(a < b ? b : (a > c ? c : a));
    case EwOp::kGeluErf: return round_f32(gelu_erf(a));
    case EwOp::kGeluTanh:
      return round_f32(0.5 * a * (1.0 + std::tanh(0.79788456080286535588 * (a + 0.044715 * a * a * a))));
    case EwOp::kRoundHalf: return half_to_float(float_to_half(static_cast<float>(a)));
    case EwOp::kMax: return round_f32(std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b));
    case EwOp::kMin: return round_f32(std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b));
    case EwOp::kCount: break;
  }
  return NAN;
}

Status cpu_graft_elementwise(ExecContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(EwProgram p, ew_program(*ctx.attrs, ctx.inputs.size()));
  Tensor& Y = *ctx.outputs[0];
  const size_t n_in = ctx.inputs.size();
  for (size_t i = 0; i < n_in; ++i) {
    GRAFT_RETURN_IF_ERROR(cpu::require_float_tensor(ctx.inputs[i], "input"));
    if (ctx.inputs[i]->numel() != Y.numel())
      return error(StatusCode::kInvalidModel, "GraftElementwise: input ", i, " has ", ctx.inputs[i]->numel(),
                   " elements, the output ", Y.numel());
  }
  const size_t n_instr = p.code.size() / kEwFields;
  std::vector<float> r(n_in + n_instr);
  auto operand = [&](int64_t k) -> double {
    return k >= 0 ? static_cast<double>(r[static_cast<size_t>(k)]) : static_cast<double>(p.imm[static_cast<size_t>(-k - 1)]);
  };
  for (int64_t e = 0; e < Y.numel(); ++e) {
    for (size_t i = 0; i < n_in; ++i) r[i] = static_cast<float>(ctx.inputs[i]->get(e));
    for (size_t i = 0; i < n_instr; ++i) {
      const int64_t* f = &p.code[i * kEwFields];
      const EwOp op = static_cast<EwOp>(f[0]);
      const int arity = ew_arity(op);
      r[static_cast<size_t>(f[1])] = ew_apply(op, operand(f[2]), arity > 1 ? operand(f[3]) : 0.0, arity > 2 ? operand(f[4]) : 0.0);
    }
    Y.set(e, static_cast<double>(r[static_cast<size_t>(p.out_reg)]));
  }
  return Status::ok();
}

}  // namespace

Status read_attention_views(const AttributeMap& attrs, bool* present, AttentionViews* w) {
  *present = attrs.has("dims");
  if (!*present) return Status::ok();
  auto bad = [](const char* attr, auto&&... parts) {
    return Status(error(StatusCode::kInvalidModel, parts...)).with_attribute(attr);
  };
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> dims, attrs.get_ints("dims", {}));
  if (dims.size() != 6) return bad("dims", "dims must be [outer, inner, S, D, S2, Dv], got ", dims.size(), " values");
  for (int64_t d : dims)
    if (d < 1) return bad("dims", "dims must be positive, got ", d);
  w->outer = dims[0], w->inner = dims[1], w->S = dims[2], w->D = dims[3], w->S2 = dims[4], w->Dv = dims[5];
  const char* names[] = {"q_view", "kt_view", "v_view", "y_view"};
  std::array<int64_t, 5>* views[] = {&w->q, &w->kt, &w->v, &w->y};
  for (int k = 0; k < 4; ++k) {
    if (!attrs.has(names[k])) return bad(names[k], names[k], " is missing (dims is set)");
    GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> vw, attrs.get_ints(names[k], {}));
    if (vw.size() != 5) return bad(names[k], names[k], " must be [offset, outer, inner, row, col], got ", vw.size(), " values");
    for (int64_t x : vw)
      if (x < 0) return bad(names[k], names[k], " has a negative entry ", x);
    std::copy(vw.begin(), vw.end(), views[k]->begin());
  }
  if (!attrs.has("y_shape")) return bad("y_shape", "y_shape is missing (dims is set)");
  GRAFT_ASSIGN_OR_RETURN(w->y_shape, attrs.get_ints("y_shape", {}));
  for (int64_t d : w->y_shape)
    if (d < 0) return bad("y_shape", "y_shape has a negative dimension ", d);
  return Status::ok();
}

Status check_attention_views(const AttentionViews& w, int64_t q_numel, int64_t kt_numel, int64_t v_numel,
                             int64_t y_numel) {
  struct Check {
    const char* attr;
    const std::array<int64_t, 5>* view;
    int64_t rows, cols, numel;
  };
  const Check checks[] = {{"q_view", &w.q, w.S, w.D, q_numel},
                          {"kt_view", &w.kt, w.D, w.S2, kt_numel},
                          {"v_view", &w.v, w.S2, w.Dv, v_numel},
                          {"y_view", &w.y, w.S, w.Dv, y_numel}};
  for (const Check& c : checks) {
    const auto& x = *c.view;
    const std::optional<int64_t> last =
        view_last_index(x[0], {w.outer, w.inner, c.rows, c.cols}, {x[1], x[2], x[3], x[4]});
    if (!last || *last >= c.numel)
      return Status(error(StatusCode::kInvalidModel, c.attr, " reads past the end of a tensor with ", c.numel,
                          " elements"))
          .with_attribute(c.attr);
  }
  // Y's view is a permutation of the output's elements: offset 0, and its axes' (stride, size)
  // pairs, sorted by stride, nest exactly (stride 1, then each stride the product of the sizes
  // below it) up to the output's element count.
  std::vector<std::pair<int64_t, int64_t>> axes = {{w.y[1], w.outer}, {w.y[2], w.inner}, {w.y[3], w.S}, {w.y[4], w.Dv}};
  std::sort(axes.begin(), axes.end());
  int64_t covered = 1;
  bool dense = w.y[0] == 0;
  for (const auto& [stride, size] : axes) {
    if (size == 1) continue;
    dense = dense && stride == covered;
    if (__builtin_mul_overflow(covered, size, &covered)) dense = false;
  }
  if (!dense || covered != y_numel)
    return Status(error(StatusCode::kInvalidModel, "y_view does not cover the output (", y_numel,
                        " elements) exactly once"))
        .with_attribute("y_view");
  return Status::ok();
}

Status read_attention_chains(const AttributeMap& attrs, bool* present, AttentionChains* c) {
  *present = false;
  for (int k = 0; k < 3; ++k) {
    const std::string prefix = kAttentionChainPrefixes[k];
    if (!attrs.has(prefix + "view_kinds")) continue;
    GRAFT_ASSIGN_OR_RETURN(std::vector<ViewStep> steps, read_view_steps(attrs, prefix));
    c->steps[k] = std::move(steps);
    *present = true;
  }
  if (attrs.has("y_perm")) {
    GRAFT_ASSIGN_OR_RETURN(c->y_perm, attrs.get_ints("y_perm", {}));
    std::vector<int64_t> sorted = c->y_perm;
    std::sort(sorted.begin(), sorted.end());
    for (size_t k = 0; k < sorted.size(); ++k)
      if (sorted[k] != static_cast<int64_t>(k))
        return Status(error(StatusCode::kInvalidModel, "y_perm is not a permutation")).with_attribute("y_perm");
    if (c->y_perm.empty()) return Status(error(StatusCode::kInvalidModel, "y_perm is empty")).with_attribute("y_perm");
    *present = true;
  }
  return Status::ok();
}

void write_attention_chains(const AttentionChains& c, AttributeMap* attrs) {
  for (int k = 0; k < 3; ++k)
    if (c.steps[k]) write_view_steps(*c.steps[k], attrs, kAttentionChainPrefixes[k]);
  if (!c.y_perm.empty()) attrs->set("y_perm", c.y_perm);
}

Status attention_output_layout(const std::vector<int64_t>& y, const std::vector<int64_t>& y_perm,
                               std::vector<int64_t>* out_dims, std::vector<int64_t>* y_strides) {
  const size_t r = y.size();
  if (y_perm.empty()) {
    *out_dims = y;
    *y_strides = contiguous_strides(y);
    return Status::ok();
  }
  if (y_perm.size() != r || y_perm.back() != static_cast<int64_t>(r) - 1)
    return Status(error(StatusCode::kInvalidModel, "y_perm must permute the ", r, " axes of Y and keep the last one last"))
        .with_attribute("y_perm");
  out_dims->assign(r, 0);
  for (size_t pos = 0; pos < r; ++pos) (*out_dims)[pos] = y[static_cast<size_t>(y_perm[pos])];
  const auto os = contiguous_strides(*out_dims);
  y_strides->assign(r, 0);
  for (size_t pos = 0; pos < r; ++pos) (*y_strides)[static_cast<size_t>(y_perm[pos])] = os[pos];
  return Status::ok();
}

void append_transformer_ops(std::vector<OpEntry>& out) {
  out.push_back(internal_op(OpEntry{"GraftGemm", 1, infer_graft_gemm, cpu_graft_gemm}));
  out.push_back(internal_op(OpEntry{"GraftElementwise", 1, infer_graft_elementwise, cpu_graft_elementwise}));
  out.push_back(internal_op(OpEntry{"GraftAttention", 1, infer_graft_attention, cpu_graft_attention}));
}

}  // namespace graft
