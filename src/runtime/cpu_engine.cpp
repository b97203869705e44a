#include "runtime/cpu_engine.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <optional>
#include <set>

#include "core/checked_math.h"
#include "plan/plan.h"
#include "runtime/cpu_executor.h"
#include "runtime/engine_description.h"

namespace graft {

namespace {

std::string dims_to_string(const std::vector<int64_t>& d) {
  return shape_to_string(shape_from_values(d));
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
  Status save_plan(const std::string& path) const override { return save_engine_plan(s_, path); }
  std::vector<IOInfo> inputs() const override { return engine_inputs(s_); }
  std::vector<IOInfo> outputs() const override { return engine_outputs(s_); }
  DeviceType device() const override { return s_.device; }
  int num_profiles() const override { return static_cast<int>(s_.profiles.size()); }
  Result<OptimizationProfile> profile(int index) const override { return engine_profile(s_, index); }
  std::string describe() const override { return describe_engine(s_); }
  std::string describe_json() const override { return describe_engine_json(s_); }

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
      GRAFT_RETURN_IF_ERROR(oit->second.copy_data_from(result));
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
