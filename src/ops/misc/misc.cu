// The misc family's CUDA kernels and CUDA ops (definitions and CPU references: misc.cpp), so a CUDA
// engine keeps these ops on the GPU. Attributes and layouts are validated with the CPU reference's
// own readers (mvn_axes, lrn_attrs, the Einsum parser, ...), so errors read the same on both
// backends.
#include "ops/misc/misc.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/attr_util.h"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------

namespace k {

// Launchers: plain device pointers, no framework types; each returns the launch's cudaError_t
// (cudaErrorInvalidValue for a type the launcher does not handle).
//
// The arithmetic follows the CPU reference step by step (double for the normalizations and the
// windows; results stored as graft's store_from_double does) so that integer outputs match it
// exactly.

// ---- Normalizations -------------------------------------------------------------------------------

// x viewed as [n * c planes, spatial]; per plane, mean and (biased) variance in double, then
// y = (x - mean) * scale[ch] / sqrt(var + eps) + bias[ch]. Float types (scale, bias share x's type).
cudaError_t launch_instance_norm(KType t, const void* x, const void* scale, const void* bias, void* y, int64_t planes,
                                 int64_t channels, int64_t spatial, double eps, cudaStream_t s);

// One group per combination of the kept axes (`kept`: their extents and x strides), `count`
// elements each (`reduced`: the reduced axes' extents and x strides). y = (x - mean) /
// (sqrt(var) + 1e-9), statistics in double. Float types.
cudaError_t launch_mvn(KType t, const void* x, void* y, const Strided& kept, const Strided& reduced, int64_t groups,
                       int64_t count, cudaStream_t s);

// x viewed as [outer, channels, inner]; y = x / (bias + alpha / size * sum of x^2 over the channel
// window [ch - before, ch + after] clipped to the channels) ^ beta, in double. Float types.
cudaError_t launch_lrn(KType t, const void* x, void* y, int64_t outer, int64_t channels, int64_t inner, int64_t before,
                       int64_t after, double alpha_over_size, double bias, double beta, cudaStream_t s);

// ---- Data ---------------------------------------------------------------------------------------

// uint8 y = x << s (left) or x >> s, broadcast (operands 0 and 1 of `p`); shifts of 8 or more give 0.
cudaError_t launch_bit_shift(bool left, const uint8_t* x, const uint8_t* sh, const Bcast& p, uint8_t* y, int64_t n,
                             cudaStream_t s);

// y[r, c] = (c - r == k) ? one : 0, where `one` is the low elem_size bytes of `one_bits`.
cudaError_t launch_eye_like(int elem_size, uint64_t one_bits, int64_t rows, int64_t cols, int64_t k, void* y,
                            cudaStream_t s);

// 0: Hann, 1: Hamming, 2: Blackman. n samples over a period of n (periodic) or n - 1; a window of
// period 0 is all ones. Any numeric y type (integers truncate, as graft's Cast does).
cudaError_t launch_window(KType t, int kind, bool periodic, void* y, int64_t n, cudaStream_t s);

// x viewed as [d0, d1, block] with the batch on axis 0 (batch_axis_0) or 1 and time on the other;
// the first lens[b] steps of batch b are reversed. A length outside [0, steps] (which the CPU
// reference refuses, and a kernel cannot report) leaves that batch's steps in order.
cudaError_t launch_reverse_sequence(int elem_size, const void* x, const int64_t* lens, void* y, bool batch_axis_0,
                                    int64_t d0, int64_t d1, int64_t block, cudaStream_t s);

// y[b] = det(x[b]) for `batches` matrices [m, m] of float dtype t (float32, float16, bfloat16,
// float64): one thread per matrix, Gaussian elimination with partial pivoting in double, as the CPU
// reference does it, on the matrix copied to `scratch` (batches * m * m doubles).
cudaError_t launch_det(KType t, const void* x, int64_t batches, int64_t m, double* scratch, void* y, cudaStream_t s);

// ---- Einsum ----------------------------------------------------------------------------------------

inline constexpr int kEinsumMaxInputs = 3;
inline constexpr int kEinsumMaxLabels = 12;
// Labels in output-first order: the first n_out index y's axes, the rest are summed. stride[k][l] is
// input k's stride for label l (0 where it lacks the label or broadcasts it; a diagonal adds).
struct EinsumArgs {
  int n_in = 0, n_labels = 0, n_out = 0;
  const void* in[kEinsumMaxInputs] = {};
  int64_t stride[kEinsumMaxInputs][kEinsumMaxLabels] = {};
  int64_t ext[kEinsumMaxLabels] = {};
  int64_t inner = 1;  // product of the summed labels' extents
};
// One thread per output element, summing in double (floats) or wrapping int64 (integers), in the
// CPU reference's order. All inputs and y have type t.
cudaError_t launch_einsum(KType t, const EinsumArgs& a, void* y, int64_t n, cudaStream_t s);

namespace {

#define GRAFT_MISC_NUMERIC_DISPATCH(t, CALL)                     \
  switch (t) {                                                   \
    case KType::kF32: { using T = float; CALL; break; }          \
    case KType::kF16: { using T = __half; CALL; break; }         \
    case KType::kBF16: { using T = __nv_bfloat16; CALL; break; } \
    case KType::kF64: { using T = double; CALL; break; }         \
    case KType::kI8: { using T = int8_t; CALL; break; }          \
    case KType::kU8: { using T = uint8_t; CALL; break; }         \
    case KType::kI32: { using T = int32_t; CALL; break; }        \
    case KType::kI64: { using T = int64_t; CALL; break; }        \
    default: return cudaErrorInvalidValue;                       \
  }

// ---- Normalizations -----------------------------------------------------------------------------

// Block-wide sum of a double (every thread gets it); `sh` holds 32 doubles. Synchronizes first, so
// consecutive calls may share `sh`.
__device__ __forceinline__ double block_sum_d(double v, double* sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  v = lane < nw ? sh[lane] : 0.0;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// One block per plane (grid-striding over planes); two passes in double as the CPU reference.
template <typename T>
__global__ void instance_norm_kernel(const T* x, const T* scale, const T* bias, T* y, int64_t planes,
                                     int64_t channels, int64_t spatial, double eps) {
  __shared__ double sh[32];
  for (int64_t p = blockIdx.x; p < planes; p += gridDim.x) {
    const T* xp = x + p * spatial;
    T* yp = y + p * spatial;
    double acc = 0;
    for (int64_t i = threadIdx.x; i < spatial; i += blockDim.x) acc += as_double(xp[i]);
    const double mean = block_sum_d(acc, sh) / static_cast<double>(spatial);
    acc = 0;
    for (int64_t i = threadIdx.x; i < spatial; i += blockDim.x) {
      const double d = as_double(xp[i]) - mean;
      acc = __dadd_rn(acc, __dmul_rn(d, d));
    }
    const double var = block_sum_d(acc, sh) / static_cast<double>(spatial);
    const int64_t ch = p % channels;
    const double k = as_double(scale[ch]) / sqrt(var + eps), b = as_double(bias[ch]);
    for (int64_t i = threadIdx.x; i < spatial; i += blockDim.x)
      yp[i] = store_from_double<T>(__dadd_rn(__dmul_rn(as_double(xp[i]) - mean, k), b));
  }
}

template <typename T>
__global__ void mvn_kernel(const T* x, T* y, Strided kept, Strided red, int64_t groups, int64_t count) {
  __shared__ double sh[32];
  for (int64_t g = blockIdx.x; g < groups; g += gridDim.x) {
    const int64_t base = strided_offset(kept, g);
    double acc = 0;
    for (int64_t r = threadIdx.x; r < count; r += blockDim.x) acc += as_double(x[base + strided_offset(red, r)]);
    const double mean = block_sum_d(acc, sh) / static_cast<double>(count);
    acc = 0;
    for (int64_t r = threadIdx.x; r < count; r += blockDim.x) {
      const double d = as_double(x[base + strided_offset(red, r)]) - mean;
      acc = __dadd_rn(acc, __dmul_rn(d, d));
    }
    // The epsilon of the ONNX function body, added to the standard deviation.
    const double den = sqrt(block_sum_d(acc, sh) / static_cast<double>(count)) + 1e-9;
    for (int64_t r = threadIdx.x; r < count; r += blockDim.x) {
      const int64_t at = base + strided_offset(red, r);
      y[at] = store_from_double<T>((as_double(x[at]) - mean) / den);
    }
  }
}

template <typename T>
__global__ void lrn_kernel(const T* x, T* y, int64_t channels, int64_t inner, int64_t n, int64_t before,
                           int64_t after, double alpha_over_size, double bias, double beta) {
  GRAFT_GRID_STRIDE(i, n) {
    const int64_t in = i % inner, ch = (i / inner) % channels, o = i / (inner * channels);
    const int64_t lo = ch - before < 0 ? 0 : ch - before;
    const int64_t hi = channels - 1 < ch + after ? channels - 1 : ch + after;
    double sq = 0;
    for (int64_t c = lo; c <= hi; ++c) {
      const double e = as_double(x[(o * channels + c) * inner + in]);
      sq = __dadd_rn(sq, __dmul_rn(e, e));
    }
    const double den = pow(__dadd_rn(bias, __dmul_rn(alpha_over_size, sq)), beta);
    y[i] = store_from_double<T>(as_double(x[i]) / den);
  }
}

// ---- Data ---------------------------------------------------------------------------------------

__global__ void bit_shift_kernel(bool left, const uint8_t* x, const uint8_t* sh, Bcast p, uint8_t* y, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    const unsigned v = x[bcast_offset(p, 0, i)], by = sh[bcast_offset(p, 1, i)];
    // Shifting by the width or more shifts every bit out (and is undefined in C++).
    y[i] = by >= 8 ? uint8_t{0} : static_cast<uint8_t>(left ? (v << by) : (v >> by));
  }
}

template <typename E>
__global__ void eye_like_kernel(E one, int64_t cols, int64_t k, E* y, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    const int64_t r = i / cols, c = i % cols;
    y[i] = c - r == k ? one : E{0};
  }
}

template <typename T>
__global__ void window_kernel(int kind, bool periodic, T* y, int64_t n) {
  constexpr double kPi = 3.14159265358979323846;
  const double den = periodic ? static_cast<double>(n) : static_cast<double>(n - 1);
  GRAFT_GRID_STRIDE(i, n) {
    if (den == 0) {
      y[i] = store_from_double<T>(1.0);
      continue;
    }
    // 2 * pi * i / den, evaluated left to right like the CPU reference.
    const double a = __ddiv_rn(__dmul_rn(2 * kPi, static_cast<double>(i)), den);
    double v;
    if (kind == 0) v = __dsub_rn(0.5, __dmul_rn(0.5, cos(a)));
    else if (kind == 1) v = __dsub_rn(25.0 / 46.0, __dmul_rn(21.0 / 46.0, cos(a)));
    else v = __dadd_rn(__dsub_rn(0.42, __dmul_rn(0.5, cos(a))), __dmul_rn(0.08, cos(2 * a)));
    y[i] = store_from_double<T>(v);
  }
}

template <typename E>
__global__ void reverse_sequence_kernel(const E* x, const int64_t* lens, E* y, bool batch0, int64_t d0, int64_t d1,
                                        int64_t block, int64_t n) {
  const int64_t steps = batch0 ? d1 : d0;
  GRAFT_GRID_STRIDE(i, n) {
    const int64_t e = i % block, pair = i / block;
    const int64_t r0 = pair / d1, r1 = pair % d1;
    const int64_t b = batch0 ? r0 : r1, t = batch0 ? r1 : r0;
    const int64_t len = lens[b];
    const int64_t src_t = len >= 0 && len <= steps && t < len ? len - 1 - t : t;
    const int64_t src = batch0 ? b * d1 + src_t : src_t * d1 + b;
    y[i] = x[src * block + e];
  }
}

}  // namespace

