// GraftAttention's CUDA op (attention.cpp defines it): graft's fused flash kernel
// (flash_attention.cu) or batched cuBLASLt (scale as alpha), softmax in place, batched cuBLASLt,
// whichever the tactic timing picks. Every cuBLASLt call picks among the heuristic's first
// candidates by tactic timing at build time (src/plan/tactics.h), like the convolutions.
#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "backends/cuda/cublaslt_wrap.h"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/elementwise/elementwise.h"  // the elementwise launchers
#include "ops/transformer/flash_attention.cuh"
#include "ops/reduce_norm/reduce_norm.h"  // k::launch_softmax
#include "ops/views/views_cuda.h"
#include "ops/transformer/transformer.h"
#include "plan/tactics.h"

namespace graft::cuda {
namespace {

using namespace util;

// ---- GraftAttention ------------------------------------------------------------------------------
//
// softmax(scale Q Kt [+ bias]) V for [..., S, D] x [..., D, S2] x [..., S2, Dv] as three launches
// (four with a bias, added to the scores in place before the softmax): one batched
// cuBLASLt matmul writing the scores into the workspace with the scale as alpha (the separate
// scaling nodes disappear), the softmax kernel in place, one batched matmul into Y. The scores
// keep the tensors' dtype, as the unfused graph stores them.

struct AttnDims {
  int64_t batch = 0, S = 0, D = 0, S2 = 0, Dv = 0;
};

bool attn_dims(const std::vector<int64_t>& q, const std::vector<int64_t>& kt, const std::vector<int64_t>& v, AttnDims* a) {
  const size_t r = q.size();
  if (r < 2 || kt.size() != r || v.size() != r) return false;
  for (size_t i = 0; i + 2 < r; ++i)
    if (q[i] != kt[i] || q[i] != v[i]) return false;
  a->S = q[r - 2];
  a->D = q[r - 1];
  a->S2 = kt[r - 1];
  a->Dv = v[r - 1];
  if (kt[r - 2] != a->D || v[r - 2] != a->S2) return false;
  a->batch = 1;
  for (size_t i = 0; i + 2 < r; ++i) a->batch *= q[i];
  return true;
}

constexpr size_t kAlign = 256;
size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

bool attn_supports(const Node& n, std::string* why) {
  if (n.inputs.size() < 3 || n.inputs.size() > 4 || !has_input(n, 0) || !has_input(n, 1) || !has_input(n, 2))
    return reject(why, "GraftAttention needs Q, Kt and V (and an optional bias)");
  if (!inputs_share_dtype(n, {1, 2, 3}, why)) return false;  // Kt, V and the bias have Q's dtype (its key)
  bool has_views = false, has_chains = false;
  AttentionViews w;
  AttentionChains chains;
  if (!read_attention_views(n.attrs, &has_views, &w).is_ok()) return reject(why, "bad view attributes");
  if (!read_attention_chains(n.attrs, &has_chains, &chains).is_ok()) return reject(why, "bad view chain attributes");
  // The chain form runs the fused kernel only (its head sizes were checked when it was made).
  if (has_chains && in_dtype(n, 0) == DataType::kFloat32)
    return reject(why, "attention operands read through view chains need float16/bfloat16");
  // Strided operands are read by the fused kernel only: float16/bfloat16, head sizes it takes.
  if (has_views && (in_dtype(n, 0) == DataType::kFloat32 || w.D % 8 || w.Dv % 8 || w.D > 128 || w.Dv > 128))
    return reject(why, "strided attention operands need float16/bfloat16 and head sizes <= 128, multiples of 8");
  return true;
}

// ---- the chain form (fold_views_into_attention over a dynamic batch) ----
//
// Planned once per input shape: an operand whose chain plans to one strided view the fused kernel
// can read is read in place; any other is materialized into the workspace first (its plan's
// copies), contiguous. Y is written through y_perm.
struct PreparedAttnChains {
  AttentionViews w;
  GpuViewPlan plan[3];             // materialized operands (empty: read in place)
  size_t buffer_offset[3] = {};    // where a materialized operand lives in the workspace
  size_t scratch_offset = 0;       // the plans' intermediate copies (shared, one plan at a time)
  size_t workspace = 0;
  int64_t source_numel[3] = {};    // what each operand's view indexes into
};

// [offset, outer, inner, row, col] of a rank-3 or rank-4 view.
std::array<int64_t, 5> five_of(int64_t offset, const std::vector<int64_t>& strides) {
  if (strides.size() == 3) return {offset, 0, strides[0], strides[1], strides[2]};
  return {offset, strides[0], strides[1], strides[2], strides[3]};
}

Result<PreparedAttnChains> plan_attn_chains(const AttentionChains& c, const std::vector<const Tensor*>& in) {
  PreparedAttnChains p;
  std::vector<int64_t> logical[3];
  const size_t es = dtype_size(in[0]->dtype());
  size_t at = 0, scratch = 0;
  for (int k = 0; k < 3; ++k) {
    const Tensor& x = *in[static_cast<size_t>(k)];
    StridedView view{x.dims(), contiguous_strides(x.dims()), 0};
    std::vector<StridedView> views;
    if (c.steps[k]) {
      GRAFT_ASSIGN_OR_RETURN(views, plan_view_steps(x.dims(), *c.steps[k]));
      view = views.back();
    }
    logical[k] = view.shape;
    const size_t r = view.shape.size();
    if (r != 3 && r != 4) return error(StatusCode::kUnsupported, "operand ", k, " has rank ", r, "; the kernel takes 3 or 4");
    // The kernel reads Q and V rows with unit column stride, Kt with a unit stride on one axis.
    auto unit = [&](size_t axis) { return view.shape[axis] == 1 || view.strides[axis] == 1; };
    const bool readable = views.size() <= 1 && (k == 1 ? unit(r - 1) || unit(r - 2) : unit(r - 1));
    if (readable) {
      p.source_numel[k] = x.numel();
    } else {
      if (views.empty()) views.push_back(view);
      GRAFT_ASSIGN_OR_RETURN(p.plan[k], make_gpu_view_plan(std::move(views), x.numel(), es));
      p.buffer_offset[k] = at;
      at += align_up(static_cast<size_t>(numel_of(view.shape)) * es);
      scratch = std::max(scratch, p.plan[k].scratch_bytes());
      view = StridedView{view.shape, contiguous_strides(view.shape), 0};
      p.source_numel[k] = numel_of(view.shape);
    }
    std::array<int64_t, 5>* dst[3] = {&p.w.q, &p.w.kt, &p.w.v};
    *dst[k] = five_of(view.offset, view.strides);
  }
  p.scratch_offset = at;
  p.workspace = at + scratch;
  const auto& q = logical[0];
  const size_t r = q.size();
  if (logical[1].size() != r || logical[2].size() != r)
    return error(StatusCode::kInvalidModel, "Q, Kt and V have different ranks through their chains");
  p.w.outer = r == 4 ? q[0] : 1;
  p.w.inner = q[r - 3];
  p.w.S = q[r - 2];
  p.w.D = q[r - 1];
  p.w.S2 = logical[1][r - 1];
  p.w.Dv = logical[2][r - 1];
  for (size_t i = 0; i + 2 < r; ++i)
    if (logical[1][i] != q[i] || logical[2][i] != q[i])
      return error(StatusCode::kInvalidModel, "Q, Kt and V have different leading dimensions through their chains");
  if (logical[1][r - 2] != p.w.D || logical[2][r - 2] != p.w.S2)
    return error(StatusCode::kInvalidModel, "Q, Kt and V do not form an attention through their chains");
  std::vector<int64_t> y(q.begin(), q.end() - 1), y_strides;
  y.push_back(p.w.Dv);
  GRAFT_RETURN_IF_ERROR(attention_output_layout(y, c.y_perm, &p.w.y_shape, &y_strides));
  p.w.y = five_of(0, y_strides);
  return p;
}

size_t attn_workspace(const Node& n, const std::vector<const Tensor*>& in, const std::vector<Tensor>& /*outputs*/) {
  bool has_chains = false;
  AttentionChains chains;
  if (read_attention_chains(n.attrs, &has_chains, &chains).is_ok() && has_chains) {
    if (in.size() < 3 || in.size() > 4 || !in[0] || !in[1] || !in[2]) return 0;
    auto p = plan_attn_chains(chains, {in[0], in[1], in[2]});  // a bias (input 3) is read as it is
    return p.is_ok() ? p.value().workspace : 0;
  }
  AttnDims a;
  if (in.size() < 3 || !in[0] || !in[1] || !in[2] || !attn_dims(in[0]->dims(), in[1]->dims(), in[2]->dims(), &a))
    return kLtWorkspace;
  return align_up(static_cast<size_t>(a.batch * a.S * a.S2) * dtype_size(in[0]->dtype())) + kLtWorkspace;
}

Status attn_unfused(CudaExec& ex, const Tensor& Q, const Tensor& Kt, const Tensor& V, const Tensor* bias, Tensor& Y,
                    const AttnDims& a, float scale);

Status attn_run(CudaExec& ex) {
  const Tensor& Q = *ex.ctx->inputs[0];
  const Tensor& Kt = *ex.ctx->inputs[1];
  const Tensor& V = *ex.ctx->inputs[2];
  const Tensor* bias = ex.ctx->inputs.size() > 3 ? ex.ctx->inputs[3] : nullptr;
  Tensor& Y = *ex.ctx->outputs[0];
  GRAFT_ASSIGN_OR_RETURN(float scale, attrs_of(ex).get_float("scale", 1.f));
  bool has_views = false, has_chains = false;
  AttentionViews w;
  AttentionChains chains;
  GRAFT_RETURN_IF_ERROR(read_attention_views(attrs_of(ex), &has_views, &w));
  GRAFT_RETURN_IF_ERROR(read_attention_chains(attrs_of(ex), &has_chains, &chains));
  const void* sources[3] = {Q.data(), Kt.data(), V.data()};
  int64_t source_numel[3] = {Q.numel(), Kt.numel(), V.numel()};
  if (has_chains) {
    std::string key = PreparedCache::key_of("GraftAttention;chains", {reinterpret_cast<intptr_t>(ex.ctx->node)});
    for (const Tensor* t : {&Q, &Kt, &V}) PreparedCache::append_dims(&key, t->dims());
    PreparedAttnChains* p = ex.prepared ? ex.prepared->find<PreparedAttnChains>(key) : nullptr;
    PreparedAttnChains local;
    if (!p) {
      auto made = plan_attn_chains(chains, {&Q, &Kt, &V});
      if (!made) return with_node(ex, std::move(made).take_status());
      if (ex.prepared) p = ex.prepared->put(key, std::make_shared<PreparedAttnChains>(std::move(made).value()));
      else p = &(local = std::move(made).value());
    }
    if (p->workspace > ex.workspace_size)
      return fail(ex, StatusCode::kInternal, "workspace of ", ex.workspace_size, " bytes, ", p->workspace, " needed");
    if (p->w.y_shape != Y.dims()) return fail(ex, StatusCode::kInternal, "output dims differ from the planned view");
    char* ws = static_cast<char*>(ex.workspace);
    for (int k = 0; k < 3; ++k) {
      source_numel[k] = p->source_numel[k];
      if (p->plan[k].views.empty()) continue;  // read in place
      void* buf = ws + p->buffer_offset[k];
      GRAFT_RETURN_IF_ERROR(launch_status(launch_view_plan(p->plan[k], sources[k], buf, ws + p->scratch_offset,
                                                           dtype_size(Q.dtype()), stream_of(ex)),
                                          ex, "materializing an attention operand"));
      sources[k] = buf;
    }
    w = p->w;
    has_views = true;
  }
  if (has_views) {  // operands read in place (fold_views_into_attention): the fused kernel only
    GRAFT_RETURN_IF_ERROR(check_attention_views(w, source_numel[0], source_numel[1], source_numel[2], Y.numel()));
    // [offset, outer, inner, row, col] -> the kernel's operand (inner is its batch stride).
    const int64_t es = static_cast<int64_t>(dtype_size(Q.dtype()));
    auto operand = [es](const void* data, const std::array<int64_t, 5>& v) {
      return k::AttnOperand{static_cast<const char*>(data) + v[0] * es, v[2], v[3], v[4], v[1]};
    };
    const k::AttnOperand qo = operand(sources[0], w.q), kto = operand(sources[1], w.kt), vo = operand(sources[2], w.v);
    const k::AttnOutput yo{Y.data(), w.y[2], w.y[3], w.y[4], w.y[1]};  // y_view's offset is 0 (checked)
    if (!k::flash_attention_supported(ktype(Q.dtype()), w.D, w.Dv, qo, kto, vo, yo))
      return fail(ex, StatusCode::kUnsupported, "the fused attention kernel does not take these strided operands");
    // The bias [P, S, S2]: the kernel's batch index is the logical one, outer * inner + inner index.
    int64_t period = 1;
    if (bias) {
      const auto& bd = bias->dims();
      if (bias->dtype() != Q.dtype() || bd.size() != 3 || bd[0] < 1 || bd[1] != w.S || bd[2] != w.S2 ||
          (w.outer * w.inner) % bd[0] != 0)
        return fail(ex, StatusCode::kInvalidModel, "bias ", shape_to_string(shape_from_values(bd)), " (",
                    dtype_name(bias->dtype()), ") is not [P, ", w.S, ", ", w.S2, "] with P dividing the batch of ",
                    w.outer * w.inner);
      period = bd[0];
    }
    return launch_status(k::launch_flash_attention(ktype(Q.dtype()), qo, kto, vo, yo, w.outer * w.inner, w.S, w.D, w.S2,
                                                   w.Dv, scale, stream_of(ex), 0, w.inner,
                                                   bias ? bias->data() : nullptr, period),
                         ex, "fused attention");
  }
  AttnDims a;
  if (!attn_dims(Q.dims(), Kt.dims(), V.dims(), &a))
    return fail(ex, StatusCode::kInvalidModel, "Q ", shape_to_string(shape_from_values(Q.dims())), ", Kt ",
                shape_to_string(shape_from_values(Kt.dims())), " and V ", shape_to_string(shape_from_values(V.dims())),
                " do not form an attention");
  if (Y.numel() != a.batch * a.S * a.Dv) return fail(ex, StatusCode::kInternal, "output shape inconsistent with inputs");
  // The bias [P, S, S2] (the fusion made it a constant whose period divides the batch).
  int64_t period = 1;
  if (bias) {
    const auto& bd = bias->dims();
    if (bias->dtype() != Q.dtype() || bd.size() != 3 || bd[0] < 1 || bd[1] != a.S || bd[2] != a.S2 ||
        a.batch % bd[0] != 0)
      return fail(ex, StatusCode::kInvalidModel, "bias ", shape_to_string(shape_from_values(bd)), " (",
                  dtype_name(bias->dtype()), ") is not [P, ", a.S, ", ", a.S2, "] with P dividing the batch of ",
                  a.batch);
    period = bd[0];
  }
  if (Y.numel() == 0) return Status::ok();
  if (a.D == 0 || a.S2 == 0) return fail(ex, StatusCode::kUnsupported, "empty key or head dimension");
  // Two implementations: graft's fused (flash) kernel, which never writes the scores, and the
  // three-launch cuBLASLt path below (any dtype and head size). Where both apply the builder times
  // them (tactic "attention;..."); untuned, the fused kernel is the default.
  const k::AttnOperand qo{Q.data(), a.S * a.D, a.D, 1}, kto{Kt.data(), a.D * a.S2, a.S2, 1},
      vo{V.data(), a.S2 * a.Dv, a.Dv, 1};
  const k::AttnOutput yo{Y.data(), a.S * a.Dv, a.Dv, 1};
  if (k::flash_attention_supported(ktype(Q.dtype()), a.D, a.Dv, qo, kto, vo, yo)) {
    auto run_fused = [&] {
      return k::launch_flash_attention(ktype(Q.dtype()), qo, kto, vo, yo, a.batch, a.S, a.D, a.S2, a.Dv, scale,
                                       stream_of(ex), 0, 0, bias ? bias->data() : nullptr, period);
    };
    static const std::string device = device_arch_tag();
    auto s = [](int64_t v) { return std::to_string(v); };
    const std::string key = "attention;" + device + ";" + dtype_name(Q.dtype()) + ";b" + s(a.batch) + ";s" + s(a.S) +
                            ";d" + s(a.D) + ";s2_" + s(a.S2) + ";dv" + s(a.Dv) + (bias ? ";bias" + s(period) : "");
    auto time_both = [&]() -> Result<Tactic> {
      // One untimed run of the cuBLASLt path tunes its two GEMMs first, so that timing it below
      // replays their chosen algorithms instead of timing inside a capture.
      GRAFT_RETURN_IF_ERROR(attn_unfused(ex, Q, Kt, V, bias, Y, a, scale));
      GRAFT_RETURN_IF_ERROR(launch_status(cudaStreamSynchronize(stream_of(ex)), ex, "attention tuning"));
      TimingEvents events;
      GRAFT_RETURN_IF_ERROR(launch_status(events.create(), ex, "cudaEventCreate"));
      const float fused_ms = events.ms_per_call(stream_of(ex), [&] { return run_fused() == cudaSuccess; });
      const float unfused_ms =
          events.ms_per_call(stream_of(ex), [&] { return attn_unfused(ex, Q, Kt, V, bias, Y, a, scale).is_ok(); });
      const bool fused_wins = fused_ms >= 0 && (unfused_ms < 0 || fused_ms <= unfused_ms);
      return Tactic{0, fused_wins ? 1 : 0, fused_wins ? fused_ms : unfused_ms};
    };
    GRAFT_ASSIGN_OR_RETURN(std::optional<Tactic> t, find_or_time_tactic(ex, key, time_both));
    if (!t || t->variant == 1) return launch_status(run_fused(), ex, "fused attention");
  }
  return attn_unfused(ex, Q, Kt, V, bias, Y, a, scale);
}

// softmax(scale Q Kt + bias) V as batched cuBLASLt matmul -> [bias added in place] -> softmax in
// place -> batched matmul.
Status attn_unfused(CudaExec& ex, const Tensor& Q, const Tensor& Kt, const Tensor& V, const Tensor* bias, Tensor& Y,
                    const AttnDims& a, float scale) {
  const size_t scores_bytes = align_up(static_cast<size_t>(a.batch * a.S * a.S2) * dtype_size(Q.dtype()));
  if (!ex.workspace || ex.workspace_size < scores_bytes)
    return fail(ex, StatusCode::kInternal, "workspace of ", ex.workspace_size, " bytes, the scores need ", scores_bytes);
  void* scores = ex.workspace;
  bool fused = false;
  LtProblem p;
  p.dt = Q.dtype();
  p.M = a.S;
  p.N = a.S2;
  p.K = a.D;
  p.x = Q.data();
  p.w = Kt.data();
  p.y = scores;
  p.alpha = scale;
  p.batch = a.batch;
  p.stride_x = a.S * a.D;
  p.stride_w = a.D * a.S2;
  p.stride_y = a.S * a.S2;
  p.workspace = static_cast<char*>(ex.workspace) + scores_bytes;
  p.workspace_size = ex.workspace_size - scores_bytes;
  GRAFT_RETURN_IF_ERROR(lt_rowmajor(ex, p, &fused));
  if (bias)
    GRAFT_RETURN_IF_ERROR(launch_status(k::launch_add_periodic_bias(ktype(Q.dtype()), scores, bias->data(), bias->numel(),
                                                                    a.batch * a.S * a.S2, stream_of(ex)),
                                        ex, "attention bias"));
  GRAFT_RETURN_IF_ERROR(launch_status(k::launch_softmax(ktype(Q.dtype()), false, scores, scores, a.batch * a.S, a.S2, 1,
                                                        stream_of(ex)),
                                      ex, "softmax of the scores"));
  p.M = a.S;
  p.N = a.Dv;
  p.K = a.S2;
  p.x = scores;
  p.w = V.data();
  p.y = Y.data();
  p.alpha = 1.f;
  p.stride_x = a.S * a.S2;
  p.stride_w = a.S2 * a.Dv;
  p.stride_y = a.S * a.Dv;
  return lt_rowmajor(ex, p, &fused);
}

}  // namespace

void append_cuda_attention_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats)},
                              CudaOp{"GraftAttention", &attn_supports, &attn_run, {}, &attn_workspace}));
}

}  // namespace graft::cuda
