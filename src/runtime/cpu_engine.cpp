#include "runtime/cpu_engine.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <optional>
#include <set>

#include "plan/plan.h"
#include "runtime/cpu_executor.h"
#include "runtime/engine_description.h"
#include "runtime/input_checks.h"

namespace graft {

namespace {

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

Result<std::shared_ptr<Engine>> make_cpu_engine(EngineState state) {
  if (!state.graph) return error(StatusCode::kInternal, "engine without a graph");
  return std::shared_ptr<Engine>(std::make_shared<CpuEngine>(std::move(state)));
}

}  // namespace graft
