#include "tools/graft/compare_options.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include <fmt/format.h>

#include "runtime/device_engine.h"
#include "tools/graft/build_options.h"

namespace graft::cli {

void add_compare_options(CLI::App& app, CompareOptions& opts) {
  app.add_option("--compare-backend", opts.backend,
                 "Also run the model on this backend (cpu, cuda or cuda:N) and compare the outputs with it; the "
                 "reference is built with the shape options only (float32, default fusion)")
      ->check(device_name_error);
  app.add_option("--compare-model", opts.model,
                 "Compare with this ONNX model run on the same inputs (on --compare-backend, default cpu); "
                 "tensors are matched by name");
  app.add_flag("--layerwise,--mark-all", opts.layerwise,
               "With --compare-backend/--compare-model: make every intermediate tensor of the ONNX model an output "
               "on both sides (Polygraphy's 'mark all'), compare them in topological order and report the first "
               "layer that diverges");
  app.add_option("--rtol", opts.rtol,
                 "Relative tolerance for comparisons (default 1e-3), or NAME:VALUE for one output or tensor; "
                 "repeatable: --rtol 1e-3 out0:1e-2")
      ->expected(1, -1)
      ->delimiter(',');
  app.add_option("--atol", opts.atol,
                 "Absolute tolerance for comparisons (default 1e-5), or NAME:VALUE for one output or tensor")
      ->expected(1, -1)
      ->delimiter(',');
}

namespace {

// "1e-3" or "NAME:1e-3" into `fallback` or `per`; a bare value given twice, or a name given twice, is
// an error (the second would silently win).
Status parse_tolerance_list(const std::vector<std::string>& entries, const std::string& flag, double* fallback,
                            std::map<std::string, double>* per) {
  bool fallback_given = false;
  for (const std::string& e : entries) {
    const size_t colon = e.rfind(':');
    const std::string name = colon == std::string::npos ? "" : e.substr(0, colon);
    const std::string text = colon == std::string::npos ? e : e.substr(colon + 1);
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v < 0 ||
        (colon != std::string::npos && name.empty()))
      return error(StatusCode::kInvalidArgument, flag, " entry '", e,
                   "' is not a non-negative number or NAME:NUMBER (e.g. ", flag, " 1e-3 ", flag, " out0:1e-2)");
    if (name.empty()) {
      if (fallback_given) return error(StatusCode::kInvalidArgument, flag, " gives the default tolerance twice");
      fallback_given = true;
      *fallback = v;
    } else if (!per->emplace(name, v).second) {
      return error(StatusCode::kInvalidArgument, flag, " gives '", name, "' twice");
    }
  }
  return Status::ok();
}

std::string names_list(const std::vector<std::string>& names, size_t most = 12) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < most; ++i) s += (s.empty() ? "" : ", ") + names[i];
  if (names.size() > most) s += fmt::format(", ... ({} in all)", names.size());
  return s;
}

std::string io_signature(const std::vector<IOInfo>& infos) {
  std::string s;
  for (const IOInfo& i : infos) s += (s.empty() ? "" : ", ") + i.name + " " + dtype_name(i.dtype);
  return s;
}

}  // namespace

Result<Tolerances> parse_tolerances(const CompareOptions& opts) {
  Tolerances t;
  GRAFT_RETURN_IF_ERROR(parse_tolerance_list(opts.rtol, "--rtol", &t.fallback.rtol, &t.rtol));
  GRAFT_RETURN_IF_ERROR(parse_tolerance_list(opts.atol, "--atol", &t.fallback.atol, &t.atol));
  return t;
}

Status check_tolerance_names(const Tolerances& tolerances, const std::vector<std::string>& known,
                             const std::string& what) {
  const std::vector<std::string> unknown = tolerances.unknown_names(known);
  if (unknown.empty()) return Status::ok();
  const std::string flag = tolerances.rtol.count(unknown[0]) ? "--rtol" : "--atol";
  return error(StatusCode::kInvalidArgument, flag, " names '", unknown[0], "', which is not ", what, " (",
               names_list(known), ")");
}

bool wants_reference_run(const CompareOptions& opts) { return !opts.backend.empty() || !opts.model.empty(); }

