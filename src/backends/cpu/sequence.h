// CPU kernels of the sequence and optional ops (schemas: src/ops/sequence_ops.cpp): the shared drivers
// (ops/container_driver.h) over host tensors (HostDevice, backends/cpu/host_device.h). A sequence is a
// Tensor of kind kSequence holding host tensors that share storage with the tensors put in.
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
