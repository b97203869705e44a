// CPU reference kernel of MelWeightMatrix (opset 17; schema: src/ops/mel_ops.cpp): the matrix of
// triangular mel filters [floor(dft_length / 2) + 1, num_mel_bins] that maps a onesided spectrogram
// to mel bands.
//
// The band edges are num_mel_bins + 2 points evenly spaced on the mel scale
// mel(f) = 2595 * log10(1 + f / 700) from lower_edge_hertz to upper_edge_hertz, spaced by
// (mel(upper) - mel(lower)) / (num_mel_bins + 2) as ONNX's reference and ONNX Runtime space them,
// each mapped back to hertz and to the spectrogram bin floor((dft_length + 1) * f / sample_rate).
// Band i rises linearly from 0 at edge i to 1 at edge i + 1 and falls back to 0 at edge i + 2 (an
// empty rising side puts the 1 at the centre). Edges are computed in double, as ONNX Runtime does,
// and each weight is rounded once into the output dtype (integer outputs truncate, as Cast does).
#pragma once

#include <cstdint>

#include "graft/status.h"
#include "ops/operator.h"

namespace graft::cpu {

// The most weights one node makes: the dims are input values, so they are bounded before anything
// is allocated (a 2^28-element float32 matrix is already 1 GiB).
inline constexpr int64_t kMaxMelWeights = int64_t{1} << 28;

// The output dtype from output_datatype (default 1, float32); errors name the attribute.
Result<DataType> mel_output_dtype(const AttributeMap& attrs);

// num_mel_bins >= 0, dft_length >= 1, sample_rate >= 1 and the output's size within the bound;
// errors name the input at fault.
Status check_mel_sizes(int64_t num_mel_bins, int64_t dft_length, int64_t sample_rate);

Status mel_weight_matrix(ExecContext& ctx);

}  // namespace graft::cpu
