// The cuBLASLt layer's functions (cublaslt_wrap.h).
#include "backends/cuda/cublaslt_wrap.h"

#include <optional>
#include <string>

#include "backends/cuda/cuda_op_util.h"
#include "plan/tactics.h"

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

namespace {

constexpr int kLtAlgos = 8;  // heuristic candidates considered when timing tactics

// The largest power of two (at most 256, cuBLASLt's default assumption) dividing every base address
// the matmul reads or writes: the heuristic then offers only algorithms that accept it. A strided
// batch's later matrices are not counted: cuBLASLt reads the batch stride from the layouts and
// checks it itself (the harness's MatMul batched_odd_strides case), and counting it would cost
// batches such as ViT's 197 x 197 attention scores per head their vectorized kernels.
uint32_t lt_alignment(const LtProblem& g) {
  uintptr_t bits = 256;
  for (const void* ptr : {static_cast<const void*>(g.x), g.w, static_cast<const void*>(g.y), g.c, g.bias})
    if (ptr) bits |= reinterpret_cast<uintptr_t>(ptr);
  return static_cast<uint32_t>(bits & (~bits + 1));  // lowest set bit
}

// C accumulates into Y in place: a second run would not compute the same Y.
bool in_place_c(const LtProblem& g) { return !g.c && g.beta != 0.f; }

// The timing-cache key of one matmul problem: GPU, library version and everything that can change
// the candidates cuBLASLt offers.
std::string lt_tactic_key(const LtProblem& g, cublasLtEpilogue_t epi, uint32_t align) {
  static const std::string device = util::device_arch_tag() + ";cublasLt" + std::to_string(cublasLtGetVersion());
  auto s = [](int64_t v) { return std::to_string(v); };
  return "gemm;" + device + ";" + dtype_name(g.dt) + ";m" + s(g.M) + ";n" + s(g.N) + ";k" + s(g.K) +
         (g.trans_x ? ";xT" : "") + (g.trans_w ? ";wT" : "") + ";b" + s(g.batch) + ";epi" +
         s(static_cast<int64_t>(epi)) + (g.c ? ";res" : "") +
         ";ws" + s(static_cast<int64_t>(g.workspace ? g.workspace_size : 0)) + (align < 256 ? ";al" + s(align) : "");
}

// Times each candidate (a warm-up call, then TimingEvents::ms_per_call) and returns the fastest index.
template <typename Run>
Result<Tactic> time_lt_algos(CudaExec& ex, const cublasLtMatmulHeuristicResult_t* heur, int found, uint64_t ws,
                             Run&& run) {
  cudaStream_t s = util::stream_of(ex);
  util::TimingEvents events;
  GRAFT_RETURN_IF_ERROR(util::launch_status(events.create(), ex, "cudaEventCreate"));
  Tactic best;
  best.ms = 1e30;
  for (int i = 0; i < found; ++i) {
    if (heur[i].state != CUBLAS_STATUS_SUCCESS || heur[i].workspaceSize > ws) continue;
    if (run(i) != CUBLAS_STATUS_SUCCESS || cudaStreamSynchronize(s) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    const float ms = events.ms_per_call(s, [&] { return run(i) == CUBLAS_STATUS_SUCCESS; });
    if (ms >= 0 && ms < best.ms) best = Tactic{i, 0, ms};
  }
  if (best.algo < 0) return util::fail(ex, StatusCode::kUnsupported, "no cuBLASLt algorithm runs this matmul");
  return best;
}

// One matmul problem made ready to run: its cuBLASLt descriptors and the chosen algorithm.
struct PreparedLt {
  LtMatmulDesc op;
  LtLayout lw, lx, ly;
  cublasLtMatmulAlgo_t algo{};
  bool fused_epilogue = true;
  const void* bias = nullptr;  // the bias pointer the descriptor holds now
};

Result<std::shared_ptr<PreparedLt>> prepare_lt(CudaExec& ex, const LtProblem& g, uint32_t align) {
  const cudaDataType_t ct = lt_data_type(g.dt);
  const int64_t M = g.M, N = g.N, K = g.K;
  cublasLtEpilogue_t epi = g.epilogue;
  auto p = std::make_shared<PreparedLt>();
  LtPreference pref;

  // Row-major Y[M,N] = X[M,K] W is column-major Y^T[N,M] = W^T X^T: cuBLASLt's A is W, its B is X.
  // W row-major [K,N] is column-major [N,K] (op N); W row-major [N,K] (trans_w) is column-major
  // [K,N] (op T); X likewise. The bias vector runs along cuBLASLt's rows, which are our N.
  GRAFT_RETURN_IF_ERROR(lt_create_matmul_desc(&p->op, ex));
  const cublasOperation_t opw = g.trans_w ? CUBLAS_OP_T : CUBLAS_OP_N, opx = g.trans_x ? CUBLAS_OP_T : CUBLAS_OP_N;
  GRAFT_RETURN_IF_ERROR(lt_set(p->op, CUBLASLT_MATMUL_DESC_TRANSA, opw, ex, "set TRANSA"));
  GRAFT_RETURN_IF_ERROR(lt_set(p->op, CUBLASLT_MATMUL_DESC_TRANSB, opx, ex, "set TRANSB"));
  GRAFT_RETURN_IF_ERROR(lt_set(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, epi, ex, "set EPILOGUE"));
  if (g.bias) {
    p->bias = g.bias;
    GRAFT_RETURN_IF_ERROR(lt_set(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, p->bias, ex, "set BIAS_POINTER"));
  }
  const uint64_t w_rows = static_cast<uint64_t>(g.trans_w ? K : N), w_cols = static_cast<uint64_t>(g.trans_w ? N : K);
  const uint64_t x_rows = static_cast<uint64_t>(g.trans_x ? M : K), x_cols = static_cast<uint64_t>(g.trans_x ? K : M);
  GRAFT_RETURN_IF_ERROR(lt_create_layout(&p->lw, ct, w_rows, w_cols, static_cast<int64_t>(w_rows), ex, "layout W"));
  GRAFT_RETURN_IF_ERROR(lt_create_layout(&p->lx, ct, x_rows, x_cols, static_cast<int64_t>(x_rows), ex, "layout X"));
  GRAFT_RETURN_IF_ERROR(lt_create_layout(&p->ly, ct, static_cast<uint64_t>(N), static_cast<uint64_t>(M), N, ex, "layout Y"));
  GRAFT_RETURN_IF_ERROR(lt_set_strided_batch(g.batch, p->lw, g.stride_w, p->lx, g.stride_x, p->ly, g.stride_y, ex));
  const uint64_t ws = g.workspace ? g.workspace_size : 0;
  GRAFT_RETURN_IF_ERROR(lt_create_preference(&pref, ws, ex));
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    GRAFT_RETURN_IF_ERROR(lt_status(cublasLtMatmulPreferenceSetAttribute(pref.get(), attr, &align, sizeof(align)), ex,
                                    "set MIN_ALIGNMENT"));
  cublasLtMatmulHeuristicResult_t heur[kLtAlgos] = {};
  int found = 0;
  GRAFT_RETURN_IF_ERROR(lt_heuristics(ex, p->op, p->lw, p->lx, p->ly, pref, kLtAlgos, heur, &found));
  if (found == 0 && epi != CUBLASLT_EPILOGUE_DEFAULT) {
    epi = CUBLASLT_EPILOGUE_DEFAULT;
    p->fused_epilogue = false;
    GRAFT_RETURN_IF_ERROR(lt_set(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, epi, ex, "set EPILOGUE"));
    GRAFT_RETURN_IF_ERROR(lt_heuristics(ex, p->op, p->lw, p->lx, p->ly, pref, kLtAlgos, heur, &found));
  }
  if (found == 0)
    return util::fail(ex, StatusCode::kUnsupported, "cuBLASLt found no algorithm for M=", M, " N=", N, " K=", K);
  const void* c = g.c ? g.c : g.y;
  auto run = [&](int i) {
    return cublasLtMatmul(lt_handle(ex), p->op.get(), &g.alpha, g.w, p->lw.get(), g.x, p->lx.get(), &g.beta, c,
                          p->ly.get(), g.y, p->ly.get(), &heur[i].algo, g.workspace, ws, util::stream_of(ex));
  };
  // Tactic: which of the heuristic's candidates runs. Timed once per problem while the builder
  // tunes (kept in the engine's table and the timing cache); else the table's choice, else the
  // heuristic's first. A matmul accumulating into Y in place is not timed: each timed call would
  // add to the Y this run returns.
  int choice = 0;
  if ((ex.tactics || ex.tuning) && !in_place_c(g)) {
    GRAFT_ASSIGN_OR_RETURN(std::optional<Tactic> t, util::find_or_time_tactic(ex, lt_tactic_key(g, epi, align), [&] {
                             return time_lt_algos(ex, heur, found, ws, run);
                           }));
    if (t && t->algo >= 0 && t->algo < found) choice = t->algo;
  }
  p->algo = heur[choice].algo;
  return p;
}

}  // namespace

Status lt_rowmajor(CudaExec& ex, const LtProblem& g, bool* fused_epilogue) {
  if (!ex.cublaslt) return util::fail(ex, StatusCode::kInternal, "no cuBLASLt handle in the execution context");
  // Prepared once per problem (everything but the data pointers, alpha and beta's value).
  const uint32_t align = lt_alignment(g);
  const std::string key = PreparedCache::key_of(
      "lt", {static_cast<int64_t>(g.dt), g.M, g.N, g.K, g.trans_x, g.trans_w, g.batch, g.stride_x, g.stride_w,
             g.stride_y, static_cast<int64_t>(g.epilogue), g.bias != nullptr, g.c != nullptr, in_place_c(g),
             static_cast<int64_t>(g.workspace ? g.workspace_size : 0), align});
  PreparedLt* p = ex.prepared ? ex.prepared->find<PreparedLt>(key) : nullptr;
  std::shared_ptr<PreparedLt> owned;
  if (!p || ex.tuning) {
    GRAFT_ASSIGN_OR_RETURN(owned, prepare_lt(ex, g, align));
    p = ex.prepared ? ex.prepared->put(key, owned) : owned.get();
  }
  if (g.bias && g.bias != p->bias) {  // another layer with the same problem: its own bias
    p->bias = g.bias;
    GRAFT_RETURN_IF_ERROR(lt_set(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, p->bias, ex, "set BIAS_POINTER"));
  }
  *fused_epilogue = p->fused_epilogue;
  const void* c = g.c ? g.c : g.y;
  const uint64_t ws = g.workspace ? g.workspace_size : 0;
  return lt_status(cublasLtMatmul(lt_handle(ex), p->op.get(), &g.alpha, g.w, p->lw.get(), g.x, p->lx.get(), &g.beta, c,
                                  p->ly.get(), g.y, p->ly.get(), &p->algo, g.workspace, ws, util::stream_of(ex)),
                   ex, "cublasLtMatmul");
}

}  // namespace graft::cuda