// ---- launchers ----------------------------------------------------------------------------------

static unsigned plane_grid(int64_t planes) {
  return static_cast<unsigned>(planes < 65535LL * 16 ? planes : 65535LL * 16);
}

cudaError_t launch_instance_norm(KType t, const void* x, const void* scale, const void* bias, void* y, int64_t planes,
                                 int64_t channels, int64_t spatial, double eps, cudaStream_t s) {
  if (planes == 0 || spatial == 0) return cudaSuccess;
  if (channels <= 0) return cudaErrorInvalidValue;
  GRAFT_FLOAT64_DISPATCH(t, (instance_norm_kernel<T><<<plane_grid(planes), kThreads, 0, s>>>(
                                   static_cast<const T*>(x), static_cast<const T*>(scale),
                                   static_cast<const T*>(bias), static_cast<T*>(y), planes, channels, spatial, eps)));
  return cudaGetLastError();
}

cudaError_t launch_mvn(KType t, const void* x, void* y, const Strided& kept, const Strided& reduced, int64_t groups,
                       int64_t count, cudaStream_t s) {
  if (groups == 0 || count == 0) return cudaSuccess;
  GRAFT_FLOAT64_DISPATCH(t, (mvn_kernel<T><<<plane_grid(groups), kThreads, 0, s>>>(
                                   static_cast<const T*>(x), static_cast<T*>(y), kept, reduced, groups, count)));
  return cudaGetLastError();
}

