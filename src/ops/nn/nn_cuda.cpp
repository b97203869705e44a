// CUDA nn ops: MatMul/Gemm through cuBLASLt (lt_rowmajor: FP32 compute, TF32 off, prepared once per
// problem, algorithm chosen by tactic timing), Conv through graft's one cuDNN
// convolution (GraftConv's, src/ops/fused_conv/fused_conv_cuda.cpp) where that takes the node (else a direct kernel:
// 1-D, 3-D, asymmetric pads, no cuDNN), pools (1-D to 3-D) and BatchNormalization through the
// kernels in nn_kernels.cu.
#include <algorithm>
#include <cmath>
#include <string>

#include "backends/cuda/cublaslt_wrap.h"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/elementwise/elementwise.h"  // the elementwise launchers
#include "ops/nn/nn_kernels.cuh"
#include "ops/window_attrs.h"

namespace graft::cuda {
namespace {

using namespace util;

// ---- cuBLASLt ---------------------------------------------------------------------------------

// A matmul without epilogue: cuBLASLt always has a kernel for it.
Status lt_plain(CudaExec& ex, const LtProblem& g) {
  bool fused = false;
  return lt_rowmajor(ex, g, &fused);
}

size_t lt_workspace(const Node&, const std::vector<const Tensor*>&, const std::vector<Tensor>& /*outputs*/) { return kLtWorkspace; }

bool matmul_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "MatMul needs two inputs");
  return float_inputs(n, {0, 1}, why);
}

Status matmul_run(CudaExec& ex) {
  const Tensor& A = *ex.ctx->inputs[0];
  const Tensor& B = *ex.ctx->inputs[1];
  Tensor& Y = *ex.ctx->outputs[0];
  std::vector<int64_t> a = A.dims(), b = B.dims();
  if (a.empty() || b.empty()) return fail(ex, StatusCode::kInvalidModel, "operands must have rank >= 1");
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  const int64_t M = a[a.size() - 2], K = a.back(), N = b.back();
  if (b[b.size() - 2] != K) return fail(ex, StatusCode::kInvalidModel, "inner dimensions differ");
  std::vector<int64_t> ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  const size_t r = std::max(ba.size(), bb.size());
  while (ba.size() < r) ba.insert(ba.begin(), 1);
  while (bb.size() < r) bb.insert(bb.begin(), 1);
  std::vector<int64_t> batch(r);
  for (size_t i = 0; i < r; ++i) {
    if (ba[i] != bb[i] && ba[i] != 1 && bb[i] != 1) return fail(ex, StatusCode::kInvalidModel, "batch dimensions cannot be broadcast");
    batch[i] = std::max(ba[i], bb[i]);
  }
  const int64_t nb = numel_of(batch);
  if (Y.numel() != nb * M * N) return fail(ex, StatusCode::kInternal, "output shape inconsistent with inputs");
  if (Y.numel() == 0) return Status::ok();
  if (K == 0) return launch_status(cudaMemsetAsync(Y.data(), 0, Y.nbytes(), stream_of(ex)), ex, "cudaMemsetAsync");
  // Matrix offset of each output batch in A and B (in matrices).
  std::vector<int64_t> offa(nb), offb(nb);
  for (int64_t i = 0; i < nb; ++i) {
    int64_t rem = i, oa = 0, ob = 0, sa = 1, sb = 1;
    for (size_t d = r; d-- > 0;) {
      int64_t q = rem % batch[d];
      rem /= batch[d];
      oa += (ba[d] == 1 ? 0 : q) * sa;
      ob += (bb[d] == 1 ? 0 : q) * sb;
      sa *= ba[d];
      sb *= bb[d];
    }
    offa[i] = oa;
    offb[i] = ob;
  }
  auto pattern = [&](const std::vector<int64_t>& off) {  // 1: contiguous, 0: broadcast, -1: neither
    bool all0 = true, iota = true;
    for (int64_t i = 0; i < nb; ++i) {
      all0 &= off[i] == 0;
      iota &= off[i] == i;
    }
    return iota ? 1 : all0 ? 0 : -1;
  };
  const int pa = pattern(offa), pb = pattern(offb);
  const size_t es = dtype_size(A.dtype());
  LtProblem g = lt_problem(ex, A.dtype(), M, N, K);
  if (pa >= 0 && pb >= 0 && nb <= 0x7fffffff) {
    g.x = A.data();
    g.w = B.data();
    g.y = Y.data();
    g.batch = nb;
    g.stride_x = pa * M * K;
    g.stride_w = pb * K * N;
    g.stride_y = M * N;
    return lt_plain(ex, g);
  }
  // Mixed broadcast (e.g. [2,1,M,K] x [1,3,K,N]): one call per output matrix.
  for (int64_t i = 0; i < nb; ++i) {
    g.x = static_cast<const char*>(A.data()) + offa[i] * M * K * es;
    g.w = static_cast<const char*>(B.data()) + offb[i] * K * N * es;
    g.y = static_cast<char*>(Y.data()) + i * M * N * es;
    GRAFT_RETURN_IF_ERROR(lt_plain(ex, g));
  }
  return Status::ok();
}

