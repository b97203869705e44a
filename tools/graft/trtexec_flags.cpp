// trtexec habits: the flags of TensorRT's trtexec that graft does not take under the same name, and
// what graft does instead. The ones with the same meaning are accepted as they are, as aliases on
// the options themselves (build_options.cpp, inference_options.cpp, model_options.cpp).
#include <string>

#include "tools/graft/commands.h"

namespace graft::cli {

namespace {

struct FlagHint {
  const char* flag;
  const char* hint;
};

// Matched as whole flags (--dumpProfile does not match --dump).
constexpr FlagHint kHints[] = {
    {"--int8", "graft has no INT8 engines yet; --fp16 is its reduced precision"},
    {"--best", "use --fp16 (float16 kernels allowed where the layer supports them)"},
    {"--noTF32", "not needed: graft's float32 GEMMs and convolutions never use TF32"},
    {"--useCudaGraph", "graft captures CUDA graphs by default (GRAFT_CUDA_GRAPHS=0 turns them off)"},
    {"--noDataTransfers", "graft run reports the GPU compute time by default; --host-io adds the copies"},
    {"--separateProfileRun", "graft run --profile always profiles in a separate run after the timed runs"},
    {"--dumpProfile", "use --profile (a table) or --export-profile FILE (JSON)"},
    {"--dumpOutput", "use --save-outputs DIR (.npy files) or --export-output FILE (JSON)"},
    {"--workspace", "graft sizes its workspace from the tactics it keeps; --max-memory caps host memory"},
    {"--memPoolSize", "graft sizes its workspace from the tactics it keeps; --max-memory caps host memory"},
    {"--avgRuns", "graft run reports every percentile over all timed iterations (--iterations, --duration)"},
    {"--streams", "graft run uses one stream; several execution contexts run concurrently from threads"},
    {"--threads", "graft run uses one stream; several execution contexts run concurrently from threads"},
    {"--staticPlugins", "use --plugins LIB.so"},
    {"--dynamicPlugins", "use --plugins LIB.so"},
    {"--explicitBatch", "not needed: every graft engine has an explicit batch dimension"},
    {"--builderOptimizationLevel", "graft has one optimization level; --no-fusion turns fusion off"},
};

}  // namespace

std::string trtexec_flag_hint(const std::string& parse_error) {
  for (const FlagHint& h : kHints) {
    const std::string flag = h.flag;
    // CLI11 names the unexpected argument as it was typed: "--int8" or "--workspace=4096".
    for (size_t at = parse_error.find(flag); at != std::string::npos; at = parse_error.find(flag, at + 1)) {
      const size_t end = at + flag.size();
      if (end == parse_error.size() || parse_error[end] == '=' || parse_error[end] == ' ' || parse_error[end] == ',')
        return "trtexec's " + flag + ": " + h.hint;
    }
  }
  return "";
}

}  // namespace graft::cli
