#include "tools/graft/reporting_options.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace graft::cli {

void add_reporting_options(CLI::App& app, ReportingOptions& opts) {
  app.add_flag("--json", opts.json, "Print JSON instead of text");
}

namespace {
// Nearest-rank percentile of sorted values.
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}
}  // namespace

LatencyStats summarize_latencies(std::vector<double> ms, double total_wall_s) {
  LatencyStats s;
  s.iterations = static_cast<int>(ms.size());
  s.total_s = total_wall_s;
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  s.min_ms = ms.front();
  s.max_ms = ms.back();
  double sum = 0;
  for (double v : ms) sum += v;
  s.mean_ms = sum / static_cast<double>(ms.size());
  size_t n = ms.size();
  s.median_ms = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  s.p90_ms = percentile(ms, 90);
  s.p99_ms = percentile(ms, 99);
  s.qps = total_wall_s > 0 ? static_cast<double>(n) / total_wall_s : 0;
  return s;
}

std::string format_latency_line(const std::string& label, const LatencyStats& s) {
  return fmt::format(
      "{}: min = {:.5f} ms, max = {:.5f} ms, mean = {:.5f} ms, median = {:.5f} ms, percentile(90%) = {:.5f} ms, "
      "percentile(99%) = {:.5f} ms\n",
      label, s.min_ms, s.max_ms, s.mean_ms, s.median_ms, s.p90_ms, s.p99_ms);
}

nlohmann::json latency_json(const LatencyStats& s) {
  return {{"min", s.min_ms}, {"max", s.max_ms}, {"mean", s.mean_ms}, {"median", s.median_ms}, {"p90", s.p90_ms},
          {"p99", s.p99_ms}};
}

std::string format_performance_summary(const LatencyStats& s) {
  std::string out = "=== Performance summary ===\n";
  out += fmt::format("Throughput: {:.3f} qps\n", s.qps);
  out += format_latency_line("Latency", s);
  out += fmt::format("Total Host Walltime: {:.5f} s\n", s.total_s);
  out += fmt::format("Iterations: {}\n", s.iterations);
  return out;
}

}  // namespace graft::cli
