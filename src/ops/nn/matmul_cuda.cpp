// CUDA MatMul and Gemm through cuBLASLt (lt_rowmajor: FP32 compute, TF32 off, prepared once per
// problem, algorithm chosen by tactic timing); the nn family (nn.h).
#include <algorithm>
#include <string>
#include <vector>

#include "backends/cuda/cublaslt_wrap.h"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/elementwise/elementwise.h"  // the elementwise launchers

namespace graft::cuda {
namespace {

using namespace util;

// A matmul without epilogue: cuBLASLt always has a kernel for it.
Status lt_plain(CudaExec& ex, const LtProblem& g) {
  bool fused = false;
  return lt_rowmajor(ex, g, &fused);
}

size_t lt_workspace(const Node&, const std::vector<const Tensor*>&, const std::vector<Tensor>& /*outputs*/) { return kLtWorkspace; }

bool matmul_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "MatMul needs two inputs");
  return inputs_share_dtype(n, {1}, why);  // B has A's dtype (its key)
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
  return inputs_share_dtype(n, {1, 2}, why);  // B and C have A's dtype (its key)
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

}  // namespace

void append_cuda_matmul_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats)},
                              CudaOp{"MatMul", &matmul_supports, &matmul_run, {}, &lt_workspace}));
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats)},
                              CudaOp{"Gemm", &gemm_supports, &gemm_run, {}, &lt_workspace}));
}

}  // namespace graft::cuda
