#include "plan/tactics.h"

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "plan/plan.h"  // write_file_atomic

namespace graft {

std::optional<Tactic> TacticTable::find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) return std::nullopt;
  return it->second;
}

void TacticTable::put(const std::string& key, const Tactic& t) {
  std::lock_guard<std::mutex> lock(mu_);
  map_[key] = t;
}

size_t TacticTable::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_.size();
}

std::map<std::string, Tactic> TacticTable::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_;
}

void TacticTable::note_layer(const std::string& layer, const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  layers_[layer].insert(key);
}

std::map<std::string, std::set<std::string>> TacticTable::layers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return layers_;
}

// Names are the graph's (valid UTF-8, checked at import); `replace` keeps any other byte from throwing.
std::string TacticTable::layers_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [layer, keys] : layers()) j[layer] = keys;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Status TacticTable::read_layers_json(const std::string& text, const std::string& what) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return error(StatusCode::kInvalidArgument, what, ": the layers' tactic keys must be a JSON object");
  std::map<std::string, std::set<std::string>> read;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_array())
      return error(StatusCode::kInvalidArgument, what, ": the tactic keys of layer '", it.key(), "' are not a list");
    for (const auto& k : it.value()) {
      if (!k.is_string())
        return error(StatusCode::kInvalidArgument, what, ": a tactic key of layer '", it.key(), "' is not a string");
      read[it.key()].insert(k.get<std::string>());
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [layer, keys] : read) layers_[layer].insert(keys.begin(), keys.end());
  return Status::ok();
}

namespace {

nlohmann::json entries_json(const std::map<std::string, Tactic>& m) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, t] : m) j[k] = {{"algo", t.algo}, {"variant", t.variant}, {"ms", t.ms}};
  return j;
}

// An int-valued field: absent (the default), or a JSON integer that fits in int.
bool int_field(const nlohmann::json& e, const char* key, int fallback, int* out) {
  auto it = e.find(key);
  if (it == e.end()) {
    *out = fallback;
    return true;
  }
  if (it->is_number_unsigned()) {
    const uint64_t v = it->get<uint64_t>();
    if (v > static_cast<uint64_t>(std::numeric_limits<int>::max())) return false;
    *out = static_cast<int>(v);
    return true;
  }
  if (!it->is_number_integer()) return false;
  const int64_t v = it->get<int64_t>();
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) return false;
  *out = static_cast<int>(v);
  return true;
}

// A cache or a plan is untrusted: every field is type- and range-checked (nlohmann-json's get<>()
// and value() would throw type_error, or narrow out-of-range numbers, on a damaged file).
Status read_entries(const nlohmann::json& j, const std::string& what, TacticTable* out) {
  if (!j.is_object()) return error(StatusCode::kInvalidArgument, what, ": tactic entries must be a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const nlohmann::json& e = it.value();
    Tactic t;
    const bool ok = e.is_object() && e.contains("algo") && int_field(e, "algo", -1, &t.algo) &&
                    int_field(e, "variant", 0, &t.variant) && (!e.contains("ms") || e["ms"].is_number());
    if (!ok)
      return error(StatusCode::kInvalidArgument, what, ": tactic entry '", it.key(), "' is malformed");
    if (e.contains("ms")) t.ms = e["ms"].get<double>();
    out->put(it.key(), t);
  }
  return Status::ok();
}

}  // namespace

// Keys hold node names (UTF-8, checked at import); `replace` keeps any other byte from throwing.
std::string TacticTable::to_json() const {
  return entries_json(snapshot()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<TacticTable> TacticTable::from_json(const std::string& text, const std::string& what) {
  try {
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded()) return error(StatusCode::kInvalidArgument, what, ": tactics are not valid JSON");
    TacticTable t;
    GRAFT_RETURN_IF_ERROR(read_entries(j, what, &t));
    return t;
  } catch (const std::bad_alloc&) {
    return error(StatusCode::kOutOfMemory, what, ": out of memory reading the tactics");
  } catch (const std::exception& e) {
    return error(StatusCode::kInvalidArgument, what, ": tactics are malformed: ", e.what());
  }
}

Result<TacticTable> TacticTable::parse_cache(const std::string& text, const std::string& name) {
  // Untrusted bytes: no exception may leave this Status API, and every field is type-checked.
  try {
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    auto format = j.is_object() ? j.find("format") : j.end();
    if (j.is_discarded() || !j.is_object() || format == j.end() || !format->is_string() ||
        format->get_ref<const std::string&>() != "graft-timing-cache")
      return error(StatusCode::kInvalidArgument,
                   "not a graft timing cache (expected JSON with \"format\": \"graft-timing-cache\"); delete it or "
                   "give another timing cache path")
          .with_file(name);
    auto version = j.find("version");
    if (version == j.end() || !version->is_number_integer() || version->get<int64_t>() != 1)
      return error(StatusCode::kInvalidArgument, "timing cache version ",
                   version == j.end() ? std::string("(none)")
                                      : version->dump(-1, ' ', true, nlohmann::json::error_handler_t::replace),
                   " is not readable by this graft (reads version 1); delete the file to rebuild it")
          .with_file(name);
    TacticTable t;
    Status s = read_entries(j.contains("entries") ? j["entries"] : nlohmann::json::object(), "timing cache", &t);
    if (!s) return s.with_file(name);
    return t;
  } catch (const std::bad_alloc&) {
    return error(StatusCode::kOutOfMemory, "out of memory reading the timing cache").with_file(name);
  } catch (const std::exception& e) {
    return error(StatusCode::kInvalidArgument, "the timing cache is malformed: ", e.what()).with_file(name);
  }
}

Result<TacticTable> TacticTable::load_cache_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return TacticTable{};
  std::ifstream in(path, std::ios::binary);
  if (!in) return error(StatusCode::kIoError, "cannot open the timing cache").with_file(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_cache(ss.str(), path);
}

Status TacticTable::save_cache_file(const std::string& path) const {
  nlohmann::json j;
  j["format"] = "graft-timing-cache";
  j["version"] = 1;
  j["entries"] = entries_json(snapshot());
  return write_file_atomic(path, j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace graft
