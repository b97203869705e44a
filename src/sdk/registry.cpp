// OpRegistry and plugin-library loading.
#include "graft/registry.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <set>

#include "graft/plugin.h"

namespace graft {

OpRegistry& OpRegistry::global() {
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry();  // never destroyed: plugin kernels may run during static teardown
    Status st = register_graft_ops(*r);
    if (!st.is_ok()) std::fprintf(stderr, "graft: error: registering graft's own ops: %s\n", st.to_string().c_str());
    return r;
  }();
  return *registry;
}

namespace {
bool same_key(const OpIdentity& a, const OpIdentity& b) {
  return a.domain == b.domain && a.name == b.name && a.version == b.version && a.plugin_namespace == b.plugin_namespace;
}
}  // namespace

Status OpRegistry::add(OpDef def, const std::string& source) {
  GRAFT_RETURN_IF_ERROR(def.validate_definition());
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& r : ops_)
    if (same_key(r.def->identity(), def.identity()))
      return error(StatusCode::kAlreadyExists, "op ", def.identity().to_string(), " from '", source,
                   "' is already registered (by '", r.source, "')");
  ops_.push_back(RegisteredOp{std::make_shared<const OpDef>(std::move(def)), source});
  return Status::ok();
}

Status OpRegistry::add_alias(const std::string& alias_domain, const std::string& alias_name,
                             const OpIdentity& target, const std::string& source) {
  std::lock_guard<std::mutex> lock(mu_);
  bool found = std::any_of(ops_.begin(), ops_.end(), [&](const RegisteredOp& r) { return same_key(r.def->identity(), target); });
  if (!found) return error(StatusCode::kNotFound, "alias ", alias_name, " from '", source, "' targets unregistered op ", target.to_string());
  for (auto& a : aliases_)
    if (a.domain == alias_domain && a.name == alias_name && a.target.version == target.version &&
        a.target.plugin_namespace == target.plugin_namespace)
      return error(StatusCode::kAlreadyExists, "alias ", alias_domain, "::", alias_name, " is already registered");
  aliases_.push_back(Alias{alias_domain, alias_name, target});
  return Status::ok();
}

Result<std::shared_ptr<const OpDef>> OpRegistry::find(const std::string& domain, const std::string& op_type,
                                                      const std::string& version,
                                                      const std::string& plugin_namespace) const {
  std::lock_guard<std::mutex> lock(mu_);
  // Candidates by name (direct or alias), then filtered on version and namespace as TensorRT does.
  struct Cand {
    std::shared_ptr<const OpDef> def;
    std::string answered_domain;
  };
  std::vector<Cand> by_name;
  for (auto& r : ops_)
    if (r.def->name() == op_type) by_name.push_back({r.def, r.def->identity().domain});
  for (auto& a : aliases_) {
    if (a.name != op_type) continue;
    for (auto& r : ops_)
      if (same_key(r.def->identity(), a.target)) by_name.push_back({r.def, a.domain});
  }
  std::vector<Cand> matches;
  for (auto& c : by_name)
    if (c.def->identity().version == version && c.def->identity().plugin_namespace == plugin_namespace)
      matches.push_back(c);
  // The ONNX domain disambiguates; like TensorRT, a match in another domain is still accepted.
  for (auto& c : matches)
    if (c.answered_domain == domain) return c.def;
  if (!matches.empty()) return matches.front().def;

  std::string msg = "no registered op matches op_type '" + op_type + "' (domain '" + domain +
                    "', plugin_version '" + version + "', plugin_namespace '" + plugin_namespace + "')";
  if (by_name.empty()) {
    msg += "; no op named '" + op_type + "' is registered at all (is the plugin library that defines it loaded?)";
  } else {
    msg += "; registered ops with that name:";
    for (auto& c : by_name)
      msg += " [" + c.def->identity().to_string() + "]";
  }
  return error(StatusCode::kNotFound, msg);
}

std::shared_ptr<const OpDef> OpRegistry::find_exact(const OpIdentity& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& r : ops_)
    if (same_key(r.def->identity(), id)) return r.def;
  return nullptr;
}

std::vector<RegisteredOp> OpRegistry::all() const {
  std::lock_guard<std::mutex> lock(mu_);
  auto v = ops_;
  std::sort(v.begin(), v.end(), [](const RegisteredOp& a, const RegisteredOp& b) {
    return std::tie(a.def->identity().name, a.def->identity().version) <
           std::tie(b.def->identity().name, b.def->identity().version);
  });
  return v;
}

std::vector<OpRegistry::Alias> OpRegistry::aliases() const {
  std::lock_guard<std::mutex> lock(mu_);
  return aliases_;
}

Status load_plugin_library(const std::string& path) {
  static std::mutex mu;
  static std::set<std::string> loaded;
  std::lock_guard<std::mutex> lock(mu);
  struct stat sb;
  if (::stat(path.c_str(), &sb) != 0)
    return error(StatusCode::kNotFound, "plugin library '", path, "' does not exist");
  char* real = ::realpath(path.c_str(), nullptr);
  std::string key = real ? real : path;
  std::free(real);
  if (loaded.count(key)) return Status::ok();
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = ::dlerror();
    return error(StatusCode::kInvalidArgument, "plugin library '", path, "' could not be loaded: ", e ? e : "unknown dlopen error");
  }
  auto entry = reinterpret_cast<GraftPluginEntryFn>(::dlsym(handle, GRAFT_PLUGIN_ENTRY_SYMBOL));
  if (!entry) {
    ::dlclose(handle);
    return error(StatusCode::kInvalidArgument, "plugin library '", path, "' does not export the entry point '",
                 GRAFT_PLUGIN_ENTRY_SYMBOL, "' (define it with GRAFT_DEFINE_PLUGIN from graft/plugin.h)");
  }
  const GraftPluginInfo* info = entry();
  if (!info) {
    ::dlclose(handle);
    return error(StatusCode::kInvalidArgument, "plugin library '", path, "': entry point returned null");
  }
  if (info->abi_version != GRAFT_PLUGIN_ABI_VERSION) {
    const uint32_t their_abi = info->abi_version;  // `info` lives in the library: read it before dlclose
    ::dlclose(handle);
    return error(StatusCode::kInvalidArgument, "plugin library '", path, "' was built for graft plugin ABI version ",
                 static_cast<unsigned long long>(their_abi), ", this graft has ABI version ",
                 static_cast<unsigned long long>(GRAFT_PLUGIN_ABI_VERSION), ": rebuild it against this SDK");
  }
  char err[1024] = {0};
  // The library stays loaded even if registration fails part-way: kernels of ops it did register
  // live in it. The handle is intentionally never closed.
  if (info->register_ops(&OpRegistry::global(), path.c_str(), err, sizeof err) != 0)
    return error(StatusCode::kInvalidArgument, "plugin library '", path, "' failed to register its ops: ", err);
  loaded.insert(key);
  return Status::ok();
}

std::vector<Status> load_plugin_libraries(const std::string& colon_separated) {
  std::vector<Status> failed;
  size_t start = 0;
  while (start <= colon_separated.size()) {
    const size_t end = colon_separated.find(':', start);
    const std::string path = colon_separated.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!path.empty()) {
      Status st = load_plugin_library(path);
      if (!st.is_ok()) failed.push_back(std::move(st));
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return failed;
}

}  // namespace graft
