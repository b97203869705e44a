// The misc family: ONNX ops the backend test suite exercises that fit no larger family yet,
// InstanceNormalization, GroupNormalization, LRN, MeanVarianceNormalization, EyeLike, BitShift, the Bitwise ops,
// ReverseSequence, HannWindow, HammingWindow, BlackmanWindow, Det and Einsum. One file per op (or
// group of ops sharing a kernel): normalization (InstanceNormalization, GroupNormalization, LRN,
// MeanVarianceNormalization),
// eye_like, bit_shift, bitwise (BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot), reverse_sequence,
// window (the three windows), det and einsum, each a .cpp (definition
// and CPU reference) and a .cu (kernels and CUDA op). This header holds their attribute readers and Einsum's
// equation parser, shared by the schemas, the CPU references and the CUDA ops, so every side accepts
// and words its errors the same way.
#pragma once

#include <cstdint>
#include <string>
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
// GroupNormalization (opset 18 and 21): epsilon as InstanceNormalization's, num_groups required and
// positive. Its layout over x [N, C, D1, ...]: N * G groups of C / G whole channels, each group
// contiguous in x; the scale and bias have one entry per group at opset 18 to 20 and one per channel
// from 21 (ONNX changed the meaning, and deprecated 18's). Instance normalization is the case G = C.
struct GroupNormAttrs {
  float epsilon = 1e-5f;
  int64_t groups = 0;
};
Result<GroupNormAttrs> group_norm_attrs(const AttributeMap& attrs);
struct GroupNormLayout {
  int64_t batch = 0, channels = 0, groups = 0, spatial = 1;
  bool per_group_affine = false;  // scale/bias per group (opset 18 to 20), not per channel
};
// From concrete shapes; errors name the shapes (the attribute for a C that num_groups does not divide).
Result<GroupNormLayout> group_norm_layout(const std::vector<int64_t>& x, const std::vector<int64_t>& scale,
                                          const std::vector<int64_t>& bias, int64_t groups, int opset);
inline bool group_norm_per_group_affine(int opset) { return opset < 21; }
// InstanceNormalization's layout: one group per channel, its scale and B [C]. Errors name the shapes
// (the caller prefixes the op).
Result<GroupNormLayout> instance_norm_layout(const std::vector<int64_t>& x, const std::vector<int64_t>& scale,
                                             const std::vector<int64_t>& bias);
struct LrnAttrs {
  int64_t size = 0;
  float alpha = 1e-4f, beta = 0.75f, bias = 1.0f;
};
Result<LrnAttrs> lrn_attrs(const AttributeMap& attrs);
// MeanVarianceNormalization's axes (default [0, 2, 3]) normalized against `rank`, sorted, distinct.
Result<std::vector<int64_t>> mvn_axes(const AttributeMap& attrs, int64_t rank);
// BitShift's direction: true for LEFT, false for RIGHT (required, exactly one of the two).
Result<bool> bit_shift_left(const AttributeMap& attrs);
// BitwiseAnd, BitwiseOr and BitwiseXor (bitwise.cpp, bitwise.cu): one kernel each side, told apart by this.
enum class BitwiseOp : int { kAnd, kOr, kXor };
// ReverseSequence's (batch_axis, time_axis): each 0 or 1, different.
Result<std::pair<int64_t, int64_t>> reverse_sequence_axes(const AttributeMap& attrs);

// ---- Einsum's equation ----------------------------------------------------------------------
// Einsum's equation, parsed once for the schema, the CPU reference and the CUDA kernel.
//
// Every axis of every operand gets a label id: letters in order of first appearance, then one id per
// broadcast position of the ellipsis ("..."), right-aligned across operands as NumPy broadcasts
// them. The output lists label ids: the explicit "->" part, or (implicit form) the ellipsis labels
// followed by the letters that appear exactly once, in alphabetical order. Labels of the inputs
// that the output lacks are summed over.

struct EinsumSpec {
  std::vector<std::vector<int>> in_labels;  // per input, per axis
  std::vector<int> out_labels;              // per output axis
  int num_labels = 0;
  std::vector<bool> ellipsis_label;         // label id -> whether it stands for a broadcast position
};

// `ranks` are the inputs' ranks. Errors say what is wrong with the equation (the caller names the
// attribute and the node).
Result<EinsumSpec> parse_einsum(const std::string& equation, const std::vector<int64_t>& ranks);

// Each label's extent from the inputs' dims: a letter's extents must agree; an ellipsis position
// broadcasts (1 against n). Errors name the label and the disagreeing extents.
Result<std::vector<int64_t>> einsum_extents(const EinsumSpec& spec, const std::vector<std::vector<int64_t>>& dims);

// How the kernels walk the problem: labels in output-first order (the output's, then the summed
// ones), each label's extent in that order, and each input's element stride per label (0 where the
// input lacks the label or broadcasts it; a label repeated in one operand, a diagonal, adds its
// strides). `inner` is the product of the summed extents, saturated at INT64_MAX.
struct EinsumLayout {
  std::vector<int> order;
  std::vector<int64_t> ext;
  std::vector<std::vector<int64_t>> stride;
  size_t n_out = 0;
  int64_t inner = 1;
};
Result<EinsumLayout> einsum_layout(const EinsumSpec& spec, const std::vector<std::vector<int64_t>>& dims);

}  // namespace graft
