#include "runtime/cpu_engine.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/checked_math.h"
#include "plan/plan.h"
#include "runtime/cpu_executor.h"

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

class CpuEngine;

class CpuContext final : public ExecutionContext {
 public:
  explicit CpuContext(const CpuEngine& e) : engine_(e) {}
  Status run(const std::map<std::string, Tensor>& inputs, std::map<std::string, Tensor>& outputs) override;
  Status set_profile(int index) override;
  int profile() const override { return profile_.load(); }

 private:
  const CpuEngine& engine_;
  // Atomic: concurrent runs on one CPU context are allowed, and each reads the selection once.
  std::atomic<int> profile_{0};
};

std::string range_text(const ProfileRange& r) {
  return "min " + dims_to_string(r.min) + " opt " + dims_to_string(r.opt) + " max " + dims_to_string(r.max);
}

class CpuEngine final : public Engine, public std::enable_shared_from_this<CpuEngine> {
 public:
  explicit CpuEngine(EngineState s) : s_(std::move(s)) {
    const Graph& g = *s_.graph;
    // Last node index that reads each value; intermediates are freed right after it.
    for (size_t i = 0; i < g.nodes().size(); ++i)
      for (Value* v : g.nodes()[i]->inputs)
        if (v) last_use_[v] = i;
  }

  Result<std::string> serialize() const override { return write_plan_bytes(s_); }
  Status save_plan(const std::string& path) const override {
    auto bytes = serialize();
    if (!bytes) return std::move(bytes).take_status();
    return write_file_atomic(path, bytes.value());
  }
  std::vector<IOInfo> inputs() const override {
    std::vector<IOInfo> r;
    for (const Value* v : s_.graph->inputs()) r.push_back(io_info(*v, s_.profiles.at(0)));
    return r;
  }
  std::vector<IOInfo> outputs() const override {
    std::vector<IOInfo> r;
    for (const Value* v : s_.graph->outputs()) r.push_back(io_info(*v, s_.profiles.at(0)));
    return r;
  }
  DeviceType device() const override { return s_.device; }
  int num_profiles() const override { return static_cast<int>(s_.profiles.size()); }
  Result<OptimizationProfile> profile(int index) const override {
    GRAFT_RETURN_IF_ERROR(check_profile_index(index, s_.profiles.size()));
    return s_.profiles[static_cast<size_t>(index)];
  }

