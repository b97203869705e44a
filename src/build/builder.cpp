// The builder: plugins -> import -> optimization profile -> passes -> Engine.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "build/build_graph.h"
#include "build/device_passes.h"
#include "graft/registry.h"
#include "graph/passes.h"
#include "onnx/importer.h"
#include "plan/engine_state.h"
#include "plan/tactics.h"
#include "runtime/cpu_executor.h"
#include "runtime/device_engine.h"
#include "runtime/tactic_timing.h"

namespace graft {

namespace {

std::string input_names(const Graph& g) {
  std::string names;
  for (const Value* in : g.inputs()) names += (names.empty() ? "" : ", ") + in->name;
  return names;
}

std::string dims_string(const std::vector<int64_t>& d) { return shape_to_string(shape_from_values(d)); }

// The profile the build uses: the given one, then a fixed shape (min = opt = max) for each dynamic
// input it does not name, from the input's sample (config.sample_shapes), else from
// config.unspecified_shape. Inputs that end up static through another input's fixed symbol (two
// inputs sharing "batch") are left alone.
Result<OptimizationProfile> complete_profile(const Graph& g, const BuilderConfig& config, OptimizationProfile given) {
  for (const auto& [name, dims] : config.sample_shapes) {
    const Value* v = g.find_value(name);
    if (!v || !v->is_graph_input)
      return error(StatusCode::kInvalidArgument, "the sample input '", name,
                   "' is not an input of the model (inputs: ", input_names(g), ")");
    if (!v->desc.is_tensor()) continue;  // sequences and optionals take any shapes: no profile
    const Shape& s = *v->desc.shape;
    if (given.count(name) || shape_is_static(s)) continue;
    if (dims.size() != s.size())
      return error(StatusCode::kInvalidArgument, "input '", name, "' has shape ", shape_to_string(s),
                   " (rank ", static_cast<uint64_t>(s.size()), ") but its sample has shape ", dims_string(dims),
                   " (rank ", static_cast<uint64_t>(dims.size()), ")");
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i].is_const() && s[i].value() != dims[i])
        return error(StatusCode::kInvalidArgument, "input '", name, "' has shape ", shape_to_string(s),
                     " but its sample has shape ", dims_string(dims), " (dimension ", static_cast<uint64_t>(i),
                     " must be ", s[i].value(), ")");
    given[name] = ProfileRange{dims, dims, dims};
  }
  // The ranges the given shapes set for each symbol, so an input that shares a symbol ("batch")
  // with a given input follows it rather than needing a shape of its own.
  std::map<std::string, std::array<int64_t, 3>> symbols;
  for (const Value* v : g.inputs()) {
    auto it = given.find(v->name);
    if (it == given.end() || !v->desc.is_tensor()) continue;
    const Shape& s = *v->desc.shape;
    const ProfileRange& r = it->second;
    for (size_t i = 0; i < s.size() && i < r.min.size() && i < r.opt.size() && i < r.max.size(); ++i)
      if (s[i].is_symbol()) symbols.emplace(s[i].symbol_name(), std::array<int64_t, 3>{r.min[i], r.opt[i], r.max[i]});
  }
  for (const Value* v : g.inputs()) {
    if (given.count(v->name) || !v->desc.is_tensor()) continue;
    const Shape& s = *v->desc.shape;
    if (shape_is_static(s)) continue;
    ProfileRange derived;
    IOInfo info;
    info.name = v->name;
    info.dtype = v->desc.dtype;
    info.shape = shape_to_string(s);
    bool unknown = false;
    for (const Dim& d : s) {
      std::array<int64_t, 3> r{-1, -1, -1};
      if (d.is_const()) r = {d.value(), d.value(), d.value()};
      else if (d.is_symbol() && symbols.count(d.symbol_name())) r = symbols.at(d.symbol_name());
      unknown |= r[0] < 0;
      derived.min.push_back(r[0]);
      derived.opt.push_back(r[1]);
      derived.max.push_back(r[2]);
      info.static_dims.push_back(r[0] == r[2] ? r[0] : -1);
    }
    if (unknown) {
      if (!config.unspecified_shape)
        return error(StatusCode::kInvalidArgument, "input '", v->name, "' has dynamic shape ", shape_to_string(s),
                     ": give it an optimization profile (min, opt and max shapes), a fixed shape or a sample input");
      auto dims = config.unspecified_shape(info);
      if (!dims) return std::move(dims).take_status();
      if (dims->size() != s.size())
        return error(StatusCode::kInvalidArgument, "input '", v->name, "' has shape ", shape_to_string(s),
                     " but was given the shape ", dims_string(*dims));
      // Dimensions that follow another input's range keep it; the rest take the returned values.
      for (size_t i = 0; i < s.size(); ++i)
        if (derived.min[i] < 0) derived.min[i] = derived.opt[i] = derived.max[i] = (*dims)[i];
      // Symbols fixed here hold for the inputs after this one too.
      for (size_t i = 0; i < s.size(); ++i)
        if (s[i].is_symbol()) symbols.emplace(s[i].symbol_name(), std::array<int64_t, 3>{derived.min[i], derived.opt[i], derived.max[i]});
    }
    given[v->name] = derived;
  }
  return given;
}

