#include "tools/graft/inference_options.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/utf8.h"
#include "io/tensor_io.h"

namespace graft {
// The CUDA backend's copy hooks (src/core/tensor.cpp), set when graft is built with CUDA.
namespace cuda_alloc {
extern bool (*copy_to_host)(void* dst, const void* src, size_t bytes);
extern bool (*copy_to_device)(void* dst, const void* src, size_t bytes);
}  // namespace cuda_alloc
}  // namespace graft

namespace graft::cli {

namespace fs = std::filesystem;

void add_inference_options(CLI::App& app, InferenceOptions& opts) {
  // The camelCase names are trtexec's, accepted with the same meaning (docs/cli.md lists them).
  app.add_option("--inputs,--loadInputs", opts.inputs,
                 "Input files NAME:FILE (.npy or .pb), separated by spaces or commas; others get random data. "
                 "Building from ONNX, a dynamic input without --shapes or a profile is built for its file's shape")
      ->expected(1, -1)
      ->delimiter(',');
  app.add_option("--save-outputs", opts.save_outputs, "Directory to write <output>.npy into");
  app.add_option("--compare", opts.compare, "Directory of reference outputs (output_*.pb or <output>.npy)");
  app.add_option("--iterations", opts.iterations, "Timed iterations (at least)")->check(CLI::Range(1, 1000000));
  app.add_option("--warmup", opts.warmup, "Untimed warm-up iterations")->check(CLI::Range(0, 1000000));
  // trtexec's --warmUp is a time, not a count: warm up for at least this long (and --warmup times).
  app.add_option("--warmUp", opts.warmup_ms, "Warm up for at least this many milliseconds (trtexec's meaning)")
      ->check(CLI::Range(0.0, 3600000.0));
  app.add_option("--duration", opts.duration_s,
                 "Run the timed iterations for at least this many seconds (and at least --iterations times)")
      ->check(CLI::Range(0.0, 86400.0));
  app.add_flag("--host-io", opts.host_io,
               "CUDA engines: report latency as host-to-GPU copy + compute + GPU-to-host copy "
               "(default: the compute time with inputs and outputs resident on the GPU; the copies are "
               "timed and reported separately either way)");
  app.add_option("--seed", opts.seed, "Seed for random inputs (default: random, printed)")
      ->each([&opts](const std::string&) { opts.seed_given = true; });
  app.add_option("--export-times,--exportTimes", opts.export_times, "Write per-iteration times to this JSON file");
  app.add_option("--export-output,--exportOutput", opts.export_output, "Write the output values to this JSON file");
  // trtexec selects a profile with --profile=N, but graft's --profile is the per-layer timing flag.
  app.add_option("--profile-index", opts.profile_index,
                 "The optimization profile to run with (0 by default); random dynamic inputs take its opt shapes")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--export-profile,--exportProfile", opts.export_profile,
                 "CUDA engines: time each layer once after the timed runs and write the table to this JSON file");
}

namespace {

const IOInfo* find_input(const std::vector<IOInfo>& infos, const std::string& name) {
  for (const IOInfo& i : infos)
    if (i.name == name) return &i;
  return nullptr;
}

std::string input_names(const std::vector<IOInfo>& infos) {
  std::string s;
  for (const IOInfo& i : infos) s += (s.empty() ? "" : ", ") + i.name;
  return s;
}

Status unknown_input(const std::string& name, const std::vector<IOInfo>& infos, const std::string& option) {
  return error(StatusCode::kInvalidArgument, option, " names '", name, "', which is not an input of the model (inputs: ",
               input_names(infos), ")");
}

Tensor random_tensor(DataType dt, const std::vector<int64_t>& dims, std::mt19937_64& rng) {
  Tensor t = Tensor::empty(dt, dims);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dt == DataType::kString)  // numbers as text, so a Cast from string reads them
      t.data_as<std::string>()[i] = fmt::format("{:.4f}", real(rng));
    else if (dtype_is_float(dt))
      t.set(i, real(rng));
    else if (dt == DataType::kBool)
      t.set(i, static_cast<double>(rng() & 1));
    else
      t.set(i, static_cast<double>(rng() % 4));  // small, non-negative: safe as indices or sizes
  }
  return t;
}

}  // namespace

