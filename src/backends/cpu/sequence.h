// CPU kernels of the sequence and optional ops (schemas: src/ops/sequence_ops.cpp). A sequence is a
// Tensor of kind kSequence holding host tensors that share storage with the tensors put in (values
// are immutable once made, so nothing is copied); each kernel builds its output whole and stores it
// with set_output_value.
#pragma once

#include "ops/operator.h"

namespace graft::cpu {

Status sequence_empty(ExecContext& ctx);
Status sequence_construct(ExecContext& ctx);
Status sequence_insert(ExecContext& ctx);
Status sequence_at(ExecContext& ctx);
Status sequence_erase(ExecContext& ctx);
Status sequence_length(ExecContext& ctx);
Status split_to_sequence(ExecContext& ctx);
Status concat_from_sequence(ExecContext& ctx);
Status optional(ExecContext& ctx);
Status optional_has_element(ExecContext& ctx);
Status optional_get_element(ExecContext& ctx);

}  // namespace graft::cpu
