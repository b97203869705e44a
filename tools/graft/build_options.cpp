#include "tools/graft/build_options.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <unistd.h>

#include "graft/log.h"

namespace graft::cli {

Status check_writable_file(const std::string& path, const std::string& option) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!ec && fs::exists(st) && !fs::is_regular_file(st)) {
    Status s(StatusCode::kInvalidArgument, option + ": the output exists and is not a regular file (" +
                                               (fs::is_directory(st) ? "a directory" : "a device, pipe or socket") +
                                               "); give a file path");
    return s.with_file(path);
  }
  // Files are written to a temporary file in the same directory and renamed over the path, so the
  // directory must exist and be writable: found now rather than after the work.
  const fs::path parent = fs::path(path).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  const fs::file_status dst = fs::status(dir, ec);
  if (ec || !fs::exists(dst)) {
    Status s(StatusCode::kNotFound, option + ": the directory '" + dir + "' does not exist");
    return s.with_file(path);
  }
  if (!fs::is_directory(dst)) {
    Status s(StatusCode::kInvalidArgument, option + ": '" + dir + "' is not a directory");
    return s.with_file(path);
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    Status s(StatusCode::kIoError, option + ": cannot write into the directory '" + dir + "': " + std::strerror(errno));
    return s.with_file(path);
  }
  return Status::ok();
}

Status check_output_path(const std::string& output, const std::string& input_model) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(output, ec);
  if (!ec && fs::exists(st) && fs::is_regular_file(st) && fs::equivalent(output, input_model, ec) && !ec) {
    Status s(StatusCode::kInvalidArgument, "-o: the output is the input model '" + input_model +
                                               "'; writing the plan would overwrite the model");
    return s.with_file(output);
  }
  return check_writable_file(output, "-o");
}

namespace {
// Options that only a CUDA build uses, and the ones that only matter when building from ONNX.
constexpr const char* kCudaOnlyFlags[] = {"--fp16", "--timing-cache", "--layout", "--no-fusion", "--no-int8", "--strict"};
constexpr const char* kBuildOnlyFlags[] = {"--min-shapes", "--opt-shapes",  "--max-shapes",
                                           "--fp16",       "--timing-cache", "--layout",
                                           "--no-fusion",  "--no-int8",     "--strict",
                                           "--layer-precisions", "--precision-constraints"};

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i == 0 ? "" : i + 1 == v.size() ? " and " : ", ") + v[i];
  return s;
}
}  // namespace

void record_given_build_flags(const CLI::App& app, BuildOptions& opts) {
  opts.given.clear();
  for (const char* f : kBuildOnlyFlags) {
    const CLI::Option* o = app.get_option_no_throw(f);
    if (o && o->count() > 0) opts.given.push_back(f);
  }
}

void warn_ignored_build_flags(const BuildOptions& opts, bool is_plan, DeviceType device, const std::string& model) {
  std::vector<std::string> ignored;
  if (is_plan) {
    ignored = opts.given;
    if (!ignored.empty())
      log_warning_once(join(ignored) + (ignored.size() == 1 ? " applies" : " apply") +
                       " when building from ONNX; ignored for the plan " + model +
                       ", which keeps the options it was built with");
    return;
  }
  if (device == DeviceType::kCUDA) return;
  for (const std::string& f : opts.given)
    for (const char* c : kCudaOnlyFlags)
      if (f == c) ignored.push_back(f);
  if (!ignored.empty())
    log_warning_once(join(ignored) + (ignored.size() == 1 ? " applies" : " apply") +
                     " to CUDA engines only; ignored for this CPU engine (--device cuda to use " +
                     (ignored.size() == 1 ? "it" : "them") + ")");
}

void add_shapes_option(CLI::App& app, BuildOptions& opts) {
  app.add_option("--shapes", opts.shapes, "Fixed input shapes: NAME:1x3x224x224[,NAME2:...]; with --min/opt/max-shapes, the shape `graft run` runs at")->expected(1, -1);
  // trtexec spells these in camelCase (--minShapes=...); graft takes both spellings, same meaning.
}