cudaError_t launch_lrn(KType t, const void* x, void* y, int64_t outer, int64_t channels, int64_t inner, int64_t before,
                       int64_t after, double alpha_over_size, double bias, double beta, cudaStream_t s) {
  const int64_t n = outer * channels * inner;
  if (n == 0) return cudaSuccess;
  GRAFT_FLOAT64_DISPATCH(t, (lrn_kernel<T><<<grid_for(n), kThreads, 0, s>>>(
                                   static_cast<const T*>(x), static_cast<T*>(y), channels, inner, n, before, after,
                                   alpha_over_size, bias, beta)));
  return cudaGetLastError();
}

cudaError_t launch_bit_shift(bool left, const uint8_t* x, const uint8_t* sh, const Bcast& p, uint8_t* y, int64_t n,
                             cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  bit_shift_kernel<<<grid_for(n), kThreads, 0, s>>>(left, x, sh, p, y, n);
  return cudaGetLastError();
}

cudaError_t launch_eye_like(int elem_size, uint64_t one_bits, int64_t rows, int64_t cols, int64_t k, void* y,
                            cudaStream_t s) {
  const int64_t n = rows * cols;
  if (n == 0) return cudaSuccess;
  GRAFT_SIZE_DISPATCH(elem_size, (eye_like_kernel<E><<<grid_for(n), kThreads, 0, s>>>(
                                          static_cast<E>(one_bits), cols, k, static_cast<E*>(y), n)));
  return cudaGetLastError();
}

