#include <cmath>
#include <cstdint>

#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/loss_kernels.cuh"

namespace graft::cuda::k {
namespace {

template <typename T>
__device__ __forceinline__ double load(const T* p, int64_t i) {
  return static_cast<double>(Elem<T>::ld(p[i]));
}
template <typename T>
__device__ __forceinline__ void store(T* p, int64_t i, double v) {
  p[i] = Elem<T>::st(static_cast<typename Elem<T>::C>(v));
}

// One thread per target element: its class column's log-softmax (when asked), then its loss. In
// double, as the CPU reference, so the two agree to the output dtype's rounding.
template <typename T, typename I>
__global__ void loss_elem_kernel(const T* x, const I* target, const T* weight, int64_t n, int64_t c, int64_t inner,
                                 bool log_softmax, bool has_ii, int64_t ii, int reduction, T* y, T* logp_out,
                                 double* scratch) {
  const int64_t count = n * inner;
  GRAFT_GRID_STRIDE(k, count) {
    const int64_t b = k / inner, i = k % inner;
    const int64_t base = b * c * inner + i;
    double lse = 0.0;
    if (log_softmax) {
      double mx = -INFINITY;
      for (int64_t cls = 0; cls < c; ++cls) mx = fmax(mx, load(x, base + cls * inner));
      double s = 0.0;
      for (int64_t cls = 0; cls < c; ++cls) s += exp(load(x, base + cls * inner) - mx);
      lse = mx + log(s);
      if (logp_out)
        for (int64_t cls = 0; cls < c; ++cls) store(logp_out, base + cls * inner, load(x, base + cls * inner) - lse);
    }
    const int64_t cls = static_cast<int64_t>(target[k]);
    double loss = 0.0, wt = 0.0;
    if (!(has_ii && cls == ii)) {
      if (cls < 0 || cls >= c) {
        loss = wt = NAN;
      } else {
        wt = weight ? load(weight, cls) : 1.0;
        loss = -(load(x, base + cls * inner) - lse) * wt;
      }
    }
    if (reduction == 0) {
      store(y, k, loss);
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
  if (threadIdx.x == 0) store(y, 0, reduction == 1 ? sum[0] : sum[0] / wsum[0]);
}

template <typename T, typename I>
void launch_typed(const void* x, const void* target, const void* weight, int64_t n, int64_t c, int64_t inner,
                  bool log_softmax, bool has_ii, int64_t ii, int reduction, void* y, void* logp_out, double* scratch,
                  cudaStream_t s) {
  const int64_t count = n * inner;
  if (count > 0)
    loss_elem_kernel<T, I><<<grid_for(count), kThreads, 0, s>>>(
        static_cast<const T*>(x), static_cast<const I*>(target), static_cast<const T*>(weight), n, c, inner,
        log_softmax, has_ii, ii, reduction, static_cast<T*>(y), static_cast<T*>(logp_out), scratch);
  if (reduction != 0) loss_reduce_kernel<T><<<1, kReduceThreads, 0, s>>>(scratch, count, reduction, static_cast<T*>(y));
}

}  // namespace

cudaError_t launch_loss(KType t, KType target_t, const void* x, const void* target, const void* weight, int64_t n,
                        int64_t c, int64_t inner, bool log_softmax, bool has_ii, int64_t ignore_index, int reduction,
                        void* y, void* logp_out, double* scratch, cudaStream_t s) {
  if (reduction != 0 && !scratch) return cudaErrorInvalidValue;
  GRAFT_FLOAT64_DISPATCH(t, GRAFT_INDEX_DISPATCH(target_t, (launch_typed<T, I>(x, target, weight, n, c, inner,
                                                                                 log_softmax, has_ii, ignore_index,
                                                                                 reduction, y, logp_out, scratch, s))));
  return cudaGetLastError();
}

}  // namespace graft::cuda::k
