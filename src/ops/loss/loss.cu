// The loss family's CUDA kernels and CUDA ops (definition and CPU reference: loss.cpp;
// attributes and shapes: loss.h, read here as the schema and the CPU reference read them, so errors
// read the same on both backends). Both ops in one file, as in loss.cpp: SoftmaxCrossEntropyLoss is
// NegativeLogLikelihoodLoss's kernel and run with the log_softmax flag set.
//
// One thread per target element computes its class column's log-softmax (SoftmaxCrossEntropyLoss)
// and its loss in double, as the CPU reference does, so the two agree to the output dtype's
// rounding; the reduced losses are then summed by one block in a fixed order (the same bits every
// run). A target outside [0, C) that is not ignore_index makes its loss and weight NaN here and is
// reported (CudaOp::invalid_data), failing the run as the CPU reference does.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/loss/loss.h"

namespace graft::cuda {

// ---- kernels -----------------------------------------------------------------------------------

namespace k {
namespace {

// One thread per target element: its class column's log-softmax (when asked), then its loss. In
// double, as the CPU reference, so the two agree to the output dtype's rounding.
template <typename T, typename I>
__global__ void loss_elem_kernel(const T* x, const I* target, const T* weight, int64_t n, int64_t c, int64_t inner,
                                 bool log_softmax, bool has_ii, int64_t ii, int reduction, T* y, T* logp_out,
                                 double* scratch, DataFault fault) {
  const int64_t count = n * inner;
  GRAFT_GRID_STRIDE(k, count) {
    const int64_t b = k / inner, i = k % inner;
    const int64_t base = b * c * inner + i;
    double lse = 0.0;
    if (log_softmax) {
      double mx = -INFINITY;
      for (int64_t cls = 0; cls < c; ++cls) mx = fmax(mx, load_double(x, base + cls * inner));
      double s = 0.0;
      for (int64_t cls = 0; cls < c; ++cls) s += exp(load_double(x, base + cls * inner) - mx);
      lse = mx + log(s);
      if (logp_out)
        for (int64_t cls = 0; cls < c; ++cls)
          store_double(logp_out, base + cls * inner, load_double(x, base + cls * inner) - lse);
    }
    const int64_t cls = static_cast<int64_t>(target[k]);
    double loss = 0.0, wt = 0.0;
    if (!(has_ii && cls == ii)) {
      if (cls < 0 || cls >= c) {
        report_invalid_data(fault);
        loss = wt = NAN;
      } else {
        wt = weight ? load_double(weight, cls) : 1.0;
        loss = -(load_double(x, base + cls * inner) - lse) * wt;
      }
    }
    if (reduction == 0) {
      store_double(y, k, loss);
    } else {
      scratch[k] = loss;
      scratch[count + k] = wt;
    }
  }
}

constexpr int kReduceThreads = 256;

// One block: each thread sums a fixed stride of the losses and weights, then a tree in shared
// memory; the order never changes, so neither do the bits.
template <typename T>
__global__ void loss_reduce_kernel(const double* scratch, int64_t count, int reduction, T* y) {
  __shared__ double sum[kReduceThreads], wsum[kReduceThreads];
  double a = 0.0, w = 0.0;
  for (int64_t k = threadIdx.x; k < count; k += kReduceThreads) {
    a += scratch[k];
    w += scratch[count + k];
  }
  sum[threadIdx.x] = a;
  wsum[threadIdx.x] = w;
  __syncthreads();
  for (int half = kReduceThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      sum[threadIdx.x] += sum[threadIdx.x + half];
      wsum[threadIdx.x] += wsum[threadIdx.x + half];
    }
    __syncthreads();
  }
  // mean: 0/0 (every target ignored) is NaN, as in the ONNX reference.
  if (threadIdx.x == 0) store_double(y, 0, reduction == 1 ? sum[0] : sum[0] / wsum[0]);
}

template <typename T, typename I>
void launch_typed(const void* x, const void* target, const void* weight, int64_t n, int64_t c, int64_t inner,
                  bool log_softmax, bool has_ii, int64_t ii, int reduction, void* y, void* logp_out, double* scratch,
                  cudaStream_t s, const DataFault& fault) {
  const int64_t count = n * inner;
  if (count > 0)
    loss_elem_kernel<T, I><<<grid_for(count), kThreads, 0, s>>>(
        static_cast<const T*>(x), static_cast<const I*>(target), static_cast<const T*>(weight), n, c, inner,
        log_softmax, has_ii, ii, reduction, static_cast<T*>(y), static_cast<T*>(logp_out), scratch, fault);
  if (reduction != 0) loss_reduce_kernel<T><<<1, kReduceThreads, 0, s>>>(scratch, count, reduction, static_cast<T*>(y));
}

// x [n, c, inner] of dtype t (float32, float16, bfloat16, float64), target [n, inner] of dtype
// target_t (int32, int64), weight [c] of dtype t or null; logp_out (SoftmaxCrossEntropyLoss's
// log_prob, [n, c, inner]) may be null. reduction 0 (none): y[k] = the loss of target k; 1 (sum) and
// 2 (mean): y[0] = the sum of the losses, or that sum over the sum of the weights, with `scratch`
// holding 2 * n * inner doubles. cudaErrorInvalidValue for a dtype it does not handle.
cudaError_t launch_loss(KType t, KType target_t, const void* x, const void* target, const void* weight, int64_t n,
                        int64_t c, int64_t inner, bool log_softmax, bool has_ii, int64_t ignore_index, int reduction,
                        void* y, void* logp_out, double* scratch, cudaStream_t s, const DataFault& fault) {
  if (reduction != 0 && !scratch) return cudaErrorInvalidValue;
  GRAFT_FLOAT64_DISPATCH(t, GRAFT_INDEX_DISPATCH(target_t, (launch_typed<T, I>(x, target, weight, n, c, inner,
                                                                                 log_softmax, has_ii, ignore_index,
                                                                                 reduction, y, logp_out, scratch, s,
                                                                                 fault))));
  return cudaGetLastError();
}

}  // namespace
}  // namespace k

