// CPU reference kernel of MelWeightMatrix. See mel.h.
#include "backends/cpu/mel.h"

#include <cmath>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "backends/cpu/spectral.h"
#include "backends/cpu/unary_kernel.h"

namespace graft::cpu {
namespace {

double hz_to_mel(double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); }
double mel_to_hz(double mel) { return 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0); }

// The one floating value input `what` holds (a scalar or [1]).
Result<double> float_scalar(const Tensor* t, const char* what) {
  if (!t) return error(StatusCode::kInvalidModel, "required input ", what, " is missing");
  if (t->numel() != 1 || t->rank() > 1 || !dtype_is_float(t->dtype()))
    return error(StatusCode::kInvalidModel, "input ", what, " must be one floating value, got ",
                 dtype_name(t->dtype()), " ", ints_to_string(t->dims()));
  if (t->device() != DeviceType::kCPU)
    return error(StatusCode::kInternal, "input ", what, " must be a host tensor");
  return t->get(0);
}

}  // namespace

Status mel_weight_matrix(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 5));
  GRAFT_ASSIGN_OR_RETURN(int64_t mels, integer_scalar(*ctx.inputs[0], "num_mel_bins"));
  GRAFT_ASSIGN_OR_RETURN(int64_t dft_length, integer_scalar(*ctx.inputs[1], "dft_length"));
  GRAFT_ASSIGN_OR_RETURN(int64_t rate, integer_scalar(*ctx.inputs[2], "sample_rate"));
  GRAFT_ASSIGN_OR_RETURN(double lower, float_scalar(ctx.inputs[3], "lower_edge_hertz"));
  GRAFT_ASSIGN_OR_RETURN(double upper, float_scalar(ctx.inputs[4], "upper_edge_hertz"));
  GRAFT_RETURN_IF_ERROR(check_mel_sizes(mels, dft_length, rate));
  if (!(lower >= 0.0) || !std::isfinite(lower))
    return error(StatusCode::kInvalidModel, "input lower_edge_hertz must be finite and >= 0, got ", lower);
  if (!(upper >= lower) || !std::isfinite(upper))
    return error(StatusCode::kInvalidModel, "input upper_edge_hertz must be finite and >= lower_edge_hertz (",
                 lower, "), got ", upper);
  const int64_t bins = dft_length / 2 + 1;
  Tensor& y = *ctx.outputs[0];
  if (y.dims() != std::vector<int64_t>{bins, mels})
    return error(StatusCode::kInternal, "MelWeightMatrix: output ", ints_to_string(y.dims()), " is not [",
                 bins, ", ", mels, "]");
  // The band edges as spectrogram bins; they never decrease, so the last is the largest.
  const double low_mel = hz_to_mel(lower), high_mel = hz_to_mel(upper);
  const double step = (high_mel - low_mel) / static_cast<double>(mels + 2);
  std::vector<int64_t> edge(static_cast<size_t>(mels + 2));
  for (int64_t i = 0; i < mels + 2; ++i) {
    const double hz = mel_to_hz(low_mel + step * static_cast<double>(i));
    const double at = std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(rate));
    // A band reaching past the last bin would index outside the matrix: refused, naming the edge.
    if (at >= static_cast<double>(bins) || at < 0.0)
      return error(StatusCode::kInvalidModel, "the mel band edges reach spectrogram bin ", at,
                   " but there are only ", bins, " bins (dft_length ", dft_length, "); ",
                   i == 0 ? "lower_edge_hertz " : "upper_edge_hertz ", i == 0 ? lower : upper,
                   " is too high for sample_rate ", rate);
    edge[static_cast<size_t>(i)] = static_cast<int64_t>(at);
  }
  std::vector<double> w(static_cast<size_t>(bins * mels), 0.0);
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t left = edge[static_cast<size_t>(i)], centre = edge[static_cast<size_t>(i + 1)],
                  right = edge[static_cast<size_t>(i + 2)];
    if (centre == left) {
      w[static_cast<size_t>(centre * mels + i)] = 1.0;
    } else {
      for (int64_t j = left; j <= centre; ++j)
        w[static_cast<size_t>(j * mels + i)] =
            static_cast<double>(j - left) / static_cast<double>(centre - left);
    }
    for (int64_t j = centre; j < right; ++j)
      w[static_cast<size_t>(j * mels + i)] =
          static_cast<double>(right - j) / static_cast<double>(right - centre);
  }
  for (int64_t i = 0; i < y.numel(); ++i) y.set(i, w[static_cast<size_t>(i)]);
  return Status::ok();
}

}  // namespace graft::cpu