bool gemm_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "Gemm needs A and B");
  return float_inputs(n, {0, 1, 2}, why);
}

Status gemm_run(CudaExec& ex) {
  const Tensor& A = *ex.ctx->inputs[0];
  const Tensor& B = *ex.ctx->inputs[1];
  const Tensor* C = ex.ctx->inputs.size() > 2 ? ex.ctx->inputs[2] : nullptr;
  Tensor& Y = *ex.ctx->outputs[0];
  const AttributeMap& at = attrs_of(ex);
  GRAFT_ASSIGN_OR_RETURN(float alpha, at.get_float("alpha", 1.0f));
  GRAFT_ASSIGN_OR_RETURN(float beta, at.get_float("beta", 1.0f));
  GRAFT_ASSIGN_OR_RETURN(int64_t ta, at.get_int("transA", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t tb, at.get_int("transB", 0));
  if (A.rank() != 2 || B.rank() != 2) return fail(ex, StatusCode::kInvalidModel, "A and B must be 2-D");
  const int64_t M = ta ? A.dims()[1] : A.dims()[0], K = ta ? A.dims()[0] : A.dims()[1];
  LtProblem g = lt_problem(ex, A.dtype(), M, tb ? B.dims()[0] : B.dims()[1], K);
  g.trans_x = ta != 0;
  g.trans_w = tb != 0;
  const int64_t Kb = g.trans_w ? B.dims()[1] : B.dims()[0];
  if (Kb != g.K) return fail(ex, StatusCode::kInvalidModel, "inner dimensions differ");
  if (Y.numel() != g.M * g.N) return fail(ex, StatusCode::kInternal, "output shape inconsistent with inputs");
  if (Y.numel() == 0) return Status::ok();
  g.x = A.data();
  g.w = B.data();
  g.y = Y.data();
  g.alpha = alpha;
  if (C && beta != 0.f) {
    const bool row_vector = C->numel() == g.N && (C->rank() == 1 || (C->rank() == 2 && C->dims()[0] == 1));
    if (row_vector && beta == 1.f && g.K > 0) {
      g.bias = C->data();  // fused: D = alpha*AB + C
      g.epilogue = CUBLASLT_EPILOGUE_BIAS;
      bool fused = false;
      GRAFT_RETURN_IF_ERROR(lt_rowmajor(ex, g, &fused));
      if (fused) return Status::ok();
      // No kernel with the bias epilogue for this shape: the bias is a second pass.
      return launch_status(k::launch_add_periodic_bias(ktype(Y.dtype()), Y.data(), C->data(), g.N, Y.numel(), stream_of(ex)),
                           ex, "bias add after the matmul");
    }
    // Y = broadcast(C), then D = alpha*AB + beta*Y in place.
    k::Bcast p;
    std::string why;
    if (!make_bcast(Y.dims(), {C->dims()}, &p, &why)) return fail(ex, StatusCode::kInvalidModel, "C: ", why);
    GRAFT_RETURN_IF_ERROR(launch_status(k::launch_broadcast_copy(C->data(), Y.data(), static_cast<int>(dtype_size(Y.dtype())), p,
                                                                 Y.numel(), stream_of(ex)), ex));
    g.beta = beta;
    if (g.K == 0) {
      if (beta == 1.f) return Status::ok();
      return fail(ex, StatusCode::kUnsupported, "K = 0 with beta != 1 is not handled");
    }
  } else if (g.K == 0) {
    return launch_status(cudaMemsetAsync(Y.data(), 0, Y.nbytes(), stream_of(ex)), ex, "cudaMemsetAsync");
  }
  return lt_plain(ex, g);
}

// ---- Conv -------------------------------------------------------------------------------------

struct ConvPlan {
  k::Window2d g;
  int64_t M = 0, group = 1;
};

// Geometry of a 1-D or 2-D Conv/pool for the concrete input and output shapes.
Status plan_window(const CudaExec& ex, const std::vector<int64_t>& x, const std::vector<int64_t>& y,
                   const std::vector<int64_t>* kernel_from_weights, bool pool, ConvPlan* p) {
  const size_t n = x.size() - 2;
  if (n < 1 || n > 2) return fail(ex, StatusCode::kUnsupported, "only 1-D and 2-D windows are handled");
  GRAFT_ASSIGN_OR_RETURN(graft::WindowAttrs w, graft::parse_window_attrs(attrs_of(ex), n, kernel_from_weights, pool));
  std::vector<int64_t> in(x.begin() + 2, x.end()), begins, ends;
  graft::resolve_pads(w, in, &begins, &ends);
  k::Window2d& g = p->g;
  g.n = x[0];
  g.c = x[1];
  const size_t o = n == 2 ? 0 : 1;  // 1-D: the single axis is the width, height is 1
  if (n == 2) {
    g.h = x[2]; g.oh = y[2]; g.kh = w.kernel[0]; g.sh = w.strides[0]; g.dh = w.dilations[0]; g.ph = begins[0]; g.peh = ends[0];
  }
  const size_t wi = 1 - o;
  g.w = x[2 + wi];
  g.ow = y[2 + wi];
  g.kw = w.kernel[wi];
  g.sw = w.strides[wi];
  g.dw = w.dilations[wi];
  g.pw = begins[wi];
  g.pew = ends[wi];
  return Status::ok();
}

// Geometry of a Conv/pool over 1 to 3 spatial axes (x [n, c, spatial...]) for the concrete input and
// output shapes, as a Window3d: fewer spatial axes take its last ones, the leading ones left at 1.
Status plan_window3d(const CudaExec& ex, const std::vector<int64_t>& x, const std::vector<int64_t>& y,
                     const std::vector<int64_t>* kernel_from_weights, bool pool, k::Window3d* g) {
  if (x.size() < 3 || x.size() > 5 || y.size() != x.size())
    return fail(ex, StatusCode::kInvalidModel, "X and Y must have one rank, 3 to 5");
  const size_t n = x.size() - 2, lead = 3 - n;
  GRAFT_ASSIGN_OR_RETURN(graft::WindowAttrs w, graft::parse_window_attrs(attrs_of(ex), n, kernel_from_weights, pool));
  std::vector<int64_t> in(x.begin() + 2, x.end()), begins, ends;
  graft::resolve_pads(w, in, &begins, &ends);
  g->n = x[0];
  g->c = x[1];
  for (size_t a = 0; a < n; ++a) {
    g->in[lead + a] = x[2 + a];
    g->out[lead + a] = y[2 + a];
    g->k[lead + a] = w.kernel[a];
    g->s[lead + a] = w.strides[a];
    g->d[lead + a] = w.dilations[a];
    g->pb[lead + a] = begins[a];
    g->pe[lead + a] = ends[a];
  }
  return Status::ok();
}

bool conv_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "Conv needs X and W");
  if (!float_inputs(n, {0, 1, 2}, why)) return false;
  const Value* x = n.input(0);
  if (x->desc.rank() < 3 || x->desc.rank() > 5)
    return reject(why, "only 1-D, 2-D and 3-D convolutions are handled (rank 3 to 5)");
  return true;
}

