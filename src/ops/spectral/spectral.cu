// DFT's and STFT's CUDA kernel and ops (definition and CPU references: spectral.cpp), so a CUDA
// engine keeps them on the GPU (MelWeightMatrix: mel_weight_matrix.cu). The layout and every check come from
// the CPU reference's own readers (spectral.h: dft_attrs, dft_layout, stft_layout, the mel checks),
// so errors read the same on both backends; the lengths and the axis are host inputs (they decide
// the output's shape, which the engine needs on the host anyway), the samples and the window stay on
// the device.
#include "ops/spectral/spectral.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/attr_util.h"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------

namespace k {

// The DFT/STFT launcher: plain device pointers, no framework types; returns the launch's cudaError_t
// (cudaErrorInvalidValue for a type or layout the launcher does not handle).
//
// The sum is the CPU reference's (spectral.h, SpectralLayout) term for term:
// samples loaded as double, twiddle angle 2*pi*(k*m mod n)/n, accumulation in double, one rounding
// into the output type.

// Mirrors graft::SpectralLayout: y is [batch, frames, bins, inner, 2] and
//   y[a, f, k, i] = scale * sum_{m < terms} w[m] * x(a, f, i, m) * exp(sign * 2*pi*j * (k*m mod n) / n),
// x(a, f, i, m) at scalar offset a*batch_stride + f*frame_stride + i*inner_stride + m*term_stride
// (imaginary part next to it when complex_input); sign -1 and scale 1, or +1 and 1/n (inverse).
struct SpectralArgs {
  int64_t batch = 1, frames = 1, bins = 1, inner = 1;
  int64_t batch_stride = 0, frame_stride = 0, inner_stride = 0, term_stride = 0;
  int64_t terms = 0, n = 1;
  bool complex_input = false, inverse = false;
  // irfft (SpectralLayout::real_output): y is [batch, n, inner], one real value per output sample.
  bool real_output = false;
};

// One thread per output bin. x, window (nullptr: none) and y all have the float type t
// (f32, f16, bf16, f64).
cudaError_t launch_spectral(KType t, const SpectralArgs& a, const void* x, const void* window, void* y,
                            cudaStream_t s);

namespace {

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
      double xr = as_double(x[off]);
      double xi = a.complex_input ? as_double(x[off + 1]) : 0.0;
      if (w) {
        const double wm = as_double(w[m]);
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
    y[2 * o] = store_from_double<T>(re * scale);
    y[2 * o + 1] = store_from_double<T>(im * scale);
  }
}

// irfft, one thread per output sample: the CPU reference's sum over the one-sided bins, each weighted
// 2 except bin 0 and bin n/2 (n even), whose imaginary parts drop out with the real part taken.
template <typename T>
__global__ void irfft_kernel(SpectralArgs a, const T* x, T* y, int64_t count) {
  constexpr double kPi = 3.14159265358979323846;
  GRAFT_GRID_STRIDE(o, count) {
    // o = (b * n + t) * inner + i (bins == n)
    int64_t r = o;
    const int64_t i = r % a.inner;
    r /= a.inner;
    const int64_t t = r % a.bins;
    const int64_t b = r / a.bins;
    const int64_t base = b * a.batch_stride + i * a.inner_stride;
    double sum = 0;
    int64_t j = 0;  // k * t mod n
    for (int64_t k = 0; k < a.terms; ++k) {
      const int64_t off = base + k * a.term_stride;
      const double xr = as_double(x[off]);
      const double xi = a.complex_input ? as_double(x[off + 1]) : 0.0;
      const double weight = k == 0 || 2 * k == a.n ? 1.0 : 2.0;
      double s, c;
      sincos(2 * kPi * static_cast<double>(j) / static_cast<double>(a.n), &s, &c);
      sum += weight * (xr * c - xi * s);
      j += t;
      if (j >= a.n) j -= a.n;
    }
    y[o] = store_from_double<T>(sum / static_cast<double>(a.n));
  }
}

}  // namespace

