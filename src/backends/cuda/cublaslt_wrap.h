// The one layer over cuBLASLt that every GEMM uses (MatMul/Gemm in src/ops/nn/matmul_cuda.cpp, GraftGemm and
// GraftAttention in src/ops/transformer/gemm_epilogue_cuda.cpp and attention_cuda.cpp): owning matmul descriptor,
// layout and preference handles, the status-to-Status conversion (one error text for every caller), and
// lt_rowmajor, the one row-major matmul they all call: prepared once per problem in the context's
// PreparedCache (descriptors, layouts and the algorithm), its algorithm chosen by tactic timing at build time.
// Epilogue choice and the passes after the matmul stay with each caller.
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <memory>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/owned_handle.h"
#include "graft/status.h"

namespace graft::cuda {

// OK for CUBLAS_STATUS_SUCCESS, else kRuntimeError "CUDA <op>: <what> failed: cuBLAS status <n>
// (<name>: <text>)" naming the node.
Status lt_status(cublasStatus_t s, const CudaExec& ex, const char* what);

inline cublasLtHandle_t lt_handle(const CudaExec& ex) { return static_cast<cublasLtHandle_t>(ex.cublaslt); }

// float16 -> CUDA_R_16F, bfloat16 -> CUDA_R_16BF, anything else -> CUDA_R_32F.
cudaDataType_t lt_data_type(DataType t);

// Move-only owners of one cuBLASLt object each; empty until created.
using LtMatmulDesc = OwnedHandle<cublasLtMatmulDesc_t, &cublasLtMatmulDescDestroy>;
using LtLayout = OwnedHandle<cublasLtMatrixLayout_t, &cublasLtMatrixLayoutDestroy>;
using LtPreference = OwnedHandle<cublasLtMatmulPreference_t, &cublasLtMatmulPreferenceDestroy>;

// A matmul descriptor computing and scaling in float32 (CUBLAS_COMPUTE_32F: TF32 off, as the
// engine promises 1e-4 against PyTorch).
Status lt_create_matmul_desc(LtMatmulDesc* d, const CudaExec& ex);

// One attribute of a matmul descriptor, passed by value as cuBLASLt reads it; `what` names it in
// errors.
template <typename T>
Status lt_set(const LtMatmulDesc& d, cublasLtMatmulDescAttributes_t attr, const T& value, const CudaExec& ex,
              const char* what) {
  return lt_status(cublasLtMatmulDescSetAttribute(d.get(), attr, &value, sizeof(value)), ex, what);
}

// A column-major rows x cols layout with leading dimension ld; `what` names it in errors.
Status lt_create_layout(LtLayout* l, cudaDataType_t type, uint64_t rows, uint64_t cols, int64_t ld, const CudaExec& ex,
                        const char* what);

// For batch > 1: the batch count and each operand's stride between matrices (in elements), set on
// the three layouts in turn (count, then stride); nothing for a single matrix.
Status lt_set_strided_batch(int64_t batch, const LtLayout& a, int64_t stride_a, const LtLayout& b, int64_t stride_b,
                            const LtLayout& d, int64_t stride_d, const CudaExec& ex);

// A preference allowing at most max_workspace bytes of workspace.
Status lt_create_preference(LtPreference* p, uint64_t max_workspace, const CudaExec& ex);

// Up to `requested` algorithms by cuBLASLt's heuristic into heur[0, *found); C has D's layout in
// every graft matmul.
Status lt_heuristics(const CudaExec& ex, const LtMatmulDesc& op, const LtLayout& a, const LtLayout& b,
                     const LtLayout& cd, const LtPreference& pref, int requested, cublasLtMatmulHeuristicResult_t* heur,
                     int* found);

// The cuBLASLt workspace every matmul layer asks for (workspace_bytes).
inline constexpr size_t kLtWorkspace = size_t(8) << 20;

// One row-major matmul: Y[M,N] = alpha op(X)[M,K] op(W)[K,N] + beta C (+ bias[N], activation by the
// epilogue). X is [M,K] or, with trans_x, [K,M]; W is [K,N] or, with trans_w, [N,K]. C has Y's
// layout: `c`, or Y itself when c is null and beta is not 0 (accumulate in place). `batch`
// matrices at the given element strides (a stride of 0 broadcasts that operand).
struct LtProblem {
  DataType dt = DataType::kFloat32;
  int64_t M = 0, N = 0, K = 0;
  const void* x = nullptr;
  const void* w = nullptr;
  bool trans_x = false, trans_w = false;
  void* y = nullptr;
  float alpha = 1.f;
  const void* c = nullptr;
  float beta = 0.f;
  const void* bias = nullptr;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  int64_t batch = 1, stride_x = 0, stride_w = 0, stride_y = 0;
  void* workspace = nullptr;
  size_t workspace_size = 0;
};

// A problem of dtype `dt` and sizes M, N, K on the layer's workspace; the caller sets the operands,
// transposes and epilogue.
inline LtProblem lt_problem(const CudaExec& ex, DataType dt, int64_t M, int64_t N, int64_t K) {
  LtProblem g;
  g.dt = dt;
  g.M = M;
  g.N = N;
  g.K = K;
  g.workspace = ex.workspace;
  g.workspace_size = ex.workspace ? ex.workspace_size : 0;
  return g;
}

// Runs `g`, preparing it on first sight of its problem (shapes, transposes, epilogue, pointer
// alignment). Should cuBLASLt have no kernel with the requested epilogue for the shape, the plain
// matmul runs and *fused_epilogue is false: the caller then applies bias and activation as
// separate passes.
Status lt_rowmajor(CudaExec& ex, const LtProblem& g, bool* fused_epilogue);

}  // namespace graft::cuda