cudaError_t launch_window(KType t, int kind, bool periodic, void* y, int64_t n, cudaStream_t s) {
  if (kind < 0 || kind > 2) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  GRAFT_MISC_NUMERIC_DISPATCH(t, (window_kernel<T><<<grid_for(n), kThreads, 0, s>>>(kind, periodic,
                                                                                     static_cast<T*>(y), n)));
  return cudaGetLastError();
}

cudaError_t launch_reverse_sequence(int elem_size, const void* x, const int64_t* lens, void* y, bool batch_axis_0,
                                    int64_t d0, int64_t d1, int64_t block, cudaStream_t s) {
  const int64_t n = d0 * d1 * block;
  if (n == 0) return cudaSuccess;
  GRAFT_SIZE_DISPATCH(elem_size, (reverse_sequence_kernel<E><<<grid_for(n), kThreads, 0, s>>>(
                                          static_cast<const E*>(x), lens, static_cast<E*>(y), batch_axis_0, d0, d1,
                                          block, n)));
  return cudaGetLastError();
}

namespace {

template <typename T>
__global__ void einsum_kernel(EinsumArgs a, T* y, int64_t n) {
  constexpr bool kInt = std::is_integral_v<T>;
  GRAFT_GRID_STRIDE(o, n) {
    int64_t idx[kEinsumMaxLabels];
    int64_t rem = o;
    for (int p = a.n_out - 1; p >= 0; --p) {
      idx[p] = rem % a.ext[p];
      rem /= a.ext[p];
    }
    for (int p = a.n_out; p < a.n_labels; ++p) idx[p] = 0;
    double acc = 0;
    uint64_t iacc = 0;
    for (int64_t t = 0; t < a.inner; ++t) {
      double prod = 1;
      uint64_t iprod = 1;
      for (int k = 0; k < a.n_in; ++k) {
        int64_t off = 0;
        for (int p = 0; p < a.n_labels; ++p) off += idx[p] * a.stride[k][p];
        const T v = static_cast<const T*>(a.in[k])[off];
        if constexpr (kInt) iprod *= static_cast<uint64_t>(static_cast<int64_t>(v));
        else prod *= as_double(v);
      }
      acc += prod;
      iacc += iprod;
      for (int p = a.n_labels - 1; p >= a.n_out; --p) {
        if (++idx[p] < a.ext[p]) break;
        idx[p] = 0;
      }
    }
    if constexpr (kInt) y[o] = static_cast<T>(static_cast<int64_t>(iacc));
    else y[o] = store_from_double<T>(acc);
  }
}

}  // namespace

cudaError_t launch_einsum(KType t, const EinsumArgs& a, void* y, int64_t n, cudaStream_t s) {
  if (a.n_in < 1 || a.n_in > kEinsumMaxInputs || a.n_labels > kEinsumMaxLabels || a.n_out > a.n_labels)
    return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  GRAFT_MISC_NUMERIC_DISPATCH(t, (einsum_kernel<T><<<grid_for(n), kThreads, 0, s>>>(a, static_cast<T*>(y), n)));
  return cudaGetLastError();
}

namespace {

template <typename T>
__global__ void det_kernel(const T* x, int64_t batches, int64_t m, double* scratch, T* y) {
  GRAFT_GRID_STRIDE(b, batches) {
    const int64_t mm = m * m;
    double* a = scratch + b * mm;
    for (int64_t i = 0; i < mm; ++i) a[i] = static_cast<double>(Elem<T>::ld(x[b * mm + i]));
    double d = 1.0;
    for (int64_t col = 0; col < m && d != 0.0; ++col) {
      int64_t piv = col;
      for (int64_t r = col + 1; r < m; ++r)
        if (fabs(a[r * m + col]) > fabs(a[piv * m + col])) piv = r;
      if (a[piv * m + col] == 0.0) {
        d = 0.0;
        break;
      }
      if (piv != col) {
        for (int64_t c = 0; c < m; ++c) {
          const double t = a[piv * m + c];
          a[piv * m + c] = a[col * m + c];
          a[col * m + c] = t;
        }
        d = -d;
      }
      d *= a[col * m + col];
      for (int64_t r = col + 1; r < m; ++r) {
        const double f = a[r * m + col] / a[col * m + col];
        for (int64_t c = col; c < m; ++c) a[r * m + c] -= f * a[col * m + c];
      }
    }
    y[b] = Elem<T>::st(static_cast<typename Elem<T>::C>(d));
  }
}

}  // namespace

