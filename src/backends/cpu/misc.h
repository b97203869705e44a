// CPU reference kernels for the ops of src/ops/misc_ops.cpp: InstanceNormalization, LRN,
// MeanVarianceNormalization, EyeLike, BitShift, ReverseSequence, the Hann/Hamming/Blackman windows,
// Det and Einsum.
//
// Same conventions as the other CPU references: values are loaded as double, statistics and sums
// accumulate in double, and each result is rounded once into the output dtype.
#pragma once

#include <cstdint>
#include <vector>

#include "graft/status.h"
#include "ops/misc_attrs.h"
#include "ops/operator.h"

namespace graft::cpu {

enum class WindowKind { kHann, kHamming, kBlackman };

Status instance_normalization(ExecContext& ctx);
Status lrn(ExecContext& ctx);
Status mean_variance_normalization(ExecContext& ctx);
Status eye_like(ExecContext& ctx);
Status bit_shift(ExecContext& ctx);  // a shift by the bit width or more gives 0
Status reverse_sequence(ExecContext& ctx);
Status hann_window(ExecContext& ctx);
Status hamming_window(ExecContext& ctx);
Status blackman_window(ExecContext& ctx);
Status det(ExecContext& ctx);  // LU with partial pivoting in double
// Einsum: every output element sums the products over the labels the output lacks (double for
// floats, wrapping int64 for integers). Refuses (kUnsupported) more than kMaxEinsumTerms products.
inline constexpr int64_t kMaxEinsumTerms = int64_t{1} << 32;
Status einsum(ExecContext& ctx);

}  // namespace graft::cpu
