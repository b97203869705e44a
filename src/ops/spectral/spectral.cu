// The spectral family's CUDA kernels and CUDA ops (definition and CPU references: spectral.cpp), so
// a CUDA engine keeps DFT, STFT and MelWeightMatrix on the GPU. The layout and every check come from
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
};

// One thread per output bin. x, window (nullptr: none) and y all have the float type t
// (f32, f16, bf16, f64).
cudaError_t launch_spectral(KType t, const SpectralArgs& a, const void* x, const void* window, void* y,
                            cudaStream_t s);

// ---- MelWeightMatrix ------------------------------------------------------------------------------

// Up to this many band edges travel in the launch's parameters, computed on the host with the CPU
// reference's own arithmetic (so a floor() that lands on an integer cannot differ by an ulp of pow);
// more are computed per thread on the device with the same operations in the same order.
constexpr int kMelParamEdges = 500;

// y is [bins, mels]; band i rises from edge i to edge i + 1 and falls to edge i + 2. Edge k is
// floor((dft_length + 1) * hz(low_mel + step * k) / sample_rate), hz(m) = 700 * (10^(m / 2595) - 1).
struct MelArgs {
  int64_t bins = 0, mels = 0;
  int64_t dft_length = 1, sample_rate = 1;
  double low_mel = 0, step = 0;
  int host_edges = 0;  // mels + 2 when `edges` holds every edge, else 0
  int32_t edges[kMelParamEdges] = {};
};

// One thread per weight; `t` is the output type (f32, f16, bf16, f64, i8, u8, i32, i64). Each
// weight is computed in double and rounded once (integers truncate), as the CPU reference does.
cudaError_t launch_mel_weight_matrix(KType t, const MelArgs& a, void* y, cudaStream_t s);

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

// ---- MelWeightMatrix: the kernel ------------------------------------------------------------------

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
    y[o] = store_from_double<O>(w);
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

}  // namespace k

// ---- CUDA ops -------------------------------------------------------------------------------

