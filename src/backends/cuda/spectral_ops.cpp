// CUDA ops for DFT and STFT (CPU reference: src/backends/cpu/spectral.cpp) and MelWeightMatrix
// (src/backends/cpu/mel.cpp), so a CUDA engine keeps them on the GPU. The layout and every check come from the CPU reference's own readers
// (dft_attrs, dft_layout, stft_layout), so errors read the same on both backends; the lengths and
// the axis are host inputs (they decide the output's shape, which the engine needs on the host
// anyway), the samples and the window stay on the device. Kernel: spectral_kernels.cu.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "ops/mel_attrs.h"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/spectral_kernels.cuh"
#include "ops/attr_util.h"
#include "ops/spectral_attrs.h"

namespace graft::cuda {
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
