// The cuBLASLt layer's functions (cublaslt_wrap.h).
#include "backends/cuda/cublaslt_wrap.h"

#include "backends/cuda/cuda_op_util.h"

namespace graft::cuda {

Status lt_status(cublasStatus_t s, const CudaExec& ex, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::ok();
  return util::fail(ex, StatusCode::kRuntimeError, what, " failed: cuBLAS status ", static_cast<int>(s), " (",
                    cublasLtGetStatusName(s), ": ", cublasLtGetStatusString(s), ")");
}

cudaDataType_t lt_data_type(DataType t) {
  return t == DataType::kFloat16 ? CUDA_R_16F : t == DataType::kBFloat16 ? CUDA_R_16BF : CUDA_R_32F;
}

Status lt_create_matmul_desc(LtMatmulDesc* d, const CudaExec& ex) {
  cublasLtMatmulDesc_t h = nullptr;
  GRAFT_RETURN_IF_ERROR(lt_status(cublasLtMatmulDescCreate(&h, CUBLAS_COMPUTE_32F, CUDA_R_32F), ex, "cublasLtMatmulDescCreate"));
  d->reset(h);
  return Status::ok();
}

Status lt_create_layout(LtLayout* l, cudaDataType_t type, uint64_t rows, uint64_t cols, int64_t ld, const CudaExec& ex,
                        const char* what) {
  cublasLtMatrixLayout_t h = nullptr;
  GRAFT_RETURN_IF_ERROR(lt_status(cublasLtMatrixLayoutCreate(&h, type, rows, cols, ld), ex, what));
  l->reset(h);
  return Status::ok();
}

Status lt_set_strided_batch(int64_t batch, const LtLayout& a, int64_t stride_a, const LtLayout& b, int64_t stride_b,
                            const LtLayout& d, int64_t stride_d, const CudaExec& ex) {
  if (batch <= 1) return Status::ok();
  const int32_t count = static_cast<int32_t>(batch);
  const struct {
    cublasLtMatrixLayout_t l;
    int64_t stride;
  } ls[] = {{a.get(), stride_a}, {b.get(), stride_b}, {d.get(), stride_d}};
  for (const auto& x : ls) {
    GRAFT_RETURN_IF_ERROR(lt_status(cublasLtMatrixLayoutSetAttribute(x.l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
                                    ex, "set BATCH_COUNT"));
    GRAFT_RETURN_IF_ERROR(lt_status(cublasLtMatrixLayoutSetAttribute(x.l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                                     &x.stride, sizeof(x.stride)),
                                    ex, "set STRIDED_BATCH_OFFSET"));
  }
  return Status::ok();
}

Status lt_create_preference(LtPreference* p, uint64_t max_workspace, const CudaExec& ex) {
  cublasLtMatmulPreference_t h = nullptr;
  GRAFT_RETURN_IF_ERROR(lt_status(cublasLtMatmulPreferenceCreate(&h), ex, "cublasLtMatmulPreferenceCreate"));
  p->reset(h);
  return lt_status(cublasLtMatmulPreferenceSetAttribute(p->get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace,
                                                        sizeof(max_workspace)),
                   ex, "set MAX_WORKSPACE_BYTES");
}

Status lt_heuristics(const CudaExec& ex, const LtMatmulDesc& op, const LtLayout& a, const LtLayout& b,
                     const LtLayout& cd, const LtPreference& pref, int requested, cublasLtMatmulHeuristicResult_t* heur,
                     int* found) {
  return lt_status(cublasLtMatmulAlgoGetHeuristic(lt_handle(ex), op.get(), a.get(), b.get(), cd.get(), cd.get(),
                                                  pref.get(), requested, heur, found),
                   ex, "cublasLtMatmulAlgoGetHeuristic");
}

}  // namespace graft::cuda