cudaError_t launch_det(KType t, const void* x, int64_t batches, int64_t m, double* scratch, void* y, cudaStream_t s) {
  if (batches == 0) return cudaSuccess;
  GRAFT_FLOAT64_DISPATCH(t, (det_kernel<T><<<grid_for(batches), kThreads, 0, s>>>(static_cast<const T*>(x), batches, m,
                                                                                   scratch, static_cast<T*>(y))));
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA ops -------------------------------------------------------------------------------

namespace {

using namespace util;

constexpr std::initializer_list<DataType> kFloats = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16,
                                                     DataType::kFloat64};





// ---- Normalizations -------------------------------------------------------------------------------

bool float_x(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input 0 is missing");
  return require_dtype(n, 0, kFloats, why);
}

bool instance_norm_supports(const Node& n, std::string* why) {
  if (!float_x(n, why)) return false;
  for (size_t i = 1; i < 3; ++i) {
    if (!has_input(n, i)) return reject(why, "needs scale and B");
    if (in_dtype(n, i) != in_dtype(n, 0)) return reject(why, "scale and B must have the input's dtype");
  }
  return true;
}

Status same_shape_output(const CudaExec& ex, const Tensor& x, const Tensor& y) {
  if (y.numel() != x.numel() || y.dtype() != x.dtype())
    return fail(ex, StatusCode::kInternal, "output must have the input's size and dtype");
  return Status::ok();
}

Status instance_norm_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  const Tensor* scale = input_or_null(ex, 1);
  const Tensor* bias = input_or_null(ex, 2);
  if (!x || !scale || !bias) return fail(ex, StatusCode::kInvalidModel, "needs input, scale and B");
  Tensor& y = *ex.ctx->outputs[0];
  GRAFT_RETURN_IF_ERROR(same_shape_output(ex, *x, y));
  if (scale->dtype() != x->dtype() || bias->dtype() != x->dtype())
    return fail(ex, StatusCode::kInvalidModel, "scale and B must have the input's dtype");
  auto eps = graft::instance_norm_epsilon(attrs_of(ex));
  if (!eps) return with_node(ex, eps.status());
  if (x->rank() < 2)
    return fail(ex, StatusCode::kInvalidModel, "input must have rank >= 2 (N, C, ...), got ", dims_str(x->dims()));
  const int64_t c = x->dims()[1];
  if (scale->dims() != std::vector<int64_t>{c} || bias->dims() != std::vector<int64_t>{c})
    return fail(ex, StatusCode::kInvalidModel, "scale ", dims_str(scale->dims()), " and B ", dims_str(bias->dims()),
                " must be [", c, "] for input ", dims_str(x->dims()));
  const graft::AxisView v = graft::axis_view(x->dims(), 1, false);
  return launch_status(k::launch_instance_norm(ktype(x->dtype()), x->data(), scale->data(), bias->data(), y.data(),
                                               v.outer * v.n, c, v.inner, static_cast<double>(eps.value()),
                                               stream_of(ex)), ex);
}

bool mvn_supports(const Node& n, std::string* why) {
  if (!float_x(n, why)) return false;
  const Value* x = n.input(0);
  if (x->desc.shape && x->desc.shape->size() > static_cast<size_t>(k::kMaxRank))
    return reject(why, "input rank exceeds the CUDA kernel's " + std::to_string(k::kMaxRank));
  return true;
}

Status mvn_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  if (!x) return fail(ex, StatusCode::kInvalidModel, "input 0 is missing");
  Tensor& y = *ex.ctx->outputs[0];
  GRAFT_RETURN_IF_ERROR(same_shape_output(ex, *x, y));
  auto axes = graft::mvn_axes(attrs_of(ex), x->rank());
  if (!axes) return with_node(ex, axes.status());
  const int64_t rank = x->rank();
  if (rank > k::kMaxRank)
    return fail(ex, StatusCode::kUnsupported, "input rank ", rank, " exceeds the CUDA kernel's ", k::kMaxRank);
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : axes.value()) reduced[static_cast<size_t>(a)] = true;
  // Kept and reduced axes, each with its row-major stride in x: a group's elements are its base
  // offset plus every combination of the reduced axes.
  k::Strided kept, red;
  int64_t stride = 1, groups = 1, count = 1;
  std::vector<int64_t> strides(static_cast<size_t>(rank));
  for (int64_t d = rank - 1; d >= 0; --d) {
    strides[static_cast<size_t>(d)] = stride;
    stride *= x->dims()[static_cast<size_t>(d)];
  }
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t extent = x->dims()[static_cast<size_t>(d)];
    k::Strided& s = reduced[static_cast<size_t>(d)] ? red : kept;
    s.dims[s.rank] = extent;
    s.strides[s.rank] = strides[static_cast<size_t>(d)];
    ++s.rank;
    (reduced[static_cast<size_t>(d)] ? count : groups) *= extent;
  }
  return launch_status(k::launch_mvn(ktype(x->dtype()), x->data(), y.data(), kept, red, groups, count, stream_of(ex)),
                       ex);
}