Result<std::vector<InputFile>> read_input_files(const InferenceOptions& opts) {
  std::vector<InputFile> files;
  for (const std::string& spec : opts.inputs) {
    // Files rarely contain ':' but names do ("input:0"), so the last ':' separates them.
    size_t colon = spec.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size())
      return error(StatusCode::kInvalidArgument, "bad --inputs entry '", spec, "' (expected NAME:FILE)");
    InputFile f;
    f.name = spec.substr(0, colon);
    f.file = spec.substr(colon + 1);
    for (const InputFile& g : files)
      if (g.name == f.name) return error(StatusCode::kInvalidArgument, "--inputs gives '", f.name, "' twice");
    GRAFT_ASSIGN_OR_RETURN(io::NamedTensor nt, io::read_tensor_file(f.file));
    f.tensor = nt.tensor;
    files.push_back(std::move(f));
  }
  return files;
}

std::map<std::string, std::vector<int64_t>> shapes_of(const std::vector<InputFile>& files) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const InputFile& f : files) shapes[f.name] = f.tensor.dims();
  return shapes;
}

Result<std::map<std::string, Tensor>> prepare_inputs(const Engine& engine, const InferenceOptions& opts,
                                                     const std::map<std::string, std::vector<int64_t>>& shapes,
                                                     const std::vector<InputFile>& files, uint64_t* seed_used) {
  std::vector<IOInfo> infos = engine.inputs();
  for (const auto& [name, _] : shapes)
    if (!find_input(infos, name)) return unknown_input(name, infos, "--shapes");
  std::map<std::string, Tensor> inputs;
  for (const InputFile& f : files) {
    const IOInfo* info = find_input(infos, f.name);
    if (!info) return unknown_input(f.name, infos, "--inputs");
    if (f.tensor.dtype() != info->dtype) {
      Status st = error(StatusCode::kInvalidArgument, "input '", f.name, "' expects ", dtype_name(info->dtype),
                        " but the file holds ", dtype_name(f.tensor.dtype()));
      return st.with_file(f.file);
    }
    inputs.emplace(f.name, f.tensor);
  }
  auto profile = engine.profile(opts.profile_index);
  if (!profile) return error(profile.status().code(), "--profile-index: ", profile.status().message());
  const OptimizationProfile& selected = *profile;
  uint64_t seed = opts.seed_given ? opts.seed : std::random_device{}();
  std::mt19937_64 rng(seed);
  std::string generated;
  for (const IOInfo& info : infos) {
    if (inputs.count(info.name)) continue;
    std::vector<int64_t> dims;
    if (auto it = shapes.find(info.name); it != shapes.end()) {
      dims = it->second;
    } else {
      dims = info.static_dims;
      bool dynamic = false;
      for (int64_t d : dims) dynamic |= d < 0;
      if (dynamic) {
        auto range = selected.find(info.name);
        if (range == selected.end())
          return error(StatusCode::kInvalidArgument, "input '", info.name, "' has dynamic shape ", info.shape,
                       " and no profile: give --shapes ", info.name, ":DxD... or --inputs ", info.name, ":FILE");
        dims = range->second.opt;
      }
    }
    inputs[info.name] = random_tensor(info.dtype, dims, rng);
    generated += fmt::format("{}{} {}", generated.empty() ? "" : ", ", info.name,
                             TensorDesc(info.dtype, shape_from_values(dims)).to_string());
  }
  if (!generated.empty()) {
    std::fprintf(stderr, "graft: random inputs (seed %llu): %s\n", static_cast<unsigned long long>(seed),
                 generated.c_str());
    if (seed_used) *seed_used = seed;
  }
  return inputs;
}

