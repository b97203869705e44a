// MelWeightMatrix (opset 17): its dtype and size checks (spectral.h), the naive CPU reference (each
// weight in double, rounded once) and the schema. CUDA: mel_weight_matrix.cu.
#include "ops/spectral/spectral.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"
#include "core/checked_math.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- MelWeightMatrix's attributes and sizes (spectral.h) -------------------------------------

Result<DataType> mel_output_dtype(const AttributeMap& attrs) {
  auto odt = attrs.get_int("output_datatype", 1);
  if (!odt) return Status(odt.status()).with_attribute("output_datatype");
  DataType out;
  if (odt.value() < INT32_MIN || odt.value() > INT32_MAX ||
      !dtype_from_onnx_numeric(static_cast<int32_t>(odt.value()), &out) || out == DataType::kBool)
    return Status(error(StatusCode::kUnsupported, "ONNX element type ", odt.value(),
                        " is not supported (graft makes float32, float16, float64, bfloat16, int8, uint8, "
                        "int32 and "
                        "int64 weights)"))
        .with_attribute("output_datatype");
  return out;
}

Status check_mel_sizes(int64_t num_mel_bins, int64_t dft_length, int64_t sample_rate) {
  if (num_mel_bins < 0)
    return error(StatusCode::kInvalidModel, "input num_mel_bins must be >= 0, got ", num_mel_bins);
  if (dft_length < 1)
    return error(StatusCode::kInvalidModel, "input dft_length must be >= 1, got ", dft_length);
  if (sample_rate < 1)
    return error(StatusCode::kInvalidModel, "input sample_rate must be >= 1, got ", sample_rate);
  const int64_t bins = dft_length / 2 + 1;
  if (num_mel_bins > 0 && bins > kMaxMelWeights / num_mel_bins)
    return error(StatusCode::kUnsupported, "a [", bins, ", ", num_mel_bins,
                 "] mel weight matrix exceeds the ", kMaxMelWeights, " weights graft makes for one node");
  return Status::ok();
}

// ---- CPU reference ----------------------------------------------------------------------------------

namespace cpu {

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


}  // namespace cpu

// ---- schema -----------------------------------------------------------------------------------------

namespace {

using namespace infer;

// MelWeightMatrix (opset 17): three integer scalars (num_mel_bins, dft_length, sample_rate)
// and two floating ones (the band's edges in hertz) make a [floor(dft_length / 2) + 1, num_mel_bins]
// matrix of output_datatype. The dims are input values: known at build time when they are
// constants, otherwise fresh symbols that the run-time inference (every input value on the host)
// resolves.

// Input i is a scalar (rank 0 or [1]) of one of `types`.
Status require_scalar_of(const InferContext& ctx, size_t i, const std::vector<DataType>& types, const char* what) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, i, types));
  return require_scalar(ctx, i, what);
}

Status infer_mel_weight_matrix(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(DataType out, mel_output_dtype(ctx.attrs()));
  GRAFT_RETURN_IF_ERROR(require_scalar_of(ctx, 0, {kI32, kI64}, "num_mel_bins"));
  GRAFT_RETURN_IF_ERROR(require_scalar_of(ctx, 1, {kI32, kI64}, "dft_length"));
  GRAFT_RETURN_IF_ERROR(require_scalar_of(ctx, 2, {kI32, kI64}, "sample_rate"));
  GRAFT_RETURN_IF_ERROR(require_scalar_of(ctx, 3, kFloatTypes, "lower_edge_hertz"));
  GRAFT_RETURN_IF_ERROR(require_scalar_of(ctx, 4, kFloatTypes, "upper_edge_hertz"));
  GRAFT_ASSIGN_OR_RETURN(std::optional<Dim> mels, scalar_value(ctx, 0, "num_mel_bins"));
  GRAFT_ASSIGN_OR_RETURN(std::optional<Dim> len, scalar_value(ctx, 1, "dft_length"));
  GRAFT_ASSIGN_OR_RETURN(std::optional<Dim> rate, scalar_value(ctx, 2, "sample_rate"));
  // Each known number is checked alone (the others standing in at their smallest valid value);
  // all three known also bound the output's size.
  auto known = [](const std::optional<Dim>& d, int64_t fallback) {
    return d && d->is_const() ? d->value() : fallback;
  };
  GRAFT_RETURN_IF_ERROR(check_mel_sizes(known(mels, 0), known(len, 1), known(rate, 1)));
  if (mels && mels->is_const() && len && len->is_const())
    GRAFT_RETURN_IF_ERROR(check_mel_sizes(mels->value(), len->value(), known(rate, 1)));
  const Dim bins = len ? floor_div(*len, Dim(2)) + Dim(1) : ctx.unknown_dim();
  ctx.set_output(0, desc_of(out, Shape{bins, mels ? *mels : ctx.unknown_dim()}));
  return Status::ok();
}

}  // namespace

void append_mel_weight_matrix_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"MelWeightMatrix", 17, infer_mel_weight_matrix, cpu::mel_weight_matrix});
}

}  // namespace graft