// ---- CUDA ops ----------------------------------------------------------------------------------

namespace {

using namespace util;

// The keys: the scores and the weight (if given) float32/float16/bfloat16/float64, the target
// int32/int64.
bool loss_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "needs the scores and the target");
  return true;
}

// The reduced losses need two doubles per target element (loss and weight) in the workspace.
size_t loss_workspace(const Node& node, const std::vector<const Tensor*>& inputs, const std::vector<Tensor>& /*outputs*/) {
  auto a = loss_attrs(node.attrs);
  if (!a || a->reduction == LossReduction::kNone || inputs.size() < 2 || !inputs[1]) return 0;
  return static_cast<size_t>(inputs[1]->numel()) * 2 * sizeof(double);
}

Status loss_run(CudaExec& ex, bool log_softmax) {
  const Tensor* x = input_or_null(ex, 0);
  const Tensor* target = input_or_null(ex, 1);
  const Tensor* weight = input_or_null(ex, 2);
  if (!x || !target) return fail(ex, StatusCode::kInvalidModel, "needs the scores and the target");
  auto a = loss_attrs(attrs_of(ex));
  if (!a) return with_node(ex, a.status());
  const std::vector<int64_t> wd = weight ? weight->dims() : std::vector<int64_t>{};
  auto g = loss_geometry(op_name(ex), x->dims(), x->dtype(), target->dtype(), target->dims(), weight ? &wd : nullptr,
                         weight ? weight->dtype() : DataType::kUndefined);
  if (!g) return with_node(ex, g.status());
  Tensor& y = *ex.ctx->outputs[0];
  const bool none = a->reduction == LossReduction::kNone;
  if (y.dtype() != x->dtype() || y.numel() != (none ? target->numel() : 1))
    return fail(ex, StatusCode::kInternal, "output was allocated with other dims or dtype than the op computes");
  Tensor* logp = log_softmax && ex.ctx->outputs.size() > 1 ? ex.ctx->outputs[1] : nullptr;
  if (logp && (logp->dtype() != x->dtype() || logp->numel() != x->numel()))
    return fail(ex, StatusCode::kInternal, "log_prob was allocated with other dims or dtype than the scores");
  const size_t need = none ? 0 : static_cast<size_t>(target->numel()) * 2 * sizeof(double);
  if (ex.workspace_size < need) return fail(ex, StatusCode::kInternal, "loss workspace missing");
  const int reduction = none ? 0 : a->reduction == LossReduction::kSum ? 1 : 2;
  return launch_status(k::launch_loss(ktype(x->dtype()), ktype(target->dtype()), x->data(), target->data(),
                                      weight ? weight->data() : nullptr, g->n, g->c, g->inner, log_softmax,
                                      a->ignore_index.has_value(), a->ignore_index.value_or(0), reduction, y.data(),
                                      logp ? logp->data() : nullptr, static_cast<double*>(ex.workspace), stream_of(ex),
                                      ex.fault),
                       ex);
}

Status nll_run(CudaExec& ex) { return loss_run(ex, false); }
Status softmax_cross_entropy_run(CudaExec& ex) { return loss_run(ex, true); }

}  // namespace

void append_cuda_loss_ops(std::vector<CudaOp>& out) {
  const char* const bad_target = "a target class is outside [0, C) and not ignore_index";
  const std::initializer_list<KernelDtypes> keys = {input_dtypes(0, kGpuFloats64), input_dtypes(1, kGpuInts),
                                                    input_dtypes(2, kGpuFloats64)};
  out.push_back(reports_invalid_data(
      bad_target, kernel_dtypes(keys, CudaOp{"NegativeLogLikelihoodLoss", &loss_supports, &nll_run, {}, &loss_workspace})));
  out.push_back(reports_invalid_data(
      bad_target, kernel_dtypes(keys, CudaOp{"SoftmaxCrossEntropyLoss", &loss_supports, &softmax_cross_entropy_run, {},
                                             &loss_workspace})));
}

}  // namespace graft::cuda
