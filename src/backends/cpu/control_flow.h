// CPU reference kernels of If, Loop, Scan and SequenceMap (schemas: src/ops/control_flow_ops.cpp). Each runs its
// subgraph node by node through the same run_node_cpu as the engine, and allocates its outputs once
// it knows them (allocate_output): the shared drivers (ops/control_flow_driver.h) over host tensors
// (HostDevice, backends/cpu/host_device.h).
#pragma once

#include "ops/operator.h"

namespace graft::cpu {

Status if_op(ExecContext& ctx);
Status loop_op(ExecContext& ctx);
Status scan_op(ExecContext& ctx);
Status sequence_map_op(ExecContext& ctx);

}  // namespace graft::cpu