// The profiles a config asks for: `profiles`, else `profile` alone as profile 0.
Result<std::vector<OptimizationProfile>> requested_profiles(const BuilderConfig& config) {
  if (config.profiles.empty()) return std::vector<OptimizationProfile>{config.profile};
  if (!config.profile.empty())
    return error(StatusCode::kInvalidArgument, "the builder config sets both profile (",
                 static_cast<uint64_t>(config.profile.size()), " inputs) and profiles (",
                 static_cast<uint64_t>(config.profiles.size()),
                 " profiles): give profile 0 as the first entry of profiles and leave profile empty");
  return config.profiles;
}

// "the profile" for an engine with one, "profile k" when there are several: errors name the index.
std::string profile_label(size_t k, size_t count) {
  return count == 1 ? std::string("the profile") : "profile " + std::to_string(k);
}

// Every profile gives a range to the same inputs (TensorRT's rule): one an input is missing from is
// refused, naming the profile, the input and a profile that gives it.
Status check_same_inputs(const std::vector<OptimizationProfile>& profiles) {
  for (size_t k = 0; k < profiles.size(); ++k)
    for (size_t other = 0; other < profiles.size(); ++other)
      for (const auto& entry : profiles[other])
        if (!profiles[k].count(entry.first))
          return error(StatusCode::kInvalidArgument, "profile ", static_cast<uint64_t>(k),
                       " gives no shapes for input '", entry.first, "', which profile ", static_cast<uint64_t>(other),
                       " gives: every optimization profile needs min, opt and max shapes for the same inputs");
  return Status::ok();
}