namespace {

// Copies src into dst (same dtype and dims), between host and GPU memory in either direction.
Status copy_into(const Tensor& src, Tensor& dst) {
  const size_t n = src.nbytes();
  if (n == 0) return Status::ok();
  const bool from_host = src.device() == DeviceType::kCPU, to_host = dst.device() == DeviceType::kCPU;
  if (from_host && to_host) return dst.copy_data_from(src);
  bool ok = false;
  if (from_host && cuda_alloc::copy_to_device) ok = cuda_alloc::copy_to_device(dst.data(), src.data(), n);
  else if (to_host && cuda_alloc::copy_to_host) ok = cuda_alloc::copy_to_host(dst.data(), src.data(), n);
  if (!ok) return error(StatusCode::kRuntimeError, "copying ", static_cast<uint64_t>(n), " bytes between host and GPU failed");
  return Status::ok();
}

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

Result<TimedRuns> time_runs(const Engine& engine, ExecutionContext& ctx, const std::map<std::string, Tensor>& inputs,
                            const InferenceOptions& opts) {
  using clock = std::chrono::steady_clock;
  TimedRuns r;
  const bool cuda = engine.device() == DeviceType::kCUDA;
  r.split = cuda;
  r.mode = !cuda ? "host" : opts.host_io ? "host_io" : "gpu_resident";
  // CUDA: inputs and outputs live in GPU buffers allocated once; each iteration copies the inputs in,
  // runs, and copies the outputs out, and the three are timed apart.
  std::map<std::string, Tensor> run_inputs = inputs, run_outputs, host_outputs;
  if (cuda) {
    for (auto& [name, t] : run_inputs) {
      GRAFT_ASSIGN_OR_RETURN(t, t.to_device());
    }
  }
  const auto w0 = clock::now();
  for (int i = 0; i < opts.warmup || (opts.warmup_ms > 0 && ms_since(w0) < opts.warmup_ms); ++i)
    GRAFT_RETURN_IF_ERROR(ctx.run(run_inputs, run_outputs));
  const auto t0 = clock::now();
  for (int i = 0; i < opts.iterations || (opts.duration_s > 0 && ms_since(t0) < opts.duration_s * 1000.0); ++i) {
    IterationTimes it;
    it.start_ms = ms_since(t0);
    if (cuda) {
      auto s = clock::now();
      for (auto& [name, t] : run_inputs) GRAFT_RETURN_IF_ERROR(copy_into(inputs.at(name), t));
      it.h2d_ms = ms_since(s);
      s = clock::now();
      GRAFT_RETURN_IF_ERROR(ctx.run(run_inputs, run_outputs));
      it.compute_ms = ms_since(s);
      for (const auto& [name, t] : run_outputs) {
        auto h = host_outputs.find(name);
        if (h == host_outputs.end() || h->second.dims() != t.dims() || h->second.dtype() != t.dtype()) {
          GRAFT_ASSIGN_OR_RETURN(Tensor fresh, Tensor::allocate(t.dtype(), t.dims()));
          host_outputs[name] = fresh;
        }
      }
      s = clock::now();
      for (const auto& [name, t] : run_outputs) GRAFT_RETURN_IF_ERROR(copy_into(t, host_outputs.at(name)));
      it.d2h_ms = ms_since(s);
      it.latency_ms = opts.host_io ? it.h2d_ms + it.compute_ms + it.d2h_ms : it.compute_ms;
    } else {
      auto s = clock::now();
      GRAFT_RETURN_IF_ERROR(ctx.run(run_inputs, run_outputs));
      it.latency_ms = ms_since(s);
    }
    r.iterations.push_back(it);
  }
  r.wall_s = ms_since(t0) / 1000.0;
  r.outputs = cuda ? host_outputs : run_outputs;
  r.run_inputs = std::move(run_inputs);
  return r;
}

nlohmann::json outputs_json(const std::map<std::string, Tensor>& outputs, bool with_values) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& [name, t] : outputs) {
    std::string dims;
    for (int64_t d : t.dims()) dims += (dims.empty() ? "" : "x") + std::to_string(d);
    nlohmann::json o = {{"name", name}, {"dtype", dtype_name(t.dtype())}, {"shape", t.dims()}, {"dimensions", dims}};
    if (with_values) {
      nlohmann::json v = nlohmann::json::array();
      const bool is_int = !dtype_is_float(t.dtype());
      for (int64_t i = 0; i < t.numel() && t.dtype() == DataType::kString; ++i) {
        // JSON strings are UTF-8: other text is written as its byte values.
        const std::string& text = t.data_as<std::string>()[i];
        if (is_valid_utf8(text)) v.push_back(text);
        else v.push_back(std::vector<uint8_t>(text.begin(), text.end()));
      }
      for (int64_t i = 0; i < t.numel() && t.dtype() != DataType::kString; ++i) {
        const double x = t.get(i);
        if (is_int) v.push_back(static_cast<int64_t>(x));
        else if (std::isfinite(x)) v.push_back(x);
        else v.push_back(std::isnan(x) ? "nan" : x > 0 ? "inf" : "-inf");
      }
      o["values"] = std::move(v);
    }
    a.push_back(std::move(o));
  }
  return a;
}

Status write_export_file(const std::string& path, const std::string& option, const std::string& text) {
  Status st = io::write_file_atomic(path, text);
  if (!st) return error(st.code(), option, ": ", st.message()).with_file(path);
  return Status::ok();
}

