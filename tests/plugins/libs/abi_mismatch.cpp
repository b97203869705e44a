// A plugin built for a different (future) plugin ABI. graft must refuse it before calling its
// register function: the layout of OpDef it would receive is not the one it was compiled against.
#include "graft/plugin.h"

namespace {
int must_not_be_called(graft::OpRegistry*, const char*, char* err, uint32_t n) {
  std::snprintf(err, n, "register_ops of an ABI-mismatched plugin was called");
  return 1;
}
const GraftPluginInfo kInfo = {GRAFT_PLUGIN_ABI_VERSION + 41u, "abi_mismatch", must_not_be_called};
}  // namespace

extern "C" __attribute__((visibility("default"))) const GraftPluginInfo* graft_plugin_entry() { return &kInfo; }