cudaError_t launch_spectral(KType t, const SpectralArgs& a, const void* x, const void* window, void* y,
                            cudaStream_t s) {
  if (a.batch < 0 || a.frames < 0 || a.bins < 0 || a.inner < 0 || a.terms < 0 || a.n < 1 || a.bins > a.n)
    return cudaErrorInvalidValue;
  if (a.real_output && (window || a.frames != 1 || !a.inverse)) return cudaErrorInvalidValue;
  const int64_t count = a.batch * a.frames * a.bins * a.inner;
  if (count == 0) return cudaSuccess;
  switch (t) {
#define GRAFT_SPECTRAL_CASE(KT, T)                                                                  \
  case KType::KT:                                                                                   \
    if (a.real_output)                                                                              \
      irfft_kernel<T><<<grid_for(count), kThreads, 0, s>>>(a, static_cast<const T*>(x),             \
                                                           static_cast<T*>(y), count);              \
    else                                                                                            \
      spectral_kernel<T><<<grid_for(count), kThreads, 0, s>>>(                                      \
          a, static_cast<const T*>(x), static_cast<const T*>(window), static_cast<T*>(y), count);   \
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

}  // namespace k

// ---- CUDA ops -------------------------------------------------------------------------------

namespace {

using namespace util;




int opset_of(const CudaExec& ex) {
  if (ex.ctx->opset > 0) return ex.ctx->opset;
  return ex.ctx->node ? ex.ctx->node->opset : 0;
}

// Input 0 is given, and output 0 has its float dtype (the rows' key: float32/float16/bfloat16/float64).
bool float_io(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input 0 is missing");
  if (out_dtype(n, 0) != in_dtype(n, 0)) return reject(why, "output dtype differs from the input's");
  return true;
}

k::SpectralArgs args_of(const graft::SpectralLayout& l) {
  k::SpectralArgs a;
  a.batch = l.batch;
  a.frames = l.frames;
  a.bins = l.bins;
  a.inner = l.inner;
  a.batch_stride = l.batch_stride;
  a.frame_stride = l.frame_stride;
  a.inner_stride = l.inner_stride;
  a.term_stride = l.term_stride;
  a.terms = l.terms;
  a.n = l.n;
  a.complex_input = l.complex_input;
  a.inverse = l.inverse;
  a.real_output = l.real_output;
  return a;
}

Status launch(CudaExec& ex, const graft::SpectralLayout& l, const Tensor& x, const Tensor* window) {
  Tensor& y = *ex.ctx->outputs[0];
  if (y.numel() != l.out_numel() || y.dtype() != x.dtype())
    return fail(ex, StatusCode::kInternal, "output has ", dtype_name(y.dtype()), " ",
                graft::ints_to_string(y.dims()), ", the transform makes ", l.out_numel(), " values of ",
                dtype_name(x.dtype()));
  if (x.device() != DeviceType::kCUDA || (window && window->device() != DeviceType::kCUDA))
    return fail(ex, StatusCode::kInternal, "the signal and the window must be device tensors");
  return launch_status(k::launch_spectral(ktype(x.dtype()), args_of(l), x.data(),
                                          window ? window->data() : nullptr, y.data(), stream_of(ex)),
                       ex);
}

// ---- DFT --------------------------------------------------------------------------------------------

// The keys: dft_length (if given) int32/int64, axis (if given) int64.
bool dft_supports(const Node& n, std::string* why) { return float_io(n, why); }

Status dft_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  if (!x) return fail(ex, StatusCode::kInvalidModel, "input is missing");
  auto a = graft::dft_attrs(attrs_of(ex), opset_of(ex));
  if (!a) return with_node(ex, a.status());
  std::optional<int64_t> n;
  if (const Tensor* t = input_or_null(ex, 1)) {
    auto v = graft::integer_scalar(*t, "dft_length");
    if (!v) return with_node(ex, v.status());
    n = v.value();
  }
  if (const Tensor* t = input_or_null(ex, 2)) {
    if (opset_of(ex) < 20)
      return fail(ex, StatusCode::kInvalidModel, "takes the axis as input 2 only from opset 20 on");
    auto v = graft::integer_scalar(*t, "axis");
    if (!v) return with_node(ex, v.status());
    a.value().axis = v.value();
  }
  auto l = graft::dft_layout(x->dims(), a.value().axis, n, a.value());
  if (!l) return with_node(ex, l.status());
  return launch(ex, l.value(), *x, nullptr);
}

// ---- STFT -------------------------------------------------------------------------------------------

// The keys: frame_step and frame_length (if given) int32/int64; the window has the signal's dtype.
bool stft_supports(const Node& n, std::string* why) {
  if (!float_io(n, why)) return false;
  if (!has_input(n, 1)) return reject(why, "frame_step is missing");
  if (has_input(n, 2) && in_dtype(n, 2) != in_dtype(n, 0))
    return reject(why, "window dtype differs from the signal's");
  return true;
}

Status stft_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  const Tensor* step = input_or_null(ex, 1);
  if (!x || !step) return fail(ex, StatusCode::kInvalidModel, "needs signal and frame_step");
  auto onesided = graft::stft_onesided(attrs_of(ex));
  if (!onesided) return with_node(ex, onesided.status());
  auto s = graft::integer_scalar(*step, "frame_step");
  if (!s) return with_node(ex, s.status());
  const Tensor* window = input_or_null(ex, 2);
  std::optional<int64_t> wlen, flen;
  if (window) {
    if (window->dtype() != x->dtype() || window->rank() != 1)
      return fail(ex, StatusCode::kInvalidModel, "window must be 1-D of the signal's dtype ",
                  dtype_name(x->dtype()), ", got ", dtype_name(window->dtype()), " ",
                  graft::ints_to_string(window->dims()));
    wlen = window->dims()[0];
  }
  if (const Tensor* t = input_or_null(ex, 3)) {
    auto v = graft::integer_scalar(*t, "frame_length");
    if (!v) return with_node(ex, v.status());
    flen = v.value();
  }
  auto l = graft::stft_layout(x->dims(), s.value(), wlen, flen, onesided.value());
  if (!l) return with_node(ex, l.status());
  return launch(ex, l.value(), *x, window);
}

}  // namespace

void append_cuda_spectral_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats64), input_dtypes(1, kGpuInts),
                               input_dtypes(2, {DataType::kInt64})},
                              CudaOp{"DFT", &dft_supports, &dft_run, {1, 2}, nullptr}));
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats64), input_dtypes(1, kGpuInts), input_dtypes(3, kGpuInts)},
                              CudaOp{"STFT", &stft_supports, &stft_run, {1, 3}, nullptr}));
}

}  // namespace graft::cuda