Status check_compare_options(const CompareOptions& opts, const ModelOptions& model, bool model_is_plan,
                             bool with_compare_dir) {
  if (opts.layerwise && !wants_reference_run(opts))
    return Status(StatusCode::kInvalidArgument,
                  "--layerwise compares every intermediate tensor with a second run: give --compare-backend "
                  "BACKEND or --compare-model MODEL.onnx");
  if (!wants_reference_run(opts) && !with_compare_dir && (!opts.rtol.empty() || !opts.atol.empty()))
    return Status(StatusCode::kInvalidArgument,
                  "--rtol/--atol are tolerances of a comparison: give --compare DIR, --compare-backend or "
                  "--compare-model");
  if (!wants_reference_run(opts)) return Status::ok();
  // A plan is already optimized: its intermediate tensors are gone, and the ONNX model it came from
  // is not in it, so neither a second build nor marking outputs can start from it.
  if (model_is_plan && opts.model.empty())
    return Status(StatusCode::kInvalidArgument,
                  "--compare-backend builds the model a second time, which needs the ONNX model, not a plan: give "
                  "the ONNX model, or --compare-model MODEL.onnx")
        .with_file(model.path);
  if (model_is_plan && opts.layerwise)
    return Status(StatusCode::kInvalidArgument,
                  "--layerwise marks the ONNX model's intermediate tensors as outputs before the build, which a "
                  "plan cannot have: give the ONNX model")
        .with_file(model.path);
  if (!opts.model.empty()) {
    GRAFT_ASSIGN_OR_RETURN(bool plan, is_plan_file(opts.model));
    if (plan)
      return Status(StatusCode::kInvalidArgument, "--compare-model takes an ONNX model, not a plan").with_file(opts.model);
  }
  if (!opts.backend.empty()) {
    GRAFT_ASSIGN_OR_RETURN(DeviceType device, parse_device(opts.backend));
    if (!check_device_compiled(device))
      return error(StatusCode::kUnsupported, "--compare-backend ", opts.backend,
                   ": this graft was built without CUDA; use --compare-backend cpu");
  }
  return Status::ok();
}

Result<ComparisonReport> run_reference_and_compare(const CompareOptions& opts, const Tolerances& tolerances,
                                                   const ModelOptions& model, const BuildOptions& build,
                                                   const LoadOptions& load, const LoadedModel& candidate,
                                                   const std::map<std::string, Tensor>& inputs,
                                                   const std::map<std::string, Tensor>& outputs) {
  ModelOptions ref_model = model;
  ref_model.path = opts.model.empty() ? model.path : opts.model;
  ref_model.device = opts.backend.empty() ? "cpu" : opts.backend;
  // The reference is the plain engine: the shapes the candidate was built for, nothing that trades
  // accuracy for speed (--fp16) and nothing CUDA-only to warn about on a CPU reference.
  BuildOptions ref_build;
  ref_build.min_shapes = build.min_shapes;
  ref_build.opt_shapes = build.opt_shapes;
  ref_build.max_shapes = build.max_shapes;
  ref_build.shapes = build.shapes;
  LoadOptions ref_load = load;
  ref_load.mark_all_outputs = opts.layerwise;
  std::fprintf(stderr, "graft: building the reference: %s on %s%s\n", ref_model.path.c_str(), ref_model.device.c_str(),
               opts.layerwise ? ", every tensor marked as an output" : "");
  auto built = load_or_build(ref_model, ref_build, ref_load);
  if (!built)
    return error(built.status().code(), "building the reference failed: ", built.status().to_string());
  LoadedModel reference = std::move(built).value();

  const std::vector<IOInfo> want = candidate.engine->inputs(), have = reference.engine->inputs();
  bool same = want.size() == have.size();
  for (size_t i = 0; same && i < want.size(); ++i) {
    bool found = false;
    for (const IOInfo& h : have) found |= h.name == want[i].name && h.dtype == want[i].dtype;
    same = found;
  }
  if (!same)
    return error(StatusCode::kInvalidArgument, "the models take different inputs: ", model.path, " (",
                 io_signature(want), ") and ", ref_model.path, " (", io_signature(have),
                 "); a comparison runs both on the same inputs");

  GRAFT_ASSIGN_OR_RETURN(std::unique_ptr<ExecutionContext> ctx, reference.engine->create_context());
  std::map<std::string, Tensor> ref_outputs;
  Status ran = ctx->run(inputs, ref_outputs);
  if (!ran) return error(ran.code(), "the reference run failed: ", ran.message()).with_file(ref_model.path);

  size_t common = 0;
  for (const auto& [name, _] : outputs) common += ref_outputs.count(name);
  if (common == 0) {
    std::vector<std::string> a, b;
    for (const auto& [name, _] : outputs) a.push_back(name);
    for (const auto& [name, _] : ref_outputs) b.push_back(name);
    return error(StatusCode::kInvalidArgument, "the models have no output name in common, so nothing can be compared: ",
                 model.path, " (", names_list(a), ") and ", ref_model.path, " (", names_list(b), ")");
  }
  std::vector<std::string> order;
  for (const IOInfo& o : candidate.engine->outputs()) order.push_back(o.name);
  ComparisonReport report = compare_tensor_sets(outputs, ref_outputs, candidate.layers, order, tolerances);
  const char* marked = opts.layerwise ? ", every tensor marked" : "";
  report.candidate = fmt::format("{} on {}{}", model.path, device_name(candidate.engine->device()), marked);
  report.reference = fmt::format("{} on {}{}", ref_model.path, device_name(reference.engine->device()), marked);
  return report;
}

}  // namespace graft::cli