  std::string describe() const override {
    std::ostringstream os;
    os << "graft engine (graft " << version_string() << ", device " << device_name(s_.device)
       << (s_.fp16 ? ", fp16" : "") << ")\n";
    if (!s_.source.empty()) os << "built from: " << s_.source << "\n";
    os << "inputs:\n";
    for (const auto& io : inputs()) {
      os << "  " << io.name << ": " << dtype_name(io.dtype) << io.shape;
      if (s_.profiles.size() == 1) {
        if (io.profile) os << "  profile " << range_text(*io.profile);
        os << "\n";
        continue;
      }
      os << "\n";
      for (size_t k = 0; k < s_.profiles.size(); ++k) {
        auto it = s_.profiles[k].find(io.name);
        if (it != s_.profiles[k].end()) os << "    profile " << k << ": " << range_text(it->second) << "\n";
      }
    }
    if (s_.profiles.size() > 1)
      os << "optimization profiles: " << s_.profiles.size() << " (a context selects one: set_profile, "
         << "graft run --profile-index)\n";
    os << "outputs:\n";
    for (const auto& io : outputs()) os << "  " << io.name << ": " << dtype_name(io.dtype) << io.shape << "\n";
    os << "layers (" << s_.graph->nodes().size() << "):\n";
    for (const auto& n : s_.graph->nodes()) {
      os << "  " << n->name << " [" << (n->domain.empty() ? "" : n->domain + "::") << n->op_type << "] -> ";
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

  std::string describe_json() const override {
    using nlohmann::json;
    auto io_json = [](const IOInfo& io) {
      json j = {{"name", io.name}, {"dtype", dtype_name(io.dtype)}, {"shape", io.shape}, {"static_dims", io.static_dims}};
      if (io.profile) j["profile"] = {{"min", io.profile->min}, {"opt", io.profile->opt}, {"max", io.profile->max}};
      return j;
    };
    json j;
    j["graft_version"] = version_string();
    j["device"] = device_name(s_.device);
    j["fp16"] = s_.fp16;
    j["source"] = s_.source;
    j["inputs"] = json::array();
    for (const auto& io : inputs()) j["inputs"].push_back(io_json(io));
    // Every profile, index = position; each input's "profile" above is its range in profile 0.
    j["profiles"] = json::array();
    for (const OptimizationProfile& p : s_.profiles) {
      json pj = json::object();
      for (const auto& [name, r] : p) pj[name] = {{"min", r.min}, {"opt", r.opt}, {"max", r.max}};
      j["profiles"].push_back(std::move(pj));
    }
    j["outputs"] = json::array();
    for (const auto& io : outputs()) j["outputs"].push_back(io_json(io));
    j["layers"] = json::array();
    for (const auto& n : s_.graph->nodes()) {
      json l = {{"name", n->name}, {"op_type", n->op_type}, {"domain", n->domain}};
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

  Result<std::unique_ptr<ExecutionContext>> create_context() const override {
    return std::unique_ptr<ExecutionContext>(new CpuContext(*this));
  }

  const EngineState& state() const { return s_; }
  const std::map<const Value*, size_t>& last_use() const { return last_use_; }

 private:
  EngineState s_;
  std::map<const Value*, size_t> last_use_;
};

// True when t's bytes overlap the buffer of any of the caller's input tensors.
bool aliases_any_input(const Tensor& t, const std::map<std::string, Tensor>& inputs) {
  if (!t.data() || t.nbytes() == 0) return false;
  const auto* lo = static_cast<const char*>(t.data());
  const auto* hi = lo + t.nbytes();
  for (const auto& [name, in] : inputs) {
    if (!in.data()) continue;
    const auto* ilo = static_cast<const char*>(in.data());
    const auto* ihi = ilo + in.nbytes();
    if (lo < ihi && ilo < hi) return true;
  }
  return false;
}

Status CpuContext::run(const std::map<std::string, Tensor>& inputs, std::map<std::string, Tensor>& outputs) {
  const EngineState& s = engine_.state();
  const Graph& g = *s.graph;
  GRAFT_RETURN_IF_ERROR(check_input_names(g, inputs));
  std::map<const Value*, Tensor> live;
  SymbolBindings bindings;
  const int profile = profile_.load();
  for (const Value* v : g.inputs()) {
    auto it = inputs.find(v->name);
    if (it == inputs.end())
      return error(StatusCode::kInvalidArgument, "input '", v->name, "' (", v->desc.to_string(), ") was not given");
    if (!it->second.defined())
      return error(StatusCode::kInvalidArgument, "input '", v->name, "' is an empty tensor handle");
    GRAFT_RETURN_IF_ERROR(check_input(*v, it->second, s, profile, bindings));
    if (it->second.device() != DeviceType::kCPU)
      return error(StatusCode::kUnsupported, "input '", v->name, "' is on ", device_name(it->second.device()),
                   "; the CPU engine takes host tensors");
    live[v] = it->second;
  }
  const auto& last_use = engine_.last_use();
  std::set<const Value*> graph_outputs(g.outputs().begin(), g.outputs().end());
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = *g.nodes()[i];
    std::vector<const Tensor*> ins;
    for (const Value* v : n.inputs) {
      if (!v) { ins.push_back(nullptr); continue; }
      if (v->constant) { ins.push_back(&*v->constant); continue; }
      auto it = live.find(v);
      if (it == live.end())
        return error(StatusCode::kInternal, "value '", v->name, "' was not computed before use").with_node(n.name, n.op_type);
      ins.push_back(&it->second);
    }
    auto outs = run_node_cpu(n, ins);
    if (!outs) return std::move(outs).take_status();
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o]) live[n.outputs[o]] = std::move((*outs)[o]);
    // Free what no later node reads.
    for (const Value* v : n.inputs) {
      if (!v || v->constant || graph_outputs.count(v)) continue;
      auto lu = last_use.find(v);
      if (lu != last_use.end() && lu->second == i) live.erase(v);
    }
  }
  for (const Value* v : g.outputs()) {
    Tensor result;
    if (v->constant) result = *v->constant;
    else {
      auto it = live.find(v);
      if (it == live.end()) return error(StatusCode::kInternal, "graph output '", v->name, "' was not computed");
      result = it->second;
    }
    auto oit = outputs.find(v->name);
    if (!result.is_tensor()) {
      // A sequence's tensors may be the caller's own or the engine's constants: the caller gets copies.
      auto copy = result.try_clone();
      if (!copy) return std::move(copy).take_status();
      outputs[v->name] = std::move(copy).value();
      continue;
    }
    if (oit != outputs.end() && oit->second.defined() && oit->second.is_tensor() && oit->second.dtype() == result.dtype() &&
        oit->second.dims() == result.dims() && oit->second.device() == DeviceType::kCPU) {
      if (oit->second.data() != result.data()) std::memcpy(oit->second.data(), result.data(), result.nbytes());
    } else {
      // Constant outputs are shared with the engine: hand out a copy the caller may modify. An
      // output that is a graph input, or a view of one (Identity, Reshape, Squeeze...), would alias
      // memory the caller owns and may free as soon as run() returns (the Python binding wraps numpy
      // buffers without owning them): copy it too, so every returned output owns its memory.
      if (v->constant || aliases_any_input(result, inputs)) {
        auto copy = result.try_clone();
        if (!copy) return std::move(copy).take_status();
        outputs[v->name] = std::move(copy).value();
      } else {
        outputs[v->name] = result;
      }
    }
  }
  return Status::ok();
}

Status CpuContext::set_profile(int index) {
  GRAFT_RETURN_IF_ERROR(check_profile_index(index, engine_.state().profiles.size()));
  profile_.store(index);
  return Status::ok();
}

}  // namespace

