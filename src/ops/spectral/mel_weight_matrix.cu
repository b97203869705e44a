// MelWeightMatrix's CUDA kernel and op (definition and CPU reference: mel_weight_matrix.cpp). The
// five inputs are host scalars (they decide the output's shape); the checks are the CPU reference's
// own (spectral.h), so errors read the same on both backends.
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

// ---- kernel -----------------------------------------------------------------------------------------

namespace k {

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

// ---- CUDA op ----------------------------------------------------------------------------------------

namespace {

using namespace util;

// ---- MelWeightMatrix ---------------------------------------------------------------------------------
//
// The five inputs are scalars read on the host (they also decide the output's shape); the band
// edges' validity is checked there with the CPU reference's words, and a kernel writes every weight.

constexpr std::initializer_list<DataType> kMelOutputs = {
    DataType::kFloat32, DataType::kFloat16, DataType::kFloat64, DataType::kBFloat16,
    DataType::kInt8,    DataType::kUInt8,   DataType::kInt32,   DataType::kInt64};

// The keys: inputs 0 to 2 int32/int64, inputs 3 and 4 float32/float16/bfloat16/float64, the output
// kMelOutputs (so output_datatype, which it must equal, is one of those).
bool mel_supports(const Node& n, std::string* why) {
  for (size_t i = 0; i < 5; ++i)
    if (!has_input(n, i)) return reject(why, "input " + std::to_string(i) + " is missing");
  auto odt = mel_output_dtype(n.attrs);
  if (!odt) return reject(why, odt.status().message());
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

void append_cuda_mel_weight_matrix_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuInts), input_dtypes(1, kGpuInts), input_dtypes(2, kGpuInts),
                               input_dtypes(3, kGpuFloats64), input_dtypes(4, kGpuFloats64),
                               output_dtypes(0, kMelOutputs)},
                              CudaOp{"MelWeightMatrix", &mel_supports, &mel_run, {0, 1, 2, 3, 4}, nullptr}));
}

}  // namespace graft::cuda
