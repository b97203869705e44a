// The user's per-layer precisions (BuilderConfig::layer_precisions, trtexec's --layerPrecisions)
// written onto the imported nodes, before any pass renames, fuses or removes them; the FP16 pass
// (precision.cpp) obeys them, and the passes that make one node of several carry them over
// (inherit_precision, pass_util.h).
#include <string>
#include <string_view>

#include "graph/pass_util.h"
#include "graph/passes.h"

namespace graft {

namespace {

// `name` against `pattern`, where '*' stands for any run of characters (none included) and every
// other character for itself. Greedy with one backtrack point: linear in practice for names.
bool glob_matches(std::string_view pattern, std::string_view name) {
  size_t p = 0, n = 0, star = std::string_view::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p;
      ++n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace

Result<int> apply_layer_precisions(Graph& graph, const std::map<std::string, DataType>& pins, bool float16_allowed) {
  if (pins.empty()) return 0;
  for (const auto& [key, dtype] : pins) {
    if (dtype != DataType::kFloat32 && dtype != DataType::kFloat16)
      return error(StatusCode::kInvalidArgument, "layer precision for '", key, "' is ", dtype_name(dtype),
                   ": a layer can be held to float32 (fp32) or float16 (fp16)");
    if (dtype == DataType::kFloat16 && !float16_allowed)
      return error(StatusCode::kInvalidArgument, "layer precision for '", key,
                   "' is float16, but this build has no float16: build with fp16 (--fp16) for a CUDA device");
  }
  std::map<std::string, int> matched;  // key -> nodes it decided or matched
  int held = 0;
  for (const auto& node : graph.nodes()) {
    Node& n = *node;
    const std::string* decided = nullptr;
    if (auto it = pins.find(n.name); it != pins.end()) decided = &it->first;
    for (const auto& [key, dtype] : pins) {
      if (key.find('*') == std::string::npos || !glob_matches(key, n.name)) continue;
      ++matched[key];  // counted as matching even where an exact name or a longer pattern decides
      if (!decided || (decided->find('*') != std::string::npos && key.size() > decided->size())) decided = &key;
    }
    if (!decided) continue;
    ++matched[*decided];
    n.precision = pins.at(*decided);
    ++held;
  }
  for (const auto& [key, dtype] : pins) {
    if (matched.count(key)) continue;
    std::string some;
    int listed = 0;
    for (const auto& node : graph.nodes()) {
      if (node->name.empty()) continue;
      if (listed == 5) {
        some += ", ...";
        break;
      }
      some += (listed++ ? ", '" : "'") + node->name + "'";
    }
    return error(StatusCode::kInvalidArgument, "layer precision '", key, "' matches no node of the model (",
                 graph.nodes().size(), " nodes, e.g. ", some.empty() ? std::string("none named") : some,
                 "; `graft inspect MODEL.onnx` lists them; '*' stands for any run of characters)");
  }
  return held;
}

}  // namespace graft
