// The ten Reduce ops' CUDA kernels and ops: generic reductions over any set of axes (up to kMaxRank),
// empty ones included, with one block per output element, float accumulation. Axes come from the attribute or a host
// input.
#include "ops/reduce_norm/reduce_norm.h"

#include <climits>
#include <string>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------------

namespace k {

namespace {

// Block-wide reduction of `v` under `op` with identity `id` (every thread gets the result); `sh`
// holds 32 values.
template <typename A, typename Op>
__device__ __forceinline__ A block_reduce(A v, A* sh, A id, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  v = lane < nw ? sh[lane] : id;
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// NaN sticks, as in the CPU reference (nothing compares greater than it).
template <typename A>
__device__ __forceinline__ A max_nan(A a, A b) { return (isnan(a) || a > b) ? a : b; }
template <typename A>
__device__ __forceinline__ A min_nan(A a, A b) { return (isnan(a) || a < b) ? a : b; }

// float64 reduces in double, as the CPU reference; the other float types in float.
template <typename T>
using ReduceAcc = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename T>
__global__ void reduce_kernel(ReduceKind kind, const T* __restrict__ x, T* __restrict__ y, Strided kept,
                              Strided red, int64_t red_n) {
  using A = ReduceAcc<T>;
  constexpr A kInf = static_cast<A>(INFINITY);
  __shared__ A sh[32];
  const int64_t base = strided_offset(kept, blockIdx.x);
  auto add = [](A a, A b) { return a + b; };
  A out;
  switch (kind) {
    case ReduceKind::kMax:
    case ReduceKind::kMin: {
      const bool mx = kind == ReduceKind::kMax;
      A acc = mx ? -kInf : kInf;
      for (int64_t r = threadIdx.x; r < red_n; r += blockDim.x) {
        const A v = Elem<T>::ld(x[base + strided_offset(red, r)]);
        acc = mx ? max_nan(v, acc) : min_nan(v, acc);
      }
      out = mx ? block_reduce(acc, sh, -kInf, [](A a, A b) { return max_nan(a, b); })
               : block_reduce(acc, sh, kInf, [](A a, A b) { return min_nan(a, b); });
      break;
    }
    case ReduceKind::kProd: {
      A acc = 1;
      for (int64_t r = threadIdx.x; r < red_n; r += blockDim.x) acc *= Elem<T>::ld(x[base + strided_offset(red, r)]);
      out = block_reduce(acc, sh, A(1), [](A a, A b) { return a * b; });
      break;
    }
    case ReduceKind::kLogSumExp: {
      // The max first, so large inputs do not overflow; an infinite max is not subtracted.
      A m = -kInf;
      for (int64_t r = threadIdx.x; r < red_n; r += blockDim.x)
        m = fmax(m, static_cast<A>(Elem<T>::ld(x[base + strided_offset(red, r)])));
      m = block_reduce(m, sh, -kInf, [](A a, A b) { return fmax(a, b); });
      const A sub = isinf(m) ? A(0) : m;
      A acc = 0;
      for (int64_t r = threadIdx.x; r < red_n; r += blockDim.x)
        acc += exp(static_cast<A>(Elem<T>::ld(x[base + strided_offset(red, r)])) - sub);
      out = log(block_reduce(acc, sh, A(0), add)) + sub;
      break;
    }
    default: {
      A acc = 0;
      for (int64_t r = threadIdx.x; r < red_n; r += blockDim.x) {
        const A v = Elem<T>::ld(x[base + strided_offset(red, r)]);
        acc += kind == ReduceKind::kSumSquare || kind == ReduceKind::kL2 ? v * v
               : kind == ReduceKind::kL1                                ? fabs(v)
                                                                        : v;
      }
      out = block_reduce(acc, sh, A(0), add);
      if (kind == ReduceKind::kMean) out /= static_cast<A>(red_n);
      else if (kind == ReduceKind::kL2) out = sqrt(out);
      else if (kind == ReduceKind::kLogSum) out = log(out);
      break;
    }
  }
  if (threadIdx.x == 0) y[blockIdx.x] = Elem<T>::st(out);
}

// Integers: int64 accumulation, unsigned so that overflow wraps like the CPU reference. T uint8_t is
// bool (opset 20's ReduceMax and ReduceMin: any and all), read as 0 or 1.
template <typename T>
__global__ void reduce_int_kernel(ReduceKind kind, const T* __restrict__ x, T* __restrict__ y, Strided kept,
                                  Strided red, int64_t red_n) {
  using U = unsigned long long;
  __shared__ long long sh[32];
  const int64_t base = strided_offset(kept, blockIdx.x);
  const bool mx = kind == ReduceKind::kMax, mn = kind == ReduceKind::kMin, prod = kind == ReduceKind::kProd;
  // T's own extremes, so Max and Min over an empty set give the type's minimum and maximum (ONNX),
  // as the CPU reference does.
  constexpr bool kBool = sizeof(T) == 1;
  constexpr long long kLowest = kBool ? 0 : sizeof(T) == 4 ? INT_MIN : LLONG_MIN;
  constexpr long long kHighest = kBool ? 1 : sizeof(T) == 4 ? INT_MAX : LLONG_MAX;
  long long acc = mx ? kLowest : mn ? kHighest : prod ? 1 : 0;
  for (int64_t r = threadIdx.x; r < red_n; r += blockDim.x) {
    const T xv = x[base + strided_offset(red, r)];
    const long long v = kBool ? (xv != 0 ? 1 : 0) : static_cast<long long>(xv);
    switch (kind) {
      case ReduceKind::kMax: acc = v > acc ? v : acc; break;
      case ReduceKind::kMin: acc = v < acc ? v : acc; break;
      case ReduceKind::kProd: acc = static_cast<long long>(U(acc) * U(v)); break;
      case ReduceKind::kSumSquare: acc = static_cast<long long>(U(acc) + U(v) * U(v)); break;
      case ReduceKind::kL1: acc = static_cast<long long>(U(acc) + U(v < 0 ? -v : v)); break;
      default: acc = static_cast<long long>(U(acc) + U(v)); break;
    }
  }
  long long out;
  if (mx) out = block_reduce(acc, sh, kLowest, [](long long a, long long b) { return a > b ? a : b; });
  else if (mn) out = block_reduce(acc, sh, kHighest, [](long long a, long long b) { return a < b ? a : b; });
  else if (prod) out = block_reduce(acc, sh, 1LL, [](long long a, long long b) { return static_cast<long long>(U(a) * U(b)); });
  else out = block_reduce(acc, sh, 0LL, [](long long a, long long b) { return static_cast<long long>(U(a) + U(b)); });
  if (kind == ReduceKind::kMean) out = red_n ? out / red_n : 0;  // the CPU reference's mean of nothing
  if (threadIdx.x == 0) y[blockIdx.x] = static_cast<T>(out);
}

}  // namespace

cudaError_t launch_reduce(KType t, ReduceKind kind, const void* x, void* y, const Strided& kept, int64_t out_n,
                          const Strided& reduced, int64_t red_n, cudaStream_t s) {
  if (out_n == 0) return cudaSuccess;
  if (out_n > 0x7fffffffLL) return cudaErrorInvalidValue;
  const unsigned blocks = static_cast<unsigned>(out_n);
  if (t == KType::kBool) {
    if (kind != ReduceKind::kMax && kind != ReduceKind::kMin) return cudaErrorInvalidValue;
    reduce_int_kernel<uint8_t><<<blocks, kThreads, 0, s>>>(kind, static_cast<const uint8_t*>(x),
                                                           static_cast<uint8_t*>(y), kept, reduced, red_n);
    return cudaGetLastError();
  }
  if (t == KType::kI32 || t == KType::kI64) {
    if (kind == ReduceKind::kL2 || kind == ReduceKind::kLogSum || kind == ReduceKind::kLogSumExp)
      return cudaErrorInvalidValue;
    if (t == KType::kI32)
      reduce_int_kernel<int32_t><<<blocks, kThreads, 0, s>>>(kind, static_cast<const int32_t*>(x),
                                                             static_cast<int32_t*>(y), kept, reduced, red_n);
    else
      reduce_int_kernel<int64_t><<<blocks, kThreads, 0, s>>>(kind, static_cast<const int64_t*>(x),
                                                             static_cast<int64_t*>(y), kept, reduced, red_n);
    return cudaGetLastError();
  }
  GRAFT_FLOAT64_DISPATCH(t, (reduce_kernel<T><<<blocks, kThreads, 0, s>>>(kind, static_cast<const T*>(x), static_cast<T*>(y),
                                                                          kept, reduced, red_n)));
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA op ---------------------------------------------------------------------------------------

namespace {

using namespace util;

// Every kind takes the float types with float64; the integer ones (not L2/LogSum/LogSumExp, as in the
// CPU reference) int32/int64 too, and Max and Min bool (opset 20: any and all).
constexpr std::initializer_list<DataType> kMaxMinDtypes = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16,
                                                           DataType::kFloat64, DataType::kInt32,   DataType::kInt64,
                                                           DataType::kBool};

// The data dtypes (input 0) of a reduction's kernels.
constexpr std::initializer_list<DataType> reduce_key_dtypes(k::ReduceKind kind) {
  return kind == k::ReduceKind::kMax || kind == k::ReduceKind::kMin ? kMaxMinDtypes
         : kind != k::ReduceKind::kL2 && kind != k::ReduceKind::kLogSum && kind != k::ReduceKind::kLogSumExp
             ? kGpuFloats64Ints
             : kGpuFloats64;
}

// With noop_with_empty_axes and no axes, the CPU reference copies the input for the kinds of its
// `reduce` (Sum/Mean/Max/Min/Prod/SumSquare/L2) but applies the per-element function for
// L1/LogSum/LogSumExp (a one-element reduction): |x|, log(x), x.
constexpr bool noop_copies(k::ReduceKind kind) {
  return kind != k::ReduceKind::kL1 && kind != k::ReduceKind::kLogSum && kind != k::ReduceKind::kLogSumExp;
}

template <k::ReduceKind kKind>
Status reduce_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  const Tensor* axes_t = ex.ctx->inputs.size() > 1 ? ex.ctx->inputs[1] : nullptr;
  std::optional<std::vector<int64_t>> axes_in;
  if (axes_t) {
    if (axes_t->device() != DeviceType::kCPU) return fail(ex, StatusCode::kInternal, "axes must be a host input");
    axes_in = axes_t->to_int64_vector();
  }
  GRAFT_ASSIGN_OR_RETURN(graft::ReduceAxes ra, graft::resolve_reduce_axes(attrs_of(ex), x.rank(), axes_t != nullptr, axes_in));
  std::vector<bool> red(static_cast<size_t>(x.rank()), false);
  if (ra.noop && noop_copies(kKind)) {
    if (x.nbytes() != y.nbytes()) return fail(ex, StatusCode::kInternal, "output size differs from input size");
    if (x.nbytes() == 0) return Status::ok();
    return launch_status(cudaMemcpyAsync(y.data(), x.data(), x.nbytes(), cudaMemcpyDeviceToDevice, stream_of(ex)), ex,
                         "cudaMemcpyAsync");
  }
  if (ra.noop) {
    // Copy the input (a reduction over nothing); Sum/Mean/Max/Min of one element is itself.
  } else if (ra.axes.empty()) {
    red.assign(red.size(), true);
  } else {
    for (int64_t a : ra.axes) red[static_cast<size_t>(a)] = true;
  }
  k::Strided kept, rs;
  const auto st = contiguous_strides(x.dims());
  int64_t red_n = 1;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (x.dims()[d] == 1) continue;
    k::Strided& s = red[static_cast<size_t>(d)] ? rs : kept;
    if (s.rank == k::kMaxRank) return fail(ex, StatusCode::kUnsupported, "more than ", k::kMaxRank, " axes");
    s.dims[s.rank] = x.dims()[d];
    s.strides[s.rank] = st[static_cast<size_t>(d)];
    ++s.rank;
    if (red[static_cast<size_t>(d)]) red_n *= x.dims()[d];
  }
  if (y.numel() * red_n != x.numel()) return fail(ex, StatusCode::kInternal, "output shape inconsistent with the axes");
  // An empty reduced axis (red_n 0) leaves every accumulator at its start value: the reduction's value
  // over an empty set (0 for the sums, 1 for Prod, -inf or the type's minimum for Max, NaN for a float
  // Mean), as in the CPU reference.
  return launch_status(k::launch_reduce(ktype(x.dtype()), kKind, x.data(), y.data(), kept, y.numel(), rs, red_n, stream_of(ex)), ex);
}

// Keys: the data (input 0) and the axes (input 1, when present: int32 or int64).
template <k::ReduceKind kKind>
CudaOp reduce_op(const char* name) {
  return kernel_dtypes({input_dtypes(0, reduce_key_dtypes(kKind)), input_dtypes(1, kGpuInts)},
                       CudaOp{name, &input0_given, &reduce_run<kKind>, {1}, nullptr});
}

}  // namespace

void append_cuda_reduce_ops(std::vector<CudaOp>& out) {
  out.push_back(reduce_op<k::ReduceKind::kMean>("ReduceMean"));
  out.push_back(reduce_op<k::ReduceKind::kSum>("ReduceSum"));
  out.push_back(reduce_op<k::ReduceKind::kMax>("ReduceMax"));
  out.push_back(reduce_op<k::ReduceKind::kMin>("ReduceMin"));
  out.push_back(reduce_op<k::ReduceKind::kProd>("ReduceProd"));
  out.push_back(reduce_op<k::ReduceKind::kSumSquare>("ReduceSumSquare"));
  out.push_back(reduce_op<k::ReduceKind::kL1>("ReduceL1"));
  out.push_back(reduce_op<k::ReduceKind::kL2>("ReduceL2"));
  out.push_back(reduce_op<k::ReduceKind::kLogSum>("ReduceLogSum"));
  out.push_back(reduce_op<k::ReduceKind::kLogSumExp>("ReduceLogSumExp"));
}

}  // namespace graft::cuda
