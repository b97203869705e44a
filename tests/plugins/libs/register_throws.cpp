// A plugin whose register function throws: the exception must stop at the plugin boundary.
#include <stdexcept>

#include "graft/plugin.h"

namespace {
graft::Status register_ops(graft::OpRegistry&, const char*) {
  throw std::runtime_error("test plugin threw during registration");
}
}  // namespace

GRAFT_DEFINE_PLUGIN("register_throws", register_ops)
