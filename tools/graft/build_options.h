// `graft` options about building: optimization profile shapes, precision, timing cache, output.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "graft/engine.h"
#include "graft/status.h"

namespace graft::cli {

struct BuildOptions {
  std::string output;  // build: the plan file to write
  // Each entry is "NAME:1x3x224x224[,NAME2:...]". --min/--opt/--max-shapes: one group per
  // occurrence of the flag, and occurrence k is optimization profile k (trtexec's habit of
  // repeating the three flags once per profile). --shapes may repeat; its entries all add up.
  std::vector<std::vector<std::string>> min_shapes, opt_shapes, max_shapes;
  std::vector<std::string> shapes;
  bool fp16 = false;
  std::string timing_cache;
  bool no_fusion = false;
  bool no_int8 = false;
  std::string layout = "auto";
  bool strict_device = false;
  // --layer-precisions entries, "NAME:fp32[,PATTERN*:fp16...]" (trtexec's --layerPrecisions), and
  // what an unmet one does (--precision-constraints: obey, prefer, none).
  std::vector<std::string> layer_precisions;
  std::string precision_constraints = "obey";
  // The build-only options given on the command line (record_given_build_flags), to warn about the
  // ones that do nothing for this model and device.
  std::vector<std::string> given;
};

// --min-shapes/--opt-shapes/--max-shapes/--fp16/--timing-cache (and -o when with_output).
void add_build_options(CLI::App& app, BuildOptions& opts, bool with_output);
// --shapes only (the fixed shape form, shared with `graft run`).
void add_shapes_option(CLI::App& app, BuildOptions& opts);

// Parses "NAME:1x3x224x224,NAME2:5" (a name may be quoted: 'input:0':1x3). An empty dims part
// means a scalar. Errors name the option and the entry.
Status parse_shape_list(const std::vector<std::string>& entries, const std::string& option,
                        std::map<std::string, std::vector<int64_t>>* out);

// Parses --layer-precisions entries, "NAME:fp32,NAME2:fp16" (a name may be quoted: 'a,b':fp32; the
// last ':' separates an unquoted one), into BuilderConfig::layer_precisions. Precisions: fp32 or
// float32, fp16 or float16. Errors name the option and the entry.
Status parse_layer_precisions(const std::vector<std::string>& entries, std::map<std::string, DataType>* out);

// The optimization profiles from the shape options, profile k from the k-th --min-shapes,
// --opt-shapes and --max-shapes: a missing opt is the max (or the min), a missing min or max is the
// opt. Each of the three flags given must be given once per profile (an error names the counts).
// --shapes fixes min = opt = max, in every profile, for an input no profile names. Always at
// least one profile (empty when no shapes are given).
Result<std::vector<OptimizationProfile>> make_profiles(const BuildOptions& opts);

// Records which of the build options were given (after parsing).
void record_given_build_flags(const CLI::App& app, BuildOptions& opts);
// One warning line for given options that do nothing: CUDA-only options (--fp16, --timing-cache,
// --layout, --no-fusion, --strict) for a CPU engine, and every build option for a plan.
void warn_ignored_build_flags(const BuildOptions& opts, bool is_plan, DeviceType device, const std::string& model);

// `graft build -o`: the output must not be the input model itself (same file, by any path) and,
// when it exists, must be a regular file (never a device node, directory or pipe), and its directory
// must exist and be writable. Checked before the build, so a mistake costs no build time and never
// replaces the model or a device.
Status check_output_path(const std::string& output, const std::string& input_model);
// A file the command will write (-o, --export-*): not an existing directory, device or pipe, and in
// an existing, writable directory. Errors name the option and the path.
Status check_writable_file(const std::string& path, const std::string& option);

Result<BuilderConfig> make_builder_config(const BuildOptions& opts, DeviceType device,
                                          const std::vector<std::string>& plugins);

}  // namespace graft::cli
