#include "tools/graft/commands.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "graft/cuda_engine.h"
#include "graft/registry.h"
#include "onnx/builtin_schema.h"
#include "onnx/deform_conv_rewrite.h"
#include "onnx/importer.h"
#include "ops/internal_ops.h"
#include "ops/operator.h"
#include "plan/plan.h"
#include "runtime/device_engine.h"
#include "tools/graft/build_options.h"
#include "tools/graft/compare_options.h"
#include "tools/graft/inference_options.h"
#include "tools/graft/model_options.h"
#include "tools/graft/reporting_options.h"

namespace graft::cli {

// ---- graft --version ---------------------------------------------------------------------------
std::string version_text() {
#ifdef GRAFT_WITH_CUDA
  const char* backends = "cpu, cuda";
#else
  const char* backends = "cpu (built without CUDA)";
#endif
  return fmt::format("graft {}\nbackends: {}\nONNX: default-domain opsets {} to {} (opsets 1 to {} converted on import)\n"
                     "plan format: {} (written for a graph whose internal ops defer activations or rearrange a stem, {} "
                     "for other graphs with graft's internal ops, {} for several optimization profiles, {} for one; "
                     "reads {} to {})\n",
                     version_string(), backends, kMinOpset, kMaxOpset, kMinOpset - 1, kPlanFormatVersion,
                     kPlanFormatVersionInternalDomain, kPlanFormatVersionProfiles, kPlanFormatVersionOneProfile,
                     kPlanFormatVersionPayloadCrc, kPlanFormatVersion);
}

// ---- graft build ------------------------------------------------------------------------------
Command add_build_command(CLI::App& app) {
  auto* sub = app.add_subcommand("build", "Build an engine from an ONNX model and save it as a plan");
  auto model = std::make_shared<ModelOptions>();
  auto build = std::make_shared<BuildOptions>();
  add_model_options(*sub, *model);
  add_build_options(*sub, *build, /*with_output=*/true);
  return [sub, model, build]() -> Status {
    record_given_build_flags(*sub, *build);
    // Everything that can be checked is checked before the import: the model is a model, the device
    // is in this graft, the output can be written.
    GRAFT_ASSIGN_OR_RETURN(bool plan, is_plan_file(model->path));
    if (plan) {
      Status st(StatusCode::kInvalidArgument, "this is already a plan; graft build takes an ONNX model");
      return st.with_file(model->path);
    }
    GRAFT_RETURN_IF_ERROR(build_device(*model).status());
    GRAFT_RETURN_IF_ERROR(check_output_path(build->output, model->path));
    GRAFT_ASSIGN_OR_RETURN(LoadedModel loaded, load_or_build(*model, *build));
    GRAFT_RETURN_IF_ERROR(loaded.engine->save_plan(build->output));
    std::fprintf(stderr, "graft: wrote plan %s\n", build->output.c_str());
    return Status::ok();
  };
}

// ---- graft run --------------------------------------------------------------------------------
namespace {

std::vector<double> column(const std::vector<IterationTimes>& its, double IterationTimes::*field) {
  std::vector<double> v;
  for (const IterationTimes& it : its) v.push_back(it.*field);
  return v;
}

nlohmann::json layer_timings_json(const std::vector<LayerTiming>& rows) {
  nlohmann::json layers = nlohmann::json::array();
  double total = 0;
  for (const LayerTiming& r : rows) {
    nlohmann::json l = {{"name", r.name}, {"op_type", r.op_type}, {"device", r.device}, {"time_ms", r.ms},
                        {"percent", r.percent}};
    if (!r.tactic.empty()) l["tactic"] = r.tactic;
    layers.push_back(std::move(l));
    total += r.ms;
  }
  return {{"runs", 1}, {"total_ms", total}, {"layers", layers}};
}

// Keeps the first failure of several checks that all report before the command fails.
void first_failure(Status& kept, Status next) {
  if (kept.is_ok()) kept = std::move(next);
}

nlohmann::json times_json(const TimedRuns& t) {
  nlohmann::json its = nlohmann::json::array();
  for (size_t i = 0; i < t.iterations.size(); ++i) {
    const IterationTimes& it = t.iterations[i];
    nlohmann::json j = {{"iteration", i}, {"start_ms", it.start_ms}, {"latency_ms", it.latency_ms}};
    if (t.split) {
      j["h2d_ms"] = it.h2d_ms;
      j["compute_ms"] = it.compute_ms;
      j["d2h_ms"] = it.d2h_ms;
    }
    its.push_back(std::move(j));
  }
  return {{"format", "graft-run-times"}, {"version", 1}, {"mode", t.mode}, {"unit", "ms"}, {"iterations", its}};
}

}  // namespace

Command add_run_command(CLI::App& app) {
  auto* sub = app.add_subcommand("run", "Run a model or plan and report its performance");
  auto model = std::make_shared<ModelOptions>();
  auto build = std::make_shared<BuildOptions>();
  auto infer = std::make_shared<InferenceOptions>();
  auto report = std::make_shared<ReportingOptions>();
  auto cmp = std::make_shared<CompareOptions>();
  add_model_options(*sub, *model);
  add_build_options(*sub, *build, /*with_output=*/false);
  add_inference_options(*sub, *infer);
  add_compare_options(*sub, *cmp);
  add_reporting_options(*sub, *report);
  auto profile = std::make_shared<bool>(false);
  sub->add_flag("--profile", *profile,
                "CUDA engines: after the timed runs, time each layer once (CUDA events) and print a table");
  return [sub, model, build, infer, report, profile, cmp]() -> Status {
    record_given_build_flags(*sub, *build);
    std::map<std::string, std::vector<int64_t>> shapes;
    GRAFT_RETURN_IF_ERROR(parse_shape_list(build->shapes, "--shapes", &shapes));
    // Checked before anything is imported or built: the model, the device, the files to write, the
    // input files (whose shapes a dynamic ONNX model is built for).
    GRAFT_ASSIGN_OR_RETURN(bool plan, is_plan_file(model->path));
    if (!plan) GRAFT_RETURN_IF_ERROR(build_device(*model).status());
    GRAFT_RETURN_IF_ERROR(check_compare_options(*cmp, *model, plan, !infer->compare.empty()));
    GRAFT_ASSIGN_OR_RETURN(Tolerances tolerances, parse_tolerances(*cmp));
    if (!plan) {  // a plan's profile count is known once it is loaded (set_profile checks it then)
      GRAFT_ASSIGN_OR_RETURN(std::vector<OptimizationProfile> profiles, make_profiles(*build));
      if (static_cast<size_t>(infer->profile_index) >= profiles.size())
        return error(StatusCode::kInvalidArgument, "--profile-index ", infer->profile_index, ": the shape flags give ",
                     static_cast<uint64_t>(profiles.size()), " optimization profile(s) (indices 0 to ",
                     static_cast<uint64_t>(profiles.size() - 1),
                     "); repeat --min-shapes/--opt-shapes/--max-shapes once per profile");
    }
    for (const auto& [path, option] : {std::pair{infer->export_times, "--export-times"},
                                       std::pair{infer->export_output, "--export-output"},
                                       std::pair{infer->export_profile, "--export-profile"}})
      if (!path.empty()) GRAFT_RETURN_IF_ERROR(check_writable_file(path, option));
    GRAFT_ASSIGN_OR_RETURN(std::vector<InputFile> files, read_input_files(*infer));
    LoadOptions load;
    load.sample_shapes = shapes_of(files);
    load.mark_all_outputs = cmp->layerwise;
    GRAFT_ASSIGN_OR_RETURN(LoadedModel loaded, load_or_build(*model, *build, load));
    const std::shared_ptr<Engine>& engine = loaded.engine;
    {  // a tolerance for a tensor the engine does not output is a typo: say so before running
      std::vector<std::string> names;
      for (const IOInfo& o : engine->outputs()) names.push_back(o.name);
      GRAFT_RETURN_IF_ERROR(check_tolerance_names(
          tolerances, names, cmp->layerwise ? "a tensor of the model" : "an output of the model"));
    }
    const bool layer_profile = *profile || !infer->export_profile.empty();
    if (layer_profile && engine->device() != DeviceType::kCUDA)
      return Status(StatusCode::kUnsupported,
                    std::string(*profile ? "--profile" : "--export-profile") +
                        " times layers with CUDA events, so it needs a CUDA engine; this engine runs on the cpu");
    uint64_t seed = 0;
    GRAFT_ASSIGN_OR_RETURN(auto inputs, prepare_inputs(*engine, *infer, shapes, files, &seed));
    GRAFT_ASSIGN_OR_RETURN(std::unique_ptr<ExecutionContext> ctx, engine->create_context());
    if (Status selected = ctx->set_profile(infer->profile_index); !selected)
      return error(selected.code(), "--profile-index: ", selected.message());
    GRAFT_ASSIGN_OR_RETURN(TimedRuns timed, time_runs(*engine, *ctx, inputs, *infer));
    const std::map<std::string, Tensor>& outputs = timed.outputs;
    std::vector<double> latency = column(timed.iterations, &IterationTimes::latency_ms);
    double timed_s = 0;
    for (double ms : latency) timed_s += ms / 1000.0;
    LatencyStats stats = summarize_latencies(latency, timed.wall_s);
    // Throughput over the timed quantity: for a GPU-resident CUDA run the copies, timed apart, are
    // not in it.
    stats.qps = timed_s > 0 ? static_cast<double>(latency.size()) / timed_s : 0;
    // How much of the last timed run a CUDA graph replayed (all, the layers before a data-dependent
    // one, or none): a dynamic engine that keeps running eagerly shows here first.
    std::optional<std::pair<size_t, size_t>> graph_layers;
    if (auto* cuda_ctx = dynamic_cast<CudaExecutionContext*>(ctx.get())) {
      const nlohmann::json d = nlohmann::json::parse(engine->describe_json(), nullptr, false);
      if (!d.is_discarded() && d.contains("cuda") && d["cuda"].contains("layers"))
        graph_layers = std::make_pair(cuda_ctx->last_run_graph_layers(), d["cuda"]["layers"].size());
    }
    std::vector<LayerTiming> layers;
    if (layer_profile) {
      auto* cuda_ctx = dynamic_cast<CudaExecutionContext*>(ctx.get());
      if (!cuda_ctx) return Status(StatusCode::kInternal, "a CUDA engine without a CUDA execution context");
      // The timed runs' inputs, already on the GPU: a host input would be uploaded inside the first
      // layer that reads it, while the profiler's gate holds the stream (a pageable copy then waits
      // for the gate's timeout).
      std::map<std::string, Tensor> profiled;
      cuda_ctx->set_profiling(true);
      GRAFT_RETURN_IF_ERROR(ctx->run(timed.run_inputs, profiled));
      cuda_ctx->set_profiling(false);
      layers = cuda_ctx->layer_timings();
    }

    // The reference run (--compare-backend/--compare-model) fails the command when a tensor differs;
    // the report is printed either way.
    std::optional<ComparisonReport> versus;
    Status compared;
    if (wants_reference_run(*cmp)) {
      GRAFT_ASSIGN_OR_RETURN(versus, run_reference_and_compare(*cmp, tolerances, *model, *build, load, loaded, inputs,
                                                               outputs));
      if (!versus->passed())
        compared = error(StatusCode::kRuntimeError, "the outputs differ from the reference beyond tolerance; first: ",
                         describe_first_divergence(*versus));
    }
    nlohmann::json compare_report = nlohmann::json::array();
    if (report->json) {
      if (!infer->compare.empty())
        first_failure(compared, compare_outputs(infer->compare, *engine, outputs, tolerances, &compare_report));
      nlohmann::json j;
      j["graft_version"] = version_string();
      j["model"] = model->path;
      j["plan"] = loaded.is_plan;
      j["device"] = device_name(engine->device());
      j["profile_index"] = infer->profile_index;
      j["inputs"] = nlohmann::json::array();
      for (const auto& [name, t] : inputs) {
        nlohmann::json in = {{"name", name}, {"dtype", dtype_name(t.dtype())}, {"shape", t.dims()}};
        in["source"] = "random";
        for (const InputFile& f : files)
          if (f.name == name) in["source"] = f.file;
        j["inputs"].push_back(std::move(in));
      }
      if (std::any_of(j["inputs"].begin(), j["inputs"].end(), [](const nlohmann::json& in) { return in["source"] == "random"; }))
        j["seed"] = seed;
      j["outputs"] = outputs_json(outputs, /*with_values=*/false);
      nlohmann::json t = {{"mode", timed.mode},
                          {"warmup", infer->warmup},
                          {"iterations", timed.iterations.size()},
                          {"duration_s", infer->duration_s},
                          {"wall_s", timed.wall_s},
                          {"latency_ms", latency_json(stats)},
                          {"throughput_qps", stats.qps}};
      if (timed.split) {
        t["h2d_ms"] = latency_json(summarize_latencies(column(timed.iterations, &IterationTimes::h2d_ms), 0));
        t["compute_ms"] = latency_json(summarize_latencies(column(timed.iterations, &IterationTimes::compute_ms), 0));
        t["d2h_ms"] = latency_json(summarize_latencies(column(timed.iterations, &IterationTimes::d2h_ms), 0));
      }
      if (graph_layers) {
        t["cuda_graph_layers"] = graph_layers->first;
        t["layers"] = graph_layers->second;
      }
      j["timing"] = std::move(t);
      if (*profile) j["profile"] = layer_timings_json(layers);
      if (!infer->compare.empty()) j["compare"] = compare_report;
      if (versus) j["comparison"] = nlohmann::json::parse(comparison_json(*versus));
      std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else if (cmp->layerwise) {  // the comparison table below lists every tensor
      std::printf("outputs: %zu (every tensor of the model marked)\n", outputs.size());
    }
    if (!report->json) {
      for (const auto& [name, t] : cmp->layerwise ? std::map<std::string, Tensor>{} : outputs)
        std::printf("output %s: %s\n", name.c_str(),
                    TensorDesc(t.dtype(), shape_from_values(t.dims())).to_string().c_str());
      if (timed.mode == "gpu_resident")
        std::printf("timing: latency is the compute time with inputs and outputs resident on the GPU "
                    "(--host-io to add the copies)\n");
      std::printf("%s", format_performance_summary(stats).c_str());
      if (timed.split) {
        std::printf("%s", format_latency_line("H2D Latency", summarize_latencies(column(timed.iterations, &IterationTimes::h2d_ms), 0)).c_str());
        std::printf("%s", format_latency_line("GPU Compute Time", summarize_latencies(column(timed.iterations, &IterationTimes::compute_ms), 0)).c_str());
        std::printf("%s", format_latency_line("D2H Latency", summarize_latencies(column(timed.iterations, &IterationTimes::d2h_ms), 0)).c_str());
      }
      if (graph_layers)
        std::printf("CUDA graphs: the last timed run replayed %zu of %zu layers from a CUDA graph%s\n",
                    graph_layers->first, graph_layers->second,
                    graph_layers->first == graph_layers->second ? ""
                    : graph_layers->first ? " (the rest ran eagerly; GRAFT_CUDA_GRAPH_TRACE=1 says why)"
                                          : " (GRAFT_CUDA_GRAPH_TRACE=1 says why)");
      if (*profile)
        std::printf("per-layer profile (one run, CUDA graphs off, inputs on the GPU):\n%s",
                    format_layer_timings(layers).c_str());
      if (versus) std::printf("%s", format_comparison(*versus).c_str());
      std::fflush(stdout);
      if (!infer->compare.empty())
        first_failure(compared, compare_outputs(infer->compare, *engine, outputs, tolerances));
    }
    std::fflush(stdout);
    if (!infer->export_times.empty())
      GRAFT_RETURN_IF_ERROR(write_export_file(infer->export_times, "--export-times", times_json(timed).dump(1) + "\n"));
    if (!infer->export_output.empty())
      GRAFT_RETURN_IF_ERROR(write_export_file(
          infer->export_output, "--export-output",
          outputs_json(outputs, true).dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"));
    if (!infer->export_profile.empty())
      GRAFT_RETURN_IF_ERROR(write_export_file(infer->export_profile, "--export-profile",
                                              layer_timings_json(layers).dump(1, ' ', false,
                                                                              nlohmann::json::error_handler_t::replace) +
                                                  "\n"));
    if (!infer->save_outputs.empty()) GRAFT_RETURN_IF_ERROR(save_outputs(infer->save_outputs, outputs));
    return compared;
  };
}

// ---- graft inspect ----------------------------------------------------------------------------
Command add_inspect_command(CLI::App& app) {
  auto* sub = app.add_subcommand("inspect", "Describe an engine: layers, shapes, dtypes, profiles, custom ops");
  auto model = std::make_shared<ModelOptions>();
  auto build = std::make_shared<BuildOptions>();
  auto report = std::make_shared<ReportingOptions>();
  add_model_options(*sub, *model);
  add_build_options(*sub, *build, /*with_output=*/false);
  add_reporting_options(*sub, *report);
  return [sub, model, build, report]() -> Status {
    record_given_build_flags(*sub, *build);
    LoadOptions load;
    load.describe_only = true;  // a plan this graft cannot run is still described
    GRAFT_ASSIGN_OR_RETURN(LoadedModel loaded, load_or_build(*model, *build, load));
    const std::string& why = loaded.described_only_because;
    if (!why.empty())
      std::fprintf(stderr,
                   "graft: note: described from the plan alone, without creating its %s engine (%s); the placement, "
                   "kernels and memory plan show where the plan can run\n",
                   device_name(loaded.engine->device()), why.c_str());
    std::string text;
    if (report->json) {
      nlohmann::json j = nlohmann::json::parse(loaded.engine->describe_json(), nullptr, false);
      if (!why.empty() && j.is_object()) {
        j["engine_created"] = false;
        j["engine_not_created_because"] = why;
      }
      text = j.is_discarded() ? loaded.engine->describe_json()
                              : j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    } else {
      text = loaded.engine->describe();
    }
    std::printf("%s%s", text.c_str(), !text.empty() && text.back() == '\n' ? "" : "\n");
    return Status::ok();
  };
}

// ---- graft ops --------------------------------------------------------------------------------
namespace {

nlohmann::json dtypes_json(const std::vector<DataType>& ts) {
  nlohmann::json a = nlohmann::json::array();
  for (DataType t : ts) a.push_back(dtype_name(t));
  return a;
}

nlohmann::json identity_json(const OpIdentity& id) {
  return {{"name", id.name}, {"domain", id.domain}, {"version", id.version}, {"namespace", id.plugin_namespace}};
}

// An op's attributes and inputs/outputs, builtin or custom, in one form: a custom op's from its
// OpDef, an ONNX op's from its schema (onnx/builtin_schema.h).
nlohmann::json attrs_json(const std::vector<AttrSpec>& specs) {
  nlohmann::json attrs = nlohmann::json::array();
  for (const AttrSpec& a : specs) {
    nlohmann::json aj = {{"name", a.name}, {"type", attr_type_name(a.type)}, {"required", a.required}};
    aj["default"] = a.default_value ? nlohmann::json(attr_value_to_string(*a.default_value)) : nlohmann::json();
    if (a.min_value) aj["min"] = *a.min_value;
    if (a.max_value) aj["max"] = *a.max_value;
    if (!a.allowed_ints.empty()) aj["allowed"] = a.allowed_ints;
    if (!a.allowed_strings.empty()) aj["allowed"] = a.allowed_strings;
    if (!a.doc.empty()) aj["doc"] = a.doc;
    attrs.push_back(aj);
  }
  return attrs;
}

nlohmann::json io_json(const std::vector<IOSpec>& specs) {
  nlohmann::json a = nlohmann::json::array();
  for (const IOSpec& s : specs) {
    nlohmann::json sj = {{"name", s.name}, {"dtypes", dtypes_json(s.dtypes)}, {"optional", s.optional}};
    if (!s.doc.empty()) sj["doc"] = s.doc;
    a.push_back(sj);
  }
  return a;
}

nlohmann::json op_json(const RegisteredOp& op) {
  const OpDef& d = *op.def;
  nlohmann::json j = identity_json(d.identity());
  j["source"] = op.source;
  j["doc"] = d.doc_text();
  j["attributes"] = attrs_json(d.attrs());
  j["inputs"] = io_json(d.inputs());
  j["outputs"] = io_json(d.outputs());
  j["backward"] = d.has_backward(Backend::kCPU) || d.has_backward(Backend::kCUDA);
  // Per backend, the dtype combinations (inputs then outputs) its kernels handle; "any" where a
  // kernel takes every combination the op declares.
  nlohmann::json backends = nlohmann::json::array(), kernels = nlohmann::json::object();
  for (const KernelEntry& k : d.kernels()) {
    const std::string b = k.backend == Backend::kCUDA ? "cuda" : "cpu";
#ifndef GRAFT_WITH_CUDA
    if (k.backend == Backend::kCUDA) continue;  // compiled out of this build
#endif
    if (std::find(backends.begin(), backends.end(), b) == backends.end()) backends.push_back(b);
    nlohmann::json& combos = kernels[b];
    if (combos.is_null()) combos = nlohmann::json::array();
    if (k.combinations.empty()) combos.push_back("any");
    for (const auto& c : k.combinations) combos.push_back(dtypes_json(c));
  }
  j["backends"] = backends;
  j["kernel_dtypes"] = kernels;
  return j;
}

// A builtin op's backends in this build: the CPU reference always, CUDA where a kernel exists.
nlohmann::json builtin_backends(const std::string& op_type) {
  nlohmann::json b = nlohmann::json::array({"cpu"});
  if (builtin_has_cuda_kernel(op_type)) b.push_back("cuda");
  return b;
}

std::string join_dtypes(const std::vector<DataType>& ts) {
  if (ts.empty()) return "any";
  std::string s;
  for (DataType t : ts) s += (s.empty() ? "" : "|") + std::string(dtype_name(t));
  return s;
}

// The name the schema gives a keyed value ("X"), or "" where there is none (no schema, variadic).
std::string keyed_value_name(const KernelDtypes& key, const std::vector<IOSpec>* inputs, const std::vector<IOSpec>* outputs) {
  const std::vector<IOSpec>* specs = key.output ? outputs : inputs;
  return specs && key.index < static_cast<int>(specs->size()) ? (*specs)[key.index].name : "";
}

// A builtin op's kernel dtypes per backend, for `graft ops --json`: the CUDA kernels' keys (each
// keyed value and the dtypes its kernels are built for), where this build has them. The CPU reference
// is keyed by nothing: it is the op's definition, for the dtypes its schema lists.
nlohmann::json builtin_kernel_dtypes_json(const std::string& op_type, const std::vector<IOSpec>* inputs,
                                          const std::vector<IOSpec>* outputs) {
  nlohmann::json j = nlohmann::json::object();
  if (const std::vector<KernelDtypes>* keys = builtin_cuda_kernel_dtypes(op_type)) {
    nlohmann::json cuda = nlohmann::json::array();
    for (const KernelDtypes& k : *keys) {
      nlohmann::json dtypes = nlohmann::json::array();
      for (DataType t : k.dtypes) dtypes.push_back(dtype_name(t));
      cuda.push_back({{"value", k.value_name()}, {"name", keyed_value_name(k, inputs, outputs)}, {"dtypes", dtypes}});
    }
    j["cuda"] = cuda;
  }
  return j;
}

// The lines `graft ops NAME` prints for a builtin op's CUDA kernel keys.
void print_cuda_keys(const std::string& op_type, const std::vector<IOSpec>* inputs, const std::vector<IOSpec>* outputs) {
  const std::vector<KernelDtypes>* keys = builtin_cuda_kernel_dtypes(op_type);
  if (!keys) return;
  if (keys->empty()) std::printf("    cuda   (kernels over sequences, optionals or subgraphs: any dtype)\n");
  for (const KernelDtypes& k : *keys) {
    const std::string name = keyed_value_name(k, inputs, outputs);
    const std::string value = k.value_name() + (name.empty() ? "" : " (" + name + ")");
    std::printf("    cuda   %-20s %s\n", value.c_str(), join_dtypes(k.dtypes).c_str());
  }
}

// The traits the builder reads from the op's definition (src/ops/operator.h).
nlohmann::json traits_json(const OpEntry& op) {
  const char* layout = op.layout == LayoutTrait::kElementwiseUnary    ? "elementwise_unary"
                       : op.layout == LayoutTrait::kElementwiseBinary ? "elementwise_binary"
                                                                      : "fixed";
  nlohmann::json j = {{"precision", op.precision == PrecisionTrait::kFloat32 ? "float32" : "any"}, {"layout", layout}};
  if (op.elementwise_opcode) j["elementwise_opcode"] = ew_op_name(*op.elementwise_opcode);
  if (op.reshape_view) j["view"] = "reshape";
  return j;
}

}  // namespace

namespace {

// The lines `graft ops NAME` prints under an op: its inputs, outputs and attributes, a builtin's from
// its ONNX schema and a custom op's from its OpDef.
void print_op_detail(const std::vector<IOSpec>& inputs, const std::vector<IOSpec>& outputs,
                     const std::vector<AttrSpec>& attrs) {
  auto io = [](const char* what, const IOSpec& s) {
    std::string extra = s.optional ? " (optional)" : "";
    if (!s.doc.empty() && s.doc.rfind("variadic", 0) == 0) extra += " (" + s.doc + ")";
    std::printf("    %-6s %-20s %s%s\n", what, s.name.c_str(), join_dtypes(s.dtypes).c_str(), extra.c_str());
  };
  for (const IOSpec& s : inputs) io("input", s);
  for (const IOSpec& s : outputs) io("output", s);
  for (const AttrSpec& a : attrs) {
    std::string extra;
    if (a.required) extra += " required";
    if (a.default_value) extra += " default=" + attr_value_to_string(*a.default_value);
    if (a.min_value || a.max_value)
      extra += fmt::format(" range=[{}, {}]", a.min_value ? fmt::format("{}", *a.min_value) : "-inf",
                           a.max_value ? fmt::format("{}", *a.max_value) : "inf");
    std::printf("    attr   %-20s %s%s\n", a.name.c_str(), attr_type_name(a.type), extra.c_str());
  }
}

// A builtin ONNX op's entry of `graft ops --json`.
nlohmann::json builtin_json(const OpEntry& op) {
  nlohmann::json b = {{"op_type", op.op_type}, {"domain", "ai.onnx"}, {"min_opset", op.min_opset},
                      {"backends", builtin_backends(op.op_type)}, {"traits", traits_json(op)}};
  // The attributes, inputs and outputs below are ONNX's schema (its dtypes are those ONNX allows),
  // where a custom op's are its own definition's.
  b["schema_source"] = "onnx";
  b["schema_opset"] = newest_schema_opset();
  std::optional<BuiltinSchema> s = onnx_op_schema(op.op_type, newest_schema_opset());
  if (s) {
    b["since_version"] = s->since_version;
    b["attributes"] = attrs_json(s->attrs);
    b["graph_attributes"] = s->graph_attrs;
    b["inputs"] = io_json(s->inputs);
    b["outputs"] = io_json(s->outputs);
  } else {
    b["schema"] = nullptr;  // an op newer than the opsets libonnx knows
  }
  b["kernel_dtypes"] = builtin_kernel_dtypes_json(op.op_type, s ? &s->inputs : nullptr, s ? &s->outputs : nullptr);
  return b;
}

}  // namespace

Command add_ops_command(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "ops", "List every op graft supports: builtin ONNX ops and custom ops; with names, those ops in detail");
  auto model = std::make_shared<ModelOptions>();
  auto report = std::make_shared<ReportingOptions>();
  auto names = std::make_shared<std::vector<std::string>>();
  sub->add_option("names", *names,
                  "Ops to describe (op type, or DOMAIN::NAME): inputs, outputs with their dtypes, attributes, backends")
      ->expected(0, -1);
  sub->add_option("--plugins", model->plugins, "Plugin libraries (.so) whose ops to list too")->expected(1, -1);
  add_reporting_options(*sub, *report);
  return [model, report, names]() -> Status {
    GRAFT_RETURN_IF_ERROR(load_plugins(*model));
    const auto& builtins = builtin_ops();
    std::vector<RegisteredOp> custom = OpRegistry::global().all();
    std::vector<OpRegistry::Alias> aliases = OpRegistry::global().aliases();
    // Every op without names; with them, the ops they name (each name must name one at least).
    std::vector<bool> matched(names->size(), false);
    auto wanted = [&](const std::string& domain, const std::string& name) {
      bool any = names->empty();
      for (size_t i = 0; i < names->size(); ++i)
        if ((*names)[i] == name || (*names)[i] == domain + "::" + name) any = matched[i] = true;
      return any;
    };
    auto is_internal = [](const OpEntry& op) { return op.domain == std::string(kInternalDomain); };
    std::vector<const OpEntry*> onnx_ops, internal_ops;
    for (const OpEntry& op : builtins) {
      if (is_internal(op) && wanted(kInternalDomain, op.op_type)) internal_ops.push_back(&op);
      if (!is_internal(op) && (wanted("ai.onnx", op.op_type) || (!names->empty() && wanted("", op.op_type))))
        onnx_ops.push_back(&op);
    }
    std::vector<const RegisteredOp*> custom_ops;
    for (const RegisteredOp& op : custom)
      if (wanted(op.def->identity().domain, op.def->name())) custom_ops.push_back(&op);
    std::vector<const OpRegistry::Alias*> alias_list;
    for (const auto& a : aliases)
      if (wanted(a.domain, a.name)) alias_list.push_back(&a);
    std::vector<const ImportRewrite*> rewrites;  // default-domain ops read on import as another op
    for (const ImportRewrite* r : {&deform_conv_import_rewrite()})
      if (wanted("ai.onnx", r->op_type) || (!names->empty() && wanted("", r->op_type))) rewrites.push_back(r);
    for (size_t i = 0; i < names->size(); ++i)
      if (!matched[i])
        return error(StatusCode::kNotFound, "no op named '", (*names)[i],
                     "' (`graft ops` lists every op; --plugins loads a library's)");

    if (report->json) {
      nlohmann::json j;
      j["builtin"] = nlohmann::json::array();
      j["internal"] = nlohmann::json::array();  // graft's passes make these; not ONNX ops
      for (const OpEntry* op : internal_ops)
        j["internal"].push_back({{"op_type", op->op_type},
                                 {"domain", kInternalDomain},
                                 {"backends", builtin_backends(op->op_type)},
                                 {"kernel_dtypes", builtin_kernel_dtypes_json(op->op_type, nullptr, nullptr)}});
      for (const OpEntry* op : onnx_ops) j["builtin"].push_back(builtin_json(*op));
      j["custom"] = nlohmann::json::array();
      for (const RegisteredOp* op : custom_ops) j["custom"].push_back(op_json(*op));
      j["aliases"] = nlohmann::json::array();
      for (const auto* a : alias_list)
        j["aliases"].push_back({{"domain", a->domain}, {"name", a->name}, {"target", identity_json(a->target)}});
      j["read_as"] = nlohmann::json::array();
      for (const ImportRewrite* r : rewrites)
        j["read_as"].push_back({{"op_type", r->op_type}, {"domain", "ai.onnx"}, {"since_opset", r->since_opset},
                                {"target", r->target}, {"how", r->how}});
      std::printf("%s\n", j.dump(2).c_str());
      return Status::ok();
    }
    const bool detail = !names->empty();
    if (!detail || !onnx_ops.empty()) std::printf("Builtin ONNX ops (domain ai.onnx), %zu:\n", onnx_ops.size());
    for (const OpEntry* op : onnx_ops) {
      std::printf("  %-24s opset >= %-3d %s\n", op->op_type, op->min_opset,
                  builtin_has_cuda_kernel(op->op_type) ? "cpu, cuda" : "cpu");
      if (!detail) continue;
      if (std::optional<BuiltinSchema> s = onnx_op_schema(op->op_type, newest_schema_opset())) {
        std::printf("    (ONNX's schema at opset %d, the op's version %d: the dtypes ONNX allows; the build's summary says where"
                    " each layer runs)\n",
                    newest_schema_opset(), s->since_version);
        print_op_detail(s->inputs, s->outputs, s->attrs);
        for (const std::string& g : s->graph_attrs) std::printf("    attr   %-20s graph\n", g.c_str());
        print_cuda_keys(op->op_type, &s->inputs, &s->outputs);
      } else {
        std::printf("    (no schema: an op newer than opset %d, the newest this build's ONNX library knows)\n",
                    newest_schema_opset());
        print_cuda_keys(op->op_type, nullptr, nullptr);
      }
    }
    if (!detail || !internal_ops.empty())
      std::printf("%sInternal ops (domain %s: made by graft's optimization passes, kept in plans; not ONNX ops), %zu:\n",
                  detail && onnx_ops.empty() ? "" : "\n", kInternalDomain, internal_ops.size());
    for (const OpEntry* op : internal_ops) {
      std::printf("  %-24s %s\n", op->op_type, builtin_has_cuda_kernel(op->op_type) ? "cpu, cuda" : "cpu");
      if (detail) print_cuda_keys(op->op_type, nullptr, nullptr);
    }
    if (!detail || !custom_ops.empty())
      std::printf("%sCustom ops, %zu:\n", detail && onnx_ops.empty() && internal_ops.empty() ? "" : "\n",
                  custom_ops.size());
    for (const RegisteredOp* op : custom_ops) {
      const OpDef& d = *op->def;
      std::string backends;
      const nlohmann::json described = op_json(*op);  // named: the loop below must not outlive it
      for (const auto& b : described["backends"]) backends += (backends.empty() ? "" : ", ") + b.get<std::string>();
      std::printf("  %s  (from %s; %s)\n", d.identity().to_string().c_str(), op->source.c_str(), backends.c_str());
      print_op_detail(d.inputs(), d.outputs(), d.attrs());
    }
    if (!alias_list.empty()) {
      std::printf("\nAliases, %zu:\n", alias_list.size());
      for (const auto* a : alias_list)
        std::printf("  %s::%s -> %s\n", a->domain.c_str(), a->name.c_str(), a->target.to_string().c_str());
    }
    if (!rewrites.empty()) {
      std::printf("\nONNX ops read on import as another op, %zu:\n", rewrites.size());
      for (const ImportRewrite* r : rewrites)
        std::printf("  ai.onnx::%s (opset >= %d) -> %s: %s\n", r->op_type, r->since_opset, r->target, r->how);
    }
    return Status::ok();
  };
}

}  // namespace graft::cli
