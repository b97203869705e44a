// GraftAttention, softmax(scale * Q.Kt + bias) . V as one op (src/graph/fuse_gemm_epilogues.cpp makes
// it, fold_views_into_attention gives it views of its operands): the schema, the CPU reference, and
// the readers of its view attributes and view chains that transformer.h declares for the pass and
// the CUDA op. CUDA: attention_cuda.cpp (host) and flash_attention.cu (the fused kernel).
#include "ops/transformer/transformer.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "ops/attr_util.h"
#include "ops/operator.h"
#include "ops/views/views.h"

namespace graft {

namespace {

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

void append_attention_ops(std::vector<OpEntry>& out) {
  out.push_back(internal_op(OpEntry{"GraftAttention", 1, infer_graft_attention, cpu_graft_attention}));
}

}  // namespace graft
