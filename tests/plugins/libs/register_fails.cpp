// A plugin whose register function reports an error (before registering anything).
#include "graft/plugin.h"

namespace {
graft::Status register_ops(graft::OpRegistry&, const char*) {
  return graft::error(graft::StatusCode::kUnsupported, "test plugin refuses: needs feature xyz-42");
}
}  // namespace

GRAFT_DEFINE_PLUGIN("register_fails", register_ops)
