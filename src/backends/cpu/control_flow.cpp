#include "backends/cpu/control_flow.h"

#include "backends/cpu/host_device.h"

namespace graft::cpu {

Status if_op(ExecContext& ctx) {
  HostDevice dev(ctx);
  return run_if(ctx, dev);
}

Status loop_op(ExecContext& ctx) {
  HostDevice dev(ctx);
  return run_loop(ctx, dev);
}

Status scan_op(ExecContext& ctx) {
  HostDevice dev(ctx);
  return run_scan(ctx, dev);
}

Status sequence_map_op(ExecContext& ctx) {
  HostDevice dev(ctx);
  return run_sequence_map(ctx, dev);
}

}  // namespace graft::cpu
