// MelWeightMatrix's output dtype and size checks, shared by the schema (src/ops/mel_ops.cpp), the
// CPU reference (src/backends/cpu/mel.cpp) and the CUDA op (src/backends/cuda/spectral_ops.cpp).
#pragma once

#include <cstdint>

#include "graft/attribute.h"
#include "graft/dtype.h"
#include "graft/status.h"

namespace graft {

// The most weights one node makes: the dims are input values, so they are bounded before anything
// is allocated (a 2^28-element float32 matrix is already 1 GiB).
inline constexpr int64_t kMaxMelWeights = int64_t{1} << 28;

// The output dtype from output_datatype (default 1, float32); errors name the attribute.
Result<DataType> mel_output_dtype(const AttributeMap& attrs);

// num_mel_bins >= 0, dft_length >= 1, sample_rate >= 1 and the output's size within the bound;
// errors name the input at fault.
Status check_mel_sizes(int64_t num_mel_bins, int64_t dft_length, int64_t sample_rate);

}  // namespace graft