// What cudnn_conv_run needs where it takes the problem; the direct kernel needs no scratch.
size_t conv_workspace(const Node& n, const std::vector<const Tensor*>& ins, const std::vector<Tensor>& outs) {
  return n.input(0)->desc.rank() == 4 && cudnn_conv_supports(n, nullptr) ? cudnn_conv_workspace(n, ins, outs) : 0;
}

Status conv_run(CudaExec& ex) {
  const Tensor& X = *ex.ctx->inputs[0];
  const Tensor& W = *ex.ctx->inputs[1];
  const Tensor* B = ex.ctx->inputs.size() > 2 ? ex.ctx->inputs[2] : nullptr;
  Tensor& Y = *ex.ctx->outputs[0];
  if (X.rank() != W.rank() || X.rank() != Y.rank()) return fail(ex, StatusCode::kInvalidModel, "X, W and Y ranks differ");
  std::vector<int64_t> wk(W.dims().begin() + 2, W.dims().end());
  if (X.rank() == 5) {  // 3-D: the direct kernel (cuDNN's N-d convolution is not wired in)
    k::Window3d g;
    GRAFT_RETURN_IF_ERROR(plan_window3d(ex, X.dims(), Y.dims(), &wk, false, &g));
    GRAFT_ASSIGN_OR_RETURN(int64_t group, attrs_of(ex).get_int("group", 1));
    const int64_t M = W.dims()[0];
    if (group < 1 || M % group != 0 || W.dims()[1] * group != X.dims()[1] || Y.dims()[1] != M)
      return fail(ex, StatusCode::kInvalidModel, "channels of X, W and group disagree");
    if (B && B->numel() != M) return fail(ex, StatusCode::kInvalidModel, "bias has the wrong length");
    return launch_status(k::launch_conv3d_direct(ktype(X.dtype()), X.data(), W.data(), B ? B->data() : nullptr, Y.data(),
                                                 g, M, group, stream_of(ex)),
                         ex);
  }
  ConvPlan p;
  GRAFT_RETURN_IF_ERROR(plan_window(ex, X.dims(), Y.dims(), &wk, false, &p));
  GRAFT_ASSIGN_OR_RETURN(p.group, attrs_of(ex).get_int("group", 1));
  p.M = W.dims()[0];
  if (p.group < 1 || p.M % p.group != 0 || W.dims()[1] * p.group != X.dims()[1] || Y.dims()[1] != p.M)
    return fail(ex, StatusCode::kInvalidModel, "channels of X, W and group disagree");
  if (B && B->numel() != p.M) return fail(ex, StatusCode::kInvalidModel, "bias has the wrong length");
  if (Y.numel() == 0) return Status::ok();
  // The backend's one cuDNN convolution (GraftConv's) takes every problem it can; where cuDNN offers
  // no algorithm (kUnsupported, nothing launched), the direct kernel runs it, as before.
  if (ex.cudnn && X.rank() == 4 && cudnn_conv_supports(*ex.ctx->node, nullptr)) {
    Status st = cudnn_conv_run(ex);
    if (st.code() != StatusCode::kUnsupported) return st;
  }
  return launch_status(k::launch_conv2d_direct(ktype(X.dtype()), X.data(), W.data(), B ? B->data() : nullptr, Y.data(), p.g, p.M,
                                               p.group, stream_of(ex)), ex);
}