Status lrn_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  if (!x) return fail(ex, StatusCode::kInvalidModel, "input 0 is missing");
  Tensor& y = *ex.ctx->outputs[0];
  GRAFT_RETURN_IF_ERROR(same_shape_output(ex, *x, y));
  auto a = graft::lrn_attrs(attrs_of(ex));
  if (!a) return with_node(ex, a.status());
  if (x->rank() < 2)
    return fail(ex, StatusCode::kInvalidModel, "input must have rank >= 2 (N, C, ...), got ", dims_str(x->dims()));
  const graft::AxisView v = graft::axis_view(x->dims(), 1, false);
  const int64_t size = a.value().size;
  // floor((size - 1) / 2) channels before, ceil after; `after` clamped to the channel count so
  // ch + after cannot overflow for a huge size.
  const int64_t before = (size - 1) / 2;
  const int64_t after = std::min(size - 1 - before, v.n);
  const double alpha_over_size = static_cast<double>(a.value().alpha) / static_cast<double>(size);
  return launch_status(k::launch_lrn(ktype(x->dtype()), x->data(), y.data(), v.outer, v.n, v.inner, before, after,
                                     alpha_over_size, static_cast<double>(a.value().bias),
                                     static_cast<double>(a.value().beta), stream_of(ex)), ex);
}

// ---- BitShift -----------------------------------------------------------------------------------

bool bit_shift_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "needs X and Y");
  // uint8 is the one integer type of BitShift graft has (its schema takes nothing else).
  return require_dtype(n, 0, {DataType::kUInt8}, why) && require_dtype(n, 1, {DataType::kUInt8}, why);
}

Status bit_shift_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  const Tensor* s = input_or_null(ex, 1);
  if (!x || !s) return fail(ex, StatusCode::kInvalidModel, "needs X and Y");
  Tensor& y = *ex.ctx->outputs[0];
  auto left = graft::bit_shift_left(attrs_of(ex));
  if (!left) return with_node(ex, left.status());
  if (x->dtype() != s->dtype() || y.dtype() != x->dtype())
    return fail(ex, StatusCode::kInvalidModel, "X and Y must share a dtype, got ", dtype_name(x->dtype()), " and ",
                dtype_name(s->dtype()));
  if (x->dtype() != DataType::kUInt8) return fail(ex, StatusCode::kUnsupported, "dtype ", dtype_name(x->dtype()));
  k::Bcast p;
  std::string why;
  if (!make_bcast(y.dims(), {x->dims(), s->dims()}, &p, &why)) return fail(ex, StatusCode::kInvalidModel, why);
  return launch_status(k::launch_bit_shift(left.value(), static_cast<const uint8_t*>(x->data()),
                                           static_cast<const uint8_t*>(s->data()), p, static_cast<uint8_t*>(y.data()),
                                           y.numel(), stream_of(ex)), ex);
}

// ---- EyeLike ------------------------------------------------------------------------------------

bool is_kernel_type(DataType t) {
  switch (t) {
    case DataType::kFloat32: case DataType::kFloat16: case DataType::kBFloat16: case DataType::kFloat64:
    case DataType::kInt8: case DataType::kUInt8: case DataType::kInt32: case DataType::kInt64: case DataType::kBool:
      return true;
    default: return false;
  }
}

bool eye_like_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input 0 is missing");
  if (!is_kernel_type(out_dtype(n, 0)))
    return reject(why, std::string("output dtype ") + dtype_name(out_dtype(n, 0)) + " is not handled");
  return true;
}

// Only x's shape is used: its values are never read.
Status eye_like_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  if (!x) return fail(ex, StatusCode::kInvalidModel, "input 0 is missing");
  Tensor& y = *ex.ctx->outputs[0];
  GRAFT_ASSIGN_OR_RETURN(int64_t kdiag, attrs_of(ex).get_int("k", 0));
  if (x->rank() != 2) return fail(ex, StatusCode::kInvalidModel, "input must be 2-D, got ", dims_str(x->dims()));
  if (y.dims() != x->dims()) return fail(ex, StatusCode::kInternal, "output shape differs from the input's");
  // The bytes of 1 in y's dtype, made by the same store the CPU reference uses.
  uint64_t one = 0;
  store_from_double(y.dtype(), &one, 0, 1.0);
  return launch_status(k::launch_eye_like(static_cast<int>(dtype_size(y.dtype())), one, x->dims()[0], x->dims()[1],
                                          kdiag, y.data(), stream_of(ex)), ex);
}

// ---- Windows ------------------------------------------------------------------------------------

bool window_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input size is missing");
  if (!require_dtype(n, 0, {DataType::kInt32, DataType::kInt64}, why)) return false;
  const DataType t = out_dtype(n, 0);
  if (t == DataType::kBool || !is_kernel_type(t))
    return reject(why, std::string("output dtype ") + dtype_name(t) + " is not handled");
  return true;
}

