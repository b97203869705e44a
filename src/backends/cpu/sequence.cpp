#include "backends/cpu/sequence.h"

#include "backends/cpu/host_device.h"
#include "ops/container_driver.h"

namespace graft::cpu {
namespace {

template <Status (*Drive)(const ExecContext&, ContainerDevice&)>
Status on_host(ExecContext& ctx) {
  HostDevice dev(ctx);
  return Drive(ctx, dev);
}

}  // namespace

Status sequence_empty(ExecContext& ctx) { return on_host<run_sequence_empty>(ctx); }
Status sequence_construct(ExecContext& ctx) { return on_host<run_sequence_construct>(ctx); }
Status sequence_insert(ExecContext& ctx) { return on_host<run_sequence_insert>(ctx); }
Status sequence_at(ExecContext& ctx) { return on_host<run_sequence_at>(ctx); }
Status sequence_erase(ExecContext& ctx) { return on_host<run_sequence_erase>(ctx); }
Status sequence_length(ExecContext& ctx) { return on_host<run_sequence_length>(ctx); }
Status split_to_sequence(ExecContext& ctx) { return on_host<run_split_to_sequence>(ctx); }
Status concat_from_sequence(ExecContext& ctx) { return on_host<run_concat_from_sequence>(ctx); }
Status optional(ExecContext& ctx) { return on_host<run_optional>(ctx); }
Status optional_has_element(ExecContext& ctx) { return on_host<run_optional_has_element>(ctx); }
Status optional_get_element(ExecContext& ctx) { return on_host<run_optional_get_element>(ctx); }

}  // namespace graft::cpu
