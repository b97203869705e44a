// Explicit list of graft's own custom ops. Each op folder defines a `define_<op>()` function; this
// file adds them to a registry. Listing them here (no static initializers) means a static link
// cannot drop an op without the linker complaining.
#include "graft/registry.h"
#include "ops/custom_layer/custom_layer.h"
#include "ops/group_norm/group_norm.h"

namespace graft {

Status register_graft_ops(OpRegistry& registry) {
  using DefineFn = OpDef (*)();
  static constexpr DefineFn kOps[] = {
      &define_custom_layer,
      &define_group_norm,
  };
  for (DefineFn define : kOps) {
    OpDef def = define();
    // Idempotent: an op graft already registered is skipped; one registered by someone else under
    // the same key is still reported by add().
    if (auto existing = registry.find_exact(def.identity()); existing) {
      bool ours = false;
      for (const RegisteredOp& r : registry.all())
        if (r.def == existing && r.source == "graft") ours = true;
      if (ours) continue;
    }
    GRAFT_RETURN_IF_ERROR(registry.add(std::move(def), "graft"));
  }
  return Status::ok();
}

}  // namespace graft
