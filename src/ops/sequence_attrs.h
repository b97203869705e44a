// Values the sequence ops read from their inputs, checked in one place for the schemas
// (src/ops/sequence_ops.cpp) and the CPU kernels (src/backends/cpu/sequence.cpp), so both accept
// the same values and word their errors the same way.
#pragma once

#include <cstdint>
#include <vector>

#include "graft/status.h"
#include "graft/tensor.h"

namespace graft {

// A position input (SequenceAt, SequenceErase: -n <= p < n; SequenceInsert, `insert`: -n <= p <= n)
// as an index in [0, n]: one int32 or int64 element. Errors name the position and the length.
Result<int64_t> sequence_position(const Tensor& position, int64_t length, bool insert);

// The lengths SplitToSequence cuts an axis of `dim` elements into: without `split`, ones; a scalar
// `split`, chunks of that size (the last one shorter when it does not divide `dim`); a 1-D `split`,
// its values, which must be non-negative and sum to `dim`.
Result<std::vector<int64_t>> split_lengths(const Tensor* split, int64_t dim);

// The dims of ConcatFromSequence over `items` along `axis` (stacked along a new axis when
// `new_axis`), and the normalised axis in *axis_out. Every item must have the same rank and the same
// dims but along `axis` (every dim when stacking); an empty sequence is an error.
Result<std::vector<int64_t>> concat_from_sequence_dims(const std::vector<Tensor>& items, int64_t axis, bool new_axis,
                                                       size_t* axis_out);

// OptionalGetElement of an optional that holds nothing.
Status optional_empty_error();

// Optional's `type` attribute (an ONNX TypeProto) as graft keeps it: INTS {kind, dtype, rank,
// dims...}, kind 0 for a tensor and 1 for a sequence, dtype the ONNX element type, rank -1 when
// unknown, a dim -1 when unknown. The importer writes it (plans keep it so), Optional's schema reads it.
constexpr int64_t kOptionalTypeTensor = 0, kOptionalTypeSequence = 1;

}  // namespace graft
