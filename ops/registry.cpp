// graft's own custom ops into a registry. Each op folder's <folder>.cpp defines append_<folder>_ops
// (ops/op_folder.h); CMake lists the folders (ops/CMakeLists.txt), and this file calls each one
// explicitly: no static initializers, so a static link cannot drop an op without the linker
// complaining.
#include "graft/registry.h"
#include "ops/op_folder.h"

namespace graft {

#define GRAFT_CUSTOM_OP_FOLDER(folder) void append_##folder##_ops(FolderOps& out);
#include "ops/custom_op_folders.inc"
#undef GRAFT_CUSTOM_OP_FOLDER

Status register_graft_ops(OpRegistry& registry) {
  FolderOps ops;
#define GRAFT_CUSTOM_OP_FOLDER(folder) append_##folder##_ops(ops);
#include "ops/custom_op_folders.inc"
#undef GRAFT_CUSTOM_OP_FOLDER
  for (OpDef& def : ops.defs) {
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
  // Other names under which graft's ops answer; skipped when already there (idempotent).
  for (const OpAliasEntry& a : ops.aliases) {
    bool present = false;
    for (const OpRegistry::Alias& have : registry.aliases())
      if (have.domain == a.domain && have.name == a.name && have.target.version == a.target.version &&
          have.target.plugin_namespace == a.target.plugin_namespace)
        present = true;
    if (!present) GRAFT_RETURN_IF_ERROR(registry.add_alias(a.domain, a.name, a.target, "graft"));
  }
  return Status::ok();
}

}  // namespace graft
