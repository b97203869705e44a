#include <cstdio>

#include "graft/cuda_engine.h"

namespace graft {

std::string format_layer_timings(const std::vector<LayerTiming>& rows) {
  size_t wn = 5, wt = 7;
  double total = 0;
  for (const auto& r : rows) {
    wn = std::max(wn, r.name.size());
    wt = std::max(wt, r.op_type.size());
    total += r.ms;
  }
  std::string out;
  char buf[512];
  bool tactics = false;
  for (const auto& r : rows) tactics |= !r.tactic.empty();
  auto line = [&](const std::string& a, const std::string& b, const std::string& c, const std::string& d,
                  const std::string& e, const std::string& f) {
    std::snprintf(buf, sizeof buf, "%-*s  %-*s  %-6s  %10s  %7s", static_cast<int>(wn), a.c_str(),
                  static_cast<int>(wt), b.c_str(), c.c_str(), d.c_str(), e.c_str());
    out += buf;
    if (tactics && !f.empty()) out += "  " + f;
    out += "\n";
  };
  line("layer", "op type", "device", "time ms", "%", "tactic");
  for (const auto& r : rows) {
    char ms[32], pc[32];
    std::snprintf(ms, sizeof ms, "%.4f", r.ms);
    std::snprintf(pc, sizeof pc, "%.1f", r.percent);
    line(r.name, r.op_type, r.device, ms, pc, r.tactic);
  }
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.4f", total);
  line("total", "", "", ms, "100.0", "");
  return out;
}

}  // namespace graft