void add_build_options(CLI::App& app, BuildOptions& opts, bool with_output) {
  // The camelCase names are trtexec's, accepted with the same meaning (docs/cli.md lists them).
  if (with_output) app.add_option("-o,--output,--saveEngine", opts.output, "The plan file to write")->required();
  // Each occurrence of these three is one optimization profile, in order (trtexec's habit).
  app.add_option("--min-shapes,--minShapes", opts.min_shapes,
                 "Profile minimum shapes: NAME:1x3x224x224[,...]; repeat the flag for each further optimization profile")
      ->expected(1, -1);
  app.add_option("--opt-shapes,--optShapes", opts.opt_shapes,
                 "Profile optimum shapes: NAME:1x3x224x224[,...]; repeat the flag for each further optimization profile")
      ->expected(1, -1);
  app.add_option("--max-shapes,--maxShapes", opts.max_shapes,
                 "Profile maximum shapes: NAME:1x3x224x224[,...]; repeat the flag for each further optimization profile")
      ->expected(1, -1);
  add_shapes_option(app, opts);
  app.add_flag("--fp16", opts.fp16, "CUDA: allow float16 kernels");
  app.add_option("--timing-cache,--timingCacheFile", opts.timing_cache, "CUDA: tactic timing cache file (read and updated)");
  app.add_flag("--no-fusion", opts.no_fusion, "CUDA: do not fuse layers (conv epilogues, GEMM epilogues, elementwise chains)");
  app.add_flag("--no-int8", opts.no_int8,
               "CUDA, float16: run explicitly quantized (Q/DQ) convolutions in float16 on the dequantized values, "
               "not on their int8 integers");
  app.add_option("--layout", opts.layout, "CUDA: convolution layout: auto (NHWC for float16), nchw or nhwc")
      ->check(CLI::IsMember({"auto", "nchw", "nhwc"}));
  app.add_flag("--strict", opts.strict_device,
               "CUDA: refuse to build when a layer would run on the CPU reference (the error names each one)");
  app.add_option("--layer-precisions,--layerPrecisions", opts.layer_precisions,
                 "Hold layers to a precision: NAME:fp32[,PATTERN:fp16,...], '*' in a name matching any run of "
                 "characters (trtexec's --layerPrecisions); fp16 needs --fp16")
      ->expected(1, -1);
  app.add_option("--precision-constraints,--precisionConstraints", opts.precision_constraints,
                 "What a layer held to fp16 that cannot run so does: obey (an error), prefer (a warning; it stays fp32) "
                 "or none (--layer-precisions checked, then ignored)")
      ->check(CLI::IsMember({"obey", "prefer", "none"}));
}

