#include "runtime/engine_description.h"

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "ops/internal_ops.h"
#include "plan/plan.h"
#include "plan/tactics.h"
#include "runtime/input_checks.h"

namespace graft {

namespace {

std::string dims_to_string(const std::vector<int64_t>& d) {
  return shape_to_string(shape_from_values(d));
}

IOInfo io_info(const Value& v, const OptimizationProfile& profile) {
  IOInfo info;
  info.name = v.name;
  info.dtype = v.desc.dtype;
  info.shape = v.desc.shape ? shape_to_string(*v.desc.shape) : "[?]";
  if (v.desc.shape)
    for (const Dim& d : *v.desc.shape) info.static_dims.push_back(d.is_const() ? d.value() : -1);
  auto it = profile.find(v.name);
  if (it != profile.end()) info.profile = it->second;
  return info;
}

// A float as JSON: a number, or "nan", "inf" or "-inf" (which JSON numbers cannot hold).
nlohmann::json float_json(double f) {
  if (std::isfinite(f)) return f;
  return std::isnan(f) ? "nan" : f > 0 ? "inf" : "-inf";
}

// An attribute value as typed JSON (describe_json): ints and floats as numbers, strings as strings,
// lists as arrays, a tensor as {"dtype", "shape"} with its "values" when it has at most 64 elements.
nlohmann::json attr_value_json(const AttrValue& v) {
  using nlohmann::json;
  switch (attr_type_of(v)) {
    case AttrType::kFloat: return float_json(std::get<float>(v));
    case AttrType::kInt: return std::get<int64_t>(v);
    case AttrType::kString: return std::get<std::string>(v);
    case AttrType::kFloats: {
      json a = json::array();
      for (float f : std::get<std::vector<float>>(v)) a.push_back(float_json(f));
      return a;
    }
    case AttrType::kInts: return std::get<std::vector<int64_t>>(v);
    case AttrType::kStrings: return std::get<std::vector<std::string>>(v);
    case AttrType::kTensor: {
      const Tensor& t = std::get<Tensor>(v);
      json j = {{"dtype", dtype_name(t.dtype())}, {"shape", t.dims()}};
      if (t.numel() <= 64 && t.device() == DeviceType::kCPU && t.data()) {
        json values = json::array();
        const bool is_float = dtype_is_float(t.dtype());
        for (int64_t i = 0; i < t.numel(); ++i) {
          if (is_float) values.push_back(float_json(t.get(i)));
          else values.push_back(static_cast<int64_t>(t.get(i)));
        }
        j["values"] = values;
      }
      return j;
    }
  }
  return attr_value_to_string(v);
}

}  // namespace

std::string range_text(const ProfileRange& r) {
  return "min " + dims_to_string(r.min) + " opt " + dims_to_string(r.opt) + " max " + dims_to_string(r.max);
}

std::vector<IOInfo> engine_inputs(const EngineState& state) {
  std::vector<IOInfo> r;
  for (const Value* v : state.graph->inputs()) r.push_back(io_info(*v, state.profiles.at(0)));
  return r;
}

std::vector<IOInfo> engine_outputs(const EngineState& state) {
  std::vector<IOInfo> r;
  for (const Value* v : state.graph->outputs()) r.push_back(io_info(*v, state.profiles.at(0)));
  return r;
}

Result<OptimizationProfile> engine_profile(const EngineState& state, int index) {
  GRAFT_RETURN_IF_ERROR(check_profile_index(index, state.profiles.size()));
  return state.profiles[static_cast<size_t>(index)];
}

Status save_engine_plan(const EngineState& state, const std::string& path) {
  auto bytes = write_plan_bytes(state);
  if (!bytes) return std::move(bytes).take_status();
  return write_file_atomic(path, bytes.value());
}

std::string describe_engine(const EngineState& state) {
  std::ostringstream os;
  os << "graft engine (graft " << version_string() << ", device " << device_name(state.device)
     << (state.fp16 ? ", fp16" : "") << ")\n";
  if (!state.source.empty()) os << "built from: " << state.source << "\n";
  os << "inputs:\n";
  for (const auto& io : engine_inputs(state)) {
    os << "  " << io.name << ": " << dtype_name(io.dtype) << io.shape;
    if (state.profiles.size() == 1) {
      if (io.profile) os << "  profile " << range_text(*io.profile);
      os << "\n";
      continue;
    }
    os << "\n";
    for (size_t k = 0; k < state.profiles.size(); ++k) {
      auto it = state.profiles[k].find(io.name);
      if (it != state.profiles[k].end()) os << "    profile " << k << ": " << range_text(it->second) << "\n";
    }
  }
  if (state.profiles.size() > 1)
    os << "optimization profiles: " << state.profiles.size() << " (a context selects one: set_profile, "
       << "graft run --profile-index)\n";
  os << "outputs:\n";
  for (const auto& io : engine_outputs(state)) os << "  " << io.name << ": " << dtype_name(io.dtype) << io.shape << "\n";
  os << "layers (" << state.graph->nodes().size() << "):\n";
  for (const auto& n : state.graph->nodes()) {
    // Internal ops' names (Graft...) are unique without their domain.
    const bool plain = n->domain.empty() || n->domain == kInternalDomain;
    os << "  " << n->name << " [" << (plain ? "" : n->domain + "::") << n->op_type << "] -> ";
    bool first = true;
    for (const Value* v : n->outputs) {
      if (!v) continue;
      os << (first ? "" : ", ") << v->name << " " << v->desc.to_string();
      first = false;
    }
    os << "\n";
    if (n->custom_op) {
      const OpIdentity& id = n->custom_op->identity();
      os << "      custom op " << id.name << " (domain " << id.domain << ", version " << id.version
         << ", namespace '" << id.plugin_namespace << "')\n";
      for (const auto& [k, v] : n->attrs.all()) os << "      " << k << " = " << attr_value_to_string(v) << "\n";
    }
  }
  return os.str();
}

std::string describe_engine_json(const EngineState& state) {
  using nlohmann::json;
  auto io_json = [](const IOInfo& io) {
    json j = {{"name", io.name}, {"dtype", dtype_name(io.dtype)}, {"shape", io.shape}, {"static_dims", io.static_dims}};
    if (io.profile) j["profile"] = {{"min", io.profile->min}, {"opt", io.profile->opt}, {"max", io.profile->max}};
    return j;
  };
  json j;
  j["graft_version"] = version_string();
  j["device"] = device_name(state.device);
  j["fp16"] = state.fp16;
  j["source"] = state.source;
  j["inputs"] = json::array();
  for (const auto& io : engine_inputs(state)) j["inputs"].push_back(io_json(io));
  // Every profile, index = position; each input's "profile" above is its range in profile 0.
  j["profiles"] = json::array();
  for (const OptimizationProfile& p : state.profiles) {
    json pj = json::object();
    for (const auto& [name, r] : p) pj[name] = {{"min", r.min}, {"opt", r.opt}, {"max", r.max}};
    j["profiles"].push_back(std::move(pj));
  }
  j["outputs"] = json::array();
  for (const auto& io : engine_outputs(state)) j["outputs"].push_back(io_json(io));
  j["layers"] = json::array();
  // The tactics each layer asked about while the engine was tuned (CUDA engines; TacticTable::layers).
  const std::map<std::string, std::set<std::string>> tactic_layers =
      state.tactics ? state.tactics->layers() : std::map<std::string, std::set<std::string>>{};
  for (const auto& n : state.graph->nodes()) {
    json l = {{"name", n->name}, {"op_type", n->op_type}, {"domain", n->domain}};
    if (auto it = tactic_layers.find(n->name); it != tactic_layers.end()) {
      l["tactics"] = json::array();
      for (const std::string& key : it->second) {
        json t = {{"key", key}};
        if (auto chosen = state.tactics->find(key))
          t.update({{"algo", chosen->algo}, {"variant", chosen->variant}, {"ms", chosen->ms}});
        l["tactics"].push_back(std::move(t));
      }
    }
    l["inputs"] = json::array();
    for (const Value* v : n->inputs) l["inputs"].push_back(v ? v->name : "");
    l["outputs"] = json::array();
    for (const Value* v : n->outputs) {
      if (!v) continue;
      l["outputs"].push_back({{"name", v->name},
                              {"dtype", dtype_name(v->desc.dtype)},
                              {"shape", v->desc.shape ? shape_to_string(*v->desc.shape) : "[?]"}});
    }
    json attrs = json::object();
    for (const auto& [k, v] : n->attrs.all()) attrs[k] = attr_value_json(v);
    l["attributes"] = attrs;
    if (n->custom_op) {
      const OpIdentity& id = n->custom_op->identity();
      l["custom_op"] = {{"name", id.name}, {"domain", id.domain}, {"version", id.version},
                        {"namespace", id.plugin_namespace}};
    }
    j["layers"].push_back(l);
  }
  // Names are valid UTF-8 (the importer checks them), but attribute values and the source path
  // may hold any bytes: replace invalid sequences instead of throwing json's type_error 316.
  return j.dump(2, ' ', false, json::error_handler_t::replace);
}

}  // namespace graft