// Checks one completed profile against the graph inputs (ranks, 0 <= min <= opt <= max, the model's
// fixed dims) and collects the symbols it fixes (min == max) into *fixed.
Status check_profile(const Graph& g, const OptimizationProfile& given, const std::string& label,
                     SymbolBindings* fixed) {
  for (const Value* v : g.inputs()) {
    auto it = given.find(v->name);
    if (it == given.end()) continue;
    if (!v->desc.is_tensor())
      return error(StatusCode::kInvalidArgument, label, " gives shapes for input '", v->name, "', a ",
                   value_kind_name(v->desc.kind), ": profiles cover tensor inputs only");
    const ProfileRange& r = it->second;
    const Shape& s = *v->desc.shape;
    if (r.min.size() != s.size() || r.opt.size() != s.size() || r.max.size() != s.size())
      return error(StatusCode::kInvalidArgument, label, " for input '", v->name, "' has rank min ",
                   static_cast<uint64_t>(r.min.size()), "/opt ", static_cast<uint64_t>(r.opt.size()), "/max ",
                   static_cast<uint64_t>(r.max.size()), " but the input has shape ", shape_to_string(s));
    for (size_t i = 0; i < s.size(); ++i) {
      if (!(r.min[i] <= r.opt[i] && r.opt[i] <= r.max[i]) || r.min[i] < 0)
        return error(StatusCode::kInvalidArgument, label, " for input '", v->name, "' dimension ",
                     static_cast<uint64_t>(i), " needs 0 <= min <= opt <= max, got min ", r.min[i], " opt ",
                     r.opt[i], " max ", r.max[i]);
      if (s[i].is_const() && (r.min[i] != s[i].value() || r.max[i] != s[i].value()))
        return error(StatusCode::kInvalidArgument, label, " for input '", v->name, "' dimension ",
                     static_cast<uint64_t>(i), " is fixed at ", s[i].value(), " in the model (shape ",
                     shape_to_string(s), ") but ", label, " gives min ", r.min[i], " max ", r.max[i]);
      if (s[i].is_symbol() && r.min[i] == r.max[i]) {
        auto [fit, inserted] = fixed->emplace(s[i].symbol_name(), r.min[i]);
        if (!inserted && fit->second != r.min[i])
          return error(StatusCode::kInvalidArgument, "dimension '", s[i].symbol_name(), "' is fixed to ",
                       fit->second, " by one input and to ", r.min[i], " by input '", v->name, "'",
                       label == "the profile" ? std::string() : " in " + label);
      }
    }
  }
  return Status::ok();
}

// Checks the profiles against the graph inputs, substitutes the dimensions every profile fixes to
// the same value (min == max), and records each profile's range for every input that stays dynamic.
Status apply_profiles(Graph& g, const BuilderConfig& config, std::vector<OptimizationProfile>* out) {
  GRAFT_ASSIGN_OR_RETURN(std::vector<OptimizationProfile> requested, requested_profiles(config));
  const size_t n = requested.size();
  for (size_t k = 0; k < n; ++k)
    for (const auto& [name, r] : requested[k]) {
      const Value* v = g.find_value(name);
      if (!v || !v->is_graph_input)
        return error(StatusCode::kInvalidArgument, profile_label(k, n), " names '", name,
                     "', which is not an input of the model (inputs: ", input_names(g), ")");
    }
  if (n > 1) GRAFT_RETURN_IF_ERROR(check_same_inputs(requested));
  std::vector<OptimizationProfile> given;
  std::optional<SymbolBindings> fixed;  // the symbols every profile fixes, to the same value
  for (size_t k = 0; k < n; ++k) {
    auto completed = complete_profile(g, config, requested[k]);
    if (!completed) return std::move(completed).take_status();
    SymbolBindings fixed_here;
    GRAFT_RETURN_IF_ERROR(check_profile(g, *completed, profile_label(k, n), &fixed_here));
    if (!fixed) {
      fixed = std::move(fixed_here);
    } else {
      for (auto it = fixed->begin(); it != fixed->end();) {
        auto here = fixed_here.find(it->first);
        it = here != fixed_here.end() && here->second == it->second ? std::next(it) : fixed->erase(it);
      }
    }
    given.push_back(std::move(completed).value());
  }
  for (Value* v : g.inputs()) {
    if (!v->desc.is_tensor()) continue;
    Shape& s = *v->desc.shape;
    for (Dim& d : s)
      if (d.is_symbol()) {
        auto f = fixed->find(d.symbol_name());
        if (f != fixed->end()) d = Dim(f->second);
      }
  }
  out->assign(n, OptimizationProfile{});
  for (Value* v : g.inputs()) {
    if (!v->desc.is_tensor() || shape_is_static(*v->desc.shape)) continue;
    for (size_t k = 0; k < n; ++k) {
      auto it = given[k].find(v->name);
      if (it == given[k].end())
        return error(StatusCode::kInvalidArgument, "input '", v->name, "' has dynamic shape ",
                     shape_to_string(*v->desc.shape),
                     ": give it an optimization profile (min, opt and max shapes) or a fixed shape");
      (*out)[k][v->name] = it->second;
    }
  }
  return Status::ok();
}