// The size is a host input: the output's length is that value, which the engine needs on the host
// anyway to shape the output; the samples are computed on the device.
template <int kKind>
Status window_run(CudaExec& ex) {
  const Tensor* size = input_or_null(ex, 0);
  Tensor& y = *ex.ctx->outputs[0];
  if (!size || size->numel() != 1 || !dtype_is_integer(size->dtype()))
    return fail(ex, StatusCode::kInvalidModel, "input size must be one integer, got ",
                size ? dtype_name(size->dtype()) : "nothing", " ", size ? dims_str(size->dims()) : "");
  if (size->device() != DeviceType::kCPU) return fail(ex, StatusCode::kInternal, "size must be a host input");
  const int64_t n = size->to_int64_vector()[0];
  if (n < 0 || n > graft::kMaxWindowLength)
    return fail(ex, StatusCode::kInvalidModel, "size ", n, " is outside [0, ", graft::kMaxWindowLength, "]");
  if (y.numel() != n) return fail(ex, StatusCode::kInternal, "output has ", y.numel(), " elements, size is ", n);
  GRAFT_ASSIGN_OR_RETURN(int64_t periodic, attrs_of(ex).get_int("periodic", 1));
  return launch_status(k::launch_window(ktype(y.dtype()), kKind, periodic != 0, y.data(), n, stream_of(ex)), ex);
}

// ---- Det ----------------------------------------------------------------------------------------

bool det_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "needs X");
  return require_dtype(n, 0, {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64}, why);
}

// Each matrix is eliminated in a double copy of its own in the workspace.
size_t det_workspace(const Node&, const std::vector<const Tensor*>& inputs, const std::vector<Tensor>& /*outputs*/) {
  if (inputs.empty() || !inputs[0] || inputs[0]->rank() < 2) return 0;
  return static_cast<size_t>(inputs[0]->numel()) * sizeof(double);
}

Status det_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  if (!x) return fail(ex, StatusCode::kInvalidModel, "needs X");
  Tensor& y = *ex.ctx->outputs[0];
  if (x->rank() < 2 || x->dims()[x->rank() - 1] != x->dims()[x->rank() - 2])
    return fail(ex, StatusCode::kInvalidModel, "input must be [..., M, M], got ", dims_str(x->dims()));
  const int64_t m = x->dims()[x->rank() - 1];
  // An empty matrix (m = 0) has determinant 1: the kernel's elimination then does nothing.
  const int64_t batches = m == 0 ? y.numel() : x->numel() / (m * m);
  if (y.numel() != batches || y.dtype() != x->dtype())
    return fail(ex, StatusCode::kInternal, "output must hold one determinant per matrix, in the input's dtype");
  if (ex.workspace_size < static_cast<size_t>(x->numel()) * sizeof(double))
    return fail(ex, StatusCode::kInternal, "Det workspace missing");
  return launch_status(k::launch_det(ktype(x->dtype()), x->data(), batches, m, static_cast<double*>(ex.workspace),
                                     y.data(), stream_of(ex)), ex);
}

// ---- ReverseSequence ----------------------------------------------------------------------------

bool reverse_sequence_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "needs input and sequence_lens");
  if (!is_kernel_type(in_dtype(n, 0)))
    return reject(why, std::string("input dtype ") + dtype_name(in_dtype(n, 0)) + " is not handled");
  return require_dtype(n, 1, {DataType::kInt64}, why);
}

// sequence_lens stays on the device (the kernel reads it), so a length out of range cannot fail
// the run as on the CPU: see launch_reverse_sequence.
Status reverse_sequence_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  const Tensor* lens = input_or_null(ex, 1);
  if (!x || !lens) return fail(ex, StatusCode::kInvalidModel, "needs input and sequence_lens");
  Tensor& y = *ex.ctx->outputs[0];
  auto axes = graft::reverse_sequence_axes(attrs_of(ex));
  if (!axes) return with_node(ex, axes.status());
  if (x->rank() < 2) return fail(ex, StatusCode::kInvalidModel, "input must have rank >= 2, got ", dims_str(x->dims()));
  if (y.dims() != x->dims() || y.dtype() != x->dtype())
    return fail(ex, StatusCode::kInternal, "output must have the input's shape and dtype");
  const bool batch0 = axes.value().first == 0;
  const int64_t batch = x->dims()[batch0 ? 0 : 1];
  if (lens->dtype() != DataType::kInt64 || lens->dims() != std::vector<int64_t>{batch})
    return fail(ex, StatusCode::kInvalidModel, "sequence_lens must be int64 [", batch, "], got ",
                dtype_name(lens->dtype()), " ", dims_str(lens->dims()));
  int64_t block = 1;
  for (int64_t d = 2; d < x->rank(); ++d) block *= x->dims()[static_cast<size_t>(d)];
  return launch_status(k::launch_reverse_sequence(static_cast<int>(dtype_size(x->dtype())), x->data(),
                                                  static_cast<const int64_t*>(lens->data()), y.data(), batch0,
                                                  x->dims()[0], x->dims()[1], block, stream_of(ex)), ex);
}

// ---- Einsum ---------------------------------------------------------------------------------------
// A direct kernel (one thread per output element), so no Einsum leaves the GPU; a contraction big
// enough for its speed to matter wants a MatMul lowering instead (not done yet).

