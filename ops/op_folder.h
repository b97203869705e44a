// What one folder of ops/ hands to register_graft_ops (ops/registry.cpp): its definitions, and the
// other names under which they answer (mmdeploy's, TensorRT's). Each folder's <folder>.cpp defines
// append_<folder>_ops; CMake lists the folders (ops/CMakeLists.txt), so a new op folder registers
// its ops by existing, as a builtin family does (src/ops/builtin_ops.cpp).
#pragma once

#include <string>
#include <vector>

#include "graft/op.h"

namespace graft {

struct OpAliasEntry {
  std::string domain, name;  // the other name, as a node spells it
  OpIdentity target;         // the definition it resolves to
};

struct FolderOps {
  std::vector<OpDef> defs;
  std::vector<OpAliasEntry> aliases;
};

}  // namespace graft
