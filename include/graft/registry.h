// graft/registry.h — the custom-op registry, keyed by (domain, name, version, namespace).
//
// Lookup follows TensorRT's ONNX parser: op_type plus the node's `plugin_version` (default "1") and
// `plugin_namespace` (default "") string attributes; the ONNX domain is honoured when it
// disambiguates but, as in TensorRT, a name match in another domain is still found.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graft/op.h"
#include "graft/status.h"

namespace graft {

struct RegisteredOp {
  std::shared_ptr<const OpDef> def;
  std::string source;  // "graft" for built-in custom ops, or the plugin library's path
};

class OpRegistry {
 public:
  // The process-wide registry. graft's own custom ops are added on first use by an explicit call
  // (register_graft_ops in ops/registry.cpp), never by static initializers.
  static OpRegistry& global();

  OpRegistry() = default;
  OpRegistry(const OpRegistry&) = delete;
  OpRegistry& operator=(const OpRegistry&) = delete;

  // Validates the definition; kAlreadyExists names the earlier source when the key is taken.
  Status add(OpDef def, const std::string& source);
  // Another (domain, name) under which `target` answers (e.g. mmdeploy's op names).
  Status add_alias(const std::string& alias_domain, const std::string& alias_name,
                   const OpIdentity& target, const std::string& source);

  // Lookup as TensorRT's parser does. On failure the error names what was looked for and lists
  // every registered op with that name (with its version and namespace) or says there is none.
  Result<std::shared_ptr<const OpDef>> find(const std::string& domain, const std::string& op_type,
                                            const std::string& version,
                                            const std::string& plugin_namespace) const;
  // Exact lookup by identity (plan loading).
  std::shared_ptr<const OpDef> find_exact(const OpIdentity& id) const;

  std::vector<RegisteredOp> all() const;  // sorted by name, version
  struct Alias {
    std::string domain, name;
    OpIdentity target;
  };
  std::vector<Alias> aliases() const;

 private:
  mutable std::mutex mu_;
  std::vector<RegisteredOp> ops_;
  std::vector<Alias> aliases_;
};

// Explicit registration of graft's own custom ops (defined under ops/). Idempotent.
Status register_graft_ops(OpRegistry& registry);

// Loads a plugin library (dlopen), checks its ABI version and lets it register its ops into the
// global registry. Errors: file missing, not a shared library, no entry point, ABI mismatch,
// duplicate op. Loading the same path twice is a no-op.
Status load_plugin_library(const std::string& path);

// Loads every library of a colon-separated list (the adapters' GRAFT_PLUGIN_LIBRARIES); empty
// entries are skipped. One library failing does not stop the others: the statuses of those that
// failed are returned, in list order.
std::vector<Status> load_plugin_libraries(const std::string& colon_separated);

}  // namespace graft
