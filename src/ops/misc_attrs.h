// Attribute readers of the ops of src/ops/misc_ops.cpp (InstanceNormalization, LRN,
// MeanVarianceNormalization, BitShift, ReverseSequence, the windows), shared by the schemas, the CPU
// references and the CUDA ops so every side accepts and words its errors the same way.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "graft/attribute.h"
#include "graft/status.h"

namespace graft {

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

}  // namespace graft