void report(const BuilderConfig& c, const std::string& stage, const std::string& detail) {
  if (c.progress) c.progress(stage, detail);
}

Result<std::shared_ptr<Engine>> build(Result<std::unique_ptr<Graph>> imported, const BuilderConfig& config,
                                      const std::string& name) {
  if (!imported) return std::move(imported).take_status();
  EngineState st;
  st.graph = std::move(imported).value();
  st.device = config.device;
  st.fp16 = config.fp16 && config.device == DeviceType::kCUDA;  // the CPU engine has no float16 kernels
  st.source = name;
  st.cuda_graphs = config.cuda_graphs;
  Graph& g = *st.graph;
  report(config, "import", std::to_string(g.nodes().size()) + " nodes, " + std::to_string(g.inputs().size()) +
                               " inputs, " + std::to_string(g.outputs().size()) + " outputs");
  if (!config.layer_precisions.empty()) {
    const std::string& c = config.precision_constraints;
    if (c != "obey" && c != "prefer" && c != "none")
      return error(StatusCode::kInvalidArgument, "precision constraints must be obey, prefer or none, got '", c, "'");
    auto held = apply_layer_precisions(g, config.layer_precisions, st.fp16);
    if (!held) return std::move(held).take_status().with_file(name);
    if (c == "none") {
      for (const auto& n : g.nodes()) n->precision = DataType::kUndefined;
      report(config, "layer precisions", "checked against the model; ignored (precision constraints 'none')");
    } else {
      report(config, "layer precisions", std::to_string(*held) + " layers held (" + c + ")");
    }
  }
  Status s = apply_profiles(g, config, &st.profiles);
  if (!s) return s.with_file(name);
  report(config, "profile", std::to_string(st.profiles[0].size()) + " dynamic inputs" +
                                (st.profiles.size() > 1 ? ", " + std::to_string(st.profiles.size()) + " profiles" : ""));

  int removed = remove_identities(g);
  report(config, "remove identities", std::to_string(removed) + " removed");
  // Inference and folding alternate until nothing more folds: a folded value can make a later
  // shape static (Pad by a window remainder, then Shape of the padded tensor), and that shape's
  // arithmetic folds only in the next round.
  // An If whose condition folded to a constant becomes its branch's nodes, which the next round
  // infers and folds like the rest.
  constexpr int kMaxFoldRounds = 8;
  int folded_total = 0, inlined_total = 0, rounds = 0;
  for (; rounds < kMaxFoldRounds; ++rounds) {
    s = infer_shapes(g);
    if (!s) return s.with_file(name);
    auto folded = fold_constants(g, run_node_cpu);  // folding runs the CPU reference kernels
    if (!folded) return std::move(folded).take_status().with_file(name);
    auto inlined = inline_constant_ifs(g);
    if (!inlined) return std::move(inlined).take_status().with_file(name);
    folded_total += *folded;
    inlined_total += *inlined;
    if (*folded == 0 && *inlined == 0) break;
  }
  report(config, "shape inference", "done");
  report(config, "fold constants", std::to_string(folded_total) + " nodes folded in " +
                                       std::to_string(std::min(rounds + 1, kMaxFoldRounds)) + " rounds" +
                                       (inlined_total ? ", " + std::to_string(inlined_total) + " Ifs with a constant condition inlined" : ""));
  auto bn = fold_batchnorm(g);
  if (!bn) return std::move(bn).take_status().with_file(name);
  report(config, "fold batchnorm", std::to_string(*bn) + " folded");
  int dead = eliminate_dead_nodes(g);
  report(config, "dead-node elimination", std::to_string(dead) + " removed");
  s = infer_shapes(g);
  if (!s) return s.with_file(name);
  // Again with every dtype and folded constant known: Casts to the type their input already has,
  // Pads by zero and Slices of whole axes.
  if (int copies = remove_identities(g)) {
    report(config, "remove identities", std::to_string(copies) + " same-type casts, zero pads and whole slices removed");
    s = infer_shapes(g);
    if (!s) return s.with_file(name);
  }
  // The device's passes (src/build/device_passes.cpp: fusion, FP16 precision, layout) and its runtime.
  s = run_device_passes(st, config);
  if (!s) return s.with_file(name);
  report(config, "done", std::to_string(g.nodes().size()) + " layers");
  return make_engine_for_device(std::move(st), &config);
}