// ---- pools ------------------------------------------------------------------------------------

template <k::PoolKind kKind>
bool pool_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input X is missing");
  if (!float_inputs(n, {0}, why)) return false;
  const int64_t r = n.input(0)->desc.rank();
  if (r < 3 || r > 5) return reject(why, "only 1-D, 2-D and 3-D pools are handled (rank 3 to 5)");
  if (kKind == k::PoolKind::kMax && n.outputs.size() > 1 && n.outputs[1] && out_dtype(n, 1) != DataType::kInt64)
    return reject(why, "the Indices output must be int64");
  return true;
}

template <k::PoolKind kKind>
Status pool_run(CudaExec& ex) {
  const Tensor& X = *ex.ctx->inputs[0];
  Tensor& Y = *ex.ctx->outputs[0];
  if (X.rank() != Y.rank() || X.rank() < 3) return fail(ex, StatusCode::kInvalidModel, "X and Y ranks differ");
  k::PoolKind kind = kKind;
  if (kKind == k::PoolKind::kAverage) {
    GRAFT_ASSIGN_OR_RETURN(int64_t include_pad, attrs_of(ex).get_int("count_include_pad", 0));
    if (include_pad) kind = k::PoolKind::kAverageIncludePad;
  }
  Tensor* I = kKind == k::PoolKind::kMax && ex.ctx->outputs.size() > 1 ? ex.ctx->outputs[1] : nullptr;
  if (I) {  // the Indices output: one kernel for every rank, picking taps as the CPU reference does
    GRAFT_ASSIGN_OR_RETURN(int64_t storage_order, attrs_of(ex).get_int("storage_order", 0));
    if (storage_order != 0 && storage_order != 1)
      return with_node(ex, Status(error(StatusCode::kInvalidModel, "storage_order must be 0 (row major) or 1 (column "
                                                                   "major), got ", storage_order))
                               .with_attribute("storage_order"));
    if (I->dtype() != DataType::kInt64 || I->dims() != Y.dims())
      return fail(ex, StatusCode::kInternal, "the Indices output must be int64 shaped like Y");
    k::Window3d g;
    GRAFT_RETURN_IF_ERROR(plan_window3d(ex, X.dims(), Y.dims(), nullptr, true, &g));
    return launch_status(k::launch_max_pool_indices(ktype(X.dtype()), X.data(), Y.data(), I->data_as<int64_t>(), g,
                                                    storage_order == 1, stream_of(ex)),
                         ex);
  }
  if (X.rank() == 5) {
    k::Window3d g;
    GRAFT_RETURN_IF_ERROR(plan_window3d(ex, X.dims(), Y.dims(), nullptr, true, &g));
    return launch_status(k::launch_pool3d(ktype(X.dtype()), kind, X.data(), Y.data(), g, stream_of(ex)), ex);
  }
  ConvPlan p;
  GRAFT_RETURN_IF_ERROR(plan_window(ex, X.dims(), Y.dims(), nullptr, true, &p));
  return launch_status(k::launch_pool2d(ktype(X.dtype()), kind, X.data(), Y.data(), p.g, stream_of(ex)), ex);
}

