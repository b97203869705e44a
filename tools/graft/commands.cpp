#include "tools/graft/commands.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "graft/cuda_engine.h"
#include "graft/registry.h"
#include "ops/operator.h"
#include "runtime/device_engine.h"
#include "tools/graft/build_options.h"
#include "tools/graft/inference_options.h"
#include "tools/graft/model_options.h"
#include "tools/graft/reporting_options.h"

namespace graft::cli {

// ---- graft build ------------------------------------------------------------------------------
Command add_build_command(CLI::App& app) {
  auto* sub = app.add_subcommand("build", "Build an engine from an ONNX model and save it as a plan");
  auto model = std::make_shared<ModelOptions>();
  auto build = std::make_shared<BuildOptions>();
  add_model_options(*sub, *model);
  add_build_options(*sub, *build, /*with_output=*/true);
  return [model, build]() -> Status {
    GRAFT_RETURN_IF_ERROR(check_output_path(build->output, model->path));
    GRAFT_ASSIGN_OR_RETURN(bool plan, is_plan_file(model->path));
    if (plan) {
      Status st(StatusCode::kInvalidArgument, "this is already a plan; graft build takes an ONNX model");
      return st.with_file(model->path);
    }
    GRAFT_ASSIGN_OR_RETURN(std::shared_ptr<Engine> engine, load_or_build(*model, *build));
    GRAFT_RETURN_IF_ERROR(engine->save_plan(build->output));
    std::fprintf(stderr, "graft: wrote plan %s\n", build->output.c_str());
    return Status::ok();
  };
}

// ---- graft run --------------------------------------------------------------------------------
Command add_run_command(CLI::App& app) {
  auto* sub = app.add_subcommand("run", "Run a model or plan and report its performance");
  auto model = std::make_shared<ModelOptions>();
  auto build = std::make_shared<BuildOptions>();
  auto infer = std::make_shared<InferenceOptions>();
  add_model_options(*sub, *model);
  add_shapes_option(*sub, *build);
  add_inference_options(*sub, *infer);
  auto profile = std::make_shared<bool>(false);
  sub->add_flag("--profile", *profile, "After the timed runs, time each layer once (CUDA events) and print a table");
  return [model, build, infer, profile]() -> Status {
    std::map<std::string, std::vector<int64_t>> shapes;
    GRAFT_RETURN_IF_ERROR(parse_shape_list(build->shapes, "--shapes", &shapes));
    // For an ONNX model, --shapes also fixes the profile (min = opt = max) it is built with.
    BuildOptions effective = *build;
    GRAFT_ASSIGN_OR_RETURN(std::shared_ptr<Engine> engine, load_or_build(*model, effective));
    GRAFT_ASSIGN_OR_RETURN(auto inputs, prepare_inputs(*engine, *infer, shapes));
    GRAFT_ASSIGN_OR_RETURN(std::unique_ptr<ExecutionContext> ctx, engine->create_context());
    // Timed runs: a CUDA engine's inputs and outputs stay on the GPU unless --host-io.
    const bool resident = engine->device() == DeviceType::kCUDA && !infer->host_io;
    std::map<std::string, Tensor> timed_inputs = inputs, timed_outputs;
    if (resident) {
      for (auto& [name, t] : timed_inputs) {
        GRAFT_ASSIGN_OR_RETURN(t, t.to_device());
      }
    }
    for (int i = 0; i < infer->warmup; ++i) GRAFT_RETURN_IF_ERROR(ctx->run(timed_inputs, timed_outputs));
    std::vector<double> ms;
    using clock = std::chrono::steady_clock;
    auto t0 = clock::now();
    for (int i = 0; i < infer->iterations; ++i) {
      auto s = clock::now();
      GRAFT_RETURN_IF_ERROR(ctx->run(timed_inputs, timed_outputs));
      ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - s).count());
    }
    double total = std::chrono::duration<double>(clock::now() - t0).count();
    // The outputs the user sees, saves and compares: one more run with host tensors.
    std::map<std::string, Tensor> outputs;
    if (resident) {
      GRAFT_RETURN_IF_ERROR(ctx->run(inputs, outputs));
      std::printf("timing: inputs and outputs resident on the GPU (--host-io to include copies)\n");
    } else {
      outputs = timed_outputs;
    }
    for (const auto& [name, t] : outputs)
      std::printf("output %s: %s\n", name.c_str(), TensorDesc(t.dtype(), shape_from_values(t.dims())).to_string().c_str());
    std::printf("%s", format_performance_summary(summarize_latencies(ms, total)).c_str());
    if (*profile) {
      auto* cuda_ctx = dynamic_cast<CudaExecutionContext*>(ctx.get());
      if (!cuda_ctx)
        return Status(StatusCode::kUnsupported, "--profile times layers with CUDA events: use --device cuda");
      cuda_ctx->set_profiling(true);
      GRAFT_RETURN_IF_ERROR(ctx->run(inputs, outputs));
      cuda_ctx->set_profiling(false);
      std::printf("per-layer profile (one run, CUDA graphs off):\n%s",
                  format_layer_timings(cuda_ctx->layer_timings()).c_str());
    }
    std::fflush(stdout);
    if (!infer->save_outputs.empty()) GRAFT_RETURN_IF_ERROR(save_outputs(infer->save_outputs, outputs));
    if (!infer->compare.empty())
      GRAFT_RETURN_IF_ERROR(compare_outputs(infer->compare, *engine, outputs, infer->rtol, infer->atol));
    return Status::ok();
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
  return [model, build, report]() -> Status {
    GRAFT_ASSIGN_OR_RETURN(std::shared_ptr<Engine> engine, load_or_build(*model, *build));
    std::string text = report->json ? engine->describe_json() : engine->describe();
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

nlohmann::json op_json(const RegisteredOp& op) {
  const OpDef& d = *op.def;
  nlohmann::json j = identity_json(d.identity());
  j["source"] = op.source;
  j["doc"] = d.doc_text();
  nlohmann::json attrs = nlohmann::json::array();
  for (const AttrSpec& a : d.attrs()) {
    nlohmann::json aj = {{"name", a.name}, {"type", attr_type_name(a.type)}, {"required", a.required}};
    aj["default"] = a.default_value ? nlohmann::json(attr_value_to_string(*a.default_value)) : nlohmann::json();
    if (a.min_value) aj["min"] = *a.min_value;
    if (a.max_value) aj["max"] = *a.max_value;
    if (!a.allowed_ints.empty()) aj["allowed"] = a.allowed_ints;
    if (!a.allowed_strings.empty()) aj["allowed"] = a.allowed_strings;
    if (!a.doc.empty()) aj["doc"] = a.doc;
    attrs.push_back(aj);
  }
  j["attributes"] = attrs;
  auto io = [](const std::vector<IOSpec>& specs) {
    nlohmann::json a = nlohmann::json::array();
    for (const IOSpec& s : specs)
      a.push_back({{"name", s.name}, {"dtypes", dtypes_json(s.dtypes)}, {"optional", s.optional}});
    return a;
  };
  j["inputs"] = io(d.inputs());
  j["outputs"] = io(d.outputs());
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

}  // namespace

Command add_ops_command(CLI::App& app) {
  auto* sub = app.add_subcommand("ops", "List every op graft supports: builtin ONNX ops and custom ops");
  auto model = std::make_shared<ModelOptions>();
  auto report = std::make_shared<ReportingOptions>();
  sub->add_option("--plugins", model->plugins, "Plugin libraries (.so) whose ops to list too")->expected(1, -1);
  add_reporting_options(*sub, *report);
  return [model, report]() -> Status {
    GRAFT_RETURN_IF_ERROR(load_plugins(*model));
    const auto& builtins = builtin_ops();
    std::vector<RegisteredOp> custom = OpRegistry::global().all();
    std::vector<OpRegistry::Alias> aliases = OpRegistry::global().aliases();
    if (report->json) {
      nlohmann::json j;
      j["builtin"] = nlohmann::json::array();
      for (const BuiltinOp& op : builtins)
        j["builtin"].push_back({{"op_type", op.op_type}, {"domain", "ai.onnx"}, {"min_opset", op.min_opset},
                                {"backends", builtin_backends(op.op_type)}});
      j["custom"] = nlohmann::json::array();
      for (const RegisteredOp& op : custom) j["custom"].push_back(op_json(op));
      j["aliases"] = nlohmann::json::array();
      for (const auto& a : aliases)
        j["aliases"].push_back({{"domain", a.domain}, {"name", a.name}, {"target", identity_json(a.target)}});
      std::printf("%s\n", j.dump(2).c_str());
      return Status::ok();
    }
    std::printf("Builtin ONNX ops (domain ai.onnx), %zu:\n", builtins.size());
    for (const BuiltinOp& op : builtins)
      std::printf("  %-24s opset >= %-3d %s\n", op.op_type, op.min_opset,
                  builtin_has_cuda_kernel(op.op_type) ? "cpu, cuda" : "cpu");
    std::printf("\nCustom ops, %zu:\n", custom.size());
    for (const RegisteredOp& op : custom) {
      const OpDef& d = *op.def;
      std::string backends;
      const nlohmann::json described = op_json(op);  // named: the loop below must not outlive it
      for (const auto& b : described["backends"]) backends += (backends.empty() ? "" : ", ") + b.get<std::string>();
      std::printf("  %s  (from %s; %s)\n", d.identity().to_string().c_str(), op.source.c_str(), backends.c_str());
      for (const IOSpec& s : d.inputs())
        std::printf("    input  %-20s %s%s\n", s.name.c_str(), join_dtypes(s.dtypes).c_str(), s.optional ? " (optional)" : "");
      for (const IOSpec& s : d.outputs())
        std::printf("    output %-20s %s\n", s.name.c_str(), join_dtypes(s.dtypes).c_str());
      for (const AttrSpec& a : d.attrs()) {
        std::string extra;
        if (a.required) extra += " required";
        if (a.default_value) extra += " default=" + attr_value_to_string(*a.default_value);
        if (a.min_value || a.max_value)
          extra += fmt::format(" range=[{}, {}]", a.min_value ? fmt::format("{}", *a.min_value) : "-inf",
                               a.max_value ? fmt::format("{}", *a.max_value) : "inf");
        std::printf("    attr   %-20s %s%s\n", a.name.c_str(), attr_type_name(a.type), extra.c_str());
      }
    }
    if (!aliases.empty()) {
      std::printf("\nAliases, %zu:\n", aliases.size());
      for (const auto& a : aliases)
        std::printf("  %s::%s -> %s\n", a.domain.c_str(), a.name.c_str(), a.target.to_string().c_str());
    }
    return Status::ok();
  };
}

}  // namespace graft::cli