Status load_plugins(const BuilderConfig& config) {
  for (const auto& lib : config.plugin_libraries) {
    Status s = load_plugin_library(lib);
    if (!s) return s;
    report(config, "plugins", "loaded " + lib);
  }
  return Status::ok();
}

// Median wall time of one run of `engine` on random inputs at the profile's opt shapes (warm-up
// first: the CUDA engine captures its graph on the second run). A CUDA engine is timed with its
// inputs and outputs resident on the GPU, as a deployed engine is fed: host copies would make a
// batch-32 image model's timing mostly PCIe traffic, the same for every candidate.
// The median run time at each distinct profile point (opt, min, max of every profile), summed: a
// variant is kept for the whole range the profiles serve, not for one opt shape alone.
Result<double> time_engine(const Engine& engine) {
  GRAFT_ASSIGN_OR_RETURN(auto ctx, engine.create_context());
  double total = 0;
  for (TimingPoint point : distinct_profile_points(engine)) {
    GRAFT_RETURN_IF_ERROR(ctx->set_profile(point.profile));  // a later profile's shapes lie outside profile 0
    GRAFT_ASSIGN_OR_RETURN(auto inputs, timing_inputs(engine, point));
    if (engine.device() == DeviceType::kCUDA) {
      for (auto& [name, t] : inputs) {
        GRAFT_ASSIGN_OR_RETURN(t, t.to_device());
      }
    }
    std::map<std::string, Tensor> outs;
    for (int i = 0; i < 5; ++i) GRAFT_RETURN_IF_ERROR(ctx->run(inputs, outs));
    std::vector<double> ms;
    for (int i = 0; i < 25; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      GRAFT_RETURN_IF_ERROR(ctx->run(inputs, outs));
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    total += ms[ms.size() / 2];
  }
  return total;
}

// CUDA models with convolutions, default options (layout "auto", fusion on): which engine is fastest
// depends on the model and the batch: NHWC (cuDNN's tensor-core layout) can lose to NCHW at batch 1
// (transposes, small-spatial NHWC kernels), and cuDNN's fused conv path to the plain one. So the
// candidates are built and timed, and the fastest is kept: the engine's layout and fusion are
// tactics of the whole engine. The timing cache remembers the choice under a key naming the model
// (a hash of its bytes), the profile, the precision and the GPU, so a second build with the cache
// builds one engine and times nothing.
constexpr uint64_t kFnvOffset = 1469598103934665603ull, kFnvPrime = 1099511628211ull;  // FNV-1a

uint64_t fnv1a(uint64_t h, const char* data, size_t n) {
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(data[i])) * kFnvPrime;
  return h;
}

// The model file's hash, read in 1 MiB pieces (a model may be hundreds of megabytes; the importer
// has its own pass over it). nullopt when the file cannot be read: the choice is then not cached.
std::optional<uint64_t> hash_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::vector<char> buf(size_t(1) << 20);
  uint64_t h = kFnvOffset;
  while (f) {
    f.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h = fnv1a(h, buf.data(), static_cast<size_t>(f.gcount()));
  }
  if (f.bad()) return std::nullopt;
  return h;
}

// Only a CUDA build with a timing cache remembers its engine choice, so only it hashes the model
// (a pass over hundreds of megabytes the other builds need not pay).
bool caches_engine_choice(const BuilderConfig& config) {
  return config.device == DeviceType::kCUDA && !config.timing_cache_path.empty();
}