Result<EinsumSpec> einsum_spec_of(const AttributeMap& attrs, const std::vector<int64_t>& ranks) {
  GRAFT_ASSIGN_OR_RETURN(std::string eq, attrs.get_string("equation", ""));
  auto spec = parse_einsum(eq, ranks);
  if (!spec) return Status(spec.status()).with_attribute("equation");
  return spec;
}

bool einsum_supports(const Node& n, std::string* why) {
  if (n.inputs.empty() || n.inputs.size() > static_cast<size_t>(k::kEinsumMaxInputs))
    return reject(why, "the CUDA kernel takes 1 to " + std::to_string(k::kEinsumMaxInputs) + " operands");
  std::vector<int64_t> ranks;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (!has_input(n, i)) return reject(why, "input " + std::to_string(i) + " is missing");
    if (!is_kernel_type(in_dtype(n, i)) || in_dtype(n, i) == DataType::kBool)
      return reject(why, std::string("dtype ") + dtype_name(in_dtype(n, i)) + " is not handled");
    if (in_dtype(n, i) != in_dtype(n, 0)) return reject(why, "inputs have different dtypes");
    if (n.input(i)->desc.rank() < 0) return reject(why, "an input's rank is unknown at build time");
    ranks.push_back(n.input(i)->desc.rank());
  }
  auto spec = einsum_spec_of(n.attrs, ranks);
  if (!spec) return reject(why, spec.status().message());
  if (spec->num_labels > k::kEinsumMaxLabels)
    return reject(why, "the equation has " + std::to_string(spec->num_labels) + " labels, the kernel at most " +
                           std::to_string(k::kEinsumMaxLabels));
  return true;
}

Status einsum_run(CudaExec& ex) {
  const auto& in = ex.ctx->inputs;
  std::vector<int64_t> ranks;
  std::vector<std::vector<int64_t>> dims;
  for (const Tensor* t : in) {
    if (!t) return fail(ex, StatusCode::kInvalidModel, "Einsum inputs are all required");
    ranks.push_back(t->rank());
    dims.push_back(t->dims());
  }
  auto spec = einsum_spec_of(attrs_of(ex), ranks);
  if (!spec) return with_node(ex, spec.status());
  auto lay = einsum_layout(*spec, dims);
  if (!lay) return with_node(ex, lay.status());
  Tensor& y = *ex.ctx->outputs[0];
  if (y.dims() != std::vector<int64_t>(lay->ext.begin(), lay->ext.begin() + static_cast<int64_t>(lay->n_out)))
    return fail(ex, StatusCode::kInternal, "output dims do not match the equation");
  if (in.size() > static_cast<size_t>(k::kEinsumMaxInputs) || lay->order.size() > static_cast<size_t>(k::kEinsumMaxLabels))
    return fail(ex, StatusCode::kUnsupported, "more operands or labels than the CUDA kernel takes");
  k::EinsumArgs a;
  a.n_in = static_cast<int>(in.size());
  a.n_labels = static_cast<int>(lay->order.size());
  a.n_out = static_cast<int>(lay->n_out);
  a.inner = lay->inner;
  for (size_t p = 0; p < lay->order.size(); ++p) a.ext[p] = lay->ext[p];
  for (size_t k = 0; k < in.size(); ++k) {
    a.in[k] = in[k]->data();
    for (size_t p = 0; p < lay->order.size(); ++p) a.stride[k][p] = lay->stride[k][p];
  }
  return launch_status(k::launch_einsum(ktype(y.dtype()), a, y.data(), y.numel(), stream_of(ex)), ex);
}

}  // namespace

void append_cuda_misc_ops(std::vector<CudaOp>& out) {
  out.push_back(CudaOp{"InstanceNormalization", &instance_norm_supports, &instance_norm_run, {}, nullptr});
  out.push_back(CudaOp{"MeanVarianceNormalization", &mvn_supports, &mvn_run, {}, nullptr});
  out.push_back(CudaOp{"LRN", &float_x, &lrn_run, {}, nullptr});
  out.push_back(CudaOp{"BitShift", &bit_shift_supports, &bit_shift_run, {}, nullptr});
  out.push_back(CudaOp{"EyeLike", &eye_like_supports, &eye_like_run, {}, nullptr});
  out.push_back(CudaOp{"HannWindow", &window_supports, &window_run<0>, {0}, nullptr});
  out.push_back(CudaOp{"HammingWindow", &window_supports, &window_run<1>, {0}, nullptr});
  out.push_back(CudaOp{"BlackmanWindow", &window_supports, &window_run<2>, {0}, nullptr});
  out.push_back(CudaOp{"ReverseSequence", &reverse_sequence_supports, &reverse_sequence_run, {}, nullptr});
  out.push_back(CudaOp{"Einsum", &einsum_supports, &einsum_run, {}, nullptr});
  out.push_back(CudaOp{"Det", &det_supports, &det_run, {}, &det_workspace});
}

}  // namespace graft::cuda