Status save_outputs(const std::string& dir, const std::map<std::string, Tensor>& outputs) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    Status st(StatusCode::kIoError, "cannot create output directory: " + ec.message());
    return st.with_file(dir);
  }
  std::map<std::string, std::string> used;  // file name -> output name, to catch collisions
  for (const auto& [name, t] : outputs) {
    std::string file = io::sanitize_file_name(name);
    for (int k = 1; used.count(file); ++k) file = io::sanitize_file_name(name) + "_" + std::to_string(k);
    used[file] = name;
    std::string path = (fs::path(dir) / (file + ".npy")).string();
    Tensor host = t;
    if (t.dtype() == DataType::kBFloat16) {
      GRAFT_ASSIGN_OR_RETURN(host, t.cast(DataType::kFloat32));
    }
    GRAFT_RETURN_IF_ERROR(io::write_npy(path, host));
    std::fprintf(stderr, "graft: saved output '%s' to %s\n", name.c_str(), path.c_str());
  }
  return Status::ok();
}

Status compare_outputs(const std::string& dir, const Engine& engine, const std::map<std::string, Tensor>& outputs,
                       const Tolerances& tolerances, nlohmann::json* report) {
  if (!fs::is_directory(dir)) {
    Status st(StatusCode::kNotFound, "reference directory not found");
    return st.with_file(dir);
  }
  // References by output name: NAME.npy first, then output_<i>.pb (named inside, or by position).
  std::map<std::string, std::pair<Tensor, std::string>> refs;
  std::vector<IOInfo> outs = engine.outputs();
  for (size_t i = 0; i < outs.size(); ++i) {
    fs::path npy = fs::path(dir) / (io::sanitize_file_name(outs[i].name) + ".npy");
    if (fs::exists(npy)) {
      GRAFT_ASSIGN_OR_RETURN(Tensor t, io::read_npy(npy.string()));
      refs[outs[i].name] = {t, npy.string()};
    }
  }
  for (size_t i = 0;; ++i) {
    fs::path pb = fs::path(dir) / ("output_" + std::to_string(i) + ".pb");
    if (!fs::exists(pb)) break;
    GRAFT_ASSIGN_OR_RETURN(io::NamedTensor nt, io::read_tensor_pb(pb.string()));
    std::string name = !nt.name.empty() ? nt.name : i < outs.size() ? outs[i].name : "";
    if (!name.empty() && !refs.count(name)) refs[name] = {nt.tensor, pb.string()};
  }
  if (refs.empty()) {
    Status st(StatusCode::kNotFound, "no reference outputs (<output>.npy or output_<i>.pb) found");
    return st.with_file(dir);
  }
  std::string failures;
  for (const auto& [name, ref] : refs) {
    auto it = outputs.find(name);
    if (it == outputs.end()) {
      Status st = error(StatusCode::kInvalidArgument, "reference '", name, "' matches no output of the model");
      return st.with_file(ref.second);
    }
    const Tensor& got = it->second;
    const Tensor& want = ref.first;
    if (got.dims() != want.dims() || got.dtype() != want.dtype()) {
      failures += fmt::format("{}{}: got {} but the reference is {}", failures.empty() ? "" : "; ", name,
                              TensorDesc(got.dtype(), shape_from_values(got.dims())).to_string(),
                              TensorDesc(want.dtype(), shape_from_values(want.dims())).to_string());
      continue;
    }
    TensorComparison c;
    c.tolerance = tolerances.of(name);
    compare_values(got, want, &c);
    if (report)
      report->push_back({{"output", name}, {"reference", ref.second}, {"max_abs_error", c.max_abs},
                         {"max_rel_error", c.max_rel}, {"beyond_tolerance", c.beyond}, {"elements", got.numel()}});
    else
      std::printf("compare %s: max abs error %.6g, max rel error %.6g, %lld/%lld elements beyond tolerance\n",
                  name.c_str(), c.max_abs, c.max_rel, static_cast<long long>(c.beyond),
                  static_cast<long long>(got.numel()));
    if (c.beyond)
      failures += fmt::format("{}{}: {} of {} elements differ beyond rtol {:g}, atol {:g} (largest at {}: got {} want "
                              "{}; max abs {:.6g})",
                              failures.empty() ? "" : "; ", name, c.beyond, got.numel(), c.tolerance.rtol,
                              c.tolerance.atol, fmt::join(c.worst_at, ","), c.candidate_value, c.reference_value,
                              c.max_abs);
  }
  if (!failures.empty())
    return error(StatusCode::kRuntimeError, "outputs differ from the references: ", failures);
  return Status::ok();
}

}  // namespace graft::cli