bool global_pool_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input X is missing");
  if (!float_inputs(n, {0}, why)) return false;
  if (n.input(0)->desc.rank() >= 0 && n.input(0)->desc.rank() < 3) return reject(why, "X must have rank >= 3");
  return true;
}

template <bool kMax>
Status global_pool_run(CudaExec& ex) {
  const Tensor& X = *ex.ctx->inputs[0];
  Tensor& Y = *ex.ctx->outputs[0];
  if (X.rank() < 3) return fail(ex, StatusCode::kInvalidModel, "X must have rank >= 3");
  const int64_t rows = X.dims()[0] * X.dims()[1], area = X.numel() / std::max<int64_t>(rows, 1);
  if (Y.numel() != rows) return fail(ex, StatusCode::kInternal, "output shape inconsistent with input");
  return launch_status(k::launch_global_pool(ktype(X.dtype()), kMax, X.data(), Y.data(), rows, area, stream_of(ex)), ex);
}

bool bn_supports(const Node& n, std::string* why) {
  for (size_t i = 0; i < 5; ++i)
    if (!has_input(n, i)) return reject(why, "BatchNormalization needs 5 inputs");
  if (!require_dtype(n, 0, {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}, why)) return false;
  for (size_t i = 2; i < 5; ++i)
    if (in_dtype(n, i) != in_dtype(n, 1)) return reject(why, "scale, B, mean and var must share one dtype");
  if (!require_dtype(n, 1, {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}, why)) return false;
  auto tm = n.attrs.get_int("training_mode", 0);
  if (!tm || tm.value() != 0) return reject(why, "training_mode is not handled (inference only)");
  if (n.outputs.size() > 1) return reject(why, "training outputs (running mean/var) are not handled");
  return true;
}

Status bn_run(CudaExec& ex) {
  const auto& in = ex.ctx->inputs;
  const Tensor& X = *in[0];
  Tensor& Y = *ex.ctx->outputs[0];
  GRAFT_ASSIGN_OR_RETURN(float eps, attrs_of(ex).get_float("epsilon", 1e-5f));
  if (X.rank() < 2) return fail(ex, StatusCode::kInvalidModel, "X must have rank >= 2");
  const int64_t N = X.dims()[0], C = X.dims()[1], inner = X.numel() / std::max<int64_t>(N * C, 1);
  for (size_t i = 1; i < 5; ++i)
    if (in[i]->numel() != C) return fail(ex, StatusCode::kInvalidModel, "parameter ", static_cast<int64_t>(i), " must have C elements");
  return launch_status(k::launch_batchnorm(ktype(X.dtype()), ktype(in[1]->dtype()), X.data(), in[1]->data(), in[2]->data(),
                                           in[3]->data(), in[4]->data(), Y.data(), N, C, inner, eps, stream_of(ex)), ex);
}

}  // namespace

void append_cuda_conv_transpose_ops(std::vector<CudaOp>& out);  // conv_transpose_cuda.cpp

void append_cuda_nn_ops(std::vector<CudaOp>& out) {
  append_cuda_conv_transpose_ops(out);
  out.push_back(CudaOp{"MatMul", &matmul_supports, &matmul_run, {}, &lt_workspace});
  out.push_back(CudaOp{"Gemm", &gemm_supports, &gemm_run, {}, &lt_workspace});
  out.push_back(CudaOp{"Conv", &conv_supports, &conv_run, {}, &conv_workspace});
  out.push_back(CudaOp{"MaxPool", &pool_supports<k::PoolKind::kMax>, &pool_run<k::PoolKind::kMax>, {}, nullptr});
  out.push_back(CudaOp{"AveragePool", &pool_supports<k::PoolKind::kAverage>, &pool_run<k::PoolKind::kAverage>, {}, nullptr});
  out.push_back(CudaOp{"GlobalAveragePool", &global_pool_supports, &global_pool_run<false>, {}, nullptr});
  out.push_back(CudaOp{"GlobalMaxPool", &global_pool_supports, &global_pool_run<true>, {}, nullptr});
  out.push_back(CudaOp{"BatchNormalization", &bn_supports, &bn_run, {}, nullptr});
}

}  // namespace graft::cuda
