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
#include "ops/operator.h"

namespace graft::cpu {

// The largest window (HannWindow, HammingWindow, BlackmanWindow) graft makes: its length comes from
// an input value, so it is bounded before anything is allocated.
inline constexpr int64_t kMaxWindowLength = int64_t{1} << 30;

// Validated attributes shared by the schemas and the kernels; errors name the attribute.
Result<float> instance_norm_epsilon(const AttributeMap& attrs);
struct LrnAttrs {
  int64_t size = 0;
  float alpha = 1e-4f, beta = 0.75f, bias = 1.0f;
};
Result<LrnAttrs> lrn_attrs(const AttributeMap& attrs);
// MeanVarianceNormalization's axes (default [0, 2, 3]) normalized against `rank`, sorted, distinct.
Result<std::vector<int64_t>> mvn_axes(const AttributeMap& attrs, int64_t rank);
// BitShift's direction: true for LEFT, false for RIGHT (required, exactly one of the two).
Result<bool> bit_shift_left(const AttributeMap& attrs);
// ReverseSequence's (batch_axis, time_axis): each 0 or 1, different.
Result<std::pair<int64_t, int64_t>> reverse_sequence_axes(const AttributeMap& attrs);
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
