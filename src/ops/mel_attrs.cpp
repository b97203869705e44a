#include "ops/mel_attrs.h"

#include <climits>

namespace graft {

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

}  // namespace graft
