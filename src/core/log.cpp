#include "graft/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>

namespace graft {

namespace {

LogLevel initial_level() {
  const char* env = std::getenv("GRAFT_LOG_LEVEL");
  if (!env || !*env) return LogLevel::kDefault;
  auto parsed = parse_log_level(env);
  if (!parsed) {
    std::fprintf(stderr, "graft: warning: GRAFT_LOG_LEVEL: %s; using default\n", parsed.status().message().c_str());
    return LogLevel::kDefault;
  }
  return *parsed;
}

std::atomic<int>& level_cell() {
  static std::atomic<int> level{static_cast<int>(initial_level())};
  return level;
}

}  // namespace

void set_log_level(LogLevel level) { level_cell().store(static_cast<int>(level)); }

LogLevel log_level() { return static_cast<LogLevel>(level_cell().load()); }

Result<LogLevel> parse_log_level(const std::string& text) {
  if (text == "quiet") return LogLevel::kQuiet;
  if (text == "default") return LogLevel::kDefault;
  if (text == "verbose") return LogLevel::kVerbose;
  return error(StatusCode::kInvalidArgument, "log level must be quiet, default or verbose, not '", text, "'");
}

const char* log_level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kQuiet: return "quiet";
    case LogLevel::kDefault: return "default";
    case LogLevel::kVerbose: return "verbose";
  }
  return "default";
}

void log_warning_once(const std::string& text) {
  if (log_level() == LogLevel::kQuiet) return;
  static std::mutex mu;
  static std::set<std::string> seen;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!seen.insert(text).second) return;
  }
  std::fprintf(stderr, "graft: warning: %s\n", text.c_str());
}

bool log_shows_stage(const std::string& stage, bool all_stages_by_default) {
  const LogLevel level = log_level();
  if (level == LogLevel::kQuiet) return false;
  if (level == LogLevel::kVerbose || all_stages_by_default) return true;
  static const std::set<std::string> summary{"warning", "cuda"};
  return summary.count(stage) > 0;
}

}  // namespace graft
