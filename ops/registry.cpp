// Explicit list of graft's own custom ops. Each op folder defines a `define_<op>()` function; this
// file adds them to a registry. Listing them here (no static initializers) means a static link
// cannot drop an op without the linker complaining.
#include "graft/registry.h"

namespace graft {

Status register_graft_ops(OpRegistry& registry) { return Status::ok(); }

}  // namespace graft
