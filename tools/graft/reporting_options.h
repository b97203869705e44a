// `graft` options about reporting: JSON output and the performance summary.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace graft::cli {

struct ReportingOptions {
  bool json = false;
};

void add_reporting_options(CLI::App& app, ReportingOptions& opts);

// Latency statistics over per-iteration host times, in the spirit of trtexec's summary.
struct LatencyStats {
  int iterations = 0;
  double min_ms = 0, max_ms = 0, mean_ms = 0, median_ms = 0, p90_ms = 0, p99_ms = 0;
  double total_s = 0, qps = 0;
};
LatencyStats summarize_latencies(std::vector<double> ms, double total_wall_s);
std::string format_performance_summary(const LatencyStats& s);
// One line of trtexec's summary for a part of each iteration: "<label>: min = ... ms, max = ...".
std::string format_latency_line(const std::string& label, const LatencyStats& s);
// {"min", "max", "mean", "median", "p90", "p99"} in milliseconds.
nlohmann::json latency_json(const LatencyStats& s);

}  // namespace graft::cli
