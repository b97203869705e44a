// graft/log.h — how much graft prints on its own (build progress, warnings), process-wide.
//
// Errors are never printed here: they come back as Status. What is printed goes to stderr.
//   quiet:   nothing
//   default: warnings (each distinct one once per process) and build progress (every stage on the
//            command line, the summary lines from Python)
//   verbose: every build stage, everywhere
// The starting level is GRAFT_LOG_LEVEL (quiet, default or verbose) when set, else default.
#pragma once

#include <string>

#include "graft/status.h"

namespace graft {

enum class LogLevel { kQuiet = 0, kDefault = 1, kVerbose = 2 };

void set_log_level(LogLevel level);
LogLevel log_level();
// "quiet", "default" or "verbose"; anything else is an error naming the value.
Result<LogLevel> parse_log_level(const std::string& text);
const char* log_level_name(LogLevel level);

// "graft: warning: <text>" on stderr, unless quiet or this text was printed before in this process.
void log_warning_once(const std::string& text);

// Whether a build progress report of `stage` is printed at the current level. Quiet: none.
// Verbose: all. Default: all when `all_stages_by_default` (the command line, which shows progress
// as trtexec does), else only warnings and the CUDA placement summary, which is what a library
// user (Python) sees.
bool log_shows_stage(const std::string& stage, bool all_stages_by_default);

}  // namespace graft
