#include <cstdint>
#include <type_traits>

#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/spectral_kernels.cuh"

namespace graft::cuda::k {
namespace {

template <typename T>
__device__ __forceinline__ double to_d(T v) {
  if constexpr (std::is_same_v<T, __half>)
    return static_cast<double>(__half2float(v));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return static_cast<double>(__bfloat162float(v));
  else
    return static_cast<double>(v);
}

// graft's store_from_double on the host: half types round through float, integers (MelWeightMatrix's
// integer output types) truncate toward zero.
template <typename T>
__device__ __forceinline__ T from_d(double v) {
  if constexpr (std::is_same_v<T, double>)
    return v;
  else if constexpr (std::is_same_v<T, float>)
    return __double2float_rn(v);
  else if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(__double2float_rn(v));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __float2bfloat16_rn(__double2float_rn(v));
  else
    return static_cast<T>(static_cast<int64_t>(v));
}

template <typename T>
__global__ void spectral_kernel(SpectralArgs a, const T* x, const T* w, T* y, int64_t count) {
  constexpr double kPi = 3.14159265358979323846;
  const double sign = a.inverse ? 1.0 : -1.0;
  const double scale = a.inverse ? 1.0 / static_cast<double>(a.n) : 1.0;
  GRAFT_GRID_STRIDE(o, count) {
    // o = ((b * frames + f) * bins + k) * inner + i
    int64_t r = o;
    const int64_t i = r % a.inner;
    r /= a.inner;
    const int64_t k = r % a.bins;
    r /= a.bins;
    const int64_t f = r % a.frames;
    const int64_t b = r / a.frames;
    const int64_t base = b * a.batch_stride + f * a.frame_stride + i * a.inner_stride;
    double re = 0, im = 0;
    int64_t j = 0;  // k * m mod n, as the CPU reference advances it
    for (int64_t m = 0; m < a.terms; ++m) {
      const int64_t off = base + m * a.term_stride;
      double xr = to_d(x[off]);
      double xi = a.complex_input ? to_d(x[off + 1]) : 0.0;
      if (w) {
        const double wm = to_d(w[m]);
        xr *= wm;
        xi *= wm;
      }
      double s, c;
      sincos(2 * kPi * static_cast<double>(j) / static_cast<double>(a.n), &s, &c);
      s *= sign;
      re += xr * c - xi * s;
      im += xr * s + xi * c;
      j += k;
      if (j >= a.n) j -= a.n;
    }
    y[2 * o] = from_d<T>(re * scale);
    y[2 * o + 1] = from_d<T>(im * scale);
  }
}

}  // namespace

cudaError_t launch_spectral(KType t, const SpectralArgs& a, const void* x, const void* window, void* y,
                            cudaStream_t s) {
  if (a.batch < 0 || a.frames < 0 || a.bins < 0 || a.inner < 0 || a.terms < 0 || a.n < 1 || a.bins > a.n)
    return cudaErrorInvalidValue;
  const int64_t count = a.batch * a.frames * a.bins * a.inner;
  if (count == 0) return cudaSuccess;
  switch (t) {
#define GRAFT_SPECTRAL_CASE(KT, T)                                                              \
  case KType::KT:                                                                               \
    spectral_kernel<T><<<grid_for(count), kThreads, 0, s>>>(                                    \
        a, static_cast<const T*>(x), static_cast<const T*>(window), static_cast<T*>(y), count); \
    break;
    GRAFT_SPECTRAL_CASE(kF32, float)
    GRAFT_SPECTRAL_CASE(kF64, double)
    GRAFT_SPECTRAL_CASE(kF16, __half)
    GRAFT_SPECTRAL_CASE(kBF16, __nv_bfloat16)
#undef GRAFT_SPECTRAL_CASE
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace graft::cuda::k

// ---- MelWeightMatrix ------------------------------------------------------------------------------

namespace graft::cuda::k {
namespace {

// The CPU reference's edge, operation for operation: the _rn intrinsics keep nvcc from fusing a
// multiply and an add into one rounding, which the host never does.
__device__ __forceinline__ int64_t mel_edge(const MelArgs& a, int64_t k) {
  if (a.host_edges) return a.edges[k];
  const double mel = __dadd_rn(a.low_mel, __dmul_rn(a.step, static_cast<double>(k)));
  const double hz = __dmul_rn(700.0, __dsub_rn(pow(10.0, __ddiv_rn(mel, 2595.0)), 1.0));
  const double at = floor(__ddiv_rn(__dmul_rn(static_cast<double>(a.dft_length + 1), hz),
                                    static_cast<double>(a.sample_rate)));
  return static_cast<int64_t>(at);
}

// Weight (j, i) as the reference's writes leave it: the rising side over [left, centre], then the
// falling side over [centre, right) written over it, so the centre always holds 1.
template <typename O>
__global__ void mel_kernel(MelArgs a, O* y, int64_t count) {
  GRAFT_GRID_STRIDE(o, count) {
    const int64_t j = o / a.mels, i = o % a.mels;
    const int64_t left = mel_edge(a, i), centre = mel_edge(a, i + 1), right = mel_edge(a, i + 2);
    double w = 0.0;
    if (j == centre)
      w = 1.0;
    else if (j >= left && j < centre)
      w = static_cast<double>(j - left) / static_cast<double>(centre - left);
    else if (j > centre && j < right)
      w = static_cast<double>(right - j) / static_cast<double>(right - centre);
    y[o] = from_d<O>(w);
  }
}

}  // namespace

cudaError_t launch_mel_weight_matrix(KType t, const MelArgs& a, void* y, cudaStream_t s) {
  if (a.bins < 0 || a.mels < 0 || a.dft_length < 1 || a.sample_rate < 1 ||
      (a.host_edges != 0 && (a.host_edges != a.mels + 2 || a.host_edges > kMelParamEdges)))
    return cudaErrorInvalidValue;
  const int64_t count = a.bins * a.mels;
  if (count == 0) return cudaSuccess;
  switch (t) {
#define GRAFT_MEL_CASE(KT, O)                                                          \
  case KType::KT:                                                                      \
    mel_kernel<O><<<grid_for(count), kThreads, 0, s>>>(a, static_cast<O*>(y), count); \
    break;
    GRAFT_MEL_CASE(kF32, float)
    GRAFT_MEL_CASE(kF64, double)
    GRAFT_MEL_CASE(kF16, __half)
    GRAFT_MEL_CASE(kBF16, __nv_bfloat16)
    GRAFT_MEL_CASE(kI8, int8_t)
    GRAFT_MEL_CASE(kU8, uint8_t)
    GRAFT_MEL_CASE(kI32, int32_t)
    GRAFT_MEL_CASE(kI64, int64_t)
#undef GRAFT_MEL_CASE
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace graft::cuda::k