Status check_profile_index(int index, size_t count) {
  if (index >= 0 && static_cast<size_t>(index) < count) return Status::ok();
  const std::string has = count == 1 ? std::string("1 profile (index 0)")
                                     : std::to_string(count) + " profiles (indices 0 to " + std::to_string(count - 1) + ")";
  return error(StatusCode::kInvalidArgument, "optimization profile ", index, " does not exist: this engine has ", has);
}

Status check_input_in_profile(const EngineState& st, int index, const Value& v, const std::vector<int64_t>& dims) {
  GRAFT_RETURN_IF_ERROR(check_profile_index(index, st.profiles.size()));
  const Shape& s = *v.desc.shape;
  // The dimensions of `dims` outside range `r` (only those the graph leaves dynamic: a fixed one was
  // checked against the model's shape already).
  auto outside = [&](const ProfileRange& r) -> std::optional<size_t> {
    for (size_t i = 0; i < s.size() && i < dims.size(); ++i)
      if (!s[i].is_const() && i < r.min.size() && i < r.max.size() && (dims[i] < r.min[i] || dims[i] > r.max[i]))
        return i;
    return std::nullopt;
  };
  const OptimizationProfile& selected = st.profiles[static_cast<size_t>(index)];
  auto it = selected.find(v.name);
  if (it == selected.end()) return Status::ok();
  const ProfileRange& r = it->second;
  const std::optional<size_t> bad = outside(r);
  if (!bad) return Status::ok();
  const bool several = st.profiles.size() > 1;
  std::string advice = "; rebuild with a profile whose min and max cover it";
  for (size_t k = 0; several && k < st.profiles.size(); ++k) {
    auto other = st.profiles[k].find(v.name);
    if (k != static_cast<size_t>(index) && other != st.profiles[k].end() && !outside(other->second)) {
      advice = "; profile " + std::to_string(k) + " covers it: select profile " + std::to_string(k);
      break;
    }
  }
  const size_t i = *bad;
  // One profile keeps the wording engines had before there were several.
  const std::string which = several ? "optimization profile " + std::to_string(index) : "the optimization profile";
  const std::string gives = several ? "profile " + std::to_string(index) + " gives '" + v.name + "' " : "profile ";
  return error(StatusCode::kInvalidArgument, "input '", v.name, "' has shape ", dims_to_string(dims), ": dimension ",
               static_cast<uint64_t>(i), " is ", dims[i], ", outside ", which, " [min ", r.min[i], ", max ", r.max[i],
               "] (", gives, range_text(r), ")", advice);
}