std::string engine_choice_key(uint64_t model_hash, const BuilderConfig& config) {
  std::string k = std::string("engine;") + (config.fp16 ? "fp16;" : "fp32;") + std::to_string(model_hash);
  // One profile keeps the key it had before there were several (caches stay valid); each further
  // profile's opt shapes follow after a '|'.
  // (A config whose profiles are refused fails its build; the key is then never used.)
  auto requested = requested_profiles(config);
  const std::vector<OptimizationProfile> profiles = requested ? *requested : std::vector<OptimizationProfile>{};
  for (size_t p = 0; p < profiles.size(); ++p) {
    if (p > 0) k += "|";
    for (const auto& [name, r] : profiles[p]) {
      k += ";" + name + "=";
      for (int64_t d : r.opt) k += std::to_string(d) + "x";
    }
  }
  // Held layers change what each variant is; a key without them stays the key it was.
  if (!config.layer_precisions.empty() && config.precision_constraints != "none") {
    k += ";precisions=" + config.precision_constraints;
    for (const auto& [key, dtype] : config.layer_precisions) k += ";" + key + "=" + dtype_name(dtype);
  }
  return k;
}

struct Candidate {
  const char* label;
  const char* layout;
  bool fusion;
  bool int8 = true;
};

// Several engine variants may be built from one model: each distinct warning (a layer on the CPU,
// say) is reported once per build, not once per variant.
BuilderConfig with_warnings_once(const BuilderConfig& config) {
  BuilderConfig c = config;
  if (!config.progress) return c;
  auto seen = std::make_shared<std::set<std::string>>();
  c.progress = [seen, inner = config.progress](const std::string& stage, const std::string& detail) {
    if (stage == "warning" && !seen->insert(detail).second) return;
    inner(stage, detail);
  };
  return c;
}

template <typename Import>
Result<std::shared_ptr<Engine>> build_timing_candidates(Import import, const BuilderConfig& user_config,
                                                        const std::string& name, std::optional<uint64_t> model_hash) {
  const BuilderConfig config = with_warnings_once(user_config);
  // A file that is not a timing cache is refused before any work, whatever the model holds.
  std::optional<TacticTable> cache;
  if (!config.timing_cache_path.empty()) {
    auto loaded = TacticTable::load_cache_file(config.timing_cache_path);
    if (!loaded) return std::move(loaded).take_status();
    cache.emplace(*loaded);
  }
  auto g = import();
  const bool choose = config.device == DeviceType::kCUDA && config.layout == "auto" && config.fusion;
  if (!choose || !g) return build(std::move(g), config, name);
  int convs = 0;
  for (const auto& n : (*g)->nodes()) convs += n->domain.empty() && n->op_type == "Conv";
  if (convs < 4) return build(std::move(g), config, name);
  // The graph imported above serves the first engine built below; each further one imports again.
  bool first_used = false;
  auto next_graph = [&]() -> Result<std::unique_ptr<Graph>> {
    if (first_used) return import();
    first_used = true;
    return std::move(g);
  };

  std::vector<Candidate> candidates{{"NCHW fused", "nchw", true}, {"NCHW unfused", "nchw", false}};
  if (config.fp16) candidates.insert(candidates.begin() + 1, Candidate{"NHWC fused", "auto", true});
  // An explicitly quantized model: NHWC with its quantized convolutions in float16 too, so that the
  // INT8 ones are kept only where they are faster. Appended: cached choices keep their indices.
  bool dequantizes = false;
  for (const auto& n : (*g)->nodes()) dequantizes = dequantizes || (n->domain.empty() && n->op_type == "DequantizeLinear");
  if (config.fp16 && config.int8 && dequantizes) candidates.push_back(Candidate{"NHWC fused float16", "auto", true, false});
  auto config_for = [&](const Candidate& c) {
    BuilderConfig b = config;
    b.layout = c.layout;
    b.fusion = c.fusion;
    b.int8 = config.int8 && c.int8;
    return b;
  };
  const std::string key = model_hash ? engine_choice_key(*model_hash, config) : std::string();
  if (cache && model_hash) {
    if (auto t = cache->find(key); t && t->algo >= 0 && static_cast<size_t>(t->algo) < candidates.size()) {
      report(config, "engine", std::string("from the timing cache: ") + candidates[static_cast<size_t>(t->algo)].label);
      return build(next_graph(), config_for(candidates[static_cast<size_t>(t->algo)]), name);
    }
  }
  report(config, "engine", "timing " + std::to_string(candidates.size()) + " engine variants (" + std::to_string(convs) +
                               " convolutions)");
  std::shared_ptr<Engine> best, untimed;
  size_t untimed_i = 0;
  double best_ms = 0;
  size_t best_i = 0;
  std::string line;
  for (size_t i = 0; i < candidates.size(); ++i) {
    auto e = build(next_graph(), config_for(candidates[i]), name);
    if (!e) return e;
    auto ms = time_engine(**e);
    if (!ms) {
      // Kept only if no candidate can be timed: a timed one is always preferred.
      report(config, "engine", std::string(candidates[i].label) + ": could not be timed: " + ms.status().message());
      if (!untimed) untimed = *e, untimed_i = i;
      continue;
    }
    char part[96];
    std::snprintf(part, sizeof part, "%s%s %.3f ms", line.empty() ? "" : ", ", candidates[i].label, *ms);
    line += part;
    if (!best || *ms < best_ms) {
      best = *e;
      best_ms = *ms;
      best_i = i;
    }
  }
  if (!best) {
    report(config, "engine", std::string("no variant could be timed; keeping ") + candidates[untimed_i].label);
    return untimed;  // nothing measured, nothing to remember
  }
  report(config, "engine", line + " per run: " + candidates[best_i].label);
  if (cache && model_hash) {  // reread: the builds above added their tactics to the file
    auto updated = TacticTable::load_cache_file(config.timing_cache_path);
    if (!updated) return std::move(updated).take_status();
    updated->put(key, Tactic{static_cast<int>(best_i), 0, best_ms});
    GRAFT_RETURN_IF_ERROR(updated->save_cache_file(config.timing_cache_path));
  }
  return best;
}

}  // namespace

