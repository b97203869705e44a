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

#include "graft/status.h"
#include "ops/mel_attrs.h"
#include "ops/operator.h"

namespace graft::cpu {

Status mel_weight_matrix(ExecContext& ctx);

}  // namespace graft::cpu