const EngineState* cpu_engine_state(const Engine& engine) {
  auto* e = dynamic_cast<const CpuEngine*>(&engine);
  return e ? &e->state() : nullptr;
}

Result<std::shared_ptr<Engine>> make_cpu_engine(EngineState state) {
  if (!state.graph) return error(StatusCode::kInternal, "engine without a graph");
  return std::shared_ptr<Engine>(std::make_shared<CpuEngine>(std::move(state)));
}

Status check_input(const Value& v, const Tensor& t, const EngineState& st, int profile, SymbolBindings& bindings) {
  const TensorDesc& d = v.desc;
  if (t.kind() != d.kind)
    return error(StatusCode::kInvalidArgument, "input '", v.name, "' expects a ", value_kind_name(d.kind), " (",
                 d.to_string(), ") but was given a ", value_kind_name(t.kind()));
  if (!d.is_tensor()) {
    // A container's tensors may have any shape (profiles cover tensors); dtype and rank as declared.
    if (d.dtype != DataType::kUndefined && t.dtype() != d.dtype)
      return error(StatusCode::kInvalidArgument, "input '", v.name, "' expects a ", value_kind_name(d.kind), " of ",
                   dtype_name(d.dtype), " but was given one of ", dtype_name(t.dtype()));
    // Inference took the declared shape for every tensor inside: each must have its rank and fixed dims.
    const std::vector<Tensor>* held = &t.items();
    if (t.kind() == ValueKind::kOptionalSequence && !held->empty()) held = &(*held)[0].items();
    for (size_t k = 0; d.shape && k < held->size(); ++k) {
      const std::vector<int64_t>& dims = (*held)[k].dims();
      bool ok = dims.size() == d.shape->size();
      for (size_t i = 0; ok && i < dims.size(); ++i) ok = !(*d.shape)[i].is_const() || (*d.shape)[i].value() == dims[i];
      if (!ok)
        return error(StatusCode::kInvalidArgument, "input '", v.name, "' expects ", d.to_string(), " but tensor ",
                     static_cast<uint64_t>(k), " it holds has shape ", dims_to_string(dims));
    }
    return Status::ok();
  }
  if (t.dtype() != d.dtype)
    return error(StatusCode::kInvalidArgument, "input '", v.name, "' expects dtype ", dtype_name(d.dtype),
                 " but was given ", dtype_name(t.dtype()));
  const Shape& s = *d.shape;
  // A caller's tensor (Tensor::wrap) may claim any dims: one whose element or byte count overflows
  // int64 would make every size computed from it wrap.
  if (!checked_nbytes(t.dims(), dtype_size(t.dtype())))
    return error(StatusCode::kInvalidArgument, "input '", v.name, "' has shape ", dims_to_string(t.dims()),
                 ", with a negative dimension or more elements or bytes than fit in a 64-bit integer");
  if (static_cast<size_t>(t.rank()) != s.size())
    return error(StatusCode::kInvalidArgument, "input '", v.name, "' expects rank ",
                 static_cast<uint64_t>(s.size()), " (shape ", shape_to_string(s), ") but was given shape ",
                 dims_to_string(t.dims()));
  for (size_t i = 0; i < s.size(); ++i) {
    int64_t given = t.dims()[i];
    if (s[i].is_const()) {
      if (given != s[i].value())
        return error(StatusCode::kInvalidArgument, "input '", v.name, "' dimension ", static_cast<uint64_t>(i),
                     " must be ", s[i].value(), " (shape ", shape_to_string(s), ") but was given ", given,
                     " (shape ", dims_to_string(t.dims()), ")");
      continue;
    }
    if (s[i].is_symbol()) {
      auto [it, inserted] = bindings.emplace(s[i].symbol_name(), given);
      if (!inserted && it->second != given)
        return error(StatusCode::kInvalidArgument, "input '", v.name, "' dimension ", static_cast<uint64_t>(i),
                     " ('", s[i].symbol_name(), "') is ", given, " but another input set '",
                     s[i].symbol_name(), "' to ", it->second);
    }
  }
  return check_input_in_profile(st, profile, v, t.dims());
}

}  // namespace graft