Result<DataType> layer_precision_from_name(const std::string& name) {
  if (name == "fp32" || name == "float32") return DataType::kFloat32;
  if (name == "fp16" || name == "float16") return DataType::kFloat16;
  return error(StatusCode::kInvalidArgument, "precision '", name, "': a layer can be held to fp32 or fp16");
}

Result<std::shared_ptr<Engine>> build_engine_from_graph(std::unique_ptr<Graph> graph, const BuilderConfig& config,
                                                         const std::string& name_for_errors) {
  GRAFT_RETURN_IF_ERROR(check_device_compiled(config.device));
  if (!graph) return error(StatusCode::kInvalidArgument, "no graph to build");
  return build(std::move(graph), config, name_for_errors);
}

Result<std::shared_ptr<Engine>> Engine::build_from_onnx_file(const std::string& path, const BuilderConfig& config) {
  GRAFT_RETURN_IF_ERROR(check_device_compiled(config.device));  // before any import work
  GRAFT_RETURN_IF_ERROR(load_plugins(config));
  std::optional<uint64_t> hash;
  if (caches_engine_choice(config)) hash = hash_file(path);
  return build_timing_candidates([&] { return import_onnx_file(path); }, config, path, hash);
}

Result<std::shared_ptr<Engine>> Engine::build_from_onnx_bytes(const std::string& bytes, const BuilderConfig& config,
                                                              const std::string& name_for_errors) {
  GRAFT_RETURN_IF_ERROR(check_device_compiled(config.device));  // before any import work
  GRAFT_RETURN_IF_ERROR(load_plugins(config));
  std::optional<uint64_t> hash;
  if (caches_engine_choice(config)) hash = fnv1a(kFnvOffset, bytes.data(), bytes.size());
  return build_timing_candidates([&] { return import_onnx_bytes(bytes, name_for_errors); }, config, name_for_errors,
                                 hash);
}

}  // namespace graft