namespace {

Status bad_entry(const std::string& option, const std::string& entry, const std::string& why) {
  return error(StatusCode::kInvalidArgument, "bad ", option, " entry '", entry, "': ", why,
               " (expected NAME:DxDx..., e.g. input:1x3x224x224)");
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string cur;
  bool quoted = false;
  for (char c : s) {
    if (c == '\'') quoted = !quoted;
    if (c == sep && !quoted) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  return parts;
}

}  // namespace

Status parse_shape_list(const std::vector<std::string>& entries, const std::string& option,
                        std::map<std::string, std::vector<int64_t>>* out) {
  for (const std::string& list : entries) {
    for (const std::string& entry : split(list, ',')) {
      std::string name, dims;
      if (!entry.empty() && entry[0] == '\'') {
        size_t close = entry.find('\'', 1);
        if (close == std::string::npos || close + 1 >= entry.size() || entry[close + 1] != ':')
          return bad_entry(option, entry, "unterminated quoted name");
        name = entry.substr(1, close - 1);
        dims = entry.substr(close + 2);
      } else {
        // Dims never contain ':', so the last one separates even a name like "input:0".
        size_t colon = entry.rfind(':');
        if (colon == std::string::npos) return bad_entry(option, entry, "missing ':'");
        name = entry.substr(0, colon);
        dims = entry.substr(colon + 1);
      }
      if (name.empty()) return bad_entry(option, entry, "empty input name");
      std::vector<int64_t> shape;
      if (!dims.empty()) {
        for (const std::string& d : split(dims, 'x')) {
          if (d.empty() || d.size() > 15 || d.find_first_not_of("0123456789") != std::string::npos)
            return bad_entry(option, entry, "dimension '" + d + "' is not a non-negative integer");
          shape.push_back(std::stoll(d));
        }
      }
      if (!out->emplace(name, shape).second)
        return bad_entry(option, entry, "input '" + name + "' is given twice");
    }
  }
  return Status::ok();
}

Status parse_layer_precisions(const std::vector<std::string>& entries, std::map<std::string, DataType>* out) {
  auto bad = [](const std::string& entry, const std::string& why) {
    return error(StatusCode::kInvalidArgument, "bad --layer-precisions entry '", entry, "': ", why,
                 " (expected NAME:fp32 or NAME:fp16, e.g. /head/Softmax:fp32 or '/layer4/*':fp32)");
  };
  for (const std::string& list : entries) {
    for (const std::string& entry : split(list, ',')) {
      std::string name, precision;
      if (!entry.empty() && entry[0] == '\'') {
        const size_t close = entry.find('\'', 1);
        if (close == std::string::npos || close + 1 >= entry.size() || entry[close + 1] != ':')
          return bad(entry, "unterminated quoted name");
        name = entry.substr(1, close - 1);
        precision = entry.substr(close + 2);
      } else {
        const size_t colon = entry.rfind(':');
        if (colon == std::string::npos) return bad(entry, "missing ':'");
        name = entry.substr(0, colon);
        precision = entry.substr(colon + 1);
      }
      if (name.empty()) return bad(entry, "empty layer name");
      auto dtype = layer_precision_from_name(precision);
      if (!dtype) return bad(entry, dtype.status().message());
      if (!out->emplace(name, *dtype).second) return bad(entry, "layer '" + name + "' is given twice");
    }
  }
  return Status::ok();
}

namespace {

// The ranges of one profile from its --min/--opt/--max-shapes groups (nullptr: that flag not given).
Result<OptimizationProfile> make_one_profile(const std::vector<std::string>* min_group,
                                             const std::vector<std::string>* opt_group,
                                             const std::vector<std::string>* max_group, const std::string& label) {
  std::map<std::string, std::vector<int64_t>> mins, opts_, maxs;
  if (min_group) GRAFT_RETURN_IF_ERROR(parse_shape_list(*min_group, "--min-shapes", &mins));
  if (opt_group) GRAFT_RETURN_IF_ERROR(parse_shape_list(*opt_group, "--opt-shapes", &opts_));
  if (max_group) GRAFT_RETURN_IF_ERROR(parse_shape_list(*max_group, "--max-shapes", &maxs));
  OptimizationProfile profile;
  std::map<std::string, bool> names;
  for (const auto* m : {&mins, &opts_, &maxs})
    for (const auto& [name, _] : *m) names[name] = true;
  for (const auto& entry : names) {
    const std::string& name = entry.first;  // not a structured binding: the lambda captures it (clang < 16)
    ProfileRange r;
    auto get = [&](const std::map<std::string, std::vector<int64_t>>& m) -> const std::vector<int64_t>* {
      auto it = m.find(name);
      return it == m.end() ? nullptr : &it->second;
    };
    const auto *mn = get(mins), *op = get(opts_), *mx = get(maxs);
    r.opt = op ? *op : mx ? *mx : *mn;
    r.min = mn ? *mn : r.opt;
    r.max = mx ? *mx : r.opt;
    if (r.min.size() != r.opt.size() || r.max.size() != r.opt.size())
      return error(StatusCode::kInvalidArgument, "input '", name, "': min/opt/max shapes have different ranks", label);
    profile[name] = r;
  }
  return profile;
}

}  // namespace

Result<std::vector<OptimizationProfile>> make_profiles(const BuildOptions& opts) {
  std::map<std::string, std::vector<int64_t>> fixed;
  GRAFT_RETURN_IF_ERROR(parse_shape_list(opts.shapes, "--shapes", &fixed));
  const size_t n = std::max({opts.min_shapes.size(), opts.opt_shapes.size(), opts.max_shapes.size(), size_t{1}});
  for (const auto& [flag, groups] : {std::pair{"--min-shapes", &opts.min_shapes},
                                     std::pair{"--opt-shapes", &opts.opt_shapes},
                                     std::pair{"--max-shapes", &opts.max_shapes}})
    if (!groups->empty() && groups->size() != n)
      return error(StatusCode::kInvalidArgument, flag, " is given ", static_cast<uint64_t>(groups->size()),
                   " time(s) but another shape flag ", static_cast<uint64_t>(n),
                   " times: each occurrence of --min-shapes, --opt-shapes and --max-shapes is one optimization "
                   "profile, so give each of them once per profile (or leave one out everywhere)");
  std::vector<OptimizationProfile> profiles;
  for (size_t k = 0; k < n; ++k) {
    auto group = [k](const std::vector<std::vector<std::string>>& g) { return g.empty() ? nullptr : &g[k]; };
    GRAFT_ASSIGN_OR_RETURN(OptimizationProfile p,
                           make_one_profile(group(opts.min_shapes), group(opts.opt_shapes), group(opts.max_shapes),
                                            n == 1 ? std::string() : " (profile " + std::to_string(k) + ")"));
    profiles.push_back(std::move(p));
  }
  for (const auto& [name, dims] : fixed) {
    // An input the profiles name: --shapes is only the shape `graft run` runs at, as in trtexec (the
    // engine checks that it lies inside the selected profile). Any other: fixed in every profile.
    if (profiles[0].count(name)) continue;
    for (OptimizationProfile& p : profiles) p[name] = ProfileRange{dims, dims, dims};
  }
  return profiles;
}

Result<BuilderConfig> make_builder_config(const BuildOptions& opts, DeviceType device,
                                          const std::vector<std::string>& plugins) {
  BuilderConfig config;
  config.device = device;
  config.plugin_libraries = plugins;
  if (device == DeviceType::kCUDA) {  // a CPU build ignores these (warn_ignored_build_flags says so)
    config.fp16 = opts.fp16;
    config.timing_cache_path = opts.timing_cache;
    config.fusion = !opts.no_fusion;
    config.int8 = !opts.no_int8;
    config.layout = opts.layout;
    config.strict_device = opts.strict_device;
  }
  // Every device: a CPU build checks the names too and refuses fp16 (it has no float16 kernels).
  GRAFT_RETURN_IF_ERROR(parse_layer_precisions(opts.layer_precisions, &config.layer_precisions));
  config.precision_constraints = opts.precision_constraints;
  GRAFT_ASSIGN_OR_RETURN(std::vector<OptimizationProfile> profiles, make_profiles(opts));
  // One profile keeps the single-profile form; several go to the list (profile k = k-th group).
  if (profiles.size() == 1) config.profile = std::move(profiles[0]);
  else config.profiles = std::move(profiles);
  // trtexec's rule: a dynamic input with no shape from a profile, --shapes or an --inputs file is
  // built with every dynamic dimension set to 1, and a one-line warning says so.
  config.unspecified_shape = [](const IOInfo& in) -> Result<std::vector<int64_t>> {
    std::vector<int64_t> dims = in.static_dims;
    std::string text;
    for (int64_t& d : dims) {
      if (d < 0) d = 1;
      text += (text.empty() ? "" : "x") + std::to_string(d);
    }
    log_warning_once("input '" + in.name + "' has dynamic shape " + in.shape + " and no shape was given: built for " +
                     (text.empty() ? std::string("a scalar") : text) +
                     " (dynamic dimensions set to 1; give --shapes, --min/--opt/--max-shapes or --inputs to choose)");
    return dims;
  };
  auto start = std::chrono::steady_clock::now();
  config.progress = [start](const std::string& stage, const std::string& detail) {
    if (!log_shows_stage(stage, true)) return;
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "[graft %7.3fs] %s%s%s\n", s, stage.c_str(), detail.empty() ? "" : ": ", detail.c_str());
  };
  return config;
}

}  // namespace graft::cli