namespace {

using namespace util;

constexpr std::initializer_list<DataType> kFloats = {DataType::kFloat32, DataType::kFloat16,
                                                     DataType::kBFloat16, DataType::kFloat64};
constexpr std::initializer_list<DataType> kInts = {DataType::kInt32, DataType::kInt64};



int opset_of(const CudaExec& ex) {
  if (ex.ctx->opset > 0) return ex.ctx->opset;
  return ex.ctx->node ? ex.ctx->node->opset : 0;
}

// Output 0 has input 0's float dtype.
bool float_io(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input 0 is missing");
  if (!require_dtype(n, 0, kFloats, why)) return false;
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

bool dft_supports(const Node& n, std::string* why) {
  if (!float_io(n, why)) return false;
  if (has_input(n, 1) && !require_dtype(n, 1, kInts, why)) return false;
  if (has_input(n, 2) && !require_dtype(n, 2, {DataType::kInt64}, why)) return false;
  return true;
}

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

bool stft_supports(const Node& n, std::string* why) {
  if (!float_io(n, why)) return false;
  if (!has_input(n, 1)) return reject(why, "frame_step is missing");
  if (!require_dtype(n, 1, kInts, why)) return false;
  if (has_input(n, 2) && in_dtype(n, 2) != in_dtype(n, 0))
    return reject(why, "window dtype differs from the signal's");
  if (has_input(n, 3) && !require_dtype(n, 3, kInts, why)) return false;
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

// ---- MelWeightMatrix ---------------------------------------------------------------------------------
//
// The five inputs are scalars read on the host (they also decide the output's shape); the band
// edges' validity is checked there with the CPU reference's words, and a kernel writes every weight.

constexpr std::initializer_list<DataType> kMelOutputs = {
    DataType::kFloat32, DataType::kFloat16, DataType::kFloat64, DataType::kBFloat16,
    DataType::kInt8,    DataType::kUInt8,   DataType::kInt32,   DataType::kInt64};

bool mel_supports(const Node& n, std::string* why) {
  for (size_t i = 0; i < 5; ++i)
    if (!has_input(n, i)) return reject(why, "input " + std::to_string(i) + " is missing");
  for (size_t i = 0; i < 3; ++i)
    if (!require_dtype(n, i, kInts, why)) return false;
  for (size_t i = 3; i < 5; ++i)
    if (!require_dtype(n, i, kFloats, why)) return false;
  auto odt = mel_output_dtype(n.attrs);
  if (!odt) return reject(why, odt.status().message());
  bool handled = false;
  for (DataType t : kMelOutputs) handled = handled || t == odt.value();
  if (!handled)
    return reject(why, std::string("output_datatype ") + dtype_name(odt.value()) + " has no CUDA kernel");
  if (out_dtype(n, 0) != odt.value()) return reject(why, "output dtype differs from output_datatype");
  return true;
}

// The CPU reference's float_scalar: one floating value (a scalar or [1]) on the host.
Result<double> mel_float_scalar(const Tensor& t, const char* what) {
  if (t.numel() != 1 || t.rank() > 1 || !dtype_is_float(t.dtype()))
    return error(StatusCode::kInvalidModel, "input ", what, " must be one floating value, got ", dtype_name(t.dtype()),
                 " ", graft::ints_to_string(t.dims()));
  if (t.device() != DeviceType::kCPU) return error(StatusCode::kInternal, "input ", what, " must be a host tensor");
  return t.get(0);
}

// Edge k of the bands as the CPU reference computes it (the same expressions, on the same host).
struct MelEdges {
  int64_t dft_length = 1, rate = 1;
  double low_mel = 0, step = 0;
  double at(int64_t k) const {
    const double hz = 700.0 * (std::pow(10.0, (low_mel + step * static_cast<double>(k)) / 2595.0) - 1.0);
    return std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(rate));
  }
};

Status mel_run(CudaExec& ex) {
  static const char* const kNames[5] = {"num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz",
                                        "upper_edge_hertz"};
  for (size_t i = 0; i < 5; ++i)
    if (!input_or_null(ex, i))
      return fail(ex, StatusCode::kInvalidModel, "required input ", kNames[i], " is missing");
  int64_t ints[3] = {};
  for (size_t i = 0; i < 3; ++i) {
    auto v = graft::integer_scalar(*ex.ctx->inputs[i], kNames[i]);
    if (!v) return with_node(ex, v.status());
    ints[i] = v.value();
  }
  const int64_t mels = ints[0], dft_length = ints[1], rate = ints[2];
  auto lo = mel_float_scalar(*ex.ctx->inputs[3], kNames[3]);
  if (!lo) return with_node(ex, lo.status());
  auto hi = mel_float_scalar(*ex.ctx->inputs[4], kNames[4]);
  if (!hi) return with_node(ex, hi.status());
  const double lower = lo.value(), upper = hi.value();
  GRAFT_RETURN_IF_ERROR(with_node(ex, check_mel_sizes(mels, dft_length, rate)));
  if (!(lower >= 0.0) || !std::isfinite(lower))
    return with_node(ex, error(StatusCode::kInvalidModel, "input lower_edge_hertz must be finite and >= 0, got ",
                               lower));
  if (!(upper >= lower) || !std::isfinite(upper))
    return with_node(ex, error(StatusCode::kInvalidModel,
                               "input upper_edge_hertz must be finite and >= lower_edge_hertz (", lower, "), got ",
                               upper));
  const int64_t bins = dft_length / 2 + 1;
  if (ex.ctx->outputs.empty() || !ex.ctx->outputs[0])
    return fail(ex, StatusCode::kInternal, "called without its output");
  Tensor& y = *ex.ctx->outputs[0];
  if (y.dims() != std::vector<int64_t>{bins, mels})
    return fail(ex, StatusCode::kInternal, "output ", graft::ints_to_string(y.dims()), " is not [", bins, ", ", mels,
                "]");
  if (y.device() != DeviceType::kCUDA) return fail(ex, StatusCode::kInternal, "output must be a device tensor");
  MelEdges e;
  e.dft_length = dft_length;
  e.rate = rate;
  const double low_mel = 2595.0 * std::log10(1.0 + lower / 700.0);
  const double high_mel = 2595.0 * std::log10(1.0 + upper / 700.0);
  e.low_mel = low_mel;
  e.step = (high_mel - low_mel) / static_cast<double>(mels + 2);
  // The edges never decrease, so all are inside the matrix when the first and the last are; the
  // reference names the first edge outside, found here by bisection (only on this error path).
  const int64_t last = mels + 1;
  auto outside = [&](int64_t k) {
    const double at = e.at(k);
    return at >= static_cast<double>(bins) || at < 0.0;
  };
  if (outside(0) || outside(last)) {
    int64_t k = 0;
    if (!outside(0)) {
      int64_t good = 0, bad = last;  // outside(good) false, outside(bad) true
      while (bad - good > 1) {
        const int64_t mid = good + (bad - good) / 2;
        (outside(mid) ? bad : good) = mid;
      }
      k = bad;
    }
    return with_node(ex, error(StatusCode::kInvalidModel, "the mel band edges reach spectrogram bin ", e.at(k),
                               " but there are only ", bins, " bins (dft_length ", dft_length, "); ",
                               k == 0 ? "lower_edge_hertz " : "upper_edge_hertz ", k == 0 ? lower : upper,
                               " is too high for sample_rate ", rate));
  }
  if (mels == 0) return Status::ok();
  if (y.dtype() != out_dtype(*ex.ctx->node, 0) && out_dtype(*ex.ctx->node, 0) != DataType::kUndefined)
    return fail(ex, StatusCode::kInternal, "output has dtype ", dtype_name(y.dtype()), ", the node says ",
                dtype_name(out_dtype(*ex.ctx->node, 0)));
  k::MelArgs a;
  a.bins = bins;
  a.mels = mels;
  a.dft_length = dft_length;
  a.sample_rate = rate;
  a.low_mel = e.low_mel;
  a.step = e.step;
  if (mels + 2 <= k::kMelParamEdges) {
    a.host_edges = static_cast<int>(mels + 2);
    for (int64_t k = 0; k < mels + 2; ++k) a.edges[k] = static_cast<int32_t>(e.at(k));  // < bins <= 2^28
  }
  return launch_status(k::launch_mel_weight_matrix(ktype(y.dtype()), a, y.data(), stream_of(ex)), ex);
}

}  // namespace

void append_cuda_spectral_ops(std::vector<CudaOp>& out) {
  out.push_back(CudaOp{"DFT", &dft_supports, &dft_run, {1, 2}, nullptr});
  out.push_back(CudaOp{"STFT", &stft_supports, &stft_run, {1, 3}, nullptr});
  out.push_back(CudaOp{"MelWeightMatrix", &mel_supports, &mel_run, {0, 1, 2, 3, 4}, nullptr});
}

}  // namespace graft::cuda
